/*
 * objects_prep.h - an object's symbols and DWARF, read on a thread of
 * their own (objects_prep.c) for objects.c to write.
 */
#ifndef LUAPROF_RECORD_OBJECTS_PREP_H
#define LUAPROF_RECORD_OBJECTS_PREP_H

#include <stdint.h>

struct obj_symtab;

struct srclines_object;
/* One object's reading: the job, then what it read, owned by whoever
 * holds it (the worker builds the obj_symtab, the recorder marks and
 * writes it once taken). */
struct obj_prepared {
	uint64_t id;
	int fd;     /* the job's own; closed once read */
	char *path;
	int err;    /* -ENOMEM, or 0 */
	struct obj_symtab *syms;       /* NULL: gone or not ELF */
	struct srclines_object *dwarf; /* NULL: no lines */
	struct obj_prepared *next;
};
struct obj_prep;
/* Starts the worker (if no thread can start, a job is read when taken). */
struct obj_prep *obj_prep_new(void);
/* Queues the object id (fd, which the job owns, and path); 0 or -ENOMEM. */
int obj_prep_submit(struct obj_prep *p, uint64_t id, int fd, const char *path);
/* Object id once read, which the caller then owns; NULL while it is
 * being read, unless wait (id must have been queued). */
struct obj_prepared *obj_prep_take(struct obj_prep *p, uint64_t id, int wait);
void obj_prepared_free(struct obj_prepared *j);
/* Waits for the job being read, drops the others. */
void obj_prep_free(struct obj_prep *p);

#endif

/*
 * procmaps.h - the executable mappings of a process, read from
 * /proc/PID/maps (procmaps.c), and the table they are kept in.
 */
#ifndef LUAPROF_RECORD_PROCMAPS_H
#define LUAPROF_RECORD_PROCMAPS_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "format/trace.h"

struct maps_table {
	struct lp_mapping *v; /* sorted by start; paths owned (strdup) */
	uint32_t n;
};

int procmaps_read(pid_t pid, struct maps_table *out);
/* The same, also keeping anonymous memory that held code though it is not
 * executable now: prev's anonymous code, and the mappings holding the
 * addresses in code[] (where the sampler saw code run). */
int procmaps_read_code(pid_t pid, const struct maps_table *prev,
		       const uint64_t *code, uint32_t ncode,
		       struct maps_table *out);
/* Whether a listing of /proc/PID/maps (len bytes of text) ends as a whole
 * one of a 64-bit process does on this kernel: with the gate page on
 * x86-64, the stack on arm64 (procmaps.c says why that matters). */
int procmaps_text_whole(const char *text, size_t len);
/* A listing read whole: reads it again until it is known whole or the
 * process gone (-ESRCH).  read gives one listing (NUL-terminated, in
 * malloc'd memory), as procmaps_read_code()'s reader of /proc does and a
 * unit test's fake. */
typedef int procmaps_reader(void *ctx, char **text, size_t *len);
int procmaps_whole_text(procmaps_reader *reader, void *ctx, char **text, size_t *len);
const struct lp_mapping *maps_table_find(const struct maps_table *t,
					 uint64_t addr);
/* An anonymous executable page at addr, where code was seen to run though
 * no mapping holds it: 1 added, 0 already held, -ENOMEM. */
int maps_table_add_code(struct maps_table *t, uint64_t addr);
int maps_table_copy(const struct maps_table *t, struct maps_table *out);
/* Mappings of `now` not present, identical, in `old`; borrowed pointers. */
uint32_t maps_table_added(const struct maps_table *old,
			  const struct maps_table *now,
			  const struct lp_mapping **added, uint32_t cap);
void maps_table_free(struct maps_table *t);

/* The file behind mapping m of pid, opened read-only: the very file
 * mapped, through /proc/PID/map_files (even deleted, replaced or in
 * another mount namespace); else its path as the process sees it
 * (/proc/PID/root); else its path here, for a process gone.  A
 * descriptor, or -errno. */
int procmaps_open(pid_t pid, const struct lp_mapping *m);

#endif

/*
 * maps.h - what each traced process had mapped where, replayed from the
 * trace's MAPS records in stream order, so that a user address is read
 * against the layout of its process at the time of its sample.
 *
 * Every change of a pid's layout gives it a new generation number, unique
 * over the whole report (never reused, even by a reused pid): a (pid,
 * stack, generation) triple therefore names one resolution of a stack, and
 * stacks.c resolves each such triple once.
 */
#ifndef LUAPROF_REPORT_MAPS_H
#define LUAPROF_REPORT_MAPS_H

#include <stdint.h>

#include "format/trace.h"

struct map_ent {
	uint64_t start, end, pgoff;
	uint32_t prot;
	const char *path; /* interned: stays valid until maps_free() */
	uint64_t object;  /* the trace's object id of the file, 0 = none */
};

struct maps;

int maps_new(struct maps **out);
void maps_free(struct maps *m);

/* Applies a MAPS record: a full snapshot with LP_MAPS_REPLACE, otherwise
 * mappings added the way mmap adds them (replacing what they overlap). */
int maps_apply(struct maps *m, const struct lp_maps *rec);
/* A forked child starts with its parent's layout, unless it has one. */
int maps_fork(struct maps *m, uint32_t pid, uint32_t ppid);
/* The process is gone; its layout is dropped a little later, so that a
 * sample that trails its exit record is still resolved. */
void maps_exit(struct maps *m, uint32_t pid);

/* A process's layout as one sample reads it: looked up once per sample
 * (maps_view()) and handed to whatever names the sample's frames, which
 * then look nothing up by pid.  Valid until the next record is applied
 * (maps_apply(), maps_fork(), maps_exit()): a sample's frames are all
 * named before that. */
struct pid_maps;
struct maps_view {
	uint32_t pid;
	uint64_t gen;              /* the layout's generation, 0: none */
	const struct pid_maps *pm; /* NULL: none */
};

/* pid's view.  Not const: it remembers the pid it was last asked about
 * (a trace's samples come in runs of few pids). */
void maps_view(struct maps *m, uint32_t pid, struct maps_view *v);
/* The mapping of v's process containing addr, or NULL. */
const struct map_ent *maps_view_find(const struct maps_view *v, uint64_t addr);

#endif

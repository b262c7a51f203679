/*
 * stalls.h - `report --stalls`: each event-loop stall (format/kinds.h's
 * stall kind), longest first, with what its thread ran inside it: the
 * CPU samples and off-CPU waits of the same thread in the stall's
 * interval, as their stacks and their shares of the stall's time.
 */
#ifndef LUAPROF_REPORT_STALLS_H
#define LUAPROF_REPORT_STALLS_H

#include <stdint.h>
#include <stdio.h>

#include "format/trace.h"
#include "report/profile.h"
#include "report/stacks.h"

struct stalls;

int stalls_new(struct stalls **out);
void stalls_free(struct stalls *s);
/* Whether --stalls keeps events of this kind: stalls, and what may lie
 * inside one (CPU samples, off-CPU waits). */
int stalls_wants(uint32_t kind);
/* Keeps one event of a kind it wants, which stacks_add_sample() has just
 * composed into count entry `entry`; proc: its process's index in the
 * procs.  0 or -ENOMEM. */
int stalls_add(struct stalls *s, const struct lp_event *ev, uint32_t entry, uint32_t proc);
/* Once the pass's stacks are finished: entries become the profile's
 * stack ids; origin is the trace's time 0 (that of --from). */
void stalls_finish(struct stalls *s, const struct stacks *st, uint64_t origin);
/* The stalls, longest first, rows of them (0: all); 0 or -ENOMEM. */
int out_stalls(FILE *out, const struct profile *p, const struct stalls *s, unsigned rows);

#endif

/*
 * stacks.h - stack records and the streaming aggregation of samples.
 *
 * Stack records are kept by id for the whole trace (any later sample may
 * name one).  A sample's user stack, merged with its Lua stack (native
 * frames inside the LuaJIT interpreter's code are where Lua frames go, one
 * VM entry each, leaf first), is resolved against its process's
 * layout as it is when the sample is read; that resolution is done once
 * per (pid, stack, layout generation) and interned, so a million samples
 * of a hot loop cost a million hash lookups and one symbolization.  Kernel
 * stacks are kept as ids and named at the end, once every KSYMS record has
 * been read.  Only distinct (root, user resolution, kernel stack) triples
 * are counted: memory grows with the variety of stacks, not with samples.
 */
#ifndef LUAPROF_REPORT_STACKS_H
#define LUAPROF_REPORT_STACKS_H

#include <stdint.h>

#include "format/trace.h"
#include "report/frames.h"
#include "report/luajit_protos.h"
#include "report/maps.h"
#include "report/profile.h"

#define STACKS_NO_ROOT UINT32_MAX

struct stacks;

int stacks_new(struct stacks **out, struct frames *fr, struct maps *maps,
	       struct lua *lua);
void stacks_free(struct stacks *s);

/* Keeps a STACK record; a second definition of an id is ignored. */
int stacks_define(struct stacks *s, const struct lp_stack *rec);

/* Counts one sample, worth weight (in its kind's unit).  `root` is a name id put above every frame (the
 * process name for --comm) or STACKS_NO_ROOT.  *lidx is the sample's Lua
 * stack, placed in the functions its trace inlined if it was taken in
 * compiled code (lua_place(), once per distinct user and Lua stack): its
 * index in the lua, UINT32_MAX if the sample has none or names one never
 * defined; the sample is counted by how it was placed.  *missing is set
 * when the sample names a stack id that was never defined before it. */
int stacks_add_sample(struct stacks *s, const struct lp_sample *smp, uint64_t weight,
		      uint32_t root, uint32_t *lidx, int *missing);
/* Starts reading the memory stacks_add_sample() will look at first for
 * the samples v[0..n), n at most STACKS_PREFETCH_MAX, to be added next:
 * it hides the latency of a table far larger than the caches when stacks
 * are many.  A hint: nothing changes. */
#define STACKS_PREFETCH_MAX 32
void stacks_prefetch(const struct stacks *s, const struct lp_event *v, unsigned n);
/* Samples taken in compiled code so far, by enum lua_place. */
void stacks_place_counts(const struct stacks *s, uint64_t counts[LUA_PLACE_MAX]);
/* Samples so far whose user stack has a gap: frames the walk could not
 * see ([unknown frames], format/trace.h's LP_ADDR_GAP). */
uint64_t stacks_gap_count(const struct stacks *s);

/* Names the kernel frames and folds every counted triple into
 * p->stacks and p->counts (name ids in p->names, which the frames
 * given to stacks_new() intern into). */
int stacks_finish(struct stacks *s, struct profile *p);

/* For formats that keep every sample (time order, labels): the entry
 * the last sample added was counted in, and, once finished, the stack
 * id in p->stacks of an entry (UINT32_MAX before). */
uint32_t stacks_last_entry(const struct stacks *s);
uint32_t stacks_entry_stack(const struct stacks *s, uint32_t entry);

#endif

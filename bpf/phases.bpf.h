/* SPDX-License-Identifier: GPL-2.0 */
/*
 * phases.bpf.h - the clock behind `record -v`'s breakdown of the sampler's
 * time (layout and phases in bpf/phases.h).  Included by
 * bpf/capture.bpf.h before the walkers, which mark the phases that end
 * inside them.
 *
 * Off unless the recorder sets time_phases: then every phase_end() is
 * dead code the verifier never sees.  On, each mark costs a clock read
 * and a per-CPU array lookup: with the run-time histogram, -v made a
 * sample some 0.5 us dearer on nginx (bench/nginx.sh, quiet-999).
 */
#ifndef LUAPROF_BPF_PHASES_BPF_H
#define LUAPROF_BPF_PHASES_BPF_H

#include "bpf/phases.h"

const volatile bool time_phases = false;

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct lp_phase_times);
} phase_times SEC(".maps");

/* This CPU's sums, or NULL when the clock is off. */
static __always_inline struct lp_phase_times *phase_sums(void)
{
	__u32 zero = 0;

	return time_phases ? bpf_map_lookup_elem(&phase_times, &zero) : NULL;
}

/* The first mark of a sample: its phases start at t0. */
static __always_inline void phase_start(__u64 t0)
{
	struct lp_phase_times *pt = phase_sums();

	if (pt)
		pt->mark = t0;
}

/* Phase `phase` ends now: its time since the last mark is added. */
static __always_inline void phase_end(enum lp_phase phase)
{
	struct lp_phase_times *pt;
	__u64 now;

	if (!time_phases)
		return;
	now = bpf_ktime_get_ns();
	pt = phase_sums();
	if (!pt || phase >= LP_PHASES)
		return;
	pt->ns[phase] += now - pt->mark;
	pt->mark = now;
}

/* The native walk's reads of the target's memory past its stack copy. */
static __always_inline void phase_count_reads(__u32 n)
{
	struct lp_phase_times *pt = phase_sums();

	if (pt)
		pt->native_reads += n;
}

/* The Lua walk's reads of the target's memory since its last count, in
 * the phase that ends (Lua state, or Lua walk); the counts are zeroed. */
static __always_inline void phase_count_lua_reads(enum lp_phase phase, __u32 *reads,
						  __u32 *fails)
{
	struct lp_phase_times *pt = phase_sums();

	if (!pt)
		return;
	if (phase == LP_PHASE_LUA_STATE)
		pt->lua_state_reads += *reads;
	else
		pt->lua_walk_reads += *reads;
	pt->lua_read_fails += *fails;
	*reads = *fails = 0;
}

/* The Lua walk's reads of the C stack that the stack copy served instead
 * of the target's memory (bpf/walk_lua.bpf.h); the count is zeroed. */
static __always_inline void phase_count_copy_reads(__u32 *n)
{
	struct lp_phase_times *pt = phase_sums();

	if (pt)
		pt->lua_copy_reads += *n;
	*n = 0;
}

/* The last mark of a sample, with what its walks found. */
static __always_inline void phase_done(__u32 lua_frames, __s32 ustack_bytes,
				       __s32 kstack_bytes)
{
	struct lp_phase_times *pt;

	phase_end(LP_PHASE_OUTPUT);
	pt = phase_sums();
	if (!pt)
		return;
	pt->samples++;
	pt->lua_frames += lua_frames;
	if (ustack_bytes > 0)
		pt->native_frames += ustack_bytes / 8;
	if (kstack_bytes > 0)
		pt->kernel_ticks++;
}

#endif

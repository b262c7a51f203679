/*
 * phases.h - where the BPF sampler's time goes: the phases of on_sample,
 * shared by bpf/phases.bpf.h (the clock) and record/session.c (which
 * prints them with `record -v`).  Fixed-width fields, size-asserted.
 *
 * Each phase is the time from the end of the one before it (the first:
 * from on_sample's own start clock) to its end, summed over the samples
 * of a CPU into that CPU's lp_phase_times, so the sums add up to the
 * sampler's time per sample (runtime_hist, sampler.h) less the few
 * instructions after the last mark.  The clock runs only when the
 * recorder sets time_phases before load (-vv): off, the verifier drops it
 * as dead code and it costs nothing.
 *
 *   t0 |- kstack -|- copy -|- Lua state -|- Lua walk -|- native -|- output -|
 *       bpf_get_    registers, G, L,         its frames   unwind_    ring buffer,
 *       stack()     the stack  vmstate, the               frame()    counters
 *       (kernel)    window     trace                      x frames
 *
 * The stack is copied first, before any other read of the target's
 * memory: the Lua walk's reads of the VM's C frames come from the copy
 * (bpf/unwind_native.bpf.h: unwind_copy_stack()).  The list below is in
 * the order `record -v` prints, which bench/nginx.sh's columns follow:
 * not the order of the phases in time.
 */
#ifndef LUAPROF_BPF_PHASES_H
#define LUAPROF_BPF_PHASES_H

#ifndef __VMLINUX_H__
#include <linux/types.h>
#endif

/* X(name, what record -v calls it) */
#define LP_PHASE_LIST(X)                                         \
	X(KSTACK, "kernel stack")                                \
	X(LUA_STATE, "Lua state")                                \
	X(LUA, "Lua walk")                                       \
	X(COPY, "stack copy")                                    \
	X(NATIVE, "native walk")                                 \
	X(OUTPUT, "ring buffer")

enum lp_phase {
#define LP_PHASE_ENUM(name, what) LP_PHASE_##name,
	LP_PHASE_LIST(LP_PHASE_ENUM)
#undef LP_PHASE_ENUM
	LP_PHASES
};

/* One CPU's sums: per phase, and what the walks produced. */
struct lp_phase_times {
	__u64 ns[LP_PHASES];
	__u64 samples;
	__u64 lua_frames;
	__u64 native_frames;
	__u64 native_reads; /* of the target's memory past the stack copy */
	/* walk_lua's reads of the target's memory (bpf/walk_lua.bpf.h):
	 * up to the Lua walk's start, and the rest (a second try's too);
	 * and of those, the ones that failed (ten times a good one's cost) */
	__u64 lua_state_reads, lua_walk_reads;
	__u64 lua_read_fails;
	__u64 kernel_ticks; /* samples with a kernel stack */
	__u64 lua_copy_reads; /* of the C stack, served by the stack copy */
	__u64 mark; /* the clock at the end of the last phase */
};

_Static_assert(sizeof(struct lp_phase_times) == 8 * (LP_PHASES + 10),
	       "lp_phase_times layout");

#endif

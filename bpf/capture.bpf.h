/* SPDX-License-Identifier: GPL-2.0 */
/*
 * capture.bpf.h - takes the mixed stack of the current thread of a target
 * process and sends it as an event of some kind (bpf/sampler.h, enum
 * lp_event_kind) through the `events` ring buffer.  Every event kind's
 * program is a caller: on_sample (a cpu-clock tick) now, programs on the
 * scheduler or on a uprobe later.  A caller names the kind and the weight
 * and gives the user registers; the capture does the rest:
 *
 *   capture_claim(cap)                     this CPU's state (captures map)
 *   ev = capture_begin(tgid, tid, kind, weight, now)     its event
 *   regs_from_perf(ctx, &cap->regs)        or regs_from_task(): the user's
 *                                          registers
 *   wake = capture_stacks(ctx, cap, ev, ...) kernel, native and Lua frames
 *   capture_send(cap, ev, wake)            packed, at its real size
 *   capture_end(cap)
 *
 * What a walk needs between its parts (the VM's C frame one walk found
 * and the other resumes from) is the capture's own per-CPU state (struct
 * capture), never the event: the event holds only what the recorder
 * reads.  One capture runs on a CPU at a time: a tick that interrupts a
 * capture in task context (a uprobe's) finds it busy and is counted in
 * counters.lost_busy, not written over the other's half-built event.
 */
#ifndef LUAPROF_BPF_CAPTURE_BPF_H
#define LUAPROF_BPF_CAPTURE_BPF_H

#include "bpf/arch.bpf.h"
#include "bpf/sampler.h"
#include "bpf/phases.bpf.h" /* record -v: where the time goes */

/* Wake the recorder only when this much is waiting, or for an event it
 * must see at once; it takes the rest every 100 ms. */
#define WAKEUP_BYTES (256 * 1024)
/* ... but at each event with Lua frames of a process younger than this:
 * the recorder reads what those frames need (prototypes, traces) from the
 * process's memory, and a short-lived one is gone after a poll or two. */
#define YOUNG_NS 1000000000ull
/* The ring's fill is asked only every WAKEUP_EVERY-th event of a CPU: the
 * query reads the consumer's position, a line the recorder writes, and
 * WAKEUP_BYTES is a threshold, not a limit. */
#define WAKEUP_EVERY 8

/*
 * procs_gen counts the changes to the processes an event looks up: to
 * targets (which processes are sampled, sampler.bpf.c) and to lj_procs
 * (each one's Lua VM, bpf/walk_lua.bpf.h).  Per-CPU memos spare an event
 * those hash lookups, and it says when they are stale:
 *   - the caller's verdict on the CPU's last tgid (struct capture's memo);
 *   - the Lua walk's copy of the CPU's last lj_procs entry
 *     (lua_walk.proc), which unwind_lj_proc() takes too.
 * Every writer of either map calls procs_changed() after the change: the
 * recorder (record/session_targets.c, session_lua.c) and fork, exec and
 * exit.  A memo keeps the count it read BEFORE its lookup, so a change
 * that lands between the two leaves it stale at once, and it is used only
 * while the count is still the same.  One count for both maps: a change
 * to one also sends the other's memo back to its map, one hash lookup
 * more on the next event of each CPU, after events as rare as a target's
 * fork, exec or exit, or its VM found or refused.
 */
__u64 procs_gen;

static __always_inline void procs_changed(void)
{
	__sync_fetch_and_add(&procs_gen, 1);
}

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 8 * 1024 * 1024);
} events SEC(".maps");

struct lp_bpf_counters counters;

/* The user registers at the event: the interrupted ones if it hit user
 * mode, else the ones saved at kernel entry.  Read once, for both walks. */
struct user_regs {
	__u64 ip, sp, bp; /* bp: the frame pointer */
	__u64 vm_pc, vm_base, vm_gd; /* the interpreter's (bpf/arch.bpf.h) */
	__u64 lr; /* the link register, where calls have one */
	/* Every general register by DWARF number, when all is set, for the
	 * native walk's rare rule on another register than the stack or
	 * frame pointer (unwind_leaf_reg()); else it reads the one a rule
	 * needs from the task's saved registers. */
	__u64 gpr[LP_DWARF_GPRS];
	__u32 user; /* they are user mode's: not a thread without one */
	__u32 all;  /* gpr[] is filled */
};

/* A capture's per-CPU state: kept in a map, not on the BPF stack, which
 * 6.1's verifier counts across the caller, walk_lua and its bpf_loop
 * callback together against 512 bytes. */
struct capture {
	struct user_regs regs;
	/* While Lua runs: the CFA of the innermost VM entry's C frame, on
	 * which compiled traces run: the native walk resumes there past a
	 * trace's code (which has no CFI).  When the Lua walk found no L,
	 * the native walk sets it to the first VM C frame it meets, and the
	 * Lua walk tries again from there.  0 otherwise. */
	__u64 vm_cfa;
	__u32 busy; /* a capture is under way on this CPU */
	__u32 sent; /* this CPU's events sent (capture_send) */
	__u32 last_lost; /* capture_send() could not send its event */
	__u32 new_code; /* the native walk went through code its list lacks */
	/* The caller's: its verdict on this CPU's last tgid, as of
	 * procs_gen == memo_gen (sampler.bpf.c's is_target).  Here because
	 * every event touches this line anyway. */
	__u64 memo_gen;
	__u32 memo_tgid;
	__u32 memo_hit;
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct capture);
} captures SEC(".maps");

/* The event under construction, one per CPU: too large for the BPF stack,
 * and sent with only the bytes in use.  The Lua walk fills its lua[]. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct lp_event_sample);
} capture_event SEC(".maps");

/* The registers the kernel saved at entry: loads through the task's BTF
 * pointer, not a helper call each (six calls were some 150 ns a kernel
 * tick).  A function of its own: inlined, clang merges this pointer with
 * a caller's ctx, which the verifier refuses. */
static __noinline int regs_from_task(struct user_regs *r)
{
	struct pt_regs *regs;

	if (!r)
		return -1;
	r->all = 0;
	regs = (struct pt_regs *)bpf_task_pt_regs(bpf_get_current_task_btf());
	if (!regs)
		return -1;
	r->user = task_regs_user_mode(regs);
	r->ip = LP_PT_IP(regs);
	r->sp = LP_PT_SP(regs);
	r->bp = LP_PT_FP(regs);
	r->lr = LP_PT_LR(regs);
	r->vm_pc = LP_PT_VM_PC(regs);
	r->vm_base = LP_PT_VM_BASE(regs);
	r->vm_gd = LP_PT_VM_GD(regs);
	return 0;
}

/* User registers a program's context holds whole, all sixteen: a
 * perf_event's when its tick hit user mode (the caller asked
 * ctx_regs_user_mode(); a tick in the kernel takes regs_from_task()),
 * a uprobe's always.  p is the context itself (bpf_perf_event_data's
 * regs lie at its start), read at constant offsets. */
static __always_inline void regs_from_pt(const struct pt_regs *p, struct user_regs *r)
{
	r->ip = LP_PT_IP(p);
	r->sp = LP_PT_SP(p);
	r->bp = LP_PT_FP(p);
	r->lr = LP_PT_LR(p);
	r->vm_pc = LP_PT_VM_PC(p);
	r->vm_base = LP_PT_VM_BASE(p);
	r->vm_gd = LP_PT_VM_GD(p);
	LP_PT_GPRS(p, r->gpr);
	r->user = 1;
	r->all = 1;
}

static __always_inline int regs_from_perf(struct bpf_perf_event_data *ctx,
					  struct user_regs *r)
{
	_Static_assert(__builtin_offsetof(struct bpf_perf_event_data, regs) == 0,
		       "a perf_event's registers at its context's start");
	regs_from_pt((const struct pt_regs *)&ctx->regs, r);
	return 0;
}

#include "bpf/walk_lua.bpf.h"
#include "bpf/unwind_native.bpf.h" /* native unwinder: unwind_* maps */

/* Claims this CPU's capture state (the captures map's value): 0, or -1
 * if a capture is under way on this CPU (counted).  capture_end() gives
 * it back. */
static __always_inline int capture_claim(struct capture *cap)
{
	if (cap->busy) {
		__sync_fetch_and_add(&counters.lost_busy, 1);
		return -1;
	}
	cap->busy = 1;
	return 0;
}

static __always_inline void capture_end(struct capture *cap)
{
	cap->busy = 0;
}

/* This CPU's event, its head filled for the current thread of tgid: an
 * event of kind worth weight (in the kind's unit), at now. */
static __always_inline struct lp_event_sample *
capture_begin(__u32 tgid, __u32 tid, __u16 kind, __u64 weight, __u64 now)
{
	struct lp_event_sample *e;
	__u32 zero = 0;

	e = bpf_map_lookup_elem(&capture_event, &zero);
	if (!e)
		return NULL;
	e->h.type = LP_EVENT_SAMPLE;
	e->h.pid = tgid;
	e->h.tid = tid;
	e->h.cpu = bpf_get_smp_processor_id();
	e->h.time_ns = now;
	e->kind = kind;
	e->wait_state = 0;
	e->weight = weight;
	e->count = 1;
	return e;
}

/* Did the current process start less than YOUNG_NS before now? */
static __always_inline int young_process(__u64 now)
{
	/* Plain loads through the BTF pointers: no helper calls. */
	return now - bpf_get_current_task_btf()->group_leader->start_time < YOUNG_NS;
}

/*
 * Fills e's kernel, user and Lua frames from cap->regs (the caller's
 * regs_from_*()); ctx is the caller's program context, which the kernel's
 * stack helper takes (whatever its type).  kernel: the event happened in
 * the kernel (a kernel stack to take).  suspended_L: 0 for the Lua frames
 * of the running coroutine (walk_lua()), else those of that coroutine,
 * suspended at a yield (walk_lua_suspended()); a constant in each caller,
 * so that a program links only the walk it makes (each is verified in
 * every program that calls it).  Returns 1 when the recorder should hear
 * of this event at once (see capture_send()).
 */
static __always_inline int capture_stacks(void *ctx, struct capture *cap,
					  struct lp_event_sample *e, bool kernel, int have_regs,
					  __u64 suspended_L)
{
	int wake = 0;

	e->kstack_bytes = kernel ? bpf_get_stack(ctx, e->kstack, sizeof(e->kstack), 0) : 0;
	phase_end(LP_PHASE_KSTACK);
	/* The top of the stack first, in one read: the Lua walk reads the
	 * VM's C frames, which lie in it, from the copy, and the native walk
	 * starts from it.  (Its extent depends on the thread's last walk,
	 * not on this one's.) */
	unwind_copy_stack(e->h.tid, &cap->regs); /* (none without user registers) */
	phase_end(LP_PHASE_COPY);
	/* Lua before the native walk: a running trace's C frame is where
	 * the native walk resumes past the trace's code.  If the Lua walk
	 * found no G, the native walk may cross the VM's C frame, which
	 * holds the running lua_State: then Lua again, from there. */
	e->lua_depth = 0;
	e->lua_state = LP_WALK_NONE;
	e->vmstate = 0;
	e->lua_G = 0;
	cap->vm_cfa = 0;
	if (have_regs)
		wake = suspended_L ? walk_lua_suspended(e, suspended_L) : walk_lua(e, cap, 0);
	phase_end(LP_PHASE_LUA);
	if (unwind_native_user_stack(e, cap)) /* no tables: frame pointers */
		e->ustack_bytes = bpf_get_stack(ctx, e->ustack, sizeof(e->ustack),
						BPF_F_USER_STACK);
	else
		wake |= cap->new_code;
	/* (A second Lua walk, from the VM's C frame, counts as native.)  The
	 * first may have validated a G whose C frame is on another stack (a
	 * fiber's): it still locates the process's VM for the recorder, and
	 * what woke it still stands, whatever the second walk finds. */
	if (!suspended_L && have_regs && e->lua_state == LP_WALK_NO_G && cap->vm_cfa) {
		__u64 G = e->lua_G;

		wake |= walk_lua(e, cap, cap->vm_cfa);
		if (!e->lua_G)
			e->lua_G = G;
	}
	if (!wake && e->lua_depth)
		wake = young_process(e->h.time_ns);
	phase_end(LP_PHASE_NATIVE);
	if (e->kstack_bytes < 0)
		__sync_fetch_and_add(&counters.kstack_failed, 1);
	if (e->ustack_bytes < 0)
		__sync_fetch_and_add(&counters.ustack_failed, 1);
	return wake;
}

/* Sends e packed (bpf/sampler.h): its head, then only the kernel, user
 * and Lua frames present, each written where the one before ends, so
 * that a shallow event takes a few hundred bytes of the ring, not 2 KiB
 * or more.  The lengths are clamped where the verifier can see it. */
static __noinline int send_event(struct lp_event_sample *e, __u32 nlua, __u64 flags)
{
	__u32 kbytes = e->kstack_bytes > 0 ? e->kstack_bytes : 0;
	__u32 ubytes = e->ustack_bytes > 0 ? e->ustack_bytes : 0;
	__u32 lbytes, off = lp_event_sample_head_size;
	struct bpf_dynptr ptr;
	__u64 head;
	long err;

	if (kbytes > sizeof(e->kstack))
		kbytes = sizeof(e->kstack);
	if (ubytes > sizeof(e->ustack))
		ubytes = sizeof(e->ustack);
	if (nlua > LP_MAX_LUA)
		nlua = LP_MAX_LUA;
	lbytes = nlua * sizeof(struct lp_lua_frame);
	/* (The recorder sees the clamped counts.) */
	if (e->kstack_bytes > 0)
		e->kstack_bytes = kbytes;
	if (e->ustack_bytes > 0)
		e->ustack_bytes = ubytes;
	e->lua_depth = nlua;
	err = bpf_ringbuf_reserve_dynptr(&events, off + kbytes + ubytes + lbytes, 0, &ptr);
	if (err)
		goto discard;
	/* The head and the kernel frames lie together in e: one write
	 * (its length bounded again where the verifier sees it). */
	head = (__u64)off + kbytes;
	barrier_var(head);
	if (head > lp_event_sample_head_size + sizeof(e->kstack))
		goto discard;
	err = bpf_dynptr_write(&ptr, 0, e, head, 0);
	off += kbytes;
	if (!err && ubytes)
		err = bpf_dynptr_write(&ptr, off, e->ustack, ubytes, 0);
	off += ubytes;
	if (!err && lbytes)
		err = bpf_dynptr_write(&ptr, off, e->lua, lbytes, 0);
	if (err)
		goto discard;
	bpf_ringbuf_submit_dynptr(&ptr, flags);
	return 0;
discard:
	/* A failed reservation must be discarded too (the verifier insists). */
	bpf_ringbuf_discard_dynptr(&ptr, 0);
	return err;
}

/*
 * Sends e; a lost one is counted.  An event that shows a VM the recorder
 * has not located yet wakes it at once: until it answers, this process's
 * events lack Lua, and a short-lived process may be gone before the
 * recorder can check its VM.  So does a young process's (YOUNG_NS), a
 * new compiled trace or Lua stack (walk_lua: lj_traces_seen), and a
 * native walk that left every known mapping (native unwinder): new code
 * was mapped, and walks stop there, or name frames the recorder cannot
 * name, until it reads it.  Returns the Lua frames sent.
 */
static __always_inline __u32 capture_send(struct capture *cap, struct lp_event_sample *e,
					  int wake)
{
	__u32 nlua = e->lua_depth;
	__u64 flags = BPF_RB_FORCE_WAKEUP;

	if (nlua > LP_MAX_LUA)
		nlua = LP_MAX_LUA;
	if (!wake && e->ustack_stop != LP_USTOP_UNMAPPED)
		flags = cap->sent++ % WAKEUP_EVERY ||
				bpf_ringbuf_query(&events, BPF_RB_AVAIL_DATA) < WAKEUP_BYTES ?
			BPF_RB_NO_WAKEUP : BPF_RB_FORCE_WAKEUP;
	cap->last_lost = send_event(e, nlua, flags) != 0;
	if (cap->last_lost)
		__sync_fetch_and_add(&counters.lost_ringbuf, 1);
	return nlua;
}

#endif

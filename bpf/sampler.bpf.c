// SPDX-License-Identifier: GPL-2.0
/*
 * sampler.bpf.c - the in-kernel half of `luaprof record`.
 *
 * One program per event kind (enum lp_event_kind), each taking its stacks
 * with bpf/capture.bpf.h.  on_sample, the CPU kind, runs on every
 * cpu-clock tick of every CPU (one perf_event per CPU, opened by
 * record/perf.c).  It keeps only ticks that land in a target process,
 * which the `targets` map names by thread group id, and sends the kernel,
 * native and Lua stacks through the `events` ring buffer.  The stacks are
 * copied whole rather than interned in a BPF stack map: a stack map's
 * hash collisions either drop stacks or silently overwrite them, and the
 * recorder interns stacks by content anyway.
 *
 * The three sched tracepoints keep the target set true while recording:
 * a fork from a target adds the child (so nginx workers started later are
 * sampled from their first tick, before user space hears of them), exec
 * tells the recorder to re-read the image's mappings, and the exit of a
 * process's last thread removes it.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>

#include "bpf/capture.bpf.h" /* the stacks of an event, and its sending */

char LICENSE[] SEC("license") = "GPL";

/* Set by the recorder before load. */
const volatile bool follow_children = true;
/* -v: the run-time histogram (runtime_hists), which only -v prints; off,
 * the verifier drops its clock read and its bucket's update as dead code. */
const volatile bool time_runs = false;

#define LP_SIGSTOP 19 /* the same on every Linux architecture we build for */

/* This CPU's run times (bpf/sampler.h): the recorder sums the CPUs. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct lp_runtime_hist);
} runtime_hists SEC(".maps");

/* The processes sampled; a change calls procs_changed() after it. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16384);
	__type(key, __u32);   /* tgid */
	__type(value, __u32); /* LP_TARGET_* */
} targets SEC(".maps");

/* Is tgid a target?  Asked on every tick of every CPU, targets or not.
 * The answer for the CPU's last tgid is kept beside its registers, which
 * a target's sample touches anyway, as it does procs_gen's page: a hash
 * lookup touches the map's bucket and element, vmalloc'ed pages nothing
 * else in a sample touches, each cold at a tick (the lookup took 0.4 to
 * 0.9 us on nginx at 999 Hz, under load), and a CPU mostly ticks in the
 * task it ticked in last.  Valid while procs_gen is unchanged (see there). */
static __always_inline int is_target(struct capture *m, __u32 tgid)
{
	__u64 gen = *(volatile __u64 *)&procs_gen;

	if (m->memo_tgid != tgid || m->memo_gen != gen) {
		m->memo_hit = bpf_map_lookup_elem(&targets, &tgid) != NULL;
		m->memo_tgid = tgid;
		m->memo_gen = gen;
	}
	return m->memo_hit;
}

SEC("perf_event")
int on_sample(struct bpf_perf_event_data *ctx)
{
	__u64 id = bpf_get_current_pid_tgid(), t0;
	__u32 tgid = id >> 32, zero = 0, nlua;
	struct lp_event_sample *e;
	struct lp_runtime_hist *hist;
	struct capture *cap;
	bool kernel;
	int wake, have_regs;
	__u64 bucket;

	cap = bpf_map_lookup_elem(&captures, &zero);
	if (!cap || !is_target(cap, tgid) || capture_claim(cap))
		return 0;
	t0 = bpf_ktime_get_ns();
	e = capture_begin(tgid, (__u32)id, LP_KIND_CPU, 1, t0);
	if (!e)
		goto out;
	phase_start(t0);
	/* A tick in user mode has no kernel stack, and its registers are
	 * the user's; one in the kernel, those saved at entry. */
	kernel = !ctx_regs_user_mode(ctx);
	have_regs = (kernel ? regs_from_task(&cap->regs) : regs_from_perf(ctx, &cap->regs)) == 0;
	wake = capture_stacks(ctx, cap, e, kernel, have_regs, 0);
	nlua = capture_send(cap, e, wake);
	phase_done(nlua, e->ustack_bytes, e->kstack_bytes);
	if (!time_runs)
		goto out;
	bucket = (bpf_ktime_get_ns() - t0) / LP_RUNTIME_BUCKET_NS;
	if (bucket >= LP_RUNTIME_BUCKETS)
		bucket = LP_RUNTIME_BUCKETS - 1;
	hist = bpf_map_lookup_elem(&runtime_hists, &zero);
	if (hist)
		hist->n[bucket]++;
out:
	capture_end(cap);
	return 0;
}

/*
 * Off-CPU time (LP_KIND_OFF_CPU): the waits of target threads in system
 * calls (sleeps, reads, locks, epoll), each with its stacks and length.
 *
 * The scheduler's switch runs in the context of the thread leaving the
 * CPU: one that waits (prev_state is not TASK_RUNNING; a thread preempted
 * while runnable is not waiting) notes when, in offcpu_waits.  The same
 * switch, for a thread coming back in, ends a stretch of its wait (a
 * system call may leave the CPU several times) and decides whether it is
 * taken; the first stretch taken takes the thread's kernel stack too
 * (why it waits), from the thread itself, which is not running yet: as
 * /proc/PID/stack shows it, the scheduler's own functions (__sched:
 * schedule(), do_nanosleep()) left out by the kernel's unwinder.  Where the system call returns (sys_exit), in
 * the thread's own context, its user registers and memory are those of
 * the wait: a wait with stretches taken is captured there, native and Lua
 * stacks as a CPU sample's, with the kernel stack kept at the switch.
 *
 * A wait is told apart by the user registers it entered the kernel with:
 * one whose system call never returns with them (a page fault's wait, a
 * thread that exits) is counted as not measured (lost_offcpu) when the
 * next wait or system call shows it stale, or the thread exits.  A wait
 * in execve() is not counted at all: the image that waited is gone, and
 * with it any stack of the wait (the recorder's own hold of a command at
 * its exec is such a wait).
 *
 * A stretch of d ns is taken with probability min(1, d / interval) and
 * weighs max(d, interval), d over that probability: the weights add up to
 * the time waited, unbiased, at about one event per interval of waiting
 * (the recorder sets it to the sampling period), however short the waits.
 * A thread that waits 10 000 times a second for 50 us is captured some
 * 500 times a second, not 10 000; a wait not taken costs a few hash map
 * operations, no stack.
 */
const volatile bool offcpu_on = false;
/* The sampling interval of waits, off-CPU and Lua-land (the recorder
 * sets it to the sampling period). */
const volatile __u64 wait_interval_ns = 10000000;

/* A wait (or a stretch of one) of d ns is taken with probability
 * min(1, d / interval): 1 with *weight max(d, interval), else 0. */
static __always_inline int wait_taken(__u64 d, __u64 *weight)
{
	if (d < wait_interval_ns && bpf_get_prandom_u32() % wait_interval_ns >= d)
		return 0;
	*weight = d >= wait_interval_ns ? d : wait_interval_ns;
	return 1;
}

struct offcpu_wait {
	__u64 start;  /* when the wait began: its first switch out */
	__u64 since;  /* when it last left the CPU; 0 while it runs */
	__u64 weight; /* of the stretches taken so far, ns */
	__u64 ip, sp; /* its user registers: which system call waits */
	__u32 state;  /* LP_WAIT_* of its last stretch out */
	__u32 pad;
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16384);
	__type(key, __u32); /* tid */
	__type(value, struct offcpu_wait);
} offcpu_waits SEC(".maps");

/* The kernel stack of a wait with a stretch taken, and how it slept. */
struct offcpu_kstack {
	__s32 bytes; /* or -errno */
	__u32 state; /* LP_WAIT_* */
	__u64 ip[LP_MAX_STACK];
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, __u32); /* tid */
	__type(value, struct offcpu_kstack);
} offcpu_kstacks SEC(".maps");

/* ... built here, not on the stack (1 KiB). */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct offcpu_kstack);
} offcpu_kscratch SEC(".maps");

/* tid's wait is over, or stale: its entries go. */
static __always_inline void offcpu_forget(__u32 tid)
{
	bpf_map_delete_elem(&offcpu_kstacks, &tid);
	bpf_map_delete_elem(&offcpu_waits, &tid);
}

/* prev leaves the CPU to wait: a new wait, or the same one again. */
/* The task state a switch's prev_state says, as LP_WAIT_*: D if the
 * kernel's TASK_UNINTERRUPTIBLE bit (2) is set (TASK_KILLABLE and
 * TASK_IDLE have it too), else S. */
static __always_inline __u32 wait_state(unsigned int prev_state)
{
	return prev_state & 2 ? LP_WAIT_UNINTERRUPTIBLE : LP_WAIT_SLEEPING;
}

static __always_inline void offcpu_out(struct task_struct *prev, __u64 now,
				       unsigned int prev_state)
{
	struct pt_regs *regs = (struct pt_regs *)bpf_task_pt_regs(prev);
	struct offcpu_wait *w, n = {};
	__u32 tid = prev->pid;

	if (!regs)
		return;
	n.ip = LP_CORE_IP(regs);
	n.sp = LP_CORE_SP(regs);
	w = bpf_map_lookup_elem(&offcpu_waits, &tid);
	if (w && w->ip == n.ip && w->sp == n.sp) {
		w->since = now;
		w->state = wait_state(prev_state);
		return;
	}
	if (w && w->weight) /* a wait that ended without its system call's return */
		__sync_fetch_and_add(&counters.lost_offcpu, 1);
	if (w)
		bpf_map_delete_elem(&offcpu_kstacks, &tid);
	n.start = n.since = now;
	n.state = wait_state(prev_state);
	if (bpf_map_update_elem(&offcpu_waits, &tid, &n, BPF_ANY))
		__sync_fetch_and_add(&counters.lost_offcpu, 1);
}

/* next's kernel stack, for its wait's event, and how it slept then. */
static __always_inline void offcpu_take_kstack(struct task_struct *next, __u32 tid,
					       __u32 state)
{
	struct offcpu_kstack *k;
	__u32 zero = 0;

	if (bpf_map_lookup_elem(&offcpu_kstacks, &tid))
		return; /* the wait's first stretch taken took it */
	k = bpf_map_lookup_elem(&offcpu_kscratch, &zero);
	if (!k)
		return;
	k->bytes = bpf_get_task_stack(next, k->ip, sizeof(k->ip), 0);
	k->state = state;
	bpf_map_update_elem(&offcpu_kstacks, &tid, k, BPF_ANY);
}

/* next runs again: a stretch of its wait ends, taken or not. */
static __always_inline void offcpu_in(struct task_struct *next, __u64 now)
{
	__u32 tid = next->pid;
	struct offcpu_wait *w = bpf_map_lookup_elem(&offcpu_waits, &tid);
	__u64 d, taken;

	if (!w || !w->since)
		return;
	d = now - w->since;
	w->since = 0;
	if (!wait_taken(d, &taken))
		return;
	w->weight += taken;
	offcpu_take_kstack(next, tid, w->state);
}

SEC("tp_btf/sched_switch")
int BPF_PROG(on_switch, bool preempt, struct task_struct *prev, struct task_struct *next,
	     unsigned int prev_state)
{
	struct capture *cap;
	__u32 zero = 0;
	__u64 now;

	if (!offcpu_on)
		return 0;
	now = bpf_ktime_get_ns();
	cap = bpf_map_lookup_elem(&captures, &zero);
	if (cap && !preempt && prev_state != 0 /* TASK_RUNNING */ && is_target(cap, prev->tgid))
		offcpu_out(prev, now, prev_state);
	offcpu_in(next, now);
	return 0;
}

/* The kernel stack kept for the wait, into e: a copy of constant size,
 * which needs no bound the verifier could lose. */
static __always_inline void offcpu_kstack(struct lp_event_sample *e, __u32 tid)
{
	struct offcpu_kstack *k = bpf_map_lookup_elem(&offcpu_kstacks, &tid);

	if (!k) {
		e->kstack_bytes = -2; /* -ENOENT: its table was full */
		return;
	}
	e->wait_state = k->state;
	e->kstack_bytes = k->bytes;
	if (k->bytes > 0)
		__builtin_memcpy(e->kstack, k->ip, sizeof(e->kstack));
}

static __always_inline long id_of_syscall(struct pt_regs *regs)
{
	return LP_CORE_SYSCALL(regs);
}

/*
 * An event of the current thread taken in its own context (at a system
 * call's return or entry, at a uprobe), not a tick's: of kind, worth
 * weight and count, at start.  The user registers are uregs (a uprobe's
 * context) or else those saved at kernel entry; the Lua frames those of
 * coroutine suspended_L, or else of the running one (capture_stacks());
 * the kernel stack the off-CPU wait kept (offcpu_kstack()) if
 * kept_kstack, else none.  The callers pass constants, so each program
 * links only what it takes.  1 if the event was sent.
 */
static __always_inline int capture_in_task(void *ctx, __u64 id, __u16 kind, __u64 weight,
					   __u64 count, __u64 start, struct pt_regs *uregs,
					   __u64 suspended_L, bool kept_kstack)
{
	struct lp_event_sample *e;
	struct capture *cap;
	__u32 zero = 0, sent = 0;
	int wake, have_regs = 1;

	cap = bpf_map_lookup_elem(&captures, &zero);
	if (!cap || capture_claim(cap))
		return 0;
	e = capture_begin(id >> 32, (__u32)id, kind, weight, start);
	if (e) {
		e->count = count;
		phase_start(bpf_ktime_get_ns());
		if (uregs)
			regs_from_pt(uregs, &cap->regs);
		else
			have_regs = regs_from_task(&cap->regs) == 0;
		wake = capture_stacks(ctx, cap, e, false, have_regs, suspended_L);
		if (kept_kstack)
			offcpu_kstack(e, (__u32)id);
		phase_done(capture_send(cap, e, wake), e->ustack_bytes, e->kstack_bytes);
		sent = !cap->last_lost;
	}
	capture_end(cap);
	return sent;
}

SEC("tp_btf/sys_exit")
int BPF_PROG(on_sys_exit, struct pt_regs *regs, long ret)
{
	__u64 id = bpf_get_current_pid_tgid();
	__u32 tid = (__u32)id;
	struct offcpu_wait *w;

	if (!offcpu_on)
		return 0;
	w = bpf_map_lookup_elem(&offcpu_waits, &tid);
	if (!w)
		return 0;
	if (w->ip != LP_CORE_IP(regs) || w->sp != LP_CORE_SP(regs)) {
		/* Another wait's, which ended without this return; or an
		 * execve()'s, which replaced the registers. */
		long nr = id_of_syscall(regs);

		if (w->weight && nr != LP_NR_EXECVE && nr != LP_NR_EXECVEAT)
			__sync_fetch_and_add(&counters.lost_offcpu, 1);
	} else if (w->weight) {
		/* Its stacks now, its kernel stack kept, its weight. */
		capture_in_task(ctx, id, LP_KIND_OFF_CPU, w->weight, 1, w->start, NULL, 0, true);
	}
	offcpu_forget(tid);
	return 0;
}

#include "bpf/luawait.bpf.h" /* Lua-land waits: on lua_resume */
#include "bpf/stall.bpf.h" /* event-loop stalls: epoll's iterations */
#include "bpf/alloc.bpf.h" /* allocations: on the VM's allocator */

static __always_inline void send_task_event(__u32 type, __u32 pid, __u32 ppid,
					    struct task_struct *task, bool hold)
{
	struct lp_event_task *e;

	e = bpf_ringbuf_reserve(&events, sizeof(*e), 0);
	if (!e) {
		__sync_fetch_and_add(&counters.lost_task, 1);
		return;
	}
	e->h.type = type;
	e->h.pid = pid;
	e->h.tid = pid;
	e->h.cpu = bpf_get_smp_processor_id();
	e->h.time_ns = bpf_ktime_get_ns();
	e->ppid = ppid;
	e->flags = 0;
	/* Stopped only when the recorder hears of it, to continue it. */
	if (hold && !bpf_send_signal(LP_SIGSTOP))
		e->flags = LP_TASK_HELD;
	BPF_CORE_READ_STR_INTO(&e->comm, task, comm);
	/* Process events are rare and the recorder acts on them: wake it. */
	bpf_ringbuf_submit(e, BPF_RB_FORCE_WAKEUP);
}

SEC("tp_btf/sched_process_fork")
int BPF_PROG(on_fork, struct task_struct *parent, struct task_struct *child)
{
	__u32 ptgid = BPF_CORE_READ(parent, tgid);
	__u32 ctgid = BPF_CORE_READ(child, tgid);
	__u32 *flags;
	struct lj_proc *lj;

	/* A new thread shares its tgid and is sampled already. */
	if (!follow_children || ptgid == ctgid)
		return 0;
	flags = bpf_map_lookup_elem(&targets, &ptgid);
	if (!flags)
		return 0;
	bpf_map_update_elem(&targets, &ctgid, flags, BPF_ANY);
	unwind_fork_process(ptgid, ctgid); /* native unwinder: same mappings */
	/* A forked child has its parent's memory, so its parent's VM: Lua
	 * frames from its first tick, before the recorder hears of it. */
	lj = bpf_map_lookup_elem(&lj_procs, &ptgid);
	if (lj)
		bpf_map_update_elem(&lj_procs, &ctgid, lj, BPF_ANY);
	procs_changed(); /* after both maps' changes */
	send_task_event(LP_EVENT_FORK, ctgid, ptgid, child, false);
	return 0;
}

/* A process that execs a LuaJIT executable the recorder validated in
 * another (lj_images) gets its layout now: a short-lived one has Lua frames
 * before the recorder hears of it.  Its interpreter lies where it did in
 * the other process, relative to the start of the executable's code. */
static __always_inline void exec_known_luajit(struct task_struct *task, __u32 tgid)
{
	struct inode *ino = BPF_CORE_READ(task, mm, exe_file, f_inode);
	struct lp_file_id key;
	struct lj_proc *image, proc;
	__u64 code;

	lp_file_id_of(ino, &key);
	image = bpf_map_lookup_elem(&lj_images, &key);
	if (!image)
		return;
	__builtin_memcpy(&proc, image, sizeof(proc));
	code = BPF_CORE_READ(task, mm, start_code);
	proc.vm_start += code;
	proc.vm_end += code;
	bpf_map_update_elem(&lj_procs, &tgid, &proc, BPF_ANY);
}

SEC("tp_btf/sched_process_exec")
int BPF_PROG(on_exec, struct task_struct *task)
{
	__u32 tgid = BPF_CORE_READ(task, tgid);
	__u32 *flags = bpf_map_lookup_elem(&targets, &tgid);

	if (!flags)
		return 0;
	/* A new image: whatever VM it had is gone until re-detected, unless
	 * the image is one the recorder knows. */
	bpf_map_delete_elem(&lj_procs, &tgid);
	exec_known_luajit(task, tgid);
	if (stall_on) /* the loop that ran is gone with its image */
		stall_forget(BPF_CORE_READ(task, pid));
	procs_changed();
	unwind_forget_process(tgid); /* native unwinder: old mappings */
	send_task_event(LP_EVENT_EXEC, tgid, BPF_CORE_READ(task, real_parent, tgid),
			task, *flags & LP_TARGET_HOLD_EXEC);
	return 0;
}

SEC("tp_btf/sched_process_exit")
int BPF_PROG(on_exit, struct task_struct *task)
{
	__u32 tgid = BPF_CORE_READ(task, tgid), tid = BPF_CORE_READ(task, pid);

	if (!bpf_map_lookup_elem(&targets, &tgid))
		return 0;
	/* The thread's wait, if one is open, ends with it: a wait in a
	 * system call that never returned (exit_group() from another). */
	if (offcpu_on) {
		struct offcpu_wait *w = bpf_map_lookup_elem(&offcpu_waits, &tid);

		if (w && w->weight)
			__sync_fetch_and_add(&counters.lost_offcpu, 1);
		offcpu_forget(tid);
	}
	if (stall_on)
		stall_forget(tid);
	/* do_exit() has already counted this thread out of signal->live;
	 * zero means it was the last one and the process is gone. */
	if (BPF_CORE_READ(task, signal, live.counter) != 0)
		return 0;
	bpf_map_delete_elem(&targets, &tgid);
	bpf_map_delete_elem(&lj_procs, &tgid);
	procs_changed(); /* after both maps' changes */
	send_task_event(LP_EVENT_EXIT, tgid, BPF_CORE_READ(task, real_parent, tgid),
			task, false);
	return 0;
}

/* SPDX-License-Identifier: GPL-2.0 */
/*
 * stall.bpf.h - event-loop stalls (LP_KIND_STALL): an iteration of a
 * target thread's event loop longer than stall_threshold_ns, with the
 * thread's stacks where the loop waits again.  Included by sampler.bpf.c,
 * beside the off-CPU programs, whose is_target() and capture_in_task() it uses.
 *
 * An iteration is the time from the return of an epoll wait
 * (epoll_wait, epoll_pwait, epoll_pwait2) to the thread's next entry into
 * one: what the loop did between two waits for events, on the CPU or
 * off it.  nginx, kresd and rspamd workers loop so; a long iteration is
 * what blocked every connection the worker holds.  The return notes its
 * time in stall_iters (targets only); the next entry ends the iteration,
 * and one of stall_threshold_ns or more is sent, its time the
 * iteration's start and its weight its length, with the stacks of the
 * entry: which loop stalled.  What ran inside it is the CPU samples and
 * off-CPU waits of the same thread in that interval (report --stalls).
 *
 * Both programs test the system call number first: every system call of
 * every thread runs them, and all but a target's epoll waits end there.
 * A thread's first iteration starts at its first epoll return after the
 * recording began; one that exits or execs forgets its open iteration.
 */
#ifndef LUAPROF_BPF_STALL_BPF_H
#define LUAPROF_BPF_STALL_BPF_H

/* Set by the recorder before load (record/events.c). */
const volatile bool stall_on = false;
const volatile __u64 stall_threshold_ns = 10000000;

/* When each target thread's epoll wait last returned: its iteration's
 * start; 0 while it waits (or before its first return). */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16384);
	__type(key, __u32); /* tid */
	__type(value, __u64);
} stall_iters SEC(".maps");

/* The epoll waits' system call numbers are the architecture's
 * (bpf/arch_*.bpf.h): arm64 has no epoll_wait, only epoll_pwait. */
static __always_inline int stall_is_epoll(long nr)
{
#ifdef LP_NR_EPOLL_WAIT
	if (nr == LP_NR_EPOLL_WAIT)
		return 1;
#endif
	return nr == LP_NR_EPOLL_PWAIT || nr == LP_NR_EPOLL_PWAIT2;
}

static __always_inline void stall_forget(__u32 tid)
{
	bpf_map_delete_elem(&stall_iters, &tid);
}


/* An epoll wait returns: a target thread's iteration starts. */
SEC("tp_btf/sys_exit")
int BPF_PROG(on_stall_exit, struct pt_regs *regs, long ret)
{
	__u64 id, now, *t;
	struct capture *cap;
	__u32 tid, zero = 0;

	if (!stall_on || !stall_is_epoll(id_of_syscall(regs)))
		return 0;
	id = bpf_get_current_pid_tgid();
	cap = bpf_map_lookup_elem(&captures, &zero);
	if (!cap || !is_target(cap, id >> 32))
		return 0;
	tid = (__u32)id;
	now = bpf_ktime_get_ns();
	t = bpf_map_lookup_elem(&stall_iters, &tid);
	if (t)
		*t = now;
	else
		bpf_map_update_elem(&stall_iters, &tid, &now, BPF_ANY);
	return 0;
}

/* An epoll wait begins: the iteration ends, a stall if long enough.
 * Only targets' threads have entries: no target test here. */
SEC("tp_btf/sys_enter")
int BPF_PROG(on_stall_enter, struct pt_regs *regs, long nr)
{
	__u64 id, start, now, *t;
	__u32 tid;

	if (!stall_on || !stall_is_epoll(nr))
		return 0;
	id = bpf_get_current_pid_tgid();
	tid = (__u32)id;
	t = bpf_map_lookup_elem(&stall_iters, &tid);
	if (!t || !*t)
		return 0;
	start = *t;
	*t = 0;
	now = bpf_ktime_get_ns();
	if (now - start >= stall_threshold_ns)
		/* The stacks at the wait's entry, the iteration's start
		 * and length. */
		capture_in_task(ctx, id, LP_KIND_STALL, now - start, 1, start, NULL, 0, false);
	return 0;
}

#endif

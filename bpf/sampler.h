/*
 * sampler.h - the events the BPF sampler sends to the recorder through its
 * ring buffer, shared by bpf/sampler.bpf.c and record/.  Both sides see the
 * same bytes, so every field has a fixed width and every struct a size
 * assertion; nothing here is ever written to a trace as it lies in memory
 * (format/ encodes each field explicitly).
 *
 *   lp_event_sample (2080 bytes)            lp_event_task (48 bytes)
 *   +0  type pid tid cpu                     +0  type pid tid cpu
 *   +16 time_ns                              +16 time_ns
 *   +24 kstack_bytes ustack_bytes            +24 ppid  pad
 *   +32 kstack[LP_MAX_STACK]  (leaf first)   +32 comm[16]
 *   +1048 ustack[LP_MAX_STACK] (leaf first)
 *
 * The stack byte counts are bpf_get_stack()'s return: bytes written, or a
 * negative errno when the stack could not be read.
 */
#ifndef LUAPROF_BPF_SAMPLER_H
#define LUAPROF_BPF_SAMPLER_H

#ifndef __VMLINUX_H__
#include <linux/types.h>
#endif

/* The kernel's default kernel.perf_event_max_stack. */
#define LP_MAX_STACK 127
#define LP_COMM_LEN 16

enum lp_event_type {
	LP_EVENT_SAMPLE = 1,
	LP_EVENT_FORK = 2, /* pid: the new process; ppid: its parent */
	LP_EVENT_EXEC = 3, /* pid replaced its image */
	LP_EVENT_EXIT = 4, /* the last thread of pid exited */
};

struct lp_event_header {
	__u32 type;
	__u32 pid; /* thread group id: the process */
	__u32 tid;
	__u32 cpu;
	__u64 time_ns; /* bpf_ktime_get_ns(): CLOCK_MONOTONIC */
};

struct lp_event_sample {
	struct lp_event_header h;
	__s32 kstack_bytes;
	__s32 ustack_bytes;
	__u64 kstack[LP_MAX_STACK];
	__u64 ustack[LP_MAX_STACK];
};

struct lp_event_task {
	struct lp_event_header h;
	__u32 ppid;
	__u32 pad;
	char comm[LP_COMM_LEN];
};

/* Counters the BPF side keeps for what it could not deliver. */
struct lp_bpf_counters {
	__u64 samples;       /* samples of target processes seen */
	__u64 lost_ringbuf;  /* samples dropped: ring buffer full */
	__u64 lost_task;     /* fork/exec/exit events dropped */
	__u64 kstack_failed; /* bpf_get_stack() errors, kernel side */
	__u64 ustack_failed; /* bpf_get_stack() errors, user side */
};

_Static_assert(sizeof(struct lp_event_header) == 24, "lp_event_header layout");
_Static_assert(sizeof(struct lp_event_sample) == 32 + 2 * 8 * LP_MAX_STACK,
	       "lp_event_sample layout");
_Static_assert(sizeof(struct lp_event_task) == 48, "lp_event_task layout");
_Static_assert(sizeof(struct lp_bpf_counters) == 40, "lp_bpf_counters layout");

#endif

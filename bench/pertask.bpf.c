// SPDX-License-Identifier: GPL-2.0
/*
 * pertask.bpf.c - bench/pertask.c's tick counter: counts, per thread id,
 * the cpu-clock ticks that ran it.  Nothing else: what the probe asks is
 * which tasks' ticks run a program attached to a per-task event, and what
 * such events cost, not what a sample costs (bench/ticks.sh).
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, __u32);   /* thread id; 0 is an idle CPU */
	__type(value, __u64); /* runs */
} runs SEC(".maps");

SEC("perf_event")
int on_tick(struct bpf_perf_event_data *ctx)
{
	__u32 tid = (__u32)bpf_get_current_pid_tgid();
	__u64 one = 1, *n = bpf_map_lookup_elem(&runs, &tid);

	if (n)
		__sync_fetch_and_add(n, 1);
	else
		bpf_map_update_elem(&runs, &tid, &one, BPF_NOEXIST);
	return 0;
}

char LICENSE[] SEC("license") = "GPL";

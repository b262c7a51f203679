/*
 * procs.h - what /proc says about a process: its name, parent and
 * executable, when it started, its descendants (procs.c).
 */
#ifndef LUAPROF_RECORD_PROCS_H
#define LUAPROF_RECORD_PROCS_H

#include <stdint.h>
#include <sys/types.h>

struct proc_info {
	pid_t pid, ppid;
	char comm[64];
	char exe[4096];
};

int proc_read_info(pid_t pid, struct proc_info *info);
/* When pid started, in CLOCK_REALTIME nanoseconds (to clock-tick
 * precision), or 0 if unknown. */
uint64_t proc_start_real_ns(pid_t pid);
/* All descendants of the given roots, alive now (roots excluded). */
int proc_descendants(const pid_t *roots, int nroots, pid_t **out, int *count);
int proc_exists(pid_t pid);
/* Whether pid is a kernel thread (PF_KTHREAD): no user stack to sample. */
int proc_is_kthread(pid_t pid);

#endif

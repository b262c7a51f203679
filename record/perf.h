/*
 * perf.h - the cpu-clock perf_events that run the sampler's program: one
 * per CPU, or one on a task and inherited by its descendants (perf.c).
 */
#ifndef LUAPROF_RECORD_PERF_H
#define LUAPROF_RECORD_PERF_H

#include <sys/types.h>

struct bpf_program;
struct bpf_link;

struct perf_sampling {
	int nevents; /* one per CPU, or one on a task */
	int *fds;
	struct bpf_link **links;
};

int perf_sampling_attach(struct perf_sampling *ps, struct bpf_program *prog,
			 unsigned int freq_hz);
/* One event on PID, which must not have run yet (launch.c's held child):
 * inherited by every thread and, unless THREADS_ONLY, every child it
 * creates from then on. */
int perf_sampling_attach_task(struct perf_sampling *ps, struct bpf_program *prog,
			      unsigned int freq_hz, pid_t pid, int threads_only);
void perf_sampling_detach(struct perf_sampling *ps);

#endif

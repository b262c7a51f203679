/*
 * perf.h - one cpu-clock perf_event per CPU, each running the sampler's
 * program (perf.c).
 */
#ifndef LUAPROF_RECORD_PERF_H
#define LUAPROF_RECORD_PERF_H

struct bpf_program;
struct bpf_link;

struct perf_sampling {
	int ncpus;
	int *fds;
	struct bpf_link **links;
};

int perf_sampling_attach(struct perf_sampling *ps, struct bpf_program *prog,
			 unsigned int freq_hz);
void perf_sampling_detach(struct perf_sampling *ps);

#endif

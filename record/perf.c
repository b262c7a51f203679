/*
 * perf.c - opens one perf_event per CPU on the software cpu-clock event,
 * sampling at a frequency, and attaches the BPF program to each.  These
 * machines have no hardware counters, and cpu-clock ticks wherever a task
 * runs, which is what "where does the CPU go" asks.
 */
#include <errno.h>
#include <linux/perf_event.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <bpf/libbpf.h>

#include "record/perf.h"

static int perf_event_open(struct perf_event_attr *attr, pid_t pid, int cpu)
{
	return syscall(SYS_perf_event_open, attr, pid, cpu, -1,
		       PERF_FLAG_FD_CLOEXEC);
}

int perf_sampling_attach(struct perf_sampling *ps, struct bpf_program *prog,
			 unsigned int freq_hz)
{
	struct perf_event_attr attr;
	int ncpus = libbpf_num_possible_cpus(), attached = 0, err = 0;

	if (ncpus <= 0)
		return ncpus ? ncpus : -ENODEV;
	ps->ncpus = ncpus;
	ps->fds = calloc(ncpus, sizeof(*ps->fds));
	ps->links = calloc(ncpus, sizeof(*ps->links));
	if (!ps->fds || !ps->links)
		return -ENOMEM;
	memset(&attr, 0, sizeof(attr));
	attr.size = sizeof(attr);
	attr.type = PERF_TYPE_SOFTWARE;
	attr.config = PERF_COUNT_SW_CPU_CLOCK;
	attr.freq = 1;
	attr.sample_freq = freq_hz;

	for (int cpu = 0; cpu < ncpus; cpu++) {
		ps->fds[cpu] = perf_event_open(&attr, -1, cpu);
		if (ps->fds[cpu] < 0) {
			ps->fds[cpu] = -1;
			if (errno == ENODEV) /* possible but offline */
				continue;
			err = -errno;
			goto fail;
		}
		ps->links[cpu] = bpf_program__attach_perf_event(prog, ps->fds[cpu]);
		if (!ps->links[cpu]) {
			err = -errno;
			goto fail;
		}
		attached++;
	}
	return attached ? 0 : -ENODEV;
fail:
	perf_sampling_detach(ps);
	return err;
}

void perf_sampling_detach(struct perf_sampling *ps)
{
	for (int cpu = 0; cpu < ps->ncpus; cpu++) {
		if (ps->links && ps->links[cpu])
			bpf_link__destroy(ps->links[cpu]);
		if (ps->fds && ps->fds[cpu] >= 0)
			close(ps->fds[cpu]);
	}
	free(ps->fds);
	free(ps->links);
	memset(ps, 0, sizeof(*ps));
}

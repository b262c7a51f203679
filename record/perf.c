/*
 * perf.c - opens the software cpu-clock events the sampler's program runs
 * on, sampling at a frequency, and attaches the program to each.  These
 * machines have no hardware counters, and cpu-clock ticks wherever a task
 * runs, which is what "where does the CPU go" asks.  Two ways:
 *
 *   per CPU   one event per CPU, any task: every CPU ticks, idle or
 *             running other programs, and the program drops the ticks of
 *             tasks that are not targets (as `perf record -a` does).
 *   per task  one event on a task not yet running (launch mode's held
 *             child), with attr.inherit: its threads and children get
 *             events of their own as they are created, and the kernel
 *             gives them the parent's program (perf_event_alloc's
 *             parent_event path, 6.1 as 6.18; bench/pertask.c checks it).
 *             Only the CPUs running a target tick; but every switch to
 *             or from a target starts or stops its event's timer, which
 *             costs a few microseconds on a virtual machine (docs/recording.md).
 *             Only tasks created after the event was opened inherit it:
 *             a running process's existing threads would need one each.
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

static void cpu_clock_attr(struct perf_event_attr *attr, unsigned int freq_hz)
{
	memset(attr, 0, sizeof(*attr));
	attr->size = sizeof(*attr);
	attr->type = PERF_TYPE_SOFTWARE;
	attr->config = PERF_COUNT_SW_CPU_CLOCK;
	attr->freq = 1;
	attr->sample_freq = freq_hz;
}

static int alloc_slots(struct perf_sampling *ps, int n)
{
	ps->nevents = n;
	ps->fds = calloc(n, sizeof(*ps->fds));
	ps->links = calloc(n, sizeof(*ps->links));
	if (!ps->fds || !ps->links)
		return -ENOMEM;
	for (int i = 0; i < n; i++)
		ps->fds[i] = -1;
	return 0;
}

/* Opens slot I's event on (PID, CPU) and attaches PROG: 0, -ENODEV for a
 * CPU that is possible but offline, or -errno. */
static int open_slot(struct perf_sampling *ps, int i, struct perf_event_attr *attr,
		     pid_t pid, int cpu, struct bpf_program *prog)
{
	ps->fds[i] = perf_event_open(attr, pid, cpu);
	if (ps->fds[i] < 0) {
		ps->fds[i] = -1;
		return -errno;
	}
	ps->links[i] = bpf_program__attach_perf_event(prog, ps->fds[i]);
	return ps->links[i] ? 0 : -errno;
}

int perf_sampling_attach(struct perf_sampling *ps, struct bpf_program *prog,
			 unsigned int freq_hz)
{
	struct perf_event_attr attr;
	int ncpus = libbpf_num_possible_cpus(), attached = 0, err;

	if (ncpus <= 0)
		return ncpus ? ncpus : -ENODEV;
	err = alloc_slots(ps, ncpus);
	if (err)
		goto fail;
	cpu_clock_attr(&attr, freq_hz);
	for (int cpu = 0; cpu < ncpus; cpu++) {
		err = open_slot(ps, cpu, &attr, -1, cpu, prog);
		if (err == -ENODEV && ps->fds[cpu] < 0) /* possible but offline */
			continue;
		if (err)
			goto fail;
		attached++;
	}
	return attached ? 0 : -ENODEV;
fail:
	perf_sampling_detach(ps);
	return err;
}

int perf_sampling_attach_task(struct perf_sampling *ps, struct bpf_program *prog,
			      unsigned int freq_hz, pid_t pid, int threads_only)
{
	struct perf_event_attr attr;
	int err = alloc_slots(ps, 1);

	if (!err) {
		cpu_clock_attr(&attr, freq_hz);
		attr.inherit = 1;
		/* --no-children: its threads tick, its children do not */
		attr.inherit_thread = !!threads_only;
		err = open_slot(ps, 0, &attr, pid, -1, prog);
	}
	if (err)
		perf_sampling_detach(ps);
	return err;
}

void perf_sampling_detach(struct perf_sampling *ps)
{
	for (int i = 0; i < ps->nevents; i++) {
		if (ps->links && ps->links[i])
			bpf_link__destroy(ps->links[i]);
		if (ps->fds && ps->fds[i] >= 0)
			close(ps->fds[i]);
	}
	free(ps->fds);
	free(ps->links);
	memset(ps, 0, sizeof(*ps));
}

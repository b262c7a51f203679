/*
 * clock.h - the two clocks the recorder reads: CLOCK_MONOTONIC, the
 * clock of the sampler's timestamps (bpf_ktime_get_ns()) and of every
 * time a trace holds, and CLOCK_REALTIME, which the META record pairs
 * with it so that a report can say when the recording started.  And the
 * recorder's own CPU time, every thread's, which record -v accounts for.
 */
#ifndef LUAPROF_RECORD_CLOCK_H
#define LUAPROF_RECORD_CLOCK_H

#include <stdint.h>
#include <time.h>

static inline uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

static inline uint64_t real_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

/* The CPU this process has used since it started, all threads, in ns. */
static inline uint64_t self_cpu_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

#endif

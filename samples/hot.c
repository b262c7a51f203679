/*
 * hot.c - a C program whose profile is known in advance: work_a, work_b and
 * work_c call one common callee, spin(), with 1, 2 and 3 units of work, so
 * their inclusive shares are 1:2:3 (1/6, 2/6, 3/6) and spin() holds nearly
 * all self time.  Runs for SECONDS (default 5) and exits, printing the CPU
 * time it got on stderr ("hot: 4.012 s of CPU"): on a busy machine that,
 * not SECONDS, is what a profiler at a given rate has to account for.
 *
 *   usage: hot [SECONDS]
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define UNIT 200000ul

__attribute__((noinline)) void spin(unsigned long n)
{
	volatile unsigned long x = 0;

	for (unsigned long i = 0; i < n; i++)
		x += i;
}

__attribute__((noinline)) void work_a(void) { spin(1 * UNIT); }
__attribute__((noinline)) void work_b(void) { spin(2 * UNIT); }
__attribute__((noinline)) void work_c(void) { spin(3 * UNIT); }

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

__attribute__((noinline)) void run(double seconds)
{
	double end = now() + seconds;

	while (now() < end) {
		work_a();
		work_b();
		work_c();
	}
}

int main(int argc, char **argv)
{
	struct timespec cpu;

	run(argc > 1 ? atof(argv[1]) : 5.0);
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &cpu);
	fprintf(stderr, "hot: %.3f s of CPU\n", cpu.tv_sec + cpu.tv_nsec / 1e9);
	return 0;
}

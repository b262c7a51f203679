/*
 * fixed_work.c - a fixed amount of work on registers alone, timed: what
 * bench/ticks.sh runs under each sampler to weigh one tick.  The loop
 * touches no memory, so a sampler's tick slows it only by the time the
 * tick takes on its CPU (the interrupt, the sampler's program, and on a
 * virtual machine the exits to the hypervisor), not by the caches it
 * disturbs: the time it takes beyond an unprofiled run, over the ticks it
 * got, is what one tick costs.
 *
 * Prints its wall time and its CPU time (which holds the ticks too: the
 * kernel charges an interrupt to the task it interrupts) on stdout:
 * "fixed_work: WALL s wall, CPU s CPU".
 *
 *   usage: fixed_work [ITERATIONS]   (default 1e9, about a second here)
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double seconds(clockid_t clock)
{
	struct timespec ts;

	clock_gettime(clock, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* A linear congruential step per iteration, kept in a register (the
 * empty asm stops the compiler from folding the loop away). */
__attribute__((noinline)) unsigned long work(unsigned long n)
{
	unsigned long x = 1;

	for (unsigned long i = 0; i < n; i++) {
		x = x * 6364136223846793005ul + 1442695040888963407ul;
		__asm__ volatile("" : "+r"(x));
	}
	return x;
}

int main(int argc, char **argv)
{
	unsigned long n = argc > 1 ? strtoul(argv[1], NULL, 0) : 1000000000ul;
	double wall = seconds(CLOCK_MONOTONIC), cpu = seconds(CLOCK_PROCESS_CPUTIME_ID);
	unsigned long x = work(n);

	wall = seconds(CLOCK_MONOTONIC) - wall;
	cpu = seconds(CLOCK_PROCESS_CPUTIME_ID) - cpu;
	printf("fixed_work: %.6f s wall, %.6f s CPU\n", wall, cpu);
	return x == 42; /* (uses x) */
}

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

__attribute__((noinline)) void work_a(unsigned long u) { spin(1 * u); }
__attribute__((noinline)) void work_b(unsigned long u) { spin(2 * u); }
__attribute__((noinline)) void work_c(unsigned long u) { spin(3 * u); }

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/*
 * A round of the three takes about a millisecond, the period of a 999 Hz
 * sampler: at a fixed length and order, the ticks would fall at the same
 * points of every round and skew the shares (aliasing).  So each round's
 * unit and order are drawn at random; the 1:2:3 shares hold on average.
 */
__attribute__((noinline)) void run(double seconds)
{
	double end = now() + seconds;
	unsigned long rng = 88172645463325252ul;

	while (now() < end) {
		unsigned long u;

		rng ^= rng << 13;
		rng ^= rng >> 7;
		rng ^= rng << 17;
		u = UNIT / 2 + rng % UNIT; /* 0.5 to 1.5 units */
		switch (rng >> 61) {
		case 0: work_a(u); work_b(u); work_c(u); break;
		case 1: work_a(u); work_c(u); work_b(u); break;
		case 2: work_b(u); work_a(u); work_c(u); break;
		case 3: work_b(u); work_c(u); work_a(u); break;
		case 4: work_c(u); work_a(u); work_b(u); break;
		default: work_c(u); work_b(u); work_a(u); break;
		}
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

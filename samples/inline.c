/*
 * inline.c - a C program for source lines and inlined frames, built with
 * -g -O2 (see the Makefile).  mix() is always inlined into step(), and
 * step() calls the hot leaf churn(), which is never inlined: so samples
 * in mix's code have the native frames main;run;step;mix [inlined], and
 * samples in churn have main;run;step;churn, each at lines a test can
 * find by the markers in the comments.  Runs for SECONDS (default 5).
 *
 *   usage: inline [SECONDS]
 */
#include <stdlib.h>
#include <time.h>

#define ROUNDS 20000u

static volatile unsigned long sink;

__attribute__((noinline)) unsigned long churn(unsigned long x)
{
	for (unsigned i = 0; i < ROUNDS; i++)
		x = x * 6364136223846793005ul + 1442695040888963407ul; /* LINE:churn */
	return x;
}

static inline __attribute__((always_inline)) unsigned long mix(unsigned long x)
{
	for (unsigned i = 0; i < ROUNDS; i++)
		x ^= (x << 13) ^ (x >> 7) ^ (x << 17) ^ i; /* LINE:mix */
	return x;
}

__attribute__((noinline)) unsigned long step(unsigned long x)
{
	x = mix(x); /* LINE:call-mix */
	return churn(x); /* LINE:call-churn */
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

__attribute__((noinline)) void run(double seconds)
{
	double end = now() + seconds;
	unsigned long x = 1;

	while (now() < end)
		x = step(x);
	sink = x;
}

int main(int argc, char **argv)
{
	run(argc > 1 ? atof(argv[1]) : 5.0);
	return 0;
}

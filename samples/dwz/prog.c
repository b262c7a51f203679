/*
 * prog.c - the program tests/e2e/dwz.sh profiles, samples/inline.c's
 * shape with mix() from a header another program includes too (other.c):
 * mix() is always inlined into step(), which then calls the hot leaf
 * churn(), never inlined; so samples have the native frames
 * main;run;step;mix [inlined] and main;run;step;churn, at lines found by
 * the markers in the comments.  Runs for SECONDS (default 5).
 *
 *   usage: prog [SECONDS]
 */
#include <stdlib.h>
#include <time.h>

#include "mix.h"

#define ROUNDS 20000u

static volatile unsigned long sink;

__attribute__((noinline)) unsigned long churn(unsigned long x)
{
	for (unsigned i = 0; i < ROUNDS; i++)
		x = x * 6364136223846793005ul + 1442695040888963407ul; /* LINE:churn */
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

/*
 * nofp.c - a program whose stacks are known in advance, built WITHOUT
 * frame pointers (-O2 -fomit-frame-pointer, a Makefile rule of its own),
 * as Debian builds everything: only an unwinder that reads .eh_frame gets
 * its stacks right.  tests/e2e/native_unwind.sh records each mode and
 * checks that the chains below come out whole, down to main.
 *
 *   usage: nofp [chains|libc|signal] [SECONDS]   (default: chains 3)
 *
 *   chains  main;run_chains;chain_a;level1;level2;level3;spin_leaf
 *           main;run_chains;chain_b;vla_frame;level3;spin_leaf
 *           (chain_b:chain_a about 1:1; vla_frame keeps a variable-length
 *           array, so its CFA is rbp-based while the others' are rsp-based)
 *   libc    main;run_libc;sort_once;qsort;...;cmp_ints: time inside libc,
 *           which calls back into this program
 *   signal  main;run_signal;wait_loop, and a SIGALRM handler that spins:
 *           ...;wait_loop;<__restore_rt>;on_alarm;spin_leaf
 *
 * Every function is noipa: no inlining, cloning or tail calls, so each
 * named function is one real frame.
 */
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>

#define NOIPA __attribute__((noipa))
#define UNIT 100000ul

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

NOIPA unsigned long spin_leaf(unsigned long n)
{
	volatile unsigned long x = 0;

	for (unsigned long i = 0; i < n; i++)
		x += i;
	return x;
}

/* Each level keeps a buffer, so its frame (and CFA offset) differs, and
 * uses its callee's result, so the call is not a tail call. */
NOIPA unsigned long level3(unsigned long n)
{
	volatile char buf[40];

	buf[n % sizeof(buf)] = 1;
	return spin_leaf(n) + buf[0];
}

NOIPA unsigned long level2(unsigned long n)
{
	volatile char buf[200];

	buf[n % sizeof(buf)] = 2;
	return level3(n) + buf[1];
}

NOIPA unsigned long level1(unsigned long n)
{
	volatile char buf[1000];

	buf[n % sizeof(buf)] = 3;
	return level2(n) + buf[2];
}

NOIPA unsigned long vla_frame(unsigned long n)
{
	/* A variable-length array makes GCC address the frame from rbp,
	 * even with -fomit-frame-pointer: CFA = rbp + 16 here. */
	volatile char vla[16 + n % 64];

	vla[0] = 4;
	return level3(n) + vla[0];
}

NOIPA unsigned long chain_a(void)
{
	return level1(3 * UNIT) + 1;
}

NOIPA unsigned long chain_b(void)
{
	return vla_frame(3 * UNIT) + 1;
}

NOIPA unsigned long run_chains(double seconds)
{
	double end = now() + seconds;
	unsigned long sum = 0;

	while (now() < end) {
		sum += chain_a();
		sum += chain_b();
	}
	return sum;
}

NOIPA int cmp_ints(const void *a, const void *b)
{
	int x = *(const int *)a, y = *(const int *)b;

	return (x > y) - (x < y);
}

NOIPA unsigned long sort_once(int *v, size_t n, unsigned int seed)
{
	for (size_t i = 0; i < n; i++) {
		seed = seed * 1103515245u + 12345u;
		v[i] = (int)(seed >> 8);
	}
	qsort(v, n, sizeof(*v), cmp_ints);
	return (unsigned long)v[n / 2];
}

NOIPA unsigned long run_libc(double seconds)
{
	enum { N = 20000 };
	static int v[N];
	double end = now() + seconds;
	unsigned long sum = 0;
	unsigned int seed = 1;

	while (now() < end)
		sum += sort_once(v, N, seed++);
	return sum;
}

static volatile unsigned long sink;

NOIPA void on_alarm(int sig)
{
	(void)sig;
	sink = spin_leaf(UNIT); /* a use: not a tail call */
}

NOIPA unsigned long wait_loop(double end)
{
	unsigned long n = 0;

	while (now() < end)
		n++;
	return n;
}

NOIPA unsigned long run_signal(double seconds)
{
	struct itimerval it = { { 0, 2000 }, { 0, 2000 } };
	struct sigaction sa;
	unsigned long n;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_alarm;
	sa.sa_flags = SA_RESTART;
	sigaction(SIGALRM, &sa, NULL);
	setitimer(ITIMER_REAL, &it, NULL);
	n = wait_loop(now() + seconds);
	memset(&it, 0, sizeof(it));
	setitimer(ITIMER_REAL, &it, NULL);
	return n;
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "chains";
	double seconds = argc > 2 ? atof(argv[2]) : 3.0;
	unsigned long r;

	if (!strcmp(mode, "libc"))
		r = run_libc(seconds);
	else if (!strcmp(mode, "signal"))
		r = run_signal(seconds);
	else
		r = run_chains(seconds);
	return r == 42; /* uses r: keeps the work */
}

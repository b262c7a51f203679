/*
 * tree.c - a process tree for following children: forks NCHILD children at
 * once, each burning CPU in child_work() for SECONDS, and on SIGUSR1 forks
 * one more (late_child_work), as an nginx master starts a worker.  The
 * parent waits for all of them and exits.  It prints "ready" once its
 * first children run.
 *
 *   usage: tree NCHILD SECONDS
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static volatile sig_atomic_t late_requested;
static double seconds;

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

__attribute__((noinline)) void burn(double until)
{
	volatile unsigned long x = 0;

	while (now() < until)
		for (int i = 0; i < 100000; i++)
			x += i;
}

__attribute__((noinline)) void child_work(void) { burn(now() + seconds); }
__attribute__((noinline)) void late_child_work(void) { burn(now() + seconds); }

static void on_usr1(int sig)
{
	(void)sig;
	late_requested = 1;
}

static void spawn(void (*fn)(void))
{
	pid_t pid = fork();

	if (pid == 0) {
		fn();
		_exit(0);
	}
	if (pid < 0)
		perror("fork");
}

int main(int argc, char **argv)
{
	int nchild = argc > 1 ? atoi(argv[1]) : 2, running;

	struct sigaction sa = { .sa_handler = on_usr1 }; /* no SA_RESTART */

	seconds = argc > 2 ? atof(argv[2]) : 5.0;
	sigaction(SIGUSR1, &sa, NULL);
	for (int i = 0; i < nchild; i++)
		spawn(child_work);
	running = nchild;
	printf("ready\n");
	fflush(stdout);
	while (running > 0 || late_requested) {
		if (late_requested) {
			late_requested = 0;
			spawn(late_child_work);
			running++;
			continue;
		}
		if (wait(NULL) > 0)
			running--;
	}
	return 0;
}

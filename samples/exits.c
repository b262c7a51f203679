/*
 * exits.c - short-lived processes whose threads exit together: for
 * SECONDS, forks a child that starts NTHREAD threads spinning in
 * thread_spin(), runs a millisecond in child_run() and calls exit(), and
 * waits for it before forking the next.  exit() ends every thread at
 * once, each in the kernel's do_exit() beside the others, on both CPUs:
 * the recorder meets samples of a process that reach it after the
 * process's exit event.
 *
 *   usage: exits SECONDS [NTHREAD]
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

__attribute__((noinline)) void *thread_spin(void *arg)
{
	volatile unsigned long x = 0;

	for (;;)
		x++;
	return arg;
}

__attribute__((noinline)) void child_run(int nthread)
{
	pthread_t t;
	double until;

	for (int i = 0; i < nthread; i++)
		if (pthread_create(&t, NULL, thread_spin, NULL) != 0)
			break;
	until = now() + 0.001;
	while (now() < until)
		;
	exit(0);
}

int main(int argc, char **argv)
{
	double until = now() + (argc > 1 ? atof(argv[1]) : 5.0);
	int nthread = argc > 2 ? atoi(argv[2]) : 3, forks = 0;

	while (now() < until) {
		pid_t pid = fork();

		if (pid == 0)
			child_run(nthread);
		if (pid < 0) {
			perror("fork");
			return 1;
		}
		waitpid(pid, NULL, 0);
		forks++;
	}
	printf("%d processes\n", forks);
	return 0;
}

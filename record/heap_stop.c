/*
 * heap_stop.c - stopping every thread of a process for `luaprof heap`
 * (heap.c), and letting it go again: PTRACE_SEIZE and PTRACE_INTERRUPT
 * each task of /proc/PID/task, wait for each stop, and detach at the
 * end.  A seized thread stays the process's own: no signal is sent to
 * it, and one that arrives while it is held is handed back at the
 * detach.  Threads born while the others stop are seized on a second
 * pass of the task list.
 */
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/wait.h>

#include "lib/grow.h"
#include "record/heap_stop.h"

#define SEIZE_PASSES 8

static int held(const struct heap_stop *hs, pid_t tid)
{
	for (size_t i = 0; i < hs->n; i++)
		if (hs->t[i].tid == tid)
			return 1;
	return 0;
}

/* Waits for tid's stop after an interrupt: a signal that stopped it
 * instead is kept, to be delivered at the detach. */
static int wait_stop(struct heap_task *t)
{
	int status;

	for (;;) {
		if (waitpid(t->tid, &status, __WALL) < 0)
			return errno == EINTR ? 0 : -errno;
		if (WIFEXITED(status) || WIFSIGNALED(status))
			return -ESRCH;
		if (!WIFSTOPPED(status))
			continue;
		if (status >> 16 != PTRACE_EVENT_STOP && WSTOPSIG(status) != SIGTRAP)
			t->sig = WSTOPSIG(status);
		return 0;
	}
}

static int seize_one(struct heap_stop *hs, pid_t tid)
{
	struct heap_task *t;
	int err;

	if (ptrace(PTRACE_SEIZE, tid, NULL, NULL) < 0)
		return errno == ESRCH ? 0 : -errno; /* gone meanwhile */
	if (GROW(hs->t, hs->cap, hs->n + 1)) {
		ptrace(PTRACE_DETACH, tid, NULL, NULL);
		return -ENOMEM;
	}
	t = &hs->t[hs->n++];
	*t = (struct heap_task){ .tid = tid };
	if (ptrace(PTRACE_INTERRUPT, tid, NULL, NULL) < 0)
		return errno == ESRCH ? 0 : -errno;
	err = wait_stop(t);
	return err == -ESRCH ? 0 : err;
}

/* One pass over the task list: how many were new in *added. */
static int seize_pass(struct heap_stop *hs, pid_t pid, unsigned *added)
{
	char path[64];
	struct dirent *d;
	DIR *dir;
	int err = 0;

	*added = 0;
	snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
	dir = opendir(path);
	if (!dir)
		return -errno;
	while (!err && (d = readdir(dir))) {
		pid_t tid = (pid_t)atoi(d->d_name);

		if (tid <= 0 || held(hs, tid))
			continue;
		err = seize_one(hs, tid);
		*added += !err;
	}
	closedir(dir);
	return err;
}

int heap_stop_all(struct heap_stop *hs, pid_t pid)
{
	unsigned added = 1;
	int err = 0;

	hs->pid = pid;
	for (int pass = 0; added && pass < SEIZE_PASSES && !err; pass++)
		err = seize_pass(hs, pid, &added);
	if (!err && !hs->n)
		err = -ESRCH;
	return err;
}

int heap_stop_resume(struct heap_stop *hs)
{
	for (size_t i = 0; i < hs->n; i++) {
		ptrace(PTRACE_CONT, hs->t[i].tid, NULL, (void *)(long)hs->t[i].sig);
		hs->t[i].sig = 0;
	}
	return 0;
}

int heap_stop_again(struct heap_stop *hs)
{
	unsigned added = 1;
	int err = 0;

	for (size_t i = 0; i < hs->n; i++) {
		if (ptrace(PTRACE_INTERRUPT, hs->t[i].tid, NULL, NULL) < 0)
			continue;
		wait_stop(&hs->t[i]);
	}
	for (int pass = 0; added && pass < SEIZE_PASSES && !err; pass++)
		err = seize_pass(hs, hs->pid, &added);
	return err;
}

void heap_stop_release(struct heap_stop *hs)
{
	for (size_t i = 0; i < hs->n; i++)
		ptrace(PTRACE_DETACH, hs->t[i].tid, NULL, (void *)(long)hs->t[i].sig);
	free(hs->t);
	memset(hs, 0, sizeof(*hs));
}

/*
 * heap_stop.h - every thread of a process held still with ptrace while
 * `luaprof heap` copies its memory (heap_stop.c).
 */
#ifndef LUAPROF_RECORD_HEAP_STOP_H
#define LUAPROF_RECORD_HEAP_STOP_H

#include <stddef.h>
#include <sys/types.h>

struct heap_task {
	pid_t tid;
	int sig; /* a signal that arrived while held, delivered when let go */
};

struct heap_stop {
	pid_t pid;
	struct heap_task *t;
	size_t n, cap;
};

/* Seizes and stops every thread of pid: 0 or -errno (what was seized
 * stays held: heap_stop_release() it). */
int heap_stop_all(struct heap_stop *hs, pid_t pid);
/* Lets the held threads run (still seized), and stops them again, with
 * any thread born meanwhile. */
int heap_stop_resume(struct heap_stop *hs);
int heap_stop_again(struct heap_stop *hs);
/* Detaches every thread: they run on as before. */
void heap_stop_release(struct heap_stop *hs);

#endif

/*
 * launch.h - `record -- CMD ARGS`: the command forked, held before its
 * exec until the recorder is ready (launch.c).
 */
#ifndef LUAPROF_RECORD_LAUNCH_H
#define LUAPROF_RECORD_LAUNCH_H

#include <sys/types.h>

struct launched {
	pid_t pid;
	int go_fd;  /* write a byte: the child may exec */
	int err_fd; /* EOF: exec succeeded; 4 bytes: errno of a failed exec */
};

int launch_prepare(char **argv, struct launched *l);
/* Lets the child exec; returns 0 or the child's exec errno, negated. */
int launch_start(struct launched *l);

#endif

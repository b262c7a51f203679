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
	int held;   /* traced: stops at its exec until launch_release() */
	int reaped; /* it died before its first instruction, waited for */
	int cont;   /* stopped by the sampler (SIGSTOP): continue it on release */
};

int launch_prepare(char **argv, struct launched *l);
/* Lets the child exec; returns 0 or the child's exec errno, negated.  If
 * l->held is still set on return, the child is stopped at its exec, not
 * one instruction of the new image run yet. */
int launch_start(struct launched *l);
/* Runs a held child on to its program's entry point, its libraries
 * mapped: 0, held there; else -errno, and no longer held. */
int launch_run_to_entry(struct launched *l);
/* Takes hold of pid, a descendant that the sampler stopped at its exec
 * (a SIGSTOP sent as it exec'd, bpf/sampler.bpf.c): traced as a launched
 * child held at its exec is, so that launch_run_to_entry() and
 * launch_release() apply.  0, or -errno with the process continued. */
int launch_seize_stopped(struct launched *l, pid_t pid);
/* Lets a held child run, untraced from then on. */
void launch_release(struct launched *l);

#endif

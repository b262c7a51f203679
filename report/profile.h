/*
 * profile.h - what a report prints from: the distinct root-to-leaf stacks
 * of a trace with their sample counts, plus the facts its header states.
 * report.c fills it while streaming; the out_*.c formatters only read it.
 */
#ifndef LUAPROF_REPORT_PROFILE_H
#define LUAPROF_REPORT_PROFILE_H

#include <stdint.h>
#include <stdio.h>

#include "report/intern.h"
#include "report/procs.h"

struct profile {
	struct strtab names;  /* frame names */
	struct seqtab stacks; /* distinct stacks: name ids, root first */
	uint64_t *counts;     /* samples per stack id */
	size_t counts_cap;
	uint64_t shown;       /* samples in `stacks`, after filters */

	/* For headers. */
	const char *trace;
	uint64_t samples;         /* samples read, before filters */
	uint64_t lost;            /* samples the recorder lost */
	uint64_t cut;             /* shown samples whose native stack was cut */
	uint64_t first_ns, last_ns; /* first and last sample time */
	const struct procs *procs;
	int complete;             /* a footer was read */
};

/* The "# ..." block that opens top and callgraph output. */
void profile_header(FILE *out, const struct profile *p, const char *title);

/* Each returns 0 or -ENOMEM; write errors are the caller's to check. */
int out_folded(FILE *out, const struct profile *p);
int out_top(FILE *out, const struct profile *p, unsigned rows);
int out_callgraph(FILE *out, const struct profile *p, double limit);

#endif

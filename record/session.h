/*
 * session.h - the options a recording runs with, as record.c parses them,
 * and the one call that runs the recording (session.c).
 */
#ifndef LUAPROF_RECORD_SESSION_H
#define LUAPROF_RECORD_SESSION_H

#include <sys/types.h>

#include "format/trace.h"

struct record_opts {
	pid_t *pids; /* -p */
	int npids;
	char **command; /* -- CMD ARGS, NULL-terminated */
	unsigned int freq_hz;
	double duration_s; /* 0: until stopped or the targets exit */
	const char *output;
	enum lp_codec codec;
	int follow_children;
	int task_events; /* launch mode: tick where its tasks run (perf.c) */
	int verbose;
	int quiet;
	const char *self_cmdline; /* luaprof's own command line, for meta */
	const char *luajit_offsets; /* --luajit-offsets FILE, or NULL */
	int no_embed; /* --no-embed: no symbol tables in the trace */
	unsigned kinds; /* -e: the kinds of event taken, EVENTS_BIT()s */
	unsigned long long stall_ns; /* --stall-threshold, in ns */
	unsigned long long alloc_every; /* --alloc-every, in bytes */
};

/* Runs a whole recording; returns the process exit code (0 or 1). */
int record_session_run(const struct record_opts *opts);

#endif

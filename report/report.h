/*
 * report.h - the commands that read traces: `luaprof report` prints
 * where the time went (top, folded, callgraph, flame graph, pprof,
 * speedscope), `luaprof diff` how two profiles differ, `luaprof info`
 * what a trace holds and how healthy it is.  luaprof.c dispatches to
 * them; each returns the process exit code: 0 ok, 1 failure, 2 misuse.
 */
#ifndef LUAPROF_REPORT_REPORT_H
#define LUAPROF_REPORT_REPORT_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "report/procs.h"
#include "report/profile.h"

int cmd_report(int argc, char **argv); /* argv[0] = "report" */
int cmd_diff(int argc, char **argv);   /* argv[0] = "diff" */
int cmd_info(int argc, char **argv);   /* argv[0] = "info" */

/* How traces are read into a profile: filters and what to keep; the
 * same for `report` and `diff`. */
struct load_opts {
	const char *who;          /* prefixes messages: "luaprof report" */
	uint32_t *pids, *tids;    /* sorted; none: every process, thread */
	size_t npids, ntids, cappids, captids;
	int64_t from_ns, to_ns;   /* the window, from each trace's first
				   * sample; -1: open on that side */
	int comm;                 /* the process name as each stack's root */
	int lines;                /* frames split by the line they run */
	int raw_names;            /* native names as the symbols have them,
				   * not demangled */
	int infos;                /* describe frames (frameinfo.h) */
	int keep_samples;         /* fill p->samples_v */
	int vmstate, annotate;    /* also count --vmstate, --annotate (one
				   * trace: see report_pass_*()) */
	int stalls;               /* keep --stalls' events, of every kind */
	const char *symfs;
	uint32_t kind;            /* the event kind shown (format/kinds.h) */
};

struct report_pass;

/* Reads traces[0..n) into p, merged, and their processes into procs,
 * warning on standard error about their health.  0, or 1 after a
 * message (an unreadable trace, no memory).  keep (or NULL): the last
 * trace's pass, for what lo->vmstate, lo->annotate and lo->stalls
 * counted, to be freed with report_pass_free(). */
int report_load(const struct load_opts *lo, char *const *traces, size_t n,
		struct profile *p, struct procs *procs, struct report_pass **keep);
/* Whether traces[0..n) hold heap snapshots only (`luaprof heap`): heap
 * events, and no sample nor event of another kind, so that a report
 * without --kind shows them.  Stops at the first record that says no;
 * a trace that does not open says no (report_load() says why). */
int report_only_heap(char *const *traces, size_t n);
struct vmstate *report_pass_vmstate(const struct report_pass *ps);
struct annotate *report_pass_annotate(const struct report_pass *ps);
struct stalls *report_pass_stalls(const struct report_pass *ps);
void report_pass_free(struct report_pass *ps);

/* -o FILE, opened for writing: private (0600, as a profile says as much
 * about a program as its trace), never through a symlink
 * (format/private.c).  NULL after saying why, as WHO. */
FILE *report_open_output(const char *path, const char *who);
/* Flushes and closes out (unless stdout) after a writer returned err,
 * saying what went wrong once; the exit code, 0 or 1. */
int report_close_output(FILE *out, const char *path, const char *who, int err);

/* Says "WHO: MESSAGE" and the usage line on standard error; returns 2,
 * the exit code of misuse. */
__attribute__((format(printf, 3, 4)))
int report_misuse(const char *who, void (*usage)(FILE *), const char *fmt, ...);

/* The options that fill struct load_opts, the same in `report` and
 * `diff`: rows for getopt_long's table, and their handler. */
enum { LOAD_OPT_PID = 400, LOAD_OPT_TID, LOAD_OPT_FROM, LOAD_OPT_TO, LOAD_OPT_LINES,
       LOAD_OPT_NO_DEMANGLE, LOAD_OPT_KIND, LOAD_OPT_SYMFS };
#define LOAD_OPTIONS                                                   \
	{ "pid", required_argument, NULL, LOAD_OPT_PID },              \
	{ "tid", required_argument, NULL, LOAD_OPT_TID },              \
	{ "from", required_argument, NULL, LOAD_OPT_FROM },            \
	{ "to", required_argument, NULL, LOAD_OPT_TO },                \
	{ "lines", no_argument, NULL, LOAD_OPT_LINES },                \
	{ "no-demangle", no_argument, NULL, LOAD_OPT_NO_DEMANGLE },    \
	{ "kind", required_argument, NULL, LOAD_OPT_KIND },            \
	{ "symfs", required_argument, NULL, LOAD_OPT_SYMFS }

/* Applies option c (a LOAD_OPT_*) with its argument: 0, -ENOMEM, or
 * -EINVAL with *why saying what is wrong with arg ("bad id list"). */
int report_load_opt(struct load_opts *lo, int c, const char *arg, const char **why);
/* -n/--rows N, the same in `report` and `diff`: 0 (all) up to a billion;
 * 0 or -EINVAL. */
int report_parse_rows(const char *arg, unsigned *rows);
/* After every option: -EINVAL with *why when they contradict. */
int report_load_check(const struct load_opts *lo, const char **why);

#endif

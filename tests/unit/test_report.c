/*
 * test_report.c - `luaprof report` end to end on traces written with the
 * real writer: the three output formats, their counting rules (self,
 * total once per sample, callgraph shares and pruning), filters, health
 * warnings and the command-line contract (exit codes, --help).  Frames
 * are named through KSYMS here so that stack shapes read plainly;
 * test_report_sym.c covers user-space symbolization.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/unit/report_test.h"

enum { MAIN, FIB, WORK, A, B, C, IDLE, NFUNCS };
static const char *const fnames[NFUNCS] = {
	"main", "fib", "work", "a", "b", "c", "idle",
};

/* A trace with stacks main>fib>fib>fib (3 samples, pid 100 tid 100),
 * main>work (1 sample, pid 100 tid 101) and idle (2, pid 200). */
static int write_basic(const char *path, int footer)
{
	static const int s1[] = { MAIN, FIB, FIB, FIB };
	static const int s2[] = { MAIN, WORK };
	static const int s3[] = { IDLE };
	struct trace_writer *w = rt_open(path);
	uint64_t t = 1000000;
	int err;

	if (!w)
		return -1;
	err = rt_meta(w, t, 1700000000ull * 1000000000ull) ?:
	      rt_process(w, 100, 1, LP_PROC_EXISTING, "lua", "/usr/bin/lua", t) ?:
	      rt_process(w, 200, 1, LP_PROC_EXISTING, "nginx", "/usr/sbin/nginx", t) ?:
	      rt_kstack(w, 1, s1, 4) ?: rt_kstack(w, 2, s2, 2) ?:
	      rt_kstack(w, 3, s3, 1) ?:
	      rt_samples(w, &t, 100, 100, 1, 0, 3) ?:
	      rt_samples(w, &t, 100, 101, 2, 0, 1) ?:
	      rt_samples(w, &t, 200, 200, 3, 0, 2) ?:
	      rt_kfuncs(w, fnames, NFUNCS); /* at the end, as record writes it */
	if (!footer) {
		/* Copy what a killed recorder leaves: flushed chunks only. */
		char cmd[600];

		err = err ?: trace_writer_flush(w);
		snprintf(cmd, sizeof(cmd), "cp '%s' '%s.cut'", path, path);
		err = err ?: system(cmd);
	}
	return trace_writer_close(w, NULL) ?: err;
}

/* The count of the first line of `section` whose function is `name`. */
static long top_row(const char *out, const char *section, const char *name)
{
	const char *p = strstr(out, section), *end;
	char want[128];

	if (!p)
		return -1;
	end = strstr(p, "\n\n"); /* tables are separated by a blank line */
	snprintf(want, sizeof(want), "  %s\n", name);
	p = strstr(p, want);
	if (!p || (end && p > end))
		return -1;
	while (p > out && p[-1] != '\n')
		p--;
	return strtol(p, NULL, 10);
}

TEST(report_folded_basic)
{
	const char *path = rt_path("basic.lp");
	char *out = NULL, *err = NULL;

	CHECK(write_basic(path, 1) == 0);
	CHECK(rt_run(cmd_report, &out, &err, "report", "--format", "folded",
		     path, NULL) == 0);
	CHECK(!strcmp(out, "idle_[k] 2\n"
			   "main_[k];fib_[k];fib_[k];fib_[k] 3\n"
			   "main_[k];work_[k] 1\n"));
	CHECK(!strcmp(err, ""));
	free(out);
	free(err);
}

TEST(report_folded_sorted_and_deterministic)
{
	const char *path = rt_path("many.lp");
	struct trace_writer *w = rt_open(path);
	char *out1 = NULL, *out2 = NULL;
	uint64_t t = 0;
	const char *prev;

	CHECK(w);
	/* Stacks defined in an order unrelated to their names. */
	for (int i = 0; i < 40; i++) {
		int s[3] = { (i * 7) % NFUNCS, (i * 3) % NFUNCS, i % NFUNCS };

		CHECK(rt_kstack(w, i + 1, s, 1 + i % 3) == 0);
		CHECK(rt_samples(w, &t, 100, 100, i + 1, 0, 1 + i % 5) == 0);
	}
	CHECK(rt_kfuncs(w, fnames, NFUNCS) == 0);
	CHECK(trace_writer_close(w, NULL) == 0);
	CHECK(rt_run(cmd_report, &out1, NULL, "report", "--format=folded",
		     path, NULL) == 0);
	CHECK(rt_run(cmd_report, &out2, NULL, "report", "--format=folded",
		     path, NULL) == 0);
	CHECK(out1 && out2 && !strcmp(out1, out2));
	/* Sorted, distinct lines whose counts add up to every sample. */
	prev = NULL;
	long total = 0;
	for (char *line = out1, *nl; *line; line = nl + 1) {
		nl = strchr(line, '\n');
		CHECK(nl);
		*nl = '\0';
		CHECK(!prev || strcmp(prev, line) < 0);
		total += strtol(strrchr(line, ' ') + 1, NULL, 10);
		prev = line;
	}
	CHECK(total == 40 / 5 * (1 + 2 + 3 + 4 + 5));
	free(out1);
	free(out2);
}

TEST(report_top_self_total_recursion)
{
	const char *path = rt_path("top.lp");
	char *out = NULL;

	CHECK(write_basic(path, 1) == 0);
	CHECK(rt_run(cmd_report, &out, NULL, "report", path, NULL) == 0);
	CHECK(strstr(out, "# luaprof report: top\n"));
	CHECK(strstr(out, "# samples: 6, lost: 0\n"));
	CHECK(strstr(out, "# processes: 2 (100 lua, 200 nginx)\n"));
	CHECK(top_row(out, "# by self", "fib_[k]") == 3);
	CHECK(top_row(out, "# by self", "idle_[k]") == 2);
	CHECK(top_row(out, "# by self", "work_[k]") == 1);
	CHECK(top_row(out, "# by self", "main_[k]") == -1); /* never a leaf */
	/* fib is three frames deep in each of 3 samples: counted 3, not 9. */
	CHECK(top_row(out, "# by total", "fib_[k]") == 3);
	CHECK(top_row(out, "# by total", "main_[k]") == 4);
	CHECK(strstr(out, "         3   50.00%  fib_[k]\n"));
	CHECK(strstr(out, "         4   66.67%  main_[k]\n"));
	/* Rows ordered by count: main before fib in "by total". */
	CHECK(strstr(strstr(out, "# by total"), "main_[k]") <
	      strstr(strstr(out, "# by total"), "fib_[k]"));
	free(out);

	CHECK(rt_run(cmd_report, &out, NULL, "report", "-n", "1", path,
		     NULL) == 0);
	CHECK(top_row(out, "# by self", "fib_[k]") == 3);
	CHECK(top_row(out, "# by self", "idle_[k]") == -1);
	CHECK(strstr(out, "# ... 2 more\n"));
	free(out);
}

TEST(report_callgraph_percent_limit)
{
	static const int sa[] = { MAIN, A }, sb[] = { MAIN, B }, sc[] = { MAIN, C };
	static const int sm[] = { MAIN };
	const char *path = rt_path("cg.lp");
	struct trace_writer *w = rt_open(path);
	char *out = NULL;
	uint64_t t = 0;

	CHECK(w);
	CHECK(rt_kstack(w, 1, sa, 2) == 0 && rt_kstack(w, 2, sb, 2) == 0 &&
	      rt_kstack(w, 3, sc, 2) == 0 && rt_kstack(w, 4, sm, 1) == 0);
	CHECK(rt_samples(w, &t, 1, 1, 1, 0, 50) == 0);
	CHECK(rt_samples(w, &t, 1, 1, 2, 0, 39) == 0);
	CHECK(rt_samples(w, &t, 1, 1, 3, 0, 1) == 0);
	CHECK(rt_samples(w, &t, 1, 1, 4, 0, 10) == 0);
	CHECK(rt_kfuncs(w, fnames, NFUNCS) == 0);
	CHECK(trace_writer_close(w, NULL) == 0);

	CHECK(rt_run(cmd_report, &out, NULL, "report", "--format", "callgraph",
		     path, NULL) == 0);
	CHECK(strstr(out, "# luaprof report: callgraph\n# trace: "));
	CHECK(strstr(out, "# samples: 100, lost: 0\n"));
	CHECK(strstr(out, "\n 100.00%   10.00%  main_[k]\n"
			  "  50.00%   50.00%    a_[k]\n"
			  "  39.00%   39.00%    b_[k]\n"
			  "   1.00%    1.00%    c_[k]\n"));
	CHECK(!strstr(out, "hidden"));
	free(out);

	CHECK(rt_run(cmd_report, &out, NULL, "report", "--format", "callgraph",
		     "--percent-limit", "2", path, NULL) == 0);
	CHECK(!strstr(out, "c_[k]"));
	CHECK(strstr(out, "  39.00%   39.00%    b_[k]\n"));
	CHECK(strstr(out, "# 1 nodes below 2% hidden (--percent-limit)\n"));
	free(out);
}

TEST(report_filters)
{
	const char *path = rt_path("filter.lp");
	char *out = NULL, *err = NULL;

	CHECK(write_basic(path, 1) == 0);
	CHECK(rt_run(cmd_report, &out, NULL, "report", "--format", "folded",
		     "--pid", "200", path, NULL) == 0);
	CHECK(!strcmp(out, "idle_[k] 2\n"));
	free(out);
	CHECK(rt_run(cmd_report, &out, NULL, "report", "--format", "folded",
		     "--tid", "101", path, NULL) == 0);
	CHECK(!strcmp(out, "main_[k];work_[k] 1\n"));
	free(out);
	CHECK(rt_run(cmd_report, &out, NULL, "report", "--format", "folded",
		     "--pid", "100,200", "--tid", "100", "--tid", "200", path,
		     NULL) == 0);
	CHECK(!strcmp(out, "idle_[k] 2\nmain_[k];fib_[k];fib_[k];fib_[k] 3\n"));
	free(out);
	CHECK(rt_run(cmd_report, &out, NULL, "report", "--pid", "100", path,
		     NULL) == 0);
	CHECK(strstr(out, "# samples: 4 shown of 6 read, lost: 0\n"));
	free(out);
	CHECK(rt_run(cmd_report, &out, &err, "report", "--pid", "999", path,
		     NULL) == 0);
	CHECK(strstr(err, "no samples to report (none matched --pid/--tid/--from/--to)"));
	free(out);
	free(err);
}

TEST(report_comm_root)
{
	const char *path = rt_path("comm.lp");
	char *out = NULL;

	CHECK(write_basic(path, 1) == 0);
	CHECK(rt_run(cmd_report, &out, NULL, "report", "--format", "folded",
		     "--comm", path, NULL) == 0);
	CHECK(!strcmp(out, "lua;main_[k];fib_[k];fib_[k];fib_[k] 3\n"
			   "lua;main_[k];work_[k] 1\n"
			   "nginx;idle_[k] 2\n"));
	free(out);
}

TEST(report_cut_short_warns)
{
	const char *path = rt_path("cut.lp");
	char cut[300], *out = NULL, *err = NULL;

	CHECK(write_basic(path, 0) == 0);
	snprintf(cut, sizeof(cut), "%s.cut", path);
	CHECK(rt_run(cmd_report, &out, &err, "report", "--format", "folded",
		     cut, NULL) == 0);
	CHECK(!strcmp(out, "idle_[k] 2\n"
			   "main_[k];fib_[k];fib_[k];fib_[k] 3\n"
			   "main_[k];work_[k] 1\n"));
	CHECK(rt_count(err, "trace was cut short: 6 samples recovered from 1 chunks\n") == 1);
	free(out);
	free(err);
	CHECK(rt_run(cmd_report, &out, NULL, "report", cut, NULL) == 0);
	CHECK(strstr(out, "(cut short: no footer)"));
	free(out);
}

TEST(report_lost_and_missing_stacks)
{
	static const int s[] = { MAIN };
	const char *path = rt_path("lost.lp");
	struct trace_writer *w = rt_open(path);
	char *out = NULL, *err = NULL;
	uint64_t t = 0;

	CHECK(w);
	CHECK(rt_kstack(w, 1, s, 1) == 0);
	CHECK(rt_samples(w, &t, 1, 1, 1, 0, 6) == 0);
	CHECK(rt_samples(w, &t, 1, 1, 0, 0, 1) == 0);   /* no stack at all */
	CHECK(rt_samples(w, &t, 1, 1, 0, 77, 2) == 0);  /* undefined user */
	CHECK(rt_samples(w, &t, 1, 1, 78, 0, 1) == 0);  /* undefined kernel */
	CHECK(rt_lost(w, 3, LP_LOST_RINGBUF) == 0);
	CHECK(rt_lost(w, 7, LP_LOST_WRITE) == 0);
	CHECK(rt_kfuncs(w, fnames, NFUNCS) == 0);
	CHECK(trace_writer_close(w, NULL) == 0);
	CHECK(rt_run(cmd_report, &out, &err, "report", "--format", "folded",
		     path, NULL) == 0);
	CHECK(!strcmp(out, "[missing stack] 3\n[no stack] 1\nmain_[k] 6\n"));
	CHECK(rt_count(err, "10 samples were lost while recording (50.00% of 20)") == 1);
	CHECK(rt_count(err, "3 samples name a stack that was never defined") == 1);
	CHECK(!strstr(err, "cut short"));
	free(out);
	free(err);
}

TEST(report_output_file)
{
	const char *path = rt_path("ofile.lp"), *o = rt_path("ofile.folded");
	char *out = NULL, *file = NULL;

	CHECK(write_basic(path, 1) == 0);
	CHECK(rt_run(cmd_report, &out, NULL, "report", "--format", "folded",
		     "-o", o, path, NULL) == 0);
	CHECK(!strcmp(out, ""));
	file = rt_slurp(o);
	CHECK(file && rt_count(file, "\n") == 3 &&
	      strstr(file, "main_[k];work_[k] 1\n"));
	free(out);
	free(file);
	CHECK(rt_run(cmd_report, NULL, &out, "report", "-o",
		     "/nonexistent-dir/x", path, NULL) == 1);
	CHECK(strstr(out, "/nonexistent-dir/x"));
	free(out);
}

TEST(report_cli_contract)
{
	const char *junk = rt_path("junk.lp");
	char *out = NULL, *err = NULL;
	FILE *f;

	CHECK(rt_run(cmd_report, &out, &err, "report", "--help", NULL) == 0);
	CHECK(!strncmp(out, "usage: luaprof report ", 22));
	CHECK(strstr(out, "--percent-limit") && strstr(out, "--comm") &&
	      strstr(out, "--tid") && strstr(out, "-n, --rows"));
	CHECK(!strcmp(err, ""));
	free(out);
	free(err);

	CHECK(rt_run(cmd_report, &out, &err, "report", "--bogus", "x.lp",
		     NULL) == 2);
	CHECK(!strcmp(out, "") && strstr(err, "'--bogus'") &&
	      strstr(err, "usage: luaprof report "));
	free(out);
	free(err);
	CHECK(rt_run(cmd_report, NULL, &err, "report", "--format", "svg",
		     "x.lp", NULL) == 2);
	free(err);
	CHECK(rt_run(cmd_report, NULL, &err, "report", "--pid", "12,x",
		     "x.lp", NULL) == 2);
	free(err);
	CHECK(rt_run(cmd_report, NULL, &err, "report", "-n", NULL) == 2);
	CHECK(strstr(err, "needs an argument"));
	free(err);
	CHECK(rt_run(cmd_report, NULL, &err, "report", NULL) == 2);
	free(err);

	f = fopen(junk, "w");
	CHECK(f);
	fputs("this is not a trace, just some text\n", f);
	fclose(f);
	CHECK(rt_run(cmd_report, &out, &err, "report", junk, NULL) == 1);
	CHECK(!strcmp(out, ""));
	CHECK(strstr(err, "luaprof report: ") && strstr(err, "junk.lp: not a luaprof trace\n"));
	free(out);
	free(err);
	CHECK(rt_run(cmd_report, NULL, &err, "report", rt_path("absent.lp"),
		     NULL) == 1);
	free(err);
}

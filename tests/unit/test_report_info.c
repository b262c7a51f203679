/*
 * test_report_info.c - `luaprof info` on traces written with the real
 * writer: every fact it promises (format, codecs, meta, processes and how
 * they joined, time span, samples per pid, losses by reason, stacks,
 * mappings, chunks, sizes, completeness) and its exit codes.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/unit/report_test.h"

#define START_NS 5000000000ull
#define START_REAL (1700000000ull * 1000000000ull) /* 2023-11-14 22:13:20 */

static int write_info_trace(const char *path, const char *cut)
{
	uint64_t k[] = { 0xffffffff81000010ull }, u[] = { 0x401000, 0x402000 };
	struct lp_ksym ks[] = { { 0xffffffff81000000ull, "do_syscall_64" } };
	struct trace_writer *w = rt_open(path);
	uint64_t t = START_NS + 100000000; /* first sample at +0.1 s */
	int err;

	if (!w)
		return -1;
	err = rt_meta(w, START_NS, START_REAL) ?:
	      rt_process(w, 100, 1, LP_PROC_EXISTING, "nginx", "/usr/sbin/nginx", START_NS) ?:
	      rt_process(w, 101, 100, LP_PROC_FORKED, "nginx", "/usr/sbin/nginx", t) ?:
	      rt_process(w, 102, 100, LP_PROC_FORKED | LP_PROC_EXEC, "lua", "/usr/bin/lua", t) ?:
	      rt_map1(w, 100, LP_MAPS_REPLACE, 0x400000, 0x500000, 0, "/usr/sbin/nginx") ?:
	      rt_map1(w, 100, 0, 0x600000, 0x700000, 0, "/usr/lib/libluajit.so") ?:
	      rt_stack(w, 1, LP_STACK_KERNEL, k, 1) ?:
	      rt_stack(w, 2, LP_STACK_USER, u, 2) ?:
	      rt_samples(w, &t, 100, 100, 1, 2, 7) ?:
	      rt_samples(w, &t, 101, 101, 0, 2, 3) ?:
	      rt_lost(w, 4, LP_LOST_RINGBUF) ?:
	      rt_lost(w, 1, LP_LOST_WRITE) ?:
	      rt_exit(w, 101, START_NS + 2500000000ull) ?:
	      rt_ksyms(w, ks, 1);
	if (cut) {
		char cmd[600];

		err = err ?: trace_writer_flush(w);
		snprintf(cmd, sizeof(cmd), "cp '%s' '%s'", path, cut);
		err = err ?: system(cmd);
	}
	return trace_writer_close(w, NULL) ?: err;
}

TEST(info_reports_everything)
{
	const char *path = rt_path("info.lp");
	char *out = NULL, *err = NULL;

	CHECK(write_info_trace(path, NULL) == 0);
	CHECK(rt_run(cmd_info, &out, &err, "info", path, NULL) == 0);
	CHECK(!strcmp(err, ""));
	CHECK(strstr(out, "format: version 1, incompat features 0x3, compat features 0x1\n"));
	CHECK(strstr(out, "codecs: ") && strstr(out, "lz4 ("));
	CHECK(strstr(out, "  luaprof version:  0.1.0\n"));
	CHECK(strstr(out, "  command line:     luaprof record -F 99 -p 100\n"));
	CHECK(strstr(out, "  target:           pid 100\n"));
	CHECK(strstr(out, "  host:             testhost\n"));
	CHECK(strstr(out, "  kernel:           6.1.0-test\n"));
	CHECK(strstr(out, "  rate:             99 Hz\n"));
	CHECK(strstr(out, "  clock:            CLOCK_MONOTONIC\n"));
	CHECK(strstr(out, "  started:          2023-11-14 22:13:20 UTC\n"));
	CHECK(strstr(out, "processes: 3\n"));
	CHECK(strstr(out, "      100       1  nginx            existing                 -         7  /usr/sbin/nginx\n"));
	CHECK(strstr(out, "      101     100  nginx            forked            +2.500 s         3  /usr/sbin/nginx\n"));
	CHECK(strstr(out, "      102     100  lua              forked,exec              -         0  /usr/bin/lua\n"));
	CHECK(strstr(out, "time span: +0.100 .. +0.100 s from start (0.000 s)\n"));
	CHECK(strstr(out, "samples: 10 "));
	CHECK(strstr(out, "  pid 100: 7\n  pid 101: 3\n"));
	CHECK(strstr(out, "lost: 5 (33.33% of 15; ring buffer full 4, recorder could not keep 1, other 0)\n"));
	CHECK(strstr(out, "stacks defined: 2 (kernel 1, user 1)\n"));
	CHECK(strstr(out, "mapping records: 2 (2 mappings)\n"));
	CHECK(strstr(out, "kernel symbols: 1\n"));
	CHECK(strstr(out, "chunks: 1 good, 0 bad, 0 skipped"));
	CHECK(strstr(out, "file bytes: "));
	CHECK(strstr(out, "raw payload bytes: "));
	CHECK(strstr(out, "compression ratio: "));
	CHECK(strstr(out, "status: complete (footer: 10 samples, 5 lost, 1 chunks; read 10 samples in 1 chunks)\n"));
	free(out);
	free(err);
}

TEST(info_cut_short)
{
	const char *path = rt_path("info-full.lp"), *cut = rt_path("info-cut.lp");
	char *out = NULL;

	CHECK(write_info_trace(path, cut) == 0);
	CHECK(rt_run(cmd_info, &out, NULL, "info", cut, NULL) == 0);
	CHECK(strstr(out, "status: cut short (no footer): 10 samples recovered from 1 chunks\n"));
	free(out);
}

TEST(info_cli_contract)
{
	const char *junk = rt_path("info-junk.lp");
	char *out = NULL, *err = NULL, want[300];
	FILE *f;

	CHECK(rt_run(cmd_info, &out, &err, "info", "--help", NULL) == 0);
	CHECK(!strncmp(out, "usage: luaprof info TRACE\n", 26) && !strcmp(err, ""));
	free(out);
	free(err);
	CHECK(rt_run(cmd_info, &out, &err, "info", "-x", "a.lp", NULL) == 2);
	CHECK(!strcmp(out, "") && strstr(err, "usage: luaprof info TRACE\n"));
	free(out);
	free(err);
	CHECK(rt_run(cmd_info, NULL, &err, "info", NULL) == 2);
	free(err);

	f = fopen(junk, "w");
	CHECK(f);
	fputs("#!/bin/sh\necho not a trace\n", f);
	fclose(f);
	CHECK(rt_run(cmd_info, &out, &err, "info", junk, NULL) == 1);
	snprintf(want, sizeof(want), "luaprof info: %s: not a luaprof trace\n", junk);
	CHECK(!strcmp(out, "") && !strcmp(err, want));
	free(out);
	free(err);
}

/* A forked child the recorder found gone (no exe read) runs its parent's
 * image; one that exec'd, or whose parent is unknown, stays unknown. */
TEST(info_forked_child_runs_its_parents_exe)
{
	const char *path = rt_path("info-fork.lp");
	struct trace_writer *w = rt_open(path);
	char *out = NULL;
	int err;

	CHECK(w != NULL);
	err = rt_meta(w, START_NS, START_REAL) ?:
	      rt_process(w, 100, 1, LP_PROC_EXISTING, "exits", "/usr/bin/exits", START_NS) ?:
	      rt_process(w, 101, 100, LP_PROC_FORKED, "exits", "", START_NS) ?:
	      rt_process(w, 102, 100, LP_PROC_FORKED | LP_PROC_EXEC, "sh", "", START_NS) ?:
	      rt_process(w, 103, 0, LP_PROC_FORKED, "x", "", START_NS);
	CHECK(trace_writer_close(w, NULL) == 0 && err == 0);
	CHECK(rt_run(cmd_info, &out, NULL, "info", path, NULL) == 0);
	CHECK(strstr(out, "      101     100  exits            forked                   -         0  /usr/bin/exits\n"));
	CHECK(strstr(out, "      102     100  sh               forked,exec              -         0  ?\n"));
	CHECK(strstr(out, "      103       0  x                forked                   -         0  ?\n"));
	free(out);
}

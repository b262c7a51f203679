/*
 * test_report_cut.c - native stacks the recorder's walk cut short
 * (sample.ustop): report ends them with [truncated] at the root and counts
 * them in its header, info counts them by reason, and a stack whose walk
 * said nothing (frame pointers, older traces) or was whole gets no mark.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/unit/report_test.h"

/* n samples of pid 9 with user stack `ustack` and walk end `ustop`. */
static int cut_samples(struct trace_writer *w, uint64_t *t, uint64_t ustack,
		       uint32_t ustop, int n)
{
	struct lp_record r = { .type = LP_REC_SAMPLE };
	int err = 0;

	r.u.sample.pid = 9;
	r.u.sample.tid = 9;
	r.u.sample.ustack = ustack;
	r.u.sample.ustop = ustop;
	for (int i = 0; i < n && !err; i++) {
		r.u.sample.time_ns = (*t += 1000);
		err = trace_write(w, &r);
	}
	return err;
}

static int write_cut_trace(const char *path)
{
	/* Leaf first, in anonymous memory: frames read [anon]+0xOFF
	 * (--lines). */
	uint64_t whole[] = { 0x10010, 0x10021 }, cut[] = { 0x10030, 0x10041 };
	struct trace_writer *w = rt_open(path);
	uint64_t t = 0;
	int err;

	if (!w)
		return -1;
	err = rt_process(w, 9, 1, LP_PROC_EXISTING, "app", "/usr/bin/app", 0) ?:
	      rt_map1(w, 9, LP_MAPS_REPLACE, 0x10000, 0x20000, 0, "") ?:
	      rt_stack(w, 1, LP_STACK_USER, whole, 2) ?:
	      rt_stack(w, 2, LP_STACK_USER, cut, 2) ?:
	      cut_samples(w, &t, 1, LP_USTOP_R_COMPLETE, 5) ?:
	      cut_samples(w, &t, 1, LP_USTOP_R_UNKNOWN, 1) ?:
	      cut_samples(w, &t, 2, LP_USTOP_R_UNMAPPED, 2) ?:
	      cut_samples(w, &t, 2, LP_USTOP_R_NO_TABLE, 1) ?:
	      cut_samples(w, &t, 2, 77, 1); /* a reason from a later version */
	return trace_writer_close(w, NULL) ?: err;
}

TEST(report_cut_native_stack)
{
	const char *path = rt_path("cut.lp");
	char *out = NULL, *err = NULL;

	CHECK(write_cut_trace(path) == 0);
	CHECK(rt_run(cmd_report, &out, &err, "report", "--format", "folded", "--lines",
		     path, NULL) == 0);
	/* Whole and unsaid stacks as they are; cut ones rooted at the cut. */
	CHECK(!strcmp(out, "[anon]+0x20;[anon]+0x10 6\n"
			   "[truncated];[anon]+0x40;[anon]+0x30 4\n"));
	free(out);
	free(err);
	CHECK(rt_run(cmd_report, &out, &err, "report", path, NULL) == 0);
	CHECK(strstr(out, "# samples: 10, lost: 0, native stack cut: 4 (40.00%, [truncated])\n"));
	free(out);
	free(err);
}

TEST(info_counts_cut_native_stacks)
{
	const char *path = rt_path("cut-info.lp");
	char *out = NULL;

	CHECK(write_cut_trace(path) == 0);
	CHECK(rt_run(cmd_info, &out, NULL, "info", path, NULL) == 0);
	CHECK(strstr(out, "native stacks: 5 whole, 4 cut (40.00%): unmapped 2, "
			  "tables not loaded yet 1, other 1; not said 1\n"));
	free(out);
}

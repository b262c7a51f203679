/*
 * test_harden.c - a trace is untrusted input and a recording is private:
 * the defects the hardening issue found, each pinned by a test.  Traces
 * with no samples through every report mode; strings with control bytes
 * never reaching a terminal raw; counters that would wrap; missing,
 * repeated and reordered chunks counted, never silently; traces created
 * 0600 and never through a symbolic link.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tests/unit/report_test.h"

/* Every report mode and info on a trace that holds no sample at all. */
TEST(harden_every_mode_on_a_trace_without_samples)
{
	static const char *const modes[][3] = {
		{ "--format", "top", NULL }, { "--format", "folded", NULL },
		{ "--format", "callgraph", NULL }, { "--vmstate", NULL, NULL },
		{ "--annotate", NULL, NULL }, { "--by", "line", NULL },
	};
	const char *path = rt_path("nosamples.lp");
	struct trace_writer *w = rt_open(path);
	char *out = NULL, *err = NULL;

	CHECK(w && rt_meta(w, 1, 2) == 0 && trace_writer_close(w, NULL) == 0);
	for (size_t i = 0; i < sizeof(modes) / sizeof(modes[0]); i++) {
		CHECK(rt_run(cmd_report, &out, &err, "report", modes[i][0],
			     modes[i][1] ? modes[i][1] : path,
			     modes[i][1] ? path : NULL, NULL) == 0);
		CHECK(strstr(err, "no samples to report"));
		free(out);
		free(err);
		out = err = NULL;
	}
	CHECK(rt_run(cmd_info, &out, NULL, "info", path, NULL) == 0);
	CHECK(strstr(out, "samples: 0"));
	free(out);
}

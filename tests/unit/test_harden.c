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

/* A file of six bytes that a trace must never overwrite. */
static int fmt_victim(const char *path)
{
	FILE *f = fopen(path, "w");

	if (!f)
		return -1;
	fputs("victim", f);
	return fclose(f);
}

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

/* A trace holds command lines, memory maps and sources of production
 * processes: it is created 0600 whatever the umask, and never through a
 * symbolic link, dangling or not, nor over an existing file. */
TEST(harden_trace_is_private_and_never_follows_a_link)
{
	const char *path = rt_path("private.lp"), *victim = rt_path("victim");
	const char *link = rt_path("link.lp"), *dangling = rt_path("dangling.lp");
	const char *gone = rt_path("gone");
	struct trace_writer *w = NULL;
	struct stat st;
	mode_t old = umask(022);
	int err;

	unlink(path);
	err = trace_writer_open(&w, path, LP_CODEC_NONE);
	umask(old);
	CHECK(err == 0 && trace_writer_close(w, NULL) == 0);
	CHECK(stat(path, &st) == 0 && (st.st_mode & 07777) == 0600);
	unlink(path);
	old = umask(0277); /* even a umask that takes the owner's write bit */
	err = trace_writer_open(&w, path, LP_CODEC_NONE);
	umask(old);
	CHECK(err == 0 && trace_writer_close(w, NULL) == 0);
	CHECK(stat(path, &st) == 0 && (st.st_mode & 07777) == 0600);

	CHECK(fmt_victim(victim) == 0);
	CHECK(symlink(victim, link) == 0);
	CHECK(trace_writer_open(&w, link, LP_CODEC_NONE) == -EEXIST && !w);
	CHECK(stat(victim, &st) == 0 && st.st_size == 6); /* untouched */
	CHECK(symlink(gone, dangling) == 0);
	CHECK(trace_writer_open(&w, dangling, LP_CODEC_NONE) == -EEXIST && !w);
	CHECK(stat(gone, &st) < 0 && errno == ENOENT); /* nothing created */
	/* An existing trace is the caller's to move away (record keeps it as
	 * NAME.old): the writer never truncates one. */
	CHECK(trace_writer_open(&w, path, LP_CODEC_NONE) == -EEXIST && !w);
	CHECK(stat(path, &st) == 0 && st.st_size > 0);
}

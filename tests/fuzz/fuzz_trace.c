/*
 * fuzz_trace.c - the libFuzzer harness of everything that reads a trace:
 * the reader (format/), `luaprof info`, every mode and format of `luaprof
 * report` (text, flame graph, pprof, speedscope, a --from/--to window,
 * merged traces) and `luaprof diff`, run as a user runs them, on the
 * bytes libFuzzer makes up.
 *
 * An input is one selector byte, then the trace file: the selector picks
 * the command (below), so that one corpus covers all of them and a
 * mutation of the trace is tried in each.  The trace goes to a memfd that
 * the commands open by its /proc/self/fd path, so no disk is involved.
 * Their standard output and error go to /dev/null through the stdio
 * streams only: sanitizer reports still reach fd 2.
 *
 * Built by `make fuzz-build` with -fsanitize=fuzzer,address,undefined and
 * FUZZING_BUILD_MODE_UNSAFE_FOR_PRODUCTION, which makes the reader skip
 * its CRC checks so that mutations get past them (format/reader.c).
 * tests/fuzz/run.sh runs it; tests/fuzz/seeds.sh records its seeds.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "report/report.h"

static int memfd = -1;
static char path[64];

/* The commands, by selector byte (modulo their number).  "T" stands for
 * the trace's path: twice for a merged report and for diff, which then
 * compares the trace with itself (the code that matches and subtracts
 * two profiles runs all the same). */
static const char *const modes[][12] = {
	{ "info", "T", NULL },
	{ "report", "T", NULL },
	{ "report", "--format", "folded", "--comm", "T", NULL },
	{ "report", "--format", "callgraph", "--percent-limit", "0", "--lines", "T", NULL },
	{ "report", "--vmstate", "-n", "0", "T", NULL },
	{ "report", "--annotate", "-n", "0", "T", NULL },
	{ "report", "--by", "line", "-n", "0", "T", NULL },
	{ "report", "--lines", "-n", "0", "--tid", "1,2,3,100", "T", NULL },
	{ "report", "--format", "flamegraph", "--comm", "--lines", "T", NULL },
	{ "report", "--format", "flamegraph", "--inverted", "T", NULL },
	{ "report", "--format", "pprof", "--lines", "T", NULL },
	{ "report", "--format", "speedscope", "--comm", "T", NULL },
	{ "report", "--format", "folded", "--from", "0.001", "--to", "0.5", "T", NULL },
	{ "report", "-n", "0", "--from", "0", "--to", "2", "T", "T", NULL },
	{ "report", "--format", "speedscope", "T", "T", NULL },
	{ "diff", "-n", "0", "T", "T", NULL },
	{ "diff", "--format", "folded", "--lines", "T", "T", NULL },
	{ "diff", "--format", "flamegraph", "--per-second", "--from", "0.01", "T", "T", NULL },
	{ "report", "--kind", "off-cpu", "--format", "pprof", "T", NULL },
	{ "report", "--kind", "off-cpu", "--format", "speedscope", "--comm", "T", NULL },
	{ "report", "--kind", "off-cpu", "-n", "0", "T", "T", NULL },
	{ "diff", "--kind", "off-cpu", "--format", "flamegraph", "T", "T", NULL },
	{ "report", "--kind", "wall", "--format", "speedscope", "T", NULL },
	{ "report", "--kind", "wall", "--format", "folded", "--from", "0", "T", NULL },
	{ "report", "--kind", "lua-wait", "--format", "callgraph", "T", NULL },
	{ "report", "--stalls", "-n", "0", "T", "T", NULL },
	{ "report", "--kind", "stall", "--format", "pprof", "T", NULL },
	{ "report", "--kind", "alloc", "--format", "pprof", "T", NULL },
	{ "report", "--kind", "inuse", "--format", "flamegraph", "T", NULL },
};
#define NMODES (sizeof(modes) / sizeof(modes[0]))

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	FILE *null = fopen("/dev/null", "w");

	(void)argc;
	(void)argv;
	memfd = memfd_create("luaprof-fuzz", MFD_CLOEXEC);
	if (memfd < 0 || !null) {
		perror("fuzz_trace: setup");
		abort();
	}
	snprintf(path, sizeof(path), "/proc/self/fd/%d", memfd);
	/* The commands' own output; libFuzzer keeps its copy of stderr. */
	stdout = null;
	stderr = null;
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *const *m;
	char *argv[16];
	int argc = 0;

	if (size < 1)
		return 0;
	m = modes[data[0] % NMODES];
	if (ftruncate(memfd, 0) < 0 ||
	    pwrite(memfd, data + 1, size - 1, 0) != (ssize_t)(size - 1))
		abort();
	for (; m[argc]; argc++)
		argv[argc] = strcmp(m[argc], "T") ? (char *)m[argc] : path;
	argv[argc] = NULL;
	if (!strcmp(m[0], "info"))
		cmd_info(argc, argv);
	else if (!strcmp(m[0], "diff"))
		cmd_diff(argc, argv);
	else
		cmd_report(argc, argv);
	return 0;
}

/*
 * formats.h - the output formats of `luaprof report`, listed once.
 *
 * A format is a row of REPORT_FORMATS and a file, report/out_NAME.c,
 * that defines its writer: report.c parses --format, prints --help and
 * dispatches from this list alone, so adding a format touches nothing
 * else.  A row says what the writer needs beyond stack counts:
 *
 *   OUT_INFOS    frame kinds, files, lines, mappings (frameinfo.h)
 *   OUT_SAMPLES  every sample in stream order: times, threads, labels
 *   OUT_LINES    frames split by the line they run, as with --lines,
 *                each still described as its function (frameinfo.h's
 *                func): locations with lines, functions without
 *   OUT_BINARY   not text: refused on a terminal
 *
 * Help lines continue with "\n" and 22 spaces of indent, as --help
 * prints them under "  --format NAME".
 */
#ifndef LUAPROF_REPORT_FORMATS_H
#define LUAPROF_REPORT_FORMATS_H

#include <stdio.h>

#include "report/profile.h"

#define OUT_INFOS 0x1u
#define OUT_SAMPLES 0x2u
#define OUT_LINES 0x4u
#define OUT_BINARY 0x8u

#define REPORT_FORMATS(_)                                                         \
	_(top, out_top, 0,                                                        \
	  "the costliest functions, by self and by total (default)")              \
	_(folded, out_folded, 0,                                                  \
	  "one line per distinct stack, \"root;...;leaf COUNT\",\n"               \
	  "                      sorted; the input of flame graph tools")         \
	_(callgraph, out_callgraph, 0,                                            \
	  "a caller-to-callee tree with total and self shares")                   \
	_(flamegraph, out_flamegraph, OUT_INFOS,                                  \
	  "an interactive SVG flame graph (-o FILE.svg): click\n"                 \
	  "                      to zoom, Ctrl-F or Search to highlight, colours\n" \
	  "                      by kind (Lua, builtin, native, kernel, VM)")      \
	_(pprof, out_pprof, OUT_INFOS | OUT_SAMPLES | OUT_LINES | OUT_BINARY,     \
	  "gzipped profile.proto (-o FILE.pb.gz) for go tool\n"                   \
	  "                      pprof, Pyroscope, Parca: functions, lines,\n"     \
	  "                      mappings, labels pid, tid, process, vmstate")     \
	_(speedscope, out_speedscope, OUT_INFOS | OUT_SAMPLES,                    \
	  "speedscope's JSON (-o FILE.json): one profile per\n"                   \
	  "                      thread, samples in time order")

/* What --format options other than the format tell a writer. */
struct out_opts {
	unsigned rows;      /* top: rows per table, 0 = all */
	double limit;       /* callgraph: hide nodes under limit % */
	int inverted;       /* flamegraph: an icicle, roots on top */
	/* flamegraph of a diff: colour the profile by its growth over this
	 * one; NULL for a plain flame graph. */
	const struct profile *base;
	int per_second;     /* ...by samples per second, not shares */
	const char *title;  /* flamegraph: the title line, or NULL */
};

typedef int out_writer(FILE *out, const struct profile *p, const struct out_opts *o);

#define OUT_DECLARE(name, writer, flags, help) out_writer writer;
REPORT_FORMATS(OUT_DECLARE)
#undef OUT_DECLARE

/* out_folded.c: stack id's frames as a folded line's text, "root;...;leaf"
 * (';' in a name written as ':'); malloc'd, NULL without memory. */
char *folded_stack(const struct profile *p, uint32_t id);

#endif

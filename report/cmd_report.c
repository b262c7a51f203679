/*
 * cmd_report.c - `luaprof report`'s command line: its options, --help,
 * the format dispatch.  The formats come from report/formats.h's list,
 * so a new format needs nothing here; the traces are read by
 * report_load() (report.c), the same as for `luaprof diff`.
 */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "report/annotate.h"
#include "report/formats.h"
#include "report/report.h"
#include "report/vmstate.h"

#define PROG "luaprof report"

/* The formats, from formats.h's list. */
static const struct format {
	const char *name;
	out_writer *write;
	unsigned flags;
	const char *help;
} formats[] = {
#define FORMAT_ROW(name, writer, flags, help) { #name, writer, flags, help },
	REPORT_FORMATS(FORMAT_ROW)
#undef FORMAT_ROW
};

#define NFORMATS (sizeof(formats) / sizeof(formats[0]))

struct opts {
	const struct format *format;
	const char *output;
	struct load_opts load;
	unsigned rows;
	int rows_set; /* -n given: --annotate's default is smaller */
	double limit;
	int inverted;
	int vmstate;
	int annotate; /* --annotate */
	int by_line;  /* --by line */
	char **traces;
	size_t ntraces;
};

static void usage_line(FILE *f)
{
	fputs("usage: luaprof report [--format ", f);
	for (size_t i = 0; i < NFORMATS; i++)
		fprintf(f, "%s%s", i ? "|" : "", formats[i].name);
	fputs("] [-o FILE] [--pid PID[,PID...]] [--tid TID[,TID...]] "
	      "[--from S] [--to S] [-n N] [--percent-limit P] [--inverted] [--comm] "
	      "[--lines] [--no-demangle] [--vmstate | --annotate | --by line] "
	      "[--symfs DIR] TRACE...\n", f);
}

static void help(void)
{
	usage_line(stdout);
	fputs("\n"
	      "Prints where the samples of luaprof traces went; several traces\n"
	      "are merged into one report.\n"
	      "\n", stdout);
	for (size_t i = 0; i < NFORMATS; i++)
		printf("  --format %-11s%s\n", formats[i].name, formats[i].help);
	fputs("  -o, --output FILE   write to FILE instead of standard output\n"
	      "  --pid PID[,PID...]  only samples of these processes (repeatable)\n"
	      "  --tid TID[,TID...]  only samples of these threads (repeatable)\n"
	      "  --from S, --to S    only samples from S seconds after each trace's\n"
	      "                      first sample, and before S seconds after it\n"
	      "  -n, --rows N        top: rows per table (default 20, 0 = all)\n"
	      "  --percent-limit P   callgraph: hide nodes under P% of the samples\n"
	      "                      (default 0.5)\n"
	      "  --inverted          flamegraph: an icicle graph, roots on top\n"
	      "  --comm              every format but top: put the process name\n"
	      "                      above each stack as its root frame\n"
	      "  --vmstate           instead of stacks: the share of samples in each\n"
	      "                      LuaJIT VM state (N compiled, I interpreted, C code,\n"
	      "                      G garbage collector, J JIT compiler), overall and\n"
	      "                      per innermost Lua function (-n rows); LuaJIT's\n"
	      "                      own state: C that compiled Lua calls through\n"
	      "                      the FFI counts as N, as in jit.p\n"
	      "  --annotate          instead of stacks: the hottest Lua functions'\n"
	      "                      source, as the trace holds it, with samples per\n"
	      "                      line, self (the line running in the innermost Lua\n"
	      "                      function) and total (running anywhere on the Lua\n"
	      "                      stack); -n functions (default 10, 0 = all)\n"
	      "  --by line           instead of stacks: Lua source lines ranked by\n"
	      "                      self samples, with total, function and source\n"
	      "                      text (-n rows)\n"
	      "                      (--vmstate, --annotate, --by line: one TRACE)\n"
	      "  --lines             Lua frames show the line being run (in compiled\n"
	      "                      code, that of the bytecode that made the\n"
	      "                      machine instruction the sample hit), not the\n"
	      "                      line where the function is defined; native\n"
	      "                      frames with DWARF show NAME (FILE:LINE)\n"
	      "                      likewise, and code in anonymous memory\n"
	      "                      [anon]+0xOFF\n"
	      "  --no-demangle       native names as their symbols have them\n"
	      "                      (_ZN7EThread7executeEv), not demangled\n"
	      "                      (EThread::execute()), C++ and Rust\n"
	      "  --symfs DIR         for objects whose symbols the trace does not\n"
	      "                      embed (record --no-embed): look for each file\n"
	      "                      as DIR/its/recorded/path before its own path,\n"
	      "                      and for its debug file under DIR first; a file\n"
	      "                      is used only if its build-id matches\n"
	      "  -h, --help          print this help and exit\n"
	      "\n"
	      "Frames read root to leaf: user frames, then kernel frames.  Lua\n"
	      "frames stand where the LuaJIT VM ran them, between the native\n"
	      "frames that called into the VM and those it called, as\n"
	      "NAME (CHUNK:LINE): NAME as LuaJIT derives it from the call site,\n"
	      "main for a chunk, ? when none; CHUNK without its @, or for a chunk\n"
	      "loaded from a string [string \"its first line\"]; LINE where the\n"
	      "function is defined.  Builtins print by name (string.format),\n"
	      "[trace N] a compiled trace, [truncated] where a Lua stack could not\n"
	      "be read further (counted in the header as \"Lua stack cut\") and,\n"
	      "as the root, where the native stack could not be followed to its\n"
	      "outermost frame (\"native stack cut\"), [unknown frames] for the C\n"
	      "functions the walk could not see between Lua and another JIT's\n"
	      "code, [anon], which they called (counted as \"frames unseen\").\n"
	      "Time the VM spent outside Lua code ends a stack with [GC],\n"
	      "[trace exit] or [JIT compiler].  A native frame is a function\n"
	      "name; MODULE+0xADDR where the file has no symbol for it (ADDR as\n"
	      "addr2line -e takes it, or a file offset if the file cannot be\n"
	      "read here); [anon] or [vdso] inside such mappings\n"
	      "(one function each, so that another JIT's code adds up in one\n"
	      "row; --lines adds +0xOFF, from the mapping's start); [unmapped]\n"
	      "outside every mapping; NAME_[k] in the kernel;\n"
	      "[missing stack] for a stack the trace lost; [no stack] for a\n"
	      "sample without one.\n"
	      "\n"
	      "Where an object has DWARF (resolved by record and embedded as\n"
	      "source lines, or for --no-embed traces read from the file's own\n"
	      "or its debug file), a function inlined into another is a frame\n"
	      "of its own, NAME [inlined], on the leaf side of the function it\n"
	      "was inlined into, and --lines adds (FILE:LINE) to native frames:\n"
	      "the line running in the innermost frame, the call site in the\n"
	      "others, FILE without its directory.\n"
	      "\n"
	      "pprof always splits Lua frames by the line they run (locations),\n"
	      "each a line of its function as named without --lines.\n"
	      "\n"
	      "Warnings about the trace (cut short, damaged, lost samples) go to\n"
	      "standard error.  Exit status: 0 ok, 1 unreadable trace or I/O error,\n"
	      "2 bad usage.\n",
	      stdout);
}

#define misuse(...) report_misuse(PROG, usage_line, __VA_ARGS__)

enum { OPT_FORMAT = 256, OPT_LIMIT, OPT_COMM, OPT_VMSTATE, OPT_ANNOTATE, OPT_BY,
       OPT_INVERTED };

static const struct format *find_format(const char *name)
{
	for (size_t i = 0; i < NFORMATS; i++)
		if (!strcmp(name, formats[i].name))
			return &formats[i];
	return NULL;
}

/* 0 to run, 2 on misuse, -1 when --help was printed, -ENOMEM. */
static int parse_opts(int argc, char **argv, struct opts *o)
{
	static const struct option longopts[] = {
		{ "format", required_argument, NULL, OPT_FORMAT },
		{ "output", required_argument, NULL, 'o' },
		LOAD_OPTIONS,
		{ "rows", required_argument, NULL, 'n' },
		{ "percent-limit", required_argument, NULL, OPT_LIMIT },
		{ "inverted", no_argument, NULL, OPT_INVERTED },
		{ "comm", no_argument, NULL, OPT_COMM },
		{ "vmstate", no_argument, NULL, OPT_VMSTATE },
		{ "annotate", no_argument, NULL, OPT_ANNOTATE },
		{ "by", required_argument, NULL, OPT_BY },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct load_opts *lo = &o->load;
	const char *why;
	char *end;
	int c, err;

	o->format = &formats[0];
	o->rows = 20;
	o->limit = 0.5;
	lo->who = PROG;
	lo->from_ns = lo->to_ns = -1;
	optind = 0; /* glibc: start over, as a command may run twice */
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":o:n:h", longopts, NULL)) != -1) {
		switch (c) {
		case OPT_FORMAT:
			o->format = find_format(optarg);
			if (!o->format)
				return misuse("unknown format '%s'", optarg);
			break;
		case 'o':
			o->output = optarg;
			break;
		case LOAD_OPT_PID ... LOAD_OPT_SYMFS:
			err = report_load_opt(lo, c, optarg, &why);
			if (err == -EINVAL)
				return misuse("%s '%s'", why, optarg);
			if (err)
				return err;
			break;
		case 'n':
			if (report_parse_rows(optarg, &o->rows))
				return misuse("bad row count '%s'", optarg);
			o->rows_set = 1;
			break;
		case OPT_LIMIT:
			errno = 0;
			o->limit = strtod(optarg, &end);
			if (errno || *end || !*optarg || isnan(o->limit) ||
			    o->limit < 0 || o->limit > 100)
				return misuse("bad percent limit '%s'", optarg);
			break;
		case OPT_INVERTED:
			o->inverted = 1;
			break;
		case OPT_COMM:
			lo->comm = 1;
			break;
		case OPT_VMSTATE:
			o->vmstate = 1;
			break;
		case OPT_ANNOTATE:
			o->annotate = 1;
			break;
		case OPT_BY:
			if (strcmp(optarg, "line"))
				return misuse("unknown --by '%s' (only 'line')", optarg);
			o->by_line = 1;
			break;
		case 'h':
			help();
			return -1;
		case ':':
			return misuse("option '%s' needs an argument",
				      argv[optind - 1]);
		default:
			return misuse("unknown option '%s'", argv[optind - 1]);
		}
	}
	if (o->vmstate + o->annotate + o->by_line > 1)
		return misuse("--vmstate, --annotate and --by line are different reports: "
			      "choose one");
	if ((o->vmstate || o->annotate || o->by_line) && o->format != &formats[0])
		return misuse("--format does not apply to --vmstate, --annotate or --by line");
	if (o->annotate && !o->rows_set)
		o->rows = 10;
	if (report_load_check(lo, &why))
		return misuse("%s", why);
	if (argc - optind < 1)
		return misuse("no TRACE given");
	if (argc - optind > 1 && (o->vmstate || o->annotate || o->by_line))
		return misuse("--vmstate, --annotate and --by line read one TRACE");
	if ((o->format->flags & OUT_BINARY) && !o->output && isatty(STDOUT_FILENO))
		return misuse("--format %s is binary: give -o FILE", o->format->name);
	lo->infos = !!(o->format->flags & (OUT_INFOS | OUT_LINES));
	lo->keep_samples = !!(o->format->flags & OUT_SAMPLES);
	if (o->format->flags & OUT_LINES)
		lo->lines = 1;
	o->traces = argv + optind;
	o->ntraces = argc - optind;
	return 0;
}

static int write_output(const struct opts *o, const struct profile *prof,
			const struct report_pass *ps)
{
	struct out_opts oo = { .rows = o->rows, .limit = o->limit, .inverted = o->inverted };
	FILE *out = stdout;
	int err;

	if (o->output) {
		out = report_open_output(o->output, PROG);
		if (!out)
			return 1;
	}
	if (o->vmstate)
		err = out_vmstate(out, prof, report_pass_vmstate(ps), o->rows);
	else if (o->annotate)
		err = out_annotate(out, prof, report_pass_annotate(ps), o->rows);
	else if (o->by_line)
		err = out_by_line(out, prof, report_pass_annotate(ps), o->rows);
	else
		err = o->format->write(out, prof, &oo);
	return report_close_output(out, o->output, PROG, err);
}

int cmd_report(int argc, char **argv)
{
	struct opts o = { 0 };
	struct profile prof = { 0 };
	struct procs procs = { 0 };
	struct report_pass *keep = NULL;
	int ret;

	ret = parse_opts(argc, argv, &o);
	if (ret) {
		if (ret == -ENOMEM)
			fprintf(stderr, PROG ": %s\n", strerror(ENOMEM));
		ret = ret == -1 ? 0 : ret == 2 ? 2 : 1;
		goto cleanup;
	}
	/* top counts functions: a process-name root would be one more. */
	if (o.format->write == out_top && !o.vmstate && !o.annotate && !o.by_line)
		o.load.comm = 0;
	o.load.vmstate = o.vmstate;
	o.load.annotate = o.annotate || o.by_line;
	ret = report_load(&o.load, o.traces, o.ntraces, &prof, &procs, &keep);
	if (!ret)
		ret = write_output(&o, &prof, keep);
cleanup:
	report_pass_free(keep);
	profile_free(&prof);
	procs_free(&procs);
	free(o.load.pids);
	free(o.load.tids);
	return ret;
}


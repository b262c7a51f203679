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
#include "report/stalls.h"
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

/*
 * The reports other than stacks, listed once: the option that asks for
 * one (`--by line` is --by's value), what the load must count for it,
 * the kind of event it shows, its writer, its default -n, and its
 * --help.  Parsing, the usage line,
 * --help, the checks and the dispatch all follow from the list.
 */
#define REPORT_MODES(_)                                                              \
	_(vmstate, "--vmstate", write_vmstate, 1, 0, CPU, 20,                             \
	  "  --vmstate           instead of stacks: the share of samples in each\n"      \
	  "                      LuaJIT VM state (N compiled, I interpreted, C code,\n"  \
	  "                      G garbage collector, J JIT compiler), overall and\n"    \
	  "                      per innermost Lua function (-n rows); LuaJIT's\n"       \
	  "                      own state: C that compiled Lua calls through\n"         \
	  "                      the FFI counts as N, as in jit.p\n")                    \
	_(annotate, "--annotate", write_annotate, 0, 1, CPU, 10,                          \
	  "  --annotate          instead of stacks: the hottest Lua functions'\n"        \
	  "                      source, as the trace holds it, with samples per\n"      \
	  "                      line, self (the line running in the innermost Lua\n"    \
	  "                      function) and total (running anywhere on the Lua\n"     \
	  "                      stack); -n functions (default 10, 0 = all)\n")          \
	_(by_line, "--by line", write_by_line, 0, 1, CPU, 20,                        \
	  "  --by line           instead of stacks: Lua source lines ranked by\n"        \
	  "                      self samples, with total, function and source\n"        \
	  "                      text (-n rows)\n")                                      \
	_(stalls, "--stalls", write_stalls, 0, 0, STALL, 20,                         \
	  "  --stalls            instead of stacks: the event loops' stalls\n"           \
	  "                      (record -e stall), longest first (-n rows), each\n"     \
	  "                      with its thread, start, the loop's stack, and\n"        \
	  "                      the stacks its thread ran inside it: CPU samples\n"     \
	  "                      and off-CPU waits (record -e cpu,off-cpu,stall),\n"     \
	  "                      as shares of its length\n")

struct report_pass;
typedef int (*mode_write)(FILE *out, const struct profile *prof,
			  const struct report_pass *ps, unsigned rows);

static int write_vmstate(FILE *out, const struct profile *prof,
			 const struct report_pass *ps, unsigned rows)
{
	return out_vmstate(out, prof, report_pass_vmstate(ps), rows);
}

static int write_annotate(FILE *out, const struct profile *prof,
			  const struct report_pass *ps, unsigned rows)
{
	return out_annotate(out, prof, report_pass_annotate(ps), rows);
}

static int write_by_line(FILE *out, const struct profile *prof,
			 const struct report_pass *ps, unsigned rows)
{
	return out_by_line(out, prof, report_pass_annotate(ps), rows);
}

static int write_stalls(FILE *out, const struct profile *prof,
			const struct report_pass *ps, unsigned rows)
{
	return out_stalls(out, prof, report_pass_stalls(ps), rows);
}

static const struct mode {
	const char *option;
	mode_write write;
	int vmstate, annotate; /* what the load counts (struct load_opts) */
	uint32_t kind;         /* the kind it shows */
	unsigned rows;         /* -n when not given */
	const char *help;
} modes[] = {
#define MODE_ROW(name, option, write, vmstate, annotate, kind, rows, help) \
	{ option, write, vmstate, annotate, LP_KIND_##kind, rows, help },
	REPORT_MODES(MODE_ROW)
#undef MODE_ROW
};
enum mode_id {
#define MODE_ID(name, ...) MODE_##name,
	REPORT_MODES(MODE_ID)
#undef MODE_ID
	NMODES
};

/* The modes' options, joined by sep, the last by last. */
static void modes_list(FILE *f, const char *sep, const char *last)
{
	for (int i = 0; i < NMODES; i++)
		fprintf(f, "%s%s", !i ? "" : i == NMODES - 1 ? last : sep, modes[i].option);
}

/* The same as a string (good until the fourth call after). */
static const char *modes_text(const char *sep, const char *last)
{
	static char buf[4][128];
	static unsigned next;
	char *b = buf[next++ % 4];
	FILE *f = fmemopen(b, sizeof(buf[0]), "w");

	b[0] = '\0';
	if (f) {
		modes_list(f, sep, last);
		fclose(f);
	}
	return b;
}

struct opts {
	const struct format *format;
	const char *output;
	struct load_opts load;
	unsigned rows;
	int rows_set; /* -n given: --annotate's default is smaller */
	double limit;
	int inverted;
	const struct mode *mode; /* NULL: stacks, in o->format */
	int nmodes;              /* modes asked for (one at most) */
	int kind_set;            /* --kind given */
	char **traces;
	size_t ntraces;
};

static void usage_line(FILE *f)
{
	fputs("usage: luaprof report [--format ", f);
	for (size_t i = 0; i < NFORMATS; i++)
		fprintf(f, "%s%s", i ? "|" : "", formats[i].name);
	fputs("] [-o FILE] [--pid PID[,PID...]] [--tid TID[,TID...]] "
	      "[--from S] [--to S] [--kind KIND] [-n N] [--percent-limit P] [--inverted] [--comm] "
	      "[--lines] [--no-demangle] [", f);
	modes_list(f, " | ", " | ");
	fputs("] [--symfs DIR] TRACE...\n", f);
}

/* The event kinds, from format/kinds.h's list, as --help lists them. */
static void kinds_help(FILE *f)
{
	for (uint32_t k = 0; k < LP_KIND_MAX; k++)
		if (lp_kind_info(k))
			fprintf(f, "                      %s: %s\n", lp_kind_info(k)->name,
				lp_kind_info(k)->help);
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
	      "  --kind KIND         the events to show, weighted (default cpu):\n", stdout);
	kinds_help(stdout);
	fputs("  -n, --rows N        top: rows per table (default 20, 0 = all)\n"
	      "  --percent-limit P   callgraph: hide nodes under P% of the samples\n"
	      "                      (default 0.5)\n"
	      "  --inverted          flamegraph: an icicle graph, roots on top\n"
	      "  --comm              every format but top: put the process name\n"
	      "                      above each stack as its root frame\n", stdout);
	for (int i = 0; i < NMODES; i++)
		fputs(modes[i].help, stdout);
	printf("                      (%s: one TRACE)\n", modes_text(", ", ", "));
	fputs("  --lines             Lua frames show the line being run (in compiled\n"
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
	      "name (SYM@plt for a PLT stub; the vDSO's too, __vdso_...);\n"
	      "MODULE+0xADDR where the file has no symbol for it (ADDR as\n"
	      "addr2line -e takes it, or a file offset if the file cannot be\n"
	      "read here); [anon] inside such mappings, and [vdso] in a trace\n"
	      "that holds none of the vDSO's symbols\n"
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
       OPT_INVERTED, OPT_STALLS };

static const struct format *find_format(const char *name)
{
	for (size_t i = 0; i < NFORMATS; i++)
		if (!strcmp(name, formats[i].name))
			return &formats[i];
	return NULL;
}

static void want_mode(struct opts *o, enum mode_id id)
{
	if (o->mode != &modes[id])
		o->nmodes++;
	o->mode = &modes[id];
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
		{ "stalls", no_argument, NULL, OPT_STALLS },
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
	lo->kind = LP_KIND_CPU;
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
			o->kind_set |= c == LOAD_OPT_KIND;
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
			want_mode(o, MODE_vmstate);
			break;
		case OPT_ANNOTATE:
			want_mode(o, MODE_annotate);
			break;
		case OPT_BY:
			if (strcmp(optarg, "line"))
				return misuse("unknown --by '%s' (only 'line')", optarg);
			want_mode(o, MODE_by_line);
			break;
		case OPT_STALLS:
			want_mode(o, MODE_stalls);
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
	if (o->nmodes > 1)
		return misuse("%s are different reports: choose one", modes_text(", ", " and "));
	if (o->mode && o->kind_set && lo->kind != o->mode->kind)
		return misuse("%s counts %s events: not with --kind %s", o->mode->option,
			      lp_kind_info(o->mode->kind)->name, lp_kind_info(lo->kind)->name);
	if (o->mode)
		lo->kind = o->mode->kind;
	if (o->mode && o->format != &formats[0])
		return misuse("--format does not apply to %s", modes_text(", ", " or "));
	if (o->mode && !o->rows_set)
		o->rows = o->mode->rows;
	if (report_load_check(lo, &why))
		return misuse("%s", why);
	if (argc - optind < 1)
		return misuse("no TRACE given");
	if (argc - optind > 1 && o->mode)
		return misuse("%s read one TRACE", modes_text(", ", " and "));
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
	if (o->mode)
		err = o->mode->write(out, prof, ps, o->rows);
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
	if (o.format->write == out_top && !o.mode)
		o.load.comm = 0;
	o.load.vmstate = o.mode && o.mode->vmstate;
	o.load.annotate = o.mode && o.mode->annotate;
	o.load.stalls = o.mode == &modes[MODE_stalls];
	if (o.load.stalls)
		o.load.comm = 0; /* each stall's line names its process */
	/* Heap snapshots alone: their kind, without --kind heap. */
	if (!o.kind_set && !o.mode && report_only_heap(o.traces, o.ntraces))
		o.load.kind = LP_KIND_HEAP;
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


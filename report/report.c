/*
 * report.c - `luaprof report`: its options, the streaming pass over each
 * trace (report_load(), which `diff` shares), the warnings about the
 * traces' health, the format dispatch, and the header block the text
 * formats open with.
 *
 * A pass replays a trace in stream order because that is the only order
 * in which it is true: a sample's user addresses mean what the mappings
 * recorded *before* it say, and stack ids are defined before use.  Samples
 * are counted into stacks.c's tables as they come, so a trace of any
 * length reports in bounded memory; only the formats that show every
 * sample (time order, labels: formats.h's OUT_SAMPLES) keep one small
 * record per sample.  Several traces are replayed one after the other,
 * each with its own mappings, symbols and Lua records (their ids mean
 * nothing across traces), into one profile: names, stacks and counts
 * are merged.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "format/trace.h"
#include "report/annotate.h"
#include "report/formats.h"
#include "report/frames.h"
#include "report/maps.h"
#include "report/objects.h"
#include "report/profile.h"
#include "report/report.h"
#include "report/lua.h"
#include "report/luasrc.h"
#include "report/stacks.h"
#include "report/symbolize.h"
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

/* What reading all the traces builds. */
struct run {
	const struct load_opts *o;
	struct profile *prof;
	struct procs *procs;
	uint32_t *roots; /* --comm root name per procs entry */
	size_t nroots, caproots;
	/* --vmstate, --annotate, --by line: counted over the (single)
	 * trace's pass; see cmd_report. */
	int vmstate, annotate;
	struct pass *keep;
};

/* One trace's replay: its records mean something only inside it. */
struct pass {
	const char *path;
	uint32_t index; /* in prof->traces */
	struct maps *maps;
	struct symbolizer *sym;
	struct objects *objs;
	struct frames *fr;
	struct stacks *st;
	struct lua *lua;
	struct vmstate *vms;
	struct luasrc *src;   /* --annotate, --by line: the Lua sources */
	struct annotate *ann;
	uint64_t samples, lost, missing;
	uint64_t origin;      /* the first sample's time: --from, --to */
	uint64_t win_first, win_last; /* samples in the window */
	uint64_t in_window;
	size_t first_kept;    /* its first sample in prof->samples_v */
	struct lp_footer footer;
	int footer_seen;
};

static void usage_line(FILE *f)
{
	fputs("usage: luaprof report [--format ", f);
	for (size_t i = 0; i < NFORMATS; i++)
		fprintf(f, "%s%s", i ? "|" : "", formats[i].name);
	fputs("] [-o FILE] [--pid PID[,PID...]] [--tid TID[,TID...]] "
	      "[--from S] [--to S] [-n N] [--percent-limit P] [--inverted] [--comm] "
	      "[--lines] [--vmstate | --annotate | --by line] [--symfs DIR] "
	      "TRACE...\n", f);
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
	      "                      per innermost Lua function (-n rows)\n"
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
	      "                      code, where its trace starts), not the line\n"
	      "                      where the function is defined; native frames\n"
	      "                      with DWARF show NAME (FILE:LINE) likewise\n"
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
	      "main for a chunk, ? when none; CHUNK without its @; LINE where the\n"
	      "function is defined.  Builtins print by name (string.format),\n"
	      "[trace N] a compiled trace, [truncated] where a Lua stack could not\n"
	      "be read further.  Time the VM spent outside Lua code ends a stack\n"
	      "with [GC], [trace exit] or [JIT compiler].  A native frame\n"
	      "is a function name; MODULE+0xADDR where the file has no symbol for\n"
	      "it (ADDR as addr2line -e takes it, or a file offset if the file\n"
	      "cannot be read here); [anon]+0xOFF or [vdso]+0xOFF inside such\n"
	      "mappings; [unmapped] outside every mapping; NAME_[k] in the kernel;\n"
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

int report_misuse(const char *who, void (*usage)(FILE *), const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "%s: ", who);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	usage(stderr);
	return 2;
}

#define misuse(...) report_misuse(PROG, usage_line, __VA_ARGS__)

static int id_cmp(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return x < y ? -1 : x > y;
}

/* Appends a comma-separated list of ids to a sorted one; 0, -EINVAL or
 * -ENOMEM. */
static int parse_ids(const char *arg, uint32_t **v, size_t *n, size_t *cap)
{
	const char *p = arg;

	for (;;) {
		unsigned long long x;
		char *end;

		if (*p < '0' || *p > '9')
			return -EINVAL;
		errno = 0;
		x = strtoull(p, &end, 10);
		if (errno || x > UINT32_MAX)
			return -EINVAL;
		if (GROW(*v, *cap, *n + 1))
			return -ENOMEM;
		(*v)[(*n)++] = x;
		if (!*end)
			break;
		if (*end != ',')
			return -EINVAL;
		p = end + 1;
	}
	qsort(*v, *n, sizeof(**v), id_cmp);
	return 0;
}

/* Seconds >= 0 as nanoseconds; 0 or -EINVAL. */
static int parse_seconds(const char *arg, int64_t *ns)
{
	char *end;
	double x;

	errno = 0;
	x = strtod(arg, &end);
	if (errno || end == arg || *end || isnan(x) || x < 0 || x > 1e9)
		return -EINVAL;
	*ns = (int64_t)(x * 1e9 + 0.5);
	return 0;
}

int report_load_opt(struct load_opts *lo, int c, const char *arg, const char **why)
{
	int err = 0;

	*why = "bad id list";
	switch (c) {
	case LOAD_OPT_PID:
		return parse_ids(arg, &lo->pids, &lo->npids, &lo->cappids);
	case LOAD_OPT_TID:
		return parse_ids(arg, &lo->tids, &lo->ntids, &lo->captids);
	case LOAD_OPT_FROM:
	case LOAD_OPT_TO:
		*why = "bad number of seconds";
		return parse_seconds(arg, c == LOAD_OPT_FROM ? &lo->from_ns : &lo->to_ns);
	case LOAD_OPT_LINES:
		lo->lines = 1;
		break;
	case LOAD_OPT_SYMFS:
		lo->symfs = arg;
		break;
	default:
		*why = "unknown option";
		err = -EINVAL;
	}
	return err;
}

int report_load_check(const struct load_opts *lo, const char **why)
{
	*why = "--to must be later than --from";
	return lo->from_ns >= 0 && lo->to_ns >= 0 && lo->to_ns <= lo->from_ns ? -EINVAL : 0;
}

static int has_id(const uint32_t *v, size_t n, uint32_t id)
{
	return bsearch(&id, v, n, sizeof(id), id_cmp) != NULL;
}

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
	unsigned long long rows;
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
			errno = 0;
			rows = strtoull(optarg, &end, 10);
			if (errno || *end || !*optarg || optarg[0] == '-' ||
			    rows > 1000000000)
				return misuse("bad row count '%s'", optarg);
			o->rows = rows;
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

/* The --comm root frame of a process entry, interned once. */
static int comm_root(struct run *r, struct pass *ps, const struct proc *p, uint32_t *id)
{
	size_t idx = p - r->procs->v;
	char buf[64];
	int err;

	err = GROW(r->roots, r->caproots, r->procs->len);
	if (err)
		return err;
	while (r->nroots < r->procs->len)
		r->roots[r->nroots++] = STACKS_NO_ROOT;
	if (r->roots[idx] == STACKS_NO_ROOT) {
		const char *name = p->comm;

		if (!name || !name[0]) {
			snprintf(buf, sizeof(buf), "[pid %" PRIu32 "]", p->pid);
			name = buf;
		}
		err = frames_name(ps->fr, name, &r->roots[idx]);
		if (err)
			return err;
	}
	*id = r->roots[idx];
	return 0;
}

/* Whether a sample is in the --from/--to window, which starts at the
 * trace's first sample in stream order (one read later but timed earlier,
 * as per-CPU buffers may interleave, counts as at 0). */
static int in_window(const struct load_opts *o, struct pass *ps, uint64_t t)
{
	uint64_t rel;

	if (ps->samples == 1)
		ps->origin = t;
	rel = t > ps->origin ? t - ps->origin : 0;
	if ((o->from_ns >= 0 && rel < (uint64_t)o->from_ns) ||
	    (o->to_ns >= 0 && rel >= (uint64_t)o->to_ns))
		return 0;
	if (!ps->in_window++ || t < ps->win_first)
		ps->win_first = t;
	if (t > ps->win_last)
		ps->win_last = t;
	return 1;
}

static int keep_sample(struct run *r, struct pass *ps, const struct lp_sample *smp,
		       const struct proc *p)
{
	struct profile *prof = r->prof;
	struct profile_sample *k;
	int err;

	err = GROW(prof->samples_v, prof->capsamples, prof->nsamples + 1);
	if (err)
		return err;
	k = &prof->samples_v[prof->nsamples++];
	k->time_ns = smp->time_ns;
	k->stack = stacks_last_entry(ps->st); /* an entry until the pass ends */
	k->tid = smp->tid;
	k->proc = p - r->procs->v;
	k->vmclass = vmstate_class(smp);
	k->trace = ps->index;
	return 0;
}

static int on_sample(struct run *r, struct pass *ps, const struct lp_sample *smp)
{
	const struct load_opts *o = r->o;
	struct profile *prof = r->prof;
	uint32_t root = STACKS_NO_ROOT;
	struct proc *p;
	int err, missing;

	if (!prof->samples++ || smp->time_ns < prof->first_ns)
		prof->first_ns = smp->time_ns;
	if (smp->time_ns > prof->last_ns)
		prof->last_ns = smp->time_ns;
	ps->samples++;
	err = procs_get(r->procs, smp->pid, &p);
	if (err)
		return err;
	p->samples++;
	if (!in_window(o, ps, smp->time_ns) ||
	    (o->npids && !has_id(o->pids, o->npids, smp->pid)) ||
	    (o->ntids && !has_id(o->tids, o->ntids, smp->tid)))
		return 0;
	if (o->comm) {
		err = comm_root(r, ps, p, &root);
		if (err)
			return err;
	}
	err = stacks_add_sample(ps->st, smp, root, &missing);
	ps->missing += missing;
	if (!err && o->keep_samples)
		err = keep_sample(r, ps, smp, p);
	if (!err && ps->vms)
		err = vmstate_add(ps->vms, smp, smp->lstack ?
				  lua_find_stack(ps->lua, smp->lstack) : UINT32_MAX);
	if (!err && ps->ann)
		err = annotate_add(ps->ann, smp, smp->lstack ?
				   lua_find_stack(ps->lua, smp->lstack) : UINT32_MAX);
	return err;
}

static int on_meta(struct run *r, struct pass *ps, const struct lp_meta *m)
{
	struct profile_trace *t = &r->prof->traces[ps->index];

	if (t->cmdline) /* the first META record stands */
		return 0;
	t->cmdline = strdup(m->cmdline ? m->cmdline : "");
	if (!t->cmdline)
		return -ENOMEM;
	t->rate_hz = m->rate_hz;
	t->start_real_ns = m->start_real_ns;
	return 0;
}

static int on_record(struct run *r, struct pass *ps, const struct lp_record *rec)
{
	struct proc *p;
	int err;

	switch (rec->type) {
	case LP_REC_META:
		return on_meta(r, ps, &rec->u.meta);
	case LP_REC_PROCESS:
		err = procs_add(r->procs, &rec->u.process);
		if (err)
			return err;
		/* The entry may have been a placeholder named "[pid N]". */
		p = procs_find(r->procs, rec->u.process.pid);
		if (p && (size_t)(p - r->procs->v) < r->nroots)
			r->roots[p - r->procs->v] = STACKS_NO_ROOT;
		if (rec->u.process.flags & LP_PROC_FORKED)
			return maps_fork(ps->maps, rec->u.process.pid,
					 rec->u.process.ppid);
		return 0;
	case LP_REC_EXIT:
		maps_exit(ps->maps, rec->u.exit.pid);
		return procs_exit(r->procs, &rec->u.exit);
	case LP_REC_MAPS:
		return maps_apply(ps->maps, &rec->u.maps);
	case LP_REC_STACK:
		return stacks_define(ps->st, &rec->u.stack);
	case LP_REC_LUAJIT:
		return lua_add_luajit(ps->lua, &rec->u.luajit);
	case LP_REC_PROTO:
		return lua_add_proto(ps->lua, &rec->u.proto);
	case LP_REC_LUA_STACK:
		return lua_add_stack(ps->lua, &rec->u.lua_stack);
	case LP_REC_TRACE:
		return lua_add_trace(ps->lua, &rec->u.trace);
	case LP_REC_LUA_SOURCE:
		return ps->src ? luasrc_add(ps->src, &rec->u.lua_source) : 0;
	case LP_REC_SAMPLE:
		return on_sample(r, ps, &rec->u.sample);
	case LP_REC_LOST:
		ps->lost += rec->u.lost.count;
		return 0;
	case LP_REC_KSYMS:
		return frames_add_ksyms(ps->fr, &rec->u.ksyms);
	case LP_REC_OBJECT:
	case LP_REC_SYMTAB:
		return 0; /* read by objects_preload() */
	case LP_REC_FOOTER:
		ps->footer = rec->u.footer;
		ps->footer_seen = 1;
		return 0;
	default:
		return 0; /* types a later version may add */
	}
}

/* `luaprof report: ` or, with several traces, `luaprof report: PATH: `. */
static void warn_prefix(const struct run *r, const struct pass *ps)
{
	if (r->prof->ntraces > 1)
		fprintf(stderr, "%s: %s: ", r->o->who, ps->path);
	else
		fprintf(stderr, "%s: ", r->o->who);
}

static void warn_health(struct run *r, struct pass *ps, const struct trace_reader_stats *st)
{
	uint64_t lost = ps->lost, taken;

	/* The footer counts what the recorder knew it lost; LOST records
	 * may be missing from a damaged trace, the footer from a cut one. */
	if (ps->footer_seen && ps->footer.lost > lost)
		lost = ps->footer.lost;
	r->prof->lost += lost;
	taken = ps->samples + lost;
	if (!st->footer_seen) {
		warn_prefix(r, ps);
		fprintf(stderr, "warning: trace was cut short: %" PRIu64
			" samples recovered from %" PRIu64 " chunks\n",
			ps->samples, st->chunks);
	}
	if (st->bad_chunks) {
		warn_prefix(r, ps);
		fprintf(stderr, "warning: %" PRIu64 " damaged chunks skipped (%"
			PRIu64 " bytes); their samples are missing\n",
			st->bad_chunks, st->garbage_bytes);
	}
	if (st->bad_records) {
		warn_prefix(r, ps);
		fprintf(stderr, "warning: %" PRIu64 " records did not decode and were skipped\n",
			st->bad_records);
	}
	if (st->retired_records) {
		warn_prefix(r, ps);
		fprintf(stderr, "warning: the trace embeds DWARF as an older luaprof did, "
			"which is no longer read: native frames have no source lines\n");
	}
	if (lost) {
		warn_prefix(r, ps);
		fprintf(stderr, "warning: %" PRIu64 " samples were lost while recording (%.2f%% of %"
			PRIu64 ")\n", lost, 100.0 * lost / taken, taken);
	}
	if (ps->missing) {
		warn_prefix(r, ps);
		fprintf(stderr, "warning: %" PRIu64 " samples name a stack that was never defined; "
			"their frames print as [missing stack]\n", ps->missing);
	}
}

static void pass_free(struct pass *ps)
{
	if (!ps)
		return;
	stacks_free(ps->st);
	vmstate_free(ps->vms);
	annotate_free(ps->ann);
	luasrc_free(ps->src);
	lua_free(ps->lua);
	frames_free(ps->fr);
	objects_free(ps->objs);
	symbolizer_free(ps->sym);
	maps_free(ps->maps);
	free(ps);
}

static int pass_new(struct run *r, const char *path, uint32_t index, struct pass **out)
{
	const struct load_opts *o = r->o;
	struct pass *ps = calloc(1, sizeof(*ps));
	int err;

	*out = ps;
	if (!ps)
		return -ENOMEM;
	ps->path = path;
	ps->index = index;
	err = maps_new(&ps->maps);
	if (!err)
		err = symbolizer_new(&ps->sym, o->who);
	if (!err)
		err = objects_new(&ps->objs, ps->sym, o->symfs, o->who);
	/* Symbol tables come after the samples that hit them: read them
	 * first, in a pass of their own. */
	if (!err)
		err = objects_preload(ps->objs, path);
	if (!err)
		err = frames_new(&ps->fr, &r->prof->names, ps->maps, ps->sym);
	if (!err) {
		frames_set_objects(ps->fr, ps->objs);
		frames_set_lines(ps->fr, o->lines);
		if (o->infos)
			frames_set_infos(ps->fr, &r->prof->infos);
	}
	if (!err)
		err = lua_new(&ps->lua, ps->fr, o->lines);
	if (!err && r->vmstate)
		err = vmstate_new(&ps->vms, ps->lua);
	if (!err && r->annotate)
		err = luasrc_new(&ps->src) ?: annotate_new(&ps->ann, ps->lua, ps->src);
	if (!err)
		err = stacks_new(&ps->st, ps->fr, ps->maps, ps->lua);
	return err;
}

/* Replays one trace into the profile.  0, 1 after a message. */
static int load_one(struct run *r, const char *path, uint32_t index)
{
	struct trace_reader_stats st;
	struct trace_reader *reader = NULL;
	struct profile *prof = r->prof;
	struct lp_record rec;
	struct pass *ps = NULL;
	char errbuf[256] = "";
	int err;

	prof->traces[index].path = path;
	err = trace_reader_open(&reader, path, errbuf, sizeof(errbuf));
	if (err) {
		fprintf(stderr, "%s: %s: %s\n", r->o->who, path,
			errbuf[0] ? errbuf : strerror(-err));
		return 1;
	}
	err = pass_new(r, path, index, &ps);
	if (ps)
		ps->first_kept = prof->nsamples;
	while (!err && (err = trace_reader_next(reader, &rec)) == 1)
		err = on_record(r, ps, &rec);
	if (err < 0) {
		fprintf(stderr, "%s: %s: %s\n", r->o->who, path, strerror(-err));
		goto fail;
	}
	trace_reader_get_stats(reader, &st);
	trace_reader_close(reader);
	reader = NULL;
	if (!st.footer_seen)
		prof->complete = 0;
	err = stacks_finish(ps->st, prof);
	if (err) {
		fprintf(stderr, "%s: %s\n", r->o->who, strerror(-err));
		goto fail;
	}
	for (size_t i = ps->first_kept; i < prof->nsamples; i++)
		prof->samples_v[i].stack = stacks_entry_stack(ps->st, prof->samples_v[i].stack);
	if (ps->in_window) {
		prof->traces[index].span_ns = ps->win_last - ps->win_first;
		prof->span_ns += ps->win_last - ps->win_first;
	}
	warn_health(r, ps, &st);
	if (r->keep) {
		pass_free(r->keep);
		r->keep = NULL;
	}
	if (r->vmstate || r->annotate)
		r->keep = ps;
	else
		pass_free(ps);
	return 0;
fail:
	if (reader)
		trace_reader_close(reader);
	pass_free(ps);
	return 1;
}

static int load_all(struct run *r, char *const *traces, size_t n)
{
	struct profile *prof = r->prof;

	prof->traces = calloc(n, sizeof(*prof->traces));
	if (!prof->traces) {
		fprintf(stderr, "%s: %s\n", r->o->who, strerror(ENOMEM));
		return 1;
	}
	prof->ntraces = n;
	prof->trace = traces[0];
	prof->procs = r->procs;
	prof->complete = 1;
	if (r->o->infos)
		frameinfo_init(&prof->infos, &prof->names);
	for (size_t i = 0; i < n; i++)
		if (load_one(r, traces[i], i))
			return 1;
	if (!prof->shown)
		fprintf(stderr, "%s: warning: no samples to report%s\n", r->o->who,
			prof->samples ? " (none matched --pid/--tid/--from/--to)" : "");
	return 0;
}

int report_load(const struct load_opts *lo, char *const *traces, size_t n,
		struct profile *p, struct procs *procs)
{
	struct run r = { .o = lo, .prof = p, .procs = procs };
	int ret = load_all(&r, traces, n);

	free(r.roots);
	return ret;
}

FILE *report_open_output(const char *path)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
	FILE *f;

	if (fd < 0)
		return NULL;
	f = fdopen(fd, "w");
	if (!f)
		close(fd);
	return f;
}

static int write_output(const struct opts *o, struct run *r)
{
	struct out_opts oo = { .rows = o->rows, .limit = o->limit, .inverted = o->inverted };
	struct pass *ps = r->keep;
	FILE *out = stdout;
	int err;

	if (o->output) {
		out = report_open_output(o->output);
		if (!out) {
			fprintf(stderr, PROG ": %s: %s\n", o->output, strerror(errno));
			return 1;
		}
	}
	if (o->vmstate)
		err = out_vmstate(out, r->prof, ps->vms, o->rows);
	else if (o->annotate)
		err = out_annotate(out, r->prof, ps->ann, o->rows);
	else if (o->by_line)
		err = out_by_line(out, r->prof, ps->ann, o->rows);
	else
		err = o->format->write(out, r->prof, &oo);
	return report_close_output(out, o->output, PROG, err);
}

int report_close_output(FILE *out, const char *path, const char *who, int err)
{
	if (err)
		fprintf(stderr, "%s: %s\n", who, strerror(-err));
	/* A full disk shows only here; a report silently cut is a lie. */
	if ((fflush(out) || ferror(out)) && !err) {
		fprintf(stderr, "%s: %s: write error: %s\n", who,
			path ? path : "standard output", strerror(errno));
		err = -EIO;
	}
	if (out != stdout && fclose(out) && !err) {
		fprintf(stderr, "%s: %s: write error: %s\n", who, path, strerror(errno));
		err = -EIO;
	}
	return err ? 1 : 0;
}

int cmd_report(int argc, char **argv)
{
	struct opts o = { 0 };
	struct profile prof = { 0 };
	struct procs procs = { 0 };
	struct run r = { .o = &o.load, .prof = &prof, .procs = &procs };
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
	r.vmstate = o.vmstate;
	r.annotate = o.annotate || o.by_line;
	ret = load_all(&r, o.traces, o.ntraces);
	if (!ret)
		ret = write_output(&o, &r);
cleanup:
	pass_free(r.keep);
	profile_free(&prof);
	procs_free(&procs);
	free(r.roots);
	free(o.load.pids);
	free(o.load.tids);
	return ret;
}

void profile_free(struct profile *p)
{
	for (size_t i = 0; i < p->ntraces; i++)
		free(p->traces[i].cmdline);
	free(p->traces);
	free(p->samples_v);
	frameinfo_free(&p->infos);
	strtab_free(&p->names);
	seqtab_free(&p->stacks);
	free(p->counts);
	memset(p, 0, sizeof(*p));
}

uint64_t profile_sample_ns(const struct profile *p, uint32_t t)
{
	uint32_t hz = t < p->ntraces ? p->traces[t].rate_hz : 0;

	return hz ? 1000000000ull / hz : 10000000ull; /* 99 Hz, say, if unknown */
}

void profile_header(FILE *out, const struct profile *p, const char *title)
{
	const struct procs *t = p->procs;
	uint64_t taken = p->samples + p->lost;
	size_t listed = 0;

	fprintf(out, "# luaprof report: %s\n", title);
	if (p->ntraces > 1) {
		fprintf(out, "# traces (merged):");
		for (size_t i = 0; i < p->ntraces; i++)
			fprintf(out, "%s %s", i ? "," : "", p->traces[i].path);
		fprintf(out, "%s\n", p->complete ? "" : " (cut short: no footer)");
	} else {
		fprintf(out, "# trace: %s%s\n", p->trace,
			p->complete ? "" : " (cut short: no footer)");
	}
	fprintf(out, "# samples: %" PRIu64, p->shown);
	if (p->shown != p->samples)
		fprintf(out, " shown of %" PRIu64 " read", p->samples);
	fprintf(out, ", lost: %" PRIu64, p->lost);
	if (p->lost)
		fprintf(out, " (%.2f%%)", 100.0 * p->lost / taken);
	fprintf(out, "\n# duration: %.3f s (first to last sample%s)\n", p->span_ns / 1e9,
		p->ntraces > 1 ? ", each trace's added up" : "");
	fprintf(out, "# processes: %zu", t->len);
	for (size_t i = 0; i < t->len && listed < 8; i++, listed++)
		fprintf(out, "%s%" PRIu32 " %s", i ? ", " : " (",
			t->v[i].pid, t->v[i].comm && t->v[i].comm[0] ?
			t->v[i].comm : "?");
	if (t->len > listed)
		fprintf(out, ", %zu more", t->len - listed);
	fprintf(out, "%s\n#\n", t->len ? ")" : "");
}

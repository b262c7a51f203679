/*
 * report.c - `luaprof report`: its options, the single streaming pass
 * over the trace, the warnings about the trace's health, and the header
 * block the text formats open with.
 *
 * The pass replays the trace in stream order because that is the only
 * order in which it is true: a sample's user addresses mean what the
 * mappings recorded *before* it say, and stack ids are defined before use.
 * Nothing per sample is kept; samples are counted into stacks.c's tables
 * as they come, so a trace of any length reports in bounded memory.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "format/trace.h"
#include "report/annotate.h"
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

enum format { FMT_TOP, FMT_FOLDED, FMT_CALLGRAPH };

struct opts {
	enum format format;
	const char *output;
	uint32_t *pids, *tids;
	size_t npids, ntids, cappids, captids;
	unsigned rows;
	int rows_set; /* -n given: --annotate's default is smaller */
	double limit;
	int comm;
	int lines;
	int vmstate;
	int annotate; /* --annotate */
	int by_line;  /* --by line */
	const char *symfs;
	const char *trace;
};

struct run {
	const struct opts *o;
	struct profile prof;
	struct procs procs;
	struct maps *maps;
	struct symbolizer *sym;
	struct objects *objs;
	struct frames *fr;
	struct stacks *st;
	struct lua *lua;
	struct vmstate *vms;
	struct luasrc *src;   /* --annotate, --by line: the Lua sources */
	struct annotate *ann;
	uint32_t *roots; /* --comm root name per procs entry */
	size_t nroots, caproots;
	uint64_t lost, missing;
	struct lp_footer footer;
	int footer_seen;
};

static const char usage_line[] =
	"usage: luaprof report [--format top|folded|callgraph] [-o FILE] "
	"[--pid PID[,PID...]] [--tid TID[,TID...]] [-n N] "
	"[--percent-limit P] [--comm] [--lines] [--vmstate | --annotate | --by line] "
	"[--symfs DIR] TRACE\n";

static void help(void)
{
	fputs(usage_line, stdout);
	fputs("\n"
	      "Prints where the samples of a luaprof trace went.\n"
	      "\n"
	      "  --format top        the costliest functions, by self and by total (default)\n"
	      "  --format folded     one line per distinct stack, \"root;...;leaf COUNT\",\n"
	      "                      sorted; the input of flame graph tools\n"
	      "  --format callgraph  a caller-to-callee tree with total and self shares\n"
	      "  -o, --output FILE   write to FILE instead of standard output\n"
	      "  --pid PID[,PID...]  only samples of these processes (repeatable)\n"
	      "  --tid TID[,TID...]  only samples of these threads (repeatable)\n"
	      "  -n, --rows N        top: rows per table (default 20, 0 = all)\n"
	      "  --percent-limit P   callgraph: hide nodes under P% of the samples\n"
	      "                      (default 0.5)\n"
	      "  --comm              folded, callgraph: put the process name above\n"
	      "                      each stack as its root frame\n"
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
	      "be read further and, as the root, where the native stack could not\n"
	      "be followed to its outermost frame (counted in the header as\n"
	      "\"native stack cut\").  Time the VM spent outside Lua code ends a stack\n"
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
	      "Warnings about the trace (cut short, damaged, lost samples) go to\n"
	      "standard error.  Exit status: 0 ok, 1 unreadable trace or I/O error,\n"
	      "2 bad usage.\n",
	      stdout);
}

__attribute__((format(printf, 1, 2)))
static int misuse(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, PROG ": ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	fputs(usage_line, stderr);
	return 2;
}

static int id_cmp(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return x < y ? -1 : x > y;
}

/* Appends a comma-separated list of ids; 0, -EINVAL or -ENOMEM. */
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

static int has_id(const uint32_t *v, size_t n, uint32_t id)
{
	return bsearch(&id, v, n, sizeof(id), id_cmp) != NULL;
}

enum { OPT_FORMAT = 256, OPT_PID, OPT_TID, OPT_LIMIT, OPT_COMM, OPT_LINES, OPT_VMSTATE,
       OPT_SYMFS, OPT_ANNOTATE, OPT_BY };

/* 0 to run, 2 on misuse, -1 when --help was printed, -ENOMEM. */
static int parse_opts(int argc, char **argv, struct opts *o)
{
	static const struct option longopts[] = {
		{ "format", required_argument, NULL, OPT_FORMAT },
		{ "output", required_argument, NULL, 'o' },
		{ "pid", required_argument, NULL, OPT_PID },
		{ "tid", required_argument, NULL, OPT_TID },
		{ "rows", required_argument, NULL, 'n' },
		{ "percent-limit", required_argument, NULL, OPT_LIMIT },
		{ "comm", no_argument, NULL, OPT_COMM },
		{ "lines", no_argument, NULL, OPT_LINES },
		{ "vmstate", no_argument, NULL, OPT_VMSTATE },
		{ "annotate", no_argument, NULL, OPT_ANNOTATE },
		{ "by", required_argument, NULL, OPT_BY },
		{ "symfs", required_argument, NULL, OPT_SYMFS },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	unsigned long long rows;
	char *end;
	int c, err;

	o->format = FMT_TOP;
	o->rows = 20;
	o->limit = 0.5;
	optind = 0; /* glibc: start over, as a command may run twice */
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":o:n:h", longopts, NULL)) != -1) {
		switch (c) {
		case OPT_FORMAT:
			if (!strcmp(optarg, "top"))
				o->format = FMT_TOP;
			else if (!strcmp(optarg, "folded"))
				o->format = FMT_FOLDED;
			else if (!strcmp(optarg, "callgraph"))
				o->format = FMT_CALLGRAPH;
			else
				return misuse("unknown format '%s'", optarg);
			break;
		case 'o':
			o->output = optarg;
			break;
		case OPT_PID:
		case OPT_TID:
			err = c == OPT_PID ?
				parse_ids(optarg, &o->pids, &o->npids, &o->cappids) :
				parse_ids(optarg, &o->tids, &o->ntids, &o->captids);
			if (err == -EINVAL)
				return misuse("bad id list '%s'", optarg);
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
		case OPT_COMM:
			o->comm = 1;
			break;
		case OPT_VMSTATE:
			o->vmstate = 1;
			break;
		case OPT_LINES:
			o->lines = 1;
			break;
		case OPT_ANNOTATE:
			o->annotate = 1;
			break;
		case OPT_BY:
			if (strcmp(optarg, "line"))
				return misuse("unknown --by '%s' (only 'line')", optarg);
			o->by_line = 1;
			break;
		case OPT_SYMFS:
			o->symfs = optarg;
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
	if ((o->vmstate || o->annotate || o->by_line) && o->format != FMT_TOP)
		return misuse("--format does not apply to --vmstate, --annotate or --by line");
	if (o->annotate && !o->rows_set)
		o->rows = 10;
	if (argc - optind != 1)
		return misuse("%s", argc - optind ? "expected one TRACE, got more" :
			      "no TRACE given");
	o->trace = argv[optind];
	return 0;
}

/* The --comm root frame of a process entry, interned once. */
static int comm_root(struct run *r, const struct proc *p, uint32_t *id)
{
	size_t idx = p - r->procs.v;
	char buf[64];
	int err;

	err = GROW(r->roots, r->caproots, r->procs.len);
	if (err)
		return err;
	while (r->nroots < r->procs.len)
		r->roots[r->nroots++] = STACKS_NO_ROOT;
	if (r->roots[idx] == STACKS_NO_ROOT) {
		const char *name = p->comm;

		if (!name || !name[0]) {
			snprintf(buf, sizeof(buf), "[pid %" PRIu32 "]", p->pid);
			name = buf;
		}
		err = frames_name(r->fr, name, &r->roots[idx]);
		if (err)
			return err;
	}
	*id = r->roots[idx];
	return 0;
}

static int on_sample(struct run *r, const struct lp_sample *smp)
{
	const struct opts *o = r->o;
	uint32_t root = STACKS_NO_ROOT;
	struct proc *p;
	int err, missing;

	if (!r->prof.samples++ || smp->time_ns < r->prof.first_ns)
		r->prof.first_ns = smp->time_ns;
	if (smp->time_ns > r->prof.last_ns)
		r->prof.last_ns = smp->time_ns;
	err = procs_get(&r->procs, smp->pid, &p);
	if (err)
		return err;
	p->samples++;
	if ((o->npids && !has_id(o->pids, o->npids, smp->pid)) ||
	    (o->ntids && !has_id(o->tids, o->ntids, smp->tid)))
		return 0;
	if (o->comm && o->format != FMT_TOP) {
		err = comm_root(r, p, &root);
		if (err)
			return err;
	}
	err = stacks_add_sample(r->st, smp, root, &missing);
	r->missing += missing;
	if (smp->ustack && lp_ustop_cut(smp->ustop))
		r->prof.cut++;
	if (!err && o->vmstate)
		err = vmstate_add(r->vms, smp, smp->lstack ?
				  lua_find_stack(r->lua, smp->lstack) : UINT32_MAX);
	if (!err && r->ann)
		err = annotate_add(r->ann, smp, smp->lstack ?
				   lua_find_stack(r->lua, smp->lstack) : UINT32_MAX);
	return err;
}

static int on_record(struct run *r, const struct lp_record *rec)
{
	struct proc *p;
	int err;

	switch (rec->type) {
	case LP_REC_PROCESS:
		err = procs_add(&r->procs, &rec->u.process);
		if (err)
			return err;
		/* The entry may have been a placeholder named "[pid N]". */
		p = procs_find(&r->procs, rec->u.process.pid);
		if (p && (size_t)(p - r->procs.v) < r->nroots)
			r->roots[p - r->procs.v] = STACKS_NO_ROOT;
		if (rec->u.process.flags & LP_PROC_FORKED)
			return maps_fork(r->maps, rec->u.process.pid,
					 rec->u.process.ppid);
		return 0;
	case LP_REC_EXIT:
		maps_exit(r->maps, rec->u.exit.pid);
		return procs_exit(&r->procs, &rec->u.exit);
	case LP_REC_MAPS:
		return maps_apply(r->maps, &rec->u.maps);
	case LP_REC_STACK:
		return stacks_define(r->st, &rec->u.stack);
	case LP_REC_LUAJIT:
		return lua_add_luajit(r->lua, &rec->u.luajit);
	case LP_REC_PROTO:
		return lua_add_proto(r->lua, &rec->u.proto);
	case LP_REC_LUA_STACK:
		return lua_add_stack(r->lua, &rec->u.lua_stack);
	case LP_REC_TRACE:
		return lua_add_trace(r->lua, &rec->u.trace);
	case LP_REC_LUA_SOURCE:
		return r->src ? luasrc_add(r->src, &rec->u.lua_source) : 0;
	case LP_REC_SAMPLE:
		return on_sample(r, &rec->u.sample);
	case LP_REC_LOST:
		r->lost += rec->u.lost.count;
		return 0;
	case LP_REC_KSYMS:
		return frames_add_ksyms(r->fr, &rec->u.ksyms);
	case LP_REC_OBJECT:
	case LP_REC_SYMTAB:
		return 0; /* read by objects_preload() */
	case LP_REC_FOOTER:
		r->footer = rec->u.footer;
		r->footer_seen = 1;
		return 0;
	default:
		return 0; /* meta, and types a later version may add */
	}
}

static void warn_health(struct run *r, const struct trace_reader_stats *st)
{
	uint64_t taken = r->prof.samples + r->prof.lost;

	if (!st->footer_seen)
		fprintf(stderr,
			PROG ": warning: trace was cut short: %" PRIu64
			" samples recovered from %" PRIu64 " chunks\n",
			r->prof.samples, st->chunks);
	if (st->bad_chunks)
		fprintf(stderr,
			PROG ": warning: %" PRIu64 " damaged chunks skipped (%"
			PRIu64 " bytes); their samples are missing\n",
			st->bad_chunks, st->garbage_bytes);
	if (st->bad_records)
		fprintf(stderr,
			PROG ": warning: %" PRIu64 " records did not decode and were skipped\n",
			st->bad_records);
	if (st->retired_records)
		fprintf(stderr,
			PROG ": warning: the trace embeds DWARF as an older luaprof did, "
			"which is no longer read: native frames have no source lines\n");
	if (r->prof.lost)
		fprintf(stderr,
			PROG ": warning: %" PRIu64 " samples were lost while recording (%.2f%% of %"
			PRIu64 ")\n",
			r->prof.lost, 100.0 * r->prof.lost / taken, taken);
	if (r->missing)
		fprintf(stderr,
			PROG ": warning: %" PRIu64 " samples name a stack that was never defined; "
			"their frames print as [missing stack]\n",
			r->missing);
	if (!r->prof.shown)
		fprintf(stderr, PROG ": warning: no samples to report%s\n",
			r->prof.samples ? " (none matched --pid/--tid)" : "");
}

static int write_output(struct run *r)
{
	const struct opts *o = r->o;
	FILE *out = stdout;
	int err;

	if (o->output) {
		out = fopen(o->output, "w");
		if (!out) {
			fprintf(stderr, PROG ": %s: %s\n", o->output, strerror(errno));
			return 1;
		}
	}
	if (o->vmstate)
		err = out_vmstate(out, &r->prof, r->vms, o->rows);
	else if (o->annotate)
		err = out_annotate(out, &r->prof, r->ann, o->rows);
	else if (o->by_line)
		err = out_by_line(out, &r->prof, r->ann, o->rows);
	else if (o->format == FMT_FOLDED)
		err = out_folded(out, &r->prof);
	else if (o->format == FMT_CALLGRAPH)
		err = out_callgraph(out, &r->prof, o->limit);
	else
		err = out_top(out, &r->prof, o->rows);
	if (err)
		fprintf(stderr, PROG ": %s\n", strerror(-err));
	/* A full disk shows only here; a report silently cut is a lie. */
	if ((fflush(out) || ferror(out)) && !err) {
		fprintf(stderr, PROG ": %s: write error: %s\n",
			o->output ? o->output : "standard output", strerror(errno));
		err = -EIO;
	}
	if (out != stdout && fclose(out) && !err) {
		fprintf(stderr, PROG ": %s: write error: %s\n", o->output,
			strerror(errno));
		err = -EIO;
	}
	return err ? 1 : 0;
}

int cmd_report(int argc, char **argv)
{
	struct trace_reader_stats st;
	struct trace_reader *reader = NULL;
	struct opts o = { 0 };
	struct run r = { .o = &o };
	struct lp_record rec;
	char errbuf[256] = "";
	int ret, err;

	ret = parse_opts(argc, argv, &o);
	if (ret) {
		if (ret == -ENOMEM)
			fprintf(stderr, PROG ": %s\n", strerror(ENOMEM));
		ret = ret == -1 ? 0 : ret == 2 ? 2 : 1;
		goto cleanup;
	}
	ret = 1;
	err = trace_reader_open(&reader, o.trace, errbuf, sizeof(errbuf));
	if (err) {
		fprintf(stderr, PROG ": %s: %s\n", o.trace,
			errbuf[0] ? errbuf : strerror(-err));
		goto cleanup;
	}
	r.prof.trace = o.trace;
	r.prof.procs = &r.procs;
	err = maps_new(&r.maps);
	if (!err)
		err = symbolizer_new(&r.sym, PROG);
	if (!err)
		err = objects_new(&r.objs, r.sym, o.symfs, PROG);
	/* Symbol tables come after the samples that hit them: read them
	 * first, in a pass of their own. */
	if (!err)
		err = objects_preload(r.objs, o.trace);
	if (!err)
		err = frames_new(&r.fr, &r.prof.names, r.maps, r.sym);
	if (!err) {
		frames_set_objects(r.fr, r.objs);
		frames_set_lines(r.fr, o.lines);
	}
	if (!err)
		err = lua_new(&r.lua, r.fr, o.lines);
	if (!err && o.vmstate)
		err = vmstate_new(&r.vms, r.lua);
	if (!err && (o.annotate || o.by_line))
		err = luasrc_new(&r.src) ?: annotate_new(&r.ann, r.lua, r.src);
	if (!err)
		err = stacks_new(&r.st, r.fr, r.maps, r.lua);
	while (!err && (err = trace_reader_next(reader, &rec)) == 1)
		err = on_record(&r, &rec);
	if (err < 0) {
		fprintf(stderr, PROG ": %s: %s\n", o.trace, strerror(-err));
		goto cleanup;
	}
	trace_reader_get_stats(reader, &st);
	/* The footer counts what the recorder knew it lost; LOST records
	 * may be missing from a damaged trace, the footer from a cut one. */
	r.prof.lost = r.lost;
	if (r.footer_seen && r.footer.lost > r.prof.lost)
		r.prof.lost = r.footer.lost;
	r.prof.complete = st.footer_seen;
	err = stacks_finish(r.st, &r.prof);
	if (err) {
		fprintf(stderr, PROG ": %s\n", strerror(-err));
		goto cleanup;
	}
	warn_health(&r, &st);
	ret = write_output(&r);
cleanup:
	if (reader)
		trace_reader_close(reader);
	stacks_free(r.st);
	vmstate_free(r.vms);
	annotate_free(r.ann);
	luasrc_free(r.src);
	lua_free(r.lua);
	frames_free(r.fr);
	objects_free(r.objs);
	symbolizer_free(r.sym);
	maps_free(r.maps);
	procs_free(&r.procs);
	strtab_free(&r.prof.names);
	seqtab_free(&r.prof.stacks);
	free(r.prof.counts);
	free(r.roots);
	free(o.pids);
	free(o.tids);
	return ret;
}

void profile_header(FILE *out, const struct profile *p, const char *title)
{
	const struct procs *t = p->procs;
	uint64_t taken = p->samples + p->lost;
	size_t listed = 0;

	fprintf(out, "# luaprof report: %s\n", title);
	fprintf(out, "# trace: %s%s\n", p->trace,
		p->complete ? "" : " (cut short: no footer)");
	fprintf(out, "# samples: %" PRIu64, p->shown);
	if (p->shown != p->samples)
		fprintf(out, " shown of %" PRIu64 " read", p->samples);
	fprintf(out, ", lost: %" PRIu64, p->lost);
	if (p->lost)
		fprintf(out, " (%.2f%%)", 100.0 * p->lost / taken);
	if (p->cut)
		fprintf(out, ", native stack cut: %" PRIu64 " (%.2f%%, [truncated])",
			p->cut, p->shown ? 100.0 * p->cut / p->shown : 0.0);
	fprintf(out, "\n# duration: %.3f s (first to last sample)\n",
		p->samples ? (p->last_ns - p->first_ns) / 1e9 : 0.0);
	fprintf(out, "# processes: %zu", t->len);
	for (size_t i = 0; i < t->len && listed < 8; i++, listed++)
		fprintf(out, "%s%" PRIu32 " %s", i ? ", " : " (",
			t->v[i].pid, t->v[i].comm && t->v[i].comm[0] ?
			t->v[i].comm : "?");
	if (t->len > listed)
		fprintf(out, ", %zu more", t->len - listed);
	fprintf(out, "%s\n#\n", t->len ? ")" : "");
}

/*
 * diff.c - `luaprof diff BASE NEW`: what changed between two profiles,
 * e.g. before and after an upgrade.
 *
 * Both traces are read as `report` reads them (report_load()), each into
 * a profile of its own, and compared by frame name, the only thing two
 * recordings share (ids, addresses and pids differ).  Counts are made
 * comparable first: as a share of each profile's samples (what fraction
 * of the CPU went where), or with --per-second as samples per second of
 * each profile's duration (how much CPU, when the two ran as long under
 * different loads).  Heap snapshots (`luaprof heap`) compare in bytes as
 * they are: a snapshot has no duration, and a leak is bytes that grew.
 *
 *   top         functions whose self or total share changed, sorted by
 *               the size of the change in self (where the CPU went), then
 *               in total; self and total in both, and the differences
 *   folded      "root;...;leaf BASE NEW" per distinct stack: the input of
 *               differential flame graph tools (difffolded's output)
 *   flamegraph  NEW drawn as a flame graph, each frame coloured by the
 *               change of its share from BASE: red grew, blue shrank
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "report/formats.h"
#include "report/report.h"

#define PROG "luaprof diff"

enum diff_format { DIFF_TOP, DIFF_FOLDED, DIFF_FLAMEGRAPH };

struct dopts {
	enum diff_format format;
	const char *output;
	struct load_opts load;
	unsigned rows;
	int per_second;
	int kind_set; /* --kind given */
	char *base, *new;
};

static void usage_line(FILE *f)
{
	fputs("usage: luaprof diff [--format top|folded|flamegraph] [-o FILE] [-n N] "
	      "[--per-second] [--pid PID[,PID...]] [--tid TID[,TID...]] [--from S] [--to S] "
	      "[--kind KIND] "
	      "[--lines] [--no-demangle] [--symfs DIR] BASE NEW\n", f);
}

static void help(void)
{
	usage_line(stdout);
	fputs("\n"
	      "Compares two luaprof traces, BASE and NEW: which functions take a\n"
	      "larger or smaller share of the samples.\n"
	      "\n"
	      "  --format top        functions whose share changed, by the size of the\n"
	      "                      change in self, then in total: self and total in\n"
	      "                      both traces and the differences (default)\n"
	      "  --format folded     \"root;...;leaf BASE_COUNT NEW_COUNT\" per distinct\n"
	      "                      stack, sorted: differential flame graph input\n"
	      "  --format flamegraph NEW as an SVG flame graph (-o FILE.svg), frames\n"
	      "                      coloured by their change of share: red grew,\n"
	      "                      blue shrank\n"
	      "  -o, --output FILE   write to FILE instead of standard output\n"
	      "  -n, --rows N        top: rows (default 20, 0 = all)\n"
	      "  --per-second        compare samples per second of each trace's\n"
	      "                      duration, not shares of its samples (top,\n"
	      "                      flamegraph)\n"
	      "  --pid, --tid, --from, --to, --kind, --lines, --no-demangle, --symfs\n"
	      "                      as for `luaprof report`, applied to both traces\n"
	      "  -h, --help          print this help and exit\n"
	      "\n"
	      "Exit status: 0 ok, 1 unreadable trace or I/O error, 2 bad usage.\n",
	      stdout);
}

#define misuse(...) report_misuse(PROG, usage_line, __VA_ARGS__)

enum { OPT_FORMAT = 256, OPT_PER_SECOND };

/* 0 to run, 2 on misuse, -1 after --help, -ENOMEM. */
static int parse_opts(int argc, char **argv, struct dopts *o)
{
	static const struct option longopts[] = {
		{ "format", required_argument, NULL, OPT_FORMAT },
		{ "output", required_argument, NULL, 'o' },
		{ "rows", required_argument, NULL, 'n' },
		{ "per-second", no_argument, NULL, OPT_PER_SECOND },
		LOAD_OPTIONS,
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct load_opts *lo = &o->load;
	const char *why;
	int c, err;

	o->rows = 20;
	lo->who = PROG;
	lo->from_ns = lo->to_ns = -1;
	lo->kind = LP_KIND_CPU;
	optind = 0;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":o:n:h", longopts, NULL)) != -1) {
		switch (c) {
		case OPT_FORMAT:
			if (!strcmp(optarg, "top"))
				o->format = DIFF_TOP;
			else if (!strcmp(optarg, "folded"))
				o->format = DIFF_FOLDED;
			else if (!strcmp(optarg, "flamegraph"))
				o->format = DIFF_FLAMEGRAPH;
			else
				return misuse("unknown format '%s'", optarg);
			break;
		case 'o':
			o->output = optarg;
			break;
		case 'n':
			if (report_parse_rows(optarg, &o->rows))
				return misuse("bad row count '%s'", optarg);
			break;
		case OPT_PER_SECOND:
			o->per_second = 1;
			break;
		case LOAD_OPT_PID ... LOAD_OPT_SYMFS:
			o->kind_set |= c == LOAD_OPT_KIND;
			err = report_load_opt(lo, c, optarg, &why);
			if (err == -EINVAL)
				return misuse("%s '%s'", why, optarg);
			if (err)
				return err;
			break;
		case 'h':
			help();
			return -1;
		case ':':
			return misuse("option '%s' needs an argument", argv[optind - 1]);
		default:
			return misuse("unknown option '%s'", argv[optind - 1]);
		}
	}
	if (report_load_check(lo, &why))
		return misuse("%s", why);
	if (argc - optind != 2)
		return misuse("expected two traces, BASE and NEW, got %d", argc - optind);
	lo->infos = o->format == DIFF_FLAMEGRAPH;
	o->base = argv[optind];
	o->new = argv[optind + 1];
	return 0;
}

/* ---- top: functions by change ----------------------------------------- */

struct fn {
	const char *name;
	double self[2], total[2]; /* [0] base, [1] new, normalised */
};

struct fns {
	struct strtab names; /* the union of both profiles' function names */
	struct fn *v;
	size_t cap;
};

/* Adds profile `side`'s self and total per function, scaled by `unit`. */
static int add_side(struct fns *f, const struct profile *p, int side, double unit)
{
	uint32_t *seen = calloc(p->names.len ? p->names.len : 1, sizeof(*seen));
	uint32_t *fid = malloc((p->names.len ? p->names.len : 1) * sizeof(*fid));
	int err = 0;

	if (!seen || !fid) {
		err = -ENOMEM;
		goto cleanup;
	}
	for (size_t i = 0; i < p->names.len && !err; i++) {
		const char *s = strtab_get(&p->names, i);
		size_t before = f->names.len;

		err = strtab_intern(&f->names, s, strlen(s), &fid[i]);
		if (!err)
			err = GROW(f->v, f->cap, f->names.len);
		if (!err && f->names.len > before)
			f->v[fid[i]] = (struct fn){ .name = strtab_get(&f->names, fid[i]) };
	}
	for (size_t s = 0; s < p->stacks.len && !err; s++) {
		double c = p->counts[s] * unit;
		const uint32_t *v;
		uint32_t n;

		v = seqtab_get(&p->stacks, s, &n);
		if (!p->counts[s] || !n)
			continue;
		f->v[fid[v[n - 1]]].self[side] += c;
		for (uint32_t i = 0; i < n; i++) {
			if (seen[v[i]] == s + 1)
				continue; /* recursion: once per sample */
			seen[v[i]] = s + 1;
			f->v[fid[v[i]]].total[side] += c;
		}
	}
cleanup:
	free(seen);
	free(fid);
	return err;
}

static int fn_cmp(const void *a, const void *b)
{
	const struct fn *x = a, *y = b;
	double dx = fabs(x->self[1] - x->self[0]), dy = fabs(y->self[1] - y->self[0]);

	if (dx != dy)
		return dx > dy ? -1 : 1;
	dx = fabs(x->total[1] - x->total[0]);
	dy = fabs(y->total[1] - y->total[0]);
	if (dx != dy)
		return dx > dy ? -1 : 1;
	return strcmp(x->name, y->name);
}

/* Heap snapshots compare in bytes: a snapshot has no duration, and a
 * leak shows as bytes that grew, which shares would hide. */
static int absolute(const struct profile *p)
{
	return p->kind == LP_KIND_HEAP;
}

/* 100% of the samples, per second of the duration, or as counted. */
static double unit_of(const struct profile *p, int per_second)
{
	if (absolute(p))
		return 1;
	if (per_second)
		return p->span_ns ? 1e9 / p->span_ns : 0;
	return p->shown ? 100.0 / p->shown : 0;
}

static void side_line(FILE *out, const char *what, const char *path, const struct profile *p)
{
	fprintf(out, "# %s: %s: %" PRIu64 " %s in %.3f s\n", what, path, p->shown, profile_unit(p),
		p->span_ns / 1e9);
}

static int write_top(FILE *out, const struct dopts *o, const struct profile *b,
		     const struct profile *n)
{
	struct fns f = { 0 };
	size_t k = 0, shown = 0;
	int err;

	err = add_side(&f, b, 0, unit_of(b, o->per_second)) ?:
	      add_side(&f, n, 1, unit_of(n, o->per_second));
	if (err)
		goto cleanup;
	/* Keep the functions that changed. */
	for (size_t i = 0; i < f.names.len; i++)
		if (f.v[i].self[0] != f.v[i].self[1] || f.v[i].total[0] != f.v[i].total[1])
			f.v[k++] = f.v[i];
	if (k) /* f.v is NULL when no function changed: qsort(NULL) is UB */
		qsort(f.v, k, sizeof(*f.v), fn_cmp);
	fprintf(out, "# luaprof diff: %s -> %s\n", o->base, o->new);
	side_line(out, "base", o->base, b);
	side_line(out, "new ", o->new, n);
	fprintf(out, "# %s; sorted by the change in self, then in total\n#\n",
		absolute(n) ? "bytes in each snapshot" :
		o->per_second ? "samples per second of each trace's duration" :
				"percent of each trace's samples");
	fprintf(out, absolute(n) ? "#%31s  %35s\n" : "#%25s  %29s\n", absolute(n) ? "self bytes" : o->per_second ? "self/s" :
		"self %", absolute(n) ? "total bytes" : o->per_second ? "total/s" : "total %");
	if (absolute(n))
		fprintf(out, "#%10s %10s %10s  %11s %11s %11s  %s\n", "base", "new", "change",
			"base", "new", "change", "function");
	else
		fprintf(out, "#%8s %8s %8s  %9s %9s %9s  %s\n", "base", "new", "change", "base",
			"new", "change", "function");
	for (size_t i = 0; i < k && (!o->rows || i < o->rows); i++, shown++) {
		const struct fn *x = &f.v[i];

		fprintf(out, absolute(n) ? " %10.0f %10.0f %+10.0f  %11.0f %11.0f %+11.0f  %s\n" :
			" %8.2f %8.2f %+8.2f  %9.2f %9.2f %+9.2f  %s\n", x->self[0],
			x->self[1], x->self[1] - x->self[0], x->total[0], x->total[1],
			x->total[1] - x->total[0], x->name);
	}
	if (k > shown)
		fprintf(out, "# ... %zu more\n", k - shown);
cleanup:
	strtab_free(&f.names);
	free(f.v);
	return err;
}

/* ---- folded: stack BASE NEW ------------------------------------------- */

struct fline {
	char *text;
	uint64_t count[2];
};

static int fline_cmp(const void *a, const void *b)
{
	return strcmp(((const struct fline *)a)->text, ((const struct fline *)b)->text);
}

static int write_folded(FILE *out, const struct profile *b, const struct profile *n)
{
	const struct profile *side[2] = { b, n };
	struct fline *v = NULL;
	size_t k = 0, cap = 0;
	int err = 0;

	for (int s = 0; s < 2 && !err; s++) {
		for (size_t i = 0; i < side[s]->stacks.len && !err; i++) {
			if (!side[s]->counts[i])
				continue;
			err = GROW(v, cap, k + 1);
			if (err)
				break;
			v[k] = (struct fline){ .text = folded_stack(side[s], i) };
			if (!v[k].text) {
				err = -ENOMEM;
				break;
			}
			v[k++].count[s] = side[s]->counts[i];
		}
	}
	if (!err && k) { /* v is NULL without a stack: qsort(NULL) is UB */
		qsort(v, k, sizeof(*v), fline_cmp);
		for (size_t i = 0; i < k; i++) {
			uint64_t c0 = v[i].count[0], c1 = v[i].count[1];

			while (i + 1 < k && !strcmp(v[i].text, v[i + 1].text)) {
				c0 += v[i + 1].count[0];
				c1 += v[++i].count[1];
			}
			fprintf(out, "%s %" PRIu64 " %" PRIu64 "\n", v[i].text, c0, c1);
		}
	}
	for (size_t i = 0; i < k; i++)
		free(v[i].text);
	free(v);
	return err;
}

/* ---- the command ------------------------------------------------------ */

static int write_diff(const struct dopts *o, const struct profile *b, const struct profile *n)
{
	char title[1024];
	struct out_opts oo = { .base = b, .per_second = o->per_second, .title = title };
	FILE *out = stdout;
	int err;

	if (o->output) {
		out = report_open_output(o->output, PROG);
		if (!out)
			return 1;
	}
	snprintf(title, sizeof(title), "luaprof diff: %s \xe2\x86\x92 %s", o->base, o->new);
	if (o->format == DIFF_FOLDED)
		err = write_folded(out, b, n);
	else if (o->format == DIFF_FLAMEGRAPH)
		err = out_flamegraph(out, n, &oo);
	else
		err = write_top(out, o, b, n);
	return report_close_output(out, o->output, PROG, err);
}

int cmd_diff(int argc, char **argv)
{
	struct dopts o = { 0 };
	struct profile b = { 0 }, n = { 0 };
	struct procs bp = { 0 }, np = { 0 };
	int ret;

	ret = parse_opts(argc, argv, &o);
	if (ret) {
		if (ret == -ENOMEM)
			fprintf(stderr, PROG ": %s\n", strerror(ENOMEM));
		ret = ret == -1 ? 0 : ret == 2 ? 2 : 1;
		goto cleanup;
	}
	if (!o.kind_set && report_only_heap(&o.base, 1) && report_only_heap(&o.new, 1))
		o.load.kind = LP_KIND_HEAP;
	ret = report_load(&o.load, &o.base, 1, &b, &bp, NULL) ?:
	      report_load(&o.load, &o.new, 1, &n, &np, NULL);
	if (!ret)
		ret = write_diff(&o, &b, &n);
cleanup:
	profile_free(&b);
	profile_free(&n);
	procs_free(&bp);
	procs_free(&np);
	free(o.load.pids);
	free(o.load.tids);
	return ret;
}

/*
 * out_flamegraph.c - `--format flamegraph`: a self-contained interactive
 * SVG flame graph, written from the profile alone (no Perl, no network:
 * the script that zooms and searches, report/flamegraph.js, is inside).
 *
 * Stacks are merged into a tree from the root ("all") up; siblings are in
 * name order, as flamegraph.pl draws them, so one trace always gives the
 * same picture.  Frame widths are samples.  A frame narrower than MIN_PX
 * at full width is not drawn one by one: a parent's narrow children are
 * drawn as one grey "[N frames]" block after the others (if that block is
 * wide enough), so a profile of millions of samples stays a few thousand
 * elements and opens fast, and no width is lost.
 *
 * Colours say what a frame is (frameinfo.h): Lua functions green,
 * builtins aqua, native code yellow, kernel orange, the VM's own
 * states (GC, JIT compiler) purple, markers grey; the shade comes from a
 * hash of the name, so a function keeps its colour across graphs.  For a
 * diff (o->base) the colour is instead the frame's change in share of
 * samples from BASE: red grew, blue shrank, white unchanged.
 *
 * Layout (y grows down):
 *
 *   +----------------------------------------------------------+
 *   | title (command line)                             legend  |  TOP_H
 *   | pids, duration, rate, samples     [Reset Zoom]  [Search] |
 *   +----------------------------------------------------------+
 *   |            frames, FRAME_H each; root at the bottom,     |
 *   |            or at the top with --inverted (an icicle)     |
 *   +----------------------------------------------------------+
 *   | details of the frame under the mouse       Matched: P%   |  BOTTOM_H
 *   +----------------------------------------------------------+
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "lib/escape.h"
#include "report/count.h"
#include "report/formats.h"
#include "lib/grow.h"

#define WIDTH 1200
#define XPAD 10
#define FRAME_H 16
#define FONT_PX 12
#define CHAR_W 7.0     /* a Verdana character at FONT_PX, about */
#define MIN_PX 0.1     /* narrower frames are merged */
#define TOP_H 60
#define BOTTOM_H 30
#define ROOT UINT32_MAX /* the name of the root, "all" */

static const char script[] =
#include "report/flamegraph_js.h"
	;

struct fnode {
	uint32_t name, parent;
	uint32_t kids, nkids; /* range in the tree's kids[] */
	uint64_t total;
	uint32_t depth;
	uint32_t base;        /* the same path in the base tree, or NONE */
};

struct ftree {
	const struct profile *p;
	struct fnode *v;
	size_t n, cap;
	uint32_t *kids;
	uint32_t maxdepth;
};

#define NONE UINT32_MAX

/* A new child of parent: add_stacks() takes stacks sorted, so past the
 * frames a stack shares with the one before, every node is new (those
 * that share a path are next to each other) and none is looked up. */
static int tree_child(struct ftree *t, uint32_t parent, uint32_t name, uint32_t *out)
{
	int err;

	if (t->n >= UINT32_MAX - 2)
		return -ENOMEM;
	err = GROW(t->v, t->cap, t->n + 1);
	if (err)
		return err;
	t->v[t->n] = (struct fnode){ .name = name, .parent = parent,
				     .depth = t->v[parent].depth + 1, .base = NONE };
	if (t->v[t->n].depth > t->maxdepth)
		t->maxdepth = t->v[t->n].depth;
	*out = t->n++;
	return 0;
}

static const char *node_name(const struct ftree *t, uint32_t i)
{
	return t->v[i].name == ROOT ? "all" : strtab_get(&t->p->names, t->v[i].name);
}

static int kid_cmp(const void *a, const void *b, void *arg)
{
	const struct ftree *t = arg;

	return strcmp(node_name(t, *(const uint32_t *)a), node_name(t, *(const uint32_t *)b));
}

/* Adds p's stacks to the tree, in frame order: each shares most of its
 * path with the one before, whose nodes it takes without a lookup. */
static int add_stacks(struct ftree *t, const struct profile *p)
{
	uint32_t *order, *path = NULL, nprev = 0;
	const uint32_t *prev = NULL;
	size_t norder = 0, cappath = 0;
	int err = 0;

	order = seqtab_sorted_counted(&p->stacks, p->counts, &norder);
	if (!order)
		return -ENOMEM;
	for (size_t k = 0; k < norder && !err; k++) {
		uint64_t c = p->counts[order[k]];
		const uint32_t *v;
		uint32_t n, node = 0, i = 0;

		v = seqtab_get(&p->stacks, order[k], &n);
		err = GROW(path, cappath, n + 1);
		t->v[0].total = count_add(t->v[0].total, c);
		for (; !err && i < n && i < nprev && v[i] == prev[i]; i++) {
			node = path[i];
			t->v[node].total = count_add(t->v[node].total, c);
		}
		for (; !err && i < n; i++) {
			err = tree_child(t, node, v[i], &node);
			if (!err) {
				path[i] = node;
				t->v[node].total = count_add(t->v[node].total, c);
			}
		}
		prev = v;
		nprev = n;
	}
	free(path);
	free(order);
	return err;
}

/* Builds the tree of p's stacks and each node's children, by name. */
static int tree_build(struct ftree *t, const struct profile *p)
{
	size_t *fill;
	int err;

	t->p = p;
	err = GROW(t->v, t->cap, 1);
	if (err)
		return err;
	t->v[0] = (struct fnode){ .name = ROOT, .parent = NONE, .base = NONE };
	t->n = 1;
	err = add_stacks(t, p);
	if (err)
		return err;
	t->kids = malloc(t->n * sizeof(*t->kids));
	fill = calloc(t->n + 1, sizeof(*fill));
	if (!t->kids || !fill) {
		free(fill);
		return -ENOMEM;
	}
	for (size_t i = 1; i < t->n; i++)
		t->v[t->v[i].parent].nkids++;
	for (size_t i = 0, at = 0; i < t->n; i++) {
		t->v[i].kids = at;
		at += t->v[i].nkids;
	}
	for (size_t i = 1; i < t->n; i++) {
		struct fnode *pa = &t->v[t->v[i].parent];

		t->kids[pa->kids + fill[t->v[i].parent]++] = i;
	}
	free(fill);
	for (size_t i = 0; i < t->n; i++)
		if (t->v[i].nkids > 1)
			qsort_r(t->kids + t->v[i].kids, t->v[i].nkids, sizeof(*t->kids),
				kid_cmp, t);
	return 0;
}

static void tree_free(struct ftree *t)
{
	free(t->v);
	free(t->kids);
}

/* Finds each node's path in the base tree (diff colours), by name:
 * parents come before their children in t->v. */
static void tree_match(struct ftree *t, const struct ftree *b)
{
	t->v[0].base = 0;
	for (size_t i = 1; i < t->n; i++) {
		uint32_t pb = t->v[t->v[i].parent].base;
		const char *name = node_name(t, i);
		size_t lo, hi;

		if (pb == NONE)
			continue;
		lo = b->v[pb].kids;
		hi = lo + b->v[pb].nkids;
		while (lo < hi) {
			size_t mid = lo + (hi - lo) / 2;
			int c = strcmp(node_name(b, b->kids[mid]), name);

			if (!c) {
				t->v[i].base = b->kids[mid];
				break;
			}
			if (c < 0)
				lo = mid + 1;
			else
				hi = mid;
		}
	}
}

/* ---- drawing ---------------------------------------------------------- */

struct draw {
	FILE *out;
	const struct profile *p;
	const struct out_opts *o;
	const struct ftree *t, *b; /* b: the base tree of a diff, or NULL */
	double scale;              /* pixels per sample */
	uint64_t minw;             /* narrower: merged */
	double maxdelta;           /* diff: the largest change in share */
	int height;
	uint64_t drawn;
	const char *unit;          /* what widths count: profile_unit() */
	size_t unit_len;           /* (short: a kind's `shown`) */
};

static uint32_t name_hash(const char *s)
{
	uint32_t h = 2166136261u;

	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 16777619u;
	return h;
}

/* A diff's measure of node i of tree t: its share of t's samples, or
 * with --per-second its samples per second of t's profile. */
static double measure(const struct draw *d, const struct ftree *t, uint32_t i)
{
	if (i == NONE)
		return 0;
	if (d->o->per_second)
		return t->p->span_ns ? t->v[i].total * 1e9 / t->p->span_ns : 0;
	return t->v[0].total ? 100.0 * t->v[i].total / t->v[0].total : 0;
}

static double share_change(const struct draw *d, uint32_t i)
{
	return measure(d, d->t, i) - measure(d, d->b, d->t->v[i].base);
}

/* printf's "%.2f" of x, without printf (most of the SVG's cost): the
 * value in hundredths, rounded to nearest, is exact unless x * 100 lies
 * within a hair of a half, where printf's own rounding of the exact
 * binary value decides; those, and what is negative or huge, go to it. */
static size_t fmt_2f(char *out, size_t len, double x)
{
	double v = x * 100.0, f;
	uint64_t r;
	char buf[32];
	int n = sizeof(buf);

	if (!(x >= 0 && x < 1e12) || signbit(x))
		return (size_t)snprintf(out, len, "%.2f", x);
	f = v - floor(v);
	if (fabs(f - 0.5) < 1e-6)
		return (size_t)snprintf(out, len, "%.2f", x);
	r = (uint64_t)floor(v + 0.5);
	buf[--n] = (char)('0' + r % 10);
	buf[--n] = (char)('0' + r / 10 % 10);
	buf[--n] = '.';
	r /= 100;
	do {
		buf[--n] = (char)('0' + r % 10);
		r /= 10;
	} while (r);
	if ((size_t)(sizeof(buf) - n) >= len)
		return (size_t)snprintf(out, len, "%.2f", x);
	memcpy(out, buf + n, sizeof(buf) - n);
	out[sizeof(buf) - n] = '\0';
	return sizeof(buf) - n;
}

#define APPEND(buf, k, lit) (memcpy((buf) + (k), (lit), sizeof(lit) - 1), \
				 (k) += sizeof(lit) - 1)

/* printf's "%d" / "%llu" of x, without printf. */
static size_t fmt_int(char *out, int64_t x)
{
	char buf[24];
	int n = sizeof(buf), neg = x < 0;
	uint64_t u = neg ? 0 - (uint64_t)x : (uint64_t)x;

	do {
		buf[--n] = (char)('0' + u % 10);
		u /= 10;
	} while (u);
	if (neg)
		buf[--n] = '-';
	memcpy(out, buf + n, sizeof(buf) - n);
	out[sizeof(buf) - n] = '\0';
	return sizeof(buf) - n;
}

/* "rgb(r,g,b)", as snprintf would write it. */
static void rgb(char *buf, int r, int g, int b)
{
	size_t k = 0;

	APPEND(buf, k, "rgb(");
	k += fmt_int(buf + k, r);
	buf[k++] = ',';
	k += fmt_int(buf + k, g);
	buf[k++] = ',';
	k += fmt_int(buf + k, b);
	buf[k++] = ')';
	buf[k] = '\0';
}

/* The fill of node i, or of a block of merged frames above it. */
static void colour(const struct draw *d, uint32_t i, int merged, char *buf, size_t len)
{
	const struct fnode *n = &d->t->v[i];
	uint32_t h, kind = FRAME_OTHER;
	double v1, v2;

	if (d->b && !merged) {
		double a = d->maxdelta > 0 ? share_change(d, i) / d->maxdelta : 0;
		int c = 255 - (int)(fabs(a) * 200 + 0.5);

		if (a >= 0)
			snprintf(buf, len, "rgb(255,%d,%d)", c, c);
		else
			snprintf(buf, len, "rgb(%d,%d,255)", c, c);
		return;
	}
	if (merged || n->name == ROOT) {
		snprintf(buf, len, merged ? "rgb(215,215,215)" : "rgb(200,200,200)");
		return;
	}
	kind = frameinfo_get(&d->p->infos, n->name).kind;
	h = name_hash(node_name(d->t, i));
	v1 = (h & 0xffff) / 65535.0;
	v2 = (h >> 16) / 65535.0;
	switch (kind) {
	case FRAME_LUA:
		rgb(buf, 60 + (int)(60 * v1), 180 + (int)(55 * v2),
			 60 + (int)(40 * v1));
		break;
	case FRAME_BUILTIN:
		rgb(buf, 70 + (int)(50 * v1), 195 + (int)(40 * v2),
			 195 + (int)(40 * v2));
		break;
	case FRAME_NATIVE:
		rgb(buf, 195 + (int)(50 * v1), 175 + (int)(60 * v1),
			 40 + (int)(40 * v2));
		break;
	case FRAME_KERNEL:
		rgb(buf, 230 + (int)(25 * v1), 120 + (int)(50 * v2),
			 20 + (int)(30 * v1));
		break;
	case FRAME_VM:
		rgb(buf, 150 + (int)(40 * v1), 110 + (int)(40 * v2),
			 220 + (int)(35 * v1));
		break;
	default:
		rgb(buf, 170 + (int)(30 * v1), 170 + (int)(30 * v1),
			 170 + (int)(30 * v1));
	}
}

/* The label of a frame w pixels wide: as much of name as fits, cut at a
 * character with "..", as flamegraph.js cuts it when zooming. */
static void label(FILE *out, const char *name, double w)
{
	long room = (long)((w - 6) / CHAR_W), n = 0;
	const unsigned char *s = (const unsigned char *)name;
	char buf[1024];
	size_t k = 0;

	if (room < 3)
		return;
	for (const unsigned char *q = s; *q; n++)
		q += utf8_seq(q) ? utf8_seq(q) : 1;
	if (n <= room) {
		xml_escape(out, name);
		return;
	}
	for (long c = 0; c < room - 2 && *s && k + 4 < sizeof(buf); c++) {
		int len = utf8_seq(s) ? utf8_seq(s) : 1;

		memcpy(buf + k, s, len);
		k += len;
		s += len;
	}
	buf[k] = '\0';
	xml_escape(out, buf);
	fputs("..", out);
}

static void frame(struct draw *d, uint32_t i, uint64_t x, uint64_t width,
		  uint32_t depth, const char *name, uint32_t nmerged)
{
	double px = XPAD + x * d->scale, pw = width * d->scale;
	double share = d->t->v[0].total ? 100.0 * width / d->t->v[0].total : 0;
	int y = d->o->inverted ? TOP_H + (int)depth * FRAME_H :
				 d->height - BOTTOM_H - ((int)depth + 1) * FRAME_H;
	char fill[48], line[512];
	size_t k;

	colour(d, i, nmerged != 0, fill, sizeof(fill));
	fputs("<g class=\"f\"><title>", d->out);
	if (nmerged)
		fprintf(d->out, "[%" PRIu32 " frames, each under %.1f px]", nmerged, MIN_PX);
	else
		xml_escape(d->out, name);
	k = 0;
	APPEND(line, k, " (");
	k += fmt_int(line + k, (int64_t)width);
	line[k++] = ' ';
	memcpy(line + k, d->unit, d->unit_len); /* "samples" */
	k += d->unit_len;
	APPEND(line, k, ", ");
	k += fmt_2f(line + k, 32, share);
	line[k++] = '%';
	fwrite(line, 1, k, d->out);
	if (d->b && !nmerged)
		fprintf(d->out, "; base %.2f%s, change %+.2f%s",
			measure(d, d->b, d->t->v[i].base), d->o->per_second ? "/s" : "%",
			share_change(d, i), d->o->per_second ? "/s" : "%");
	k = 0;
	APPEND(line, k, ")</title><rect x=\"");
	k += fmt_2f(line + k, 32, px);
	APPEND(line, k, "\" y=\"");
	k += fmt_int(line + k, y);
	APPEND(line, k, "\" width=\"");
	k += fmt_2f(line + k, 32, pw);
	APPEND(line, k, "\" height=\"");
	k += fmt_int(line + k, FRAME_H - 1);
	APPEND(line, k, "\" fill=\"");
	memcpy(line + k, fill, strlen(fill));
	k += strlen(fill);
	APPEND(line, k, "\" rx=\"2\" ry=\"2\"/><text x=\"");
	k += fmt_2f(line + k, 32, px + 3);
	APPEND(line, k, "\" y=\"");
	k += fmt_int(line + k, y + FRAME_H - 4);
	APPEND(line, k, "\">");
	fwrite(line, 1, k, d->out);
	if (nmerged) {
		char text[64];

		snprintf(text, sizeof(text), "[%" PRIu32 " frames]", nmerged);
		label(d->out, text, pw);
	} else {
		label(d->out, name, pw);
	}
	fputs("</text></g>\n", d->out);
	d->drawn++;
}

/* Draws the tree depth first, without recursion (stacks may be deep). */
static int draw_tree(struct draw *d)
{
	const struct ftree *t = d->t;
	struct item { uint32_t node; uint64_t x; } *stack;
	size_t top = 0;

	stack = malloc(t->n * sizeof(*stack));
	if (!stack)
		return -ENOMEM;
	stack[top++] = (struct item){ 0, 0 };
	while (top) {
		struct item it = stack[--top];
		const struct fnode *n = &t->v[it.node];
		uint64_t x = it.x, merged = 0;
		uint32_t nmerged = 0;

		frame(d, it.node, it.x, n->total, n->depth, node_name(t, it.node), 0);
		for (uint32_t k = 0; k < n->nkids; k++) {
			uint32_t c = t->kids[n->kids + k];

			if (t->v[c].total < d->minw) {
				merged = count_add(merged, t->v[c].total);
				nmerged++;
				continue;
			}
			stack[top++] = (struct item){ c, x };
			x = count_add(x, t->v[c].total);
		}
		if (nmerged && merged >= d->minw)
			frame(d, it.node, x, merged, n->depth + 1, "", nmerged);
	}
	free(stack);
	return 0;
}

static void max_delta(struct draw *d)
{
	for (size_t i = 0; i < d->t->n; i++) {
		double c = fabs(share_change(d, i));

		if (d->t->v[i].total >= d->minw && c > d->maxdelta)
			d->maxdelta = c;
	}
}

/* ---- the document ------------------------------------------------------ */

static void write_title(FILE *out, const struct profile *p, const struct out_opts *o)
{
	const struct procs *ps = p->procs;
	uint64_t rate = p->ntraces ? p->traces[0].rate_hz : 0;

	fprintf(out, "<text id=\"title\" x=\"%d\" y=\"24\">", XPAD);
	if (o->title) {
		xml_escape(out, o->title);
	} else {
		fputs("luaprof: ", out);
		for (size_t i = 0; i < p->ntraces; i++) {
			if (i)
				fputs(" + ", out);
			xml_escape(out, p->traces[i].cmdline && p->traces[i].cmdline[0] ?
				   p->traces[i].cmdline : p->traces[i].path);
		}
	}
	fprintf(out, "</text>\n<text id=\"subtitle\" x=\"%d\" y=\"44\">", XPAD);
	for (size_t i = 0; ps && i < ps->len && i < 4; i++) {
		fprintf(out, "%s%" PRIu32 " ", i ? ", " : "pid ", ps->v[i].pid);
		xml_escape(out, ps->v[i].comm && ps->v[i].comm[0] ? ps->v[i].comm : "?");
	}
	if (ps && ps->len > 4)
		fprintf(out, " and %zu more", ps->len - 4);
	fprintf(out, " \xc2\xb7 %.1f s", p->span_ns / 1e9);
	if (rate)
		fprintf(out, " at %" PRIu64 " Hz", rate);
	fprintf(out, " \xc2\xb7 %" PRIu64 " %s", p->shown, profile_unit(p));
	if (p->lost)
		fprintf(out, " (%" PRIu64 " lost)", p->lost);
	fputs("</text>\n", out);
}

struct swatch {
	const char *name, *fill;
};

static void write_legend(FILE *out, const struct out_opts *o)
{
	static const struct swatch kinds[] = {
		{ "Lua", "rgb(90,205,80)" },   { "builtin", "rgb(95,215,215)" },
		{ "native", "rgb(220,205,60)" }, { "kernel", "rgb(242,145,35)" },
		{ "VM", "rgb(170,130,237)" },
	}, diff[] = { { "grew", "rgb(255,55,55)" }, { "shrank", "rgb(55,55,255)" } };
	const struct swatch *v = o->base ? diff : kinds;
	size_t n = o->base ? 2 : 5;
	int x = WIDTH - XPAD - 90 * (int)n;

	for (size_t i = 0; i < n; i++, x += 90)
		fprintf(out, "<rect x=\"%d\" y=\"13\" width=\"12\" height=\"12\" fill=\"%s\"/>"
			"<text class=\"legend\" x=\"%d\" y=\"24\">%s</text>\n",
			x, v[i].fill, x + 16, v[i].name);
}

int out_flamegraph(FILE *out, const struct profile *p, const struct out_opts *o)
{
	struct ftree t = { 0 }, b = { 0 };
	struct draw d = { .out = out, .p = p, .o = o, .t = &t, .unit = profile_unit(p) };
	int err;

	d.unit_len = strlen(d.unit) < 16 ? strlen(d.unit) : 16;
	err = tree_build(&t, p);
	if (!err && o->base) {
		err = tree_build(&b, o->base);
		if (!err)
			tree_match(&t, &b);
		d.b = &b;
	}
	if (err)
		goto cleanup;
	d.scale = t.v[0].total ? (double)(WIDTH - 2 * XPAD) / t.v[0].total : 0;
	d.minw = (uint64_t)(MIN_PX / (d.scale ? d.scale : 1)) + 1;
	d.height = TOP_H + (t.maxdepth + 2) * FRAME_H + BOTTOM_H;
	if (d.b)
		max_delta(&d);
	fprintf(out, "<?xml version=\"1.0\" encoding=\"UTF-8\" standalone=\"no\"?>\n"
		"<svg version=\"1.1\" id=\"luaprof-flamegraph\" width=\"%d\" height=\"%d\" "
		"viewBox=\"0 0 %d %d\" xmlns=\"http://www.w3.org/2000/svg\" "
		"data-width=\"%d\" data-xpad=\"%d\" data-charw=\"%.1f\" data-inverted=\"%d\">\n",
		WIDTH, d.height, WIDTH, d.height, WIDTH, XPAD, CHAR_W, !!o->inverted);
	fprintf(out, "<style>\n"
		"text { font-family: Verdana, sans-serif; font-size: %dpx; fill: #000; }\n"
		"#title { font-size: 17px; }\n"
		"#unzoom, #search { cursor: pointer; fill: #1a5fb4; }\n"
		".hide { display: none; }\n"
		"g.f { cursor: pointer; }\n"
		"g.f:hover rect { stroke: #000; stroke-width: 0.5; }\n"
		"g.parent rect { opacity: 0.5; }\n"
		"</style>\n", FONT_PX);
	fprintf(out, "<rect x=\"0\" y=\"0\" width=\"%d\" height=\"%d\" fill=\"#f8f8f2\"/>\n",
		WIDTH, d.height);
	write_title(out, p, o);
	write_legend(out, o);
	fprintf(out, "<text id=\"unzoom\" class=\"hide\" x=\"%d\" y=\"44\" "
		"text-anchor=\"end\">Reset Zoom</text>\n"
		"<text id=\"search\" x=\"%d\" y=\"44\" text-anchor=\"end\">Search</text>\n"
		"<text id=\"details\" x=\"%d\" y=\"%d\"> </text>\n"
		"<text id=\"matched\" x=\"%d\" y=\"%d\" text-anchor=\"end\"> </text>\n",
		WIDTH - XPAD - 80, WIDTH - XPAD, XPAD, d.height - 10, WIDTH - XPAD, d.height - 10);
	fprintf(out, "<g id=\"frames\">\n");
	err = draw_tree(&d);
	fputs("</g>\n<script type=\"text/ecmascript\"><![CDATA[\n", out);
	fputs(script, out);
	fputs("]]></script>\n</svg>\n", out);
cleanup:
	tree_free(&t);
	tree_free(&b);
	return err;
}

/*
 * annotate.c - Lua samples by source line, and the two ways of printing
 * them (see annotate.h).
 *
 * While the trace streams, samples are only counted per (Lua stack,
 * process): a trace has few distinct stacks and many samples.  At the end
 * each distinct stack is walked once (lua_stack_lines()) and its count
 * goes to the lines its Lua frames were running: all of it to the
 * innermost frame's line as self, and once per sample to every distinct
 * line and function on the stack as total, so recursion is not counted
 * twice.
 *
 * A function is its chunk, first and last line, and embedded source:
 * the workers of a server each have their own prototypes of one function,
 * and they add up.  It is named as the stacks name it, from its callers'
 * call sites; when callers name it differently the name with the most
 * samples wins (ties: the first in byte order), so that output never
 * depends on hash order.  Everything printed is sorted on counts, then
 * names and lines: two reports of a trace are byte for byte the same.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "lib/escape.h"
#include "report/count.h"
#include "report/annotate.h"
#include "lib/htab.h"

#define MAX_FRAMES LP_STACK_MAX_DEPTH
#define NAME_MAX_LEN 128
#define BYLINE_TEXT_MAX 80 /* bytes of source shown per ranked line */

struct hist_ent {
	uint32_t idx, pid;
	uint64_t count;
};

struct fn_name {
	char name[NAME_MAX_LEN];
	uint64_t count;
};

struct fn_ent {
	const struct lp_proto *pt; /* the first met: the key's fields */
	uint64_t self, total, stamp;
	struct fn_name *names;
	size_t nnames, capnames;
	const char *name; /* the one shown, once chosen */
};

struct line_ent {
	uint32_t fn, line;
	uint64_t self, total, stamp;
};

struct annotate {
	struct lua *lua;
	const struct luasrc *src;
	struct hist_ent *hist;
	size_t nhist, caphist;
	struct htab hist_h;
	struct lua_line_frame *frames;
	struct fn_ent *fns;
	size_t nfns, capfns;
	struct htab fns_h;
	struct line_ent *lines;
	size_t nlines, caplines;
	struct htab lines_h;
	int built;
};

int annotate_new(struct annotate **out, struct lua *lua, const struct luasrc *src)
{
	struct annotate *a = calloc(1, sizeof(*a));

	if (!a)
		return -ENOMEM;
	a->frames = calloc(MAX_FRAMES, sizeof(*a->frames));
	if (!a->frames) {
		free(a);
		return -ENOMEM;
	}
	a->lua = lua;
	a->src = src;
	*out = a;
	return 0;
}

void annotate_free(struct annotate *a)
{
	if (!a)
		return;
	for (size_t i = 0; i < a->nfns; i++)
		free(a->fns[i].names);
	free(a->fns);
	free(a->lines);
	free(a->hist);
	free(a->frames);
	htab_free(&a->hist_h);
	htab_free(&a->fns_h);
	htab_free(&a->lines_h);
	free(a);
}

int annotate_add(struct annotate *a, const struct lp_sample *smp, uint32_t idx)
{
	uint64_t h = hash_mix(hash_u64(idx), smp->pid);
	struct htab_probe p;
	int64_t i;

	if (idx == UINT32_MAX)
		return 0; /* no Lua frames: in the percentages' base only */
	htab_probe_start(&a->hist_h, h, &p);
	while ((i = htab_probe_next(&a->hist_h, &p)) >= 0) {
		if (a->hist[i].idx == idx && a->hist[i].pid == smp->pid) {
			a->hist[i].count++;
			return 0;
		}
	}
	if (GROW(a->hist, a->caphist, a->nhist + 1) ||
	    htab_insert(&a->hist_h, h, a->nhist))
		return -ENOMEM;
	a->hist[a->nhist++] = (struct hist_ent){ idx, smp->pid, 1 };
	return 0;
}

static uint64_t fn_hash(const struct lp_proto *pt)
{
	uint64_t h = hash_bytes(pt->chunkname, strlen(pt->chunkname));

	return hash_mix(hash_mix(hash_mix(h, pt->firstline), pt->numline), pt->source);
}

static int same_fn(const struct lp_proto *x, const struct lp_proto *y)
{
	return x->firstline == y->firstline && x->numline == y->numline &&
	       x->source == y->source && !strcmp(x->chunkname, y->chunkname);
}

static int get_fn(struct annotate *a, const struct lp_proto *pt, uint32_t *out)
{
	uint64_t h = fn_hash(pt);
	struct htab_probe p;
	int64_t i;

	htab_probe_start(&a->fns_h, h, &p);
	while ((i = htab_probe_next(&a->fns_h, &p)) >= 0) {
		if (same_fn(a->fns[i].pt, pt)) {
			*out = (uint32_t)i;
			return 0;
		}
	}
	if (GROW(a->fns, a->capfns, a->nfns + 1) || htab_insert(&a->fns_h, h, a->nfns))
		return -ENOMEM;
	memset(&a->fns[a->nfns], 0, sizeof(a->fns[0]));
	a->fns[a->nfns].pt = pt;
	*out = (uint32_t)a->nfns++;
	return 0;
}

static int get_line(struct annotate *a, uint32_t fn, uint32_t line,
		    struct line_ent **out)
{
	uint64_t h = hash_mix(hash_u64(fn), line);
	struct htab_probe p;
	int64_t i;

	htab_probe_start(&a->lines_h, h, &p);
	while ((i = htab_probe_next(&a->lines_h, &p)) >= 0) {
		if (a->lines[i].fn == fn && a->lines[i].line == line) {
			*out = &a->lines[i];
			return 0;
		}
	}
	if (GROW(a->lines, a->caplines, a->nlines + 1) ||
	    htab_insert(&a->lines_h, h, a->nlines))
		return -ENOMEM;
	*out = &a->lines[a->nlines++];
	**out = (struct line_ent){ .fn = fn, .line = line };
	return 0;
}

static int note_name(struct fn_ent *f, const char *name, uint64_t count)
{
	for (size_t i = 0; i < f->nnames; i++) {
		if (!strcmp(f->names[i].name, name)) {
			f->names[i].count += count;
			return 0;
		}
	}
	if (GROW(f->names, f->capnames, f->nnames + 1))
		return -ENOMEM;
	snprintf(f->names[f->nnames].name, NAME_MAX_LEN, "%s", name);
	f->names[f->nnames++].count = count;
	return 0;
}

/* Spreads the counted stacks over functions and lines, once. */
static int build(struct annotate *a)
{
	if (a->built)
		return 0;
	a->built = 1;
	for (size_t h = 0; h < a->nhist; h++) {
		uint64_t c = a->hist[h].count, stamp = h + 1;
		uint32_t n = lua_stack_lines(a->lua, a->hist[h].pid, a->hist[h].idx,
					     a->frames, MAX_FRAMES);

		for (uint32_t i = 0; i < n; i++) {
			struct line_ent *le;
			struct fn_ent *f;
			uint32_t fn;

			if (get_fn(a, a->frames[i].pt, &fn) ||
			    get_line(a, fn, a->frames[i].line, &le))
				return -ENOMEM;
			f = &a->fns[fn];
			if (note_name(f, a->frames[i].name, c))
				return -ENOMEM;
			if (f->stamp != stamp) {
				f->stamp = stamp;
				f->total = count_add(f->total, c);
			}
			if (le->stamp != stamp) {
				le->stamp = stamp;
				le->total = count_add(le->total, c);
			}
			if (i == 0) {
				f->self += c;
				le->self += c;
			}
		}
	}
	for (size_t i = 0; i < a->nfns; i++) {
		struct fn_ent *f = &a->fns[i];
		const struct fn_name *best = &f->names[0];

		for (size_t j = 1; j < f->nnames; j++)
			if (f->names[j].count > best->count ||
			    (f->names[j].count == best->count &&
			     strcmp(f->names[j].name, best->name) < 0))
				best = &f->names[j];
		f->name = best->name;
	}
	return 0;
}

/* Ties in counts fall back on where the code is, then on its name. */
static int fn_where_cmp(const struct fn_ent *x, const struct fn_ent *y)
{
	int c = strcmp(x->pt->chunkname, y->pt->chunkname);

	if (c)
		return c;
	if (x->pt->firstline != y->pt->firstline)
		return x->pt->firstline < y->pt->firstline ? -1 : 1;
	if (x->pt->numline != y->pt->numline)
		return x->pt->numline < y->pt->numline ? -1 : 1;
	if (x->pt->source != y->pt->source)
		return x->pt->source < y->pt->source ? -1 : 1;
	return strcmp(x->name, y->name);
}

static int fn_cmp(const void *pa, const void *pb)
{
	const struct fn_ent *x = *(const struct fn_ent *const *)pa;
	const struct fn_ent *y = *(const struct fn_ent *const *)pb;

	if (x->self != y->self)
		return x->self < y->self ? 1 : -1;
	if (x->total != y->total)
		return x->total < y->total ? 1 : -1;
	return fn_where_cmp(x, y);
}

static const struct fn_ent *sort_fns_base;

static int line_cmp(const void *pa, const void *pb)
{
	const struct line_ent *x = *(const struct line_ent *const *)pa;
	const struct line_ent *y = *(const struct line_ent *const *)pb;
	int c;

	if (x->self != y->self)
		return x->self < y->self ? 1 : -1;
	if (x->total != y->total)
		return x->total < y->total ? 1 : -1;
	if (x->fn != y->fn) {
		c = fn_where_cmp(&sort_fns_base[x->fn], &sort_fns_base[y->fn]);
		if (c)
			return c;
	}
	return x->line < y->line ? -1 : x->line > y->line;
}

static int line_num_cmp(const void *pa, const void *pb)
{
	const struct line_ent *x = *(const struct line_ent *const *)pa;
	const struct line_ent *y = *(const struct line_ent *const *)pb;

	return x->line < y->line ? -1 : x->line > y->line;
}

/* Source text from the trace, made safe for a terminal: control bytes
 * but tabs print as '?' (escape.h).  trim: no leading blanks, and at most
 * BYLINE_TEXT_MAX bytes, cut between UTF-8 characters. */
static void put_text(FILE *out, const char *s, size_t len, int trim)
{
	size_t cut = len;

	if (trim) {
		while (len && (*s == ' ' || *s == '\t')) {
			s++;
			len--;
		}
		cut = len;
		if (cut > BYLINE_TEXT_MAX) {
			cut = BYLINE_TEXT_MAX;
			while (cut && ((unsigned char)s[cut] & 0xc0) == 0x80)
				cut--;
		}
	}
	for (size_t i = 0; i < cut;) {
		size_t k = s[i] == '\t' ? 0 : esc_control_len((const unsigned char *)s + i,
							       cut - i);

		if (!k) {
			fputc(s[i++], out);
			continue;
		}
		for (; k; k--, i++)
			fputc('?', out);
	}
	if (cut < len)
		fputs(" ...", out);
}

static void put_count(FILE *out, uint64_t n, uint64_t base)
{
	if (!n)
		fprintf(out, "%8s %7s", ".", ".");
	else
		fprintf(out, "%8" PRIu64 " %6.2f%%", n, base ? 100.0 * n / base : 0.0);
}

/* Line 0: samples in the function at no known line: in compiled code of
 * a trace that started in another function, or in the GC or the JIT
 * compiler entered from compiled code (a trace keeps no bytecode
 * position), or at a position the walk could not place. */
static const char line_unknown[] = "(line not known: compiled code or the VM "
				   "gave no bytecode position)";

static void put_row(FILE *out, const struct annotate *a, const struct fn_ent *f,
		    const struct line_ent *le, uint32_t line, uint64_t base)
{
	const char *text;
	size_t len;

	put_count(out, le ? le->self : 0, base);
	put_count(out, le ? le->total : 0, base);
	if (!line) {
		fprintf(out, " %6s  %s\n", "?", line_unknown);
		return;
	}
	fprintf(out, " %6" PRIu32 "  ", line);
	if (!luasrc_line(a->src, f->pt->source, line, &text, &len))
		put_text(out, text, len, 0);
	fputc('\n', out);
}

/* One function: its header, then its lines.  With its source, every line
 * of the function the source holds; lines with samples but no text (a
 * chunk not from a file, a file cut short) are listed alone. */
static int annotate_fn(FILE *out, const struct annotate *a, uint32_t fn,
		       const struct line_ent **lines, uint64_t base)
{
	const struct fn_ent *f = &a->fns[fn];
	const struct lp_proto *pt = f->pt;
	uint64_t last = (uint64_t)pt->firstline + pt->numline;
	uint32_t first = pt->firstline ? pt->firstline : 1, have;
	char chunk[LUA_CHUNK_LABEL_MAX];
	size_t n = 0, k = 0;

	for (size_t i = 0; i < a->nlines; i++)
		if (a->lines[i].fn == fn)
			lines[n++] = &a->lines[i];
	qsort(lines, n, sizeof(*lines), line_num_cmp);
	fprintf(out, "\n%s (", f->name);
	esc_fputs(lua_chunk_label(pt->chunkname, chunk, sizeof(chunk)), out);
	fprintf(out, ":%" PRIu32 "-%" PRIu64 "): self %" PRIu64 " (%.2f%%), "
		"total %" PRIu64 " (%.2f%%) of %" PRIu64 " samples\n",
		pt->firstline, last, f->self,
		base ? 100.0 * f->self / base : 0.0, f->total,
		base ? 100.0 * f->total / base : 0.0, base);
	have = luasrc_nlines(a->src, pt->source);
	if (last < have)
		have = (uint32_t)last;
	if (have < first)
		fprintf(out, "  (source not available: %s)\n",
			luasrc_why_not(a->src, pt->source));
	else if (have < last)
		fprintf(out, "  (source from line %" PRIu32 " not available: %s)\n",
			have + 1, luasrc_why_not(a->src, pt->source));
	fprintf(out, "%8s %7s %8s %7s %6s  %s\n", "self", "self%", "total", "total%",
		"line", "source");
	/* Lines the source holds, in order, merged with the sampled ones
	 * (which may lie past a cut text); samples at no known line (line
	 * 0, sorted first) come last, on a row of their own. */
	if (n && !lines[0]->line)
		k = 1;
	for (uint32_t line = first; line <= have; line++) {
		for (; k < n && lines[k]->line < line; k++)
			put_row(out, a, f, lines[k], lines[k]->line, base);
		put_row(out, a, f, k < n && lines[k]->line == line ? lines[k] : NULL,
			line, base);
		if (k < n && lines[k]->line == line)
			k++;
	}
	for (; k < n; k++)
		put_row(out, a, f, lines[k], lines[k]->line, base);
	if (n && !lines[0]->line)
		put_row(out, a, f, lines[0], 0, base);
	return 0;
}

static const char legend[] =
	"# self: samples with the line running in the innermost Lua function;\n"
	"# total: with the line running in any Lua function on the stack (its\n"
	"# calls included); % of all samples shown.\n";

int out_annotate(FILE *out, const struct profile *p, struct annotate *a,
		 unsigned nfuncs)
{
	const struct line_ent **lines = NULL;
	struct fn_ent **order = NULL;
	size_t shown = 0;
	int err = build(a);

	if (err)
		return err;
	order = malloc((a->nfns + 1) * sizeof(*order));
	lines = malloc((a->nlines + 1) * sizeof(*lines));
	if (!order || !lines) {
		err = -ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < a->nfns; i++)
		order[i] = &a->fns[i];
	qsort(order, a->nfns, sizeof(*order), fn_cmp);
	profile_header(out, p, "annotate");
	fprintf(out, "# The hottest Lua functions, line by line, from the source the\n"
		"# trace holds.\n");
	fputs(legend, out);
	if (!a->nfns)
		fprintf(out, "\n(no samples in Lua functions)\n");
	for (size_t i = 0; i < a->nfns && (!nfuncs || shown < nfuncs); i++, shown++)
		annotate_fn(out, a, (uint32_t)(order[i] - a->fns), lines, p->shown);
out:
	free(order);
	free(lines);
	return err;
}

int out_by_line(FILE *out, const struct profile *p, struct annotate *a,
		unsigned rows)
{
	const struct line_ent **order = NULL;
	int err = build(a);

	if (err)
		return err;
	order = malloc((a->nlines + 1) * sizeof(*order));
	if (!order)
		return -ENOMEM;
	for (size_t i = 0; i < a->nlines; i++)
		order[i] = &a->lines[i];
	sort_fns_base = a->fns;
	qsort(order, a->nlines, sizeof(*order), line_cmp);
	profile_header(out, p, "lines");
	fprintf(out, "# Lua source lines, by self samples.\n");
	fputs(legend, out);
	fprintf(out, "%8s %7s %8s %7s  %s\n", "self", "self%", "total", "total%",
		"line  function: source");
	for (size_t i = 0; i < a->nlines && (!rows || i < rows); i++) {
		const struct line_ent *le = order[i];
		const struct fn_ent *f = &a->fns[le->fn];
		char chunk[LUA_CHUNK_LABEL_MAX];
		const char *text;
		size_t len;

		put_count(out, le->self, p->shown);
		put_count(out, le->total, p->shown);
		fputs("  ", out);
		esc_fputs(lua_chunk_label(f->pt->chunkname, chunk, sizeof(chunk)), out);
		fputc(':', out);
		if (!le->line) {
			fprintf(out, "?  %s: %s\n", f->name, line_unknown);
			continue;
		}
		fprintf(out, "%" PRIu32 "  %s: ", le->line, f->name);
		if (!luasrc_line(a->src, f->pt->source, le->line, &text, &len))
			put_text(out, text, len, 1);
		else
			fprintf(out, "(source not available: %s)",
				luasrc_why_not(a->src, f->pt->source));
		fputc('\n', out);
	}
	if (!a->nlines)
		fprintf(out, "(no samples in Lua functions)\n");
	free(order);
	return 0;
}

/*
 * format_util.c - helpers shared by the format tests (see format_util.h).
 * They use only the public API of trace.h, so a round trip through them
 * tests the writer and the reader against each other, not against
 * themselves.
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tests/unit/format_util.h"
#include "tests/unit/unit.h"

const enum lp_codec fmt_codecs[3] = { LP_CODEC_NONE, LP_CODEC_LZ4,
				      LP_CODEC_ZLIB };

const char *fmt_tmp_path(const char *name)
{
	static char path[4][PATH_MAX];
	static int next;
	char *p = path[next++ % 4];

	snprintf(p, PATH_MAX, "%s/%s", unit_tmpdir(), name);
	return p;
}

int fmt_write_file(const char *path, const void *data, size_t n)
{
	FILE *f = fopen(path, "wb");
	int ok;

	if (!f)
		return -1;
	ok = fwrite(data, 1, n, f) == n;
	return fclose(f) == 0 && ok ? 0 : -1;
}

uint8_t *fmt_read_file(const char *path, size_t *n)
{
	struct stat st;
	uint8_t *data;
	FILE *f = fopen(path, "rb");

	if (!f || fstat(fileno(f), &st) < 0) {
		if (f)
			fclose(f);
		return NULL;
	}
	data = malloc((size_t)st.st_size + 1);
	*n = data ? fread(data, 1, (size_t)st.st_size, f) : 0;
	fclose(f);
	return data;
}

static int str_eq(const char *written, const char *read)
{
	return read && !strcmp(written ? written : "", read);
}

static int luajit_equal(const struct lp_luajit *a, const struct lp_luajit *b)
{
	if (a->pid != b->pid || a->G != b->G || a->vm_start != b->vm_start ||
	    a->vm_end != b->vm_end || a->flags != b->flags || a->nff != b->nff ||
	    !str_eq(a->name, b->name) || !str_eq(a->source, b->source) ||
	    !str_eq(a->build, b->build))
		return 0;
	for (uint32_t i = 0; i < a->nff; i++)
		if (!str_eq(a->ffnames[i], b->ffnames[i]))
			return 0;
	return 1;
}

static int proto_equal(const struct lp_proto *a, const struct lp_proto *b)
{
	if (a->id != b->id || a->addr != b->addr || !str_eq(a->chunkname, b->chunkname) ||
	    a->firstline != b->firstline || a->numline != b->numline ||
	    a->numparams != b->numparams || a->flags != b->flags || a->nbc != b->nbc ||
	    a->nkstr != b->nkstr || a->nuv != b->nuv || a->varinfo_len != b->varinfo_len ||
	    a->source != b->source)
		return 0;
	if (a->nbc && (memcmp(a->bc, b->bc, a->nbc * 4) || memcmp(a->lines, b->lines, a->nbc * 4)))
		return 0;
	for (uint32_t i = 0; i < a->nkstr; i++)
		if (a->kstr[i].index != b->kstr[i].index || !str_eq(a->kstr[i].str, b->kstr[i].str))
			return 0;
	for (uint32_t i = 0; i < a->nuv; i++)
		if (!str_eq(a->uvnames[i], b->uvnames[i]))
			return 0;
	return !a->varinfo_len || !memcmp(a->varinfo, b->varinfo, a->varinfo_len);
}

static int srclines_equal(const struct lp_srclines *a, const struct lp_srclines *b)
{
	if (a->object != b->object || a->flags != b->flags || a->nstr != b->nstr ||
	    a->nchain != b->nchain)
		return 0;
	for (uint32_t i = 0; i < a->nstr; i++)
		if (!str_eq(a->strs[i], b->strs[i]))
			return 0;
	for (uint32_t i = 0; i < a->nchain; i++)
		if (a->chains[i].vaddr != b->chains[i].vaddr ||
		    a->chains[i].nframe != b->chains[i].nframe ||
		    memcmp(a->chains[i].frames, b->chains[i].frames,
			   a->chains[i].nframe * sizeof(*a->chains[i].frames)))
			return 0;
	return 1;
}

static int lframe_equal(const struct lp_lframe *x, const struct lp_lframe *y)
{
	return x->kind == y->kind && x->link == y->link && x->value == y->value &&
	       x->pc == y->pc;
}

static int trace_snaps_equal(const struct lp_trace_snaps *a, const struct lp_trace_snaps *b)
{
	if (a->trace != b->trace || a->bcofs != b->bcofs || a->bcbase != b->bcbase ||
	    a->nsnap != b->nsnap)
		return 0;
	for (uint32_t i = 0; i < a->nsnap; i++) {
		if (a->snaps[i].mcofs != b->snaps[i].mcofs ||
		    a->snaps[i].nframe != b->snaps[i].nframe)
			return 0;
		for (uint32_t k = 0; k < a->snaps[i].nframe; k++)
			if (!lframe_equal(&a->snaps[i].frames[k], &b->snaps[i].frames[k]))
				return 0;
	}
	return 1;
}

static int meta_equal(const struct lp_meta *a, const struct lp_meta *b)
{
	return str_eq(a->version, b->version) && str_eq(a->cmdline, b->cmdline) &&
	       str_eq(a->target, b->target) && str_eq(a->hostname, b->hostname) &&
	       str_eq(a->kernel, b->kernel) && str_eq(a->clock, b->clock) &&
	       a->rate_hz == b->rate_hz && a->start_mono_ns == b->start_mono_ns &&
	       a->start_real_ns == b->start_real_ns && a->flags == b->flags;
}

static int process_equal(const struct lp_process *a, const struct lp_process *b)
{
	return a->pid == b->pid && a->ppid == b->ppid && a->time_ns == b->time_ns &&
	       a->flags == b->flags && str_eq(a->comm, b->comm) && str_eq(a->exe, b->exe);
}

static int exit_equal(const struct lp_exit *a, const struct lp_exit *b)
{
	return a->pid == b->pid && a->time_ns == b->time_ns;
}

static int maps_equal(const struct lp_maps *a, const struct lp_maps *b)
{
	if (a->pid != b->pid || a->time_ns != b->time_ns || a->flags != b->flags ||
	    a->count != b->count)
		return 0;
	for (uint32_t i = 0; i < a->count; i++) {
		const struct lp_mapping *x = &a->mappings[i], *y = &b->mappings[i];

		if (x->start != y->start || x->end != y->end || x->pgoff != y->pgoff ||
		    x->prot != y->prot || x->inode != y->inode || !str_eq(x->path, y->path) ||
		    x->object != y->object)
			return 0;
	}
	return 1;
}

static int stack_equal(const struct lp_stack *a, const struct lp_stack *b)
{
	return a->id == b->id && a->kind == b->kind && a->depth == b->depth &&
	       (!a->depth || !memcmp(a->addrs, b->addrs, a->depth * sizeof(uint64_t)));
}

/* Field by field: memcmp would compare padding, which a compound
 * literal need not zero (clang's does not). */
static int sample_equal(const struct lp_sample *x, const struct lp_sample *y)
{
	return x->time_ns == y->time_ns && x->pid == y->pid && x->tid == y->tid &&
	       x->cpu == y->cpu && x->kstack == y->kstack && x->ustack == y->ustack &&
	       x->flags == y->flags && x->lstack == y->lstack &&
	       x->vmstate == y->vmstate && x->lua_state == y->lua_state &&
	       x->ustop == y->ustop;
}

static int event_equal(const struct lp_event *x, const struct lp_event *y)
{
	return x->kind == y->kind && x->weight == y->weight && x->count == y->count &&
	       sample_equal(&x->s, &y->s);
}

static int lost_equal(const struct lp_lost *a, const struct lp_lost *b)
{
	return a->time_ns == b->time_ns && a->count == b->count && a->reason == b->reason;
}

static int ksyms_equal(const struct lp_ksyms *a, const struct lp_ksyms *b)
{
	if (a->count != b->count)
		return 0;
	for (uint32_t i = 0; i < a->count; i++)
		if (a->syms[i].addr != b->syms[i].addr ||
		    !str_eq(a->syms[i].name, b->syms[i].name))
			return 0;
	return 1;
}

static int footer_equal(const struct lp_footer *a, const struct lp_footer *b)
{
	return !memcmp(a, b, sizeof(*a));
}

static int puc_lua_equal(const struct lp_puc_lua *a, const struct lp_puc_lua *b)
{
	return a->pid == b->pid && str_eq(a->version, b->version) &&
	       str_eq(a->object, b->object);
}

static int object_equal(const struct lp_object *a, const struct lp_object *b)
{
	return a->id == b->id && str_eq(a->path, b->path) && a->id_kind == b->id_kind &&
	       a->ident_len == b->ident_len && a->size == b->size &&
	       (!a->ident_len || !memcmp(a->ident, b->ident, a->ident_len));
}

static int symtab_equal(const struct lp_symtab *a, const struct lp_symtab *b)
{
	if (a->object != b->object || a->nseg != b->nseg || a->nsym != b->nsym ||
	    (a->nseg && memcmp(a->segs, b->segs, a->nseg * sizeof(*a->segs))))
		return 0;
	for (uint32_t i = 0; i < a->nsym; i++)
		if (a->syms[i].addr != b->syms[i].addr || a->syms[i].size != b->syms[i].size ||
		    !str_eq(a->syms[i].name, b->syms[i].name))
			return 0;
	return 1;
}

static int trace_equal(const struct lp_trace *a, const struct lp_trace *b)
{
	return !memcmp(a, b, sizeof(*a));
}

static int lua_source_equal(const struct lp_lua_source *a, const struct lp_lua_source *b)
{
	return a->id == b->id && str_eq(a->chunkname, b->chunkname) &&
	       str_eq(a->path, b->path) && a->status == b->status && a->size == b->size &&
	       a->mtime_ns == b->mtime_ns && a->text_len == b->text_len &&
	       (!a->text_len || !memcmp(a->text, b->text, a->text_len)) &&
	       b->text[b->text_len] == '\0';
}

static int lua_stack_equal(const struct lp_lua_stack *a, const struct lp_lua_stack *b)
{
	if (a->id != b->id || a->depth != b->depth)
		return 0;
	for (uint32_t i = 0; i < a->depth; i++)
		if (!lframe_equal(&a->frames[i], &b->frames[i]))
			return 0;
	return 1;
}

static int name_equal(const struct lp_name *a, const struct lp_name *b)
{
	return a->id == b->id && str_eq(a->text, b->text);
}

/* One name_equal() per record type of LP_RECDEF; the retired and framing
 * types are never written by callers nor returned. */
int fmt_record_equal(const struct lp_record *a, const struct lp_record *b)
{
	if (a->type != b->type)
		return 0;
	switch (a->type) {
#define EQUAL(T, name, num, kind) \
	LP_REC_IF_BODY(kind, case LP_REC_##T: return name##_equal(&a->u.name, &b->u.name);)
	LP_RECDEF(EQUAL)
#undef EQUAL
	default:
		return 0;
	}
}

static void note_bounds(struct trace_writer *w, struct layout *l)
{
	struct trace_writer_stats st;

	trace_writer_get_stats(w, &st);
	if (l && (!l->nbounds || l->bounds[l->nbounds - 1] != st.file_bytes) &&
	    l->nbounds < ARRAY_SIZE(l->bounds))
		l->bounds[l->nbounds++] = st.file_bytes;
}

/* Writes recs, flushing after every flush_every records (0 = never). */
int fmt_write_trace(const char *path, enum lp_codec codec,
		    const struct lp_record *recs, size_t n, size_t flush_every,
		    const struct lp_footer *footer, struct layout *l,
		    struct trace_writer_stats *stats)
{
	struct trace_writer *w;
	size_t i;
	int err;

	unlink(path); /* the writer creates a new file only */
	err = trace_writer_open(&w, path, codec);
	if (err)
		return err;
	if (l)
		l->nbounds = 0;
	note_bounds(w, l);
	for (i = 0; i < n && !err; i++) {
		err = trace_write(w, &recs[i]);
		if (!err && flush_every && (i + 1) % flush_every == 0)
			err = trace_writer_flush(w);
		note_bounds(w, l);
	}
	if (stats)
		trace_writer_get_stats(w, stats);
	err = trace_writer_close(w, footer) ?: err;
	if (!err && l && l->nbounds < ARRAY_SIZE(l->bounds)) {
		struct stat st;

		if (stat(path, &st) == 0)
			l->bounds[l->nbounds++] = (uint64_t)st.st_size;
	}
	return err;
}

/* Reads path back; returns how many records matched exp, in order. */
size_t fmt_read_expect(const char *path, const struct lp_record *exp,
		       size_t n, struct lp_footer *footer,
		       struct trace_reader_stats *st)
{
	struct trace_reader *r;
	struct lp_record rec;
	char err[256];
	size_t i = 0;

	if (trace_reader_open(&r, path, err, sizeof(err)))
		return (size_t)-1;
	while (trace_reader_next(r, &rec) == 1) {
		if (rec.type == LP_REC_FOOTER) {
			*footer = rec.u.footer;
			continue;
		}
		if (i >= n || !fmt_record_equal(&exp[i], &rec))
			break;
		/* The body's size as the reader met it is the writer's. */
		if ((rec.type == LP_REC_SRCLINES &&
		     trace_reader_record_bytes(r) != lp_srclines_size(&rec.u.srclines)) ||
		    (rec.type == LP_REC_TRACE_SNAPS &&
		     trace_reader_record_bytes(r) != lp_trace_snaps_size(&rec.u.trace_snaps)))
			break;
		i++;
	}
	trace_reader_get_stats(r, st);
	trace_reader_close(r);
	return i;
}

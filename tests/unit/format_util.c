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

int fmt_record_equal(const struct lp_record *a, const struct lp_record *b)
{
	uint32_t i;

	if (a->type != b->type)
		return 0;
	switch (a->type) {
	case LP_REC_META:
		return str_eq(a->u.meta.version, b->u.meta.version) &&
		       str_eq(a->u.meta.cmdline, b->u.meta.cmdline) &&
		       str_eq(a->u.meta.target, b->u.meta.target) &&
		       str_eq(a->u.meta.hostname, b->u.meta.hostname) &&
		       str_eq(a->u.meta.kernel, b->u.meta.kernel) &&
		       str_eq(a->u.meta.clock, b->u.meta.clock) &&
		       a->u.meta.rate_hz == b->u.meta.rate_hz &&
		       a->u.meta.start_mono_ns == b->u.meta.start_mono_ns &&
		       a->u.meta.start_real_ns == b->u.meta.start_real_ns &&
		       a->u.meta.flags == b->u.meta.flags;
	case LP_REC_PROCESS:
		return a->u.process.pid == b->u.process.pid &&
		       a->u.process.ppid == b->u.process.ppid &&
		       a->u.process.time_ns == b->u.process.time_ns &&
		       a->u.process.flags == b->u.process.flags &&
		       str_eq(a->u.process.comm, b->u.process.comm) &&
		       str_eq(a->u.process.exe, b->u.process.exe);
	case LP_REC_EXIT:
		return a->u.exit.pid == b->u.exit.pid && a->u.exit.time_ns == b->u.exit.time_ns;
	case LP_REC_MAPS:
		if (a->u.maps.pid != b->u.maps.pid || a->u.maps.time_ns != b->u.maps.time_ns ||
		    a->u.maps.flags != b->u.maps.flags || a->u.maps.count != b->u.maps.count)
			return 0;
		for (i = 0; i < a->u.maps.count; i++) {
			const struct lp_mapping *x = &a->u.maps.mappings[i], *y = &b->u.maps.mappings[i];

			if (x->start != y->start || x->end != y->end || x->pgoff != y->pgoff ||
			    x->prot != y->prot || x->inode != y->inode || !str_eq(x->path, y->path) ||
			    x->object != y->object)
				return 0;
		}
		return 1;
	case LP_REC_STACK:
		return a->u.stack.id == b->u.stack.id && a->u.stack.kind == b->u.stack.kind &&
		       a->u.stack.depth == b->u.stack.depth &&
		       (!a->u.stack.depth || !memcmp(a->u.stack.addrs, b->u.stack.addrs,
						     a->u.stack.depth * sizeof(uint64_t)));
	/* Field by field: memcmp would compare padding, which a compound
	 * literal need not zero (clang's does not). */
	case LP_REC_SAMPLE: {
		const struct lp_sample *x = &a->u.sample, *y = &b->u.sample;

		return x->time_ns == y->time_ns && x->pid == y->pid && x->tid == y->tid &&
		       x->cpu == y->cpu && x->kstack == y->kstack && x->ustack == y->ustack &&
		       x->flags == y->flags && x->lstack == y->lstack &&
		       x->vmstate == y->vmstate && x->lua_state == y->lua_state;
	}
	case LP_REC_LOST:
		return a->u.lost.time_ns == b->u.lost.time_ns &&
		       a->u.lost.count == b->u.lost.count && a->u.lost.reason == b->u.lost.reason;
	case LP_REC_KSYMS:
		if (a->u.ksyms.count != b->u.ksyms.count)
			return 0;
		for (i = 0; i < a->u.ksyms.count; i++)
			if (a->u.ksyms.syms[i].addr != b->u.ksyms.syms[i].addr ||
			    !str_eq(a->u.ksyms.syms[i].name, b->u.ksyms.syms[i].name))
				return 0;
		return 1;
	case LP_REC_FOOTER:
		return !memcmp(&a->u.footer, &b->u.footer, sizeof(a->u.footer));
	case LP_REC_LUAJIT:
		return luajit_equal(&a->u.luajit, &b->u.luajit);
	case LP_REC_PUC_LUA:
		return a->u.puc_lua.pid == b->u.puc_lua.pid &&
		       str_eq(a->u.puc_lua.version, b->u.puc_lua.version) &&
		       str_eq(a->u.puc_lua.object, b->u.puc_lua.object);
	case LP_REC_PROTO:
		return proto_equal(&a->u.proto, &b->u.proto);
	case LP_REC_OBJECT:
		return a->u.object.id == b->u.object.id &&
		       str_eq(a->u.object.path, b->u.object.path) &&
		       a->u.object.id_kind == b->u.object.id_kind &&
		       a->u.object.ident_len == b->u.object.ident_len &&
		       a->u.object.size == b->u.object.size &&
		       (!a->u.object.ident_len ||
			!memcmp(a->u.object.ident, b->u.object.ident, a->u.object.ident_len));
	case LP_REC_SYMTAB:
		if (a->u.symtab.object != b->u.symtab.object ||
		    a->u.symtab.nseg != b->u.symtab.nseg || a->u.symtab.nsym != b->u.symtab.nsym ||
		    (a->u.symtab.nseg && memcmp(a->u.symtab.segs, b->u.symtab.segs,
						a->u.symtab.nseg * sizeof(*a->u.symtab.segs))))
			return 0;
		for (i = 0; i < a->u.symtab.nsym; i++)
			if (a->u.symtab.syms[i].addr != b->u.symtab.syms[i].addr ||
			    a->u.symtab.syms[i].size != b->u.symtab.syms[i].size ||
			    !str_eq(a->u.symtab.syms[i].name, b->u.symtab.syms[i].name))
				return 0;
		return 1;
	case LP_REC_TRACE:
		return !memcmp(&a->u.trace, &b->u.trace, sizeof(a->u.trace));
	case LP_REC_SRCLINES:
		return srclines_equal(&a->u.srclines, &b->u.srclines);
	case LP_REC_LUA_SOURCE:
		return a->u.lua_source.id == b->u.lua_source.id &&
		       str_eq(a->u.lua_source.chunkname, b->u.lua_source.chunkname) &&
		       str_eq(a->u.lua_source.path, b->u.lua_source.path) &&
		       a->u.lua_source.status == b->u.lua_source.status &&
		       a->u.lua_source.size == b->u.lua_source.size &&
		       a->u.lua_source.mtime_ns == b->u.lua_source.mtime_ns &&
		       a->u.lua_source.text_len == b->u.lua_source.text_len &&
		       (!a->u.lua_source.text_len ||
			!memcmp(a->u.lua_source.text, b->u.lua_source.text,
				a->u.lua_source.text_len)) &&
		       b->u.lua_source.text[b->u.lua_source.text_len] == '\0';
	case LP_REC_LUA_STACK:
		if (a->u.lua_stack.id != b->u.lua_stack.id ||
		    a->u.lua_stack.depth != b->u.lua_stack.depth)
			return 0;
		for (i = 0; i < a->u.lua_stack.depth; i++) {
			const struct lp_lframe *x = &a->u.lua_stack.frames[i];
			const struct lp_lframe *y = &b->u.lua_stack.frames[i];

			if (x->kind != y->kind || x->link != y->link ||
			    x->value != y->value || x->pc != y->pc)
				return 0;
		}
		return 1;
	case LP_REC_TRACE_SNAPS:
		return trace_snaps_equal(&a->u.trace_snaps, &b->u.trace_snaps);
	case LP_REC_DEBUG_RETIRED:
	case LP_REC_CHUNK:
	case LP_REC_STACK_BRANCH: /* read as LP_REC_STACK */
	case LP_REC_SAMPLE_US:    /* read as LP_REC_SAMPLE */
		break; /* never written by callers, never returned */
	}
	return 0;
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
		i++;
	}
	trace_reader_get_stats(r, st);
	trace_reader_close(r);
	return i;
}

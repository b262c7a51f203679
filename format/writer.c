/*
 * writer.c - turns decoded records into a trace file (format v1, see
 * trace.h and docs/format.md).  The writer owns the file descriptor and a
 * single chunk buffer; the recorder hands it records and a periodic flush.
 *
 * Everything on disk is append-only and self-contained per chunk, so a
 * recorder killed at any instant leaves a readable trace: the header is
 * written at open, and each chunk goes out with one write() of its header
 * and payload.  Records are encoded field by field through codec.c; no
 * struct is ever written raw, so the file does not depend on this
 * machine's padding or byte order.  The first I/O error is remembered and
 * returned by every later call, and the file is cut back to the last
 * complete chunk when the kernel lets us, so an out-of-space disk leaves a
 * clean (footer-less) trace instead of a torn chunk.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "format/codec.h"
#include "format/stacktree.h"
#include "format/trace.h"

/* The most frame paths the writer remembers to share stacks' root sides
 * (about 32 bytes each); stacks past it are still written, sharing less. */
#define WRITER_STACKTREE_NODES (1u << 18)

struct trace_writer {
	int fd;
	enum lp_codec codec;
	int error; /* first write error (-errno), returned ever after */
	/*
	 * The pending chunk: LP_CHUNK_HEADER_SIZE bytes reserved up front,
	 * then the raw payload.  Reserving the header lets an uncompressed
	 * chunk go out in one write() without copying.  packed holds the
	 * compressed form of the same chunk (header reserved likewise) and
	 * is only scratch space: it never holds a second pending chunk.
	 */
	struct lp_buf chunk;
	struct lp_buf packed;
	uint64_t prev_sample_time; /* of the last sample in this chunk */
	uint64_t samples, events, lost; /* for a footer the caller leaves to us */
	uint64_t chunk_samples;    /* samples in the pending chunk */
	uint64_t chunk_events;     /* events likewise */
	/* Stacks written so far, by their root sides, and how the stack
	 * being appended branches from one of them (stacktree.h). */
	struct lp_stacktree *stacks;
	struct lp_stack_branch branch;
	struct trace_writer_stats stats;
};

static size_t pending_raw(const struct trace_writer *w)
{
	return w->chunk.len - LP_CHUNK_HEADER_SIZE;
}

/* Writes all of buf, resuming after signals and short writes. */
static int write_full(int fd, const uint8_t *buf, size_t len)
{
	while (len) {
		ssize_t n = write(fd, buf, len);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (n == 0)
			return -EIO;
		buf += n;
		len -= (size_t)n;
	}
	return 0;
}

static void fail(struct trace_writer *w, int err)
{
	if (!w->error)
		w->error = err;
	/*
	 * A short write may have left part of a chunk behind.  Cutting the
	 * file back to the last complete chunk keeps the trace clean; on a
	 * device or a pipe this fails harmlessly and the reader's
	 * truncation handling covers it instead.
	 */
	if (ftruncate(w->fd, (off_t)w->stats.file_bytes) < 0) {
		/* Nothing better to do: the error is already recorded. */
	}
}

static void put_le32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
	p[2] = (uint8_t)(v >> 16);
	p[3] = (uint8_t)(v >> 24);
}

/* Compresses and writes the pending chunk, if any, and starts a new one. */
static int write_chunk(struct trace_writer *w)
{
	size_t raw = pending_raw(w), stored = raw, bound;
	enum lp_codec codec = LP_CODEC_NONE;
	uint8_t *out = w->chunk.data;
	uint64_t nsamples, nevents;
	uint32_t crc;
	int err;

	if (w->error)
		return w->error;
	if (!raw)
		return 0;

	bound = lp_compress_bound(w->codec, raw);
	if (w->codec != LP_CODEC_NONE && bound &&
	    !lp_buf_reserve(&w->packed, LP_CHUNK_HEADER_SIZE + bound) &&
	    !lp_compress(w->codec, w->chunk.data + LP_CHUNK_HEADER_SIZE, raw,
			 w->packed.data + LP_CHUNK_HEADER_SIZE, bound,
			 &stored) &&
	    stored < raw) {
		codec = w->codec;
		out = w->packed.data;
	} else {
		/* Incompressible data, or no memory to compress it: the
		 * codec is per chunk, so storing it as is stays valid. */
		stored = raw;
	}

	memcpy(out, LP_CHUNK_MAGIC, 4);
	out[4] = LP_CHUNK_RECORDS;
	out[5] = (uint8_t)codec;
	out[6] = out[7] = 0; /* flags */
	put_le32(out + 8, (uint32_t)raw);
	put_le32(out + 12, (uint32_t)stored);
	crc = lp_crc32(0, out + 4, 12);
	crc = lp_crc32(crc, out + LP_CHUNK_HEADER_SIZE, stored);
	put_le32(out + 16, crc);

	/* Whatever happens, this chunk's records are done with. */
	w->chunk.len = LP_CHUNK_HEADER_SIZE;
	w->prev_sample_time = 0;
	nsamples = w->chunk_samples;
	nevents = w->chunk_events;
	w->chunk_samples = w->chunk_events = 0;

	err = write_full(w->fd, out, LP_CHUNK_HEADER_SIZE + stored);
	if (err) {
		fail(w, err);
		return err;
	}
	w->stats.chunks++;
	w->stats.samples += nsamples;
	w->stats.events += nevents;
	w->stats.raw_bytes += raw;
	w->stats.file_bytes += LP_CHUNK_HEADER_SIZE + stored;
	return 0;
}

static int put_mapping(struct lp_buf *b, const struct lp_mapping *m)
{
	if (m->end < m->start)
		return -EINVAL;
	/* A size is shorter than an end address and never negative. */
	return lp_put_uv(b, m->start) ?: lp_put_uv(b, m->end - m->start) ?:
	       lp_put_uv(b, m->pgoff) ?: lp_put_uv(b, m->prot) ?:
	       lp_put_uv(b, m->inode) ?: lp_put_str(b, m->path);
}

static int put_stack(struct lp_buf *b, const struct lp_stack *s)
{
	uint64_t prev = 0;
	uint32_t i;
	int err;

	if (!s->id || s->depth > LP_STACK_MAX_DEPTH || (s->depth && !s->addrs))
		return -EINVAL;
	err = lp_put_uv(b, s->id) ?: lp_put_uv(b, s->kind) ?:
	      lp_put_uv(b, s->depth);
	for (i = 0; !err && i < s->depth; i++) {
		/* Neighbouring frames are close together, so after the first
		 * address the signed difference (mod 2^64) is short. */
		if (i == 0)
			err = lp_put_uv(b, s->addrs[0]);
		else
			err = lp_put_sv(b, (int64_t)(s->addrs[i] - prev));
		prev = s->addrs[i];
	}
	return err;
}

static int stack_valid(const struct lp_stack *s)
{
	return s->id && s->depth <= LP_STACK_MAX_DEPTH && (!s->depth || s->addrs);
}

/*
 * A stack as an earlier one's root side and its own frames (§3.5.1): the
 * new frames from the branch point toward the leaf, each a difference
 * from the one before, the first from the base's frame at its depth.
 */
static int put_stack_branch(struct lp_buf *b, const struct lp_stack *s,
			    const struct lp_stack_branch *br)
{
	uint64_t prev = br->pred;
	uint32_t i = s->depth - br->keep;
	int err;

	err = lp_put_uv(b, s->id) ?: lp_put_uv(b, s->kind) ?:
	      lp_put_uv(b, s->id - br->base) ?: lp_put_uv(b, br->keep) ?:
	      lp_put_uv(b, i);
	while (!err && i-- > 0) {
		err = lp_put_sv(b, (int64_t)(s->addrs[i] - prev));
		prev = s->addrs[i];
	}
	return err;
}

static int put_ksyms(struct lp_buf *b, const struct lp_ksyms *k)
{
	uint64_t prev = 0;
	uint32_t i;
	int err;

	if (k->count && !k->syms)
		return -EINVAL;
	err = lp_put_uv(b, k->count);
	for (i = 0; !err && i < k->count; i++) {
		if (k->syms[i].addr < prev)
			return -EINVAL; /* the delta coding needs ascending */
		err = lp_put_uv(b, k->syms[i].addr - prev) ?:
		      lp_put_str(b, k->syms[i].name);
		prev = k->syms[i].addr;
	}
	return err;
}

static int put_luajit(struct lp_buf *b, const struct lp_luajit *lj)
{
	uint32_t i;
	int err;

	if (lj->nff && !lj->ffnames)
		return -EINVAL;
	err = lp_put_uv(b, lj->pid) ?: lp_put_uv(b, lj->G) ?:
	      lp_put_uv(b, lj->vm_start) ?: lp_put_uv(b, lj->vm_end) ?:
	      lp_put_uv(b, lj->flags) ?: lp_put_str(b, lj->name) ?:
	      lp_put_str(b, lj->source) ?: lp_put_uv(b, lj->nff);
	for (i = 0; !err && i < lj->nff; i++)
		err = lp_put_str(b, lj->ffnames[i]);
	/* build was appended to the record later in v1's life (§3.10). */
	return err ?: lp_put_str(b, lj->build);
}

static int put_proto(struct lp_buf *b, const struct lp_proto *pt)
{
	uint32_t i, prev = pt->firstline;
	int err;

	if (!pt->id || (pt->nbc && (!pt->bc || !pt->lines)) ||
	    (pt->nkstr && !pt->kstr) || (pt->nuv && !pt->uvnames))
		return -EINVAL;
	err = lp_put_uv(b, pt->id) ?: lp_put_uv(b, pt->addr) ?:
	      lp_put_str(b, pt->chunkname) ?: lp_put_uv(b, pt->firstline) ?:
	      lp_put_uv(b, pt->numline) ?: lp_put_uv(b, pt->numparams) ?:
	      lp_put_uv(b, pt->flags) ?: lp_put_uv(b, pt->nbc);
	for (i = 0; !err && i < pt->nbc; i++)
		err = lp_put_u32(b, pt->bc[i]);
	/* Lines move by small steps: each is coded against the one before. */
	for (i = 0; !err && i < pt->nbc; i++) {
		err = lp_put_sv(b, (int64_t)pt->lines[i] - (int64_t)prev);
		prev = pt->lines[i];
	}
	if (!err)
		err = lp_put_uv(b, pt->nkstr);
	for (i = 0; !err && i < pt->nkstr; i++)
		err = lp_put_uv(b, pt->kstr[i].index) ?: lp_put_str(b, pt->kstr[i].str);
	if (!err)
		err = lp_put_uv(b, pt->nuv);
	for (i = 0; !err && i < pt->nuv; i++)
		err = lp_put_str(b, pt->uvnames[i]);
	/* source was appended to the record later in v1's life (§3.11). */
	return err ?: lp_put_uv(b, pt->varinfo_len) ?:
	       lp_put_bytes(b, pt->varinfo, pt->varinfo_len) ?:
	       lp_put_uv(b, pt->source);
}

static int put_lua_source(struct lp_buf *b, const struct lp_lua_source *ls)
{
	if (!ls->id || (ls->text_len && !ls->text))
		return -EINVAL;
	return lp_put_uv(b, ls->id) ?: lp_put_str(b, ls->chunkname) ?:
	       lp_put_str(b, ls->path) ?: lp_put_uv(b, ls->status) ?:
	       lp_put_uv(b, ls->size) ?: lp_put_uv(b, ls->mtime_ns) ?:
	       lp_put_uv(b, ls->text_len) ?: lp_put_bytes(b, ls->text, ls->text_len);
}

static int put_lua_stack(struct lp_buf *b, const struct lp_lua_stack *ls)
{
	uint32_t i;
	int err;

	if (!ls->id || ls->depth > LP_STACK_MAX_DEPTH || (ls->depth && !ls->frames))
		return -EINVAL;
	err = lp_put_uv(b, ls->id) ?: lp_put_uv(b, ls->depth);
	for (i = 0; !err && i < ls->depth; i++) {
		const struct lp_lframe *f = &ls->frames[i];

		err = lp_put_uv(b, f->kind) ?: lp_put_uv(b, f->value) ?:
		      lp_put_uv(b, f->pc) ?: lp_put_uv(b, f->link);
	}
	return err;
}

static int put_object(struct lp_buf *b, const struct lp_object *o)
{
	if (!o->id || o->ident_len > LP_OBJID_MAX || (o->ident_len && !o->ident))
		return -EINVAL;
	return lp_put_uv(b, o->id) ?: lp_put_str(b, o->path) ?:
	       lp_put_uv(b, o->id_kind) ?: lp_put_uv(b, o->ident_len) ?:
	       lp_put_bytes(b, o->ident, o->ident_len) ?: lp_put_uv(b, o->size);
}

static int put_symtab(struct lp_buf *b, const struct lp_symtab *st)
{
	uint64_t prev = 0;
	uint32_t i;
	int err;

	if (!st->object || (st->nseg && !st->segs) || (st->nsym && !st->syms))
		return -EINVAL;
	err = lp_put_uv(b, st->object) ?: lp_put_uv(b, st->nseg);
	for (i = 0; !err && i < st->nseg; i++)
		err = lp_put_uv(b, st->segs[i].offset) ?:
		      lp_put_uv(b, st->segs[i].filesz) ?:
		      lp_put_uv(b, st->segs[i].vaddr);
	err = err ?: lp_put_uv(b, st->nsym);
	for (i = 0; !err && i < st->nsym; i++) {
		if (st->syms[i].addr < prev)
			return -EINVAL; /* the delta coding needs ascending */
		err = lp_put_uv(b, st->syms[i].addr - prev) ?:
		      lp_put_uv(b, st->syms[i].size) ?:
		      lp_put_str(b, st->syms[i].name);
		prev = st->syms[i].addr;
	}
	return err;
}

/* Whether the writer can encode sl: the grammar's rules a reader checks. */
static int srclines_valid(const struct lp_srclines *sl)
{
	if (!sl->object || (sl->nstr && !sl->strs) || (sl->nchain && !sl->chains))
		return 0;
	for (uint32_t i = 0; i < sl->nchain; i++) {
		const struct lp_srcchain *c = &sl->chains[i];

		/* The delta coding needs ascending addresses, each once. */
		if (!c->nframe || c->nframe > LP_SRCLINES_MAX_FRAMES || !c->frames ||
		    (i && c->vaddr <= sl->chains[i - 1].vaddr))
			return 0;
		for (uint32_t k = 0; k < c->nframe; k++)
			if (c->frames[k].func > sl->nstr || c->frames[k].file > sl->nstr)
				return 0;
	}
	return 1;
}

static int put_srclines(struct lp_buf *b, const struct lp_srclines *sl)
{
	uint64_t prev = 0;
	int err;

	if (!srclines_valid(sl))
		return -EINVAL;
	err = lp_put_uv(b, sl->object) ?: lp_put_uv(b, sl->flags) ?:
	      lp_put_uv(b, sl->nstr);
	for (uint32_t i = 0; !err && i < sl->nstr; i++)
		err = lp_put_str(b, sl->strs[i]);
	err = err ?: lp_put_uv(b, sl->nchain);
	for (uint32_t i = 0; !err && i < sl->nchain; i++) {
		const struct lp_srcchain *c = &sl->chains[i];

		err = lp_put_uv(b, c->vaddr - prev) ?: lp_put_uv(b, c->nframe);
		for (uint32_t k = 0; !err && k < c->nframe; k++)
			err = lp_put_uv(b, c->frames[k].func) ?:
			      lp_put_uv(b, c->frames[k].file) ?:
			      lp_put_uv(b, c->frames[k].line);
		prev = c->vaddr;
	}
	return err;
}

static size_t uv_size(uint64_t v)
{
	uint8_t buf[LP_UV_MAX];

	return lp_uv_encode(buf, v);
}

size_t lp_srclines_size(const struct lp_srclines *sl)
{
	uint64_t prev = 0;
	size_t n;

	if (!srclines_valid(sl))
		return 0;
	n = uv_size(sl->object) + uv_size(sl->flags) + uv_size(sl->nstr) +
	    uv_size(sl->nchain);
	for (uint32_t i = 0; i < sl->nstr; i++) {
		size_t len = sl->strs[i] ? strlen(sl->strs[i]) : 0;

		n += uv_size(len) + len;
	}
	for (uint32_t i = 0; i < sl->nchain; i++) {
		const struct lp_srcchain *c = &sl->chains[i];

		n += uv_size(c->vaddr - prev) + uv_size(c->nframe);
		for (uint32_t k = 0; k < c->nframe; k++)
			n += uv_size(c->frames[k].func) + uv_size(c->frames[k].file) +
			     uv_size(c->frames[k].line);
		prev = c->vaddr;
	}
	return n;
}

/* How many of snapshot s's first frames equal those of the snapshot
 * before it (prev NULL: none): what the keep field saves writing. */
static uint32_t tsnap_keep(const struct lp_tsnap *prev, const struct lp_tsnap *s)
{
	uint32_t k = 0;

	if (!prev || !s->nframe)
		return 0;
	/* At least the last frame is written: a snapshot with nothing new
	 * would be indistinguishable from a duplicate. */
	while (k < prev->nframe && k + 1 < s->nframe &&
	       prev->frames[k].kind == s->frames[k].kind &&
	       prev->frames[k].value == s->frames[k].value &&
	       prev->frames[k].pc == s->frames[k].pc &&
	       prev->frames[k].link == s->frames[k].link)
		k++;
	return k;
}

/* Whether the writer can encode ts: the grammar's rules a reader checks. */
static int trace_snaps_valid(const struct lp_trace_snaps *ts)
{
	uint64_t total = 0;

	if (!ts->trace || (ts->nsnap && !ts->snaps))
		return 0;
	for (uint32_t i = 0; i < ts->nsnap; i++) {
		const struct lp_tsnap *s = &ts->snaps[i];

		if (s->nframe > LP_TSNAP_MAX_FRAMES || (s->nframe && !s->frames) ||
		    (i && s->mcofs <= ts->snaps[i - 1].mcofs))
			return 0;
		total += s->nframe;
	}
	return total <= LP_TSNAP_MAX_TOTAL;
}

static int put_trace_snaps(struct lp_buf *b, const struct lp_trace_snaps *ts)
{
	uint32_t prev_mcofs = 0;
	int err;

	if (!trace_snaps_valid(ts))
		return -EINVAL;
	err = lp_put_uv(b, ts->trace) ?: lp_put_uv(b, ts->bcofs) ?:
	      lp_put_uv(b, ts->bcbase) ?: lp_put_uv(b, ts->nsnap);
	for (uint32_t i = 0; !err && i < ts->nsnap; i++) {
		const struct lp_tsnap *s = &ts->snaps[i];
		uint32_t keep = tsnap_keep(i ? &ts->snaps[i - 1] : NULL, s);

		err = lp_put_uv(b, s->mcofs - prev_mcofs) ?: lp_put_uv(b, keep) ?:
		      lp_put_uv(b, s->nframe - keep);
		for (uint32_t k = keep; !err && k < s->nframe; k++) {
			const struct lp_lframe *f = &s->frames[k];

			err = lp_put_uv(b, f->kind) ?: lp_put_uv(b, f->value) ?:
			      lp_put_uv(b, f->pc) ?: lp_put_uv(b, f->link);
		}
		prev_mcofs = s->mcofs;
	}
	return err;
}

size_t lp_trace_snaps_size(const struct lp_trace_snaps *ts)
{
	uint32_t prev_mcofs = 0;
	size_t n;

	if (!trace_snaps_valid(ts))
		return 0;
	n = uv_size(ts->trace) + uv_size(ts->bcofs) + uv_size(ts->bcbase) + uv_size(ts->nsnap);
	for (uint32_t i = 0; i < ts->nsnap; i++) {
		const struct lp_tsnap *s = &ts->snaps[i];
		uint32_t keep = tsnap_keep(i ? &ts->snaps[i - 1] : NULL, s);

		n += uv_size(s->mcofs - prev_mcofs) + uv_size(keep) + uv_size(s->nframe - keep);
		for (uint32_t k = keep; k < s->nframe; k++)
			n += uv_size(s->frames[k].kind) + uv_size(s->frames[k].value) +
			     uv_size(s->frames[k].pc) + uv_size(s->frames[k].link);
		prev_mcofs = s->mcofs;
	}
	return n;
}

static int put_meta(struct lp_buf *b, const struct lp_meta *me)
{
	return lp_put_str(b, me->version) ?: lp_put_str(b, me->cmdline) ?:
	       lp_put_str(b, me->target) ?: lp_put_str(b, me->hostname) ?:
	       lp_put_str(b, me->kernel) ?: lp_put_str(b, me->clock) ?:
	       lp_put_uv(b, me->rate_hz) ?: lp_put_uv(b, me->start_mono_ns) ?:
	       lp_put_uv(b, me->start_real_ns) ?: lp_put_uv(b, me->flags);
}

static int put_process(struct lp_buf *b, const struct lp_process *pr)
{
	return lp_put_uv(b, pr->pid) ?: lp_put_uv(b, pr->ppid) ?:
	       lp_put_uv(b, pr->time_ns) ?: lp_put_uv(b, pr->flags) ?:
	       lp_put_str(b, pr->comm) ?: lp_put_str(b, pr->exe);
}

static int put_exit(struct lp_buf *b, const struct lp_exit *ex)
{
	return lp_put_uv(b, ex->pid) ?: lp_put_uv(b, ex->time_ns);
}

static int put_maps(struct lp_buf *b, const struct lp_maps *ma)
{
	uint32_t i;
	int err;

	if (ma->count && !ma->mappings)
		return -EINVAL;
	err = lp_put_uv(b, ma->pid) ?: lp_put_uv(b, ma->time_ns) ?:
	      lp_put_uv(b, ma->flags) ?: lp_put_uv(b, ma->count);
	for (i = 0; !err && i < ma->count; i++)
		err = put_mapping(b, &ma->mappings[i]);
	/* Appended to v1: which object each mapping is (§3.4). */
	for (i = 0; !err && i < ma->count; i++)
		err = lp_put_uv(b, ma->mappings[i].object);
	return err;
}

/* sa->time_ns is already the delta put_body() made of it. */
static int put_sample(struct lp_buf *b, const struct lp_sample *sa)
{
	return lp_put_sv(b, (int64_t)sa->time_ns) ?:
	       lp_put_uv(b, sa->pid) ?: lp_put_uv(b, sa->tid) ?:
	       lp_put_uv(b, sa->cpu) ?: lp_put_uv(b, sa->kstack) ?:
	       lp_put_uv(b, sa->ustack) ?: lp_put_uv(b, sa->flags) ?:
	       lp_put_uv(b, sa->lstack) ?: lp_put_sv(b, sa->vmstate) ?:
	       lp_put_uv(b, sa->lua_state) ?: lp_put_uv(b, sa->ustop);
}

/* ev->s.time_ns is already the delta put_body() made of it. */
static int put_event(struct lp_buf *b, const struct lp_event *ev)
{
	return lp_put_uv(b, ev->kind) ?: lp_put_uv(b, ev->weight) ?: put_sample(b, &ev->s) ?:
	       lp_put_uv(b, ev->count ? ev->count : 1); /* appended (§3.6.2) */
}

static int put_lost(struct lp_buf *b, const struct lp_lost *lo)
{
	return lp_put_uv(b, lo->time_ns) ?: lp_put_uv(b, lo->count) ?:
	       lp_put_uv(b, lo->reason);
}

static int put_footer(struct lp_buf *b, const struct lp_footer *fo)
{
	return lp_put_uv(b, fo->samples) ?: lp_put_uv(b, fo->lost) ?:
	       lp_put_uv(b, fo->chunks) ?: lp_put_uv(b, fo->end_mono_ns) ?:
	       lp_put_uv(b, fo->events);
}

static int put_puc_lua(struct lp_buf *b, const struct lp_puc_lua *pl)
{
	return lp_put_uv(b, pl->pid) ?: lp_put_str(b, pl->version) ?:
	       lp_put_str(b, pl->object);
}

static int put_trace(struct lp_buf *b, const struct lp_trace *tr)
{
	return lp_put_uv(b, tr->id) ?: lp_put_uv(b, tr->pid) ?:
	       lp_put_uv(b, tr->traceno) ?: lp_put_uv(b, tr->proto) ?:
	       lp_put_uv(b, tr->startpc) ?: lp_put_uv(b, tr->root) ?:
	       lp_put_uv(b, tr->mcode) ?: lp_put_uv(b, tr->szmcode);
}

static int put_name(struct lp_buf *b, const struct lp_name *n)
{
	if (!n->id)
		return -EINVAL;
	return lp_put_uv(b, n->id) ?: lp_put_str(b, n->text);
}

static int64_t sample_dtime(const struct trace_writer *w, const struct lp_sample *sa)
{
	return (int64_t)(sa->time_ns - w->prev_sample_time);
}

/* Whether a sample goes as a sample_us: its time a whole number of
 * microseconds after the last, as luaprof's are (§3.6.1). */
static int in_us(const struct trace_writer *w, const struct lp_sample *sa)
{
	return sample_dtime(w, sa) % 1000 == 0;
}

/* The record type rec goes as: a stack that branches from an earlier one
 * as a stack_branch, a sample in whole µs as a sample_us (the WIRE types
 * of LP_RECDEF). */
static uint64_t wire_type(const struct trace_writer *w, const struct lp_record *rec)
{
	if (rec->type == LP_REC_STACK && w->branch.base)
		return LP_REC_STACK_BRANCH;
	if (rec->type == LP_REC_SAMPLE && in_us(w, &rec->u.sample))
		return LP_REC_SAMPLE_US;
	return rec->type;
}

/*
 * Appends the body of rec to b; returns 0, -EINVAL or -E2BIG/-ENOMEM.
 * One put_name() per record type of LP_RECDEF; the retired and framing
 * types are no caller's to write, the wire types the writer's choice.  A sample's time is a delta against
 * the previous sample of this chunk only, so that every chunk decodes
 * without its predecessors.
 */
static int put_body(struct trace_writer *w, struct lp_buf *b,
		    const struct lp_record *rec)
{
	struct lp_record rebased;

	if (rec->type == LP_REC_SAMPLE) {
		/* As a sample_us, the delta in µs (wire_type()). */
		rebased = *rec;
		rebased.u.sample.time_ns = (uint64_t)(sample_dtime(w, &rec->u.sample) /
						      (in_us(w, &rec->u.sample) ? 1000 : 1));
		rec = &rebased;
	} else if (rec->type == LP_REC_EVENT) {
		/* Always in ns: few, and of any time. */
		rebased = *rec;
		rebased.u.event.s.time_ns = (uint64_t)sample_dtime(w, &rec->u.event.s);
		rec = &rebased;
	} else if (rec->type == LP_REC_STACK && w->branch.base) {
		return put_stack_branch(b, &rec->u.stack, &w->branch);
	}
	switch (rec->type) {
#define PUT(T, n, num, kind) LP_REC_IF_BODY(kind, case LP_REC_##T: return put_##n(b, &rec->u.n);)
	LP_RECDEF(PUT)
#undef PUT
	default:
		break;
	}
	return -EINVAL;
}

/*
 * The first record of every chunk (LP_COMPAT_CHUNK_SEQ): the chunk's
 * number, from 0, which is the count of chunks written before it, since
 * the pending chunk is always the next one written.
 */
static int put_chunk_record(struct trace_writer *w)
{
	uint8_t seq[LP_UV_MAX];
	size_t n = lp_uv_encode(seq, w->stats.chunks);

	return lp_put_uv(&w->chunk, LP_REC_CHUNK) ?: lp_put_uv(&w->chunk, n) ?:
	       lp_put_bytes(&w->chunk, seq, n);
}

/*
 * Appends one record (type, length, body) to the pending chunk, after the
 * chunk record if the chunk is empty.  The length precedes the body but
 * is only known after it, so the body is encoded LP_UV_MAX bytes further
 * on and slid back once the length's own size is known.  On failure the
 * chunk is left exactly as it was (empty, without its chunk record).
 */
static int append_record(struct trace_writer *w, const struct lp_record *rec)
{
	uint8_t gap[LP_UV_MAX] = { 0 }, len_bytes[LP_UV_MAX];
	size_t mark = w->chunk.len, body, body_len, n;
	int err = 0;

	if (mark == LP_CHUNK_HEADER_SIZE)
		err = put_chunk_record(w);
	err = err ?: lp_put_uv(&w->chunk, wire_type(w, rec)) ?:
	      lp_put_bytes(&w->chunk, gap, sizeof(gap));
	body = w->chunk.len;
	err = err ?: put_body(w, &w->chunk, rec);
	if (err) {
		w->chunk.len = mark;
		return err;
	}
	body_len = w->chunk.len - body;
	n = lp_uv_encode(len_bytes, body_len);
	if (pending_raw(w) - (LP_UV_MAX - n) > LP_CHUNK_MAX_RAW) {
		w->chunk.len = mark;
		return -E2BIG;
	}
	memmove(w->chunk.data + body - LP_UV_MAX + n, w->chunk.data + body,
		body_len);
	memcpy(w->chunk.data + body - LP_UV_MAX, len_bytes, n);
	w->chunk.len -= LP_UV_MAX - n;
	if (rec->type == LP_REC_SAMPLE)
		w->prev_sample_time = rec->u.sample.time_ns;
	else if (rec->type == LP_REC_EVENT)
		w->prev_sample_time = rec->u.event.s.time_ns;
	return 0;
}

/* Adds rec to the trace, starting a new chunk first if it does not fit. */
static int add_record(struct trace_writer *w, const struct lp_record *rec)
{
	int err;

	if (w->error)
		return w->error;
	memset(&w->branch, 0, sizeof(w->branch));
	if (rec->type == LP_REC_STACK) {
		if (!stack_valid(&rec->u.stack))
			return -EINVAL;
		/* Without memory for the search, the stack goes whole. */
		if (lp_stacktree_find(w->stacks, &rec->u.stack, &w->branch))
			memset(&w->branch, 0, sizeof(w->branch));
	}
	err = append_record(w, rec);
	if (err == -E2BIG && pending_raw(w)) {
		/* Too big for what is left of this chunk: it gets a chunk
		 * of its own, and is refused only if even that is too small. */
		err = write_chunk(w) ?: append_record(w, rec);
	}
	if (err)
		return err;
	/* Only a stack in the trace may be a later stack's base; failing
	 * to remember it (out of memory) only shares less. */
	if (rec->type == LP_REC_STACK)
		lp_stacktree_insert(w->stacks, &rec->u.stack, &w->branch);
	w->stats.records++;
	if (rec->type == LP_REC_SAMPLE) {
		w->samples++;
		w->chunk_samples++;
	} else if (rec->type == LP_REC_EVENT) {
		w->events++;
		w->chunk_events++;
	} else if (rec->type == LP_REC_LOST)
		w->lost += rec->u.lost.count;
	if (pending_raw(w) >= LP_CHUNK_TARGET_RAW)
		return write_chunk(w);
	return 0;
}

int trace_writer_open(struct trace_writer **out, const char *path,
		      enum lp_codec codec)
{
	struct trace_writer *w = NULL;
	struct lp_buf header = { 0 };
	int err;

	*out = NULL;
	if (!path || !lp_compress_bound(codec, 1))
		return -EINVAL;
	w = calloc(1, sizeof(*w));
	if (!w)
		return -ENOMEM;
	w->codec = codec;
	/* A new file only, private, never through a symbolic link
	 * (private.c): the caller moves an old trace out of the way first. */
	w->fd = lp_open_private(path, LP_PRIVATE_NEW);
	if (w->fd < 0) {
		err = w->fd;
		goto cleanup;
	}
	w->stacks = lp_stacktree_new(WRITER_STACKTREE_NODES);
	if (!w->stacks) {
		err = -ENOMEM;
		goto cleanup;
	}
	/* The limit refuses a record that can never fit in a chunk as soon
	 * as encoding it passes LP_CHUNK_MAX_RAW (plus the slack of the
	 * length gap, see append_record()), not after. */
	w->chunk.limit = LP_CHUNK_HEADER_SIZE + LP_CHUNK_MAX_RAW + LP_UV_MAX;
	err = lp_buf_reserve(&w->chunk, LP_CHUNK_HEADER_SIZE + 4096);
	if (err)
		goto cleanup;
	w->chunk.len = LP_CHUNK_HEADER_SIZE;

	err = lp_put_bytes(&header, LP_MAGIC, LP_MAGIC_SIZE) ?:
	      lp_put_u16(&header, LP_VERSION) ?:
	      lp_put_u16(&header, LP_HEADER_SIZE) ?:
	      lp_put_u32(&header, LP_INCOMPAT_STACK_BRANCH | LP_INCOMPAT_SAMPLE_US) ?:
	      lp_put_u32(&header, LP_COMPAT_CHUNK_SEQ);
	err = err ?: lp_put_u32(&header, lp_crc32(0, header.data, header.len));
	err = err ?: write_full(w->fd, header.data, header.len);
	if (err)
		goto cleanup;
	w->stats.file_bytes = header.len;
	lp_buf_free(&header);
	*out = w;
	return 0;

cleanup:
	lp_buf_free(&header);
	if (w->fd >= 0)
		close(w->fd);
	lp_buf_free(&w->chunk);
	lp_stacktree_free(w->stacks);
	free(w);
	return err;
}

int trace_write(struct trace_writer *w, const struct lp_record *rec)
{
	if (!w || !rec)
		return -EINVAL;
	/* The footer ends the trace: only trace_writer_close() writes it. */
	if (rec->type == LP_REC_FOOTER)
		return -EINVAL;
	return add_record(w, rec);
}

int trace_writer_flush(struct trace_writer *w)
{
	if (!w)
		return -EINVAL;
	return write_chunk(w);
}

int trace_writer_close(struct trace_writer *w, const struct lp_footer *footer)
{
	struct lp_record rec = { .type = LP_REC_FOOTER };
	int err;

	if (!w)
		return -EINVAL;
	if (footer) {
		rec.u.footer = *footer;
	} else {
		rec.u.footer.samples = w->samples;
		rec.u.footer.events = w->events;
		rec.u.footer.lost = w->lost;
	}
	/*
	 * The footer is small and the pending chunk is always below the
	 * target size here, so the footer lands in the pending chunk, which
	 * becomes the trace's last: count it in.
	 */
	rec.u.footer.chunks = w->stats.chunks + 1;
	err = add_record(w, &rec) ?: write_chunk(w);
	if (close(w->fd) < 0 && !err)
		err = -errno;
	lp_buf_free(&w->chunk);
	lp_buf_free(&w->packed);
	lp_stacktree_free(w->stacks);
	free(w);
	return err;
}

void trace_writer_get_stats(const struct trace_writer *w,
			    struct trace_writer_stats *stats)
{
	memset(stats, 0, sizeof(*stats));
	if (w)
		*stats = w->stats;
}

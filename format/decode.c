/*
 * decode.c - decodes record bodies (the `record` productions of trace.h)
 * for reader.c.  A chunk reaching this point passed its CRC, but its
 * contents are still untrusted: it may come from a buggy or hostile
 * writer, or a newer one.  So every count is checked against the bytes
 * left in the body before anything is allocated for it, every 32-bit
 * field is range-checked, and a body that does not decode costs one
 * bad record, never the chunk, because the record's length says where
 * the next one starts.  Fields after the known ones are ignored: that is
 * how later versions extend a record without breaking this reader.
 */
#include <errno.h>
#include <stdint.h>
#include <string.h>

#include "format/codec.h"
#include "format/reader_priv.h"

/*
 * Copies a string out of the body, NUL-terminated, into r->strings.
 * lp_decode_record() reserved as many bytes as the body has, which is
 * enough: a string of n bytes takes at least n + 1 body bytes and n + 1
 * arena bytes.  So the arena never moves while a record is decoded and
 * earlier pointers stay valid.
 */
static int get_str(struct trace_reader *r, struct lp_cursor *c,
		   const char **out)
{
	const uint8_t *s;
	char *dst;
	size_t n;

	if (lp_get_str(c, &s, &n))
		return -EBADMSG;
	dst = (char *)r->strings.data + r->strings.len;
	memcpy(dst, s, n);
	dst[n] = '\0';
	r->strings.len += n + 1;
	*out = dst;
	return 0;
}

/* Room for count elements in r->array; count was bounded by the caller. */
static void *get_array(struct trace_reader *r, size_t count, size_t size)
{
	r->array.len = 0;
	if (lp_buf_reserve(&r->array, count * size + 1))
		return NULL;
	return r->array.data;
}

static int decode_meta(struct trace_reader *r, struct lp_cursor *c,
		       struct lp_meta *m)
{
	return get_str(r, c, &m->version) ?: get_str(r, c, &m->cmdline) ?:
	       get_str(r, c, &m->target) ?: get_str(r, c, &m->hostname) ?:
	       get_str(r, c, &m->kernel) ?: get_str(r, c, &m->clock) ?:
	       lp_get_uv32(c, &m->rate_hz) ?: lp_get_uv(c, &m->start_mono_ns) ?:
	       lp_get_uv(c, &m->start_real_ns) ?: lp_get_uv32(c, &m->flags);
}

static int decode_process(struct trace_reader *r, struct lp_cursor *c,
			  struct lp_process *p)
{
	return lp_get_uv32(c, &p->pid) ?: lp_get_uv32(c, &p->ppid) ?:
	       lp_get_uv(c, &p->time_ns) ?: lp_get_uv32(c, &p->flags) ?:
	       get_str(r, c, &p->comm) ?: get_str(r, c, &p->exe);
}

static int decode_maps(struct trace_reader *r, struct lp_cursor *c,
		       struct lp_maps *m)
{
	struct lp_mapping *maps;
	uint64_t count, size;
	uint32_t i;
	int err;

	err = lp_get_uv32(c, &m->pid) ?: lp_get_uv(c, &m->time_ns) ?:
	      lp_get_uv32(c, &m->flags) ?: lp_get_uv(c, &count);
	if (err)
		return err;
	/* A mapping takes at least six bytes (five varints and a string
	 * length), so a larger count is a lie, not an allocation. */
	if (count > lp_cursor_left(c) / 6)
		return -EBADMSG;
	maps = get_array(r, count, sizeof(*maps));
	if (!maps)
		return -ENOMEM;
	for (i = 0; i < count; i++) {
		struct lp_mapping *mp = &maps[i];

		err = lp_get_uv(c, &mp->start) ?: lp_get_uv(c, &size) ?:
		      lp_get_uv(c, &mp->pgoff) ?: lp_get_uv32(c, &mp->prot) ?:
		      lp_get_uv(c, &mp->inode) ?: get_str(r, c, &mp->path);
		if (err)
			return err;
		mp->end = mp->start + size;
		if (mp->end < mp->start)
			return -EBADMSG; /* past the end of the address space */
		mp->object = 0;
	}
	/* Object ids came later in v1's life: absent means none, present
	 * means one per mapping. */
	if (lp_cursor_left(c))
		for (i = 0; i < count; i++)
			if (lp_get_uv(c, &maps[i].object))
				return -EBADMSG;
	m->count = (uint32_t)count;
	m->mappings = maps;
	return 0;
}

static int decode_stack(struct trace_reader *r, struct lp_cursor *c,
			struct lp_stack *s)
{
	uint64_t *addrs, prev = 0;
	uint32_t i;
	int err;

	err = lp_get_uv(c, &s->id) ?: lp_get_uv32(c, &s->kind) ?:
	      lp_get_uv32(c, &s->depth);
	if (err)
		return err;
	if (!s->id || s->depth > LP_STACK_MAX_DEPTH ||
	    s->depth > lp_cursor_left(c))
		return -EBADMSG;
	addrs = get_array(r, s->depth, sizeof(*addrs));
	if (!addrs)
		return -ENOMEM;
	for (i = 0; i < s->depth; i++) {
		uint64_t first;
		int64_t delta;

		if (i == 0) {
			err = lp_get_uv(c, &first);
			addrs[0] = first;
		} else {
			/* Deltas are modulo 2^64 by definition. */
			err = lp_get_sv(c, &delta);
			addrs[i] = prev + (uint64_t)delta;
		}
		if (err)
			return err;
		prev = addrs[i];
	}
	s->addrs = addrs;
	/* A later stack_branch may name it. */
	return r->stacks ? lp_stacktree_add(r->stacks, s) : 0;
}

/*
 * A stack_branch (§3.5.1): the base's root-side frames and the new ones,
 * rebuilt from the stacks read so far.  A base never read (its chunk
 * lost, or a hostile writer) makes the record bad: its samples then name
 * a stack the report does not know, and count as such.
 */
static int decode_stack_branch(struct trace_reader *r, struct lp_cursor *c,
			       struct lp_stack *s)
{
	uint64_t dbase, keep, nnew, pred, *addrs, *new;
	uint32_t anchor, i;
	int err;

	err = lp_get_uv(c, &s->id) ?: lp_get_uv32(c, &s->kind) ?:
	      lp_get_uv(c, &dbase) ?: lp_get_uv(c, &keep) ?: lp_get_uv(c, &nnew);
	if (err)
		return err;
	if (!r->stacks || !s->id || !dbase || dbase >= s->id ||
	    keep > LP_STACK_MAX_DEPTH || nnew > LP_STACK_MAX_DEPTH - keep ||
	    nnew > lp_cursor_left(c))
		return -EBADMSG;
	err = lp_stacktree_base(r->stacks, s->kind, s->id - dbase,
				(uint32_t)keep, &anchor, &pred);
	if (err)
		return -EBADMSG;
	s->depth = (uint32_t)(keep + nnew);
	/* The stack leaf first, then its new frames root side first. */
	addrs = get_array(r, s->depth + nnew, sizeof(*addrs));
	if (!addrs)
		return -ENOMEM;
	new = addrs + s->depth;
	for (i = 0; i < nnew; i++) {
		int64_t delta;

		if (lp_get_sv(c, &delta))
			return -EBADMSG;
		pred += (uint64_t)delta; /* modulo 2^64 */
		new[i] = pred;
	}
	s->addrs = addrs;
	return lp_stacktree_extend(r->stacks, s->id, s->kind, anchor,
				   (uint32_t)keep, new, (uint32_t)nnew, addrs);
}

/* A sample (6), or a sample_us (23) whose dtime counts microseconds. */
static int decode_sample_in(struct trace_reader *r, struct lp_cursor *c,
			    struct lp_sample *s, uint64_t time_unit)
{
	int64_t dtime;
	int err;

	err = lp_get_sv(c, &dtime) ?: lp_get_uv32(c, &s->pid) ?:
	      lp_get_uv32(c, &s->tid) ?: lp_get_uv32(c, &s->cpu) ?:
	      lp_get_uv(c, &s->kstack) ?: lp_get_uv(c, &s->ustack) ?:
	      lp_get_uv32(c, &s->flags);
	if (err)
		return err;
	/* Lua fields came later in v1's life: absent means none. */
	s->lstack = 0;
	s->vmstate = 0;
	s->lua_state = 0;
	s->ustop = 0;
	if (lp_cursor_left(c)) {
		int64_t vmstate;

		err = lp_get_uv(c, &s->lstack) ?: lp_get_sv(c, &vmstate) ?:
		      lp_get_uv32(c, &s->lua_state);
		if (err)
			return err;
		if (vmstate < INT32_MIN || vmstate > INT32_MAX)
			return -EBADMSG;
		s->vmstate = (int32_t)vmstate;
	}
	/* How the native walk ended came later still: absent, not said. */
	if (lp_cursor_left(c)) {
		err = lp_get_uv32(c, &s->ustop);
		if (err)
			return err;
	}
	/* Only a sample that decoded moves the time base, as in the writer. */
	s->time_ns = r->prev_sample_time + (uint64_t)dtime * time_unit;
	r->prev_sample_time = s->time_ns;
	return 0;
}

static int decode_sample(struct trace_reader *r, struct lp_cursor *c,
			 struct lp_sample *s)
{
	return decode_sample_in(r, c, s, 1);
}

/* An event (24): its kind and weight, then a sample's fields.  A kind
 * this reader does not know is returned as it is: the caller counts it. */
static int decode_event(struct trace_reader *r, struct lp_cursor *c, struct lp_event *ev)
{
	int err = lp_get_uv32(c, &ev->kind) ?: lp_get_uv(c, &ev->weight) ?:
		  decode_sample_in(r, c, &ev->s, 1);

	ev->count = 1; /* appended: absent in older traces */
	if (!err && lp_cursor_left(c))
		err = lp_get_uv(c, &ev->count);
	return err;
}

static int decode_ksyms(struct trace_reader *r, struct lp_cursor *c,
			struct lp_ksyms *k)
{
	struct lp_ksym *syms;
	uint64_t count, delta, prev = 0;
	uint32_t i;

	if (lp_get_uv(c, &count))
		return -EBADMSG;
	/* A symbol takes at least two bytes: a delta and a name length. */
	if (count > lp_cursor_left(c) / 2)
		return -EBADMSG;
	syms = get_array(r, count, sizeof(*syms));
	if (!syms)
		return -ENOMEM;
	for (i = 0; i < count; i++) {
		if (lp_get_uv(c, &delta) || get_str(r, c, &syms[i].name))
			return -EBADMSG;
		syms[i].addr = prev + delta;
		if (syms[i].addr < prev)
			return -EBADMSG;
		prev = syms[i].addr;
	}
	k->count = (uint32_t)count;
	k->syms = syms;
	return 0;
}

static int decode_luajit(struct trace_reader *r, struct lp_cursor *c,
			 struct lp_luajit *lj)
{
	const char **names;
	uint64_t nff;
	int err;

	err = lp_get_uv32(c, &lj->pid) ?: lp_get_uv(c, &lj->G) ?:
	      lp_get_uv(c, &lj->vm_start) ?: lp_get_uv(c, &lj->vm_end) ?:
	      lp_get_uv32(c, &lj->flags) ?: get_str(r, c, &lj->name) ?:
	      get_str(r, c, &lj->source) ?: lp_get_uv(c, &nff);
	if (err)
		return err;
	if (nff > lp_cursor_left(c)) /* a name takes at least a byte */
		return -EBADMSG;
	names = get_array(r, nff, sizeof(*names));
	if (!names)
		return -ENOMEM;
	for (uint64_t i = 0; i < nff; i++)
		if (get_str(r, c, &names[i]))
			return -EBADMSG;
	lj->nff = (uint32_t)nff;
	lj->ffnames = names;
	/* Appended later: absent in older traces. */
	lj->build = "";
	if (lp_cursor_left(c) && get_str(r, c, &lj->build))
		return -EBADMSG;
	return 0;
}

/* Carves an aligned piece out of the record's array arena. */
static void *carve(uint8_t **p, size_t size)
{
	void *q = *p;

	*p += (size + 7) & ~(size_t)7;
	return q;
}

static int decode_proto(struct trace_reader *r, struct lp_cursor *c,
			struct lp_proto *pt)
{
	uint64_t nbc, nkstr, nuv, vlen;
	struct lp_cursor save;
	uint8_t *arena;
	int64_t d;
	int err;

	err = lp_get_uv(c, &pt->id) ?: lp_get_uv(c, &pt->addr) ?:
	      get_str(r, c, &pt->chunkname) ?: lp_get_uv32(c, &pt->firstline) ?:
	      lp_get_uv32(c, &pt->numline) ?: lp_get_uv32(c, &pt->numparams) ?:
	      lp_get_uv32(c, &pt->flags) ?: lp_get_uv(c, &nbc);
	if (err)
		return err;
	/* Each instruction takes 4 bytes and its line at least 1. */
	if (!pt->id || nbc > lp_cursor_left(c) / 5)
		return -EBADMSG;
	/* A first pass over a copy of the cursor finds the counts, so that
	 * one exactly sized arena holds every array of the record. */
	save = *c;
	for (uint64_t i = 0; i < nbc; i++) {
		uint32_t ins;

		if (lp_get_u32(&save, &ins))
			return -EBADMSG;
	}
	for (uint64_t i = 0; i < nbc; i++)
		if (lp_get_sv(&save, &d))
			return -EBADMSG;
	if (lp_get_uv(&save, &nkstr) || nkstr > lp_cursor_left(&save) / 2)
		return -EBADMSG;
	for (uint64_t i = 0; i < nkstr; i++) {
		const uint8_t *str;
		size_t len;

		if (lp_get_uv(&save, &vlen) || lp_get_str(&save, &str, &len))
			return -EBADMSG;
	}
	if (lp_get_uv(&save, &nuv) || nuv > lp_cursor_left(&save))
		return -EBADMSG;
	arena = get_array(r, 8 * nbc + 16 + (nkstr + 1) * sizeof(*pt->kstr) +
			  (nuv + 1) * sizeof(char *), 1);
	if (!arena)
		return -ENOMEM;
	pt->nbc = (uint32_t)nbc;
	pt->bc = carve(&arena, nbc * 4);
	pt->lines = carve(&arena, nbc * 4);
	for (uint64_t i = 0; i < nbc; i++)
		if (lp_get_u32(c, (uint32_t *)&pt->bc[i]))
			return -EBADMSG;
	for (uint64_t i = 0, line = pt->firstline; i < nbc; i++) {
		if (lp_get_sv(c, &d))
			return -EBADMSG;
		line += (uint64_t)d;
		if (line > UINT32_MAX)
			return -EBADMSG;
		((uint32_t *)pt->lines)[i] = (uint32_t)line;
	}
	if (lp_get_uv(c, &nkstr))
		return -EBADMSG;
	pt->nkstr = (uint32_t)nkstr;
	pt->kstr = carve(&arena, nkstr * sizeof(*pt->kstr));
	for (uint64_t i = 0; i < nkstr; i++) {
		struct lp_proto_kstr *k = (struct lp_proto_kstr *)&pt->kstr[i];

		if (lp_get_uv32(c, &k->index) || get_str(r, c, &k->str))
			return -EBADMSG;
	}
	if (lp_get_uv(c, &nuv))
		return -EBADMSG;
	pt->nuv = (uint32_t)nuv;
	pt->uvnames = carve(&arena, nuv * sizeof(char *));
	for (uint64_t i = 0; i < nuv; i++)
		if (get_str(r, c, (const char **)&pt->uvnames[i]))
			return -EBADMSG;
	save = *c;
	if (lp_get_uv(c, &vlen) || vlen > lp_cursor_left(c) || vlen > UINT32_MAX)
		return -EBADMSG;
	*c = save;
	/* varinfo holds NUL bytes: get_str copies it whole, plus a NUL. */
	if (get_str(r, c, (const char **)&pt->varinfo))
		return -EBADMSG;
	pt->varinfo_len = (uint32_t)vlen;
	/* The source id came later in v1's life: absent means none. */
	pt->source = 0;
	if (lp_cursor_left(c) && lp_get_uv(c, &pt->source))
		return -EBADMSG;
	return 0;
}

static int decode_lua_source(struct trace_reader *r, struct lp_cursor *c,
			     struct lp_lua_source *ls)
{
	struct lp_cursor save;
	const uint8_t *text;
	size_t len;
	int err;

	err = lp_get_uv(c, &ls->id) ?: get_str(r, c, &ls->chunkname) ?:
	      get_str(r, c, &ls->path) ?: lp_get_uv32(c, &ls->status) ?:
	      lp_get_uv(c, &ls->size) ?: lp_get_uv(c, &ls->mtime_ns);
	if (err)
		return err;
	save = *c;
	if (!ls->id || lp_get_str(&save, &text, &len) || len > UINT32_MAX)
		return -EBADMSG;
	/* The text is bytes, NULs included: get_str copies it whole. */
	err = get_str(r, c, &ls->text);
	ls->text_len = (uint32_t)len;
	return err;
}

static int decode_lua_stack(struct trace_reader *r, struct lp_cursor *c,
			    struct lp_lua_stack *ls)
{
	struct lp_lframe *f;
	int err;

	err = lp_get_uv(c, &ls->id) ?: lp_get_uv32(c, &ls->depth);
	if (err)
		return err;
	/* A frame takes at least 4 bytes. */
	if (!ls->id || ls->depth > LP_STACK_MAX_DEPTH ||
	    ls->depth > lp_cursor_left(c) / 4)
		return -EBADMSG;
	f = get_array(r, ls->depth, sizeof(*f));
	if (!f)
		return -ENOMEM;
	for (uint32_t i = 0; i < ls->depth; i++)
		if (lp_get_uv32(c, &f[i].kind) || lp_get_uv(c, &f[i].value) ||
		    lp_get_uv32(c, &f[i].pc) || lp_get_uv32(c, &f[i].link))
			return -EBADMSG;
	ls->frames = f;
	return 0;
}

static int decode_object(struct trace_reader *r, struct lp_cursor *c,
			 struct lp_object *o)
{
	struct lp_cursor save;
	const uint8_t *ident;
	size_t len;
	int err;

	err = lp_get_uv(c, &o->id) ?: get_str(r, c, &o->path) ?:
	      lp_get_uv32(c, &o->id_kind);
	if (err)
		return err;
	save = *c;
	if (lp_get_str(&save, &ident, &len) || len > LP_OBJID_MAX || !o->id)
		return -EBADMSG;
	/* The ident is bytes, NULs included: get_str copies it whole. */
	err = get_str(r, c, (const char **)&o->ident) ?: lp_get_uv(c, &o->size);
	o->ident_len = (uint32_t)len;
	return err;
}

static int decode_symtab(struct trace_reader *r, struct lp_cursor *c,
			 struct lp_symtab *st)
{
	struct lp_objseg *segs;
	struct lp_objsym *syms;
	struct lp_cursor save;
	uint64_t nseg, nsym, v, prev = 0;
	uint8_t *arena;
	int err;

	err = lp_get_uv(c, &st->object) ?: lp_get_uv(c, &nseg);
	if (err)
		return err;
	/* A segment takes at least 3 bytes, a symbol 3. */
	if (!st->object || nseg > lp_cursor_left(c) / 3)
		return -EBADMSG;
	save = *c;
	for (uint64_t i = 0; i < 3 * nseg; i++)
		if (lp_get_uv(&save, &v))
			return -EBADMSG;
	if (lp_get_uv(&save, &nsym) || nsym > lp_cursor_left(&save) / 3)
		return -EBADMSG;
	arena = get_array(r, (nseg + 1) * sizeof(*segs) + (nsym + 1) * sizeof(*syms), 1);
	if (!arena)
		return -ENOMEM;
	segs = carve(&arena, nseg * sizeof(*segs));
	syms = carve(&arena, nsym * sizeof(*syms));
	for (uint64_t i = 0; i < nseg; i++)
		if (lp_get_uv(c, &segs[i].offset) || lp_get_uv(c, &segs[i].filesz) ||
		    lp_get_uv(c, &segs[i].vaddr))
			return -EBADMSG;
	if (lp_get_uv(c, &v))
		return -EBADMSG;
	for (uint64_t i = 0; i < nsym; i++) {
		if (lp_get_uv(c, &v) || lp_get_uv(c, &syms[i].size) ||
		    get_str(r, c, &syms[i].name))
			return -EBADMSG;
		syms[i].addr = prev + v;
		if (syms[i].addr < prev)
			return -EBADMSG;
		prev = syms[i].addr;
	}
	st->nseg = (uint32_t)nseg;
	st->segs = segs;
	st->nsym = (uint32_t)nsym;
	st->syms = syms;
	return 0;
}

/*
 * A string takes at least one byte, a chain five (its delta, its frame
 * count and a frame), a frame three: counts are checked against that
 * before the one arena of the record is sized, by a first pass over a
 * copy of the cursor that skips the strings to find the chain count.
 */
static int decode_srclines(struct trace_reader *r, struct lp_cursor *c,
			   struct lp_srclines *sl)
{
	uint64_t nstr, nchain, delta, vaddr = 0;
	struct lp_srcframe *frames;
	struct lp_srcchain *chains;
	struct lp_cursor save;
	const uint8_t *str;
	const char **strs;
	size_t len, maxframes, nf = 0;
	uint8_t *arena;
	int err;

	err = lp_get_uv(c, &sl->object) ?: lp_get_uv32(c, &sl->flags) ?:
	      lp_get_uv(c, &nstr);
	if (err)
		return err;
	if (!sl->object || nstr > lp_cursor_left(c))
		return -EBADMSG;
	save = *c;
	for (uint64_t i = 0; i < nstr; i++)
		if (lp_get_str(&save, &str, &len))
			return -EBADMSG;
	if (lp_get_uv(&save, &nchain) || nchain > lp_cursor_left(&save) / 5)
		return -EBADMSG;
	maxframes = lp_cursor_left(&save) / 3;
	arena = get_array(r, (nstr + 1) * sizeof(*strs) + (nchain + 1) * sizeof(*chains) +
			  (maxframes + 1) * sizeof(*frames), 1);
	if (!arena)
		return -ENOMEM;
	strs = carve(&arena, nstr * sizeof(*strs));
	chains = carve(&arena, nchain * sizeof(*chains));
	frames = carve(&arena, maxframes * sizeof(*frames));
	for (uint64_t i = 0; i < nstr; i++)
		if (get_str(r, c, &strs[i]))
			return -EBADMSG;
	if (lp_get_uv(c, &nchain))
		return -EBADMSG;
	for (uint64_t i = 0; i < nchain; i++) {
		struct lp_srcchain *ch = &chains[i];

		/* Ascending, each address once, never past 2^64. */
		if (lp_get_uv(c, &delta) || (i && !delta) || vaddr + delta < vaddr ||
		    lp_get_uv32(c, &ch->nframe) || !ch->nframe ||
		    ch->nframe > LP_SRCLINES_MAX_FRAMES || ch->nframe > maxframes - nf)
			return -EBADMSG;
		vaddr += delta;
		ch->vaddr = vaddr;
		ch->frames = frames + nf;
		for (uint32_t k = 0; k < ch->nframe; k++, nf++) {
			struct lp_srcframe *f = &frames[nf];

			if (lp_get_uv32(c, &f->func) || lp_get_uv32(c, &f->file) ||
			    lp_get_uv32(c, &f->line) || f->func > nstr || f->file > nstr)
				return -EBADMSG;
		}
	}
	sl->nstr = (uint32_t)nstr;
	sl->strs = strs;
	sl->nchain = (uint32_t)nchain;
	sl->chains = chains;
	return 0;
}

/*
 * A trace's snapshots.  A first pass checks the structure and counts the
 * frames the snapshots hold in all, each snapshot repeating keep frames
 * of the one before: a few bytes could otherwise claim millions of
 * frames.  The second pass decodes into one arena.
 */
static int scan_trace_snaps(struct lp_cursor c, uint64_t nsnap, uint64_t *total)
{
	uint64_t prev_n = 0, dmcofs, keep, nnew, v, mcofs = 0;

	*total = 0;
	for (uint64_t i = 0; i < nsnap; i++) {
		if (lp_get_uv(&c, &dmcofs) || lp_get_uv(&c, &keep) || lp_get_uv(&c, &nnew) ||
		    (i && !dmcofs) || dmcofs > UINT32_MAX - mcofs || keep > prev_n ||
		    nnew > LP_TSNAP_MAX_FRAMES - keep || (keep && !nnew))
			return -EBADMSG;
		mcofs += dmcofs;
		for (uint64_t k = 0; k < 4 * nnew; k++)
			if (lp_get_uv(&c, &v))
				return -EBADMSG;
		prev_n = keep + nnew;
		*total += prev_n;
		if (*total > LP_TSNAP_MAX_TOTAL)
			return -EBADMSG;
	}
	return 0;
}

static int decode_trace_snaps(struct trace_reader *r, struct lp_cursor *c,
			      struct lp_trace_snaps *ts)
{
	uint64_t nsnap, total, dmcofs, keep, nnew, mcofs = 0;
	struct lp_lframe *frames, *prev = NULL;
	struct lp_tsnap *snaps;
	uint8_t *arena;
	int err;

	err = lp_get_uv(c, &ts->trace) ?: lp_get_uv32(c, &ts->bcofs) ?:
	      lp_get_uv(c, &ts->bcbase) ?: lp_get_uv(c, &nsnap);
	if (err)
		return err;
	/* A snapshot takes at least 3 bytes. */
	if (!ts->trace || nsnap > lp_cursor_left(c) / 3 ||
	    scan_trace_snaps(*c, nsnap, &total))
		return -EBADMSG;
	arena = get_array(r, (nsnap + 1) * sizeof(*snaps) + (total + 1) * sizeof(*frames), 1);
	if (!arena)
		return -ENOMEM;
	snaps = carve(&arena, nsnap * sizeof(*snaps));
	frames = carve(&arena, total * sizeof(*frames));
	for (uint64_t i = 0; i < nsnap; i++) {
		struct lp_tsnap *s = &snaps[i];

		/* scan_trace_snaps() checked these. */
		lp_get_uv(c, &dmcofs);
		lp_get_uv(c, &keep);
		lp_get_uv(c, &nnew);
		mcofs += dmcofs;
		s->mcofs = (uint32_t)mcofs;
		s->nframe = (uint32_t)(keep + nnew);
		s->frames = frames;
		if (keep)
			memcpy(frames, prev, keep * sizeof(*frames));
		for (uint64_t k = keep; k < s->nframe; k++)
			if (lp_get_uv32(c, &frames[k].kind) || lp_get_uv(c, &frames[k].value) ||
			    lp_get_uv32(c, &frames[k].pc) || lp_get_uv32(c, &frames[k].link))
				return -EBADMSG;
		prev = frames;
		frames += s->nframe;
	}
	ts->nsnap = (uint32_t)nsnap;
	ts->snaps = snaps;
	return 0;
}

/* The fixed-size records: no strings, no arrays, r unused. */
static int decode_exit(struct trace_reader *r, struct lp_cursor *c, struct lp_exit *ex)
{
	(void)r;
	return lp_get_uv32(c, &ex->pid) ?: lp_get_uv(c, &ex->time_ns);
}

static int decode_lost(struct trace_reader *r, struct lp_cursor *c, struct lp_lost *lo)
{
	(void)r;
	return lp_get_uv(c, &lo->time_ns) ?: lp_get_uv(c, &lo->count) ?:
	       lp_get_uv32(c, &lo->reason);
}

static int decode_footer(struct trace_reader *r, struct lp_cursor *c, struct lp_footer *f)
{
	(void)r;
	int err = lp_get_uv(c, &f->samples) ?: lp_get_uv(c, &f->lost) ?:
		  lp_get_uv(c, &f->chunks) ?: lp_get_uv(c, &f->end_mono_ns);

	/* Appended: absent in traces that could hold no events. */
	f->events = 0;
	if (!err && lp_cursor_left(c))
		err = lp_get_uv(c, &f->events);
	return err;
}

static int decode_trace(struct trace_reader *r, struct lp_cursor *c, struct lp_trace *tr)
{
	(void)r;
	return lp_get_uv(c, &tr->id) ?: lp_get_uv32(c, &tr->pid) ?:
	       lp_get_uv32(c, &tr->traceno) ?: lp_get_uv(c, &tr->proto) ?:
	       lp_get_uv32(c, &tr->startpc) ?: lp_get_uv32(c, &tr->root) ?:
	       lp_get_uv(c, &tr->mcode) ?: lp_get_uv(c, &tr->szmcode);
}

static int decode_puc_lua(struct trace_reader *r, struct lp_cursor *c,
			  struct lp_puc_lua *pl)
{
	return lp_get_uv32(c, &pl->pid) ?: get_str(r, c, &pl->version) ?:
	       get_str(r, c, &pl->object);
}

static int decode_name(struct trace_reader *r, struct lp_cursor *c, struct lp_name *n)
{
	int err = lp_get_uv(c, &n->id);

	if (!err && !n->id)
		return -EBADMSG;
	return err ?: get_str(r, c, &n->text);
}

/*
 * One decode_name() per record type of LP_RECDEF.  -ENOENT for a type
 * this reader does not know (a later version's), -EBADMSG for a chunk
 * record out of its place (reader.c takes it at a chunk's start); the
 * retired type never gets here (lp_decode_record()).
 */
static int decode_body(struct trace_reader *r, uint64_t type,
		       struct lp_cursor *c, struct lp_record *rec)
{
	switch (type) {
#define DECODE(T, n, num, kind) \
	LP_REC_IF_BODY(kind, case LP_REC_##T: return decode_##n(r, c, &rec->u.n);)
	LP_RECDEF(DECODE)
#undef DECODE
	case LP_REC_STACK_BRANCH:
		rec->type = LP_REC_STACK;
		return decode_stack_branch(r, c, &rec->u.stack);
	case LP_REC_SAMPLE_US:
		rec->type = LP_REC_SAMPLE;
		return decode_sample_in(r, c, &rec->u.sample, 1000);
	case LP_REC_CHUNK:
		return -EBADMSG;
	}
	return -ENOENT;
}

int lp_decode_record(struct trace_reader *r, struct lp_record *rec)
{
	struct lp_cursor c = { r->rec, r->rec_end }, body;
	uint64_t type, len;
	int err;

	if (lp_get_uv(&c, &type) || lp_get_uv(&c, &len) ||
	    len > lp_cursor_left(&c)) {
		/* Without a length there is no next record to find. */
		r->stats.bad_records++;
		r->rec = r->rec_end;
		return 0;
	}
	body.p = c.p;
	body.end = c.p + len;
	r->rec = body.end;
	if (type < 64 && (r->skip >> type & 1))
		return 0; /* the caller wants none of these */
	if (type == LP_REC_STACK_BRANCH && (r->skip >> LP_REC_STACK & 1))
		return 0; /* read as stacks, skipped with them */
	if (type == LP_REC_SAMPLE_US && (r->skip >> LP_REC_SAMPLE & 1))
		return 0; /* read as samples, skipped with them */
	/* What an older writer embedded and no reader needs any more. */
	if (type == LP_REC_DEBUG_RETIRED) {
		r->stats.retired_records++;
		return 0;
	}

	r->strings.len = 0;
	err = lp_buf_reserve(&r->strings, (size_t)len + 1);
	if (err)
		return err;
	memset(rec, 0, sizeof(*rec));
	rec->type = (enum lp_record_type)type;
	err = decode_body(r, type, &body, rec);
	if (err == -ENOENT) {
		r->stats.unknown_records++;
		return 0;
	}
	if (err == -ENOMEM)
		return err;
	if (err) {
		r->stats.bad_records++;
		return 0;
	}
	if (type == LP_REC_FOOTER && !r->stats.footer_seen) {
		r->stats.footer_seen = 1;
		r->stats.footer = rec->u.footer;
	}
	if (type == LP_REC_SAMPLE || type == LP_REC_SAMPLE_US)
		r->stats.samples++;
	else if (type == LP_REC_EVENT)
		r->stats.events++;
	r->rec_bytes = len;
	return 1;
}

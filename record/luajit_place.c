/*
 * luajit_place.c - a compiled trace's machine code placed, instruction by
 * instruction, in the Lua functions and lines that made it.
 *
 * For each stretch between two snapshots (the same IR refs and machine
 * code offsets: lj_asm.c fills a snapshot's mcofs when its backwards walk
 * crosses the snapshot's ref), three matches chain:
 *
 *   bytecode path  <-- luajit_irmatch.c --  IR  <-- luajit_mcmatch.c --  mcode
 *   (luajit_path.c)
 *
 * and each machine instruction takes the frames and position of the
 * path instruction that made its IR.  Consecutive instructions with the
 * same frames make one range, written as one snapshot of the trace's
 * TRACE_SNAPS record, so a report places samples as it always has.
 *
 * A stretch that does not match in full is placed whole when everything
 * in it belongs to one function (the path says so, or, without a path,
 * both snapshots stand in the same frames); otherwise it is marked: the
 * frames the two snapshots share, then an INLINED frame for each function
 * whose code may be in it.  Code matched to a call into a function the
 * path does not know is marked the same way, with no name.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "lib/grow.h"
#include "record/arch.h"
#include "record/luajit.h"
#include "record/luajit_place_priv.h"

/* A trace's code is matched where luaprof has a matcher for its
 * instruction set (luajit_mcmatch.c), else each stretch is placed as the
 * unmatched ones are. */
#define CODE_MATCHED lj_mcmatch_supports(tv->machine)

struct lj_placer {
	struct lj_pstate ps;
	struct lj_pel path[LJ_PATH_MAX];
	int32_t *el_of;
	size_t capel;
	struct lj_mins *mins;
	size_t capmins;
	/* The ranges being built; frames are offsets until the end. */
	struct lp_tsnap *out;
	size_t capout;
	uint32_t nout;
	struct lp_lframe *frames, fr[LP_TSNAP_MAX_FRAMES + 1];
	size_t capframes, nframes;
	struct lj_place_stats stats;
};

struct lj_placer *lj_placer_new(void)
{
	return calloc(1, sizeof(struct lj_placer));
}

static void reset(struct lj_pstate *ps)
{
	for (uint32_t i = 0; i < ps->nfns; i++) {
		free(ps->fns[i].bc);
		free(ps->fns[i].kn);
		free(ps->fns[i].kgc);
	}
	ps->nfns = 0;
	ps->nnodes = 0;
}

void lj_placer_free(struct lj_placer *p)
{
	if (!p)
		return;
	reset(&p->ps);
	lj_mcmatch_free(&p->ps);
	free(p->ps.nodes);
	free(p->el_of);
	free(p->mins);
	free(p->out);
	free(p->frames);
	free(p);
}

void lj_placer_stats(const struct lj_placer *p, struct lj_place_stats *out)
{
	*out = p->stats;
}

/* Appends a range at ofs with frames fr[0..n) (n 0: not placed). */
static int add_range(struct lj_placer *p, uint32_t ofs, const struct lp_lframe *fr, uint32_t n)
{
	struct lp_tsnap *prev = p->nout ? &p->out[p->nout - 1] : NULL;

	if (prev && prev->mcofs == ofs) {
		p->nframes = (size_t)(uintptr_t)prev->frames;
		p->nout--;
		prev = p->nout ? &p->out[p->nout - 1] : NULL;
	}
	if (prev && prev->nframe == n &&
	    !memcmp(p->frames + (size_t)(uintptr_t)prev->frames, fr, n * sizeof(*fr)))
		return 0;
	if (GROW(p->out, p->capout, p->nout + 1) ||
	    GROW(p->frames, p->capframes, p->nframes + n + 1))
		return -ENOMEM;
	memcpy(p->frames + p->nframes, fr, n * sizeof(*fr));
	p->out[p->nout++] = (struct lp_tsnap){ .mcofs = ofs, .nframe = n,
					       .frames = (const struct lp_lframe *)(uintptr_t)p->nframes };
	p->nframes += n;
	return p->nframes > LP_TSNAP_MAX_TOTAL ? -E2BIG : 0;
}

static uint64_t fn_id(struct lj_placer *p, int fn)
{
	struct lj_pfn *f = &p->ps.fns[fn];

	if (!f->idknown) {
		f->id = p->ps.tv->proto_id(p->ps.tv->ctx, f->proto);
		f->idknown = 1;
	}
	return f->id;
}

/* The frames of node at instruction pc, base first, into p->fr; their
 * count, or 0 if one cannot be written.  base_kind: how the snapshots
 * write the base frame (BASE: the walker's function, by position). */
static uint32_t node_frames(struct lj_placer *p, int node, uint32_t pc, uint32_t base_kind)
{
	const struct lj_trace_view *tv = p->ps.tv;
	int chain[LP_TSNAP_MAX_FRAMES];
	uint32_t pcs[LP_TSNAP_MAX_FRAMES], n = 0;

	for (int k = node; k >= 0; k = p->ps.nodes[k].parent) {
		if (n == LP_TSNAP_MAX_FRAMES)
			return 0;
		pcs[n] = k == node ? pc : p->ps.nodes[chain[n - 1]].retpc - 1;
		chain[n++] = k;
	}
	for (uint32_t i = 0; i < n; i++) {
		const struct lj_pnode *nd = &p->ps.nodes[chain[n - 1 - i]];
		const struct lj_pfn *f = &p->ps.fns[nd->fn];
		struct lp_lframe *lf = &p->fr[i];
		uint32_t at = pcs[n - 1 - i];

		memset(lf, 0, sizeof(*lf));
		if (i == 0 && base_kind == LP_LFRAME_BASE) {
			/* After the instruction, counted from the trace's start. */
			int64_t d = ((int64_t)(f->proto + tv->lo->pt_size + 4ull * (at + 1)) -
				     (int64_t)tv->startpc) / 4;

			lf->kind = LP_LFRAME_BASE;
			lf->value = (uint64_t)d << 1 ^ (uint64_t)(d >> 63);
			continue;
		}
		lf->link = i ? nd->link : 0;
		if (!f->proto) { /* a builtin a function runs under (pcall) */
			lf->kind = LP_LFRAME_FF;
			lf->value = f->ffid;
			continue;
		}
		lf->kind = LP_LFRAME_LUA;
		lf->value = fn_id(p, nd->fn);
		lf->pc = at + 1;
		if (!lf->value)
			return 0;
	}
	return n;
}

/* The frames for a stretch that cannot be placed: the snapshot's frames
 * that both ends share, then the Lua functions of either end beyond them
 * and of the path's elements, each once, as an INLINED frame. */
static uint32_t marked_frames(struct lj_placer *p, const struct lj_tsnap *s,
			      const struct lj_tsnap *next, const struct lj_pel *path,
			      uint32_t np)
{
	uint32_t keep = 0, n;
	uint64_t seen[LP_TSNAP_MAX_FRAMES];
	uint32_t nseen = 0;

	while (next && keep < s->nframe && keep < next->nframe &&
	       s->frames[keep].proto == next->frames[keep].proto &&
	       s->frames[keep].base == next->frames[keep].base)
		keep++;
	if (!keep)
		keep = 1;
	for (n = 0; n < keep; n++)
		p->fr[n] = s->frames[n].lf;
	for (int end = 0; end < 2; end++) {
		const struct lj_tsnap *e = end ? next : s;

		for (uint32_t i = keep; e && i < e->nframe && n < LP_TSNAP_MAX_FRAMES; i++) {
			uint32_t j = 0;

			if (e->frames[i].lf.kind != LP_LFRAME_LUA)
				continue; /* pcall's own frame: its function is listed */
			while (j < nseen && seen[j] != e->frames[i].lf.value)
				j++;
			if (j < nseen)
				continue;
			seen[nseen++] = e->frames[i].lf.value;
			/* Called by the marked frame: where, so that a report
			 * names it as the call does. */
			p->fr[n++] = (struct lp_lframe){
				.kind = LP_LFRAME_INLINED, .value = e->frames[i].lf.value,
				.pc = i == keep ? e->frames[keep - 1].pc + 1 : 0 };
		}
	}
	for (uint32_t i = 0; i < np && n < LP_TSNAP_MAX_FRAMES; i++) {
		uint64_t id;
		uint32_t j = 0;

		if ((p->ps.nodes[path[i].node].parent < 0 && keep == 1) ||
		    !p->ps.fns[p->ps.nodes[path[i].node].fn].proto)
			continue; /* the base frame's own code, or a builtin's */
		id = fn_id(p, p->ps.nodes[path[i].node].fn);
		while (j < nseen && seen[j] != id)
			j++;
		if (j < nseen || nseen == LP_TSNAP_MAX_FRAMES)
			continue;
		seen[nseen++] = id;
		if (id == s->frames[keep - 1].lf.value)
			continue;
		p->fr[n++] = (struct lp_lframe){ .kind = LP_LFRAME_INLINED, .value = id };
	}
	return n;
}

/* Every element of the path runs in the frames of the first. */
static int one_chain(const struct lj_pel *path, uint32_t np)
{
	for (uint32_t i = 1; i < np; i++)
		if (path[i].node != path[0].node || (path[i].flags & LJ_PEL_OPAQUE))
			return 0;
	return !np || !(path[0].flags & LJ_PEL_OPAQUE);
}

/* Places a stretch whole, or marks it. */
static int coarse(struct lj_placer *p, const struct lj_tsnap *s, const struct lj_tsnap *next,
		  uint32_t ofs, const struct lj_pel *path, uint32_t np, int have_path)
{
	/* The last stretch, with no path: the code after the last snapshot
	 * (a loop's end, a link to another trace) is the snapshot's, as
	 * LuaJIT exits through it. */
	int same = have_path ? one_chain(path, np) :
		   !next || next->nframe == s->nframe;

	for (uint32_t i = 0; same && !have_path && next && i < s->nframe; i++)
		same = s->frames[i].proto == next->frames[i].proto &&
		       s->frames[i].base == next->frames[i].base;
	if (same) {
		p->stats.single++;
		for (uint32_t i = 0; i < s->nframe; i++)
			p->fr[i] = s->frames[i].lf;
		return add_range(p, ofs, p->fr, s->nframe);
	}
	p->stats.marked++;
	return add_range(p, ofs, p->fr, marked_frames(p, s, next, path, np));
}

/* The frames of path element el (which made IR matched to it): its own,
 * or for a call into an unknown function, the caller's marked; own (the
 * call's line) too for the C call of such a call that can only be an FFI
 * call (ccall). */
static uint32_t el_frames(struct lj_placer *p, const struct lj_tsnap *s,
			  const struct lj_pel *el, int ccall)
{
	uint32_t n = node_frames(p, el->node, el->pc, s->frames[0].lf.kind);

	if (ccall && (el->flags & LJ_PEL_NOLUA))
		return n;
	if (n && (el->flags & LJ_PEL_OPAQUE) && n < LP_TSNAP_MAX_FRAMES)
		p->fr[n++] = (struct lp_lframe){ .kind = LP_LFRAME_INLINED, .pc = el->pc + 1 };
	return n;
}

/* Places the stretch from snapshot s to next (NULL: the trace's end). */
static int place_stretch(struct lj_placer *p, const struct lj_tsnap *s,
			 const struct lj_tsnap *next)
{
	const struct lj_trace_view *tv = p->ps.tv;
	uint32_t ofs = s->mcofs, end = next ? next->mcofs : tv->szmcode;
	uint32_t first = s->ref, last = next ? next->ref : tv->nins, np = 0, nm = 0;
	int32_t cur = -1;
	uint32_t nout0 = p->nout;
	size_t nframes0 = p->nframes;
	int have_path, err;

	p->stats.regions++;
	if (!s->nframe || last < first || first <= LJ_REF_BIAS)
		return add_range(p, ofs, NULL, 0);
	if (GROW(p->el_of, p->capel, last - first + 1))
		return -ENOMEM;
	have_path = !lj_path_find(&p->ps, s, next, p->path, LJ_PATH_MAX, &np);
	if (!have_path || !np || !CODE_MATCHED ||
	    lj_irmatch(&p->ps, first, last - first, p->path, np, p->el_of) ||
	    lj_mcmatch(&p->ps, ofs, end, first, last - first, &p->mins, &p->capmins, &nm) ||
	    !nm)
		return coarse(p, s, next, ofs, p->path, np, have_path);
	p->stats.exact++;
	for (uint32_t k = 0; k < nm; k++) {
		int32_t irx = p->mins[k].irx, el = irx >= 0 ? p->el_of[irx] : -1;
		uint32_t n;
		int ccall = irx >= 0 && lj_ir_at(tv, first + (uint32_t)irx).o == LJ_IR_CALLXS;

		/* Code of IR no instruction made (a loop's PHI moves) goes
		 * with what comes before it, or with the first that follows. */
		if (el < 0 && cur >= 0)
			continue;
		for (uint32_t j = k + 1; el < 0 && j < nm; j++)
			if (p->mins[j].irx >= 0)
				el = p->el_of[p->mins[j].irx];
		if (el < 0)
			el = 0;
		/* A range per element, and the C call of a call apart. */
		if (el * 2 + ccall == cur)
			continue;
		cur = el * 2 + ccall;
		n = el_frames(p, s, &p->path[el], ccall);
		if (!n) {
			p->nout = nout0;
			p->nframes = nframes0;
			p->stats.exact--;
			return coarse(p, s, next, ofs, p->path, np, have_path);
		}
		if ((err = add_range(p, p->mins[k].ofs, p->fr, n)))
			return err;
	}
	return 0;
}

int lj_place_trace(struct lj_placer *p, const struct lj_trace_view *tv,
		   const struct lp_tsnap **snaps, uint32_t *nsnap)
{
	int err = 0;

	*snaps = NULL;
	*nsnap = 0;
	reset(&p->ps);
	p->ps.tv = tv;
	p->nout = 0;
	p->nframes = 0;
	if (!tv->nsnap || !tv->mc || tv->nins <= LJ_REF_BIAS)
		return -EINVAL;
	for (uint32_t i = 0; i < tv->nsnap && !err; i++) {
		const struct lj_tsnap *s = &tv->snaps[i];
		const struct lj_tsnap *next = i + 1 < tv->nsnap ? &tv->snaps[i + 1] : NULL;

		/* Snapshots with no code between them: the later covers it. */
		if (next && next->mcofs == s->mcofs)
			continue;
		err = place_stretch(p, s, next);
	}
	if (err)
		return err;
	for (uint32_t i = 0; i < p->nout; i++)
		p->out[i].frames = p->frames + (size_t)(uintptr_t)p->out[i].frames;
	*snaps = p->out;
	*nsnap = p->nout;
	return 0;
}

/*
 * lua_place.c - compiled code placed in the functions its trace inlined.
 *
 * A sample taken while a compiled trace ran has, from the walker, the
 * trace's base frame and its callers only: the functions the trace
 * inlined have no frames in memory.  The trace's snapshots (a TRACE_SNAPS
 * record, see record/luajit_snaps.c) say, for each stretch of its machine
 * code, which frames it stands for.  So the sample's address in that code
 * -- its leaf, or the return address of a helper the trace called --
 * picks the last snapshot starting at or before it (as LuaJIT finds the
 * snapshot of an exit), and that snapshot's frames go on top of the
 * walked ones:
 *
 *   walked:  [TRACE] [base f, no pc] [caller] ...
 *   placed:  [TRACE] [h, pc] [g, pc] [f, pc] [caller] ...   (leaf first)
 *
 * The base frame keeps the walker's function and link; the snapshot
 * gives its position, as an address the report turns into a position in
 * the walked function's bytecode (that it lies in there is the check that
 * the walked base and the snapshot agree).  Each (stack, trace, snapshot)
 * is placed once and becomes a stack of its own, which the rest of the
 * report names like any other.  What cannot be placed keeps the walked
 * stack, and says why (enum lua_place).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "report/luajit_protos_priv.h"
#include "lib/bsearch.h"

int lua_add_trace_snaps(struct lua *l, const struct lp_trace_snaps *rec)
{
	int64_t ti = lua_trace_index(l, rec->trace);
	struct snap_set *ss;
	size_t total = 0;

	/* Snapshots of a trace the file does not define cannot be used;
	 * a second record for one trace is ignored, as ids are unique. */
	if (ti < 0 || l->traces[ti].snaps)
		return 0;
	for (uint32_t i = 0; i < rec->nsnap; i++)
		total += rec->snaps[i].nframe;
	ss = calloc(1, sizeof(*ss));
	if (!ss)
		return -ENOMEM;
	ss->snaps = calloc(rec->nsnap + 1, sizeof(*ss->snaps));
	ss->frames = calloc(total + 1, sizeof(*ss->frames));
	if (!ss->snaps || !ss->frames) {
		free(ss->snaps);
		free(ss->frames);
		free(ss);
		return -ENOMEM;
	}
	ss->bcbase = rec->bcbase;
	ss->bcofs = rec->bcofs;
	ss->nsnap = rec->nsnap;
	total = 0;
	for (uint32_t i = 0; i < rec->nsnap; i++) {
		ss->snaps[i] = rec->snaps[i];
		ss->snaps[i].frames = ss->frames + total;
		if (rec->snaps[i].nframe)
			memcpy(ss->frames + total, rec->snaps[i].frames,
			       rec->snaps[i].nframe * sizeof(*ss->frames));
		total += rec->snaps[i].nframe;
	}
	l->traces[ti].snaps = ss;
	return 0;
}

/* The offset in trace t's machine code of the first of the addresses
 * (leaf first; the others return addresses) that lies in it. */
static int code_offset(const struct trace_ent *t, const uint64_t *addrs, uint32_t n,
		       uint64_t *off)
{
	for (uint32_t i = 0; i < n; i++) {
		uint64_t at = i ? addrs[i] - 1 : addrs[i];

		if (at >= t->mcode && at - t->mcode < t->szmcode) {
			*off = at - t->mcode;
			return 0;
		}
	}
	return -1;
}

/* A trace of t's process, other than t, whose code holds the first of
 * the addresses that lies in a trace's code: LuaJIT names the trace it
 * entered last (g->vmstate), and a side trace that jumps back into its
 * root's loop leaves the side trace's number while the root's code runs.
 * Its index, *off the offset there; -1 if none (with its snapshots).
 * The base frame's check (place_base) still stands. */
static int64_t other_trace(const struct lua *l, const struct trace_ent *t,
			   const uint64_t *addrs, uint32_t n, uint64_t *off)
{
	for (uint32_t i = 0; i < n; i++) {
		uint64_t at = i ? addrs[i] - 1 : addrs[i];
		int64_t ti = lua_trace_holding(l, t->pid, at);

		if (ti < 0)
			continue;
		if (!l->traces[ti].snaps)
			return -1;
		*off = at - l->traces[ti].mcode;
		return ti;
	}
	return -1;
}

/* The last snapshot of ss starting at or before off, or -1. */
static int64_t snap_at(const struct snap_set *ss, uint64_t off)
{
	return (int64_t)LP_UPPER_BOUND(ss->snaps, 0, ss->nsnap, mcofs, off) - 1;
}

/* The walked base frame b with snapshot frame sf's function (when the
 * trace replaced it) and position.  0, or -1 if they disagree. */
static int place_base(const struct lua *l, const struct snap_set *ss,
		      const struct lp_lframe *sf, struct lp_lframe *b)
{
	const struct lp_proto *pt;
	uint64_t z = sf->value, at, start;
	int64_t d;

	if (sf->kind != LP_LFRAME_BASE) {
		b->kind = sf->kind;
		b->value = sf->value;
		b->pc = sf->pc;
		return 0;
	}
	pt = lua_proto(l, b->value);
	if (!pt || !pt->addr)
		return -1;
	d = (int64_t)(z >> 1) ^ -(int64_t)(z & 1);
	at = ss->bcbase + 4 * (uint64_t)d;
	start = pt->addr + ss->bcofs;
	if (at < start || (at - start) % 4 || (at - start) / 4 > pt->nbc)
		return -1;
	b->pc = (uint32_t)((at - start) / 4);
	return 0;
}

/* The stack of walked stack idx (taken in trace ti) with snapshot si's
 * frames put in, made once; its index in *out. */
static int placed_stack(struct lua *l, uint32_t idx, uint32_t ti, uint32_t si,
			uint32_t *out, enum lua_place *how)
{
	const struct snap_set *ss = l->traces[ti].snaps;
	const struct lp_tsnap *sn = &ss->snaps[si];
	uint64_t h = hash_mix(hash_mix(hash_u64(idx), ti), si);
	const struct lstack_ent *e;
	struct lp_lframe *fr;
	struct htab_probe p;
	uint32_t n = 0, depth;
	int64_t i;
	int err;

	htab_probe_start(&l->places_h, h, &p);
	while ((i = htab_probe_next(&l->places_h, &p)) >= 0) {
		const struct place_ent *pe = &l->places[i];

		if (pe->idx == idx && pe->trace == ti && pe->snap == si) {
			*out = pe->placed;
			*how = pe->placed == idx ? LUA_UNPLACED_BASE :
			       sn->frames[sn->nframe - 1].kind == LP_LFRAME_INLINED ?
			       LUA_MARKED : LUA_PLACED;
			return 0;
		}
	}
	e = &l->stacks[idx];
	depth = e->depth + sn->nframe - 1;
	fr = calloc(depth, sizeof(*fr));
	if (!fr)
		return -ENOMEM;
	fr[n] = e->frames[0]; /* the trace */
	fr[n++].link = LUA_PLACED_MARK;
	for (uint32_t k = sn->nframe; k-- > 1;)
		fr[n++] = sn->frames[k];
	fr[n] = e->frames[1];
	err = 0;
	*out = idx;
	*how = LUA_UNPLACED_BASE;
	if (!place_base(l, ss, &sn->frames[0], &fr[n++])) {
		memcpy(fr + n, e->frames + 2, (e->depth - 2) * sizeof(*fr));
		err = lua_push_stack(l, fr, depth, out);
		*how = sn->frames[sn->nframe - 1].kind == LP_LFRAME_INLINED ? LUA_MARKED :
		       LUA_PLACED;
	}
	free(fr);
	if (!err)
		err = GROW(l->places, l->capplaces, l->nplaces + 1);
	if (!err)
		err = htab_insert(&l->places_h, h, l->nplaces);
	if (err)
		return err;
	l->places[l->nplaces++] = (struct place_ent){ idx, ti, si, *out };
	return 0;
}

int lua_trace_code(const struct lua *l, uint32_t idx, uint64_t *start, uint64_t *end)
{
	const struct lstack_ent *e;
	int64_t ti;

	if (!lua_stack_in_trace(l, idx))
		return -ENOENT;
	e = &l->stacks[idx];
	ti = e->frames[0].pc ? lua_trace_index(l, e->frames[0].pc) : -1;
	if (ti < 0 || !l->traces[ti].szmcode)
		return -ENOENT;
	*start = l->traces[ti].mcode;
	*end = l->traces[ti].mcode + l->traces[ti].szmcode;
	return 0;
}

int lua_place(struct lua *l, uint32_t idx, const uint64_t *addrs, uint32_t naddrs,
	      uint32_t *out, enum lua_place *how)
{
	const struct lstack_ent *e;
	const struct trace_ent *t;
	uint64_t off;
	int64_t ti, si;

	*out = idx;
	*how = LUA_NOT_COMPILED;
	if (!lua_stack_in_trace(l, idx))
		return 0;
	e = &l->stacks[idx];
	ti = e->frames[0].pc ? lua_trace_index(l, e->frames[0].pc) : -1;
	t = ti < 0 ? NULL : &l->traces[ti];
	*how = LUA_UNPLACED_NO_SNAPS;
	if (!t || !t->snaps)
		return 0;
	*how = LUA_UNPLACED_OUTSIDE;
	if (code_offset(t, addrs, naddrs, &off) &&
	    (ti = other_trace(l, t, addrs, naddrs, &off)) >= 0)
		t = &l->traces[ti];
	else if (code_offset(t, addrs, naddrs, &off))
		return 0;
	if ((si = snap_at(t->snaps, off)) < 0)
		return 0;
	*how = LUA_UNPLACED_SNAP;
	if (!t->snaps->snaps[si].nframe)
		return 0;
	*how = LUA_UNPLACED_BASE;
	if (e->depth < 2 || e->frames[1].kind != LP_LFRAME_LUA)
		return 0;
	return placed_stack(l, idx, (uint32_t)ti, (uint32_t)si, out, how);
}

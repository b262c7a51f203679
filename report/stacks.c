/*
 * stacks.c - stack records, user stack resolution and sample counting
 * (see stacks.h for the design).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "lib/htab.h"
#include "report/stacks.h"
#include "report/count.h"

/* Stand-ins for a stack index or a user resolution. */
#define NONE UINT32_MAX          /* the sample has no such stack */
#define MISSING (UINT32_MAX - 1) /* it names an undefined stack id */

struct stack_ent {
	uint64_t id;
	size_t off; /* into addrs */
	uint32_t depth;
	uint32_t gap; /* a user stack with frames the walk could not see */
};

/* (pid, stack, Lua stack, layout generation, how) -> user frames, root
 * first. */
struct ures_ent {
	uint32_t pid, stack, lstack;
	uint64_t gen;
	uint32_t useq;
	int how; /* UF_CUT | UF_TRACE_MAY_RUN */
};

/* How a sample's user frames are resolved, besides its stacks. */
#define UF_CUT 1           /* the native walk did not reach the root */
#define UF_TRACE_MAY_RUN 2 /* its vmstate lets anonymous code be a trace's */
#define UF_STOP_JIT 4      /* the walk stopped at anonymous code, its last frame */
#define UF_SUSPENDED 8     /* the Lua frames are a suspended coroutine's: on top */

/* A user stack's native frames as named against one layout: (pid, stack,
 * layout generation) -> for each address, leaf first, its frames
 * (frames_user_chain()) and whether it lies in anonymous memory.  A
 * native stack runs under many Lua stacks, and each pair is resolved
 * (resolve_user()): its addresses are looked up once per native stack,
 * not once per pair.  A frame is named when a resolution first needs it,
 * as it was before this cache, so that names get the same ids. */
struct native_ent {
	uint32_t pid, stack;
	uint64_t gen;
	size_t first; /* its frames in nfr[] */
};

struct native_frame {
	uint32_t off;  /* its names in nids[]; UNNAMED until named */
	uint32_t func; /* the function's own name (frames_user_chain()) */
	uint8_t n;     /* names */
	int8_t anon;   /* in anonymous memory: 1, 0, or -1 not yet known */
};
#define UNNAMED UINT32_MAX

/* (user stack, Lua stack) -> the Lua stack as placed (lua_place()). */
struct lplace_ent {
	uint32_t stack, lstack, placed;
	enum lua_place how;
};

/* A sample as it came, and the count entry it went to: a sample like an
 * earlier one (most of them) costs one probe, not the five of placing it
 * anew.  The layout generation is part of the key: the same stack ids
 * may name other frames after the process's mappings changed. */
struct seen_ent {
	uint64_t ustack, lstack, kstack, gen;
	uint64_t count;   /* its samples, added to cnt's at the end */
	uint32_t pid, root;
	uint32_t cnt;     /* the count entry */
	uint32_t lidx;    /* its Lua stack as placed (lua_stack()) */
	uint8_t how;      /* how it was placed, LUA_PLACE_MAX: not */
	uint8_t vm;       /* vm_class() + 1 */
	uint8_t uhow;     /* user_how() */
	uint8_t gap;      /* its user stack has a gap (LP_ADDR_GAP) */
} __attribute__((aligned(64))); /* one cache line an entry, not two */

/* What is counted: one entry per distinct (root, user frames, kernel
 * stack, VM-state pseudo-frame). */
struct count_ent {
	uint32_t root, useq, kstack, vm;
	uint64_t count;
};

/* (pid, layout generation, Lua stack, VM record) -> the Lua stack's
 * names: a Lua stack runs under many native stacks, and is named once. */
struct lnames_ent {
	uint32_t pid, lstack, vm, seq;
	uint64_t gen;
};

struct stacks {
	struct frames *fr;
	struct maps *maps;
	struct lua *lua;

	struct stack_ent *st;
	size_t nst, capst;
	uint64_t *addrs; /* every stack's addresses, leaf first */
	size_t naddrs, capaddrs;
	struct htab st_h;

	struct native_ent *nat;
	size_t nnat, capnat;
	struct htab nat_h;
	struct native_frame *nfr;
	size_t nnfr, capnfr;
	uint32_t *nids;
	size_t nnids, capnids;

	struct ures_ent *ures;
	size_t nures, capures;
	struct htab ures_h;
	struct seqtab useqs;

	struct lplace_ent *lplace;
	size_t nlplace, caplplace;
	struct htab lplace_h;
	uint64_t place[LUA_PLACE_MAX]; /* samples by how they were placed */
	uint64_t gaps;                 /* samples whose user stack has a gap */

	struct count_ent *cnt;
	size_t ncnt, capcnt;
	struct htab cnt_h;

	struct lnames_ent *lnames;
	size_t nlnames, caplnames;
	struct htab lnames_h;
	struct seqtab lseqs;

	struct seen_ent *seen; /* 64-byte aligned (seen_reserve()) */
	size_t nseen, capseen;
	struct htab seen_h;
	uint32_t vm_ids[4]; /* the pseudo-frames' names (vm_names), + 1; 0 unknown */

	uint32_t *buf; /* scratch for one stack's name ids */
	size_t capbuf;
	uint32_t *win; /* stacks_finish()'s window of stacks */
	size_t capwin;

	/* Kernel stacks' names, root first, once all KSYMS are known: by
	 * stack index, the first in kids[], UNNAMED until named. */
	uint32_t *kfirst;
	uint32_t *kids;
	size_t nkids, capkids;

	uint32_t last;   /* the count entry of the last sample */
	uint32_t *final; /* count entry -> profile stack id, once finished */
};

int stacks_new(struct stacks **out, struct frames *fr, struct maps *maps,
	       struct lua *lua)
{
	struct stacks *s = calloc(1, sizeof(*s));

	if (!s)
		return -ENOMEM;
	s->fr = fr;
	s->maps = maps;
	s->lua = lua;
	*out = s;
	return 0;
}

void stacks_free(struct stacks *s)
{
	if (!s)
		return;
	free(s->st);
	free(s->addrs);
	htab_free(&s->st_h);
	free(s->nat);
	htab_free(&s->nat_h);
	free(s->nfr);
	free(s->nids);
	free(s->kfirst);
	free(s->kids);
	free(s->ures);
	htab_free(&s->ures_h);
	seqtab_free(&s->useqs);
	free(s->lplace);
	htab_free(&s->lplace_h);
	free(s->cnt);
	htab_free(&s->cnt_h);
	free(s->seen);
	htab_free(&s->seen_h);
	free(s->lnames);
	htab_free(&s->lnames_h);
	seqtab_free(&s->lseqs);
	free(s->buf);
	free(s->win);
	free(s->final);
	free(s);
}

/* The index of stack `id`, or MISSING. */
static uint32_t find_stack(const struct stacks *s, uint64_t id)
{
	struct htab_probe p;
	int64_t i;

	htab_probe_start(&s->st_h, hash_u64(id), &p);
	while ((i = htab_probe_next(&s->st_h, &p)) >= 0)
		if (s->st[i].id == id)
			return i;
	return MISSING;
}

int stacks_define(struct stacks *s, const struct lp_stack *rec)
{
	struct stack_ent *e;
	int err;

	if (!rec->id || find_stack(s, rec->id) != MISSING)
		return 0;
	if (s->nst >= MISSING)
		return -ENOMEM;
	err = GROW(s->st, s->capst, s->nst + 1);
	if (!err)
		err = GROW(s->addrs, s->capaddrs, s->naddrs + rec->depth);
	if (!err)
		err = htab_insert(&s->st_h, hash_u64(rec->id), s->nst);
	if (err)
		return err;
	e = &s->st[s->nst++];
	e->id = rec->id;
	e->off = s->naddrs;
	e->depth = rec->depth;
	e->gap = lp_stack_has_gap(rec);
	if (rec->depth)
		memcpy(s->addrs + s->naddrs, rec->addrs,
		       rec->depth * sizeof(*rec->addrs));
	s->naddrs += rec->depth;
	return 0;
}

static int reserve_buf(struct stacks *s, size_t n)
{
	return GROW(s->buf, s->capbuf, n);
}

/* lua_stack_names(), once per Lua stack, process, layout and VM record
 * (the names of its C functions depend on the layout): the names are
 * copied to out, *n of them. */
static int lua_names(struct stacks *s, const struct maps_view *v, uint32_t lidx,
		     uint32_t *out, uint32_t *n)
{
	uint64_t gen = v->gen, hash;
	uint32_t pid = v->pid, vm = lua_vm_id(s->lua, pid), seq, len;
	const uint32_t *names;
	struct htab_probe p;
	int64_t i;
	int err;

	hash = hash_fields(pid, gen, lidx, vm);
	htab_probe_start(&s->lnames_h, hash, &p);
	while ((i = htab_probe_next(&s->lnames_h, &p)) >= 0) {
		const struct lnames_ent *e = &s->lnames[i];

		if (e->pid == pid && e->lstack == lidx && e->vm == vm && e->gen == gen) {
			names = seqtab_get(&s->lseqs, e->seq, &len);
			memcpy(out, names, len * sizeof(*names));
			*n = len;
			return 0;
		}
	}
	err = lua_stack_names(s->lua, v, lidx, out, n) ?:
	      seqtab_intern(&s->lseqs, out, *n, &seq, NULL) ?:
	      GROW(s->lnames, s->caplnames, s->nlnames + 1) ?:
	      htab_insert(&s->lnames_h, hash, s->nlnames);
	if (err)
		return err;
	s->lnames[s->nlnames++] = (struct lnames_ent){ pid, lidx, vm, seq, gen };
	return 0;
}

/* The native entry of user stack uidx in v's layout. */
static int native_get(struct stacks *s, const struct maps_view *v, uint32_t uidx,
		      const struct native_ent **out)
{
	uint32_t pid = v->pid;
	uint64_t gen = v->gen, hash = hash_fields(pid, uidx, gen, 0);
	uint32_t depth = s->st[uidx].depth;
	struct native_ent *ne;
	struct htab_probe p;
	int64_t i;
	int err;

	htab_probe_start(&s->nat_h, hash, &p);
	while ((i = htab_probe_next(&s->nat_h, &p)) >= 0) {
		ne = &s->nat[i];
		if (ne->pid == pid && ne->stack == uidx && ne->gen == gen) {
			*out = ne;
			return 0;
		}
	}
	err = GROW(s->nfr, s->capnfr, s->nnfr + depth) ?:
	      GROW(s->nat, s->capnat, s->nnat + 1) ?:
	      htab_insert(&s->nat_h, hash, s->nnat);
	if (err)
		return err;
	for (uint32_t j = 0; j < depth; j++)
		s->nfr[s->nnfr + j] = (struct native_frame){ UNNAMED, 0, 0, -1 };
	ne = &s->nat[s->nnat++];
	*ne = (struct native_ent){ pid, uidx, gen, s->nnfr };
	s->nnfr += depth;
	*out = ne;
	return 0;
}

/* The frames of address i (leaf first) of ne's stack, whose addresses
 * are a[]: frames_user_chain(), the first time. */
static int native_chain(struct stacks *s, const struct maps_view *v,
			const struct native_ent *ne, const uint64_t *a, uint32_t i,
			const uint32_t **ids, uint32_t *n, uint32_t *func)
{
	struct native_frame *f = &s->nfr[ne->first + i];

	if (f->off == UNNAMED) {
		uint32_t ch[FRAMES_MAX_CHAIN], k;
		int err;

		err = frames_user_chain(s->fr, v, a[i], i != 0, ch, &k, &f->func);
		if (!err && s->nnids + k >= UNNAMED)
			err = -ENOMEM;
		if (!err)
			err = GROW(s->nids, s->capnids, s->nnids + k);
		if (err)
			return err;
		memcpy(s->nids + s->nnids, ch, k * sizeof(*ch));
		f->off = (uint32_t)s->nnids;
		f->n = (uint8_t)k;
		s->nnids += k;
	}
	*ids = s->nids + f->off;
	*n = f->n;
	*func = f->func;
	return 0;
}

/* Whether address i of ne's stack, looked up at `at` in v, is in
 * anonymous memory. */
static int native_anon(struct stacks *s, const struct maps_view *v, const struct native_ent *ne,
		       uint32_t i, uint64_t at)
{
	struct native_frame *f = &s->nfr[ne->first + i];

	if (f->anon < 0) {
		const struct map_ent *m = maps_view_find(v, at);

		f->anon = m && !m->path[0];
	}
	return f->anon;
}

/* Whether the leaf of ne's stack (nd addresses a) is a helper of the VM
 * (its code in [vs, ve)) that a trace called: lj_vm_modi for an integer
 * %, and its caller the trace's code (in [ts, te), or anonymous).  The
 * trace's Lua frames stand for both, as the interpreter's frame does for
 * the helpers it calls, which no stack shows either. */
static int trace_helper_leaf(struct stacks *s, const struct maps_view *v,
			     const struct native_ent *ne, const uint64_t *a, uint32_t nd,
			     uint64_t vs, uint64_t ve, uint64_t ts, uint64_t te)
{
	if (nd < 2 || a[0] < vs || a[0] >= ve || a[1] == LP_ADDR_GAP)
		return 0;
	return (a[1] - 1 >= ts && a[1] - 1 < te) || native_anon(s, v, ne, 1, a[1] - 1);
}

/* Names a user stack's frames against v's layout as it is now, with
 * the Lua stack's frames in place of the native frames of each VM entry,
 * and [truncated] at the root of a native stack that was cut (how &
 * UF_CUT).  uidx or lidx may be NONE. */
static int resolve_user(struct stacks *s, const struct maps_view *v, uint32_t uidx,
			uint32_t lidx, int how, uint32_t *useq)
{
	uint32_t pid = v->pid;
	const struct stack_ent *e = uidx < MISSING ? &s->st[uidx] : NULL;
	const struct native_ent *ne = NULL;
	/* Not s->addrs + 0 while s->addrs is NULL (only empty stacks yet):
	 * arithmetic on a NULL pointer is undefined. */
	const uint64_t *a = e && e->depth ? s->addrs + e->off : NULL;
	uint32_t nd = e ? e->depth : 0, nl = 0, li = 0, k = 0, *lua;
	uint32_t last = UINT32_MAX; /* the function of the frame last added */
	uint32_t last_n = 0;        /* the frames of the native address last added */
	uint32_t leaf_n = 0;        /* frames of the leaf address */
	size_t ld = lidx < MISSING ? lua_stack_depth(s->lua, lidx) : 0;
	size_t room = (size_t)nd * FRAMES_MAX_CHAIN + ld + 3;
	uint64_t vs = 0, ve = 0, ts = 0, te = 0;
	int have_vm, trace, any_vm = 0, skip_gap = 0, helper = 0, err;

	/* A native address may be several frames (inlined functions). */
	err = reserve_buf(s, room + ld + 2);
	if (!err && nd)
		err = native_get(s, v, uidx, &ne);
	if (err)
		return err;
	/* The Lua names go after the result's room. */
	lua = s->buf + room;
	if (lidx < MISSING) {
		err = lua_names(s, v, lidx, lua, &nl);
		if (err)
			return err;
	}
	have_vm = nl && lua_vm_range(s->lua, pid, &vs, &ve) == 0;
	trace = lidx < MISSING && lua_stack_in_trace(s->lua, lidx);
	if (trace)
		lua_trace_code(s->lua, lidx, &ts, &te);
	if (trace && have_vm && !(how & UF_SUSPENDED))
		helper = trace_helper_leaf(s, v, ne, a, nd, vs, ve, ts, te);
	if (how & UF_SUSPENDED) {
		/* A coroutine suspended at a yield runs on no native stack:
		 * its frames go above the whole stack of the thread that
		 * resumes it, whatever VM entries that one crossed. */
		for (; li < nl; li++)
			if (lua[li] != LUA_ENTRY_MARK)
				s->buf[k++] = lua[li];
		have_vm = 0;
		any_vm = 1;
	}
	for (uint32_t i = helper, n; i < nd; i++) {
		uint64_t at = i ? a[i] - 1 : a[i];
		const uint32_t *ids;
		int vm = at >= vs && at < ve;
		/* A gap: the walk stepped over another JIT's code (the frame
		 * before it) and the C functions that called it, which it
		 * could not see, to the VM's innermost C frame, where a
		 * trace's code would have taken it.  The gap stands where
		 * that code would: the innermost VM entry's Lua frames go
		 * after it (bpf/unwind_native.bpf.h, unwind_jit_step()). */
		int gap = i && a[i] == LP_ADDR_GAP;
		int before_gap = i + 1 < nd && a[i + 1] == LP_ADDR_GAP;

		/* The code the walk stepped over as another JIT's was another
		 * trace's of the process (a side trace's number names the
		 * root's loop it jumped back into): trace code, and no gap. */
		if (before_gap && trace && !any_vm && lua_trace_holding(s->lua, pid, at) >= 0) {
			before_gap = 0;
			skip_gap = 1;
			vm = 1;
		}
		if (gap && skip_gap)
			continue;
		if (gap) {
			err = frames_name(s->fr, "[unknown frames]", &s->buf[k]);
			if (err)
				return err;
			last = s->buf[k++];
			vm = 1;
		}

		/* Trace code (anonymous memory, before any VM frame) stands
		 * for the innermost VM entry, as the interpreter's frame
		 * would: it runs on that entry's C frame.  The sample's own
		 * trace is known to be code even where the mappings lag
		 * behind (LuaJIT remaps its code areas when it flushes).
		 * Where no trace may run (a C function called from Lua),
		 * anonymous code is another JIT's, PCRE2's say: a native
		 * frame of its own, as the walker took it (it stopped).  So
		 * is the code the walk stopped at while a trace ran, if
		 * neither the trace's code nor its mapping holds it: another
		 * JIT's, called from the trace through the FFI
		 * (bpf/unwind_native.bpf.h, unwind_jit_step()).  Code the
		 * walk stepped over was a trace's, as it judged, but for
		 * code before a gap: it was another JIT's (above). */
		if (!vm && !before_gap && (trace || (li == 0 && (how & UF_TRACE_MAY_RUN))) &&
		    !any_vm) {
			if (trace && ts < te && (how & UF_STOP_JIT) && i + 1 == nd)
				vm = (at >= ts && at < te) ||
				     (native_anon(s, v, ne, i, at) &&
				      maps_view_find(v, at) == maps_view_find(v, ts));
			else
				vm = native_anon(s, v, ne, i, at) || (trace && at >= ts && at < te);
		}
		if (have_vm && li < nl && vm) {
			/* This VM entry's Lua frames; a C function's Lua-level
			 * frame repeats the native frame just above it.  An
			 * entry with none (see bpf/walk_lua.bpf.h) keeps its
			 * native frame when it is a C frame the VM pushed for
			 * C code alone (the JIT compiler, the parser), but not
			 * as the leaf: a helper the interpreter called (vm_mod
			 * for %, vm_floor) does the Lua function's own work,
			 * as the interpreter's pc would, which no stack shows
			 * either (and stripped, it has no name). */
			int empty = lua[li] == LUA_ENTRY_MARK;

			/* A builtin's C code, the native frame before this
			 * one, is the builtin's own frame (lua_stack_builtin_code). */
			if (!any_vm && li == 0 && last_n && last_n <= k &&
			    lua_stack_builtin_code(s->lua, lidx)) {
				k -= last_n;
				last = k ? s->buf[k - 1] : UINT32_MAX;
			}
			any_vm = 1;
			if (!empty && k && lua[li] == last)
				li++;
			while (li < nl && lua[li] != LUA_ENTRY_MARK)
				last = s->buf[k++] = lua[li++];
			li += li < nl;
			if (!empty || i == 0)
				continue;
		}
		if (gap)
			continue;
		err = native_chain(s, v, ne, a, i, &ids, &n, &last);
		if (err)
			return err;
		memcpy(&s->buf[k], ids, n * sizeof(*ids));
		k += n;
		last_n = n;
		if (i == 0)
			leaf_n = k;
	}
	if (nl && !any_vm && k > leaf_n)
		k = leaf_n; /* no VM entry seen: only the native leaf is trusted */
	for (; li < nl; li++)
		if (lua[li] != LUA_ENTRY_MARK)
			s->buf[k++] = lua[li];
	if (how & UF_CUT) {
		err = frames_name(s->fr, "[truncated]", &s->buf[k++]);
		if (err)
			return err;
	}
	/* Leaf first so far; root first in the result. */
	for (uint32_t i = 0; i < k / 2; i++) {
		uint32_t t = s->buf[i];

		s->buf[i] = s->buf[k - 1 - i];
		s->buf[k - 1 - i] = t;
	}
	return seqtab_intern(&s->useqs, s->buf, k, useq, NULL);
}

/* The user frames of a sample: user stack idx (NONE: none, MISSING:
 * undefined), Lua stack id lid (0: none) as placed at lidx (UINT32_MAX:
 * none or undefined), how (UF_*) the rest of the sample says. */
static int user_frames(struct stacks *s, const struct maps_view *v, uint32_t idx,
		       uint64_t lid, uint32_t lidx, int how, uint32_t *useq)
{
	uint32_t pid = v->pid;
	uint64_t gen = v->gen, hash;
	struct htab_probe p;
	int64_t i;
	int err;

	if (lid && lidx == UINT32_MAX)
		lidx = MISSING;
	else if (!lid)
		lidx = NONE;
	if (idx == MISSING || lidx == MISSING) {
		*useq = MISSING;
		return 0;
	}
	hash = hash_fields((uint64_t)how << 32 | pid, idx, lidx, gen);
	htab_probe_start(&s->ures_h, hash, &p);
	while ((i = htab_probe_next(&s->ures_h, &p)) >= 0) {
		const struct ures_ent *u = &s->ures[i];

		if (u->pid == pid && u->stack == idx && u->lstack == lidx &&
		    u->gen == gen && u->how == how) {
			*useq = u->useq;
			return 0;
		}
	}
	err = resolve_user(s, v, idx, lidx, how, useq);
	if (!err)
		err = GROW(s->ures, s->capures, s->nures + 1);
	if (!err)
		err = htab_insert(&s->ures_h, hash, s->nures);
	if (err)
		return err;
	s->ures[s->nures].pid = pid;
	s->ures[s->nures].stack = idx;
	s->ures[s->nures].lstack = lidx;
	s->ures[s->nures].gen = gen;
	s->ures[s->nures].useq = *useq;
	s->ures[s->nures].how = how;
	s->nures++;
	return 0;
}

static const struct frame_info vm_info = {
	.kind = FRAME_VM, .func = FRAMEINFO_NONE, .file = FRAMEINFO_NONE,
	.mapping = FRAMEINFO_NONE,
};

/* A sample in a trace whose walk stopped at code outside the trace's
 * (bpf/unwind_native.bpf.h, unwind_jit_step()) ran another JIT's code,
 * called from the trace through the FFI, not compiled Lua.  (Since the
 * walk steps over such code to the VM's frame, leaving a gap, lua_stack()
 * tells them by the gap.) */
static void called_out(const struct lp_sample *smp, enum lua_place *how)
{
	if (*how == LUA_UNPLACED_OUTSIDE && smp->ustack && smp->ustop == LP_USTOP_R_JIT)
		*how = LUA_CALLED_OUT;
}

/* The Lua stack of a sample, placed in the functions its trace inlined
 * if it was taken in compiled code (lua_place(), once per distinct user
 * and Lua stack): its index in the lua, UINT32_MAX if the sample has none
 * or names one never defined; *how how it was placed, LUA_PLACE_MAX when
 * it was not in compiled code. */
static int lua_stack(struct stacks *s, const struct lp_sample *smp, uint32_t idx,
		     uint32_t *lidx, enum lua_place *how)
{
	uint32_t l = smp->lstack ? lua_find_stack(s->lua, smp->lstack) : UINT32_MAX;
	uint64_t hash = hash_fields(idx, l, 0, 0);
	const struct stack_ent *e;
	struct lplace_ent *pe;
	struct htab_probe p;
	int64_t i;
	int err;

	*lidx = l;
	*how = LUA_PLACE_MAX;
	if (l == UINT32_MAX || !lua_stack_in_trace(s->lua, l))
		return 0;
	htab_probe_start(&s->lplace_h, hash, &p);
	while ((i = htab_probe_next(&s->lplace_h, &p)) >= 0) {
		pe = &s->lplace[i];
		if (pe->stack == idx && pe->lstack == l)
			goto found;
	}
	err = GROW(s->lplace, s->caplplace, s->nlplace + 1);
	if (err)
		return err;
	pe = &s->lplace[s->nlplace];
	pe->stack = idx;
	pe->lstack = l;
	e = idx < MISSING ? &s->st[idx] : NULL;
	/* Not s->addrs + 0 while s->addrs is NULL (as resolve_user()). */
	err = lua_place(s->lua, l, e && e->depth ? s->addrs + e->off : NULL, e ? e->depth : 0,
			&pe->placed, &pe->how);
	/* Frames the walk could not see under the trace: another JIT's
	 * code, which the trace called (called_out()), with or without the
	 * trace's snapshots. */
	if (!err && pe->how != LUA_NOT_COMPILED && pe->how != LUA_PLACED &&
	    pe->how != LUA_MARKED && e && e->gap)
		pe->how = LUA_CALLED_OUT;
	if (!err)
		err = htab_insert(&s->lplace_h, hash, s->nlplace);
	if (err)
		return err;
	s->nlplace++;
found:
	*how = pe->how;
	*lidx = pe->placed;
	called_out(smp, how);
	return 0;
}

void stacks_place_counts(const struct stacks *s, uint64_t counts[LUA_PLACE_MAX])
{
	memcpy(counts, s->place, sizeof(s->place));
}

uint64_t stacks_gap_count(const struct stacks *s)
{
	return s->gaps;
}

/* Which pseudo-frame a sample gets for time the LuaJIT VM spent outside
 * Lua code (docs: [GC], [trace exit], [JIT compiler]), above its kernel
 * frames, or for a wait off the CPU in uninterruptible sleep (D: disk
 * I/O, some locks), at the leaf, below them: its index in vm_names, or -1
 * for none.  An interruptible sleep, most waits, has none. */
#define VM_UNINTERRUPTIBLE 3
static const char *const vm_names[4] = { "[GC]", "[trace exit]", "[JIT compiler]",
					 "[uninterruptible]" };

static int vm_class(const struct lp_sample *smp)
{
	if (smp->flags & LP_SAMPLE_WAIT_UNINTERRUPTIBLE)
		return VM_UNINTERRUPTIBLE;
	if (smp->lua_state == LP_LUA_NONE || smp->vmstate >= 0)
		return -1;
	switch (~smp->vmstate) {
	case 2: /* LJ_VMST_GC */
		return 0;
	case 3: /* LJ_VMST_EXIT */
		return 1;
	case 4: /* LJ_VMST_RECORD */
	case 5: /* LJ_VMST_OPT */
	case 6: /* LJ_VMST_ASM */
		return 2;
	}
	return -1;
}

/* UF_CUT if the sample's native walk did not reach the root;
 * UF_TRACE_MAY_RUN if its vmstate says a trace may run, as the sampler
 * judges (bpf/unwind_native.bpf.h, in_trace): a trace, the interpreter
 * (a trace's first instructions run before they set vmstate), its exit
 * handler, the GC (a trace calls it). */
static int user_how(const struct lp_sample *smp)
{
	int how = smp->ustack && lp_ustop_cut(smp->ustop) ? UF_CUT : 0;

	if (smp->ustack && smp->ustop == LP_USTOP_R_JIT)
		how |= UF_STOP_JIT;
	if (smp->lua_state == LP_LUA_SUSPENDED)
		return how | UF_SUSPENDED;

	if (smp->lua_state == LP_LUA_WALKED &&
	    (smp->vmstate >= 0 || ~smp->vmstate == 0 /* LJ_VMST_INTERP */ ||
	     ~smp->vmstate == 2 /* LJ_VMST_GC */ || ~smp->vmstate == 3 /* LJ_VMST_EXIT */))
		how |= UF_TRACE_MAY_RUN;
	return how;
}

/* The name id of pseudo-frame class k, or NONE for -1. */
static int vm_pseudo_frame(struct stacks *s, int k, uint32_t *id)
{
	int err;

	*id = NONE;
	if (k < 0)
		return 0;
	if (!s->vm_ids[k]) {
		err = frames_name_as(s->fr, vm_names[k], &vm_info, id);
		if (err)
			return err;
		s->vm_ids[k] = *id + 1;
	}
	*id = s->vm_ids[k] - 1;
	return 0;
}

/* The count entry of a sample not seen before, whose Lua stack
 * lua_stack() placed at lidx: its frames resolved. */
static int place_sample(struct stacks *s, const struct lp_sample *smp,
			const struct maps_view *v, uint32_t uidx, uint32_t lidx, uint32_t root,
			int vmk, uint32_t *entry, int *missing)
{
	uint32_t useq = NONE, kstack = NONE, vm;
	struct count_ent *c;
	struct htab_probe p;
	uint64_t hash;
	int64_t i;
	int err;

	if (smp->ustack || smp->lstack) {
		err = user_frames(s, v, uidx, smp->lstack, lidx, user_how(smp), &useq);
		if (err)
			return err;
	}
	if (smp->kstack)
		kstack = find_stack(s, smp->kstack);
	*missing = useq == MISSING || kstack == MISSING;
	err = vm_pseudo_frame(s, vmk, &vm);
	if (err)
		return err;
	hash = hash_fields(root, useq, kstack, vm);
	htab_probe_start(&s->cnt_h, hash, &p);
	while ((i = htab_probe_next(&s->cnt_h, &p)) >= 0) {
		c = &s->cnt[i];
		if (c->root == root && c->useq == useq && c->kstack == kstack &&
		    c->vm == vm) {
			*entry = (uint32_t)i;
			return 0;
		}
	}
	err = GROW(s->cnt, s->capcnt, s->ncnt + 1);
	if (!err)
		err = htab_insert(&s->cnt_h, hash, s->ncnt);
	if (err)
		return err;
	*entry = s->ncnt;
	c = &s->cnt[s->ncnt++];
	c->root = root;
	c->useq = useq;
	c->kstack = kstack;
	c->vm = vm;
	c->count = 0;
	return 0;
}

/* Every field but root (a function of the pid: the process's name), so
 * that stacks_prefetch() can find the slot before root is known.  One
 * multiply per field, independent of each other, and one finalizer: a
 * chain of hash_mix() would be as long as the fields are many, and every
 * sample pays it. */
static uint64_t seen_hash(const struct seen_ent *e)
{
	return hash_u64((e->ustack * 0x9e3779b97f4a7c15ull) ^
			(e->lstack * 0xc2b2ae3d27d4eb4full) ^
			(e->kstack * 0x165667b19e3779f9ull) ^
			(e->gen * 0xd6e8feb86659fd93ull) ^
			((uint64_t)e->pid << 9 | (uint64_t)e->vm << 2 | e->uhow));
}

/* Room for one more seen entry: the array doubles (from 4096), copied
 * to keep its entries on cache lines of their own, which realloc() would
 * not. */
static int seen_reserve(struct stacks *s)
{
	size_t ncap = s->capseen ? 2 * s->capseen : 4096;
	struct seen_ent *v;

	if (s->nseen < s->capseen)
		return 0;
	if (ncap > SIZE_MAX / sizeof(*v) || s->nseen >= UINT32_MAX - 1)
		return -ENOMEM;
	v = aligned_alloc(64, ncap * sizeof(*v));
	if (!v)
		return -ENOMEM;
	if (s->nseen)
		memcpy(v, s->seen, s->nseen * sizeof(*v));
	free(s->seen);
	s->seen = v;
	s->capseen = ncap;
	return 0;
}

/* The seen table's key of a sample (root aside), and the view of its
 * process's layout the rest of its counting reads: the one lookup of its
 * process in the layouts. */
static void seen_key(const struct stacks *s, const struct lp_sample *smp, struct maps_view *v,
		     struct seen_ent *k)
{
	maps_view(s->maps, smp->pid, v);
	*k = (struct seen_ent){ .ustack = smp->ustack, .lstack = smp->lstack,
				.kstack = smp->kstack,
				.gen = v->gen,
				.pid = smp->pid,
				.vm = (uint8_t)(vm_class(smp) + 1),
				.uhow = (uint8_t)user_how(smp) };
}

void stacks_prefetch(const struct stacks *s, const struct lp_event *v, unsigned n)
{
	uint64_t hash[STACKS_PREFETCH_MAX];
	struct maps_view mv;
	struct seen_ent k;

	if (n > STACKS_PREFETCH_MAX)
		n = STACKS_PREFETCH_MAX;
	for (unsigned i = 0; i < n; i++) {
		seen_key(s, &v[i].s, &mv, &k);
		hash[i] = seen_hash(&k);
		htab_prefetch(&s->seen_h, hash[i]);
	}
	for (unsigned i = 0; i < n; i++) {
		int64_t e = htab_peek(&s->seen_h, hash[i]);

		if (e >= 0)
			__builtin_prefetch(&s->seen[e]);
	}
}

int stacks_add_sample(struct stacks *s, const struct lp_sample *smp, uint64_t weight,
		      uint32_t root, uint32_t *lidx, int *missing)
{
	struct maps_view mv;
	struct seen_ent k, *e;
	struct htab_probe p;
	enum lua_place how;
	uint32_t entry, uidx;
	uint64_t hash;
	int64_t i;
	int err;

	seen_key(s, smp, &mv, &k);
	k.root = root;
	hash = seen_hash(&k);
	htab_probe_start(&s->seen_h, hash, &p);
	while ((i = htab_probe_next(&s->seen_h, &p)) >= 0) {
		e = &s->seen[i];
		if (e->ustack == k.ustack && e->lstack == k.lstack &&
		    e->kstack == k.kstack && e->gen == k.gen && e->pid == k.pid &&
		    e->root == k.root && e->vm == k.vm && e->uhow == k.uhow) {
			e->count = count_add(e->count, weight);
			s->last = e->cnt;
			*missing = 0;
			*lidx = e->lidx;
			if (e->how < LUA_PLACE_MAX)
				s->place[e->how] = count_add(s->place[e->how], weight);
			s->gaps = count_add(s->gaps, e->gap ? weight : 0);
			return 0;
		}
	}
	uidx = smp->ustack ? find_stack(s, smp->ustack) : NONE;
	err = lua_stack(s, smp, uidx, lidx, &how) ?:
	      place_sample(s, smp, &mv, uidx, *lidx, root, (int)k.vm - 1, &entry, missing);
	if (err)
		return err;
	if (how < LUA_PLACE_MAX)
		s->place[how] = count_add(s->place[how], weight);
	k.gap = uidx < MISSING && s->st[uidx].gap;
	s->gaps = count_add(s->gaps, k.gap ? weight : 0);
	s->last = entry;
	if (*missing) {
		/* Not kept: the stack may be defined later. */
		s->cnt[entry].count = count_add(s->cnt[entry].count, weight);
		return 0;
	}
	err = seen_reserve(s) ?: htab_insert(&s->seen_h, hash, s->nseen);
	if (err)
		return err;
	k.cnt = entry;
	k.lidx = *lidx;
	k.how = (uint8_t)how;
	k.count = weight;
	s->seen[s->nseen++] = k;
	return 0;
}

/* Names kernel stack idx's frames, root first, into kids[] (from
 * kfirst[idx]) the first time. */
static int kernel_names(struct stacks *s, uint32_t idx)
{
	const struct stack_ent *ke = &s->st[idx];
	int err;

	if (s->kfirst[idx] != UNNAMED)
		return 0;
	if (s->nkids + ke->depth >= UNNAMED)
		return -ENOMEM;
	err = GROW(s->kids, s->capkids, s->nkids + ke->depth);
	if (err)
		return err;
	for (uint32_t i = 0; i < ke->depth; i++) {
		uint32_t leaf_dist = ke->depth - 1 - i;

		err = frames_kernel(s->fr, s->addrs[ke->off + leaf_dist],
				    leaf_dist != 0, &s->kids[s->nkids + i]);
		if (err)
			return err;
	}
	s->kfirst[idx] = (uint32_t)s->nkids;
	s->nkids += ke->depth;
	return 0;
}

/* Builds one counted triple's full stack into s->buf; returns its depth
 * in *n.  Order: root, user frames root first, kernel frames root first. */
static int flatten(struct stacks *s, const struct count_ent *c, uint32_t *n)
{
	const struct stack_ent *ke = c->kstack < MISSING ? &s->st[c->kstack] : NULL;
	const uint32_t *u = NULL;
	uint32_t un = 0, k = 0, id;
	size_t need;
	int err;

	if (c->useq < MISSING)
		u = seqtab_get(&s->useqs, c->useq, &un);
	need = (size_t)un + (ke ? ke->depth : 0) + 4;
	err = reserve_buf(s, need);
	if (err)
		return err;
	if (c->root != STACKS_NO_ROOT)
		s->buf[k++] = c->root;
	if (c->useq == MISSING) {
		err = frames_name(s->fr, "[missing stack]", &s->buf[k++]);
		if (err)
			return err;
	}
	for (uint32_t i = 0; i < un; i++)
		s->buf[k++] = u[i];
	if (c->vm != NONE && c->vm + 1 != s->vm_ids[VM_UNINTERRUPTIBLE])
		s->buf[k++] = c->vm;
	if (c->kstack == MISSING) {
		err = frames_name(s->fr, "[missing stack]", &s->buf[k++]);
		if (err)
			return err;
	}
	if (ke) {
		err = kernel_names(s, c->kstack);
		if (err)
			return err;
		if (ke->depth) /* an empty kernel stack: no names, maybe no kids yet */
			memcpy(&s->buf[k], s->kids + s->kfirst[c->kstack],
			       ke->depth * sizeof(*s->kids));
		k += ke->depth;
	}
	if (c->vm != NONE && c->vm + 1 == s->vm_ids[VM_UNINTERRUPTIBLE])
		s->buf[k++] = c->vm;
	if (k == (c->root != STACKS_NO_ROOT)) {
		err = frames_name(s->fr, "[no stack]", &id);
		if (err)
			return err;
		s->buf[k++] = id;
	}
	*n = k;
	return 0;
}

/* Count entries are flattened and interned into the profile's stacks
 * FINISH_WINDOW at a time: the window's stacks are made and hashed first,
 * their slots fetched, then interned, so that a wide trace's lookups
 * overlap instead of waiting one after another. */
#define FINISH_WINDOW 16

static int finish_window(struct stacks *s, struct profile *p, size_t from, size_t to)
{
	size_t off[FINISH_WINDOW + 1], len = 0;
	uint64_t hash[FINISH_WINDOW];
	uint32_t n, id;
	int created, err;

	for (size_t i = from; i < to; i++) {
		err = flatten(s, &s->cnt[i], &n) ?: GROW(s->win, s->capwin, len + n);
		if (err)
			return err;
		memcpy(s->win + len, s->buf, n * sizeof(*s->buf));
		off[i - from] = len;
		len += n;
		hash[i - from] = seqtab_hash(s->win + off[i - from], n);
		seqtab_prefetch(&p->stacks, hash[i - from]);
	}
	off[to - from] = len;
	for (size_t i = from; i < to; i++) {
		size_t w = i - from;

		err = seqtab_intern_hashed(&p->stacks, s->win + off[w], (uint32_t)(off[w + 1] - off[w]),
					   hash[w], &id, &created);
		if (!err && created)
			err = GROW(p->counts, p->counts_cap, p->stacks.len);
		if (err)
			return err;
		if (created)
			p->counts[id] = 0;
		s->final[i] = id;
		p->counts[id] = count_add(p->counts[id], s->cnt[i].count);
		p->shown = count_add(p->shown, s->cnt[i].count);
	}
	return 0;
}

int stacks_finish(struct stacks *s, struct profile *p)
{
	int err = 0;

	for (size_t i = 0; i < s->nseen; i++)
		s->cnt[s->seen[i].cnt].count = count_add(s->cnt[s->seen[i].cnt].count,
							  s->seen[i].count);
	s->final = calloc(s->ncnt ? s->ncnt : 1, sizeof(*s->final));
	s->kfirst = malloc((s->nst ? s->nst : 1) * sizeof(*s->kfirst));
	if (!s->final || !s->kfirst)
		return -ENOMEM;
	for (size_t i = 0; i < s->nst; i++)
		s->kfirst[i] = UNNAMED;
	for (size_t i = 0; i < s->ncnt && !err; i += FINISH_WINDOW)
		err = finish_window(s, p, i, s->ncnt - i < FINISH_WINDOW ? s->ncnt : i + FINISH_WINDOW);
	return err;
}

uint32_t stacks_last_entry(const struct stacks *s)
{
	return s->last;
}

uint32_t stacks_entry_stack(const struct stacks *s, uint32_t entry)
{
	return s->final && entry < s->ncnt ? s->final[entry] : UINT32_MAX;
}

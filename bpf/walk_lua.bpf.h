/* SPDX-License-Identifier: GPL-2.0 */
/*
 * walk_lua.bpf.h - finds the running LuaJIT coroutine at a sample and walks
 * its Lua frames, leaf first, into the sample event.  Included by
 * sampler.bpf.c; the layouts it reads are in bpf/luajit.h.
 *
 * Which global_State: the interpreter keeps DISPATCH (= G + g2disp) in r14,
 * so r14 - g2disp is a candidate G, trusted only if it validates: the
 * GG_State's main thread must be where G says (G->mainthref == G - gg_g)
 * and the running coroutine must point back (G->cur_L->glref == G).  A
 * validated G is cached per thread, for samples taken where r14 is not
 * DISPATCH (inside C functions, GC, libc).
 *
 * Which base: the BASE register (rdx) is the only fresh one while the
 * interpreter runs, because L->base is written back only at calls and
 * exits; but rdx means BASE only when the pc is inside the VM's own code.
 * Anywhere else (a C function, the GC, a C helper called by the VM), the
 * VM has stored L->base and the C frame's saved PC before leaving.
 *
 * The walk follows lj_debug_frame(): a Lua-called frame's link is the
 * return PC, whose CALL instruction's A operand gives the caller's frame;
 * other links are a delta and a type.  C and CP links mark a VM entry
 * from C (lua_call/lua_pcall), where native frames belong.  A coroutine's
 * stack ends at its first frame.  If Lua resumed it (coroutine.resume or
 * a wrap function), the resume ran in the resumer's own C frame and called
 * vm_resume, so the coroutine's outermost C frame lies exactly cf_size
 * below the resumer's, whose saved L is the resumer: the walk goes on
 * there if that L's C frame is indeed that one and its G is ours.  Resumed
 * from C (lua_resume, as nginx does), the check fails and native frames
 * follow instead.
 *
 * Every read of target memory may fail (freed coroutine stack, garbage
 * pointer): the walk then ends with a TRUNC frame, and never emits a
 * frame it could not read.
 *
 * Each read of target memory costs about 50 ns, most of what the walk
 * costs, so fields that lie close together are read in one go: a
 * lua_State's (struct lj_state), a function's header and pc, a
 * prototype's chunk name and lines.  A layout whose fields lie further
 * apart than LJ_BLOCK bytes is read field by field, as is a block whose
 * one read fails (it may run past the end of a mapping).
 */
#ifndef LUAPROF_BPF_WALK_LUA_BPF_H
#define LUAPROF_BPF_WALK_LUA_BPF_H

#include "bpf/luajit.h"
#include "bpf/sampler.h"

#define LUA_WALK_STEPS (2 * LP_MAX_LUA) /* frames + skipped dummy/varg frames */
#define LUA_RESUMER_HOPS 16    /* Lua-resumed coroutines followed */
#define GC64_PTR_MASK ((1ull << 47) - 1)
#define LJ_BLOCK 128 /* bytes read at once; a power of two */

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16384);
	__type(key, __u32); /* tgid */
	__type(value, struct lj_proc);
} lj_procs SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 65536);
	__type(key, __u32);   /* tid */
	__type(value, __u64); /* last validated G */
} lj_thread_G SEC(".maps");

/* The fields of a lua_State the walk reads. */
struct lj_state {
	__u64 glref, base, stack, maxstack, cframe;
};

/* Kept in a map value (see lua_walk_scratch), which can hold no usable
 * pointer: the layout is copied in, and the sample being filled is the
 * CPU's sample_scratch, looked up where needed. */
struct lua_walk {
	struct lj_layout lo;
	__u8 block[LJ_BLOCK + 8]; /* the last block read (+8: see block_u64) */
	__u64 G, mainL;
	__u64 L;     /* the lua_State being walked */
	__u64 frame; /* address of the current frame's link slot */
	__u64 bot;   /* walk while frame > bot */
	__u64 pc;    /* the current frame's pc, 0 unknown */
	__u64 cf;    /* the innermost C frame of L not yet passed */
	__u64 outer_cf; /* the outermost C frame of L seen so far */
	__u32 n;     /* frames emitted */
	__u32 hops;  /* coroutine boundaries crossed */
	int leaf_in_c; /* the tick hit C code called by the interpreter */
	__u8 last_kind;
	int skip_next; /* the next frame is a vararg function's own */
	int done;
};

/* The walk's state lives in a per-CPU map value, not on the stack: the
 * verifier tracks stack values exactly through every bpf_loop iteration,
 * and the combinations of frame count, kind and flags would exceed its
 * budget; map values it treats as unknown, which is what they are. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct lua_walk);
} lua_walk_scratch SEC(".maps");

static __always_inline int read_u64(__u64 *v, __u64 addr)
{
	return bpf_probe_read_user(v, sizeof(*v), (const void *)addr);
}

/* A GCRef or MRef: 8 bytes with GC64, else 4, zero-extended. */
static __always_inline int read_ref(const struct lj_layout *lo, __u64 *v, __u64 addr)
{
	__u32 v32;

	if (lo->ref_size == 8)
		return read_u64(v, addr);
	if (bpf_probe_read_user(&v32, sizeof(v32), (const void *)addr))
		return -1;
	*v = v32;
	return 0;
}

/* Reads span bytes at addr into w->block: 0, or -1 if span is over
 * LJ_BLOCK or the read fails. */
static __always_inline int read_block(struct lua_walk *w, __u64 addr, __u32 span)
{
	if (span > LJ_BLOCK)
		return -1;
	return bpf_probe_read_user(w->block, span, (const void *)addr) ? -1 : 0;
}

/* The 8 (4) bytes at rel in the last block read: rel is masked into the
 * block, which has 8 bytes of slack, for the verifier; callers have
 * checked that rel + 8 is within what was read. */
static __always_inline __u64 block_u64(const struct lua_walk *w, __u32 rel)
{
	return *(const __u64 *)&w->block[rel & (LJ_BLOCK - 1)];
}

static __always_inline __u64 block_ref(const struct lua_walk *w, __u32 rel)
{
	if (w->lo.ref_size == 8)
		return block_u64(w, rel);
	return *(const __u32 *)&w->block[rel & (LJ_BLOCK - 1)];
}

static __always_inline __u32 min_u32(__u32 a, __u32 b) { return a < b ? a : b; }
static __always_inline __u32 max_u32(__u32 a, __u32 b) { return a > b ? a : b; }

/* The fields of lua_State L the walk needs: one read when they lie within
 * LJ_BLOCK bytes (the 8-byte ends of the refs cover the 4-byte ones). */
static __always_inline int read_state(struct lua_walk *w, __u64 L, struct lj_state *st)
{
	const struct lj_layout *lo = &w->lo;
	__u32 first = min_u32(min_u32(min_u32(lo->l_glref, lo->l_base),
				      min_u32(lo->l_stack, lo->l_maxstack)), lo->l_cframe);
	__u32 end = max_u32(max_u32(max_u32(lo->l_glref, lo->l_base),
				    max_u32(lo->l_stack, lo->l_maxstack)), lo->l_cframe) + 8;

	if (!read_block(w, L + first, end - first)) {
		st->glref = block_ref(w, lo->l_glref - first);
		st->base = block_u64(w, lo->l_base - first);
		st->stack = block_ref(w, lo->l_stack - first);
		st->maxstack = block_ref(w, lo->l_maxstack - first);
		st->cframe = block_u64(w, lo->l_cframe - first);
		return 0;
	}
	if (read_ref(lo, &st->glref, L + lo->l_glref) ||
	    read_u64(&st->base, L + lo->l_base) ||
	    read_ref(lo, &st->stack, L + lo->l_stack) ||
	    read_ref(lo, &st->maxstack, L + lo->l_maxstack) ||
	    read_u64(&st->cframe, L + lo->l_cframe))
		return -1;
	return 0;
}

static __always_inline struct lp_lua_frame *next_slot(struct lua_walk *w)
{
	struct lp_event_sample *e;
	__u32 n = w->n, zero = 0;

	e = bpf_map_lookup_elem(&sample_scratch, &zero);
	if (!e || n >= LP_MAX_LUA)
		return NULL;
	return &e->lua[n];
}

static __always_inline void emit(struct lua_walk *w, __u8 kind, __u64 addr,
				 __u32 pc, __u8 link, __u16 fingerprint)
{
	struct lp_lua_frame *f = next_slot(w);

	if (!f)
		return;
	f->addr = addr;
	f->pc = pc;
	f->kind = kind;
	f->link = link;
	f->fingerprint = fingerprint;
	w->n++;
	w->last_kind = kind;
}

/* A VM entry from C: where the native frames of that entry belong.  Two
 * boundaries with no Lua frame between are one. */
static __always_inline void emit_entry(struct lua_walk *w, __u64 cf)
{
	if (w->last_kind != LP_LUA_FRAME_ENTRY)
		emit(w, LP_LUA_FRAME_ENTRY, cf, 0, 0, 0);
}

static __always_inline void truncate_walk(struct lua_walk *w, __u32 why)
{
	/* The last slot is kept for this marker. */
	if (w->n >= LP_MAX_LUA)
		w->n = LP_MAX_LUA - 1;
	/* addr: the frame the walk stopped at, for whoever debugs it. */
	emit(w, LP_LUA_FRAME_TRUNC, w->frame, why, 0, 0);
	w->done = 1;
}

/* G validates if its GG_State's main thread is where G says and the
 * running coroutine belongs to it; a G that validated before on this
 * thread (known) needs only the second.  Fills *curL and its fields. */
static __always_inline int valid_G(struct lua_walk *w, __u64 G, int known,
				   __u64 *curL, struct lj_state *st)
{
	const struct lj_layout *lo = &w->lo;
	__u64 m, l;

	if (G < 4096)
		return 0;
	if (!known && (read_ref(lo, &m, G + lo->g_mainthref) || m != G - lo->gg_g))
		return 0;
	if (read_ref(lo, &l, G + lo->g_cur_L) || !l)
		return 0;
	if (read_state(w, l, st) || st->glref != G)
		return 0;
	*curL = l;
	return 1;
}

static __always_inline __u16 proto_fingerprint(struct lua_walk *w, __u64 pt)
{
	const struct lj_layout *lo = &w->lo;
	__u32 first = min_u32(lo->pt_chunkname, lo->pt_firstline);
	__u32 end = max_u32(lo->pt_chunkname, max_u32(lo->pt_firstline, lo->pt_numline)) + 8;
	__u64 chunk = 0;
	__u32 lines[2] = { 0, 0 };

	if (!read_block(w, pt + first, end - first)) {
		chunk = block_ref(w, lo->pt_chunkname - first);
		lines[0] = (__u32)block_u64(w, lo->pt_firstline - first);
		lines[1] = (__u32)block_u64(w, lo->pt_numline - first);
	} else {
		read_ref(lo, &chunk, pt + lo->pt_chunkname);
		bpf_probe_read_user(lines, sizeof(lines), (const void *)(pt + lo->pt_firstline));
	}
	return lj_proto_fingerprint(chunk, lines[0], lines[1]);
}

/* Starts walking lua_State L (its fields in st) from base.  The leaf pc
 * is the one of L's innermost C frame, unless the caller has better. */
static __always_inline void start_thread(struct lua_walk *w, __u64 L,
					 const struct lj_state *st, __u64 base, __u64 pc)
{
	const struct lj_layout *lo = &w->lo;

	w->L = L;
	w->cf = st->cframe & ~3ull;
	w->outer_cf = w->cf;
	w->bot = st->stack + ((lo->flags & LJ_LAYOUT_GC64) ? 8 : 0);
	w->frame = base - 8;
	w->pc = pc;
	if (!pc && w->cf)
		read_ref(lo, &w->pc, w->cf + lo->cf_pc);
	w->skip_next = 0;
}

/* Reads the frame slot(s) at w->frame: the function and the link. */
static __always_inline int read_frame(struct lua_walk *w, __u64 *func, __u64 *link)
{
	const struct lj_layout *lo = &w->lo;
	__u64 slots[2];

	if (lo->flags & LJ_LAYOUT_GC64) {
		if (bpf_probe_read_user(slots, sizeof(slots), (const void *)(w->frame - 8)))
			return -1;
		*func = slots[0] & GC64_PTR_MASK;
		*link = slots[1];
	} else {
		if (read_u64(&slots[0], w->frame))
			return -1;
		*func = (__u32)slots[0];
		*link = slots[0] >> 32; /* a PC (MRef) or a delta|type */
	}
	return 0;
}

/* The lua_State that resumed L from Lua code, or 0: see the top of file.
 * Fills *st with its fields. */
static __always_inline __u64 find_resumer(struct lua_walk *w, struct lj_state *st)
{
	const struct lj_layout *lo = &w->lo;
	__u64 rcf = w->outer_cf + lo->cf_size, r = 0;

	if (!w->outer_cf || read_ref(lo, &r, rcf + lo->cf_l) || !r)
		return 0;
	if (read_state(w, r, st) || (st->cframe & ~3ull) != rcf || st->glref != w->G)
		return 0;
	return r;
}

#define LJ_GCT_FUNC 8 /* the gct byte of a function: ~LJ_TFUNC */

/* Emits the frame of function func; returns 0, or -1 if func is not a
 * function (after truncating the walk if a read failed). */
static __always_inline int emit_function(struct lua_walk *w, __u64 func, __u8 link)
{
	const struct lj_layout *lo = &w->lo;
	/* gct and ffid are adjacent in every layout; pc (GCfuncL) and f
	 * (GCfuncC) follow within the function's 40-odd bytes. */
	__u32 first = lo->fn_ffid - 1;
	__u32 end = max_u32(lo->fn_pc, lo->fn_f) + 8;
	__u64 fnpc, f;
	__u8 hdr[2];
	int have = !read_block(w, func + first, end - first);

	if (have) {
		hdr[0] = w->block[0];
		hdr[1] = w->block[1];
	} else if (bpf_probe_read_user(hdr, sizeof(hdr), (const void *)(func + first))) {
		return -1;
	}
	if (hdr[0] != LJ_GCT_FUNC)
		return -1;
	if (hdr[1] == LJ_FF_LUA) {
		__u64 pos = 0;

		if (have) {
			fnpc = block_ref(w, lo->fn_pc - first);
		} else if (read_ref(lo, &fnpc, func + lo->fn_pc)) {
			truncate_walk(w, LP_LUA_TRUNC_READ_FUNC);
			return 0;
		}
		/* pc of this frame as a bytecode position, when it lies
		 * inside the function's bytecode; else unknown (0). */
		if (w->pc >= fnpc && w->pc - fnpc < (1ull << 26))
			pos = (w->pc - fnpc) >> 2;
		emit(w, LP_LUA_FRAME_LUA, fnpc - lo->pt_size, (__u32)pos, link,
		     proto_fingerprint(w, fnpc - lo->pt_size));
		return 0;
	}
	if (have) {
		f = block_u64(w, lo->fn_f - first);
	} else if (read_u64(&f, func + lo->fn_f)) {
		truncate_walk(w, LP_LUA_TRUNC_READ_FUNC);
		return 0;
	}
	if (hdr[1] == LJ_FF_C)
		emit(w, LP_LUA_FRAME_C, f, 0, link, 0);
	else
		emit(w, LP_LUA_FRAME_FF, f, hdr[1], link, 0);
	return 0;
}

/* One bpf_loop step: one frame of the Lua stack. */
static long lua_walk_step(__u32 i, void *ctx)
{
	__u32 zero = 0, type, typep, slot;
	struct lua_walk *w = bpf_map_lookup_elem(&lua_walk_scratch, &zero);
	const struct lj_layout *lo;
	__u64 func, link, next, prev_pc = 0;

	if (!w)
		return 1;
	lo = &w->lo;
	slot = (lo->flags & LJ_LAYOUT_GC64) ? 2 : 1;
	if (w->done)
		return 1;
	if (w->n >= LP_MAX_LUA - 1) {
		truncate_walk(w, LP_LUA_TRUNC_DEPTH);
		return 1;
	}
	if (w->frame <= w->bot) {
		/* The bottom of this coroutine: was it resumed from Lua? */
		struct lj_state st;
		__u64 r = 0;

		if (w->L != w->mainL && w->hops++ < LUA_RESUMER_HOPS)
			r = find_resumer(w, &st);
		if (!r) {
			w->done = 1;
			return 1;
		}
		emit_entry(w, w->outer_cf);
		start_thread(w, r, &st, st.base, 0);
		return 0;
	}
	if (read_frame(w, &func, &link)) {
		truncate_walk(w, LP_LUA_TRUNC_READ);
		return 1;
	}
	type = link & 3;
	typep = link & 7;
	/* A dummy frame (the thread itself in the function slot) is skipped,
	 * and so is a vararg function's own frame below its vararg frame. */
	if (func != w->L && !w->skip_next &&
	    emit_function(w, func, (__u8)(type == LJ_FRAME_LUA ? LJ_FRAME_LUA : typep))) {
		/* Not a function.  A fast function returning writes its
		 * results from its own function slot on, and so only the
		 * innermost frame may hold no function.  Its C handler may
		 * overwrite the link too, but the VM kept the link as the C
		 * frame's saved PC; in the VM's own code, the link slot is
		 * still the Lua return PC it was. */
		__u64 ret = 0;

		if (!w->n && w->leaf_in_c && w->pc && !(w->pc & 3))
			ret = w->pc;
		else if (!w->n && !w->leaf_in_c && link && !(link & 3))
			ret = link;
		if (!ret) {
			truncate_walk(w, LP_LUA_TRUNC_BAD);
			return 1;
		}
		emit(w, LP_LUA_FRAME_FF, 0, 0, LJ_FRAME_LUA, 0);
		link = ret;
		type = typep = LJ_FRAME_LUA;
	}
	w->skip_next = 0;
	if (w->done)
		return 1;

	if (type == LJ_FRAME_LUA) {
		__u32 ins;

		/* link is the return PC; the CALL before it holds the callee's
		 * slot A, and the caller's frame is A + 1 + FR2 slots down. */
		if (bpf_probe_read_user(&ins, sizeof(ins), (const void *)(link - 4))) {
			truncate_walk(w, LP_LUA_TRUNC_READ_CALL);
			return 1;
		}
		next = w->frame - 8 * (slot + ((ins >> 8) & 0xff));
		prev_pc = link;
	} else {
		__u64 delta = link & ~7ull;

		if (!(lo->flags & LJ_LAYOUT_GC64))
			delta = (__u32)delta;
		if (!delta || delta > w->frame) {
			truncate_walk(w, LP_LUA_TRUNC_BAD);
			return 1;
		}
		next = w->frame - delta;
		if (typep == LJ_FRAME_VARG) {
			w->skip_next = 1;
			prev_pc = w->pc;
		} else if (typep == LJ_FRAME_CONT) {
			/* The continuation's PC sits two slots below. */
			read_ref(lo, &prev_pc, w->frame - 8 * (slot == 2 ? 2 : 1) + (slot == 2 ? 0 : 4));
		} else if (type == LJ_FRAME_C || typep == LJ_FRAME_CP) {
			/* Entered from C here: the older VM entry's C frame holds
			 * the pc of the Lua code that called out to C. */
			emit_entry(w, w->cf);
			if (w->cf) {
				__u64 prev = 0;

				read_u64(&prev, w->cf + lo->cf_prev);
				w->cf = prev & ~3ull;
				if (w->cf) {
					w->outer_cf = w->cf;
					read_ref(lo, &prev_pc, w->cf + lo->cf_pc);
				}
			}
		}
	}
	if (next >= w->frame) {
		truncate_walk(w, LP_LUA_TRUNC_BAD);
		return 1;
	}
	w->frame = next;
	w->pc = prev_pc;
	return 0;
}

/* Fills e->lua[] for a sample of a LuaJIT process; regs are the user
 * registers at the sample.  A global function: the verifier checks it once,
 * on its own, instead of once per path through the native unwinder. */
__noinline int walk_lua(struct lp_event_sample *e, const struct user_regs *regs)
{
	struct lua_walk *wp;
	struct lj_proc *p;
	__u32 zero = 0;
	__u32 tgid, tid;
	__u64 G, L = 0, base, pc = 0, *cached, ip;
	const struct lj_layout *lo;
	struct lj_state st;
	__s32 vmstate;

	if (!e || !regs)
		return 0;
	wp = bpf_map_lookup_elem(&lua_walk_scratch, &zero);
	if (!wp)
		return 0;
	__builtin_memset(wp, 0, sizeof(*wp));
	tgid = e->h.pid;
	tid = e->h.tid;
	e->lua_state = LP_WALK_NONE;
	e->lua_depth = 0;
	e->vmstate = 0;
	e->lua_G = 0;
	e->lua_vm_cfa = 0;
	p = bpf_map_lookup_elem(&lj_procs, &tgid);
	if (!p)
		return 0;
	lo = &p->layout;
	__builtin_memcpy(&wp->lo, lo, sizeof(wp->lo));
	ip = regs->ip;

	/* r14 - g2disp first: a G this thread validated before is known
	 * good (its main thread need not be looked at, nor the cache
	 * written again). */
	cached = bpf_map_lookup_elem(&lj_thread_G, &tid);
	G = regs->r14 - (__s64)lo->g2disp;
	if (valid_G(wp, G, cached && *cached == G, &L, &st)) {
		if (!cached || *cached != G)
			bpf_map_update_elem(&lj_thread_G, &tid, &G, BPF_ANY);
	} else {
		G = cached ? *cached : p->g_hint;
		if (!valid_G(wp, G, cached != NULL, &L, &st)) {
			e->lua_state = LP_WALK_NO_G;
			return 0;
		}
	}
	wp->G = G;
	wp->mainL = G - lo->gg_g;
	e->lua_G = G;
	if (bpf_probe_read_user(&vmstate, sizeof(vmstate), (const void *)(G + lo->g_vmstate)))
		return 0;
	e->vmstate = vmstate;

	if (!st.cframe) {
		/* No C frame: this coroutine is not running; neither is Lua. */
		e->lua_state = LP_WALK_IDLE;
		return 0;
	}
	/* Machine code of traces (and their exit stubs, and a trace's first
	 * instructions before it sets vmstate) runs on the innermost VM
	 * entry's C frame, lowered by the trace's spadjust: the native
	 * walk resumes at that frame's CFA when it meets such code. */
	e->lua_vm_cfa = (st.cframe & ~3ull) + lo->cf_size;
	base = st.base;
	if (vmstate >= 0) {
		__u64 jb = 0;

		/* A trace runs on G->jit_base.  Its GCtrace, J->trace[N],
		 * goes with the frame: the recorder reads where it starts. */
		__u64 tr = 0, trarr = 0;
		__u32 sizetrace = 0;

		if (lo->g2j && !read_u64(&trarr, G + lo->g2j + lo->j_trace) &&
		    !bpf_probe_read_user(&sizetrace, sizeof(sizetrace),
					 (const void *)(G + lo->g2j + lo->j_sizetrace)) &&
		    (__u32)vmstate < sizetrace)
			read_ref(lo, &tr, trarr + (__u64)vmstate * lo->ref_size);
		/* Where it starts tells a trace from a later one that reused
		 * the number and the memory after a flush. */
		if (tr)
			read_ref(lo, &trarr, tr + lo->tr_startpc);
		emit(wp, LP_LUA_FRAME_TRACE, tr, (__u32)vmstate, 0,
		     tr ? (__u16)(trarr >> 2) | 1 : 0);
		if (!read_ref(lo, &jb, G + lo->g_jit_base) && jb)
			base = jb;
	} else if (~vmstate == LJ_VMST_INTERP && !p->vm_end) {
		/* BASE is in a register we cannot yet tell from garbage;
		 * the recorder locates the VM from this sample's G. */
		e->lua_state = LP_WALK_NO_VM;
		return 0;
	} else if (~vmstate == LJ_VMST_INTERP && ip >= p->vm_start && ip < p->vm_end) {
		__u64 rdx = regs->dx;

		if (rdx > st.stack && rdx <= st.maxstack + 8 * 8) {
			base = rdx;
			pc = regs->bx;
		}
	}
	/* In C code the VM called (a fast function's handler, a helper),
	 * the innermost frame may be the handler's, mid-rewrite. */
	wp->leaf_in_c = ~vmstate == LJ_VMST_INTERP && !pc;
	start_thread(wp, L, &st, base, pc);
	e->lua_state = LP_WALK_WALKED;
	phase_end(LP_PHASE_LUA_STATE);
	/* bpf_loop wants a stack context; the step finds the state itself. */
	bpf_loop(LUA_WALK_STEPS, lua_walk_step, &zero, 0);
	if (!wp->done)
		truncate_walk(wp, LP_LUA_TRUNC_DEPTH);
	e->lua_depth = wp->n;
	return 0;
}

#endif

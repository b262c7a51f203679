/*
 * luajit_code.c - a stripped LuaJIT's struct offsets, read from its code.
 *
 * Every LuaJIT build exports its C API (lua_*, luaL_*, luaJIT_*), and
 * that code is the build's own statement of its layout: lua_pushthread
 * compares L with mainthread(G(L)), lua_call enters the interpreter,
 * which sets up its C frame and its dispatch table.  symexec.h reads what
 * each such function does in terms of its arguments, whatever compiler,
 * optimisation level or release made it; the rules below say which fact
 * of which function is which offset.  The interpreter itself is written
 * in DynASM, the same instructions whatever the C compiler, and its
 * registers are fixed (G or DISPATCH, BASE, PC: luajit_arch.h): a sweep
 * of its code with those registers known gives what no C function shows
 * (where a trace's machine code starts, the base while a trace runs).
 * The instruction set is the object's own (x86-64 or arm64), whatever
 * luaprof runs on.
 *
 *   rule            function (followed calls)   fields
 *   refs            lua_pushthread              l_glref, ref_size, g_mainthref
 *   stack           lua_gettop                  l_top, l_base
 *   vm_entry        lua_call -> lj_vm_call      g2disp, g_cur_L, g_vmstate,
 *                   lua_resume -> lj_vm_resume  l_cframe, cf_*, fn_pc
 *   gg              lua_newstate, luaL_newstate gg_g
 *   str             lua_tolstring               str_len, str_size
 *   traces          luaJIT_setmode -> ...       g2j, j_trace, tr_startpt,
 *                   trace_flushroot, proto       tr_traceno, tr_root,
 *                   re-enabling                 pt_size, pt_sizebc, pt_flags
 *   vm_sweep        the interpreter's code      g_jit_base, tr_mcode, fn_f,
 *                                               g2j, cf_pc, cf_l
 *   cf_l            lua_call -> lj_vm_call      cf_l, where the sweep does
 *                                               not tell (arm64)
 *
 * What the code does not show is LuaJIT 2.1's own declaration of the
 * struct for the reference width the code showed (luajit_struct.c): the
 * fields of GCproto, GCfunc, lua_State and GCtrace that have not moved in
 * any release since 2.1.0-beta3, each marked as such, and checked against
 * the code wherever a rule also found it.  Two rules that disagree, or a
 * rule that disagrees with the declaration, fail the field: a build that
 * is not LuaJIT 2.1 as this file knows it is refused with what differed,
 * never walked with a guess.  And whatever the source, the walker still
 * validates G at every sample and luajit_vm.c the dispatch table.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "record/elfimage.h"
#include "record/luajit.h"
#include "record/luajit_arch.h"
#include "record/luajit_code.h"
#include "record/symexec.h"

#define BUDGET_SMALL 2000
#define BUDGET_LARGE 40000

struct derive {
	struct elf_image *im;
	struct sx_ctx *sx;
	const struct lj_arch *arch;
	const struct sx_isa *isa;
	struct lj_code_result *r;
	uint32_t L;        /* ARG0 */
	uint32_t G;        /* LOAD(L + l_glref), once known */
	uint64_t vm_start, vm_end;
	uint64_t vm_pc;    /* an instruction of the interpreter (lj_vm_call's) */
	int64_t l_slot[8]; /* the C frame's slots lj_vm_call stores L to */
	int nl_slots;
};

/* ---- fields ---- */

static int have(const struct derive *d, enum lj_field f)
{
	return d->r->from[f] != LJ_FROM_NONE;
}

static long long val(const struct derive *d, enum lj_field f)
{
	return lj_field_get(&d->r->layout, f);
}

/* A rule found field f = v in function `via`.  A second finding must
 * agree; one that does not makes the field a conflict, which fails it. */
static void found(struct derive *d, enum lj_field f, long long v, const char *via)
{
	struct lj_code_result *r = d->r;

	if (!lj_field_fits(f, v)) {
		if (!r->conflict[0])
			snprintf(r->conflict, sizeof(r->conflict), "%s: %s would be %lld",
				 via, lj_fields[f].name, v);
		return;
	}
	if (r->from[f] == LJ_FROM_CODE) {
		if (val(d, f) != v && !r->conflict[0])
			snprintf(r->conflict, sizeof(r->conflict),
				 "%s says %s = %lld, %s says %lld", r->via[f],
				 lj_fields[f].name, val(d, f), via, v);
		return;
	}
	lj_field_set(&r->layout, f, v);
	r->from[f] = LJ_FROM_CODE;
	r->via[f] = via;
}

/* ---- fact shapes ---- */

static const struct sx_fact *walk(struct derive *d, const char *fn, unsigned depth,
				  unsigned budget, size_t *n)
{
	uint64_t a = elf_image_sym(d->im, fn);

	*n = 0;
	sx_clear_facts(d->sx);
	if (!a || sx_run(d->sx, a, NULL, 0, depth, budget))
		return NULL;
	return sx_facts(d->sx, n);
}

/*
 * Walks fn with a budget that doubles from `from` up to `to` until done(d)
 * holds, handing each walk's facts to scan(d, facts, n, arg): most rules
 * find their fact in the first few hundred instructions, and a walk
 * costs its budget (the callees of an error path are walked too).
 */
typedef void scan_fn(struct derive *d, const struct sx_fact *f, size_t n, void *arg);
typedef int done_fn(const struct derive *d);

static void walk_until(struct derive *d, const char *fn, unsigned depth, unsigned from,
		       unsigned to, scan_fn *scan, done_fn *done, void *arg)
{
	for (unsigned budget = from; budget <= to && !done(d); budget *= 2) {
		size_t n;
		const struct sx_fact *f = walk(d, fn, depth, budget, &n);

		if (f)
			scan(d, f, n, arg);
	}
}

/* Whether v is term + off exactly. */
static int is(const struct sx_val *v, uint32_t term, int64_t off)
{
	int64_t o;

	return sx_is_term(v, term, &o) && o == off;
}

/* If v is LOAD(base + off, w) (+0) with base the given term, off and w. */
static int load_from(const struct derive *d, const struct sx_val *v, uint32_t base,
		     int64_t *off, int *w)
{
	const struct sx_node *n = sx_load_of(d->sx, v);

	if (!n || !sx_is_term(&n->addr, base, off))
		return 0;
	if (w)
		*w = n->width;
	return 1;
}

static uint32_t node_load(struct derive *d, uint32_t base, int64_t off, int w)
{
	struct sx_node n = { .kind = SXN_LOAD, .width = (uint8_t)w,
			     .addr = sx_term(base, off) };

	return sx_intern(d->sx, &n);
}

/* ---- frames ---- */

/* The ENTER fact of frame `frame`, or NULL (frame 0, the entry's). */
static const struct sx_fact *frame_enter(const struct sx_fact *f, size_t n, uint16_t frame)
{
	for (size_t i = 0; frame && i < n; i++)
		if (f[i].kind == SXF_ENTER && f[i].frame == frame)
			return &f[i];
	return NULL;
}

/* Each frame's caller, from the ENTER facts: parent[frame], frames up
 * to *nframes; NULL if out of memory. */
static uint16_t *frame_parents(const struct sx_fact *f, size_t n, size_t *nframes)
{
	uint16_t *parent;

	*nframes = 1;
	for (size_t i = 0; i < n; i++)
		if (f[i].kind == SXF_ENTER && (size_t)f[i].frame + 1 > *nframes)
			*nframes = (size_t)f[i].frame + 1;
	parent = calloc(*nframes, sizeof(*parent));
	for (size_t i = 0; parent && i < n; i++)
		if (f[i].kind == SXF_ENTER)
			parent[f[i].frame] = f[i].parent;
	return parent;
}

/* Whether frame `frame` is `root` or was called from it, however deep
 * (a parent's id is always lower than its callee's). */
static int frame_under(const uint16_t *parent, size_t nframes, uint16_t frame, uint16_t root)
{
	while (frame > root && frame < nframes)
		frame = parent[frame];
	return frame == root;
}

/* The frame a call made (the one walked from it), or 0. */
static uint16_t callee_frame(const struct sx_fact *f, size_t n, const struct sx_fact *call)
{
	for (size_t i = 0; i < n; i++)
		if (f[i].kind == SXF_ENTER && f[i].pc == call->pc && f[i].parent == call->frame)
			return f[i].frame;
	return 0;
}

/* ---- rules ---- */

static void count(int64_t (*t)[2], int *n, int64_t v);
static int64_t mode(int64_t (*t)[2], int n, int64_t min);

/*
 * lua_pushthread ends with `return mainthread(G(L)) == L`: a comparison
 * of L with LOAD(LOAD(L + glref) + mainthref).  The width of the inner
 * load is that of an MRef: 8 bytes with GC64, 4 with 32-bit references.
 */
static void rule_refs(struct derive *d)
{
	const char *fn = "lua_pushthread";
	size_t n;
	const struct sx_fact *f = walk(d, fn, 0, BUDGET_SMALL, &n);

	for (size_t i = 0; i < n; i++) {
		const struct sx_val *a = &f[i].a, *b = &f[i].b;
		const struct sx_node *m;
		int64_t g, k;
		int w;

		if (f[i].kind != SXF_CMP)
			continue;
		if (is(b, d->L, 0)) {
			const struct sx_val *t = a;

			a = b;
			b = t;
		}
		if (!is(a, d->L, 0) || !(m = sx_load_of(d->sx, b)) || m->addr.idx ||
		    !load_from(d, &(struct sx_val){ .term = m->addr.term, .known = 1 },
			       d->L, &g, &w))
			continue;
		k = m->addr.off;
		if ((w != 8 && w != 4) || m->width != w)
			continue;
		found(d, LJF_l_glref, g, fn);
		found(d, LJF_ref_size, w, fn);
		found(d, LJF_g_mainthref, k, fn);
		break;
	}
}

/* lua_gettop is (L->top - L->base) >> 3: a subtraction of two loads. */
static void rule_stack(struct derive *d)
{
	const char *fn = "lua_gettop";
	size_t n;
	const struct sx_fact *f = walk(d, fn, 0, BUDGET_SMALL, &n);

	for (size_t i = 0; i < n; i++) {
		int64_t t, b;
		int wt, wb;

		if (f[i].kind == SXF_SUB && load_from(d, &f[i].a, d->L, &t, &wt) &&
		    load_from(d, &f[i].b, d->L, &b, &wb) && wt == 8 && wb == 8 && t != b) {
			found(d, LJF_l_top, t, fn);
			found(d, LJF_l_base, b, fn);
			break;
		}
	}
}

/* G = LOAD(L + l_glref), the node every global_State offset hangs on. */
static int g_term(struct derive *d)
{
	if (!have(d, LJF_l_glref) || !have(d, LJF_ref_size))
		return -ENOENT;
	d->G = node_load(d, d->L, val(d, LJF_l_glref), (int)val(d, LJF_ref_size));
	return d->G ? 0 : -ENOMEM;
}

/*
 * Whether an indirect jump goes through the dispatch table of G (the
 * term g): to [G + off + op*8] (x86-64, through memory) or to the value
 * LOAD(G + off + op*8) (arm64, through a register), op any index.  *off
 * gets the table's offset from G.
 */
static int dispatch_of(const struct derive *d, const struct sx_fact *x, uint32_t g,
		       int64_t *off)
{
	const struct sx_val *t = &x->b;
	const struct sx_node *ld, *ix;

	if (x->kind != SXF_JMPI)
		return 0;
	if (!x->mem) {
		if (!(ld = sx_load_of(d->sx, &x->a)) || ld->width != 8)
			return 0;
		t = &ld->addr;
	}
	if (!t->known || t->term != g || !t->idx || t->scale != 8 ||
	    !(ix = sx_node(d->sx, t->idx)) || ix->kind != SXN_ANY)
		return 0;
	*off = t->off;
	return 1;
}

/*
 * lua_call tail-calls lj_vm_call(L, base, nres1), the interpreter's entry:
 *
 *   push callee-saved; sub rsp        the C frame (CFRAME_SIZE from the CFA)
 *   SAVE_L = L; SAVE_CFRAME = L->cframe; SAVE_PC = L (any non-bytecode)
 *   DISPATCH = G + GG_G2DISP; L->cframe = rsp
 *   G->cur_L = L; G->vmstate = ~LJ_VMST_INTERP
 *   ... jmp [DISPATCH + op*8]          the first bytecode's handler
 *
 * On arm64 the C frame is made below the entry's sp (no return address
 * is pushed), G is kept as itself and the handler is read first:
 * "add x9, GL, INS, uxtb #3; ldr x8, [x9, #GG_G2DISP]; br x8", a jump
 * to LOAD(G + GG_G2DISP + op*8).
 *
 * SAVE_L and SAVE_PC both get L here, among the caller's own stores (at
 * -Os lua_call spills L too): the interpreter's code tells them apart
 * (rule_vm_sweep).  lj_vm_call is the callee (depth 1) or, tail-called,
 * the same frame.
 */
static void rule_vm_entry(struct derive *d)
{
	const char *fn = "lua_call";
	uint32_t sp = sx_intern(d->sx, &(struct sx_node){ .kind = SXN_SP });
	int64_t cf = 0, off, k, entry = 0;
	int have_cf = 0;
	size_t n;
	const struct sx_fact *f;

	if (g_term(d))
		return;
	f = walk(d, fn, 1, BUDGET_SMALL, &n);
	for (size_t i = 0; f && i < n; i++) {
		const struct sx_fact *x = &f[i];
		int64_t c;

		if (x->kind == SXF_STORE && x->depth <= 1 && !have_cf &&
		    sx_is_term(&x->a, d->L, &off) && sx_is_term(&x->b, sp, &k) && k < 0) {
			const struct sx_fact *e = frame_enter(f, n, x->frame);

			/* the CFA is the entry's SP + what its call pushed
			 * (the return address on x86-64, nothing on arm64) */
			if (e && !sx_is_term(&e->a, sp, &entry))
				continue;
			found(d, LJF_l_cframe, off, fn);
			found(d, LJF_cf_size, entry + d->isa->call_push - k, fn);
			d->vm_pc = x->pc;
			cf = k;
			have_cf = 1;
		} else if (x->kind == SXF_STORE && x->depth <= 1 &&
			   sx_is_term(&x->a, d->G, &off) && is(&x->b, d->L, 0) &&
			   !have(d, LJF_g_cur_L)) {
			found(d, LJF_g_cur_L, off, fn);
		} else if (x->kind == SXF_STORE && x->depth <= 1 && x->width == 4 &&
			   sx_is_term(&x->a, d->G, &off) && sx_is_const(&x->b, &c) &&
			   (int32_t)c >= -7 && (int32_t)c <= -1) {
			found(d, LJF_g_vmstate, off, fn);
		} else if (x->kind == SXF_JMPI && x->depth <= 1 && !have(d, LJF_g2disp) &&
			   dispatch_of(d, x, d->G, &off)) {
			found(d, LJF_g2disp, off, fn);
		}
	}
	if (!have_cf)
		return;
	for (size_t i = 0; i < n; i++) {
		if (f[i].kind != SXF_STORE || !sx_is_term(&f[i].a, sp, &off) || off < cf ||
		    off >= cf + val(d, LJF_cf_size))
			continue;
		if (load_from(d, &f[i].b, d->L, &k, NULL) && k == val(d, LJF_l_cframe))
			found(d, LJF_cf_prev, off - cf, fn);
		else if (is(&f[i].b, d->L, 0) && d->nl_slots < 8)
			d->l_slot[d->nl_slots++] = off - cf;
	}
}

/*
 * SAVE_L where the interpreter keeps L in a register (arm64's x23) and
 * reads its slot too seldom for the sweep to tell: of the two slots of
 * its frame lj_vm_call stores L to, SAVE_L and SAVE_PC, the one that is
 * not SAVE_PC, which the sweep told.
 */
static void rule_cf_l(struct derive *d)
{
	int64_t l = -1;

	if (have(d, LJF_cf_l) || !have(d, LJF_cf_pc))
		return;
	for (int i = 0; i < d->nl_slots; i++) {
		if (d->l_slot[i] == val(d, LJF_cf_pc) || d->l_slot[i] == l)
			continue;
		if (l >= 0)
			return; /* more than one: not told apart */
		l = d->l_slot[i];
	}
	if (l >= 0)
		found(d, LJF_cf_l, l, "lua_call");
}

/*
 * lj_state_newstate (lua_newstate, or luaL_newstate's callee where
 * lua_newstate refuses 64-bit builds without GC64) allocates the GG_State
 * and links its parts: L->glref = &GG->g, a store of GG + offsetof(GG_State,
 * g) to GG + l_glref, and g->mainthref = L, of GG to GG + gg_g + mainthref.
 */
static void gg_from(struct derive *d, const struct sx_fact *f, size_t n, void *arg)
{
	for (size_t i = 0; i < n; i++) {
		const struct sx_node *base;
		int64_t off, v;

		if (f[i].kind != SXF_STORE || f[i].a.idx || f[i].width != val(d, LJF_ref_size) ||
		    !(base = sx_node(d->sx, f[i].a.term)) || base->kind != SXN_RET ||
		    !sx_is_term(&f[i].a, f[i].a.term, &off) || off != val(d, LJF_l_glref) ||
		    !sx_is_term(&f[i].b, f[i].a.term, &v) || v <= 0)
			continue;
		found(d, LJF_gg_g, v, arg);
		return;
	}
}

static int have_gg(const struct derive *d)
{
	return have(d, LJF_gg_g);
}

static void rule_gg(struct derive *d)
{
	static const char *const fns[] = { "lua_newstate", "luaL_newstate" };

	for (size_t k = 0; k < 2; k++)
		walk_until(d, fns[k], 2, 256, BUDGET_LARGE, gg_from, have_gg, (void *)fns[k]);
}

/*
 * lua_tolstring: `if (len) *len = s->len; return strdata(s);` - a store
 * through the third argument of a 4-byte load at S + len, and a return of
 * S + sizeof(GCstr), for one S.
 */
static void str_from(struct derive *d, const struct sx_fact *f, size_t n, void *arg)
{
	const char *fn = arg;
	uint32_t len_ptr = sx_arg(d->sx, 2);

	for (size_t i = 0; i < n; i++) {
		const struct sx_node *ld;

		if (f[i].kind != SXF_STORE || f[i].depth || !is(&f[i].a, len_ptr, 0) ||
		    !(ld = sx_load_of(d->sx, &f[i].b)) || ld->width != 4 || ld->addr.idx ||
		    !ld->addr.term)
			continue;
		for (size_t j = i; j < n; j++) {
			int64_t size;

			if (f[j].kind == SXF_RET && f[j].depth == 0 &&
			    sx_is_term(&f[j].a, ld->addr.term, &size) && size > ld->addr.off) {
				found(d, LJF_str_len, ld->addr.off, fn);
				found(d, LJF_str_size, size, fn);
				return;
			}
		}
	}
}

static int have_str(const struct derive *d)
{
	return have(d, LJF_str_size);
}

static void rule_str(struct derive *d)
{
	walk_until(d, "lua_tolstring", 1, 256, BUDGET_SMALL * 2, str_from, have_str,
		   "lua_tolstring");
}

/* The G-relative offset of the array a load of J->trace[i] reads:
 * LOAD(LOAD(G + K) + idx * ref_size); -1 if f is no such load. */
static int64_t trace_array(const struct derive *d, const struct sx_fact *f)
{
	const struct sx_node *arr;
	int64_t rs = val(d, LJF_ref_size), k;

	if (f->kind != SXF_LOAD || f->width != rs || !f->a.idx || f->a.scale != rs ||
	    f->a.off ||
	    !(arr = sx_load_of(d->sx, &(struct sx_val){ .term = f->a.term, .known = 1 })) ||
	    arr->width != 8 || !sx_is_term(&arr->addr, d->G, &k))
		return -1;
	return k;
}

/* Whether f loads J->trace[i], from G + jt (any, if jt < 0). */
static int is_trace_load(const struct derive *d, const struct sx_fact *f, int64_t jt)
{
	int64_t k = trace_array(d, f);

	return k >= 0 && (jt < 0 || k == jt);
}

/*
 * luaJIT_setmode() flushes and re-enables compiled code.  Through it:
 *
 *   lj_trace_flushproto(J, pt)   while (pt->trace) trace_flushroot(J,
 *                                  traceref(J, pt->trace)): J = G + g2j is
 *                                  a call argument, J->trace[] is read at
 *                                  G + g2j + j_trace
 *   trace_flushroot(J, T)        pt = T->startpt; compares pt->trace with
 *                                  T->traceno (two 2-byte loads)
 *   lj_trace_flushall(L)         if (T->root == 0) for each trace
 *   lj_trace_reenableproto(pt)   loops over proto_bc(pt)[0 .. sizebc), at
 *                                  pt + sizeof(GCproto) + 4 * pt->sizebc
 *
 * T is any value loaded from J->trace[i].
 */
static void traces_from(struct derive *d, const struct sx_fact *f, size_t n, void *arg);

static int have_traces(const struct derive *d)
{
	return have(d, LJF_g2j) && have(d, LJF_tr_startpt) && have(d, LJF_pt_size);
}

/* luaJIT_setmode's callees, 5 deep at -O0 where nothing is inlined. */
static void rule_traces(struct derive *d)
{
	walk_until(d, "luaJIT_setmode", 5, 1024, 2 * BUDGET_LARGE, traces_from, have_traces,
		   "luaJIT_setmode");
}

static void traces_from(struct derive *d, const struct sx_fact *f, size_t n, void *arg)
{
	const char *fn = arg;
	int64_t rs = val(d, LJF_ref_size), jt = -1, js[64][2], g2j;
	uint16_t *parent;
	size_t nframes;
	int nj = 0;

	/* J->trace[i]: a load at LOAD(G + K) + idx * rs; K = g2j + j_trace. */
	for (size_t i = 0; i < n && jt < 0; i++)
		if (is_trace_load(d, &f[i], -1))
			jt = trace_array(d, &f[i]);
	if (jt < 0)
		return;
	/* J = G + g2j: the first argument of the calls into lj_trace.c
	 * whose callee reads J->trace */
	parent = frame_parents(f, n, &nframes);
	for (size_t i = 0; parent && i < n; i++) {
		int64_t k;

		uint16_t callee;

		if (f[i].kind != SXF_CALL || !sx_is_term(&f[i].args[0], d->G, &k) || k <= 0 ||
		    k >= jt || jt - k > 2048 || !(callee = callee_frame(f, n, &f[i])))
			continue;
		for (size_t j = i + 1; j < n; j++)
			if (f[j].frame >= callee && frame_under(parent, nframes, f[j].frame, callee) &&
			    is_trace_load(d, &f[j], jt)) {
				count(js, &nj, k);
				break;
			}
	}
	free(parent);
	if ((g2j = mode(js, nj, 1)) >= 0) {
		found(d, LJF_g2j, g2j, fn);
		found(d, LJF_j_trace, jt - g2j, fn);
	}
	for (size_t i = 0; i < n; i++) {
		const struct sx_fact *x = &f[i];

		if (x->kind != SXF_CMP || x->width != 2)
			continue;
		/* pt->trace == T->traceno, pt = T->startpt */
		for (int s = 0; s < 2; s++) {
			const struct sx_val *p = s ? &x->b : &x->a, *q = s ? &x->a : &x->b;
			const struct sx_node *pn = sx_load_of(d->sx, p), *ptn, *qn;
			const struct sx_node *tq;

			if (!pn || pn->width != 2 || pn->addr.idx ||
			    !(ptn = sx_load_of(d->sx, &(struct sx_val){ .term = pn->addr.term, .known = 1 })) ||
			    ptn->width != rs || ptn->addr.idx ||
			    !(qn = sx_load_of(d->sx, q)) || qn->width != 2 || qn->addr.idx ||
			    qn->addr.term != ptn->addr.term || !ptn->addr.term ||
			    !(tq = sx_node(d->sx, ptn->addr.term)) || tq->kind != SXN_LOAD ||
			    !tq->addr.idx)
				continue;
			found(d, LJF_tr_startpt, ptn->addr.off, fn);
			found(d, LJF_tr_traceno, qn->addr.off, fn);
		}
	}
	/* proto_bc(pt) + 4 * pt->sizebc: pt + LOAD(pt + sizebc, 4) * 4 + size */
	for (size_t i = 0; i < n; i++) {
		const struct sx_val *vs[2] = { &f[i].a, &f[i].b };

		if (f[i].kind != SXF_CMP && f[i].kind != SXF_LOAD)
			continue;
		for (int s = 0; s < 2; s++) {
			const struct sx_val *v = vs[s];
			int64_t sb;
			int w;

			if (!v->known || !v->term || !v->idx || v->scale != 4 || v->off < 32 ||
			    v->off > 256 ||
			    !load_from(d, &(struct sx_val){ .term = v->idx, .known = 1 }, v->term,
				       &sb, &w) || w != 4 || sb >= v->off)
				continue;
			found(d, LJF_pt_size, v->off, fn);
			found(d, LJF_pt_sizebc, sb, fn);
		}
	}
}

/*
 * The interpreter's code, swept with its fixed registers known
 * (luajit_arch.h): on x86-64 DISPATCH (r14) = G + g2disp, BASE (rdx), PC
 * (rbx); on arm64 GL (x22) = G, BASE (x19), PC (x21); the stack pointer
 * is the C frame.
 *
 *   BC_JLOOP      jmp J->trace[RD]->mcode; G->jit_base = BASE
 *   vm_exit_*     G->jit_base = 0; calls lj_trace_exit(J = G + g2j, ...)
 *   BC_FUNCC      call fn->f, fn loaded from BASE
 *   everywhere    SAVE_PC = PC; the next handler from the dispatch table
 *
 * The dispatches are what say that the register holds what luajit_arch.h
 * says: without them the sweep shows nothing.
 */
enum { INV_G, INV_BASE, INV_PC };

/* Counts v in a table of (value, count). */
static void count(int64_t (*t)[2], int *n, int64_t v)
{
	int k;

	for (k = 0; k < *n && t[k][0] != v; k++)
		;
	if (k == *n) {
		if (*n == 64)
			return;
		t[(*n)++][0] = v;
		t[k][1] = 0;
	}
	t[k][1]++;
}

/* The value counted most, if at least min times and more than any
 * other; else -1. */
static int64_t mode(int64_t (*t)[2], int n, int64_t min)
{
	int best = -1, second = -1;

	for (int k = 0; k < n; k++) {
		if (best < 0 || t[k][1] > t[best][1]) {
			second = best;
			best = k;
		} else if (second < 0 || t[k][1] > t[second][1]) {
			second = k;
		}
	}
	if (best < 0 || t[best][1] < min || (second >= 0 && t[second][1] == t[best][1]))
		return -1;
	return t[best][0];
}

static void rule_vm_sweep(struct derive *d)
{
	const char *via = "its interpreter";
	const int regs[3] = { d->arch->g_reg, d->arch->base_reg, d->arch->pc_reg };
	struct sx_val vals[3];
	uint32_t g = sx_invar(d->sx, INV_G), base = sx_invar(d->sx, INV_BASE),
		 pc = sx_invar(d->sx, INV_PC);
	uint32_t sp = sx_intern(d->sx, &(struct sx_node){ .kind = SXN_SP });
	int64_t off, rs = val(d, LJF_ref_size), zero[16], based[16], npc[64][2], nl[64][2];
	int nz = 0, nb = 0, np = 0, nls = 0, ndisp = 0;
	size_t n;
	const struct sx_fact *f;

	if (!d->vm_end || !have(d, LJF_g2disp))
		return;
	vals[0] = sx_term(g, lj_arch_g_bias(d->arch, &d->r->layout));
	vals[1] = sx_term(base, 0);
	vals[2] = sx_term(pc, 0);
	sx_clear_facts(d->sx);
	if (sx_sweep(d->sx, d->vm_start, d->vm_end, regs, vals, 3))
		return;
	f = sx_facts(d->sx, &n);
	for (size_t i = 0; i < n; i++)
		ndisp += dispatch_of(d, &f[i], g, &off) && off == val(d, LJF_g2disp);
	if (ndisp < 8)
		return;
	for (size_t i = 0; i < n; i++) {
		const struct sx_fact *x = &f[i];
		int64_t c;

		if (x->kind == SXF_STORE && sx_is_term(&x->a, g, &off)) {
			if (is(&x->b, base, 0) && nb < 16)
				based[nb++] = off;
			else if (sx_is_const(&x->b, &c) && !c && nz < 16)
				zero[nz++] = off;
		} else if (x->kind == SXF_STORE && sx_is_term(&x->a, sp, &off) &&
			   is(&x->b, pc, 0) && off >= 0 && off < 256) {
			count(npc, &np, off);
		} else if (x->kind == SXF_LOAD && sx_is_term(&x->a, sp, &off) &&
			   x->width == rs && off >= 0 && off < 256) {
			count(nl, &nls, off);
		} else if ((x->kind == SXF_JMPI || x->kind == SXF_CALLI) && !x->mem) {
			/* jmp J->trace[RD]->mcode; call fn->f (BC_FUNCC) */
			const struct sx_node *t = sx_load_of(d->sx, &x->a), *tr, *arr;

			if (!t || t->width != 8 || t->addr.idx || !t->addr.term)
				continue;
			tr = sx_node(d->sx, t->addr.term);
			if (x->kind == SXF_JMPI && tr && tr->kind == SXN_LOAD && tr->width == rs &&
			    tr->addr.idx && tr->addr.scale == rs && !tr->addr.off &&
			    (arr = sx_node(d->sx, tr->addr.term)) && arr->kind == SXN_LOAD &&
			    sx_is_term(&arr->addr, g, &off)) {
				found(d, LJF_tr_mcode, t->addr.off, via);
				if (have(d, LJF_g2j) && have(d, LJF_j_trace))
					found(d, LJF_j_trace, off - val(d, LJF_g2j), via);
			} else if (x->kind == SXF_CALLI && tr && tr->kind == SXN_LOAD &&
				   !tr->addr.idx && tr->addr.term == base && tr->addr.off < 0) {
				found(d, LJF_fn_f, t->addr.off, via);
			}
		}
	}
	/* jit_base: the one field the interpreter sets both to BASE and to 0 */
	for (int i = 0, done = 0; i < nb && !done; i++)
		for (int j = 0; j < nz && !done; j++)
			if (based[i] == zero[j]) {
				found(d, LJF_g_jit_base, based[i], via);
				done = 1;
			}
	/* SAVE_PC is stored from PC all over; SAVE_L is read all over */
	if ((off = mode(npc, np, 8)) >= 0)
		found(d, LJF_cf_pc, off, via);
	if ((off = mode(nl, nls, 8)) >= 0)
		found(d, LJF_cf_l, off, via);
}

/*
 * lua_checkstack grows the stack when L->maxstack - L->top is too small;
 * lua_cpcall enters the interpreter at lj_vm_cpcall, which saves
 * L->stack - L->top.  Each is a subtraction of L->top from a field.
 */
static void rule_stack_bounds(struct derive *d)
{
	static const struct {
		const char *fn;
		enum lj_field f;
	} r[] = { { "lua_checkstack", LJF_l_maxstack }, { "lua_cpcall", LJF_l_stack } };

	if (!have(d, LJF_l_top))
		return;
	for (size_t k = 0; k < sizeof(r) / sizeof(r[0]); k++) {
		size_t n;
		const struct sx_fact *f = walk(d, r[k].fn, 1, BUDGET_SMALL, &n);

		for (size_t i = 0; f && i < n; i++) {
			int64_t a, t;
			int wa;

			if (f[i].kind == SXF_SUB && load_from(d, &f[i].a, d->L, &a, &wa) &&
			    wa == val(d, LJF_ref_size) && load_from(d, &f[i].b, d->L, &t, NULL) &&
			    t == val(d, LJF_l_top) && a != t && a != val(d, LJF_l_base)) {
				found(d, r[k].f, a, r[k].fn);
				break;
			}
		}
	}
}

/*
 * Whether the build's snapshots carry their machine-code offset (mcofs):
 * LuaJIT added it in March 2021 with on-trace error unwinding, which
 * made lj_err_run (lua_error's callee) test G->jit_base before looking
 * for an error function.  A build whose lua_error does not read jit_base
 * predates both.  (luajit_snaps.c checks the offsets of every trace it
 * reads anyway.)
 */
static void mcofs_from(struct derive *d, const struct sx_fact *f, size_t n, void *arg)
{
	int *yes = arg;

	for (size_t i = 0; i < n && !*yes; i++) {
		int64_t off, z;

		if (f[i].kind == SXF_CMP && load_from(d, &f[i].a, d->G, &off, NULL) &&
		    off == val(d, LJF_g_jit_base) && sx_is_const(&f[i].b, &z) && !z)
			*yes = 1;
	}
}

static int has_mcofs(struct derive *d)
{
	int yes = 0;
	size_t n;
	const struct sx_fact *f;

	if (!have(d, LJF_g_jit_base))
		return 0;
	/* lj_err_run tests jit_base first of all: a short walk is enough */
	f = walk(d, "lua_error", 2, 256, &n);
	if (f)
		mcofs_from(d, f, n, &yes);
	if (!yes && (f = walk(d, "lua_error", 2, BUDGET_SMALL, &n)))
		mcofs_from(d, f, n, &yes);
	return yes;
}

/* ---- the whole ---- */

/*
 * The interpreter: on x86-64 the one CFI row of the entry frame's size,
 * or the gap in the CFI where lj_vm_call lies; where the row's CFA is a
 * register's (arm64), the row that holds lj_vm_call's instruction.
 */
static void vm_range(struct derive *d, int fd)
{
	int err = -ENOENT;

	if (d->arch->cfa_off) {
		if (d->vm_pc)
			err = lj_vm_from_row_fd(fd, d->arch, d->vm_pc, &d->vm_start, &d->vm_end);
	} else if ((have(d, LJF_cf_size) &&
		    !lj_vm_from_cfi_fd(fd, (uint16_t)val(d, LJF_cf_size), &d->vm_start,
				       &d->vm_end)) ||
		   (d->vm_pc && !lj_vm_from_gap_fd(fd, d->vm_pc, &d->vm_start, &d->vm_end))) {
		err = 0;
	}
	if (!err) {
		d->r->vm_start = d->vm_start;
		d->r->vm_end = d->vm_end;
	}
}

int lj_code_derive(int fd, struct lj_code_result *r)
{
	struct elf_image im;
	struct derive d = { .im = &im, .r = r };
	int err;

	memset(r, 0, sizeof(*r));
	err = elf_image_open(&im, fd);
	if (err)
		return err;
	d.arch = lj_arch_for(im.machine);
	if (!d.arch) {
		elf_image_close(&im);
		return -ENOTSUP;
	}
	d.isa = d.arch->isa;
	d.sx = sx_new(&im.code, d.isa);
	if (!d.sx) {
		elf_image_close(&im);
		return -ENOMEM;
	}
	d.L = sx_arg(d.sx, 0);
	rule_refs(&d);
	rule_stack(&d);
	rule_vm_entry(&d);
	rule_gg(&d);
	rule_str(&d);
	rule_traces(&d);
	vm_range(&d, fd);
	rule_vm_sweep(&d);
	rule_cf_l(&d);
	rule_stack_bounds(&d);
	if (have(&d, LJF_ref_size))
		found(&d, LJF_flags, (val(&d, LJF_ref_size) == 8 ? LJ_LAYOUT_GC64 : 0) |
		      (elf_image_sym(&im, "lua_setexdata") ? LJ_LAYOUT_OPENRESTY : 0),
		      "lua_pushthread");
	lj_struct_complete(r, has_mcofs(&d), d.arch);
	if (have(&d, LJF_flags)) {
		int resume, wrap_aux;

		if (!lj_ffnames_from_code(&im, d.sx, lj_known_build((uint32_t)val(&d, LJF_flags)),
					  &r->ff, &resume, &wrap_aux)) {
			if (resume >= 0)
				found(&d, LJF_ffid_coroutine_resume, resume, "luaopen_base");
			if (wrap_aux >= 0)
				found(&d, LJF_ffid_coroutine_wrap_aux, wrap_aux, "luaopen_base");
		}
	}
	r->steps = sx_steps(d.sx);
	sx_free(d.sx);
	elf_image_close(&im);
	return 0;
}

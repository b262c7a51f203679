/*
 * luajit_path.c - the bytecode a compiled trace was recorded from,
 * between two of its snapshots.
 *
 * LuaJIT records a trace by running the interpreter's instructions one by
 * one and emitting IR for each; it takes a snapshot at the start of an
 * instruction when it may need to exit there (before a comparison, after
 * a store or a call with side effects), so the IR between two snapshots
 * was made by the instructions run from the first snapshot's point to the
 * second's, through whatever calls and returns lie between.  This finds
 * that run: a breadth-first walk over the bytecode of the functions
 * involved, from the first snapshot's frames and instruction to the
 * second's.
 *
 * Two details of how LuaJIT writes snapshots matter.  A comparison's
 * snapshot resumes at the target the recording did not take (so that a
 * side trace starts there, lj_record.c rec_comp_fixup): the run starts at
 * the comparison itself and goes the other way.  And a call's callee is
 * known only when the caller took it from an upvalue (read from the
 * closure), when one of the snapshots shows its frame, or when the IR
 * checks the called function against one closure; any other call is
 * stepped over, marked as a call into an unknown function (whatever IR is
 * matched to it cannot be placed).
 *
 * Frames other than a Lua call's are followed as the snapshots show them:
 * a function pcall runs (PCALL, above the builtin's own frame), a
 * metamethod (CONT: the caller goes on after the instruction that called
 * it), and a vararg function, whose frame moves up past its arguments at
 * its first instruction (VARG).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "lib/grow.h"
#include "record/luajit.h"
#include "record/luajit_place_priv.h"

/* GCupval (lj_obj.h): the value pointer follows the header, two flags
 * and a union of a TValue and two GCRefs. */
#define UV_V(fr2) ((fr2) ? 32u : 16u)
#define GCT_FUNC 8 /* a GC object's gct byte for a function: ~LJ_TFUNC */

static uint64_t get_uint(const uint8_t *p, unsigned size)
{
	uint64_t v = 0;

	memcpy(&v, p, size);
	return v;
}

static int read_array(pid_t pid, uint64_t addr, uint32_t n, unsigned size, void **out)
{
	*out = NULL;
	if (!n)
		return 0;
	if (!(*out = calloc(n, size)))
		return -ENOMEM;
	return target_read(pid, addr, *out, (size_t)n * size);
}

/* Reads a prototype's bytecode and constants into f. */
static int pfn_read(const struct lj_trace_view *tv, struct lj_pfn *f)
{
	const struct lj_layout *lo = tv->lo;
	unsigned rs = lo->ref_size;
	uint8_t hdr[128];
	uint64_t k;
	uint8_t *kgc = NULL;
	size_t need = lo->pt_size;
	int bitops;

	if (need > sizeof(hdr) || target_read(tv->pid, f->proto, hdr, need))
		return -EFAULT;
	f->nbc = (uint32_t)get_uint(hdr + lo->pt_sizebc, 4);
	f->nkn = (uint32_t)get_uint(hdr + lo->pt_sizekn, 4);
	f->nkgc = (uint32_t)get_uint(hdr + lo->pt_sizekgc, 4);
	f->framesize = hdr[lo->pt_framesize];
	k = get_uint(hdr + lo->pt_k, rs);
	if (!f->nbc || f->nbc > LJ_PFN_BC_MAX || f->nkn > LJ_PFN_K_MAX ||
	    f->nkgc > LJ_PFN_K_MAX || !k)
		return -EINVAL;
	if (read_array(tv->pid, f->proto + lo->pt_size, f->nbc, 4, (void **)&f->bc) ||
	    read_array(tv->pid, k, f->nkn, 8, (void **)&f->kn) ||
	    read_array(tv->pid, k - (uint64_t)f->nkgc * rs, f->nkgc, rs, (void **)&kgc))
		goto fail;
	if ((bitops = lua_bc_numbering(f->bc[0])) < 0 ||
	    (f->nkgc && !(f->kgc = calloc(f->nkgc, 8))))
		goto fail;
	lua_bc_norm(f->bc, f->nbc, bitops);
	/* kgc[~i]: the i-th constant is the i-th GCRef below k. */
	for (uint32_t i = 0; i < f->nkgc; i++)
		f->kgc[i] = get_uint(kgc + (size_t)(f->nkgc - 1 - i) * rs, rs);
	free(kgc);
	return 0;
fail:
	free(kgc);
	return -EFAULT;
}

int lj_pfn_get(struct lj_pstate *ps, uint64_t proto, uint64_t func)
{
	struct lj_pfn *f;

	if (!proto)
		return -1;
	for (uint32_t i = 0; i < ps->nfns; i++)
		if (ps->fns[i].proto == proto) {
			if (func && !ps->fns[i].func)
				ps->fns[i].func = func;
			return (int)i;
		}
	if (ps->nfns == LJ_PFN_MAX)
		return -1;
	f = &ps->fns[ps->nfns];
	memset(f, 0, sizeof(*f));
	f->proto = proto;
	f->func = func;
	if (pfn_read(ps->tv, f)) {
		free(f->bc);
		free(f->kn);
		free(f->kgc);
		memset(f, 0, sizeof(*f));
		return -1;
	}
	return (int)ps->nfns++;
}

int lj_pfn_ff(struct lj_pstate *ps, uint64_t func, uint8_t ffid)
{
	struct lj_pfn *f;

	for (uint32_t i = 0; i < ps->nfns; i++)
		if (!ps->fns[i].proto && ps->fns[i].func == func && ps->fns[i].ffid == ffid)
			return (int)i;
	if (ps->nfns == LJ_PFN_MAX || !func)
		return -1;
	f = &ps->fns[ps->nfns];
	memset(f, 0, sizeof(*f));
	f->func = func;
	f->ffid = ffid;
	return (int)ps->nfns++;
}

static int node_new(struct lj_pstate *ps, int fn, int parent, int32_t base, uint32_t retpc,
		    uint8_t link, uint8_t nargs)
{
	if (ps->nnodes >= INT16_MAX || GROW(ps->nodes, ps->capnodes, ps->nnodes + 1))
		return -1;
	ps->nodes[ps->nnodes] = (struct lj_pnode){ .fn = (int16_t)fn, .parent = (int16_t)parent,
						   .base = base, .retpc = retpc, .link = link,
						   .nargs = nargs };
	return (int)ps->nnodes++;
}

int lj_pnodes_of_snap(struct lj_pstate *ps, const struct lj_tsnap *s, int ff_leaf)
{
	int node = -1;

	if (!s->nframe || !s->pathable)
		return -1;
	for (uint32_t i = 0; i < s->nframe; i++) {
		const struct lj_tframe *f = &s->frames[i];
		int fn = f->lf.kind == LP_LFRAME_FF ? lj_pfn_ff(ps, f->func, (uint8_t)f->lf.value) :
			 lj_pfn_get(ps, f->proto, f->func);

		if (fn < 0 || (i && f->link != LJ_FRAME_LUA && f->link != LJ_FRAME_PCALL &&
			       f->link != LJ_FRAME_CONT && f->link != LJ_FRAME_VARG))
			return -1;
		/* A frame's caller goes on after the call it runs. */
		node = node_new(ps, fn, node, f->base, i ? s->frames[i - 1].pc + 1 : 0,
				i ? (uint8_t)f->link : 0, 0xff);
		if (node < 0)
			return -1;
	}
	/* The innermost frame runs code: not a builtin's, but where a
	 * stitched trace ends by calling one. */
	return ff_leaf || ps->fns[ps->nodes[node].fn].proto ? node : -1;
}

/* ---- the walk ----------------------------------------------------------- */

struct pstate {
	int32_t node, parent; /* parent: the state before, -1 at a start */
	uint32_t pc;
	uint8_t flags;        /* LJ_PEL_* of the instruction that led here */
};

struct walk {
	struct lj_pstate *ps;
	struct pstate *st;
	uint32_t nst;
	const struct lj_tsnap *to;
	int to_node;          /* chain of the end snapshot, -1 none */
	uint32_t first, last; /* the stretch's IR */
};

static int is_cmp(uint32_t op)
{
	return op <= LBC_ISF;
}

static const struct lj_pfn *fn_of(const struct lj_pstate *ps, int node)
{
	return &ps->fns[ps->nodes[node].fn];
}

static int push(struct walk *w, int node, uint32_t pc, int parent, uint8_t flags)
{
	if (w->nst >= LJ_PATH_STATES)
		return -1;
	/* Each (frame, instruction) once: a path never needs a loop. */
	for (uint32_t i = 0; i < w->nst; i++)
		if (w->st[i].node == node && w->st[i].pc == pc)
			return 0;
	w->st[w->nst++] = (struct pstate){ .node = node, .parent = parent, .pc = pc,
					   .flags = flags };
	return 0;
}

/* Two chains of nodes stand for the same frames. */
static int same_chain(const struct lj_pstate *ps, int a, int b)
{
	while (a >= 0 && b >= 0) {
		if (ps->nodes[a].fn != ps->nodes[b].fn || ps->nodes[a].base != ps->nodes[b].base)
			return 0;
		a = ps->nodes[a].parent;
		b = ps->nodes[b].parent;
	}
	return a < 0 && b < 0;
}

/* The depth of a node: 0 for the base frame. */
static int depth(const struct lj_pstate *ps, int node)
{
	int d = -1;

	for (; node >= 0; node = ps->nodes[node].parent)
		d++;
	return d;
}

/* The end snapshot's frame one deeper than node, if node's chain is a
 * prefix of the end's: that frame's node, or -1. */
static int end_child(const struct walk *w, int node)
{
	int e = w->to_node, d = depth(w->ps, node), de = depth(w->ps, e);

	if (e < 0 || de <= d)
		return -1;
	while (de > d + 1) {
		e = w->ps->nodes[e].parent;
		de--;
	}
	return same_chain(w->ps, w->ps->nodes[e].parent, node) ? e : -1;
}

/* The value of upvalue uv of the closure func, if it is a function. */
static uint64_t upvalue_func(const struct lj_trace_view *tv, uint64_t func, uint32_t uv)
{
	unsigned rs = tv->lo->ref_size;
	uint8_t b[8];
	uint64_t ref, v, tvw;

	if (target_read(tv->pid, func + tv->lo->fn_pc + rs + (uint64_t)uv * rs, b, rs))
		return 0;
	ref = get_uint(b, rs);
	if (!ref || target_read(tv->pid, ref + UV_V(tv->fr2), b, rs))
		return 0;
	v = get_uint(b, rs);
	if (!v || target_read(tv->pid, v, b, 8))
		return 0;
	tvw = get_uint(b, 8);
	if (tv->fr2)
		return (tvw >> 47) == 0x1fff7 ? tvw & ((1ull << 47) - 1) : 0;
	return (uint32_t)(tvw >> 32) == 0xfffffff7u ? (uint32_t)tvw : 0;
}

/* The closure a slot holds at the instruction pc of node's function,
 * when the instruction that wrote it last is an UGET of the function's
 * own closure: read from the upvalue.  0 if not known. */
static uint64_t callee_by_upvalue(struct walk *w, int node, uint32_t pc, uint32_t slot)
{
	const struct lj_pfn *f = fn_of(w->ps, node);

	if (!f->func)
		return 0;
	while (pc-- > 0) {
		uint32_t ins = f->bc[pc], op = LBC_OP(ins);

		if (op >= LBC__MAX)
			return 0;
		if (lua_bc_info[op].ma == LBC_M_dst && LBC_A(ins) == slot)
			return op == LBC_UGET ? upvalue_func(w->ps->tv, f->func, LBC_D(ins)) : 0;
		if (op == LBC_JMP || lua_bc_info[op].ma == LBC_M_base || is_cmp(op))
			return 0; /* control flow or a call in between: give up */
	}
	return 0;
}

/* The builtin id of the closure at func, 0 for a Lua or C function. */
static uint8_t ffid_of_func(const struct lj_trace_view *tv, uint64_t func)
{
	uint8_t b[2];

	if (target_read(tv->pid, func + tv->lo->fn_ffid - 1, b, 2) || b[0] != GCT_FUNC ||
	    b[1] <= LJ_FF_C)
		return 0;
	return b[1];
}

/* The builtin at func runs the function it is passed first (pcall). */
static int is_pcall(const struct lj_trace_view *tv, uint64_t func, uint8_t *ffid)
{
	const char *name;

	*ffid = ffid_of_func(tv, func);
	if (!*ffid || !tv->ffnames || *ffid >= tv->nff || !(name = tv->ffnames[*ffid]))
		return 0;
	return !strcmp(name, "pcall") || !strcmp(name, "xpcall");
}

/* The Lua prototype of the closure at func, 0 if it is not one. */
static uint64_t proto_of_func(const struct lj_trace_view *tv, uint64_t func)
{
	const struct lj_layout *lo = tv->lo;
	uint8_t b[2], pc[8];
	uint64_t p;

	if (target_read(tv->pid, func + lo->fn_ffid - 1, b, 2) || b[0] != GCT_FUNC ||
	    b[1] != LJ_FF_LUA || target_read(tv->pid, func + lo->fn_pc, pc, lo->ref_size))
		return 0;
	p = get_uint(pc, lo->ref_size);
	return p > lo->pt_size ? p - lo->pt_size : 0;
}

/* The closure func runs at node or one of its callers: the same closure,
 * or the same prototype (the base frame's closure is not known). */
static int in_chain(const struct lj_pstate *ps, int node, uint64_t func)
{
	uint64_t proto = 0;

	for (; node >= 0; node = ps->nodes[node].parent) {
		const struct lj_pfn *f = &ps->fns[ps->nodes[node].fn];

		if (f->func == func)
			return 1;
		if (!f->func && !proto)
			proto = proto_of_func(ps->tv, func);
		if (!f->func && proto == f->proto)
			return 1;
	}
	return 0;
}

/* The closure the IR from first to last checks a called function against
 * (EQ with a function constant, lj_record.c rec_call_specialize), when it
 * checks one only besides those running at node (a trace checks its
 * base frame's function too); 0 otherwise. */
static uint64_t callee_checked(const struct walk *w, int node, uint32_t first, uint32_t last)
{
	const struct lj_trace_view *tv = w->ps->tv;
	uint64_t found = 0;

	for (uint32_t ref = first; ref < last; ref++) {
		struct lj_irins x = lj_ir_at(tv, ref), k;
		uint64_t v;

		if (x.o != LJ_IR_EQ || x.op2 < tv->nk || x.op2 >= LJ_REF_BIAS)
			continue;
		k = lj_ir_at(tv, x.op2);
		if (k.o != LJ_IR_KGC || (k.t & LJ_IRT_TYPE) != LJ_IRT_FUNC)
			continue;
		v = tv->fr2 ? lj_ir_k64(tv, x.op2) : ((uint32_t)k.op1 | (uint32_t)k.op2 << 16);
		if (in_chain(w->ps, node, v))
			continue;
		if (found && v != found)
			return 0;
		found = v;
	}
	return found;
}

/* The callee a stretch's IR checks, or, as a loop's copy leaves such a
 * check before its LOOP, the whole trace's IR. */
static uint64_t callee_by_guard(const struct walk *w, int node)
{
	uint64_t f = callee_checked(w, node, w->first, w->last);

	return f ? f : callee_checked(w, node, LJ_REF_BIAS + 1, w->ps->tv->nins);
}

/* The trace inlines no function the path does not know: its IR checks
 * no closure but those running at node (lj_record.c rec_call_specialize
 * checks every function it inlines: the closure, EQ with a function
 * constant, or, for a prototype of many closures, its bytecode, EQ with
 * an FLOAD of func.pc, field 2 in every 2.1 build). */
static int inlines_none_unknown(const struct walk *w, int node)
{
	const struct lj_trace_view *tv = w->ps->tv;

	for (uint32_t ref = LJ_REF_BIAS + 1; ref < tv->nins; ref++) {
		struct lj_irins x = lj_ir_at(tv, ref), k;

		if (x.o != LJ_IR_EQ)
			continue;
		if (x.op1 > LJ_REF_BIAS && x.op1 < ref) {
			struct lj_irins y = lj_ir_at(tv, x.op1);

			if (y.o == LJ_IR_FLOAD && y.op2 == 2)
				return 0;
		}
		if (x.op2 < tv->nk || x.op2 >= LJ_REF_BIAS)
			continue;
		k = lj_ir_at(tv, x.op2);
		if (k.o == LJ_IR_KGC && (k.t & LJ_IRT_TYPE) == LJ_IRT_FUNC &&
		    !in_chain(w->ps, node, tv->fr2 ? lj_ir_k64(tv, x.op2) :
				  ((uint32_t)k.op1 | (uint32_t)k.op2 << 16)))
			return 0;
	}
	return 1;
}

/* Enters the Lua function fn from a call at state si, node called with
 * link at base; nargs as the call passed them. */
static int enter(struct walk *w, uint32_t si, int parent, int fn, int32_t base,
		 uint32_t retpc, uint8_t link, uint8_t nargs)
{
	int node = node_new(w->ps, fn, parent, base, retpc, link, nargs);

	return node < 0 ? -1 : push(w, node, 0, (int)si, LJ_PEL_CALLEE);
}

/* A call through a builtin the end snapshot shows running a Lua function
 * (pcall): both frames, as the snapshot has them. */
static int enter_pcall(struct walk *w, uint32_t si, int child, uint32_t retpc)
{
	struct lj_pstate *ps = w->ps;
	int grand = -1, ff;

	for (int e = w->to_node; e >= 0 && grand < 0; e = ps->nodes[e].parent)
		if (ps->nodes[e].parent == child)
			grand = e;
	if (grand < 0 || ps->nodes[grand].link != LJ_FRAME_PCALL)
		return 1;
	ff = node_new(ps, ps->nodes[child].fn, w->st[si].node, ps->nodes[child].base, retpc,
		      LJ_FRAME_LUA, 0xff);
	if (ff < 0)
		return -1;
	return enter(w, si, ff, ps->nodes[grand].fn, ps->nodes[grand].base, 0,
		     LJ_FRAME_PCALL, 0xff);
}

/* A call of pcall at state si, whose function the caller took from an
 * upvalue: the builtin's frame and the function's, as LuaJIT's pcall
 * makes them (the function's frame right above the builtin's, called
 * with PCALL).  1 if the function is not known. */
static int step_pcall(struct walk *w, uint32_t si, uint64_t pcall, uint8_t ffid,
		      uint32_t ins)
{
	struct lj_pstate *ps = w->ps;
	const struct pstate s = w->st[si];
	int32_t base = ps->nodes[s.node].base + (int32_t)LBC_A(ins) + 1 + ps->tv->fr2;
	uint64_t func = callee_by_upvalue(w, s.node, s.pc, LBC_A(ins) + 1 + ps->tv->fr2), proto;
	int ff, fn;

	if (!func || !(proto = proto_of_func(ps->tv, func)) ||
	    (fn = lj_pfn_get(ps, proto, func)) < 0 || (ff = lj_pfn_ff(ps, pcall, ffid)) < 0)
		return 1;
	ff = node_new(ps, ff, s.node, base, s.pc + 1, LJ_FRAME_LUA, 0xff);
	if (ff < 0)
		return -1;
	return enter(w, si, ff, fn, base + 1 + ps->tv->fr2, 0, LJ_FRAME_PCALL, 0xff);
}

/* Follows a call at state si: into the callee when known, else over it. */
static int step_call(struct walk *w, uint32_t si, uint32_t ins, int tail)
{
	struct pstate s = w->st[si];
	struct lj_pstate *ps = w->ps;
	const struct lj_pnode *n = &ps->nodes[s.node];
	int32_t base = n->base + (int32_t)LBC_A(ins) + 1 + ps->tv->fr2;
	int child = tail ? -1 : end_child(w, s.node), fn = -1;
	uint32_t op = LBC_OP(ins);
	uint8_t nargs = op == LBC_CALL || op == LBC_CALLT ? (uint8_t)(LBC_C(ins) - 1) : 0xff;
	uint64_t func;

	if (child >= 0 && ps->nodes[child].base == base && !fn_of(ps, child)->proto) {
		int r = enter_pcall(w, si, child, s.pc + 1);

		if (r <= 0)
			return r;
	}
	/* The callee read from the closure's upvalue first: the end
	 * snapshot's frame at the same base may be another call's (g(x)
	 * and then h(x) put both in the same slot). */
	if ((func = callee_by_upvalue(w, s.node, s.pc, LBC_A(ins))) ||
	    (child < 0 && (func = callee_by_guard(w, s.node)))) {
		uint64_t proto = proto_of_func(ps->tv, func);
		uint8_t ffid;
		int r;

		if (!tail && !proto && is_pcall(ps->tv, func, &ffid) &&
		    (r = step_pcall(w, si, func, ffid, ins)) <= 0)
			return r;
		if (!proto) /* a builtin or a C function: its IR is the call's */
			return push(w, s.node, s.pc + 1, (int)si, 0);
		fn = lj_pfn_get(ps, proto, func);
	} else if (child >= 0 && ps->nodes[child].base == base) {
		fn = ps->nodes[child].fn;
	}
	if (fn < 0) {
		if (tail)
			return 0; /* nowhere to go on */
		return push(w, s.node, s.pc + 1, (int)si, LJ_PEL_OPAQUE |
			    (inlines_none_unknown(w, s.node) ? LJ_PEL_NOLUA : 0));
	}
	if (tail)
		return enter(w, si, n->parent, fn, n->base, n->retpc, n->link, nargs);
	return enter(w, si, s.node, fn, base, s.pc + 1, LJ_FRAME_LUA, nargs);
}

/* An instruction that may call a metamethod enters it when the end
 * snapshot shows a continuation frame running one: 1 if it did. */
static int step_mm(struct walk *w, uint32_t si)
{
	struct lj_pstate *ps = w->ps;
	int child = end_child(w, w->st[si].node);

	if (child < 0 || ps->nodes[child].link != LJ_FRAME_CONT)
		return 0;
	return enter(w, si, w->st[si].node, ps->nodes[child].fn, ps->nodes[child].base,
		     w->st[si].pc + 1, LJ_FRAME_CONT, 0xff) ?: 1;
}

/* A vararg function's first instruction moves its frame up past the
 * arguments it was passed (lj_vm's BC_FUNCV). */
static int step_funcv(struct walk *w, uint32_t si)
{
	struct lj_pstate *ps = w->ps;
	const struct lj_pnode *n = &ps->nodes[w->st[si].node];
	int node;

	if (n->nargs == 0xff || n->link == LJ_FRAME_VARG)
		return push(w, w->st[si].node, w->st[si].pc + 1, (int)si, 0);
	node = node_new(ps, n->fn, n->parent, n->base + n->nargs + 1 + ps->tv->fr2,
			n->retpc, LJ_FRAME_VARG, n->nargs);
	return node < 0 ? -1 : push(w, node, w->st[si].pc + 1, (int)si, 0);
}

/* A return from node: to the caller's next instruction, through the
 * builtin frame a function pcall ran returns into. */
static int step_ret(struct walk *w, uint32_t si)
{
	const struct lj_pstate *ps = w->ps;
	const struct lj_pnode *n = &ps->nodes[w->st[si].node];

	if (n->parent < 0)
		return 0;
	if (n->link == LJ_FRAME_PCALL) {
		const struct lj_pnode *ff = &ps->nodes[n->parent];

		if (ff->parent < 0)
			return 0;
		return push(w, ff->parent, ff->retpc, (int)si, 0);
	}
	return push(w, n->parent, n->retpc, (int)si, 0);
}

/* The start of the loop that a JFORL or JITERL at pc closes (their jump
 * offset became a trace number): after the FORI that jumps past it, or
 * after the JMP to its ITERC. */
static int64_t loop_body(const struct lj_pfn *f, uint32_t pc, uint32_t op)
{
	for (uint32_t i = 0; i < pc; i++) {
		uint32_t o = LBC_OP(f->bc[i]);

		if (op == LBC_JFORL && (o == LBC_FORI || o == LBC_JFORI) &&
		    LBC_JUMP(i, f->bc[i]) == (int64_t)pc + 1)
			return i + 1;
		if (op == LBC_JITERL && o == LBC_JMP && LBC_JUMP(i, f->bc[i]) == (int64_t)pc - 1)
			return i + 1;
	}
	return -1;
}

/* Pushes the states that follow state si.  A branch of the first
 * instruction of a comparison's snapshot goes only the way its snapshot
 * does not resume at (avoid). */
static int step(struct walk *w, uint32_t si, int64_t avoid)
{
	struct pstate s = w->st[si];
	const struct lj_pfn *f = fn_of(w->ps, s.node);
	uint32_t ins, op;
	int64_t t;
	int r;

	if (s.pc >= f->nbc)
		return 0;
	ins = f->bc[s.pc];
	op = LBC_OP(ins);
	if (op >= LBC__MAX)
		return 0;
	if (lua_bc_info[op].mm && op != LBC_CALL && op != LBC_CALLM && op != LBC_CALLT &&
	    op != LBC_CALLMT && (r = step_mm(w, si)))
		return r < 0 ? -1 : 0;
	if (is_cmp(op)) {
		if (s.pc + 1 >= f->nbc || LBC_OP(f->bc[s.pc + 1]) != LBC_JMP)
			return 0;
		t = LBC_JUMP(s.pc + 1, f->bc[s.pc + 1]);
		return (avoid == s.pc + 2 ? 0 : push(w, s.node, s.pc + 2, (int)si, 0)) ?:
		       (avoid == t || t < 0 ? 0 : push(w, s.node, (uint32_t)t, (int)si, 0));
	}
	switch (op) {
	case LBC_JMP: case LBC_UCLO: case LBC_ISNEXT:
		t = LBC_JUMP(s.pc, ins);
		return t < 0 ? 0 : push(w, s.node, (uint32_t)t, (int)si, 0);
	case LBC_FORI: case LBC_JFORI: case LBC_FORL: case LBC_IFORL:
	case LBC_ITERL: case LBC_IITERL: case LBC_JFORL: case LBC_JITERL:
		t = op == LBC_JFORL || op == LBC_JITERL ? loop_body(f, s.pc, op) :
		    LBC_JUMP(s.pc, ins);
		return (avoid == s.pc + 1 ? 0 : push(w, s.node, s.pc + 1, (int)si, 0)) ?:
		       (t < 0 || avoid == t ? 0 : push(w, s.node, (uint32_t)t, (int)si, 0));
	case LBC_CALL: case LBC_CALLM:
		return step_call(w, si, ins, 0);
	case LBC_CALLT: case LBC_CALLMT:
		return step_call(w, si, ins, 1);
	case LBC_RET: case LBC_RET0: case LBC_RET1: case LBC_RETM:
		return step_ret(w, si);
	case LBC_FUNCV: case LBC_IFUNCV: case LBC_JFUNCV:
		return step_funcv(w, si);
	case LBC_FUNCC: case LBC_FUNCCW:
		return 0;
	default:
		return push(w, s.node, s.pc + 1, (int)si, 0);
	}
}

#define GUARDS_MAX 8

/* The instructions a guard's snapshot resuming at pc may have been taken
 * for, going the other way (into *out, their count): a comparison with
 * pc as a target, a loop instruction whose exit pc is (a loop's
 * snapshot resumes where the loop is left: lj_record.c rec_for).  The
 * loop's end before its start, which exits to the same place: a loop
 * trace checks its end each round, its start once if ever. */
static uint32_t guards_before(const struct lj_pfn *f, uint32_t pc, uint32_t *out)
{
	uint32_t n = 0;

	for (int pass = 0; pass < 2; pass++)
		for (uint32_t i = 0; i < f->nbc && n < GUARDS_MAX; i++) {
			uint32_t op = LBC_OP(f->bc[i]);

			if (!pass && is_cmp(op) && i + 1 < f->nbc &&
			    LBC_OP(f->bc[i + 1]) == LBC_JMP &&
			    (i + 2 == pc || LBC_JUMP(i + 1, f->bc[i + 1]) == (int64_t)pc))
				out[n++] = i;
			else if (!pass && (op == LBC_FORL || op == LBC_IFORL || op == LBC_JFORL ||
					   op == LBC_ITERL || op == LBC_IITERL || op == LBC_JITERL) &&
				 i + 1 == pc)
				out[n++] = i;
			else if (pass && (op == LBC_FORI || op == LBC_JFORI) &&
				 LBC_JUMP(i, f->bc[i]) == (int64_t)pc)
				out[n++] = i;
		}
	return n;
}

/* The instruction of state si of a walk. */
static uint32_t op_at(const struct walk *w, int32_t si)
{
	const struct lj_pfn *f = fn_of(w->ps, w->st[si].node);

	return w->st[si].pc < f->nbc ? LBC_OP(f->bc[w->st[si].pc]) : LBC__MAX;
}

/* A loop instruction: a trace that starts at the loop's top goes back
 * there after it (or, from the FORI a loop's snapshot may stand for, in). */
static int is_loop(uint32_t op)
{
	return op == LBC_FORL || op == LBC_IFORL || op == LBC_JFORL || op == LBC_ITERL ||
	       op == LBC_IITERL || op == LBC_JITERL || op == LBC_LOOP || op == LBC_JLOOP ||
	       op == LBC_FORI || op == LBC_JFORI;
}

/* State si ends the walk: at the end snapshot's frames and instruction
 * (or a guard it was taken for); with no end snapshot, where the trace
 * links on: once its base frame looped back, or at the entry of another
 * trace (a JFORL, JLOOP, JITERL or JFUNC the recorder stopped at). */
static int at_end(const struct walk *w, uint32_t si, uint32_t endpc, const uint32_t *endg,
		  uint32_t nendg)
{
	const struct pstate *s = &w->st[si];
	uint32_t op;

	if (w->to) {
		if (!same_chain(w->ps, s->node, w->to_node))
			return 0;
		if (s->pc == endpc)
			return 1;
		for (uint32_t i = 0; i < nendg; i++)
			if (s->pc == endg[i])
				return 1;
		return 0;
	}
	if (w->ps->nodes[s->node].parent >= 0 || s->parent < 0)
		return 0;
	op = op_at(w, (int32_t)si);
	if (op == LBC_JFORL || op == LBC_JLOOP || op == LBC_JITERL || op == LBC_JFUNCF ||
	    op == LBC_JFUNCV)
		return 1;
	return is_loop(op_at(w, s->parent));
}

/* The elements of the path that ends at state last: every state from a
 * start to it, but for the last itself when skip_last (the end
 * snapshot's own instruction belongs to the next stretch).  A state's
 * flags tell how the instruction before it moved on. */
static int emit_path(const struct walk *w, int32_t last, int skip_last,
		     struct lj_pel *out, uint32_t max, uint32_t *n)
{
	uint32_t k = 0;
	uint8_t flags = 0;

	for (int32_t i = last; i >= 0; i = w->st[i].parent)
		k++;
	if (skip_last)
		k--;
	if (k > max)
		return -1;
	*n = k;
	for (int32_t i = last; i >= 0; i = w->st[i].parent) {
		const struct pstate *s = &w->st[i];
		const struct lj_pfn *f = fn_of(w->ps, s->node);

		if (i != last || !skip_last)
			out[--k] = (struct lj_pel){ .node = (int16_t)s->node, .pc = s->pc,
						    .ins = s->pc < f->nbc ? f->bc[s->pc] : 0,
						    .flags = flags };
		flags = s->flags;
	}
	return 0;
}

/* The IR at a snapshot's ref is a comparison: the snapshot was taken for
 * it, and resumes at the target not taken. */
static int starts_with_cmp(const struct lj_trace_view *tv, const struct lj_tsnap *s)
{
	struct lj_irins ins;

	if (s->ref < LJ_REF_BIAS + 1 || s->ref >= tv->nins)
		return 0;
	ins = lj_ir_at(tv, s->ref);
	return ins.o < LJ_IR__MAX && lj_ir_class[ins.o] == LJ_IRC_CMP &&
	       (ins.t & LJ_IRT_GUARD);
}

/* The end snapshot is a stitched trace's last: its innermost frame is
 * the builtin the trace calls (a continuation), the path ends at the call
 * in the frame below. */
static int stitch_end(struct walk *w, const struct lj_tsnap *to, uint32_t *endpc)
{
	const struct lj_pnode *n = &w->ps->nodes[w->to_node];

	if (w->ps->fns[n->fn].proto || n->parent < 0 || to->nframe < 2)
		return 0;
	w->to_node = n->parent;
	*endpc = to->frames[to->nframe - 2].pc;
	return 1;
}

int lj_path_find(struct lj_pstate *ps, const struct lj_tsnap *from,
		 const struct lj_tsnap *to, struct lj_pel *out, uint32_t max, uint32_t *n)
{
	struct walk w = { .ps = ps, .to = to, .to_node = -1 };
	int start = lj_pnodes_of_snap(ps, from, 0), found = -1, err = 0, stitch = 0;
	uint32_t pc, endpc = 0, starts[GUARDS_MAX], nstarts = 0, endg[GUARDS_MAX], nendg = 0;

	*n = 0;
	if (start < 0 || (to && (w.to_node = lj_pnodes_of_snap(ps, to, 1)) < 0))
		return -1;
	w.first = from->ref;
	w.last = to ? to->ref : ps->tv->nins;
	pc = from->frames[from->nframe - 1].pc;
	if (starts_with_cmp(ps->tv, from))
		nstarts = guards_before(fn_of(ps, start), pc, starts);
	if (to && !(stitch = stitch_end(&w, to, &endpc))) {
		endpc = to->frames[to->nframe - 1].pc;
		if (starts_with_cmp(ps->tv, to))
			nendg = guards_before(fn_of(ps, w.to_node), endpc, endg);
	}
	if (!(w.st = calloc(LJ_PATH_STATES, sizeof(*w.st))))
		return -1;
	/* Start at the snapshot's instruction, or at the guards it may have
	 * been taken for, going the way the snapshot does not resume at. */
	if (!nstarts)
		push(&w, start, pc, -1, 0);
	for (uint32_t i = 0; i < nstarts; i++)
		push(&w, start, starts[i], -1, 0);
	for (uint32_t i = 0; i < w.nst; i++) {
		if (at_end(&w, i, endpc, endg, nendg)) {
			found = (int)i;
			break;
		}
		if (step(&w, i, w.st[i].parent < 0 && nstarts ? (int64_t)pc : -1)) {
			err = -1;
			break;
		}
	}
	/* The end's own instruction belongs to the next stretch; a stitched
	 * trace's call of the builtin to this one. */
	if (found >= 0 && !err)
		err = emit_path(&w, found, to && !stitch, out, max, n);
	free(w.st);
	return found >= 0 && !err ? 0 : -1;
}

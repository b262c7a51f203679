/*
 * luajit_irmatch.c - which instruction of a path made each IR
 * instruction between two snapshots.
 *
 * LuaJIT emits IR in the order it records instructions, so the IR between
 * two snapshots is the path's instructions' IR, one after the other; what
 * the IR does not say is where one instruction's part ends.  Each IR
 * instruction is matched to a path element by what ties them:
 *
 *   - a constant they share (x * 65521 is MULVN with 65521 among its
 *     function's numbers; a field's key is TGETS's string): the strongest
 *     tie, as a function's constants are mostly its own;
 *   - the slot an SLOAD reads, which only instructions of the frame that
 *     owns it read;
 *   - what the IR does against what the instruction may emit (arithmetic
 *     from arithmetic, a comparison guard from a comparison, loads from a
 *     table access, nothing from a MOV or a function header).
 *
 * A C call (CALLXS) is an FFI call's, a call into a function the path
 * does not know, and one call makes one: two in one element cost what
 * the second would gain, so that two FFI calls between two snapshots
 * (a loop of calls whose results go unused) are the two calls'.
 *
 * The match is the monotone assignment (element order follows IR order)
 * that scores best, by dynamic programming over IR x elements; an IR
 * instruction with no tie goes with the element before it (the rest of
 * an expansion: the SUB that ends a modulo follows the MUL by its
 * constant).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "record/luajit_place_priv.h"

#define MATCH_CELLS (1u << 20) /* IR x elements one stretch may take */

/* What an instruction of the path may emit (its group) and the
 * constants and slots that tie IR to it. */
enum bgroup {
	BG_NONE, BG_CMP, BG_ARITH, BG_LEN, BG_CAT, BG_UPV, BG_TGET, BG_TSET,
	BG_NEW, BG_CALLLUA, BG_CALL, BG_RET, BG_LOOP, BG__N,
};

struct elinfo {
	uint8_t grp, opaque;
	uint8_t nnum, ngc, nslot;
	double num[2];
	uint64_t gc[2];
	int32_t slot[4]; /* slots it reads, trace numbering */
	int32_t base, top;
};

/* Scores of an IR class against an instruction's group: 2 what it
 * emits, 1 what it may, 0 unrelated, -1 never. */
static const int8_t class_score[LJ_IRC_CALL + 1][BG__N] = {
/*                 NONE CMP ARI LEN CAT UPV TGE TSE NEW CLU CAL RET LOP */
[LJ_IRC_CMP]   = {  -1,  3,  0,  0,  0,  1,  1,  1,  0,  1,  1,  0,  2 },
[LJ_IRC_RETF]  = {  -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1,  4, -1 },
[LJ_IRC_ARITH] = {  -1, -1,  2,  0,  0, -1, -1, -1, -1, -1,  1, -1,  1 },
[LJ_IRC_REF]   = {  -1, -1, -1,  1,  0,  2,  2,  2,  0, -1,  1, -1,  0 },
[LJ_IRC_LOAD]  = {  -1,  0,  0,  2,  0,  2,  2,  0,  0,  0,  1,  0,  0 },
[LJ_IRC_STORE] = {  -1, -1, -1, -1,  0,  2, -1,  2,  1, -1,  1, -1, -1 },
[LJ_IRC_ALLOC] = {  -1, -1, -1, -1,  2, -1, -1, -1,  2, -1,  1, -1, -1 },
[LJ_IRC_BUF]   = {  -1, -1, -1, -1,  2, -1, -1, -1, -1, -1,  1, -1, -1 },
[LJ_IRC_BAR]   = {  -1, -1, -1, -1,  0,  1, -1,  2,  0, -1,  1, -1, -1 },
[LJ_IRC_CONV]  = {  -1,  0,  1,  0,  1, -1,  0,  0, -1, -1,  1, -1,  1 },
[LJ_IRC_CALL]  = {  -1, -1,  0,  0,  1, -1,  0,  0,  0, -1,  2, -1, -1 },
};

static uint8_t group_of(uint32_t op, uint8_t flags)
{
	if (op <= LBC_ISNUM)
		return BG_CMP;
	switch (op) {
	case LBC_UNM: case LBC_POW:
		return BG_ARITH;
	case LBC_LEN:
		return BG_LEN;
	case LBC_CAT:
		return BG_CAT;
	case LBC_UGET: case LBC_USETV: case LBC_USETS: case LBC_USETN: case LBC_USETP:
		return BG_UPV;
	case LBC_GGET: case LBC_TGETV: case LBC_TGETS: case LBC_TGETB: case LBC_TGETR:
		return BG_TGET;
	case LBC_GSET: case LBC_TSETV: case LBC_TSETS: case LBC_TSETB: case LBC_TSETM:
	case LBC_TSETR:
		return BG_TSET;
	case LBC_FNEW: case LBC_TNEW: case LBC_TDUP:
		return BG_NEW;
	case LBC_CALL: case LBC_CALLM: case LBC_CALLT: case LBC_CALLMT:
		return flags & LJ_PEL_CALLEE ? BG_CALLLUA : BG_CALL;
	case LBC_ITERC: case LBC_ITERN: case LBC_VARG:
		return BG_CALL;
	case LBC_RET: case LBC_RET0: case LBC_RET1: case LBC_RETM:
		return BG_RET;
	case LBC_FORI: case LBC_JFORI: case LBC_FORL: case LBC_IFORL: case LBC_JFORL:
	case LBC_ITERL: case LBC_IITERL: case LBC_JITERL: case LBC_ISNEXT:
		return BG_LOOP;
	}
	if (op >= LBC_ADDVN && op <= LBC_MODVV)
		return BG_ARITH;
	return BG_NONE;
}

/* A number constant as the prototype holds it (a TValue): a double, or
 * in a dual-number build (LJ_DUALNUM: arm64's) an integer tagged
 * LJ_TISNUM (~13u) in the upper bits, 17 of them with GC64, 32 without;
 * as a double, either tag is a NaN no constant is. */
static double num_of(uint64_t raw)
{
	double d;

	if (raw >> 47 == (0x1ffffu & ~13u) || raw >> 32 == (uint32_t)~13u)
		return (int32_t)(uint32_t)raw;
	memcpy(&d, &raw, 8);
	return d;
}

static void add_slot(struct elinfo *e, int32_t s)
{
	if (e->nslot < 4)
		e->slot[e->nslot++] = s;
}

/* The constant or slot an operand of mode m names. */
static void operand(struct elinfo *e, const struct lj_pfn *f, uint8_t m, uint32_t v)
{
	switch (m) {
	case LBC_M_var:
		add_slot(e, e->base + (int32_t)v);
		break;
	case LBC_M_num:
		if (v < f->nkn && e->nnum < 2)
			e->num[e->nnum++] = num_of(f->kn[v]);
		break;
	case LBC_M_lits:
		if (e->nnum < 2)
			e->num[e->nnum++] = (int16_t)v;
		break;
	case LBC_M_str: case LBC_M_func: case LBC_M_tab:
		if (v < f->nkgc && e->ngc < 2)
			e->gc[e->ngc++] = f->kgc[v];
		break;
	}
}

static void el_info(const struct lj_pstate *ps, const struct lj_pel *path, uint32_t npath,
		    uint32_t at, struct elinfo *e)
{
	const struct lj_pel *el = &path[at];
	const struct lj_pnode *n = &ps->nodes[el->node];
	const struct lj_pfn *f = &ps->fns[n->fn];
	uint32_t op = LBC_OP(el->ins);
	const struct lua_bc_info *bi;

	memset(e, 0, sizeof(*e));
	e->base = n->base;
	e->top = n->base + f->framesize;
	if (op >= LBC__MAX)
		return;
	bi = &lua_bc_info[op];
	e->grp = group_of(op, el->flags);
	e->opaque = !!(el->flags & LJ_PEL_OPAQUE);
	if (bi->ma == LBC_M_var || bi->ma == LBC_M_base)
		add_slot(e, e->base + (int32_t)LBC_A(el->ins));
	if (bi->mb != LBC_M____) {
		operand(e, f, bi->mb, LBC_B(el->ins));
		operand(e, f, bi->mc, LBC_C(el->ins));
	} else {
		operand(e, f, bi->mc, LBC_D(el->ins));
	}
	if (op == LBC_TGETB || op == LBC_TSETB) {
		if (e->nnum < 2)
			e->num[e->nnum++] = LBC_C(el->ins);
	}
	if (e->grp == BG_CALLLUA && at + 1 < npath && e->ngc < 2) {
		/* The callee: what a check of the called function compares to. */
		e->gc[e->ngc++] = ps->fns[ps->nodes[path[at + 1].node].fn].func;
	}
	if (e->grp == BG_RET && n->parent >= 0 && e->ngc < 2)
		e->gc[e->ngc++] = ps->fns[ps->nodes[n->parent].fn].proto;
}

/* An operand of op that is a literal, not a ref. */
static int lit_operand(uint8_t op, int which)
{
	switch (op) {
	case LJ_IR_SLOAD: case LJ_IR_TNEW: case LJ_IR_NOP: case LJ_IR_LOOP:
	case LJ_IR_GCSTEP: case LJ_IR_PROF: case LJ_IR_BASE:
		return 1;
	case LJ_IR_FLOAD: case LJ_IR_FREF: case LJ_IR_FPMATH: case LJ_IR_CONV:
	case LJ_IR_CALLN: case LJ_IR_CALLA: case LJ_IR_CALLL: case LJ_IR_CALLS:
	case LJ_IR_CALLXS: case LJ_IR_UREFO: case LJ_IR_UREFC: case LJ_IR_VLOAD:
	case LJ_IR_XLOAD: case LJ_IR_BUFHDR: case LJ_IR_TOSTR: case LJ_IR_RENAME:
		return which == 2;
	}
	return 0;
}

/* A constant's value: *num for a number (1), *gc for an address (2); a
 * hash slot's key (KSLOT) is its key constant's. */
static int k_value(const struct lj_trace_view *tv, uint32_t ref, double *num, uint64_t *gc,
		   int slot_ok)
{
	struct lj_irins k;

	if (ref < tv->nk || ref >= LJ_REF_BIAS)
		return 0;
	k = lj_ir_at(tv, ref);
	switch (k.o) {
	case LJ_IR_KNUM:
		*num = num_of(lj_ir_k64(tv, ref));
		return 1;
	case LJ_IR_KINT:
		*num = (int32_t)((uint32_t)k.op1 | (uint32_t)k.op2 << 16);
		return 1;
	case LJ_IR_KGC: case LJ_IR_KPTR: case LJ_IR_KKPTR:
		*gc = tv->fr2 ? lj_ir_k64(tv, ref) : ((uint32_t)k.op1 | (uint32_t)k.op2 << 16);
		return 2;
	case LJ_IR_KSLOT:
		return slot_ok ? k_value(tv, k.op1, num, gc, 0) : 0;
	}
	return 0;
}

static int trivial(double v)
{
	return v == 0 || v == 1 || v == -1 || v == 2;
}

/* What x's constants tie it to element e: 4 for each it shares (1 for
 * a number as common as 0 or 1); *strong set if x has a constant that is
 * not trivial. */
static int const_score(const struct lj_trace_view *tv, struct lj_irins x,
		       const struct elinfo *e, int *strong)
{
	int s = 0;

	for (int w = 1; w <= 2; w++) {
		double v = 0;
		uint64_t g = 0;
		int kind;

		if (lit_operand(x.o, w))
			continue;
		kind = k_value(tv, w == 1 ? x.op1 : x.op2, &v, &g, 1);
		if (kind == 1) {
			*strong |= !trivial(v);
			for (int i = 0; i < e->nnum; i++)
				if (e->num[i] == v || e->num[i] == -v)
					s += trivial(v) ? 1 : 4;
		} else if (kind == 2 && g) {
			*strong = 1;
			for (int i = 0; i < e->ngc; i++)
				if (e->gc[i] == g)
					s += 4;
		}
	}
	return s;
}

/* How well element e accounts for IR x, which no element's constants
 * tie when stray (a constant not trivial, shared with no element). */
static int score(const struct lj_trace_view *tv, struct lj_irins x, const struct elinfo *e,
		 int stray)
{
	int s, strong = 0;

	if (x.o >= LJ_IR__MAX || lj_ir_class[x.o] > LJ_IRC_CALL)
		return 0;
	/* A call into a function the path does not know: what no element
	 * accounts for is its, and so is a call of a C function (CALLXS:
	 * only an FFI call makes one, and the path never knows its callee). */
	if (e->opaque)
		return stray || x.o == LJ_IR_CALLXS ? 3 : 0;
	if (x.o == LJ_IR_SLOAD) {
		int32_t slot = x.op1;

		s = slot >= e->base && slot < e->top ? 0 : -2;
		for (int i = 0; i < e->nslot; i++)
			if (e->slot[i] == slot)
				s = 3;
		return s;
	}
	return class_score[lj_ir_class[x.o]][e->grp] + const_score(tv, x, e, &strong);
}

/* IR that has no code and no bytecode of its own. */
static int unmatched(struct lj_irins x)
{
	return x.o >= LJ_IR__MAX || lj_ir_class[x.o] == LJ_IRC_MARK ||
	       lj_ir_class[x.o] == LJ_IRC_K;
}

int lj_irmatch(struct lj_pstate *ps, uint32_t first, uint32_t n,
	       const struct lj_pel *path, uint32_t npath, int32_t *el_of)
{
	const struct lj_trace_view *tv = ps->tv;
	struct elinfo *ei = NULL;
	int32_t *best = NULL, *anchor = NULL, *from = NULL;
	uint32_t *xs = NULL, nx = 0;
	uint8_t *stray = NULL;
	int err = -1;

	for (uint32_t j = 0; j < n; j++)
		el_of[j] = -1;
	if (!npath)
		return n ? -1 : 0;
	if (!(xs = calloc(n + 1, sizeof(*xs))))
		return -1;
	for (uint32_t j = 0; j < n; j++)
		if (!unmatched(lj_ir_at(tv, first + j)))
			xs[nx++] = j;
	if (!nx) {
		free(xs);
		return 0;
	}
	if ((uint64_t)nx * npath > MATCH_CELLS ||
	    !(ei = calloc(npath, sizeof(*ei))) ||
	    !(best = calloc((size_t)nx * npath * 2, sizeof(*best))) ||
	    !(from = calloc((size_t)nx * npath * 2, sizeof(*from))) ||
	    !(anchor = calloc(nx, sizeof(*anchor))) || !(stray = calloc(nx, 1)))
		goto out;
	for (uint32_t i = 0; i < npath; i++)
		el_info(ps, path, npath, i, &ei[i]);
	/* Each IR's anchor: the element its constants tie it to, or for IR
	 * with none, the anchor of its latest operand in the stretch (the
	 * rest of one instruction's expansion: a modulo's FPMATH and SUB). */
	for (uint32_t j = 0; j < nx; j++) {
		struct lj_irins x = lj_ir_at(tv, first + xs[j]);
		int best_c = 0, strong = 0;

		anchor[j] = -1;
		for (uint32_t i = 0; i < npath; i++) {
			int c = const_score(tv, x, &ei[i], &strong);

			if (c > best_c) {
				best_c = c;
				anchor[j] = (int32_t)i;
			}
		}
		stray[j] = strong && !best_c;
		if (best_c || strong)
			continue;
		for (uint32_t k = j; k-- > 0;) {
			uint32_t ref = first + xs[k];

			if (ref == x.op1 || (!lit_operand(x.o, 2) && ref == x.op2)) {
				anchor[j] = anchor[k];
				stray[j] = stray[k];
				break;
			}
		}
	}
	/* best[j][i][h]: the best score of IR 0..j with IR j made by element
	 * i, h telling whether i made a C call (CALLXS) among them: one call
	 * instruction makes one call, so a second in the same element costs
	 * what the first gained (two FFI calls between two snapshots, as in a
	 * loop of calls whose results go unused, are two elements' calls, not
	 * the first's twice).  from[j][i][h]: where IR j-1 was, as i * 2 + h.
	 * Ties go to the earliest element. */
	for (uint32_t j = 0; j < nx; j++) {
		struct lj_irins x = lj_ir_at(tv, first + xs[j]);
		int call = x.o == LJ_IR_CALLXS;
		int32_t run = INT32_MIN / 2, runfrom = -1; /* over elements before i */

		for (uint32_t i = 0; i < npath; i++) {
			size_t c = ((size_t)j * npath + i) * 2, pc = c - (size_t)npath * 2;
			int32_t s = score(tv, x, &ei[i], stray[j]);

			if (anchor[j] == (int32_t)i && !ei[i].opaque)
				s += 2;
			best[c] = best[c + 1] = INT32_MIN / 2;
			from[c] = from[c + 1] = -1;
			if (j == 0) {
				best[c + call] = s;
				continue;
			}
			/* From an earlier element (preferred on a tie: the
			 * earliest), or staying in this one. */
			best[c + call] = run + s;
			from[c + call] = runfrom;
			for (int h = 0; h < 2; h++) {
				int32_t v = best[pc + h] + (call && h && s > 0 ? 0 : s);
				int nh = h | call;

				if (v > best[c + nh]) {
					best[c + nh] = v;
					from[c + nh] = (int32_t)(i * 2 + h);
				}
			}
			for (int h = 0; h < 2; h++)
				if (best[pc + h] > run) {
					run = best[pc + h];
					runfrom = (int32_t)(i * 2 + h);
				}
		}
	}
	/* Back from the last IR, from the earliest element that scores best. */
	{
		size_t row = (size_t)(nx - 1) * npath * 2;
		int32_t at = 0;

		for (int32_t k = 1; k < (int32_t)npath * 2; k++)
			if (best[row + k] > best[row + at])
				at = k;
		for (uint32_t j = nx; j-- > 0;) {
			el_of[xs[j]] = at / 2;
			at = from[((size_t)j * npath) * 2 + at];
			if (at < 0)
				break;
		}
	}
	err = 0;
out:
	free(xs);
	free(ei);
	free(best);
	free(from);
	free(anchor);
	free(stray);
	return err;
}

/*
 * luajit_ir.h - a compiled trace's IR as the recorder reads it from a
 * LuaJIT process (lj_ir.h): the instruction format, the opcodes, and what
 * kind of work each stands for.
 *
 *   IRIns, 8 bytes:  [ op1:16 | op2:16 | t:8 | o:8 | r:8 | s:8 ]
 *
 *   refs  0 .. nk-1       unused         constants grow down from REF_BIAS,
 *         nk .. 0x7fff    constants      instructions up from it:
 *         0x8000          BASE           ir[ref] for both
 *         0x8001 .. nins  instructions
 *
 * t is the result's type (IRT_*, low 5 bits) with the guard flag (0x80);
 * o the opcode.  A 64-bit constant (KNUM, KINT64, and KGC and KPTR with
 * GC64) keeps its payload in the next slot; KINT its value in op1:op2;
 * KSLOT names a key constant (op1) and a hash slot (op2).  After the
 * trace is assembled, r is the register the instruction's result lives
 * in (x86_64: 0-15 the general registers in encoding order, 16-31 xmm0-15;
 * 0x80 and above: none, sunk or rematerialized) and s its spill slot.
 *
 * The opcodes are those of every build whose snapshots carry a machine
 * code offset (luajit_snaps.c needs it): upstream since 2021-07 (IR_TMPREF,
 * after mcofs in 2021-03) and OpenResty's luajit2 since v2.1-20211210.
 * The constants' numbers (up to KSLOT) are those of every 2.1 build.
 */
#ifndef LUAPROF_RECORD_LUAJIT_IR_H
#define LUAPROF_RECORD_LUAJIT_IR_H

#include <stdint.h>

#define LJ_REF_BIAS 0x8000u
#define LJ_REF_BASE LJ_REF_BIAS
#define LJ_IRINS_SIZE 8
#define LJ_IRT_TYPE 0x1f
#define LJ_IRT_GUARD 0x80
#define LJ_RID_NONE 0x80 /* r at or above: no register */

/* IR types the recorder tells apart (lj_ir.h IRTDEF order). */
enum {
	LJ_IRT_NIL = 0, LJ_IRT_STR = 4, LJ_IRT_PROTO = 7, LJ_IRT_FUNC = 8,
	LJ_IRT_TAB = 11, LJ_IRT_NUM = 14, LJ_IRT_INT = 19,
};

/*
 * What an instruction is, for telling which bytecode made it and which
 * machine code it became:
 *   CMP    a comparison guard (cmp/ucomisd and a branch to an exit)
 *   RETF   a return below the trace's base frame (a guard)
 *   MARK   no code of its own (NOP, BASE, LOOP, PHI, RENAME...)
 *   K      a constant
 *   ARITH  arithmetic (MOD, POW and some FPMATH call a helper)
 *   REF    an address into a table, upvalue or object
 *   LOAD, STORE, ALLOC (calls the allocator), BUF (string buffers,
 *   helper calls), BAR (write barriers), CONV, CALL (a C function)
 */
#define LJ_IRDEF(_) \
	_(LT, CMP) _(GE, CMP) _(LE, CMP) _(GT, CMP) \
	_(ULT, CMP) _(UGE, CMP) _(ULE, CMP) _(UGT, CMP) \
	_(EQ, CMP) _(NE, CMP) _(ABC, CMP) _(RETF, RETF) \
	_(NOP, MARK) _(BASE, MARK) _(PVAL, MARK) _(GCSTEP, MARK) _(HIOP, MARK) \
	_(LOOP, MARK) _(USE, MARK) _(PHI, MARK) _(RENAME, MARK) _(PROF, MARK) \
	_(KPRI, K) _(KINT, K) _(KGC, K) _(KPTR, K) _(KKPTR, K) _(KNULL, K) \
	_(KNUM, K) _(KINT64, K) _(KSLOT, K) \
	_(BNOT, ARITH) _(BSWAP, ARITH) _(BAND, ARITH) _(BOR, ARITH) \
	_(BXOR, ARITH) _(BSHL, ARITH) _(BSHR, ARITH) _(BSAR, ARITH) \
	_(BROL, ARITH) _(BROR, ARITH) \
	_(ADD, ARITH) _(SUB, ARITH) _(MUL, ARITH) _(DIV, ARITH) _(MOD, ARITH) \
	_(POW, ARITH) _(NEG, ARITH) _(ABS, ARITH) _(LDEXP, ARITH) \
	_(MIN, ARITH) _(MAX, ARITH) _(FPMATH, ARITH) \
	_(ADDOV, ARITH) _(SUBOV, ARITH) _(MULOV, ARITH) \
	_(AREF, REF) _(HREFK, REF) _(HREF, REF) _(NEWREF, REF) _(UREFO, REF) \
	_(UREFC, REF) _(FREF, REF) _(TMPREF, REF) _(STRREF, REF) _(LREF, REF) \
	_(ALOAD, LOAD) _(HLOAD, LOAD) _(ULOAD, LOAD) _(FLOAD, LOAD) \
	_(XLOAD, LOAD) _(SLOAD, LOAD) _(VLOAD, LOAD) _(ALEN, LOAD) \
	_(ASTORE, STORE) _(HSTORE, STORE) _(USTORE, STORE) _(FSTORE, STORE) \
	_(XSTORE, STORE) \
	_(SNEW, ALLOC) _(XSNEW, ALLOC) _(TNEW, ALLOC) _(TDUP, ALLOC) \
	_(CNEW, ALLOC) _(CNEWI, ALLOC) \
	_(BUFHDR, BUF) _(BUFPUT, BUF) _(BUFSTR, BUF) \
	_(TBAR, BAR) _(OBAR, BAR) _(XBAR, BAR) \
	_(CONV, CONV) _(TOBIT, CONV) _(TOSTR, CONV) _(STRTO, CONV) \
	_(CALLN, CALL) _(CALLA, CALL) _(CALLL, CALL) _(CALLS, CALL) \
	_(CALLXS, CALL) _(CARG, CALL)

enum lj_irop {
#define LJ_IRENUM(name, cls) LJ_IR_##name,
	LJ_IRDEF(LJ_IRENUM)
#undef LJ_IRENUM
	LJ_IR__MAX
};

_Static_assert(LJ_IR_KGC == 24 && LJ_IR_KNUM == 28 && LJ_IR_SLOAD == 71 &&
	       LJ_IR_CARG == 100, "LJ_IRDEF is out of LuaJIT's order");

enum lj_irclass {
	LJ_IRC_CMP, LJ_IRC_RETF, LJ_IRC_MARK, LJ_IRC_K, LJ_IRC_ARITH, LJ_IRC_REF,
	LJ_IRC_LOAD, LJ_IRC_STORE, LJ_IRC_ALLOC, LJ_IRC_BUF, LJ_IRC_BAR,
	LJ_IRC_CONV, LJ_IRC_CALL,
};

static const uint8_t lj_ir_class[LJ_IR__MAX] = {
#define LJ_IRCLASS(name, cls) [LJ_IR_##name] = LJ_IRC_##cls,
	LJ_IRDEF(LJ_IRCLASS)
#undef LJ_IRCLASS
};

/* One instruction, decoded. */
struct lj_irins {
	uint16_t op1, op2;
	uint8_t t, o, r, s;
};

static inline struct lj_irins lj_ir_decode(const uint8_t *p)
{
	struct lj_irins ins = {
		.op1 = (uint16_t)(p[0] | p[1] << 8), .op2 = (uint16_t)(p[2] | p[3] << 8),
		.t = p[4], .o = p[5], .r = p[6], .s = p[7],
	};
	return ins;
}

#endif

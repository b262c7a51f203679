/*
 * lua_bc.h - LuaJIT's bytecode as luaprof reads it from a prototype:
 * opcode numbers, operand modes and the metamethod an opcode may call
 * (LuaJIT's BCDEF in lj_bc.h, identical in upstream LuaJIT 2.1 and
 * OpenResty's luajit2).  Two numberings are in use: LuaJIT 2.1 since
 * 2026-07 (upstream a2ce8114, OpenResty's 20260824) has seven bit
 * operator opcodes between JMP and FUNCF, earlier builds none, so every
 * opcode from FUNCF on is 7 higher in the newer.  Luaprof's numbers are
 * the newer's; lua_bc_norm() brings a prototype's instructions to them,
 * told which numbering they use by the function header at bc[0].  The report names a function from its caller's
 * instructions, read backwards from the call site as lj_debug_slotname()
 * does (report/lua_names.c); the recorder follows the instructions a
 * compiled trace ran between two snapshots (record/luajit_path.c).
 *
 *   instruction: 32 bits   [ B:8 | C:8 | A:8 | OP:8 ]   D = B:C (16 bits)
 */
#ifndef LUAPROF_REPORT_LUA_BC_H
#define LUAPROF_REPORT_LUA_BC_H

#include <stddef.h>
#include <stdint.h>

/*
 * The bytecodes, written once in LuaJIT's order (BCDEF in lj_bc.h) with
 * its operand modes: _(NAME, A, B, C or D, the metamethod it may call or
 * NULL).  The opcode is the position in the list.  Modes, as lj_bc.h
 * names them: dst, a slot written; var, a slot read; base, rbase, the
 * slots from there on (a call's arguments, a loop's control variables,
 * the results returned); num, str, func, tab, cdata, pri, a constant of
 * the prototype (number, string, prototype, table, cdata, primitive) by
 * index; lit, lits, an unsigned or signed literal; uv, an upvalue; jump,
 * a branch offset biased by 0x8000; ___, unused.
 */
#define LUA_BCDEF(_) \
	_(ISLT, var, ___, var, "__lt") \
	_(ISGE, var, ___, var, "__lt") \
	_(ISLE, var, ___, var, "__le") \
	_(ISGT, var, ___, var, "__le") \
	_(ISEQV, var, ___, var, "__eq") \
	_(ISNEV, var, ___, var, "__eq") \
	_(ISEQS, var, ___, str, "__eq") \
	_(ISNES, var, ___, str, "__eq") \
	_(ISEQN, var, ___, num, "__eq") \
	_(ISNEN, var, ___, num, "__eq") \
	_(ISEQP, var, ___, pri, "__eq") \
	_(ISNEP, var, ___, pri, "__eq") \
	_(ISTC, dst, ___, var, NULL) \
	_(ISFC, dst, ___, var, NULL) \
	_(IST, ___, ___, var, NULL) \
	_(ISF, ___, ___, var, NULL) \
	_(ISTYPE, var, ___, lit, NULL) \
	_(ISNUM, var, ___, lit, NULL) \
	_(MOV, dst, ___, var, NULL) \
	_(NOT, dst, ___, var, NULL) \
	_(UNM, dst, ___, var, "__unm") \
	_(LEN, dst, ___, var, "__len") \
	_(ADDVN, dst, var, num, "__add") \
	_(SUBVN, dst, var, num, "__sub") \
	_(MULVN, dst, var, num, "__mul") \
	_(DIVVN, dst, var, num, "__div") \
	_(MODVN, dst, var, num, "__mod") \
	_(ADDNV, dst, var, num, "__add") \
	_(SUBNV, dst, var, num, "__sub") \
	_(MULNV, dst, var, num, "__mul") \
	_(DIVNV, dst, var, num, "__div") \
	_(MODNV, dst, var, num, "__mod") \
	_(ADDVV, dst, var, var, "__add") \
	_(SUBVV, dst, var, var, "__sub") \
	_(MULVV, dst, var, var, "__mul") \
	_(DIVVV, dst, var, var, "__div") \
	_(MODVV, dst, var, var, "__mod") \
	_(POW, dst, var, var, "__pow") \
	_(CAT, dst, rbase, rbase, "__concat") \
	_(KSTR, dst, ___, str, NULL) \
	_(KCDATA, dst, ___, cdata, NULL) \
	_(KSHORT, dst, ___, lits, NULL) \
	_(KNUM, dst, ___, num, NULL) \
	_(KPRI, dst, ___, pri, NULL) \
	_(KNIL, base, ___, base, NULL) \
	_(UGET, dst, ___, uv, NULL) \
	_(USETV, uv, ___, var, NULL) \
	_(USETS, uv, ___, str, NULL) \
	_(USETN, uv, ___, num, NULL) \
	_(USETP, uv, ___, pri, NULL) \
	_(UCLO, rbase, ___, jump, NULL) \
	_(FNEW, dst, ___, func, "__gc") \
	_(TNEW, dst, ___, lit, "__gc") \
	_(TDUP, dst, ___, tab, "__gc") \
	_(GGET, dst, ___, str, "__index") \
	_(GSET, var, ___, str, "__newindex") \
	_(TGETV, dst, var, var, "__index") \
	_(TGETS, dst, var, str, "__index") \
	_(TGETB, dst, var, lit, "__index") \
	_(TGETR, dst, var, var, "__index") \
	_(TSETV, var, var, var, "__newindex") \
	_(TSETS, var, var, str, "__newindex") \
	_(TSETB, var, var, lit, "__newindex") \
	_(TSETM, base, ___, num, "__newindex") \
	_(TSETR, var, var, var, "__newindex") \
	_(CALLM, base, lit, lit, "__call") \
	_(CALL, base, lit, lit, "__call") \
	_(CALLMT, base, ___, lit, "__call") \
	_(CALLT, base, ___, lit, "__call") \
	_(ITERC, base, lit, lit, "__call") \
	_(ITERN, base, lit, lit, "__call") \
	_(VARG, base, lit, lit, NULL) \
	_(ISNEXT, base, ___, jump, NULL) \
	_(RETM, base, ___, lit, NULL) \
	_(RET, rbase, ___, lit, NULL) \
	_(RET0, rbase, ___, lit, NULL) \
	_(RET1, rbase, ___, lit, NULL) \
	_(FORI, base, ___, jump, NULL) \
	_(JFORI, base, ___, jump, NULL) \
	_(FORL, base, ___, jump, NULL) \
	_(IFORL, base, ___, jump, NULL) \
	_(JFORL, base, ___, lit, NULL) \
	_(ITERL, base, ___, jump, NULL) \
	_(IITERL, base, ___, jump, NULL) \
	_(JITERL, base, ___, lit, NULL) \
	_(LOOP, rbase, ___, jump, NULL) \
	_(ILOOP, rbase, ___, jump, NULL) \
	_(JLOOP, rbase, ___, lit, NULL) \
	_(JMP, rbase, ___, jump, NULL) \
	_(BNOT, dst, ___, var, NULL) \
	_(BAND, dst, var, var, NULL) \
	_(BOR, dst, var, var, NULL) \
	_(BXOR, dst, var, var, NULL) \
	_(BSHL, dst, var, var, NULL) \
	_(BSHR, dst, var, var, NULL) \
	_(BSAR, dst, var, var, NULL) \
	_(FUNCF, rbase, ___, ___, NULL) \
	_(IFUNCF, rbase, ___, ___, NULL) \
	_(JFUNCF, rbase, ___, lit, NULL) \
	_(FUNCV, rbase, ___, ___, NULL) \
	_(IFUNCV, rbase, ___, ___, NULL) \
	_(JFUNCV, rbase, ___, lit, NULL) \
	_(FUNCC, rbase, ___, ___, NULL) \
	_(FUNCCW, rbase, ___, ___, NULL)

enum lua_bc_op {
#define LBC_ENUM(name, ma, mb, mc, mm) LBC_##name,
	LUA_BCDEF(LBC_ENUM)
#undef LBC_ENUM
	LBC__MAX
};

/* LuaJIT 2.1's numbers (lj_bc.h): a line lost or moved in the list
 * would shift every opcode after it. */
_Static_assert(LBC_CALL == 0x42 && LBC_BNOT == 0x59 && LBC_FUNCF == 0x60 && LBC__MAX == 104,
	       "LUA_BCDEF is out of LuaJIT 2.1's order");

/* The opcodes builds before the bit operators lack, all before FUNCF. */
#define LBC_NBITOP (LBC_FUNCF - LBC_BNOT)

enum lua_bc_mode {
	LBC_M____, LBC_M_var, LBC_M_dst, LBC_M_base, LBC_M_rbase, LBC_M_num,
	LBC_M_str, LBC_M_func, LBC_M_tab, LBC_M_cdata, LBC_M_pri, LBC_M_lit,
	LBC_M_lits, LBC_M_uv, LBC_M_jump,
};

/* How operand A is used, as naming a slot needs it: DST when the
 * instruction writes slot A, BASE when it uses the slots from A on. */
enum lua_bc_amode { LBC_A_OTHER, LBC_A_DST, LBC_A_BASE };

struct lua_bc_info {
	const char *name;
	enum lua_bc_amode amode;
	uint8_t ma, mb, mc; /* enum lua_bc_mode of A, B, C or D */
	const char *mm; /* "__index", "__call"...; NULL: calls no metamethod */
};

#define LBC_AMODE(m) (LBC_M_##m == LBC_M_dst ? LBC_A_DST : \
		      LBC_M_##m == LBC_M_base ? LBC_A_BASE : LBC_A_OTHER)
static const struct lua_bc_info lua_bc_info[LBC__MAX] = {
#define LBC_INFO(name, ma, mb, mc, mm) \
	[LBC_##name] = { #name, LBC_AMODE(ma), LBC_M_##ma, LBC_M_##mb, LBC_M_##mc, mm },
	LUA_BCDEF(LBC_INFO)
#undef LBC_INFO
};
#undef LBC_AMODE

/* The bias of a jump's D, and a jump's target from its position. */
#define LBC_BIAS_J 0x8000
#define LBC_JUMP(pc, ins) ((int64_t)(pc) + 1 + (int64_t)LBC_D(ins) - LBC_BIAS_J)

#define LBC_OP(ins) ((ins) & 0xff)
#define LBC_A(ins) (((ins) >> 8) & 0xff)
#define LBC_C(ins) (((ins) >> 16) & 0xff)
#define LBC_B(ins) ((ins) >> 24)
#define LBC_D(ins) ((ins) >> 16)

/*
 * Which numbering a prototype's instructions use, from its header bc[0]
 * (FUNCF, IFUNCF, JFUNCF, FUNCV, IFUNCV or JFUNCV in either): 1 with the
 * bit operators, 0 without, -1 when bc[0] is no function header in
 * either (not a Lua prototype's bytecode).  The two ranges are disjoint.
 */
static inline int lua_bc_numbering(uint32_t header)
{
	uint32_t op = LBC_OP(header);

	if (op >= LBC_FUNCF && op <= LBC_JFUNCV)
		return 1;
	if (op >= LBC_FUNCF - LBC_NBITOP && op <= LBC_JFUNCV - LBC_NBITOP)
		return 0;
	return -1;
}

/* Brings bc[0..n) of numbering `bitops` (lua_bc_numbering) to luaprof's,
 * in place.  An opcode the numbering has not becomes 0xff, which none
 * has; so does every opcode of bytecode in no numbering (bitops -1). */
static inline void lua_bc_norm(uint32_t *bc, size_t n, int bitops)
{
	for (size_t i = 0; bitops != 1 && i < n; i++) {
		uint32_t op = LBC_OP(bc[i]);

		if (bitops < 0)
			op = 0xff;
		else if (op >= LBC_BNOT)
			op = op < LBC__MAX - LBC_NBITOP ? op + LBC_NBITOP : 0xff;
		bc[i] = (bc[i] & ~0xffu) | op;
	}
}

/* And the other way, an instruction from its fields (LuaJIT's BCINS_AD,
 * BCINS_ABC): for the tests and the synthetic traces that make protos. */
#define LBC_AD(op, a, d) ((uint32_t)(op) | (uint32_t)(a) << 8 | (uint32_t)(d) << 16)
#define LBC_ABC(op, a, b, c) \
	((uint32_t)(op) | (uint32_t)(a) << 8 | (uint32_t)(c) << 16 | (uint32_t)(b) << 24)

#endif

/*
 * lua_bc.h - the little of LuaJIT's bytecode that naming a function needs:
 * opcode numbers, how operand A is used, and which metamethod an opcode
 * may call (LuaJIT's BCDEF in lj_bc.h, identical in upstream LuaJIT 2.1
 * and OpenResty's luajit2).  lua_names.c reads a caller's instructions
 * backwards from its call site, as lj_debug_slotname() does.
 *
 *   instruction: 32 bits   [ B:8 | C:8 | A:8 | OP:8 ]   D = B:C (16 bits)
 */
#ifndef LUAPROF_REPORT_LUA_BC_H
#define LUAPROF_REPORT_LUA_BC_H

#include <stddef.h>
#include <stdint.h>

/*
 * The bytecodes, written once in LuaJIT's order (BCDEF in lj_bc.h):
 * _(NAME, how operand A is used, the metamethod it may call or NULL).
 * The opcode is the position in the list.  A is DST when the instruction
 * writes slot A, BASE when it uses the slots from A on (a call's
 * arguments, a loop's control variables), OTHER otherwise.
 */
#define LUA_BCDEF(_) \
	_(ISLT, OTHER, "__lt") \
	_(ISGE, OTHER, "__lt") \
	_(ISLE, OTHER, "__le") \
	_(ISGT, OTHER, "__le") \
	_(ISEQV, OTHER, "__eq") \
	_(ISNEV, OTHER, "__eq") \
	_(ISEQS, OTHER, "__eq") \
	_(ISNES, OTHER, "__eq") \
	_(ISEQN, OTHER, "__eq") \
	_(ISNEN, OTHER, "__eq") \
	_(ISEQP, OTHER, "__eq") \
	_(ISNEP, OTHER, "__eq") \
	_(ISTC, DST, NULL) \
	_(ISFC, DST, NULL) \
	_(IST, OTHER, NULL) \
	_(ISF, OTHER, NULL) \
	_(ISTYPE, OTHER, NULL) \
	_(ISNUM, OTHER, NULL) \
	_(MOV, DST, NULL) \
	_(NOT, DST, NULL) \
	_(UNM, DST, "__unm") \
	_(LEN, DST, "__len") \
	_(ADDVN, DST, "__add") \
	_(SUBVN, DST, "__sub") \
	_(MULVN, DST, "__mul") \
	_(DIVVN, DST, "__div") \
	_(MODVN, DST, "__mod") \
	_(ADDNV, DST, "__add") \
	_(SUBNV, DST, "__sub") \
	_(MULNV, DST, "__mul") \
	_(DIVNV, DST, "__div") \
	_(MODNV, DST, "__mod") \
	_(ADDVV, DST, "__add") \
	_(SUBVV, DST, "__sub") \
	_(MULVV, DST, "__mul") \
	_(DIVVV, DST, "__div") \
	_(MODVV, DST, "__mod") \
	_(POW, DST, "__pow") \
	_(CAT, DST, "__concat") \
	_(KSTR, DST, NULL) \
	_(KCDATA, DST, NULL) \
	_(KSHORT, DST, NULL) \
	_(KNUM, DST, NULL) \
	_(KPRI, DST, NULL) \
	_(KNIL, BASE, NULL) \
	_(UGET, DST, NULL) \
	_(USETV, OTHER, NULL) \
	_(USETS, OTHER, NULL) \
	_(USETN, OTHER, NULL) \
	_(USETP, OTHER, NULL) \
	_(UCLO, OTHER, NULL) \
	_(FNEW, DST, "__gc") \
	_(TNEW, DST, "__gc") \
	_(TDUP, DST, "__gc") \
	_(GGET, DST, "__index") \
	_(GSET, OTHER, "__newindex") \
	_(TGETV, DST, "__index") \
	_(TGETS, DST, "__index") \
	_(TGETB, DST, "__index") \
	_(TGETR, DST, "__index") \
	_(TSETV, OTHER, "__newindex") \
	_(TSETS, OTHER, "__newindex") \
	_(TSETB, OTHER, "__newindex") \
	_(TSETM, BASE, "__newindex") \
	_(TSETR, OTHER, "__newindex") \
	_(CALLM, BASE, "__call") \
	_(CALL, BASE, "__call") \
	_(CALLMT, BASE, "__call") \
	_(CALLT, BASE, "__call") \
	_(ITERC, BASE, "__call") \
	_(ITERN, BASE, "__call") \
	_(VARG, BASE, NULL) \
	_(ISNEXT, BASE, NULL) \
	_(RETM, BASE, NULL) \
	_(RET, OTHER, NULL) \
	_(RET0, OTHER, NULL) \
	_(RET1, OTHER, NULL) \
	_(FORI, BASE, NULL) \
	_(JFORI, BASE, NULL) \
	_(FORL, BASE, NULL) \
	_(IFORL, BASE, NULL) \
	_(JFORL, BASE, NULL) \
	_(ITERL, BASE, NULL) \
	_(IITERL, BASE, NULL) \
	_(JITERL, BASE, NULL) \
	_(LOOP, OTHER, NULL) \
	_(ILOOP, OTHER, NULL) \
	_(JLOOP, OTHER, NULL) \
	_(JMP, OTHER, NULL) \
	_(FUNCF, OTHER, NULL) \
	_(IFUNCF, OTHER, NULL) \
	_(JFUNCF, OTHER, NULL) \
	_(FUNCV, OTHER, NULL) \
	_(IFUNCV, OTHER, NULL) \
	_(JFUNCV, OTHER, NULL) \
	_(FUNCC, OTHER, NULL) \
	_(FUNCCW, OTHER, NULL)

enum lua_bc_op {
#define LBC_ENUM(name, amode, mm) LBC_##name,
	LUA_BCDEF(LBC_ENUM)
#undef LBC_ENUM
	LBC__MAX
};

/* LuaJIT 2.1's numbers (lj_bc.h): a line lost or moved in the list
 * would shift every opcode after it. */
_Static_assert(LBC_CALL == 0x42 && LBC_FUNCF == 0x59 && LBC__MAX == 97,
	       "LUA_BCDEF is out of LuaJIT 2.1's order");

enum lua_bc_amode { LBC_A_OTHER, LBC_A_DST, LBC_A_BASE };

struct lua_bc_info {
	const char *name;
	enum lua_bc_amode amode;
	const char *mm; /* "__index", "__call"...; NULL: calls no metamethod */
};

static const struct lua_bc_info lua_bc_info[LBC__MAX] = {
#define LBC_INFO(name, amode, mm) [LBC_##name] = { #name, LBC_A_##amode, mm },
	LUA_BCDEF(LBC_INFO)
#undef LBC_INFO
};

#define LBC_OP(ins) ((ins) & 0xff)
#define LBC_A(ins) (((ins) >> 8) & 0xff)
#define LBC_C(ins) (((ins) >> 16) & 0xff)
#define LBC_B(ins) ((ins) >> 24)
#define LBC_D(ins) ((ins) >> 16)
/* And the other way, an instruction from its fields (LuaJIT's BCINS_AD,
 * BCINS_ABC): for the tests and the synthetic traces that make protos. */
#define LBC_AD(op, a, d) ((uint32_t)(op) | (uint32_t)(a) << 8 | (uint32_t)(d) << 16)
#define LBC_ABC(op, a, b, c) \
	((uint32_t)(op) | (uint32_t)(a) << 8 | (uint32_t)(c) << 16 | (uint32_t)(b) << 24)

#endif

/*
 * luajit_mcmatch_x86.c - what a trace's x86_64 code says to the matcher
 * (luajit_mcmatch.c): LuaJIT's register ids of the registers an
 * instruction reads and writes, a branch out of the trace (jcc or jmp to
 * an exit stub or a side trace), a compare, a call, a store, and whether
 * its mnemonic is an IR operation's (lj_asm_x86.h emits them).
 */
#include <capstone/capstone.h>
#include <string.h>

#include "record/luajit_place_priv.h"

#define starts lj_mc_starts

static int rid_of(unsigned reg)
{
	static const unsigned gpr[16][4] = {
		{ X86_REG_AL, X86_REG_AX, X86_REG_EAX, X86_REG_RAX },
		{ X86_REG_CL, X86_REG_CX, X86_REG_ECX, X86_REG_RCX },
		{ X86_REG_DL, X86_REG_DX, X86_REG_EDX, X86_REG_RDX },
		{ X86_REG_BL, X86_REG_BX, X86_REG_EBX, X86_REG_RBX },
		{ X86_REG_SPL, X86_REG_SP, X86_REG_ESP, X86_REG_RSP },
		{ X86_REG_BPL, X86_REG_BP, X86_REG_EBP, X86_REG_RBP },
		{ X86_REG_SIL, X86_REG_SI, X86_REG_ESI, X86_REG_RSI },
		{ X86_REG_DIL, X86_REG_DI, X86_REG_EDI, X86_REG_RDI },
		{ X86_REG_R8B, X86_REG_R8W, X86_REG_R8D, X86_REG_R8 },
		{ X86_REG_R9B, X86_REG_R9W, X86_REG_R9D, X86_REG_R9 },
		{ X86_REG_R10B, X86_REG_R10W, X86_REG_R10D, X86_REG_R10 },
		{ X86_REG_R11B, X86_REG_R11W, X86_REG_R11D, X86_REG_R11 },
		{ X86_REG_R12B, X86_REG_R12W, X86_REG_R12D, X86_REG_R12 },
		{ X86_REG_R13B, X86_REG_R13W, X86_REG_R13D, X86_REG_R13 },
		{ X86_REG_R14B, X86_REG_R14W, X86_REG_R14D, X86_REG_R14 },
		{ X86_REG_R15B, X86_REG_R15W, X86_REG_R15D, X86_REG_R15 },
	};

	if (reg >= X86_REG_XMM0 && reg <= X86_REG_XMM15)
		return 16 + (int)(reg - X86_REG_XMM0);
	for (int i = 0; i < 16; i++)
		for (int w = 0; w < 4; w++)
			if (gpr[i][w] == reg)
				return i;
	return -1;
}

/* The operation of machine instruction m is the one IR op o does. */
static int same_op(const struct lj_mc *m, uint8_t o)
{
	const char *s = m->mn;

	switch (o) {
	case LJ_IR_ADD: case LJ_IR_ADDOV:
		return starts(s, "add") || starts(s, "lea") || starts(s, "inc");
	case LJ_IR_SUB: case LJ_IR_SUBOV:
		return starts(s, "sub") || starts(s, "dec");
	case LJ_IR_MUL: case LJ_IR_MULOV:
		return starts(s, "mul") || starts(s, "imul");
	case LJ_IR_DIV:
		return starts(s, "div") || starts(s, "idiv");
	case LJ_IR_NEG:
		return starts(s, "xorp") || starts(s, "neg");
	case LJ_IR_ABS:
		return starts(s, "andp");
	case LJ_IR_MIN:
		return starts(s, "min");
	case LJ_IR_MAX:
		return starts(s, "max");
	case LJ_IR_FPMATH:
		return starts(s, "round") || starts(s, "sqrt");
	case LJ_IR_BAND:
		return starts(s, "and");
	case LJ_IR_BOR:
		return starts(s, "or");
	case LJ_IR_BXOR:
		return starts(s, "xor");
	case LJ_IR_BNOT:
		return starts(s, "not");
	case LJ_IR_BSHL: case LJ_IR_BSHR: case LJ_IR_BSAR: case LJ_IR_BROL: case LJ_IR_BROR:
		return starts(s, "sh") || starts(s, "sa") || starts(s, "ro");
	case LJ_IR_BSWAP:
		return starts(s, "bswap") || starts(s, "movbe");
	case LJ_IR_CONV: case LJ_IR_TOBIT:
		return starts(s, "cvt") || starts(s, "movs") || starts(s, "movz") ||
		       starts(s, "movd") || starts(s, "movq");
	}
	switch (lj_ir_class[o]) {
	case LJ_IRC_LOAD: case LJ_IRC_REF:
		return starts(s, "mov") || starts(s, "lea") || starts(s, "cvt") ||
		       starts(s, "rorx") || starts(s, "shr") || starts(s, "and");
	}
	return 0;
}

static void classify(const cs_insn *in, const struct lj_trace_view *tv, struct lj_mc *m)
{
	const cs_x86 *d = &in->detail->x86;

	for (int i = 0; i < in->detail->groups_count; i++) {
		uint8_t g = in->detail->groups[i];

		if (g == X86_GRP_JUMP && d->op_count == 1 && d->operands[0].type == X86_OP_IMM) {
			uint64_t t = (uint64_t)d->operands[0].imm;

			m->exit = t < tv->mcode || t >= tv->mcode + tv->szmcode;
		}
		if (g == X86_GRP_CALL)
			m->call = 1;
	}
	for (int i = 0; i < d->op_count; i++)
		if (d->operands[i].type == X86_OP_MEM && (d->operands[i].access & CS_AC_WRITE))
			m->store = 1;
	m->cmp = starts(m->mn, "cmp") || starts(m->mn, "test") || starts(m->mn, "ucomis") ||
		 starts(m->mn, "comis") || starts(m->mn, "bt");
}

const struct lj_mc_isa lj_mc_x86_64 = {
	.arch = CS_ARCH_X86,
	.mode = CS_MODE_64,
	.rid_of = rid_of,
	.classify = classify,
	.same_op = same_op,
};

/*
 * luajit_mcmatch_arm64.c - what a trace's AArch64 code says to the
 * matcher (luajit_mcmatch.c): LuaJIT's register ids (lj_target_arm64.h:
 * x0-x30 and sp 0-31, d0-d31 32-63) an instruction reads and writes, a
 * branch out of the trace (b, b.cond, cbz/cbnz, tbz/tbnz to an exit stub,
 * which lj_asm_arm64.h puts above the trace's code, or to a side trace),
 * a compare, a call (bl, blr), a store, and whether its mnemonic is an IR
 * operation's.  Capstone 4 says a compare (an alias of subs into xzr)
 * writes its first operand: compares write nothing here.
 */
#include <capstone/capstone.h>
#include <string.h>

#include "record/luajit_place_priv.h"

#define starts lj_mc_starts

static int rid_of(unsigned reg)
{
	static const struct { uint16_t first, last; } fp[] = {
		{ ARM64_REG_B0, ARM64_REG_B31 }, { ARM64_REG_H0, ARM64_REG_H31 },
		{ ARM64_REG_S0, ARM64_REG_S31 }, { ARM64_REG_D0, ARM64_REG_D31 },
		{ ARM64_REG_Q0, ARM64_REG_Q31 }, { ARM64_REG_V0, ARM64_REG_V31 },
	};

	if (reg >= ARM64_REG_X0 && reg <= ARM64_REG_X28)
		return (int)(reg - ARM64_REG_X0);
	if (reg >= ARM64_REG_W0 && reg <= ARM64_REG_W30)
		return (int)(reg - ARM64_REG_W0);
	switch (reg) {
	case ARM64_REG_X29: return 29;
	case ARM64_REG_X30: return 30;
	case ARM64_REG_SP: case ARM64_REG_WSP: return 31;
	}
	for (size_t i = 0; i < sizeof(fp) / sizeof(fp[0]); i++)
		if (reg >= fp[i].first && reg <= fp[i].last)
			return 32 + (int)(reg - fp[i].first);
	return -1;
}

static int any(const char *s, const char *const *p)
{
	for (; *p; p++)
		if (starts(s, *p))
			return 1;
	return 0;
}

/* The operation of machine instruction m is the one IR op o does. */
static int same_op(const struct lj_mc *m, uint8_t o)
{
#define IS(...) any(m->mn, (const char *const[]){ __VA_ARGS__, NULL })
	switch (o) {
	case LJ_IR_ADD: case LJ_IR_ADDOV:
		return IS("add", "fadd");
	case LJ_IR_SUB: case LJ_IR_SUBOV:
		return IS("sub", "fsub", "neg");
	case LJ_IR_MUL: case LJ_IR_MULOV:
		return IS("mul", "madd", "smull", "smulh", "fmul");
	case LJ_IR_DIV:
		return IS("sdiv", "udiv", "fdiv");
	case LJ_IR_NEG:
		return IS("neg", "fneg");
	case LJ_IR_ABS:
		return IS("fabs");
	case LJ_IR_MIN: case LJ_IR_MAX:
		return IS("fmin", "fmax", "csel");
	case LJ_IR_FPMATH:
		return IS("frint", "fsqrt");
	case LJ_IR_BAND:
		return IS("and", "bic");
	case LJ_IR_BOR:
		return IS("orr");
	case LJ_IR_BXOR:
		return IS("eor");
	case LJ_IR_BNOT:
		return IS("mvn");
	case LJ_IR_BSHL: case LJ_IR_BSHR: case LJ_IR_BSAR: case LJ_IR_BROL: case LJ_IR_BROR:
		return IS("lsl", "lsr", "asr", "ror", "ubfx", "sbfx", "ubfiz");
	case LJ_IR_BSWAP:
		return IS("rev");
	case LJ_IR_CONV: case LJ_IR_TOBIT:
		return IS("fcvt", "scvtf", "ucvtf", "sxt", "uxt", "fmov", "mov");
	}
	switch (lj_ir_class[o]) {
	case LJ_IRC_LOAD: case LJ_IRC_REF:
		return IS("ldr", "ldur", "ldp", "add", "adr", "mov", "and", "ubfx");
	}
	return 0;
#undef IS
}

static void classify(const cs_insn *in, const struct lj_trace_view *tv, struct lj_mc *m)
{
	const cs_arm64 *d = &in->detail->arm64;

	m->cmp = any(m->mn, (const char *const[]){ "cmp", "cmn", "tst", "fcmp", "ccmp",
						   NULL });
	if (m->cmp)
		m->wr = 0;
	for (int i = 0; i < in->detail->groups_count; i++) {
		uint8_t g = in->detail->groups[i];

		if (g == ARM64_GRP_JUMP && d->op_count &&
		    d->operands[d->op_count - 1].type == ARM64_OP_IMM) {
			uint64_t t = (uint64_t)d->operands[d->op_count - 1].imm;

			m->exit = t < tv->mcode || t >= tv->mcode + tv->szmcode;
		}
		if (g == ARM64_GRP_CALL)
			m->call = 1;
	}
	m->call |= starts(m->mn, "bl") && !starts(m->mn, "b.");
	m->store = starts(m->mn, "st");
}

const struct lj_mc_isa lj_mc_arm64 = {
	.arch = CS_ARCH_ARM64,
	.mode = CS_MODE_ARM,
	.rid_of = rid_of,
	.classify = classify,
	.same_op = same_op,
};

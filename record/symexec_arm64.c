/*
 * symexec_arm64.c - the AArch64 backend of symexec.h: capstone (its ARM64
 * mode) decodes an instruction, this file says what it does to the 31
 * general registers, the stack pointer and memory, in values.  Modelled:
 * the moves (mov, movz, movn, movk, adr, adrp), add and sub with their
 * shifted and extended operands, the logical operations and shifts by a
 * constant, the extensions, mul by a constant, the loads and stores of
 * one register or a pair with their pre- and post-indexed writeback,
 * cmp, cmn, tst and ccmp, branches, calls and ret.  Any other instruction
 * makes the general registers it writes unknown.  The ABI is AAPCS64's:
 * arguments in x0 to x7, a callee may clobber x0 to x18 and x30, and a
 * call pushes nothing (the return address goes to x30).
 *
 * Capstone 4 names aliases (cmp, tst, lsl, mov) as instructions of their
 * own, says "write" of cmp's first operand and gives a post-index as an
 * immediate operand after the memory one: each is handled by its name,
 * never by the access flags alone.  Instructions are decoded once each
 * into struct ai, kept by address, as symexec_x86.c does.
 */
#include <capstone/capstone.h>
#include <elf.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "record/symexec.h"
#include "record/symexec_decoder.h"

/* Register numbers: x0..x30 are 0..30, sp 31. */
enum { X0 = 0, X7 = 7, X18 = 18, X30 = 30, SP = 31 };

#define NOREG (-1) /* no register */
#define ZR (-2)    /* xzr/wzr: reads 0, writes are lost */
#define OTHER (-3) /* a floating-point, vector or system register */

/* One operand, decoded. */
struct aop {
	uint8_t type;    /* ARM64_OP_REG, ARM64_OP_IMM, ARM64_OP_MEM; else 0 */
	uint8_t access;  /* CS_AC_READ | CS_AC_WRITE, as capstone says */
	int8_t reg;      /* REG: 0..31, ZR or OTHER */
	uint8_t width;   /* REG: bytes of the register named */
	uint8_t shift, amount; /* REG, IMM, MEM's index: ARM64_SFT_* and by how much */
	uint8_t ext;     /* REG, MEM's index: ARM64_EXT_* */
	int8_t base, index; /* MEM: registers, NOREG */
	int64_t v;       /* IMM: the value; MEM: the displacement */
};

/* One instruction, decoded. */
struct ai {
	uint64_t pc;     /* 0: an empty cache slot */
	uint16_t id;     /* capstone's ARM64_INS_* */
	uint8_t nops, cc, wb;
	uint32_t writes; /* general registers written (bit 31: sp) */
	struct aop op[5];
};

/* The general register a capstone register is, and its width in bytes;
 * ZR, or OTHER with the width of a floating-point or vector one. */
static int gpr(unsigned r, uint8_t *width)
{
	static const struct { uint16_t first, last; uint8_t width; } fp[] = {
		{ ARM64_REG_B0, ARM64_REG_B31, 1 }, { ARM64_REG_H0, ARM64_REG_H31, 2 },
		{ ARM64_REG_S0, ARM64_REG_S31, 4 }, { ARM64_REG_D0, ARM64_REG_D31, 8 },
		{ ARM64_REG_Q0, ARM64_REG_Q31, 16 }, { ARM64_REG_V0, ARM64_REG_V31, 16 },
	};

	*width = 8;
	if (r >= ARM64_REG_X0 && r <= ARM64_REG_X28)
		return (int)(r - ARM64_REG_X0);
	if (r >= ARM64_REG_W0 && r <= ARM64_REG_W30) {
		*width = 4;
		return (int)(r - ARM64_REG_W0);
	}
	switch (r) {
	case ARM64_REG_X29: return 29;
	case ARM64_REG_X30: return 30;
	case ARM64_REG_SP: return SP;
	case ARM64_REG_WSP: *width = 4; return SP;
	case ARM64_REG_XZR: return ZR;
	case ARM64_REG_WZR: *width = 4; return ZR;
	}
	*width = 0;
	for (size_t i = 0; i < sizeof(fp) / sizeof(fp[0]); i++)
		if (r >= fp[i].first && r <= fp[i].last)
			*width = fp[i].width;
	return OTHER;
}

/* The backend's handle: a decoder whose cache holds struct ai. */
static void *arm64_open(void)
{
	return sx_decoder_new(CS_ARCH_ARM64, CS_MODE_ARM, sizeof(struct ai));
}

static void decode_op(struct aop *o, const cs_arm64_op *op)
{
	uint8_t w;

	o->type = (uint8_t)op->type;
	o->access = op->access;
	o->shift = (uint8_t)op->shift.type;
	o->amount = (uint8_t)(op->shift.value < 64 ? op->shift.value : 64);
	o->ext = (uint8_t)op->ext;
	if (op->type == ARM64_OP_REG) {
		o->reg = (int8_t)gpr(op->reg, &o->width);
	} else if (op->type == ARM64_OP_IMM) {
		o->v = op->imm;
	} else if (op->type == ARM64_OP_MEM) {
		o->v = op->mem.disp;
		o->base = op->mem.base ? (int8_t)gpr(op->mem.base, &w) : NOREG;
		o->index = op->mem.index ? (int8_t)gpr(op->mem.index, &w) : NOREG;
	} else {
		o->type = 0;
	}
}

/* Fills x from capstone's decoding of the instruction at pc. */
static int decode(struct sx_ctx *c, struct sx_decoder *h, uint64_t pc, struct ai *x)
{
	const uint8_t *code;
	size_t left;
	uint64_t addr = pc;
	cs_insn *in = h->insn;
	cs_regs rd, wr;
	uint8_t nrd = 0, nwr = 0, w;

	code = sx_code_at(c, pc, &left);
	if (!code || left < 4 || !cs_disasm_iter(h->cs, &code, &left, &addr, in))
		return -EINVAL;
	memset(x, 0, sizeof(*x));
	x->pc = pc;
	x->id = (uint16_t)in->id;
	x->cc = (uint8_t)in->detail->arm64.cc;
	x->wb = in->detail->arm64.writeback;
	x->nops = in->detail->arm64.op_count > 5 ? 5 : in->detail->arm64.op_count;
	for (int i = 0; i < x->nops; i++)
		decode_op(&x->op[i], &in->detail->arm64.operands[i]);
	if (cs_regs_access(h->cs, in, rd, &nrd, wr, &nwr) == CS_ERR_OK) {
		for (int i = 0; i < nwr; i++) {
			int r = gpr(wr[i], &w);

			if (r >= 0)
				x->writes |= 1u << r;
		}
	}
	return 0;
}

/* The decoded instruction at pc, from the cache or decoded now. */
static int decode_slot(struct sx_ctx *c, void *h, uint64_t pc, void *slot)
{
	return decode(c, h, pc, slot);
}

static const struct ai *fetch(struct sx_ctx *c, struct sx_decoder *h, uint64_t pc)
{
	return sx_decoder_fetch(h, c, pc, decode_slot, h);
}

/* ---- values of operands ---- */

static struct sx_val narrow_const(int64_t v, unsigned bytes, int sign)
{
	unsigned bits = 8 * bytes;
	uint64_t m = bits >= 64 ? ~0ull : (1ull << bits) - 1, u = (uint64_t)v & m;

	if (sign && bits < 64 && (u >> (bits - 1)))
		u |= ~m;
	return sx_const((int64_t)u);
}

/* A register's value as read by an operand of `width` bytes. */
static struct sx_val reg_val(const struct sx_state *s, int reg, unsigned width)
{
	struct sx_val v;

	if (reg == ZR)
		return sx_const(0);
	if (reg < 0)
		return sx_unknown();
	v = s->reg[reg];
	if (width == 4 && sx_is_const(&v, NULL))
		return narrow_const(v.off, 4, 0);
	return v;
}

/* An extension (uxtb ... sxtx) of v: 32-bit ones keep a term (as a
 * 32-bit move does: LuaJIT's references), narrower ones keep a load no
 * wider than they are, whole. */
static struct sx_val extend(struct sx_ctx *c, struct sx_val v, unsigned ext)
{
	static const uint8_t bytes[] = {
		[ARM64_EXT_UXTB] = 1, [ARM64_EXT_UXTH] = 2, [ARM64_EXT_UXTW] = 4,
		[ARM64_EXT_UXTX] = 8, [ARM64_EXT_SXTB] = 1, [ARM64_EXT_SXTH] = 2,
		[ARM64_EXT_SXTW] = 4, [ARM64_EXT_SXTX] = 8,
	};
	const struct sx_node *n;
	unsigned b;

	if (!ext || ext > ARM64_EXT_SXTX)
		return v;
	b = bytes[ext];
	if (sx_is_const(&v, NULL))
		return narrow_const(v.off, b, ext >= ARM64_EXT_SXTB);
	if (b >= 4)
		return v;
	n = sx_load_of(c, &v);
	return n && n->width <= b ? v : sx_unknown();
}

/* A mask that keeps a pointer's low bits: LuaJIT's GC64 references and
 * lightuserdata are masked with 0x7fffffffffff (47 bits). */
static int pointer_mask(int64_t k)
{
	uint64_t m = (uint64_t)k;

	return m >= 0xffffffffull && !(m & (m + 1));
}

/* v shifted as a shifter says: lsl is a scale; lsr and asr of a value
 * scaled up by as much give it back (LuaJIT's GC64 untagging). */
static struct sx_val shift(const struct sx_val *v, unsigned type, unsigned k)
{
	if (!k || type == ARM64_SFT_INVALID)
		return *v;
	if (k >= 64)
		return sx_unknown();
	switch (type) {
	case ARM64_SFT_LSL:
		return sx_mul(v, (int64_t)(1ull << k));
	case ARM64_SFT_LSR:
	case ARM64_SFT_ASR:
		if (sx_is_const(v, NULL))
			return sx_const(type == ARM64_SFT_LSR ? (int64_t)((uint64_t)v->off >> k) :
								v->off >> k);
		if (!v->term && v->idx && !v->off && v->scale == (int64_t)(1ull << k))
			return sx_term(v->idx, 0);
		break;
	}
	return sx_unknown();
}

/* The second operand of an arithmetic or logical instruction: an
 * immediate (shifted) or a register (extended, then shifted).  With
 * `any`, an unknown register that is scaled or extended is ANY: an index
 * into a table whose base is known ("add x9, x22, w16, uxtb #3"). */
static struct sx_val source(struct sx_ctx *c, const struct sx_state *s, const struct aop *o,
			    int any)
{
	struct sx_val v;

	if (o->type == ARM64_OP_IMM)
		return shift(&(struct sx_val){ .off = o->v, .known = 1 }, o->shift, o->amount);
	if (o->type != ARM64_OP_REG)
		return sx_unknown();
	v = extend(c, reg_val(s, o->reg, o->width), o->ext);
	if (!v.known && any && o->reg >= 0 && (o->ext || (o->shift == ARM64_SFT_LSL && o->amount)))
		v = sx_term(sx_any(c), 0);
	return shift(&v, o->shift, o->amount);
}

/* The address a memory operand names, before any post-index. */
static struct sx_val mem_addr(struct sx_ctx *c, const struct sx_state *s, const struct aop *o)
{
	struct sx_val a = sx_const(o->v), b;

	if (o->base == OTHER || o->index == OTHER || o->base == ZR)
		return sx_unknown();
	if (o->base != NOREG)
		a = sx_add(&a, &s->reg[o->base]);
	if (o->index != NOREG) {
		b = extend(c, reg_val(s, o->index, 8), o->ext);
		if (!b.known)
			b = sx_term(sx_any(c), 0);
		b = shift(&b, o->shift == ARM64_SFT_INVALID ? ARM64_SFT_LSL : o->shift, o->amount);
		a = sx_add(&a, &b);
	}
	return a;
}

/* Writes v to a register operand: a 32-bit write zero-extends (a term
 * stays itself, as on x86-64). */
static void set_reg(struct sx_state *s, const struct aop *o, const struct sx_val *v)
{
	if (o->type != ARM64_OP_REG || o->reg < 0)
		return;
	if (o->width == 4 && sx_is_const(v, NULL))
		s->reg[o->reg] = narrow_const(v->off, 4, 0);
	else
		s->reg[o->reg] = *v;
}

/* ---- instructions ---- */

/* What an instruction not modelled does: the general registers it writes
 * become unknown, and memory it writes gets an unknown value. */
static void clobber(struct sx_ctx *c, struct sx_state *s, const struct ai *x)
{
	struct sx_val u = sx_unknown(), a;

	for (int r = 0; r <= SP; r++)
		if (x->writes >> r & 1)
			s->reg[r] = u;
	if (x->nops && x->op[0].type == ARM64_OP_REG && x->op[0].reg >= 0)
		s->reg[x->op[0].reg] = u;
	for (int i = 0; i < x->nops; i++) {
		if (x->op[i].type == ARM64_OP_MEM && (x->op[i].access & CS_AC_WRITE)) {
			a = mem_addr(c, s, &x->op[i]);
			sx_do_store(c, s, x->pc, &a, 8, &u);
		}
	}
}

/* Loads and stores: which they are, and the bytes each register moves
 * (0: the register's own width). */
enum { LS_LOAD = 1, LS_STORE, LS_STORE_EX /* op 0 is the status */ };

static int load_store(unsigned id, unsigned *width)
{
	*width = 0;
	switch (id) {
	case ARM64_INS_LDRB: case ARM64_INS_LDURB: case ARM64_INS_LDRSB:
	case ARM64_INS_LDURSB: case ARM64_INS_LDARB: case ARM64_INS_LDXRB:
	case ARM64_INS_LDAXRB: case ARM64_INS_LDTRB:
		*width = 1;
		return LS_LOAD;
	case ARM64_INS_LDRH: case ARM64_INS_LDURH: case ARM64_INS_LDRSH:
	case ARM64_INS_LDURSH: case ARM64_INS_LDARH: case ARM64_INS_LDXRH:
	case ARM64_INS_LDAXRH:
		*width = 2;
		return LS_LOAD;
	case ARM64_INS_LDRSW: case ARM64_INS_LDURSW: case ARM64_INS_LDPSW:
		*width = 4;
		return LS_LOAD;
	case ARM64_INS_LDR: case ARM64_INS_LDUR: case ARM64_INS_LDAR: case ARM64_INS_LDXR:
	case ARM64_INS_LDAXR: case ARM64_INS_LDP: case ARM64_INS_LDNP: case ARM64_INS_LDXP:
	case ARM64_INS_LDAXP: case ARM64_INS_LDTR:
		return LS_LOAD;
	case ARM64_INS_STRB: case ARM64_INS_STURB: case ARM64_INS_STLRB:
		*width = 1;
		return LS_STORE;
	case ARM64_INS_STRH: case ARM64_INS_STURH: case ARM64_INS_STLRH:
		*width = 2;
		return LS_STORE;
	case ARM64_INS_STR: case ARM64_INS_STUR: case ARM64_INS_STLR: case ARM64_INS_STP:
	case ARM64_INS_STNP: case ARM64_INS_STTR:
		return LS_STORE;
	case ARM64_INS_STXRB: case ARM64_INS_STLXRB:
		*width = 1;
		return LS_STORE_EX;
	case ARM64_INS_STXRH: case ARM64_INS_STLXRH:
		*width = 2;
		return LS_STORE_EX;
	case ARM64_INS_STXR: case ARM64_INS_STLXR: case ARM64_INS_STXP: case ARM64_INS_STLXP:
		return LS_STORE_EX;
	}
	return 0;
}

/*
 * A load or store of the registers before its memory operand, at
 * consecutive addresses, then the writeback: a pre-index ("[x1, #-16]!")
 * moves the base to the address, a post-index ("[x1], #8", capstone's
 * immediate after the memory operand) by the immediate after the access.
 */
static void transfer(struct sx_ctx *c, struct sx_state *s, const struct ai *x, int kind,
		     unsigned width)
{
	int m = 0, first = kind == LS_STORE_EX, post;
	const struct aop *mo;
	struct sx_val a, v;

	while (m < x->nops && x->op[m].type != ARM64_OP_MEM)
		m++;
	if (m == x->nops) {
		/* a literal load ("ldr x0, #label"): from a constant address */
		if (kind == LS_LOAD && x->nops == 2 && x->op[1].type == ARM64_OP_IMM) {
			a = sx_const(x->op[1].v);
			v = sx_do_load(c, s, x->pc, &a, (uint8_t)(width ? width : x->op[0].width));
			set_reg(s, &x->op[0], &v);
		} else {
			clobber(c, s, x);
		}
		return;
	}
	mo = &x->op[m];
	a = mem_addr(c, s, mo);
	post = x->wb && m + 1 < x->nops && x->op[m + 1].type == ARM64_OP_IMM;
	if (first)
		set_reg(s, &x->op[0], &(struct sx_val){ 0 });
	for (int i = first; i < m; i++) {
		const struct aop *r = &x->op[i];
		unsigned w = width ? width : r->width;
		struct sx_val at = sx_add(&a, &(struct sx_val){ .off = (int64_t)((unsigned)(i - first) * w),
								 .known = 1 });

		if (!w || w > 16)
			continue;
		if (kind == LS_LOAD) {
			v = sx_do_load(c, s, x->pc, &at, (uint8_t)w);
			set_reg(s, r, &v);
		} else {
			v = r->type == ARM64_OP_REG ? reg_val(s, r->reg, r->width) : sx_unknown();
			sx_do_store(c, s, x->pc, &at, (uint8_t)w, &v);
		}
	}
	if (post && mo->base >= 0)
		s->reg[mo->base] = sx_add(&s->reg[mo->base],
					  &(struct sx_val){ .off = x->op[m + 1].v, .known = 1 });
	else if (x->wb && mo->base >= 0)
		s->reg[mo->base] = a;
}

/* mov, movz, movn, movk, adr, adrp: 1 when x was one of them. */
static int move(struct sx_ctx *c, struct sx_state *s, const struct ai *x)
{
	const struct aop *d = &x->op[0], *o = &x->op[1];
	struct sx_val v, old;
	int64_t k, m;

	if (x->nops < 2 || d->type != ARM64_OP_REG)
		return 0;
	switch (x->id) {
	case ARM64_INS_MOV:
		v = source(c, s, o, 0);
		break;
	case ARM64_INS_ADR:
	case ARM64_INS_ADRP:
		v = sx_const(o->v);
		break;
	case ARM64_INS_MOVZ:
	case ARM64_INS_MOVN:
		if (o->type != ARM64_OP_IMM || o->amount >= 64)
			return 0;
		k = (int64_t)((uint64_t)o->v << o->amount);
		v = sx_const(x->id == ARM64_INS_MOVN ? ~k : k);
		break;
	case ARM64_INS_MOVK:
		old = reg_val(s, d->reg, d->width);
		if (o->type != ARM64_OP_IMM || o->amount >= 64 || !sx_is_const(&old, NULL)) {
			v = sx_unknown();
			break;
		}
		m = (int64_t)(0xffffull << o->amount);
		v = sx_const((old.off & ~m) | (int64_t)(((uint64_t)o->v << o->amount) & (uint64_t)m));
		break;
	default:
		return 0;
	}
	set_reg(s, d, &v);
	return 1;
}

/* add, sub, neg, mul, madd: 1 when x was one of them.  A subtraction of
 * two values that are not a constant apart is a fact (lua_gettop's
 * L->top - L->base). */
static int arith(struct sx_ctx *c, struct sx_state *s, const struct ai *x)
{
	const struct aop *d = &x->op[0];
	struct sx_val a, b, r = sx_unknown();
	int64_t k;

	switch (x->id) {
	case ARM64_INS_ADD:
	case ARM64_INS_SUB:
		if (x->nops != 3)
			return 0;
		a = source(c, s, &x->op[1], 0);
		b = source(c, s, &x->op[2], x->id == ARM64_INS_ADD);
		if (x->id == ARM64_INS_ADD) {
			r = sx_add(&a, &b);
		} else if (sx_is_const(&b, NULL)) {
			b = sx_neg(&b);
			r = sx_add(&a, &b);
		} else {
			sx_fact_add(c, s, SXF_SUB, x->pc, d->width, &a, &b);
		}
		break;
	case ARM64_INS_NEG:
		if (x->nops != 2)
			return 0;
		a = source(c, s, &x->op[1], 0);
		r = sx_neg(&a);
		break;
	case ARM64_INS_MUL:
	case ARM64_INS_MADD:
		if (x->nops < 3)
			return 0;
		a = source(c, s, &x->op[1], 0);
		b = source(c, s, &x->op[2], 0);
		if (sx_is_const(&a, &k))
			r = sx_mul(&b, k);
		else if (sx_is_const(&b, &k))
			r = sx_mul(&a, k);
		if (x->id == ARM64_INS_MADD) {
			b = x->nops == 4 ? source(c, s, &x->op[3], 0) : sx_unknown();
			r = sx_add(&r, &b);
		}
		break;
	default:
		return 0;
	}
	set_reg(s, d, &r);
	return 1;
}

/* The bytes two compared values have: registers are 4 or 8 bytes wide,
 * but values loaded narrower (a halfword each, as "ldrh w1; ldrh w2;
 * cmp w1, w2" compares two uint16_t) are compared at their width, as
 * x86-64 compares them in memory. */
static uint8_t operand_bytes(struct sx_ctx *c, const struct sx_val *a, const struct sx_val *b,
			     uint8_t reg_width)
{
	const struct sx_node *la = sx_load_of(c, a), *lb = sx_load_of(c, b);
	uint8_t wa, wb;

	if (!la && !sx_is_const(a, NULL))
		return reg_width;
	if (!lb && !sx_is_const(b, NULL))
		return reg_width;
	wa = la ? la->width : 0;
	wb = lb ? lb->width : 0;
	wa = wa > wb ? wa : wb;
	return wa && wa < reg_width ? wa : reg_width;
}

/* cmp, cmn, tst, ccmp, ccmn: a comparison fact; cmp with a constant is
 * the bound of a switch that may follow.  1 when x was one of them. */
static int compare(struct sx_ctx *c, struct sx_state *s, const struct ai *x)
{
	struct sx_val a, b;

	switch (x->id) {
	case ARM64_INS_CMP: case ARM64_INS_CMN: case ARM64_INS_TST:
	case ARM64_INS_CCMP: case ARM64_INS_CCMN:
		break;
	default:
		return 0;
	}
	if (x->nops < 2 || x->op[0].type != ARM64_OP_REG)
		return 1;
	a = reg_val(s, x->op[0].reg, x->op[0].width);
	b = source(c, s, &x->op[1], 0);
	if (x->id == ARM64_INS_CMN || x->id == ARM64_INS_CCMN)
		b = sx_neg(&b);
	if (x->id == ARM64_INS_TST && x->op[1].type == ARM64_OP_REG &&
	    x->op[1].reg == x->op[0].reg && !x->op[1].shift)
		b = sx_const(0);
	sx_fact_add(c, s, SXF_CMP, x->pc, operand_bytes(c, &a, &b, x->op[0].width), &a, &b);
	if (x->id == ARM64_INS_CMP && sx_is_const(&b, NULL))
		s->bound = b.off;
	return 1;
}

/*
 * ubfiz, sbfiz, ubfx, sbfx of a: a field of `width` bits at bit `lsb`,
 * inserted at lsb or extracted from it.  A field of 32 bits or more at 0
 * is a 32-bit extension (a term stays itself), one of 8 or 16 bits keeps
 * a load no wider; inserted at lsb it is scaled by 2^lsb ("sbfiz x3, x3,
 * #3, #32": an index times 8).  Constants are computed.
 */
static struct sx_val bitfield(struct sx_ctx *c, const struct ai *x, const struct sx_val *a)
{
	int ins = x->id == ARM64_INS_UBFIZ || x->id == ARM64_INS_SBFIZ;
	int sign = x->id == ARM64_INS_SBFIZ || x->id == ARM64_INS_SBFX;
	int64_t lsb, width;
	struct sx_val v;
	unsigned ext;

	if (x->nops != 4 || x->op[2].type != ARM64_OP_IMM || x->op[3].type != ARM64_OP_IMM)
		return sx_unknown();
	lsb = x->op[2].v;
	width = x->op[3].v;
	if (lsb < 0 || width <= 0 || lsb + width > 64)
		return sx_unknown();
	if (sx_is_const(a, NULL)) {
		uint64_t m = width >= 64 ? ~0ull : (1ull << width) - 1;
		uint64_t f = (ins ? (uint64_t)a->off : (uint64_t)a->off >> lsb) & m;

		if (sign && width < 64 && (f >> (width - 1) & 1))
			f |= ~m;
		return sx_const((int64_t)(ins ? f << lsb : f));
	}
	if (!ins && lsb)
		return sx_unknown();
	switch (width) {
	case 64: ext = 0; break;
	case 32: ext = sign ? ARM64_EXT_SXTW : ARM64_EXT_UXTW; break;
	case 16: ext = sign ? ARM64_EXT_SXTH : ARM64_EXT_UXTH; break;
	case 8: ext = sign ? ARM64_EXT_SXTB : ARM64_EXT_UXTB; break;
	default: return sx_unknown();
	}
	v = extend(c, *a, ext);
	return ins ? shift(&v, ARM64_SFT_LSL, (unsigned)lsb) : v;
}

/* and, orr, eor, lsl, lsr, asr and the extensions: constants fold, a
 * pointer mask keeps its pointer, a shift is a scale (shift()), a 32-bit
 * extension keeps its term.  1 when x was one of them. */
static int logic(struct sx_ctx *c, struct sx_state *s, const struct ai *x)
{
	const struct aop *d = &x->op[0];
	struct sx_val a, b, r = sx_unknown();
	int64_t k;

	if (x->nops < 2 || d->type != ARM64_OP_REG)
		return 0;
	a = source(c, s, &x->op[1], 0);
	b = x->nops > 2 ? source(c, s, &x->op[2], 0) : sx_unknown();
	switch (x->id) {
	case ARM64_INS_AND:
		if (sx_is_const(&a, NULL) && sx_is_const(&b, &k))
			r = sx_const(a.off & k);
		else if (sx_is_const(&b, &k) && pointer_mask(k))
			r = a;
		break;
	case ARM64_INS_ORR:
		if (sx_is_const(&a, NULL) && sx_is_const(&b, &k))
			r = sx_const(a.off | k);
		break;
	case ARM64_INS_EOR:
		if (sx_is_const(&a, NULL) && sx_is_const(&b, &k))
			r = sx_const(a.off ^ k);
		break;
	case ARM64_INS_LSL:
	case ARM64_INS_LSR:
	case ARM64_INS_ASR:
		if (sx_is_const(&b, &k) && k >= 0 && k < 64)
			r = shift(&a, x->id == ARM64_INS_LSL ? ARM64_SFT_LSL :
				  x->id == ARM64_INS_LSR ? ARM64_SFT_LSR : ARM64_SFT_ASR,
				  (unsigned)k);
		break;
	case ARM64_INS_MVN:
		if (sx_is_const(&a, NULL))
			r = sx_const(~a.off);
		break;
	case ARM64_INS_UBFIZ:
	case ARM64_INS_SBFIZ:
	case ARM64_INS_UBFX:
	case ARM64_INS_SBFX:
		r = bitfield(c, x, &a);
		break;
	case ARM64_INS_SXTW: r = extend(c, a, ARM64_EXT_SXTW); break;
	case ARM64_INS_UXTW: r = extend(c, a, ARM64_EXT_UXTW); break;
	case ARM64_INS_SXTH: r = extend(c, a, ARM64_EXT_SXTH); break;
	case ARM64_INS_UXTH: r = extend(c, a, ARM64_EXT_UXTH); break;
	case ARM64_INS_SXTB: r = extend(c, a, ARM64_EXT_SXTB); break;
	case ARM64_INS_UXTB: r = extend(c, a, ARM64_EXT_UXTB); break;
	default:
		return 0;
	}
	set_reg(s, d, &r);
	return 1;
}

/* The target of a direct branch: its last operand, an immediate. */
static uint64_t branch_target(const struct ai *x)
{
	return x->nops && x->op[x->nops - 1].type == ARM64_OP_IMM ?
	       (uint64_t)x->op[x->nops - 1].v : 0;
}

/* Branches, calls and returns: sets nx and records the facts.  1 when x
 * was one of them. */
static int branch(struct sx_ctx *c, struct sx_state *s, const struct ai *x,
		  struct sx_next *nx)
{
	struct sx_val t;
	int64_t k;

	switch (x->id) {
	case ARM64_INS_B:
		nx->target = branch_target(x);
		nx->jump = 1;
		if (x->cc == ARM64_CC_INVALID || x->cc == ARM64_CC_AL) {
			t = sx_const((int64_t)nx->target);
			sx_fact_call(c, s, SXF_JMP, x->pc, 0, &t, NULL);
			nx->fall = 0;
		}
		return 1;
	case ARM64_INS_CBZ: case ARM64_INS_CBNZ:
		/* a comparison with 0, as x86-64's test of a register */
		if (x->nops && x->op[0].type == ARM64_OP_REG) {
			struct sx_val zero = sx_const(0);

			t = reg_val(s, x->op[0].reg, x->op[0].width);
			sx_fact_add(c, s, SXF_CMP, x->pc,
				    operand_bytes(c, &t, &zero, x->op[0].width), &t, &zero);
		}
		nx->target = branch_target(x);
		nx->jump = 1;
		return 1;
	case ARM64_INS_TBZ: case ARM64_INS_TBNZ:
		nx->target = branch_target(x);
		nx->jump = 1;
		return 1;
	case ARM64_INS_BL:
		nx->target = branch_target(x);
		t = sx_const((int64_t)nx->target);
		sx_fact_call(c, s, SXF_CALL, x->pc, 0, &t, NULL);
		nx->call = 1;
		return 1;
	case ARM64_INS_BLR:
	case ARM64_INS_BR:
		t = x->nops ? reg_val(s, x->op[0].reg, 8) : sx_unknown();
		sx_fact_call(c, s, x->id == ARM64_INS_BLR ? SXF_CALLI : SXF_JMPI, x->pc, 0, &t,
			     &(struct sx_val){ 0 });
		if (x->id == ARM64_INS_BR) {
			nx->stop = 1;
			nx->indirect = 1;
			nx->ind = t;
		} else if (sx_is_const(&t, &k)) {
			nx->call = 1;
			nx->target = (uint64_t)k;
		}
		return 1;
	case ARM64_INS_RET:
		t = s->reg[X0];
		sx_fact_add(c, s, SXF_RET, x->pc, 8, &t, NULL);
		nx->stop = 1;
		return 1;
	}
	return 0;
}

static int arm64_step(struct sx_ctx *c, struct sx_state *s, uint64_t pc, struct sx_next *nx)
{
	struct sx_decoder *h = sx_isa_handle(c);
	const struct ai *x = fetch(c, h, pc);
	unsigned width;
	int ls;

	if (!x)
		return -EINVAL;
	nx->next_pc = pc + 4;
	nx->fall = 1;
	if ((ls = load_store(x->id, &width))) {
		transfer(c, s, x, ls, width);
		return 0;
	}
	if (move(c, s, x) || arith(c, s, x) || compare(c, s, x) || logic(c, s, x) ||
	    branch(c, s, x, nx))
		return 0;
	switch (x->id) {
	case ARM64_INS_NOP: case ARM64_INS_HINT: case ARM64_INS_PRFM: case ARM64_INS_PRFUM:
	case ARM64_INS_DMB: case ARM64_INS_DSB: case ARM64_INS_ISB: case ARM64_INS_YIELD:
	case ARM64_INS_CLREX:
		break;
	case ARM64_INS_BRK: case ARM64_INS_HLT:
		nx->stop = 1;
		break;
	default:
		clobber(c, s, x);
	}
	return 0;
}

static void arm64_after_call(struct sx_state *s, struct sx_val ret)
{
	for (int r = X0; r <= X18; r++)
		s->reg[r] = sx_unknown();
	s->reg[X30] = sx_unknown();
	s->reg[X0] = ret;
}

const struct sx_isa sx_isa_arm64 = {
	.name = "arm64",
	.machine = EM_AARCH64,
	.sp_reg = SP,
	.call_push = 0,
	.insn_align = 4,
	.step = arm64_step,
	.after_call = arm64_after_call,
	.arg_regs = { X0, X0 + 1, X0 + 2, X0 + 3, X0 + 4, X0 + 5 },
	.open = arm64_open,
	.close = sx_decoder_free,
};

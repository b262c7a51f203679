/*
 * symexec_x86.c - the x86-64 backend of symexec.h: capstone decodes an
 * instruction, this file says what it does to the sixteen general
 * registers and to memory, in values.  Only the instructions that move
 * addresses and integers around are modelled (mov and its extensions,
 * lea, add, sub, shifts by a constant, imul by a constant, push, pop,
 * leave, xchg, cmp, test, calls, jumps, ret); any other instruction
 * makes the registers it writes unknown, and stores through memory it
 * writes as stores of unknown values.  The ABI is System V's: arguments
 * in rdi, rsi, rdx, rcx, r8, r9; a callee may clobber rax, rcx, rdx,
 * rsi, rdi and r8 to r11.
 *
 * A walk reads the same instructions many times (each path, each rule's
 * walk of lj_vm_call), so each is decoded once into a compact form
 * (struct xi: operands as register numbers, not capstone's names) kept
 * by address (record/symexec_decoder.c).
 */
#include <capstone/capstone.h>
#include <elf.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "record/symexec.h"
#include "record/symexec_decoder.h"

enum { RAX, RCX, RDX, RBX, RSP, RBP, RSI, RDI, R8, R9, R10, R11, R12, R13, R14, R15 };

#define NOREG (-1)  /* no register */
#define RIP (-2)    /* rip-relative */
#define OTHER (-3)  /* a register that is not a general one */

/* One operand, decoded. */
struct xop {
	uint8_t type;    /* X86_OP_REG, X86_OP_IMM, X86_OP_MEM */
	uint8_t size;    /* bytes */
	uint8_t access;  /* CS_AC_READ | CS_AC_WRITE */
	int8_t reg;      /* REG: general register, or OTHER */
	uint8_t width;   /* REG: the part of it named, in bytes */
	int8_t base, index; /* MEM: general registers, NOREG, RIP, OTHER */
	uint8_t bwidth, iwidth; /* their widths */
	uint8_t scale;
	uint8_t seg;     /* MEM: a segment override (TLS): unknown */
	int64_t v;       /* IMM: the value; MEM: the displacement */
};

/* One instruction, decoded. */
struct xi {
	uint64_t pc;     /* 0: an empty cache slot */
	uint16_t id;     /* capstone's X86_INS_* */
	uint8_t size, nops;
	uint16_t writes; /* general registers written (bit i: register i) */
	struct xop op[4];
};

/* The general register a capstone register is part of, and its width in
 * bytes; OTHER for ah and friends, segment and vector registers. */
static int gpr(unsigned r, uint8_t *width)
{
	static const struct { uint16_t r8, r16, r32, r64; } v[16] = {
		[RAX] = { X86_REG_AL, X86_REG_AX, X86_REG_EAX, X86_REG_RAX },
		[RCX] = { X86_REG_CL, X86_REG_CX, X86_REG_ECX, X86_REG_RCX },
		[RDX] = { X86_REG_DL, X86_REG_DX, X86_REG_EDX, X86_REG_RDX },
		[RBX] = { X86_REG_BL, X86_REG_BX, X86_REG_EBX, X86_REG_RBX },
		[RSP] = { X86_REG_SPL, X86_REG_SP, X86_REG_ESP, X86_REG_RSP },
		[RBP] = { X86_REG_BPL, X86_REG_BP, X86_REG_EBP, X86_REG_RBP },
		[RSI] = { X86_REG_SIL, X86_REG_SI, X86_REG_ESI, X86_REG_RSI },
		[RDI] = { X86_REG_DIL, X86_REG_DI, X86_REG_EDI, X86_REG_RDI },
		[R8] = { X86_REG_R8B, X86_REG_R8W, X86_REG_R8D, X86_REG_R8 },
		[R9] = { X86_REG_R9B, X86_REG_R9W, X86_REG_R9D, X86_REG_R9 },
		[R10] = { X86_REG_R10B, X86_REG_R10W, X86_REG_R10D, X86_REG_R10 },
		[R11] = { X86_REG_R11B, X86_REG_R11W, X86_REG_R11D, X86_REG_R11 },
		[R12] = { X86_REG_R12B, X86_REG_R12W, X86_REG_R12D, X86_REG_R12 },
		[R13] = { X86_REG_R13B, X86_REG_R13W, X86_REG_R13D, X86_REG_R13 },
		[R14] = { X86_REG_R14B, X86_REG_R14W, X86_REG_R14D, X86_REG_R14 },
		[R15] = { X86_REG_R15B, X86_REG_R15W, X86_REG_R15D, X86_REG_R15 },
	};

	*width = 0;
	for (int i = 0; i < 16; i++) {
		if (r == v[i].r64 || r == v[i].r32 || r == v[i].r16 || r == v[i].r8) {
			*width = r == v[i].r64 ? 8 : r == v[i].r32 ? 4 : r == v[i].r16 ? 2 : 1;
			return i;
		}
	}
	return OTHER;
}

/* The backend's handle: a decoder whose cache holds struct xi. */
static void *x86_open(void)
{
	return sx_decoder_new(CS_ARCH_X86, CS_MODE_64, sizeof(struct xi));
}

static void decode_mem(struct xop *o, const x86_op_mem *m)
{
	o->seg = m->segment != X86_REG_INVALID;
	o->v = m->disp;
	o->scale = (uint8_t)m->scale;
	if (m->base == X86_REG_RIP)
		o->base = RIP;
	else if (m->base == X86_REG_INVALID)
		o->base = NOREG;
	else
		o->base = (int8_t)gpr(m->base, &o->bwidth);
	o->index = m->index == X86_REG_INVALID ? NOREG : (int8_t)gpr(m->index, &o->iwidth);
}

/* Fills x from capstone's decoding of the instruction at pc. */
static int decode(struct sx_ctx *c, struct sx_decoder *h, uint64_t pc, struct xi *x)
{
	const uint8_t *code;
	size_t left;
	uint64_t addr = pc;
	cs_insn *in = h->insn;
	cs_regs rd, wr;
	uint8_t nrd = 0, nwr = 0, w;

	code = sx_code_at(c, pc, &left);
	if (!code || !cs_disasm_iter(h->cs, &code, &left, &addr, in))
		return -EINVAL;
	memset(x, 0, sizeof(*x));
	x->pc = pc;
	x->id = (uint16_t)in->id;
	x->size = (uint8_t)in->size;
	x->nops = in->detail->x86.op_count > 4 ? 4 : in->detail->x86.op_count;
	for (int i = 0; i < x->nops; i++) {
		const cs_x86_op *op = &in->detail->x86.operands[i];
		struct xop *o = &x->op[i];

		o->type = (uint8_t)op->type;
		o->size = op->size;
		o->access = op->access;
		if (op->type == X86_OP_REG)
			o->reg = (int8_t)gpr(op->reg, &o->width);
		else if (op->type == X86_OP_IMM)
			o->v = op->imm;
		else if (op->type == X86_OP_MEM)
			decode_mem(o, &op->mem);
	}
	if (cs_regs_access(h->cs, in, rd, &nrd, wr, &nwr) == CS_ERR_OK) {
		for (int i = 0; i < nwr; i++) {
			int r = gpr(wr[i], &w);

			if (r >= 0)
				x->writes |= (uint16_t)(1u << r);
		}
	}
	return 0;
}

/* The decoded instruction at pc, from the cache or decoded now. */
static int decode_slot(struct sx_ctx *c, void *h, uint64_t pc, void *slot)
{
	return decode(c, h, pc, slot);
}

static const struct xi *fetch(struct sx_ctx *c, struct sx_decoder *h, uint64_t pc)
{
	return sx_decoder_fetch(h, c, pc, decode_slot, h);
}

/* The value of a memory operand's address; unknown with a segment.  An
 * index whose value is unknown is ANY: a table's base stays known. */
static struct sx_val mem_addr(struct sx_ctx *c, const struct sx_state *s,
			      const struct xi *x, const struct xop *o)
{
	struct sx_val a = sx_const(o->v), b;

	if (o->seg || o->base == OTHER || o->index == OTHER)
		return sx_unknown();
	if (o->base == RIP) {
		a.off += (int64_t)(x->pc + x->size);
	} else if (o->base != NOREG) {
		if (o->bwidth < 4)
			return sx_unknown();
		a = sx_add(&a, &s->reg[o->base]);
	}
	if (o->index != NOREG) {
		if (o->iwidth < 4)
			return sx_unknown();
		b = s->reg[o->index];
		if (!b.known)
			b = sx_term(sx_any(c), 0);
		b = sx_mul(&b, o->scale);
		a = sx_add(&a, &b);
	}
	return a;
}

/* An operand's value: a register, an immediate or a load. */
static struct sx_val operand(struct sx_ctx *c, struct sx_state *s, const struct xi *x,
			     const struct xop *o)
{
	struct sx_val a;

	switch (o->type) {
	case X86_OP_REG:
		if (o->reg < 0)
			return sx_unknown();
		if (o->width < 8 && sx_is_const(&s->reg[o->reg], NULL))
			return sx_const((int64_t)((uint64_t)s->reg[o->reg].off &
						  (~0ull >> (64 - 8 * o->width))));
		if (o->width < 4) {
			/* a narrow register holds a narrow load whole */
			const struct sx_node *n = sx_load_of(c, &s->reg[o->reg]);

			return n && n->width <= o->width ? s->reg[o->reg] : sx_unknown();
		}
		return s->reg[o->reg];
	case X86_OP_IMM:
		/* a 32-bit immediate sign-extended: added to a 32-bit term it
		 * is the same modulo 2^32, and a small negative offset stays
		 * one; a 32-bit register written with it keeps its low half */
		if (o->size == 4)
			return sx_const((int64_t)(int32_t)o->v);
		return sx_const(o->v);
	case X86_OP_MEM:
		a = mem_addr(c, s, x, o);
		return sx_do_load(c, s, x->pc, &a, o->size);
	default:
		return sx_unknown();
	}
}

/* Writes v to a register operand (a 32-bit write zero-extends: kept as
 * the same value; narrower writes are not modelled), or stores it. */
static void set_operand(struct sx_ctx *c, struct sx_state *s, const struct xi *x,
			const struct xop *o, const struct sx_val *v)
{
	struct sx_val a;

	if (o->type == X86_OP_REG) {
		if (o->reg < 0)
			return;
		if (o->width < 4)
			s->reg[o->reg] = sx_unknown();
		else if (o->width == 4 && sx_is_const(v, NULL))
			s->reg[o->reg] = sx_const((int64_t)(uint32_t)v->off);
		else
			s->reg[o->reg] = *v;
	} else if (o->type == X86_OP_MEM) {
		a = mem_addr(c, s, x, o);
		sx_do_store(c, s, x->pc, &a, o->size, v);
	}
}

/* What an instruction not modelled does: it loads what it reads, its
 * written registers become unknown, its memory destination gets an
 * unknown value. */
static void clobber(struct sx_ctx *c, struct sx_state *s, const struct xi *x)
{
	struct sx_val u = sx_unknown();

	for (int i = 0; i < x->nops; i++) {
		const struct xop *o = &x->op[i];

		if (o->type == X86_OP_MEM && (o->access & CS_AC_READ) && x->id != X86_INS_LEA) {
			struct sx_val a = mem_addr(c, s, x, o);

			sx_do_load(c, s, x->pc, &a, o->size);
		}
	}
	for (int r = 0; r < 16; r++)
		if ((x->writes >> r & 1) && r != RSP)
			s->reg[r] = u;
	for (int i = 0; i < x->nops; i++)
		if (x->op[i].type == X86_OP_MEM && (x->op[i].access & CS_AC_WRITE))
			set_operand(c, s, x, &x->op[i], &u);
}

static void push(struct sx_ctx *c, struct sx_state *s, uint64_t pc, const struct sx_val *v)
{
	struct sx_val d = sx_const(-8);

	s->reg[RSP] = sx_add(&s->reg[RSP], &d);
	sx_do_store(c, s, pc, &s->reg[RSP], 8, v);
}

static struct sx_val pop(struct sx_ctx *c, struct sx_state *s, uint64_t pc)
{
	struct sx_val v = sx_do_load(c, s, pc, &s->reg[RSP], 8), d = sx_const(8);

	s->reg[RSP] = sx_add(&s->reg[RSP], &d);
	return v;
}

/* Calls and jumps: sets next and records the facts. */
static void branch(struct sx_ctx *c, struct sx_state *s, const struct xi *x,
		   struct sx_next *nx)
{
	const struct xop *o = &x->op[0];
	int call = x->id == X86_INS_CALL, jmp = x->id == X86_INS_JMP;
	struct sx_val t, a;
	int64_t k;

	if (o->type == X86_OP_IMM) {
		t = sx_const(o->v);
		nx->target = (uint64_t)o->v;
		if (call) {
			sx_fact_call(c, s, SXF_CALL, x->pc, 0, &t, NULL);
			nx->call = 1;
			nx->fall = 1;
		} else {
			if (jmp)
				sx_fact_call(c, s, SXF_JMP, x->pc, 0, &t, NULL);
			nx->jump = 1;
			nx->fall = !jmp;
		}
		return;
	}
	a = sx_unknown();
	if (o->type == X86_OP_MEM)
		a = mem_addr(c, s, x, o);
	t = operand(c, s, x, o);
	sx_fact_call(c, s, call ? SXF_CALLI : SXF_JMPI, x->pc, o->type == X86_OP_MEM, &t, &a);
	if (call) {
		nx->fall = 1;
		if (sx_is_const(&t, &k)) {
			nx->call = 1;
			nx->target = (uint64_t)k;
		}
	} else {
		nx->stop = 1;
		nx->indirect = 1;
		nx->ind = t;
	}
}

static int is_jcc(unsigned id)
{
	switch (id) {
	case X86_INS_JAE: case X86_INS_JA: case X86_INS_JBE: case X86_INS_JB:
	case X86_INS_JCXZ: case X86_INS_JECXZ: case X86_INS_JE: case X86_INS_JGE:
	case X86_INS_JG: case X86_INS_JLE: case X86_INS_JL: case X86_INS_JNE:
	case X86_INS_JNO: case X86_INS_JNP: case X86_INS_JNS: case X86_INS_JO:
	case X86_INS_JP: case X86_INS_JRCXZ: case X86_INS_JS:
		return 1;
	}
	return 0;
}

/* A mask that keeps a pointer's low bits: LuaJIT's GC64 references and
 * lightuserdata are masked with 0x7fffffffffff (47 bits). */
static int pointer_mask(int64_t k)
{
	uint64_t m = (uint64_t)k;

	return m >= 0xffffffffull && !(m & (m + 1));
}

/* shr, sar, and, or, imul, shl: the result of a with b, or unknown. */
static struct sx_val binary(unsigned id, const struct sx_val *a, const struct sx_val *b)
{
	int64_t k;

	switch (id) {
	case X86_INS_ADD:
		return sx_add(a, b);
	case X86_INS_SHL:
	case X86_INS_SAL:
		if (sx_is_const(b, &k) && k >= 0 && k < 32)
			return sx_mul(a, (int64_t)1 << k);
		break;
	case X86_INS_SHR:
	case X86_INS_SAR:
		/* shl k then shr k keeps the low bits: LuaJIT's GC64 untagging
		 * (cleartp) of a pointer, which is the pointer */
		if (sx_is_const(b, &k) && k > 0 && k < 64 && !a->term && a->idx && !a->off &&
		    a->scale == (int64_t)1 << k)
			return sx_term(a->idx, 0);
		if (sx_is_const(a, NULL) && sx_is_const(b, &k) && k >= 0 && k < 64)
			return sx_const(id == X86_INS_SHR ? (int64_t)((uint64_t)a->off >> k) :
							   a->off >> k);
		break;
	case X86_INS_AND:
		if (sx_is_const(a, NULL) && sx_is_const(b, &k))
			return sx_const(a->off & k);
		if (sx_is_const(b, &k) && pointer_mask(k))
			return *a;
		break;
	case X86_INS_OR:
		if (sx_is_const(a, NULL) && sx_is_const(b, &k))
			return sx_const(a->off | k);
		break;
	case X86_INS_IMUL:
		if (sx_is_const(b, &k))
			return sx_mul(a, k);
		break;
	}
	return sx_unknown();
}

/* add, sub, and, or, xor, shifts, imul and neg on a register or memory. */
static void arith(struct sx_ctx *c, struct sx_state *s, const struct xi *x)
{
	const struct xop *d = &x->op[0], *o = &x->op[1];
	struct sx_val a, b, r = sx_unknown();

	if (x->nops < 2) {
		if (x->nops == 1 && x->id == X86_INS_NEG) {
			a = operand(c, s, x, d);
			r = sx_neg(&a);
			set_operand(c, s, x, d, &r);
		} else {
			clobber(c, s, x);
		}
		return;
	}
	if (x->id == X86_INS_XOR && d->type == X86_OP_REG && o->type == X86_OP_REG &&
	    d->reg >= 0 && d->reg == o->reg) {
		r = sx_const(0);
		set_operand(c, s, x, d, &r);
		return;
	}
	if (x->id == X86_INS_IMUL && x->nops == 3) {
		a = operand(c, s, x, o);
		r = sx_mul(&a, x->op[2].v);
		set_operand(c, s, x, d, &r);
		return;
	}
	a = operand(c, s, x, d);
	b = operand(c, s, x, o);
	if (x->id == X86_INS_SUB) {
		if (sx_is_const(&b, NULL)) {
			b = sx_neg(&b);
			r = sx_add(&a, &b);
		} else {
			sx_fact_add(c, s, SXF_SUB, x->pc, o->size, &a, &b);
		}
	} else {
		r = binary(x->id, &a, &b);
	}
	set_operand(c, s, x, d, &r);
}

/* mov and its extensions, lea, inc and dec, cmp and test, push, pop,
 * leave, xchg: 1 when x was one of them. */
static int move(struct sx_ctx *c, struct sx_state *s, const struct xi *x)
{
	const struct xop *o0 = &x->op[0], *o1 = &x->op[1];
	struct sx_val v, a;

	switch (x->id) {
	case X86_INS_MOV:
	case X86_INS_MOVABS:
		v = operand(c, s, x, o1);
		set_operand(c, s, x, o0, &v);
		return 1;
	case X86_INS_MOVZX:
	case X86_INS_MOVSX:
	case X86_INS_MOVSXD:
		v = operand(c, s, x, o1);
		if (o1->type == X86_OP_REG && o1->reg >= 0 && o1->width < 4)
			v = sx_unknown();
		else if (x->id == X86_INS_MOVSXD && sx_is_const(&v, NULL))
			v = sx_const((int64_t)(int32_t)v.off);
		set_operand(c, s, x, o0, &v);
		return 1;
	case X86_INS_LEA:
		v = mem_addr(c, s, x, o1);
		set_operand(c, s, x, o0, &v);
		return 1;
	case X86_INS_INC:
	case X86_INS_DEC:
		v = operand(c, s, x, o0);
		a = sx_const(x->id == X86_INS_INC ? 1 : -1);
		v = sx_add(&v, &a);
		set_operand(c, s, x, o0, &v);
		return 1;
	case X86_INS_CMP:
	case X86_INS_TEST:
		v = operand(c, s, x, o0);
		a = operand(c, s, x, o1);
		if (x->id == X86_INS_TEST && o0->type == X86_OP_REG && o1->type == X86_OP_REG &&
		    o0->reg >= 0 && o0->reg == o1->reg)
			a = sx_const(0);
		sx_fact_add(c, s, SXF_CMP, x->pc, o0->size, &v, &a);
		if (x->id == X86_INS_CMP && sx_is_const(&a, NULL))
			s->bound = a.off;
		return 1;
	case X86_INS_PUSH:
		v = operand(c, s, x, o0);
		push(c, s, x->pc, &v);
		return 1;
	case X86_INS_POP:
		v = pop(c, s, x->pc);
		set_operand(c, s, x, o0, &v);
		return 1;
	case X86_INS_LEAVE:
		s->reg[RSP] = s->reg[RBP];
		s->reg[RBP] = pop(c, s, x->pc);
		return 1;
	case X86_INS_XCHG:
		if (o0->type == X86_OP_REG && o1->type == X86_OP_REG) {
			v = operand(c, s, x, o0);
			a = operand(c, s, x, o1);
			set_operand(c, s, x, o0, &a);
			set_operand(c, s, x, o1, &v);
		} else {
			clobber(c, s, x);
		}
		return 1;
	}
	return 0;
}

static int x86_step(struct sx_ctx *c, struct sx_state *s, uint64_t pc, struct sx_next *nx)
{
	struct sx_decoder *h = sx_isa_handle(c);
	const struct xi *x = fetch(c, h, pc);
	struct sx_val v;

	if (!x)
		return -EINVAL;
	nx->next_pc = pc + x->size;
	nx->fall = 1;
	if (move(c, s, x))
		return 0;
	switch (x->id) {
	case X86_INS_ADD: case X86_INS_SUB: case X86_INS_AND: case X86_INS_OR:
	case X86_INS_XOR: case X86_INS_SHL: case X86_INS_SAL: case X86_INS_IMUL:
	case X86_INS_SHR: case X86_INS_SAR: case X86_INS_NEG:
		arith(c, s, x);
		break;
	case X86_INS_CALL:
	case X86_INS_JMP:
		branch(c, s, x, nx);
		break;
	case X86_INS_RET:
		v = s->reg[RAX];
		sx_fact_add(c, s, SXF_RET, pc, 8, &v, NULL);
		nx->stop = 1;
		break;
	case X86_INS_NOP: case X86_INS_ENDBR64: case X86_INS_ENDBR32:
		break;
	case X86_INS_HLT: case X86_INS_UD2: case X86_INS_INT3:
		nx->stop = 1;
		break;
	default:
		if (is_jcc(x->id)) {
			nx->jump = 1;
			nx->target = (uint64_t)x->op[0].v;
		} else {
			clobber(c, s, x);
		}
	}
	return 0;
}

static void x86_after_call(struct sx_state *s, struct sx_val ret)
{
	static const int clobbered[] = { RCX, RDX, RSI, RDI, R8, R9, R10, R11 };

	for (size_t i = 0; i < sizeof(clobbered) / sizeof(clobbered[0]); i++)
		s->reg[clobbered[i]] = sx_unknown();
	s->reg[RAX] = ret;
}

const struct sx_isa sx_isa_x86_64 = {
	.name = "x86_64",
	.machine = EM_X86_64,
	.sp_reg = RSP,
	.call_push = 8,
	.insn_align = 1,
	.step = x86_step,
	.after_call = x86_after_call,
	.arg_regs = { RDI, RSI, RDX, RCX, R8, R9 },
	.open = x86_open,
	.close = sx_decoder_free,
};

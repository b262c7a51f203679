/*
 * luajit_alloc_x86.c - where to probe a LuaJIT VM's allocator on x86_64
 * (see luajit_alloc.h): read from its machine code, whatever build.
 *
 * g->allocf is lua_Alloc(ud, ptr, osize, nsize): rdi, rsi, rdx, rcx.
 * Built-in (lj_alloc_f), it is a three-way dispatch; gcc -O2:
 *
 *   test %rcx,%rcx ; je  free      <- the site: a branch, still the args
 *   test %rsi,%rsi ; je  malloc
 *   mov  %rcx,%rdx ; jmp lj_alloc_realloc     (tail calls: the callee's
 *   malloc: mov %rcx,%rsi ; jmp lj_alloc_malloc  return is allocf's)
 *   free:   jmp  lj_alloc_free
 *
 * clang calls lj_alloc_free and returns 0; -Os tests with jne; -O0 keeps
 * the arguments on its stack and calls all three.
 *
 * The site is the first instruction, in straight-line order from the
 * entry, that the kernel emulates (a jump or a call: one int3 trap; any
 * other is copied out of line and single-stepped, a second trap that cost
 * ten times the first here, docs/memory.md) and before which nothing
 * wrote rsi or rcx.  The return sites are the functions tail-called on a
 * path where nsize is not known to be 0 (a free's tail call returns no
 * block); if a path returns from allocf itself with a block, or the code
 * cannot be followed, the return site is allocf.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <capstone/capstone.h>

#include "record/luajit_alloc.h"

#define MAX_STEPS 256
#define MAX_PATHS 32

enum { NSZ_UNKNOWN, NSZ_ZERO, NSZ_NONZERO };

struct path {
	uint64_t pc;
	int nsize;     /* what is known of nsize here */
	int flags_nsz; /* the flags are a test of nsize against 0 */
};

struct walk {
	csh cs;
	cs_insn *in;
	const uint8_t *code;
	size_t len;
	uint64_t base;
	struct lj_alloc_sites *out;
};

static int is_reg(x86_reg r, x86_reg a, x86_reg b, x86_reg c, x86_reg d)
{
	return r == a || r == b || r == c || r == d;
}

static int is_rcx(x86_reg r)
{
	return is_reg(r, X86_REG_RCX, X86_REG_ECX, X86_REG_CX, X86_REG_CL) || r == X86_REG_CH;
}

static int is_rsi(x86_reg r)
{
	return is_reg(r, X86_REG_RSI, X86_REG_ESI, X86_REG_SI, X86_REG_SIL);
}

static int decode(struct walk *w, uint64_t pc)
{
	const uint8_t *code;
	uint64_t addr = pc;
	size_t left;

	if (pc < w->base || pc >= w->base + w->len)
		return -ERANGE;
	code = w->code + (pc - w->base);
	left = w->len - (pc - w->base);
	return cs_disasm_iter(w->cs, &code, &left, &addr, w->in) ? 0 : -EINVAL;
}

/* The instruction's direct target, 0 if it has none. */
static uint64_t target(const cs_insn *in)
{
	const cs_x86 *x = &in->detail->x86;

	return x->op_count == 1 && x->operands[0].type == X86_OP_IMM ? (uint64_t)x->operands[0].imm
								     : 0;
}

static int in_group(const cs_insn *in, uint8_t g)
{
	for (int i = 0; i < in->detail->groups_count; i++)
		if (in->detail->groups[i] == g)
			return 1;
	return 0;
}

/* Does the instruction write reg-family is(), or the flags? */
static int writes(struct walk *w, int (*is)(x86_reg), int *flags)
{
	cs_regs rd, wr;
	uint8_t nrd = 0, nwr = 0;
	int hit = 0;

	*flags = 0;
	if (cs_regs_access(w->cs, w->in, rd, &nrd, wr, &nwr))
		return -1;
	for (int i = 0; i < nwr; i++) {
		hit |= is && is((x86_reg)wr[i]);
		*flags |= wr[i] == X86_REG_EFLAGS;
	}
	return hit;
}

/* test rcx,rcx or cmp rcx,0: the flags say whether nsize is 0. */
static int tests_nsize(const cs_insn *in)
{
	const cs_x86 *x = &in->detail->x86;
	const cs_x86_op *a = &x->operands[0], *b = &x->operands[1];

	if (x->op_count != 2 || a->type != X86_OP_REG || !is_rcx(a->reg))
		return 0;
	if (in->id == X86_INS_TEST)
		return b->type == X86_OP_REG && b->reg == a->reg;
	return in->id == X86_INS_CMP && b->type == X86_OP_IMM && b->imm == 0;
}

/* nsize's register or ptr's: what the site must come before writing. */
static int is_arg(x86_reg r)
{
	return is_rcx(r) || is_rsi(r);
}

static int find_site(struct walk *w)
{
	uint64_t pc = w->base;
	int flags;

	for (int i = 0; i < 32; i++) {
		if (decode(w, pc))
			return -EINVAL;
		if (in_group(w->in, CS_GRP_JUMP) || in_group(w->in, CS_GRP_CALL)) {
			w->out->site = pc;
			return 0;
		}
		if (in_group(w->in, CS_GRP_RET) || writes(w, is_arg, &flags))
			return -ENOENT;
		pc += w->in->size;
	}
	return -ENOENT;
}

static void add_ret(struct lj_alloc_sites *s, uint64_t fn)
{
	for (int i = 0; i < s->nret; i++)
		if (s->ret[i] == fn)
			return;
	if (s->nret < LJ_ALLOC_MAX_RET)
		s->ret[s->nret++] = fn;
	else
		s->ret_self = 1;
}

/* Follows one path to its end: 0, or 1 when it returns a block from
 * allocf itself (or cannot be followed); new paths go to q. */
static int follow(struct walk *w, struct path p, struct path *q, int *nq, int *steps)
{
	int flags;

	while ((*steps)++ < MAX_STEPS) {
		const cs_insn *in = w->in;
		uint64_t t;

		if (decode(w, p.pc))
			return 1;
		t = target(in);
		if (in->id == X86_INS_JMP) {
			if (!t)
				return 1; /* indirect */
			if (t < w->base || t >= w->base + w->len) {
				if (p.nsize != NSZ_ZERO)
					add_ret(w->out, t);
				return 0;
			}
			p.pc = t;
			continue;
		}
		if (in_group(in, CS_GRP_RET))
			return p.nsize != NSZ_ZERO;
		if (in_group(in, CS_GRP_CALL)) { /* the callee's flags after */
			p.flags_nsz = 0;
			p.pc += in->size;
			continue;
		}
		if (in_group(in, CS_GRP_JUMP)) { /* conditional */
			struct path taken = p;

			if (!t || *nq == MAX_PATHS)
				return 1;
			taken.pc = t;
			if (p.flags_nsz && (in->id == X86_INS_JE || in->id == X86_INS_JNE)) {
				int eq = in->id == X86_INS_JE;

				taken.nsize = eq ? NSZ_ZERO : NSZ_NONZERO;
				p.nsize = eq ? NSZ_NONZERO : NSZ_ZERO;
			}
			q[(*nq)++] = taken;
			p.pc += in->size;
			continue;
		}
		if (tests_nsize(in)) {
			p.flags_nsz = 1;
		} else if (writes(w, NULL, &flags) < 0 || flags) {
			p.flags_nsz = 0;
		}
		p.pc += in->size;
	}
	return 1;
}

static int find_returns(struct walk *w)
{
	struct path q[MAX_PATHS + 1];
	int nq = 1, steps = 0, done = 0;

	q[0] = (struct path){ .pc = w->base };
	while (done < nq && !w->out->ret_self)
		w->out->ret_self |= follow(w, q[done++], q, &nq, &steps);
	return 0;
}

int lj_alloc_sites_x86(const uint8_t *code, size_t len, uint64_t addr,
		       struct lj_alloc_sites *out)
{
	struct walk w = { .code = code, .len = len, .base = addr, .out = out };
	int err;

	memset(out, 0, sizeof(*out));
	if (cs_open(CS_ARCH_X86, CS_MODE_64, &w.cs) != CS_ERR_OK)
		return -ENOMEM;
	cs_option(w.cs, CS_OPT_DETAIL, CS_OPT_ON);
	w.in = cs_malloc(w.cs);
	err = w.in ? 0 : -ENOMEM;
	if (!err && find_site(&w)) {
		out->site = addr; /* the entry, single-stepped: said */
		out->site_stepped = 1;
	}
	if (!err)
		err = find_returns(&w);
	if (!err && out->ret_self)
		out->nret = 0;
	if (w.in)
		cs_free(w.in, 1);
	cs_close(&w.cs);
	return err;
}

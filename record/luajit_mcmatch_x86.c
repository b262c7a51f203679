/*
 * luajit_mcmatch_x86.c - which IR instruction each machine instruction of
 * a trace's x86_64 code was emitted for.
 *
 * LuaJIT's assembler (lj_asm.c, lj_asm_x86.h) walks the IR backwards and
 * emits each instruction's code downwards, so the code of a stretch
 * between two snapshots is its IR instructions' code in IR order, each a
 * short run: the instruction proper, and before it the moves, reloads and
 * constant loads its operands needed.  What is left in the IR after
 * assembly ties them: each instruction's register (IRIns.r), and its kind.
 * A machine instruction is matched to an IR instruction by
 *
 *   - a branch out of the trace (to an exit stub or a side trace) to a
 *     guard; a cmp, test or ucomisd before it, too;
 *   - the register it writes being the IR instruction's, more so when
 *     the operation is the IR's (mulsd for MUL, roundsd for FPMATH);
 *   - a call to an IR instruction that calls (CALLN, MOD, POW, TNEW...);
 *   - a store to memory to a store.
 *
 * The match is the monotone assignment that scores best (dynamic
 * programming, as luajit_irmatch.c does); a machine instruction with no
 * tie goes with the IR instruction after it, whose operands it prepared.
 * Too few IR instructions with a tied machine instruction, and the
 * stretch is not matched at all.
 */
#include <capstone/capstone.h>
#include <stdlib.h>
#include <string.h>

#include "lib/grow.h"
#include "record/luajit_place_priv.h"

#define MC_CELLS (1u << 21)  /* machine x IR instructions one stretch takes */
#define MC_MIN_TIED 0.6      /* share of IR with code that must be tied */
#define SKIP 3               /* the cost of IR with code left with none */

/* One decoded machine instruction, what matching needs of it. */
struct mc {
	uint32_t wr;       /* LuaJIT register ids written: bit per id (0-31) */
	uint32_t rd;       /* ... read */
	uint8_t exit;      /* a branch out of the trace */
	uint8_t cmp, call, store;
	char mn[16];
};

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

static int starts(const char *s, const char *p)
{
	return !strncmp(s, p, strlen(p));
}

/* The operation of machine instruction m is the one IR op o does. */
static int same_op(const struct mc *m, uint8_t o)
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

/* IR that may call a helper on x86_64. */
static int may_call(uint8_t o)
{
	switch (lj_ir_class[o]) {
	case LJ_IRC_CALL: case LJ_IRC_ALLOC: case LJ_IRC_BUF:
		return 1;
	}
	return o == LJ_IR_MOD || o == LJ_IR_POW || o == LJ_IR_FPMATH || o == LJ_IR_LDEXP ||
	       o == LJ_IR_TOSTR || o == LJ_IR_STRTO || o == LJ_IR_NEWREF ||
	       o == LJ_IR_OBAR || o == LJ_IR_ALEN || o == LJ_IR_HREF;
}

static int is_guard(struct lj_irins x)
{
	return (x.t & LJ_IRT_GUARD) || (x.o < LJ_IR__MAX &&
		(lj_ir_class[x.o] == LJ_IRC_CMP || lj_ir_class[x.o] == LJ_IRC_RETF));
}

static int score(const struct lj_trace_view *tv, const struct mc *m, struct lj_irins x)
{
	int s = 0;

	if (x.o >= LJ_IR__MAX || lj_ir_class[x.o] == LJ_IRC_MARK || lj_ir_class[x.o] == LJ_IRC_K)
		return 0;
	if (is_guard(x)) {
		if (m->exit)
			s += 4;
		else if (m->cmp)
			s += 2;
	}
	if (x.r < 32 && (m->wr >> x.r & 1))
		s += same_op(m, x.o) ? 4 : 1;
	if (m->call)
		s += lj_ir_class[x.o] == LJ_IRC_CALL ? 4 : may_call(x.o) ? 3 : 0;
	if (m->store && lj_ir_class[x.o] == LJ_IRC_STORE)
		s += 2;
	for (int w = 0; w < 2 && s; w++) {
		uint32_t ref = w ? x.op2 : x.op1;

		if (ref > LJ_REF_BIAS && ref < tv->nins) {
			struct lj_irins y = lj_ir_at(tv, ref);

			if (y.r < 32 && (m->rd >> y.r & 1))
				s += 1;
		}
	}
	return s;
}

/* The IR instruction has code of its own: a result in a register, a
 * guard, a store or a call. */
static int has_code(struct lj_irins x)
{
	if (x.o >= LJ_IR__MAX || lj_ir_class[x.o] == LJ_IRC_MARK || lj_ir_class[x.o] == LJ_IRC_K)
		return 0;
	return x.r < 32 || is_guard(x) || lj_ir_class[x.o] == LJ_IRC_STORE ||
	       lj_ir_class[x.o] == LJ_IRC_CALL;
}

struct mcx {
	csh h;
	cs_insn *in;
};

static struct mcx *mcx_get(struct lj_pstate *ps)
{
	struct mcx *x = ps->mcx;

	if (x)
		return x;
	if (!(x = calloc(1, sizeof(*x))))
		return NULL;
	if (cs_open(CS_ARCH_X86, CS_MODE_64, &x->h) != CS_ERR_OK) {
		free(x);
		return NULL;
	}
	cs_option(x->h, CS_OPT_DETAIL, CS_OPT_ON);
	if (!(x->in = cs_malloc(x->h))) {
		cs_close(&x->h);
		free(x);
		return NULL;
	}
	ps->mcx = x;
	return x;
}

void lj_mcmatch_free(struct lj_pstate *ps)
{
	struct mcx *x = ps->mcx;

	if (!x)
		return;
	cs_free(x->in, 1);
	cs_close(&x->h);
	free(x);
	ps->mcx = NULL;
}

static void classify(struct mcx *x, const struct lj_trace_view *tv, struct mc *m)
{
	cs_insn *in = x->in;
	cs_x86 *d = &in->detail->x86;
	cs_regs rd, wr;
	uint8_t nrd = 0, nwr = 0;

	memset(m, 0, sizeof(*m));
	memcpy(m->mn, in->mnemonic, sizeof(m->mn) - 1); /* NUL-padded, NUL-ended */
	if (cs_regs_access(x->h, in, rd, &nrd, wr, &nwr) == CS_ERR_OK) {
		for (int i = 0; i < nrd; i++) {
			int r = rid_of(rd[i]);

			if (r >= 0)
				m->rd |= 1u << r;
		}
		for (int i = 0; i < nwr; i++) {
			int r = rid_of(wr[i]);

			if (r >= 0)
				m->wr |= 1u << r;
		}
	}
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

int lj_mcmatch(struct lj_pstate *ps, uint32_t ofs, uint32_t end, uint32_t first,
	       uint32_t n, struct lj_mins **out, size_t *cap, uint32_t *nout)
{
	const struct lj_trace_view *tv = ps->tv;
	struct mcx *x = mcx_get(ps);
	struct mc *mcs = NULL;
	int32_t *from = NULL, *prev = NULL, *cur = NULL, *coded = NULL;
	uint8_t *hc = NULL;
	uint32_t nm = 0, tied = 0, ncoded = 0;
	int err = -1;

	*nout = 0;
	if (!x || end > tv->szmcode || ofs > end)
		return -1;
	/* Decode the stretch. */
	{
		const uint8_t *code = tv->mc + ofs;
		size_t left = end - ofs;
		uint64_t addr = tv->mcode + ofs;

		while (left) {
			uint32_t at = (uint32_t)(addr - tv->mcode);

			if (!cs_disasm_iter(x->h, &code, &left, &addr, x->in) ||
			    GROW(*out, *cap, nm + 1) || !(mcs = reallocarray(mcs, nm + 1, sizeof(*mcs))))
				goto fail;
			(*out)[nm] = (struct lj_mins){ .ofs = at, .len = x->in->size, .irx = -1 };
			classify(x, tv, &mcs[nm]);
			nm++;
		}
	}
	*nout = nm;
	if (!nm || !n) {
		free(mcs);
		return 0;
	}
	if ((uint64_t)nm * n > MC_CELLS || !(from = calloc((size_t)nm * n * 2, sizeof(*from))) ||
	    !(prev = calloc((size_t)n * 2, sizeof(*prev))) ||
	    !(cur = calloc((size_t)n * 2, sizeof(*cur))) ||
	    !(coded = calloc(n + 1, sizeof(*coded))) || !(hc = calloc(n, 1)))
		goto fail;
	/* coded[j]: the IR with code of its own before j.  Each such IR that
	 * no machine instruction is tied to (scores above 0 with) costs
	 * SKIP: two mulsd into xmm7 are two MULs' code, not one's, and two
	 * calls are two calls' code, not the second's twice with the first's
	 * argument moves (which tie to nothing) standing in for its call.
	 * best[k][j][t] (rows prev and cur): the best score of machine
	 * instructions 0..k with k matched to IR j, the IR before j paid for,
	 * t telling whether an instruction tied to j; from: where k-1 went,
	 * as j * 2 + t. */
	for (uint32_t j = 0; j < n; j++) {
		hc[j] = (uint8_t)has_code(lj_ir_at(tv, first + j));
		coded[j + 1] = coded[j] + hc[j];
	}
	for (uint32_t k = 0; k < nm; k++) {
		int32_t run = INT32_MIN / 2, runfrom = -1; /* best before j, skips paid to j */
		int32_t *t = prev;

		prev = cur;
		cur = t;
		for (uint32_t j = 0; j < n; j++) {
			int32_t s = score(tv, &mcs[k], lj_ir_at(tv, first + j));
			int tj = s > 0;
			int32_t *f = from + ((size_t)k * n + j) * 2;

			cur[j * 2] = cur[j * 2 + 1] = INT32_MIN / 2;
			f[0] = f[1] = -1;
			if (k == 0) {
				cur[j * 2 + tj] = s - SKIP * coded[j];
				continue;
			}
			/* Staying at j (preferred on a tie), or from the latest
			 * IR before it that scores best. */
			for (int h = 0; h < 2; h++)
				if (prev[j * 2 + h] + s > cur[j * 2 + (h | tj)]) {
					cur[j * 2 + (h | tj)] = prev[j * 2 + h] + s;
					f[h | tj] = (int32_t)(j * 2 + h);
				}
			if (run - SKIP * coded[j] + s > cur[j * 2 + tj]) {
				cur[j * 2 + tj] = run - SKIP * coded[j] + s;
				f[tj] = runfrom;
			}
			for (int h = 0; h < 2; h++) {
				int32_t v = prev[j * 2 + h] - (h ? 0 : SKIP * hc[j]) + SKIP * coded[j + 1];

				if (v >= run) {
					run = v;
					runfrom = (int32_t)(j * 2 + h);
				}
			}
		}
	}
	/* Back from the last machine instruction, from the latest IR that
	 * scores best with what is left after it paid for. */
	{
		int32_t at = -1, top = INT32_MIN;

		for (uint32_t j = 0; j < n; j++)
			for (int h = 0; h < 2; h++) {
				int32_t v = cur[j * 2 + h] - SKIP * (coded[n] - coded[j + 1]) -
					    (h ? 0 : SKIP * hc[j]);

				if (v >= top) {
					top = v;
					at = (int32_t)(j * 2 + h);
				}
			}
		for (uint32_t k = nm; k-- > 0 && at >= 0;) {
			(*out)[k].irx = at / 2;
			at = from[((size_t)k * n + (uint32_t)(at / 2)) * 2 + at % 2];
		}
	}
	/* How much of the IR with code found its code. */
	for (uint32_t j = 0; j < n; j++) {
		int t = 0;

		if (!has_code(lj_ir_at(tv, first + j)))
			continue;
		ncoded++;
		for (uint32_t k = 0; k < nm && !t; k++)
			t = (*out)[k].irx == (int32_t)j &&
			    score(tv, &mcs[k], lj_ir_at(tv, first + j)) >= 2;
		tied += t;
	}
	err = ncoded && tied < MC_MIN_TIED * ncoded ? -1 : 0;
fail:
	free(mcs);
	free(from);
	free(prev);
	free(cur);
	free(coded);
	free(hc);
	return err;
}

/*
 * luajit_mcmatch.c - which IR instruction each machine instruction of a
 * trace's code was emitted for.
 *
 * LuaJIT's assembler (lj_asm.c, lj_asm_x86.h, lj_asm_arm64.h) walks the
 * IR backwards and emits each instruction's code downwards, so the code of
 * a stretch between two snapshots is its IR instructions' code in IR
 * order, each a short run: the instruction proper, and before it the
 * moves, reloads and constant loads its operands needed.  What is left in
 * the IR after assembly ties them: each instruction's register (IRIns.r),
 * and its kind.  A machine instruction is matched to an IR instruction by
 *
 *   - a branch out of the trace (to an exit stub or a side trace) to a
 *     guard; a compare before it, too;
 *   - the register it writes being the IR instruction's, more so when
 *     the operation is the IR's (mulsd or fmul for MUL);
 *   - a call to an IR instruction that calls (CALLN, MOD, POW, TNEW...);
 *   - a store to memory to a store.
 *
 * The match is the monotone assignment that scores best (dynamic
 * programming, as luajit_irmatch.c does); a machine instruction with no
 * tie goes with the IR instruction after it, whose operands it prepared.
 * Too few IR instructions with a tied machine instruction, and the
 * stretch is not matched at all.  What an instruction set's code says of
 * those ties (registers, branches, mnemonics) is its own file's:
 * luajit_mcmatch_x86.c, luajit_mcmatch_arm64.c (struct lj_mc_isa).
 */
#include <capstone/capstone.h>
#include <elf.h>
#include <stdlib.h>
#include <string.h>

#include "lib/grow.h"
#include "record/arch.h"
#include "record/luajit_place_priv.h"

#define MC_CELLS (1u << 21)  /* machine x IR instructions one stretch takes */
#define MC_MIN_TIED 0.6      /* share of IR with code that must be tied */
#define SKIP 3               /* the cost of IR with code left with none */

/* IR that may call a helper, on either instruction set. */
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

static int score(const struct lj_mc_isa *isa, const struct lj_trace_view *tv,
		 const struct lj_mc *m, struct lj_irins x)
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
	if (x.r < 64 && (m->wr >> x.r & 1))
		s += isa->same_op(m, x.o) ? 4 : 1;
	if (m->call)
		s += lj_ir_class[x.o] == LJ_IRC_CALL ? 4 : may_call(x.o) ? 3 : 0;
	if (m->store && lj_ir_class[x.o] == LJ_IRC_STORE)
		s += 2;
	for (int w = 0; w < 2 && s; w++) {
		uint32_t ref = w ? x.op2 : x.op1;

		if (ref > LJ_REF_BIAS && ref < tv->nins) {
			struct lj_irins y = lj_ir_at(tv, ref);

			if (y.r < 64 && (m->rd >> y.r & 1))
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
	return x.r < 64 || is_guard(x) || lj_ir_class[x.o] == LJ_IRC_STORE ||
	       lj_ir_class[x.o] == LJ_IRC_CALL;
}


/* The decoder of a trace's instruction set, kept with its state. */
struct lj_mcx {
	const struct lj_mc_isa *isa;
	csh h;
	cs_insn *in;
};

static const struct lj_mc_isa *isa_of(unsigned machine)
{
	switch (machine ? machine : LP_HOST_MACHINE) {
	case EM_X86_64:
		return &lj_mc_x86_64;
	case EM_AARCH64:
		return &lj_mc_arm64;
	}
	return NULL;
}

int lj_mcmatch_supports(unsigned machine)
{
	return isa_of(machine) != NULL;
}

static struct lj_mcx *mcx_get(struct lj_pstate *ps)
{
	const struct lj_mc_isa *isa = isa_of(ps->tv->machine);
	struct lj_mcx *x = ps->mcx;

	if (x && x->isa == isa)
		return x;
	lj_mcmatch_free(ps);
	if (!isa || !(x = calloc(1, sizeof(*x))))
		return NULL;
	x->isa = isa;
	if (cs_open(isa->arch, isa->mode, &x->h) != CS_ERR_OK) {
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
	struct lj_mcx *x = ps->mcx;

	if (!x)
		return;
	cs_free(x->in, 1);
	cs_close(&x->h);
	free(x);
	ps->mcx = NULL;
}

int lj_mc_starts(const char *s, const char *p)
{
	return !strncmp(s, p, strlen(p));
}

/* What matching needs of the instruction just decoded: its mnemonic and
 * the registers it reads and writes (capstone's), then what its
 * instruction set says of it. */
static void classify(const struct lj_mcx *x, const struct lj_trace_view *tv, struct lj_mc *m)
{
	cs_regs rd, wr;
	uint8_t nrd = 0, nwr = 0;

	memset(m, 0, sizeof(*m));
	memcpy(m->mn, x->in->mnemonic, sizeof(m->mn) - 1); /* NUL-padded, NUL-ended */
	if (cs_regs_access(x->h, x->in, rd, &nrd, wr, &nwr) == CS_ERR_OK) {
		for (int i = 0; i < nrd + nwr; i++) {
			int r = x->isa->rid_of(i < nrd ? rd[i] : wr[i - nrd]);

			if (r >= 0 && i < nrd)
				m->rd |= 1ull << r;
			else if (r >= 0)
				m->wr |= 1ull << r;
		}
	}
	x->isa->classify(x->in, tv, m);
}

int lj_mcmatch(struct lj_pstate *ps, uint32_t ofs, uint32_t end, uint32_t first,
	       uint32_t n, struct lj_mins **out, size_t *cap, uint32_t *nout)
{
	const struct lj_trace_view *tv = ps->tv;
	struct lj_mcx *x = mcx_get(ps);
	struct lj_mc *mcs = NULL;
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
			int32_t s = score(x->isa, tv, &mcs[k], lj_ir_at(tv, first + j));
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
			    score(x->isa, tv, &mcs[k], lj_ir_at(tv, first + j)) >= 2;
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

/*
 * unwind_cfa.c - runs one CFI entry's CFA program (the DW_CFA_ opcodes of a
 * CIE's initial instructions or of an FDE) and writes a row wherever one
 * of the three rules the BPF walker uses changes: the CFA, where the
 * caller's rbp was saved, where the return address is.  The expressions
 * compilers emit for x86_64 are matched here and turned into rules BPF can
 * run (unwind_table.c's opening comment says which and why).  "rsp" and
 * "rbp" are the instruction set's stack and frame pointers (struct
 * cfi_regs: sp and x29 on arm64).
 */
#include <errno.h>
#include <stdint.h>
#include <string.h>

#include "lib/grow.h"
#include "record/unwind_cfi.h"

static void set_rule(struct cfa_state *st, uint64_t ra_reg, uint64_t reg,
		     uint8_t rule, int64_t off)
{
	struct reg_state *r = reg == st->regs->fp ? &st->rbp :
			      reg == ra_reg ? &st->ra : NULL;

	if (r)
		*r = (struct reg_state){ .rule = rule, .off = off };
}

static void restore_rule(struct cfa_state *st, const struct cfa_state *init,
			 uint64_t ra_reg, uint64_t reg)
{
	if (reg == st->regs->fp)
		st->rbp = init->rbp;
	else if (reg == ra_reg)
		st->ra = init->ra;
}

/*
 * The .plt expression, CFA = rsp + 8 + ((rip & 15) >= N ? 8 : 0): a .plt
 * entry pushes one word at a fixed point of its 16 bytes.
 *
 *   77 08  80 00  3f  1a   3N  2a  33  24  22
 *   breg7 8  breg16 0  lit15 and  litN ge  lit3 shl plus
 */
static int match_plt(const uint8_t *e, size_t n, uint8_t *thr)
{
	static const uint8_t head[] = { 0x77, 0x08, 0x80, 0x00, 0x3f, 0x1a };
	static const uint8_t tail[] = { 0x2a, 0x33, 0x24, 0x22 };

	if (n != sizeof(head) + 1 + sizeof(tail) || memcmp(e, head, sizeof(head)) ||
	    memcmp(e + sizeof(head) + 1, tail, sizeof(tail)))
		return 0;
	if (e[sizeof(head)] < 0x30 || e[sizeof(head)] > 0x3f)
		return 0;
	*thr = e[sizeof(head)] - 0x30;
	return 1;
}

/* The expression forms a register or the CFA can be described by here:
 * DW_OP_bregN off [DW_OP_deref [DW_OP_plus_uconst add]]. */
struct breg_expr {
	uint8_t reg;
	int deref;
	int64_t off;
	uint64_t add;
};

static int match_breg(const struct cfi_regs *regs, const uint8_t *e, size_t n,
		      struct breg_expr *x)
{
	struct rd r = { e, e + n, 0 };
	uint8_t op = (uint8_t)rd_uN(&r, 1);

	if (op < DW_OP_breg0 || op >= DW_OP_breg0 + regs->gprs)
		return 0;
	x->reg = op - DW_OP_breg0;
	x->off = rd_sleb(&r);
	x->deref = 0;
	x->add = 0;
	if (r.p < r.end) {
		if (rd_uN(&r, 1) != DW_OP_deref)
			return 0;
		x->deref = 1;
	}
	if (r.p < r.end) {
		if (rd_uN(&r, 1) != DW_OP_plus_uconst)
			return 0;
		x->add = rd_uleb(&r);
	}
	return !r.bad && r.p == r.end;
}

/*
 * Where a register was saved, as words from the CFA (the row's rbp_off
 * unit): 1 and *words for "CFA + off", or for "register + off" when the
 * CFA is that register plus a known offset; 0 when it is neither.
 */
static int saved_words(const struct cfa_state *st, const struct reg_state *r,
		       int64_t *words)
{
	int64_t off = r->off;

	if (r->rule == RULE_EXPR_REG) {
		if (st->cfa_kind != CFA_REG || st->cfa_reg != r->base)
			return 0;
		off -= st->cfa_off; /* base + off = CFA - cfa_off + off */
	} else if (r->rule != RULE_OFFSET) {
		return 0;
	}
	if (off >= 0 || off < -1024 || off % 8)
		return 0;
	*words = off / 8;
	return 1;
}

/* The CFA rule as a row's type and offset; 0 if the walker cannot run it. */
static int cfa_rule(const struct cfa_state *st, struct lp_unwind_row *row,
		    struct unwind_table *t)
{
	switch (st->cfa_kind) {
	case CFA_PLT:
		row->cfa_type = LP_CFA_PLT;
		row->cfa_off = (uint16_t)st->cfa_off;
		t->plt_rows++;
		return 1;
	case CFA_REG:
		if (st->cfa_off < 0 || st->cfa_off > UINT16_MAX)
			return 0;
		row->cfa_off = (uint16_t)st->cfa_off;
		if (st->cfa_reg == st->regs->sp)
			row->cfa_type = LP_CFA_RSP;
		else if (st->cfa_reg == st->regs->fp)
			row->cfa_type = LP_CFA_RBP;
		else if (st->cfa_reg > 15) /* beyond the aux's 4 bits */
			return 0;
		else
			row->cfa_type = LP_CFA_TYPE(LP_CFA_REG, st->cfa_reg);
		return 1;
	case CFA_DEREF:
		if (st->cfa_reg != st->regs->sp && st->cfa_reg != st->regs->fp)
			return 0;
		if (st->cfa_off < INT16_MIN || st->cfa_off > INT16_MAX ||
		    st->cfa_add % 8 || st->cfa_add / 8 > 15)
			return 0;
		row->cfa_type = LP_CFA_TYPE(st->cfa_reg == st->regs->sp ? LP_CFA_DEREF_RSP :
					    LP_CFA_DEREF_RBP, st->cfa_add / 8);
		row->cfa_off = (uint16_t)(int16_t)st->cfa_off;
		t->deref_rows++;
		return 1;
	default:
		return 0;
	}
}

/* Was the register saved at byte `at` of the frame's base, an LP_CFA_RSP
 * row's sp (CFA - cfa_off)? */
static int at_frame_base(const struct cfa_state *st, const struct reg_state *r,
			 const struct lp_unwind_row *row, int64_t at)
{
	return LP_CFA_KIND(row->cfa_type) == LP_CFA_RSP && r->rule == RULE_OFFSET &&
	       r->off == at - (int64_t)row->cfa_off && st->cfa_kind == CFA_REG;
}

/* Words above an LP_CFA_RSP row's sp at which the register was saved,
 * below LP_RBP_AT_SP (a row's rbp_off holds them), or -1. */
static int64_t sp_words(const struct cfa_state *st, const struct reg_state *r,
			const struct lp_unwind_row *row)
{
	int64_t off;

	if (LP_CFA_KIND(row->cfa_type) != LP_CFA_RSP || r->rule != RULE_OFFSET ||
	    st->cfa_kind != CFA_REG)
		return -1;
	off = r->off + (int64_t)row->cfa_off;
	return off >= 0 && off % 8 == 0 && off / 8 < LP_RBP_AT_SP ? off / 8 : -1;
}

/*
 * Where the return address is, for an instruction set whose calls leave
 * it in the link register: the aux of an LP_CFA_RSP or LP_CFA_RBP row
 * (bpf/unwind_maps.h's LP_RA_*).  Still in the register; or saved beside
 * the frame pointer (stp x29, x30: the frame record); or within 13 words
 * under the CFA; or, in a frame that keeps the CFA from sp and leaves x29
 * alone, above sp by the words the row's rbp_off gives (GCC without
 * frame pointers saves x19.. at the frame's base and x30 above them).
 */
static struct lp_unwind_row ra_rule_link(const struct cfa_state *st, struct lp_unwind_row row,
					 struct unwind_table *t)
{
	int64_t words = 0, k;
	int near = saved_words(st, &st->ra, &words); /* within 128 words */
	unsigned int aux;

	if (LP_CFA_KIND(row.cfa_type) != LP_CFA_RSP && LP_CFA_KIND(row.cfa_type) != LP_CFA_RBP)
		goto unsupported;
	if (st->ra.rule == RULE_SAME)
		aux = LP_RA_LINK;
	else if (near && words == -1)
		aux = LP_RA_CFA_M8;
	else if ((near && row.rbp_off < 0 && words == row.rbp_off + 1) ||
		 (row.rbp_off == LP_RBP_AT_SP && at_frame_base(st, &st->ra, &row, 8)))
		aux = LP_RA_FRAME_RECORD;
	else if (near && words <= -2 && words >= -(LP_RA_SP - 1) - 1)
		aux = (unsigned int)(-words - 1);
	else if (row.rbp_off == 0 && (k = sp_words(st, &st->ra, &row)) >= 0) {
		aux = LP_RA_SP;
		row.rbp_off = (int8_t)k;
	} else {
		goto unsupported;
	}
	row.cfa_type = LP_CFA_TYPE(LP_CFA_KIND(row.cfa_type), aux);
	return row;
unsupported:
	row = (struct lp_unwind_row){ .cfa_type = LP_CFA_UNSUPPORTED };
	t->unsupported++;
	return row;
}

/* Converts the rules that hold from pc on into a row. */
struct lp_unwind_row make_row(const struct cfa_state *st,
			      struct unwind_table *t)
{
	struct lp_unwind_row row = { 0 };
	int64_t words;

	if (st->ra.rule == RULE_UNDEF) {
		row.cfa_type = LP_CFA_END;
		t->end_rows++;
		return row;
	}
	if (st->regs == &cfi_regs_x86_64 &&
	    st->cfa_kind == CFA_DEREF && st->cfa_reg == st->regs->sp &&
	    st->cfa_off == 160 && !st->cfa_add &&
	    st->rbp.rule == RULE_EXPR_REG && st->rbp.base == st->regs->sp && st->rbp.off == 120 &&
	    st->ra.rule == RULE_EXPR_REG && st->ra.base == st->regs->sp && st->ra.off == 168) {
		/* rsp -> ucontext_t; uc_mcontext.gregs at +40: REG_RBP (10)
		 * at +120, REG_RSP (15) at +160, REG_RIP (16) at +168. */
		row.cfa_type = LP_CFA_SIGNAL;
		t->signal_rows++;
		return row;
	}
	/* The return address is where the call left it, under the CFA
	 * (or, with a link register, as ra_rule_link() says). */
	if (!st->regs->link && (!saved_words(st, &st->ra, &words) || words != -1))
		goto unsupported;
	if (!cfa_rule(st, &row, t))
		goto unsupported;
	if (st->rbp.rule == RULE_SAME || st->rbp.rule == RULE_UNDEF)
		row.rbp_off = 0;
	else if (saved_words(st, &st->rbp, &words))
		row.rbp_off = (int8_t)words;
	else if (st->rbp.rule == RULE_EXPR_REG && st->rbp.base == st->regs->fp && !st->rbp.off)
		row.rbp_off = LP_RBP_AT_RBP;
	else if (st->regs->link && at_frame_base(st, &st->rbp, &row, 0))
		row.rbp_off = LP_RBP_AT_SP;
	else
		row.rbp_off = LP_RBP_UNKNOWN;
	return st->regs->link ? ra_rule_link(st, row, t) : row;
unsupported:
	row.cfa_type = LP_CFA_UNSUPPORTED;
	t->unsupported++;
	return row;
}

void push_row(struct builder *b, uint64_t pc, struct lp_unwind_row row)
{
	if (b->err)
		return;
	if (pc > UINT32_MAX) {
		b->err = -ERANGE;
		return;
	}
	if (GROW(b->v, b->cap, b->n + 1)) {
		b->err = -ENOMEM;
		return;
	}
	row.pc = (uint32_t)pc;
	b->v[b->n].pc = pc;
	b->v[b->n].seq = b->seq++;
	b->v[b->n].r = row;
	b->n++;
}

/* One run of CFA instructions: where it reads, the rules it changes, and
 * what DW_CFA_restore and DW_CFA_restore_state go back to. */
struct cfa_run {
	struct builder *b;
	const struct cie *cie;
	const struct cfi_sec *s;
	struct rd r;
	struct cfa_state *st;
	const struct cfa_state *init; /* DW_CFA_restore's rules */
	struct cfa_state stack[STATE_STACK]; /* DW_CFA_remember_state's */
	unsigned int depth;
	int emit; /* an FDE's: rows are pushed, expressions counted */
};

/* The advances: by how many code units the location moves (for
 * DW_CFA_set_loc, from loc to the address it names).  1 if op is one of
 * them, 0 if not, -EINVAL. */
static int cfa_advance(struct cfa_run *x, uint8_t op, uint64_t loc,
		       uint64_t *delta)
{
	const struct cie *cie = x->cie;
	uint64_t newloc;
	int unsup = 0;

	if ((op & 0xc0) == DW_CFA_advance_loc) {
		*delta = op & 0x3f;
		return 1;
	}
	switch (op) {
	case DW_CFA_set_loc:
		if (x->s->eh)
			newloc = rd_encoded(&x->r, cie->fde_enc, x->s, &unsup);
		else
			newloc = rd_uN(&x->r, cie->addr_size);
		if (unsup || newloc < loc)
			return -EINVAL;
		*delta = (newloc - loc) / (cie->code_align ? cie->code_align : 1);
		return 1;
	case DW_CFA_advance_loc1:
		*delta = rd_uN(&x->r, 1);
		return 1;
	case DW_CFA_advance_loc2:
		*delta = rd_uN(&x->r, 2);
		return 1;
	case DW_CFA_advance_loc4:
		*delta = rd_uN(&x->r, 4);
		return 1;
	default:
		return 0;
	}
}

/* The rules of a register saved at an offset, restored, undefined, the
 * same, or somewhere the walker never needs to look.  1 if op is one of
 * them, 0 if not. */
static int cfa_reg_rule(struct cfa_run *x, uint8_t op)
{
	const struct cie *cie = x->cie;
	struct cfa_state *st = x->st;
	struct rd *r = &x->r;
	uint64_t reg;
	int64_t off;

	switch (op & 0xc0) {
	case DW_CFA_offset:
		off = (int64_t)rd_uleb(r) * cie->data_align;
		set_rule(st, cie->ra_reg, op & 0x3f, RULE_OFFSET, off);
		return 1;
	case DW_CFA_restore:
		restore_rule(st, x->init, cie->ra_reg, op & 0x3f);
		return 1;
	}
	switch (op) {
	case DW_CFA_offset_extended:
		reg = rd_uleb(r);
		off = (int64_t)rd_uleb(r) * cie->data_align;
		set_rule(st, cie->ra_reg, reg, RULE_OFFSET, off);
		return 1;
	case DW_CFA_offset_extended_sf:
		reg = rd_uleb(r);
		off = rd_sleb(r) * cie->data_align;
		set_rule(st, cie->ra_reg, reg, RULE_OFFSET, off);
		return 1;
	case DW_CFA_GNU_negative_offset_extended:
		reg = rd_uleb(r);
		off = -(int64_t)rd_uleb(r) * cie->data_align;
		set_rule(st, cie->ra_reg, reg, RULE_OFFSET, off);
		return 1;
	case DW_CFA_restore_extended:
		restore_rule(st, x->init, cie->ra_reg, rd_uleb(r));
		return 1;
	case DW_CFA_undefined:
		set_rule(st, cie->ra_reg, rd_uleb(r), RULE_UNDEF, 0);
		return 1;
	case DW_CFA_same_value:
		set_rule(st, cie->ra_reg, rd_uleb(r), RULE_SAME, 0);
		return 1;
	case DW_CFA_register:
		reg = rd_uleb(r);
		rd_uleb(r);
		set_rule(st, cie->ra_reg, reg, RULE_OTHER, 0);
		return 1;
	case DW_CFA_val_offset:
	case DW_CFA_val_offset_sf:
		reg = rd_uleb(r);
		if (op == DW_CFA_val_offset)
			rd_uleb(r);
		else
			rd_sleb(r);
		set_rule(st, cie->ra_reg, reg, RULE_OTHER, 0);
		return 1;
	default:
		return 0;
	}
}

/* A register saved at the address an expression computes (or, val_,
 * holding its value): a known form becomes RULE_EXPR_REG, any other
 * RULE_OTHER, counted where the walker needs that register.  0 or
 * -EINVAL. */
static int cfa_reg_expr(struct cfa_run *x, uint8_t op)
{
	const struct cie *cie = x->cie;
	struct cfa_state *st = x->st;
	struct breg_expr e;
	uint64_t reg;
	size_t len;

	reg = rd_uleb(&x->r);
	len = rd_uleb(&x->r);
	if (!rd_need(&x->r, len))
		return -EINVAL;
	if (op == DW_CFA_expression && match_breg(st->regs, x->r.p, len, &e) && !e.deref) {
		set_rule(st, cie->ra_reg, reg, RULE_EXPR_REG, e.off);
		if (reg == st->regs->fp)
			st->rbp.base = e.reg;
		else if (reg == cie->ra_reg)
			st->ra.base = e.reg;
	} else {
		set_rule(st, cie->ra_reg, reg, RULE_OTHER, 0);
		if (x->emit && (reg == st->regs->fp || reg == cie->ra_reg))
			x->b->t->unsupported_exprs++;
	}
	x->r.p += len;
	return 0;
}

/* The CFA computed by an expression: the .plt's, "register + offset",
 * or a realigned frame's "register + offset, dereferenced, plus a
 * constant"; any other is CFA_EXPR, counted.  0 or -EINVAL. */
static int cfa_def_expr(struct cfa_run *x)
{
	struct cfa_state *st = x->st;
	struct breg_expr e;
	size_t len;
	uint8_t thr;

	len = rd_uleb(&x->r);
	if (!rd_need(&x->r, len))
		return -EINVAL;
	st->cfa_add = 0;
	if (match_plt(x->r.p, len, &thr)) {
		st->cfa_kind = CFA_PLT;
		st->cfa_off = thr;
	} else if (match_breg(st->regs, x->r.p, len, &e) && (e.deref || !e.add)) {
		st->cfa_kind = e.deref ? CFA_DEREF : CFA_REG;
		st->cfa_reg = e.reg;
		st->cfa_off = e.off;
		st->cfa_add = (int64_t)e.add;
	} else {
		st->cfa_kind = CFA_EXPR;
		if (x->emit)
			x->b->t->unsupported_exprs++;
	}
	x->r.p += len;
	return 0;
}

/* The CFA's rule, and everything else that is neither an advance nor a
 * register's rule.  1 if op is known, 0 if not, -EINVAL. */
static int cfa_other(struct cfa_run *x, uint8_t op)
{
	const struct cie *cie = x->cie;
	struct cfa_state *st = x->st;
	struct rd *r = &x->r;

	switch (op) {
	case DW_CFA_nop:
		return 1;
	case DW_CFA_GNU_args_size:
		rd_uleb(r);
		return 1;
	case DW_CFA_AARCH64_negate_ra_state:
		/* The return address saved from here on is signed (pointer
		 * authentication): the walker clears the signature's bits of
		 * every one it reads, so the rules stay the same. */
		return st->regs == &cfi_regs_aarch64;
	case DW_CFA_remember_state:
		if (x->depth == STATE_STACK)
			return -EINVAL;
		x->stack[x->depth++] = *st;
		return 1;
	case DW_CFA_restore_state:
		if (!x->depth)
			return -EINVAL;
		/* GCC's epilogues rely on the CFA coming back too,
		 * as libgcc's unwinder does it. */
		*st = x->stack[--x->depth];
		return 1;
	case DW_CFA_def_cfa:
		st->cfa_kind = CFA_REG;
		st->cfa_reg = rd_uleb(r);
		st->cfa_off = (int64_t)rd_uleb(r);
		return 1;
	case DW_CFA_def_cfa_sf:
		st->cfa_kind = CFA_REG;
		st->cfa_reg = rd_uleb(r);
		st->cfa_off = rd_sleb(r) * cie->data_align;
		return 1;
	case DW_CFA_def_cfa_register:
		st->cfa_reg = rd_uleb(r);
		if (st->cfa_kind != CFA_REG) /* no offset to keep */
			st->cfa_kind = CFA_EXPR;
		return 1;
	case DW_CFA_def_cfa_offset:
	case DW_CFA_def_cfa_offset_sf:
		st->cfa_off = op == DW_CFA_def_cfa_offset ? (int64_t)rd_uleb(r) :
			      rd_sleb(r) * cie->data_align;
		/* Only a register rule has an offset to change. */
		if (st->cfa_kind != CFA_REG)
			st->cfa_kind = CFA_EXPR;
		return 1;
	case DW_CFA_def_cfa_expression:
		return cfa_def_expr(x) ?: 1;
	case DW_CFA_expression:
	case DW_CFA_val_expression:
		return cfa_reg_expr(x, op) ?: 1;
	default:
		return 0; /* unknown opcode: its length too */
	}
}

/*
 * Runs CFA instructions [p, end).  For a CIE (emit == 0) this sets up
 * *st; for an FDE it pushes a row for [*loc, next loc) at every advance
 * and stops at end_pc.  Returns 0, or -EINVAL for malformed instructions.
 */
int run_cfa(struct builder *b, const struct cie *cie,
		   const struct cfi_sec *s, const uint8_t *p, const uint8_t *end,
		   struct cfa_state *st, int emit, uint64_t *loc, uint64_t end_pc)
{
	struct cfa_run x = { .b = b, .cie = cie, .s = s, .r = { p, end, 0 },
			     .st = st, .init = &cie->init, .emit = emit };
	struct cfa_state cie_init;

	if (!emit) {
		/* A CIE's restore refers to its own starting rules. */
		cie_init = *st;
		x.init = &cie_init;
	}
	while (x.r.p < x.r.end && !x.r.bad) {
		uint8_t op = (uint8_t)rd_uN(&x.r, 1);
		uint64_t delta = 0, next;
		int advance = cfa_advance(&x, op, *loc, &delta);

		if (advance < 0)
			return -EINVAL;
		if (!advance && (cfa_reg_rule(&x, op) ?: cfa_other(&x, op)) <= 0)
			return -EINVAL;
		if (!advance || !emit)
			continue;
		next = *loc + delta * cie->code_align;
		if (next > *loc) {
			push_row(b, *loc, make_row(st, b->t));
			*loc = next;
		}
		if (*loc >= end_pc)
			return 0;
	}
	return x.r.bad ? -EINVAL : 0;
}

/*
 * unwind_table.c - turns an ELF object's call frame information into the
 * compact rows the BPF walker searches (bpf/unwind.h).
 *
 * CFI is a program per function (an FDE, with a shared prologue in its
 * CIE) that, run from the function's first instruction, says after each
 * address advance where the CFA is and where each register was saved.
 * The walker needs only three of those rules on x86_64: the CFA (rsp or
 * rbp plus an offset), where the caller's rbp was saved, and that the
 * return address sits at CFA - 8.  So this file runs every FDE once,
 * writes a row at each address where one of those three changes, and
 * drops the rest (rbx, r12..r15 are never needed to find the next frame).
 *
 * It is its own .eh_frame reader rather than libdw's.  libdw could give
 * the same rows: dwarf_cfi_addrframe() at a row's first address and
 * dwarf_frame_info()'s end lead from row to row (its start is not to be
 * trusted after DW_CFA_restore_state: it is the remembered row's), and a
 * table built so from libc, libluajit, nginx and hyperscan was the same,
 * row for row (tests/unit/test_unwind_libdw.c keeps checking libc).  But
 * libdw runs an FDE's instructions from the top for every row, which made
 * the build 2 to 10 times slower (libc 38 ms against 3, nginx 17 against
 * 2, hyperscan 73 against 34), and the time to build tables is time a
 * process's first samples are cut; it would still have needed this
 * file's pointer decoding to find the FDEs (.eh_frame_hdr, or
 * .debug_frame, which has no index), and the expressions it hands over
 * need the same matching.  Everything read from the file is
 * bounds-checked: a malformed entry is counted and skipped, never
 * trusted.
 *
 * DWARF expressions are a stack machine the walker does not run; the
 * forms compilers emit for x86_64 are few and fixed, so they are matched
 * here and turned into rules BPF can run (bpf/unwind.h): the one every
 * lazy-binding .plt shares, the one glibc's signal trampoline
 * (__restore_rt) uses to find the interrupted registers in the
 * ucontext_t, and "register + offset, dereferenced, plus a constant",
 * which is how a realigned frame finds the stack pointer it saved (GCC's
 * DRAP, whose register rules are "saved at rbp + offset" too; OpenSSL's
 * assembly).  A register saved at an expression's address is brought back
 * to an offset from the CFA where it can be.  Any other expression makes
 * an LP_CFA_UNSUPPORTED row, where the walk stops, and is counted.
 */
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lib/grow.h"
#include "record/unwind_table.h"

/* DWARF register numbers, x86_64 psABI. */
#define DW_REG_RBP 6
#define DW_REG_RSP 7
#define DW_REG_RA 16

enum {
	DW_CFA_nop = 0x00,
	DW_CFA_set_loc = 0x01,
	DW_CFA_advance_loc1 = 0x02,
	DW_CFA_advance_loc2 = 0x03,
	DW_CFA_advance_loc4 = 0x04,
	DW_CFA_offset_extended = 0x05,
	DW_CFA_restore_extended = 0x06,
	DW_CFA_undefined = 0x07,
	DW_CFA_same_value = 0x08,
	DW_CFA_register = 0x09,
	DW_CFA_remember_state = 0x0a,
	DW_CFA_restore_state = 0x0b,
	DW_CFA_def_cfa = 0x0c,
	DW_CFA_def_cfa_register = 0x0d,
	DW_CFA_def_cfa_offset = 0x0e,
	DW_CFA_def_cfa_expression = 0x0f,
	DW_CFA_expression = 0x10,
	DW_CFA_offset_extended_sf = 0x11,
	DW_CFA_def_cfa_sf = 0x12,
	DW_CFA_def_cfa_offset_sf = 0x13,
	DW_CFA_val_offset = 0x14,
	DW_CFA_val_offset_sf = 0x15,
	DW_CFA_val_expression = 0x16,
	DW_CFA_GNU_args_size = 0x2e,
	DW_CFA_GNU_negative_offset_extended = 0x2f,
	/* High two bits carry the opcode, low six the operand. */
	DW_CFA_advance_loc = 0x40,
	DW_CFA_offset = 0x80,
	DW_CFA_restore = 0xc0,
};

/* Pointer encodings (.eh_frame's augmentation 'R', 'P', 'L'). */
enum {
	DW_EH_PE_absptr = 0x00,
	DW_EH_PE_uleb128 = 0x01,
	DW_EH_PE_udata2 = 0x02,
	DW_EH_PE_udata4 = 0x03,
	DW_EH_PE_udata8 = 0x04,
	DW_EH_PE_sleb128 = 0x09,
	DW_EH_PE_sdata2 = 0x0a,
	DW_EH_PE_sdata4 = 0x0b,
	DW_EH_PE_sdata8 = 0x0c,
	DW_EH_PE_pcrel = 0x10,
	DW_EH_PE_omit = 0xff,
};

#define DW_OP_deref 0x06
#define DW_OP_plus_uconst 0x23
#define DW_OP_breg0 0x70 /* DW_OP_bregN: register N + sleb */
#define DW_OP_breg15 0x7f

/* Deepest DW_CFA_remember_state nesting we follow; GCC uses one. */
#define STATE_STACK 16
/* CIEs kept parsed; libc has a handful. */
#define CIE_CACHE 32

/* ---- bounded reads ------------------------------------------------------ */

struct rd {
	const uint8_t *p, *end;
	int bad; /* set by any read past end: every later read returns 0 */
};

static int rd_need(struct rd *r, size_t n)
{
	if (r->bad || (size_t)(r->end - r->p) < n) {
		r->bad = 1;
		return 0;
	}
	return 1;
}

static uint64_t rd_uN(struct rd *r, size_t n)
{
	uint64_t v = 0;

	if (!rd_need(r, n))
		return 0;
	/* Little-endian file (checked in build_elf) on a little-endian host. */
	memcpy(&v, r->p, n);
	r->p += n;
	return v;
}

/* The bits of a LEB128 number, and where its last byte left them: the
 * unsigned and signed readers differ only in what follows. */
static uint64_t rd_leb(struct rd *r, unsigned int *shift, uint8_t *last)
{
	uint64_t v = 0;
	uint8_t b = 0;

	*shift = 0;
	do {
		if (!rd_need(r, 1))
			break;
		b = *r->p++;
		if (*shift < 64)
			v |= (uint64_t)(b & 0x7f) << *shift;
		*shift += 7;
	} while (b & 0x80);
	*last = b;
	return r->bad ? 0 : v;
}

static uint64_t rd_uleb(struct rd *r)
{
	unsigned int shift;
	uint8_t last;

	return rd_leb(r, &shift, &last);
}

static int64_t rd_sleb(struct rd *r)
{
	unsigned int shift;
	uint8_t last;
	uint64_t v = rd_leb(r, &shift, &last);

	if (shift < 64 && (last & 0x40))
		v |= ~0ull << shift; /* sign-extend */
	return (int64_t)v;
}

/* A CFI section as the object maps it: pc-relative pointers are relative
 * to the vaddr of the field that holds them. */
struct cfi_sec {
	const uint8_t *data;
	size_t size;
	uint64_t vaddr;
	int eh; /* .eh_frame (1) or .debug_frame (0) */
};

/*
 * Reads a pointer in encoding enc.  Only absolute and pc-relative values
 * can be computed without more of the object; *unsupported is set for the
 * others, whose bytes are still consumed so the caller can go on when it
 * does not need the value (a personality routine's address).
 */
static uint64_t rd_encoded(struct rd *r, uint8_t enc, const struct cfi_sec *s,
			   int *unsupported)
{
	uint64_t field = s->vaddr + (uint64_t)(r->p - s->data), v;

	if (enc == DW_EH_PE_omit)
		return 0;
	switch (enc & 0x0f) {
	case DW_EH_PE_absptr:
	case DW_EH_PE_udata8:
	case DW_EH_PE_sdata8:
		v = rd_uN(r, 8);
		break;
	case DW_EH_PE_uleb128:
		v = rd_uleb(r);
		break;
	case DW_EH_PE_sleb128:
		v = (uint64_t)rd_sleb(r);
		break;
	case DW_EH_PE_udata2:
		v = rd_uN(r, 2);
		break;
	case DW_EH_PE_sdata2:
		v = (uint64_t)(int64_t)(int16_t)rd_uN(r, 2);
		break;
	case DW_EH_PE_udata4:
		v = rd_uN(r, 4);
		break;
	case DW_EH_PE_sdata4:
		v = (uint64_t)(int64_t)(int32_t)rd_uN(r, 4);
		break;
	default:
		r->bad = 1; /* size unknown: nothing after it can be read */
		return 0;
	}
	switch (enc & 0x70) {
	case 0:
		break;
	case DW_EH_PE_pcrel:
		v += field;
		break;
	default: /* textrel, datarel, funcrel, aligned */
		*unsupported = 1;
		break;
	}
	return v;
}

/* ---- the CFA program ---------------------------------------------------- */

enum cfa_kind {
	CFA_REG,   /* register + offset */
	CFA_PLT,   /* the .plt expression; off = threshold */
	CFA_DEREF, /* *(register + off) + add */
	CFA_EXPR,  /* any other expression */
};

enum reg_rule {
	RULE_SAME,     /* unchanged (callee-saved default) */
	RULE_OFFSET,   /* saved at CFA + off */
	RULE_UNDEF,    /* undefined: for the RA, the outermost frame */
	RULE_EXPR_REG, /* saved at register base + off (DW_OP_bregN off) */
	RULE_OTHER,    /* in a register, val_*, or another expression */
};

/* The rules of one register the walker needs (rbp, the return address). */
struct reg_state {
	uint8_t rule; /* enum reg_rule */
	uint8_t base; /* RULE_EXPR_REG: the DWARF register */
	int64_t off;
};

struct cfa_state {
	uint8_t cfa_kind;
	uint64_t cfa_reg;
	int64_t cfa_off, cfa_add; /* cfa_add: CFA_DEREF's constant */
	struct reg_state rbp, ra;
};

struct cie {
	size_t off; /* section offset: the cache key */
	uint8_t fde_enc;
	uint8_t addr_size; /* .debug_frame addresses */
	uint8_t has_z;
	uint64_t code_align;
	int64_t data_align;
	uint64_t ra_reg;
	struct cfa_state init; /* after the initial instructions */
};

/* A row as collected, before sorting: seq keeps FDE order among equals. */
struct build_row {
	uint64_t pc;
	uint32_t seq;
	struct lp_unwind_row r;
};

/* Addresses an .eh_frame FDE describes; .debug_frame fills the rest. */
struct range {
	uint64_t lo, hi;
};

struct builder {
	struct build_row *v;
	size_t n, cap;
	uint32_t seq;
	int err; /* -ENOMEM or -ERANGE: the table cannot be built */
	struct unwind_table *t;
	struct cie cies[CIE_CACHE];
	unsigned int ncies, next_cie;
	struct range *ranges; /* of .eh_frame's FDEs, sorted after that pass */
	size_t nranges, capranges;
	int fill_in; /* this pass only covers what earlier ones did not */
};

static void set_rule(struct cfa_state *st, uint64_t ra_reg, uint64_t reg,
		     uint8_t rule, int64_t off)
{
	struct reg_state *r = reg == DW_REG_RBP ? &st->rbp :
			      reg == ra_reg ? &st->ra : NULL;

	if (r)
		*r = (struct reg_state){ .rule = rule, .off = off };
}

static void restore_rule(struct cfa_state *st, const struct cfa_state *init,
			 uint64_t ra_reg, uint64_t reg)
{
	if (reg == DW_REG_RBP)
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

static int match_breg(const uint8_t *e, size_t n, struct breg_expr *x)
{
	struct rd r = { e, e + n, 0 };
	uint8_t op = (uint8_t)rd_uN(&r, 1);

	if (op < DW_OP_breg0 || op > DW_OP_breg15)
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
		if (st->cfa_off < 0 || st->cfa_off > UINT16_MAX || st->cfa_reg > 15)
			return 0;
		row->cfa_off = (uint16_t)st->cfa_off;
		if (st->cfa_reg == DW_REG_RSP)
			row->cfa_type = LP_CFA_RSP;
		else if (st->cfa_reg == DW_REG_RBP)
			row->cfa_type = LP_CFA_RBP;
		else
			row->cfa_type = LP_CFA_TYPE(LP_CFA_REG, st->cfa_reg);
		return 1;
	case CFA_DEREF:
		if (st->cfa_reg != DW_REG_RSP && st->cfa_reg != DW_REG_RBP)
			return 0;
		if (st->cfa_off < INT16_MIN || st->cfa_off > INT16_MAX ||
		    st->cfa_add % 8 || st->cfa_add / 8 > 15)
			return 0;
		row->cfa_type = LP_CFA_TYPE(st->cfa_reg == DW_REG_RSP ? LP_CFA_DEREF_RSP :
					    LP_CFA_DEREF_RBP, st->cfa_add / 8);
		row->cfa_off = (uint16_t)(int16_t)st->cfa_off;
		t->deref_rows++;
		return 1;
	default:
		return 0;
	}
}

/* Converts the rules that hold from pc on into a row. */
static struct lp_unwind_row make_row(const struct cfa_state *st,
				     struct unwind_table *t)
{
	struct lp_unwind_row row = { 0 };
	int64_t words;

	if (st->ra.rule == RULE_UNDEF) {
		row.cfa_type = LP_CFA_END;
		t->end_rows++;
		return row;
	}
	if (st->cfa_kind == CFA_DEREF && st->cfa_reg == DW_REG_RSP &&
	    st->cfa_off == 160 && !st->cfa_add &&
	    st->rbp.rule == RULE_EXPR_REG && st->rbp.base == DW_REG_RSP && st->rbp.off == 120 &&
	    st->ra.rule == RULE_EXPR_REG && st->ra.base == DW_REG_RSP && st->ra.off == 168) {
		/* rsp -> ucontext_t; uc_mcontext.gregs at +40: REG_RBP (10)
		 * at +120, REG_RSP (15) at +160, REG_RIP (16) at +168. */
		row.cfa_type = LP_CFA_SIGNAL;
		t->signal_rows++;
		return row;
	}
	/* The return address is where the call left it, under the CFA. */
	if (!saved_words(st, &st->ra, &words) || words != -1 || !cfa_rule(st, &row, t))
		goto unsupported;
	if (st->rbp.rule == RULE_SAME || st->rbp.rule == RULE_UNDEF)
		row.rbp_off = 0;
	else if (saved_words(st, &st->rbp, &words))
		row.rbp_off = (int8_t)words;
	else if (st->rbp.rule == RULE_EXPR_REG && st->rbp.base == DW_REG_RBP && !st->rbp.off)
		row.rbp_off = LP_RBP_AT_RBP;
	else
		row.rbp_off = LP_RBP_UNKNOWN;
	return row;
unsupported:
	row.cfa_type = LP_CFA_UNSUPPORTED;
	t->unsupported++;
	return row;
}

static void push_row(struct builder *b, uint64_t pc, struct lp_unwind_row row)
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
	if (op == DW_CFA_expression && match_breg(x->r.p, len, &e) && !e.deref) {
		set_rule(st, cie->ra_reg, reg, RULE_EXPR_REG, e.off);
		if (reg == DW_REG_RBP)
			st->rbp.base = e.reg;
		else if (reg == cie->ra_reg)
			st->ra.base = e.reg;
	} else {
		set_rule(st, cie->ra_reg, reg, RULE_OTHER, 0);
		if (x->emit && (reg == DW_REG_RBP || reg == cie->ra_reg))
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
	} else if (match_breg(x->r.p, len, &e) && (e.deref || !e.add)) {
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
static int run_cfa(struct builder *b, const struct cie *cie,
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

/* ---- CIEs and FDEs ------------------------------------------------------ */

/* One entry's framing: length, CIE id or pointer, body. */
struct entry {
	size_t off;              /* of the length field */
	const uint8_t *body;     /* after the id field */
	const uint8_t *end;      /* of the entry */
	int is_cie;
	size_t cie_off;          /* FDE: its CIE's section offset */
};

/* Returns 1 and the entry at off, 0 at the end, -EINVAL if malformed. */
static int read_entry(const struct cfi_sec *s, size_t off, struct entry *e)
{
	struct rd r = { s->data + off, s->data + s->size, 0 };
	uint64_t len, id;
	size_t id_off;
	int dwarf64 = 0;

	if (off >= s->size)
		return 0;
	len = rd_uN(&r, 4);
	if (len == 0xffffffffu) {
		len = rd_uN(&r, 8);
		dwarf64 = 1;
	}
	if (r.bad)
		return -EINVAL;
	if (len == 0)
		return s->eh ? 0 : -EINVAL; /* .eh_frame's terminator */
	if (len > (uint64_t)(r.end - r.p))
		return -EINVAL;
	e->off = off;
	e->end = r.p + len;
	id_off = (size_t)(r.p - s->data);
	r.end = e->end;
	id = rd_uN(&r, dwarf64 ? 8 : 4);
	if (r.bad)
		return -EINVAL;
	e->body = r.p;
	if (s->eh) {
		e->is_cie = id == 0;
		if (!e->is_cie && id > id_off)
			return -EINVAL;
		e->cie_off = id_off - (size_t)id;
	} else {
		e->is_cie = id == (dwarf64 ? ~0ull : 0xffffffffull);
		e->cie_off = (size_t)id;
	}
	return 1;
}

static int parse_cie(struct builder *b, const struct cfi_sec *s, size_t off,
		     struct cie *c)
{
	struct entry e;
	struct rd r;
	const char *aug;
	int version, unsup = 0;
	uint64_t loc = 0;

	if (read_entry(s, off, &e) != 1 || !e.is_cie)
		return -EINVAL;
	memset(c, 0, sizeof(*c));
	c->off = off;
	c->fde_enc = DW_EH_PE_absptr;
	c->addr_size = 8;
	r = (struct rd){ e.body, e.end, 0 };
	version = (int)rd_uN(&r, 1);
	if (version != 1 && version != 3 && version != 4)
		return -EINVAL;
	aug = (const char *)r.p;
	while (rd_need(&r, 1) && *r.p)
		r.p++;
	rd_uN(&r, 1); /* the NUL */
	if (version == 4) {
		c->addr_size = (uint8_t)rd_uN(&r, 1);
		rd_uN(&r, 1); /* segment selector size */
		if (c->addr_size != 8)
			return -EINVAL;
	}
	c->code_align = rd_uleb(&r);
	c->data_align = rd_sleb(&r);
	c->ra_reg = version == 1 ? rd_uN(&r, 1) : rd_uleb(&r);
	if (aug[0] == 'z') {
		uint64_t alen = rd_uleb(&r);
		const uint8_t *aend;

		if (!rd_need(&r, alen))
			return -EINVAL;
		aend = r.p + alen;
		c->has_z = 1;
		for (const char *a = aug + 1; *a && r.p < aend; a++) {
			if (*a == 'R')
				c->fde_enc = (uint8_t)rd_uN(&r, 1);
			else if (*a == 'L')
				rd_uN(&r, 1);
			else if (*a == 'P')
				rd_encoded(&r, (uint8_t)rd_uN(&r, 1), s, &unsup);
			else if (*a != 'S')
				break; /* unknown: the length lets us skip the rest */
		}
		r.p = aend;
	} else if (aug[0]) {
		return -EINVAL; /* "eh" and other pre-'z' forms: no sizes */
	}
	if (r.bad || !c->code_align)
		return -EINVAL;
	/* Before any instruction: CFA undefined, every register unchanged;
	 * the CIE's own program sets CFA = rsp + 8 and RA at CFA - 8. */
	c->init = (struct cfa_state){ .cfa_kind = CFA_EXPR,
				      .rbp = { .rule = RULE_SAME },
				      .ra = { .rule = RULE_OTHER } };
	return run_cfa(b, c, s, r.p, e.end, &c->init, 0, &loc, 0);
}

static const struct cie *get_cie(struct builder *b, const struct cfi_sec *s,
				 size_t off)
{
	struct cie *c;

	for (unsigned int i = 0; i < b->ncies; i++)
		if (b->cies[i].off == off)
			return &b->cies[i];
	c = &b->cies[b->next_cie];
	if (parse_cie(b, s, off, c)) {
		c->off = (size_t)-1;
		return NULL;
	}
	b->next_cie = (b->next_cie + 1) % CIE_CACHE;
	if (b->ncies < CIE_CACHE)
		b->ncies++;
	return c;
}

static void note_range(struct builder *b, uint64_t lo, uint64_t hi)
{
	if (GROW(b->ranges, b->capranges, b->nranges + 1)) {
		b->err = -ENOMEM;
		return;
	}
	b->ranges[b->nranges++] = (struct range){ lo, hi };
}

static int range_cmp(const void *pa, const void *pb)
{
	const struct range *a = pa, *b = pb;

	return a->lo < b->lo ? -1 : a->lo > b->lo;
}

/* Does an earlier pass describe any of [lo, hi)? */
static int covered(const struct builder *b, uint64_t lo, uint64_t hi)
{
	size_t l = 0, h = b->nranges;

	/* The last range starting below hi is the only one that can reach
	 * into [lo, hi): FDEs do not nest. */
	while (l < h) {
		size_t mid = l + (h - l) / 2;

		if (b->ranges[mid].lo < hi)
			l = mid + 1;
		else
			h = mid;
	}
	return l && b->ranges[l - 1].hi > lo;
}

static int parse_fde(struct builder *b, const struct cfi_sec *s,
		     const struct entry *e)
{
	const struct cie *c = get_cie(b, s, e->cie_off);
	struct rd r = { e->body, e->end, 0 };
	struct cfa_state st;
	uint64_t begin, range, loc;
	int unsup = 0, err;

	if (!c)
		return -EINVAL;
	if (s->eh) {
		begin = rd_encoded(&r, c->fde_enc, s, &unsup);
		/* The range has the pointer's size but is never relative. */
		range = rd_encoded(&r, c->fde_enc & 0x0f, s, &unsup);
	} else {
		begin = rd_uN(&r, c->addr_size);
		range = rd_uN(&r, c->addr_size);
	}
	if (c->has_z) {
		uint64_t alen = rd_uleb(&r);

		if (rd_need(&r, alen))
			r.p += alen;
	}
	if (r.bad || unsup)
		return -EINVAL;
	/* Empty, or discarded by the linker (address 0 in .debug_frame). */
	if (!range || (!s->eh && !begin) || begin + range < begin)
		return 0;
	if (b->fill_in && covered(b, begin, begin + range))
		return 0;
	if (!b->fill_in)
		note_range(b, begin, begin + range);
	st = c->init;
	loc = begin;
	err = run_cfa(b, c, s, r.p, e->end, &st, 1, &loc, begin + range);
	if (err)
		return err;
	if (loc < begin + range)
		push_row(b, loc, make_row(&st, b->t));
	/* Past the function, nothing is known until another FDE says so. */
	push_row(b, begin + range, (struct lp_unwind_row){ .cfa_type = LP_CFA_GAP });
	b->t->fdes++;
	return 0;
}

static void parse_section(struct builder *b, const struct cfi_sec *s)
{
	size_t off = 0;
	struct entry e;
	int r = 0; /* stays 0 if b->err ends the loop before a read */

	/* CIEs are cached by offset, which means nothing in another section. */
	b->ncies = 0;
	b->next_cie = 0;
	while (!b->err && (r = read_entry(s, off, &e)) == 1) {
		if (!e.is_cie && parse_fde(b, s, &e))
			b->t->bad_entries++;
		off = (size_t)(e.end - s->data);
	}
	if (r < 0)
		b->t->bad_entries++; /* framing lost: nothing after it is read */
}

static int build_row_cmp(const void *pa, const void *pb)
{
	const struct build_row *a = pa, *b = pb;
	int ga = a->r.cfa_type == LP_CFA_GAP, gb = b->r.cfa_type == LP_CFA_GAP;

	if (a->pc != b->pc)
		return a->pc < b->pc ? -1 : 1;
	/* At one pc a function's first row wins over the previous one's end. */
	if (ga != gb)
		return gb - ga;
	return a->seq < b->seq ? -1 : a->seq > b->seq;
}

static int same_rule(const struct lp_unwind_row *a, const struct lp_unwind_row *b)
{
	return a->cfa_type == b->cfa_type && a->cfa_off == b->cfa_off &&
	       a->rbp_off == b->rbp_off;
}

/* Sorts the rows, keeps the last row at each pc, and drops rows that
 * repeat the rule before them. */
static int finish_rows(struct builder *b)
{
	struct unwind_table *t = b->t;
	size_t n = 0;

	if (b->err)
		return b->err;
	if (b->n) /* qsort(NULL, 0, ...) is undefined behaviour */
		qsort(b->v, b->n, sizeof(*b->v), build_row_cmp);
	t->rows = malloc((b->n ? b->n : 1) * sizeof(*t->rows));
	if (!t->rows)
		return -ENOMEM;
	for (size_t i = 0; i < b->n; i++) {
		const struct lp_unwind_row *r = &b->v[i].r;

		if (i + 1 < b->n && b->v[i + 1].pc == b->v[i].pc)
			continue;
		if (n ? same_rule(&t->rows[n - 1], r) : r->cfa_type == LP_CFA_GAP)
			continue;
		t->rows[n++] = *r;
	}
	t->nrows = (uint32_t)n;
	return 0;
}

/*
 * The entry point is the outermost frame of the process's first thread.
 * An executable's _start says so in its CFI (return address undefined),
 * but the dynamic loader's has no FDE at all, so a walk would stop there
 * as in any code without CFI, cut.  An entry point that no FDE covers gets
 * an LP_CFA_END row of its own, up to the next row.
 */
static int mark_entry(struct unwind_table *t, uint64_t entry)
{
	const struct lp_unwind_row *r = unwind_table_lookup(t, entry);
	struct lp_unwind_row *v;
	uint32_t i;

	if (!entry || entry > UINT32_MAX || (r && r->cfa_type != LP_CFA_GAP) ||
	    (r && r->pc == entry))
		return 0;
	i = r ? (uint32_t)(r - t->rows) + 1 : 0;
	if (i < t->nrows && t->rows[i].cfa_type == LP_CFA_END) {
		/* The next row ends stacks too: it starts at the entry. */
		t->rows[i].pc = (uint32_t)entry;
		t->end_rows++;
		return 0;
	}
	v = realloc(t->rows, (t->nrows + 1) * sizeof(*v));
	if (!v)
		return -ENOMEM;
	t->rows = v;
	memmove(v + i + 1, v + i, (t->nrows - i) * sizeof(*v));
	v[i] = (struct lp_unwind_row){ .pc = (uint32_t)entry, .cfa_type = LP_CFA_END };
	t->nrows++;
	t->end_rows++;
	return 0;
}

/* ---- ELF ------------------------------------------------------------------ */

/* Where vaddr's bytes are in the file image, and how many follow. */
static const uint8_t *vaddr_bytes(const struct unwind_table *t,
				  const uint8_t *image, size_t isize,
				  uint64_t vaddr, size_t *avail)
{
	for (uint32_t i = 0; i < t->nsegs; i++) {
		const struct unwind_seg *g = &t->segs[i];
		uint64_t off;

		if (vaddr < g->vaddr || vaddr - g->vaddr >= g->filesz)
			continue;
		off = g->offset + (vaddr - g->vaddr);
		if (off >= isize || g->offset + g->filesz > isize)
			return NULL;
		*avail = (size_t)(g->offset + g->filesz - off);
		return image + off;
	}
	return NULL;
}

/*
 * Without section headers, PT_GNU_EH_FRAME points at .eh_frame_hdr, whose
 * second field points at .eh_frame.  Its size is unknown: it runs to the
 * terminator, bounded by the end of its segment.
 *
 *   .eh_frame_hdr: u8 version  u8 eh_frame_ptr_enc  u8 fde_count_enc
 *                  u8 table_enc  eh_frame_ptr ...
 */
static int find_eh_frame_phdr(Elf *elf, const struct unwind_table *t,
			      const GElf_Phdr *hdr, struct cfi_sec *s)
{
	size_t isize, avail;
	const uint8_t *image = (const uint8_t *)elf_rawfile(elf, &isize);
	const uint8_t *h;
	struct cfi_sec hs;
	struct rd r;
	int unsup = 0;
	uint8_t enc;

	if (!image)
		return -ENOENT;
	h = vaddr_bytes(t, image, isize, hdr->p_vaddr, &avail);
	if (!h || avail < 4 || h[0] != 1)
		return -ENOENT;
	hs = (struct cfi_sec){ h, avail, hdr->p_vaddr, 1 };
	r = (struct rd){ h + 4, h + avail, 0 };
	enc = h[1];
	s->vaddr = rd_encoded(&r, enc, &hs, &unsup);
	if (r.bad || unsup)
		return -ENOENT;
	s->data = vaddr_bytes(t, image, isize, s->vaddr, &s->size);
	s->eh = 1;
	return s->data ? 0 : -ENOENT;
}

static int section_data(Elf_Scn *scn, const GElf_Shdr *sh, struct cfi_sec *s,
			int eh)
{
	Elf_Data *d;

	if (sh->sh_type == SHT_NOBITS)
		return -ENOENT;
	if ((sh->sh_flags & SHF_COMPRESSED) && elf_compress(scn, 0, 0) < 0)
		return -ENOENT;
	d = elf_getdata(scn, NULL);
	if (!d || !d->d_buf || !d->d_size)
		return -ENOENT;
	*s = (struct cfi_sec){ d->d_buf, d->d_size, sh->sh_addr, eh };
	return 0;
}

static int build_elf(Elf *elf, struct unwind_table *t)
{
	struct builder b = { .t = t };
	struct cfi_sec eh = { 0 }, dbg = { 0 };
	GElf_Phdr eh_hdr = { .p_type = PT_NULL };
	size_t nph, shstrndx;
	GElf_Ehdr ehdr;
	Elf_Scn *scn = NULL;
	int err = 0;

	memset(t, 0, sizeof(*t));
	if (elf_kind(elf) != ELF_K_ELF || !gelf_getehdr(elf, &ehdr) ||
	    ehdr.e_ident[EI_CLASS] != ELFCLASS64 ||
	    ehdr.e_ident[EI_DATA] != ELFDATA2LSB || ehdr.e_machine != EM_X86_64)
		return -ENOEXEC;
	if (elf_getphdrnum(elf, &nph))
		return -ENOEXEC;
	t->segs = calloc(nph ? nph : 1, sizeof(*t->segs));
	if (!t->segs)
		return -ENOMEM;
	for (size_t i = 0; i < nph; i++) {
		GElf_Phdr ph;

		if (!gelf_getphdr(elf, (int)i, &ph))
			continue;
		if (ph.p_type == PT_GNU_EH_FRAME)
			eh_hdr = ph;
		if (ph.p_type != PT_LOAD)
			continue;
		t->segs[t->nsegs++] = (struct unwind_seg){ ph.p_offset, ph.p_vaddr,
							   ph.p_filesz, ph.p_flags };
	}
	if (!elf_getshdrstrndx(elf, &shstrndx)) {
		while ((scn = elf_nextscn(elf, scn))) {
			GElf_Shdr sh;
			const char *name;

			if (!gelf_getshdr(scn, &sh))
				continue;
			name = elf_strptr(elf, shstrndx, sh.sh_name);
			if (!name)
				continue;
			if (!strcmp(name, ".eh_frame"))
				section_data(scn, &sh, &eh, 1);
			else if (!strcmp(name, ".debug_frame"))
				section_data(scn, &sh, &dbg, 0);
		}
	}
	if (!eh.data && eh_hdr.p_type == PT_GNU_EH_FRAME)
		find_eh_frame_phdr(elf, t, &eh_hdr, &eh);
	if (eh.data) {
		parse_section(&b, &eh);
		if (b.n)
			t->source |= UNWIND_SRC_EH_FRAME;
	}
	/* .debug_frame describes what .eh_frame does not: all of an object
	 * built with -fno-asynchronous-unwind-tables -g, whose .eh_frame
	 * holds only the C runtime's start-up code. */
	if (dbg.data && !b.err) {
		size_t before = b.n;

		if (b.nranges)
			qsort(b.ranges, b.nranges, sizeof(*b.ranges), range_cmp);
		b.fill_in = 1;
		parse_section(&b, &dbg);
		if (b.n > before)
			t->source |= UNWIND_SRC_DEBUG_FRAME;
	}
	err = finish_rows(&b);
	if (!err && t->nrows)
		err = mark_entry(t, ehdr.e_entry);
	free(b.v);
	free(b.ranges);
	if (err)
		unwind_table_free(t);
	return err;
}

static int libelf_ready(void)
{
	static int ready;

	if (!ready && elf_version(EV_CURRENT) != EV_NONE)
		ready = 1;
	return ready ? 0 : -ENOSYS;
}

int unwind_table_build_fd(int fd, struct unwind_table *t)
{
	Elf *elf;
	int err = libelf_ready();

	if (err)
		return err;
	elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	if (!elf)
		return -ENOEXEC;
	err = build_elf(elf, t);
	elf_end(elf);
	return err;
}

int unwind_table_build_path(const char *path, struct unwind_table *t)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC), err;

	if (fd < 0)
		return -errno;
	err = unwind_table_build_fd(fd, t);
	close(fd);
	return err;
}

int unwind_table_build_mem(const void *image, size_t size,
			   struct unwind_table *t)
{
	Elf *elf;
	int err = libelf_ready();

	if (err)
		return err;
	/* libelf may write to the image it is given (it does not here:
	 * read-only use), hence the cast. */
	elf = elf_memory((char *)image, size);
	if (!elf)
		return -ENOEXEC;
	err = build_elf(elf, t);
	elf_end(elf);
	return err;
}

const struct lp_unwind_row *unwind_table_lookup(const struct unwind_table *t,
						uint64_t vaddr)
{
	uint32_t lo = 0, hi = t->nrows;

	/* The last row whose pc <= vaddr. */
	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;

		if (t->rows[mid].pc <= vaddr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo ? &t->rows[lo - 1] : NULL;
}

int unwind_table_vaddr_delta(const struct unwind_table *t, uint64_t pgoff,
			     int64_t *d)
{
	/* Executable segments first: a page can hold the end of one segment
	 * and the start of the next. */
	for (int pass = 0; pass < 2; pass++) {
		for (uint32_t i = 0; i < t->nsegs; i++) {
			const struct unwind_seg *g = &t->segs[i];
			uint64_t page = g->offset & ~4095ull;

			if (!pass && !(g->flags & PF_X))
				continue;
			if (pgoff < page || pgoff >= g->offset + g->filesz)
				continue;
			*d = (int64_t)(g->vaddr - g->offset);
			return 0;
		}
	}
	return -ENOENT;
}

void unwind_table_free(struct unwind_table *t)
{
	free(t->rows);
	free(t->segs);
	memset(t, 0, sizeof(*t));
}

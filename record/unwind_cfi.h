/*
 * unwind_cfi.h - what the two halves of the CFI reader share
 * (unwind_table.c reads .eh_frame and .debug_frame entries and builds the
 * table; unwind_cfa.c runs each entry's CFA program into rows): the DWARF
 * constants, bounded reads, and the CIE, rule and builder structs.
 * Private to those two files; the rest of record/ sees unwind_table.h.
 */
#ifndef LUAPROF_RECORD_UNWIND_CFI_H
#define LUAPROF_RECORD_UNWIND_CFI_H

#include <stddef.h>
#include <stdint.h>

#include "record/unwind_table.h"

/*
 * An instruction set's DWARF register numbers: the stack pointer and
 * frame pointer (the rows' "rsp" and "rbp"), how many general registers
 * a breg can name, and how a frame's return address starts out: at
 * CFA - 8 where a call pushes it (x86_64: its CIE says so), in the link
 * register where a call leaves it there (AArch64: no CIE rule for x30).
 */
struct cfi_regs {
	uint16_t machine; /* e_machine */
	uint8_t sp, fp;
	uint8_t gprs;
	uint8_t link; /* 1: calls leave the return address in a register */
};
extern const struct cfi_regs cfi_regs_x86_64, cfi_regs_aarch64;

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
	DW_CFA_AARCH64_negate_ra_state = 0x2d, /* x86: GNU_window_save */
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

static inline int rd_need(struct rd *r, size_t n)
{
	if (r->bad || (size_t)(r->end - r->p) < n) {
		r->bad = 1;
		return 0;
	}
	return 1;
}

static inline uint64_t rd_uN(struct rd *r, size_t n)
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
static inline uint64_t rd_leb(struct rd *r, unsigned int *shift, uint8_t *last)
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

static inline uint64_t rd_uleb(struct rd *r)
{
	unsigned int shift;
	uint8_t last;

	return rd_leb(r, &shift, &last);
}

static inline int64_t rd_sleb(struct rd *r)
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
static inline uint64_t rd_encoded(struct rd *r, uint8_t enc, const struct cfi_sec *s,
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
	const struct cfi_regs *regs;
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
	const struct cfi_regs *regs;
	struct build_row *v;
	size_t n, cap;
	uint32_t seq;
	int err; /* -ENOMEM or -ERANGE: the table cannot be built */
	struct unwind_table *t;
	struct cie cies[CIE_CACHE];
	unsigned int ncies, next_cie;
	struct range *ranges; /* of .eh_frame's FDEs, sorted after that pass */
	size_t nranges, capranges;
	struct range *fns; /* of every FDE that made rows: the functions */
	size_t nfns, capfns;
	int fill_in; /* this pass only covers what earlier ones did not */
};

/* Runs the CFA instructions in [p, end) into rows of b (unwind_cfa.c). */
int run_cfa(struct builder *b, const struct cie *cie,
		   const struct cfi_sec *s, const uint8_t *p, const uint8_t *end,
		   struct cfa_state *st, int emit, uint64_t *loc, uint64_t end_pc);

/* The row a state makes, and a row added to b at pc (unwind_cfa.c). */
struct lp_unwind_row make_row(const struct cfa_state *st,
			      struct unwind_table *t);
void push_row(struct builder *b, uint64_t pc, struct lp_unwind_row row);

#endif

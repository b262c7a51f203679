/*
 * luajit_cfi.c - where a LuaJIT object's interpreter is, from its CFI
 * alone.  LuaJIT describes its whole assembler VM with one .eh_frame
 * entry: a constant CFA of rsp + CFRAME_SIZE from its first byte, with
 * rbp saved just below the return address, over kilobytes of code, where
 * a compiled C function's CFA starts at rsp + 8.  That row is found before
 * any sample, for the walker (which must know where BASE and PC are live)
 * and for the sweep of the interpreter's code (luajit_code.c).
 *
 * A build made with LUAJIT_NO_UNWIND describes its interpreter in
 * .debug_frame only, which stripping removes: there the interpreter is
 * the gap in the CFI, between the C functions every one of which has its
 * FDE, that holds an instruction known to be the interpreter's.
 *
 * On arm64 the row's CFA is x29 + 16 (luajit_arch.h), not the stack
 * pointer plus the frame's size, and unwind_table.c reads x86-64's CFI
 * only: there libdw reads the row that holds an instruction known to be
 * the interpreter's, and its CFA rule and extent say whether it is the
 * interpreter's row.
 */
#include <dwarf.h>
#include <elfutils/libdw.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <stdlib.h>
#include <unistd.h>

#include "record/luajit.h"
#include "record/luajit_arch.h"
#include "record/unwind_table.h"

/* The interpreter is one row of at least this many bytes, and at most. */
#define VM_MIN (4u << 10)
#define VM_MAX (4u << 20)

int lj_vm_from_cfi(const char *path, uint16_t cf_size, uint64_t *start,
		   uint64_t *end)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC), err;

	if (fd < 0)
		return -ENOENT;
	err = lj_vm_from_cfi_fd(fd, cf_size, start, end);
	close(fd);
	return err;
}

int lj_vm_from_cfi_fd(int fd, uint16_t cf_size, uint64_t *start, uint64_t *end)
{
	struct unwind_table tab;
	int err = -ENOENT;

	if (unwind_table_build_fd(fd, &tab))
		return -ENOENT;
	for (uint32_t i = 0; i + 1 < tab.nrows; i++) {
		const struct lp_unwind_row *r = &tab.rows[i];

		if (r->cfa_type == LP_CFA_RSP && r->cfa_off == cf_size &&
		    r->rbp_off == -2 && tab.rows[i + 1].pc - r->pc >= VM_MIN) {
			*start = r->pc;
			*end = tab.rows[i + 1].pc;
			err = 0;
			break;
		}
	}
	unwind_table_free(&tab);
	return err;
}


int lj_vm_from_gap_fd(int fd, uint64_t inside, uint64_t *start, uint64_t *end)
{
	struct unwind_table tab;
	const struct lp_unwind_row *r;
	int err = -ENOENT;

	if (unwind_table_build_fd(fd, &tab))
		return -ENOENT;
	r = unwind_table_lookup(&tab, inside);
	if (r && r->cfa_type == LP_CFA_GAP && r + 1 < tab.rows + tab.nrows &&
	    r[1].pc - r->pc >= VM_MIN && r[1].pc - r->pc <= VM_MAX) {
		*start = r->pc;
		*end = r[1].pc;
		err = 0;
	}
	unwind_table_free(&tab);
	return err;
}

/* Whether a row's CFA is register reg + off, as libdw gives a rule of
 * that form (one DW_OP_bregx). */
static int cfa_is(Dwarf_Frame *frame, int reg, int off)
{
	Dwarf_Op *ops = NULL;
	size_t n = 0;

	return dwarf_frame_cfa(frame, &ops, &n) == 0 && n == 1 &&
	       ops[0].atom == DW_OP_bregx && ops[0].number == (Dwarf_Word)reg &&
	       (Dwarf_Sword)ops[0].number2 == off;
}

int lj_vm_from_row_fd(int fd, const struct lj_arch *a, uint64_t inside, uint64_t *start,
		      uint64_t *end)
{
	Dwarf_Addr s = 0, e = 0;
	Dwarf_Frame *frame = NULL;
	Dwarf_CFI *cfi;
	Elf *elf;
	bool signalp;
	int err = -ENOENT;

	if (!a->cfa_off)
		return -ENOTSUP; /* a CFA from the frame's size: lj_vm_from_cfi_fd */
	elf_version(EV_CURRENT);
	elf = elf_begin(fd, ELF_C_READ, NULL);
	cfi = elf ? dwarf_getcfi_elf(elf) : NULL;
	if (cfi && dwarf_cfi_addrframe(cfi, inside, &frame) == 0 &&
	    dwarf_frame_info(frame, &s, &e, &signalp) >= 0 && e > s &&
	    e - s >= VM_MIN && e - s <= VM_MAX && cfa_is(frame, a->cfa_reg, a->cfa_off)) {
		*start = s;
		*end = e;
		err = 0;
	}
	free(frame);
	if (cfi)
		dwarf_cfi_end(cfi);
	if (elf)
		elf_end(elf);
	return err;
}

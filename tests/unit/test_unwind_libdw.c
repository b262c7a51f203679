/*
 * test_unwind_libdw.c - the unwind table builder (record/unwind_table.c)
 * checked against a second reader of the same CFI: libdw's, which runs
 * each FDE's instructions itself (dwarf_cfi_addrframe) and hands over the
 * rules as DWARF expressions.  At the first and last address of every row
 * of libc's table and of this test binary's (and arm64's libc, whose
 * return address starts out in x30), both must agree on the CFA, the
 * return address and the frame pointer, for the rules both can state (register +
 * offset, "saved at CFA + n", "same", "undefined", the realigned frame's
 * dereference); a row the builder cannot run is not compared.  This is how
 * the builder was checked against libdw on libc, libluajit, nginx and
 * hyperscan before it stayed (docs in record/unwind_table.c).
 */
#include <dlfcn.h>
#include <dwarf.h>
#include <elfutils/libdw.h>
#include <fcntl.h>
#include <gelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "record/unwind_table.h"
#include "tests/unit/unit.h"

/* An instruction set's DWARF numbers for the stack pointer, frame
 * pointer and return address; link: calls leave it in a register. */
struct isa {
	unsigned int sp, fp, ra, link;
};
static const struct isa x86_64 = { 7, 6, 16, 0 }, aarch64 = { 31, 29, 30, 1 };

/* A "CFA + off" rule's words from the CFA, or 1 if it is not one. */
static int64_t cfa_words(const Dwarf_Op *ops, size_t n)
{
	if (n == 2 && ops[0].atom == DW_OP_call_frame_cfa && ops[1].atom == DW_OP_plus_uconst)
		return (int64_t)ops[1].number / 8;
	return 1;
}

/* The return address's rule as a row's aux (bpf/unwind_maps.h's LP_RA_*
 * for a link register), -1 if this test does not state it, or -2 for
 * undefined (the outermost frame).  sp_off: the CFA's offset from sp, or
 * -1 if the CFA is not sp-based. */
static int ra_aux(Dwarf_Frame *f, const struct isa *a, int rbp_off, int64_t sp_off)
{
	Dwarf_Op *ops, mem[3];
	size_t n;
	int64_t w;

	dwarf_frame_register(f, (int)a->ra, mem, &ops, &n);
	if (!n)
		return ops ? -2 : a->link ? LP_RA_LINK : -1;
	w = cfa_words(ops, n);
	if (w == -1)
		return LP_RA_CFA_M8;
	if (!a->link || w > -2)
		return -1;
	if ((rbp_off < 0 && w == rbp_off + 1) ||
	    (rbp_off == LP_RBP_AT_SP && w * 8 == 8 - sp_off))
		return LP_RA_FRAME_RECORD;
	if (w >= -13)
		return (int)(-w - 1);
	/* Above sp, x29 unchanged: the caller puts the words in rbp_off. */
	return sp_off >= 0 && !rbp_off && w * 8 + sp_off >= 0 &&
	       w * 8 + sp_off < 8 * LP_RBP_AT_SP ? LP_RA_SP : -1;
}

/* The row libdw's frame at pc amounts to, or type LP_CFA_UNSUPPORTED
 * when it is a rule this test does not state. */
static struct lp_unwind_row libdw_row(Dwarf_CFI *cfi, uint64_t pc, const struct isa *a)
{
	struct lp_unwind_row row = { .cfa_type = LP_CFA_UNSUPPORTED };
	Dwarf_Op *ops, mem[3];
	Dwarf_Frame *f;
	size_t n;
	int aux;

	if (dwarf_cfi_addrframe(cfi, pc, &f)) {
		row.cfa_type = LP_CFA_GAP;
		return row;
	}
	if (ra_aux(f, a, 0, -1) == -2) {
		row.cfa_type = LP_CFA_END;
		goto out;
	}
	dwarf_frame_cfa(f, &ops, &n);
	if (n == 1 && ops[0].atom == DW_OP_bregx && (ops[0].number == a->fp || ops[0].number == a->sp)) {
		row.cfa_type = ops[0].number == a->sp ? LP_CFA_RSP : LP_CFA_RBP;
		row.cfa_off = (uint16_t)ops[0].number2;
	} else if (n == 2 && ops[0].atom == DW_OP_breg0 + a->fp && ops[1].atom == DW_OP_deref) {
		row.cfa_type = LP_CFA_DEREF_RBP;
		row.cfa_off = (uint16_t)(int16_t)(int64_t)ops[0].number;
	} else {
		goto out;
	}
	dwarf_frame_register(f, (int)a->fp, mem, &ops, &n);
	if (!n)
		row.rbp_off = 0; /* same value, or undefined: unchanged */
	else if (cfa_words(ops, n) <= 0 && cfa_words(ops, n) >= -128)
		row.rbp_off = (int8_t)cfa_words(ops, n);
	else if (n == 2 && ops[0].atom == DW_OP_call_frame_cfa &&
		 ops[1].atom == DW_OP_breg0 + a->fp && !ops[1].number)
		row.rbp_off = LP_RBP_AT_RBP;
	else if (a->link && LP_CFA_KIND(row.cfa_type) == LP_CFA_RSP &&
		 n == 2 && ops[0].atom == DW_OP_call_frame_cfa && ops[1].atom == DW_OP_plus_uconst &&
		 (int64_t)ops[1].number == -(int64_t)row.cfa_off)
		row.rbp_off = LP_RBP_AT_SP;
	else
		row.cfa_type = LP_CFA_UNSUPPORTED;
	aux = ra_aux(f, a, row.rbp_off,
		     LP_CFA_KIND(row.cfa_type) == LP_CFA_RSP ? (int64_t)row.cfa_off : -1);
	if (aux == LP_RA_SP) { /* the words above sp where x30 is */
		dwarf_frame_register(f, (int)a->ra, mem, &ops, &n);
		row.rbp_off = (int8_t)((cfa_words(ops, n) * 8 + row.cfa_off) / 8);
	}
	if (aux < 0 || (aux && LP_CFA_KIND(row.cfa_type) == LP_CFA_DEREF_RBP))
		row.cfa_type = LP_CFA_UNSUPPORTED;
	else if (row.cfa_type != LP_CFA_UNSUPPORTED)
		row.cfa_type = LP_CFA_TYPE(row.cfa_type, aux);
out:
	free(f);
	return row;
}

/* Rows of our table at both ends of each, against libdw: 0 differences,
 * and how many were compared in *compared. */
static int differences(const char *path, const struct isa *a, uint32_t *compared)
{
	struct unwind_table t;
	int fd = open(path, O_RDONLY), diff = 0;
	Elf *elf;
	Dwarf_CFI *cfi;

	*compared = 0;
	if (fd < 0 || unwind_table_build_path(path, &t))
		return -1;
	elf_version(EV_CURRENT);
	elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	cfi = elf ? dwarf_getcfi_elf(elf) : NULL;
	for (uint32_t i = 0; cfi && i + 1 < t.nrows; i++) {
		const struct lp_unwind_row *r = &t.rows[i];
		uint64_t ends[2] = { r->pc, t.rows[i + 1].pc - 1 };

		uint8_t kind = LP_CFA_KIND(r->cfa_type);

		if (kind != LP_CFA_RSP && kind != LP_CFA_RBP &&
		    r->cfa_type != LP_CFA_DEREF_RBP && r->cfa_type != LP_CFA_END)
			continue;
		for (int e = 0; e < 2; e++) {
			struct lp_unwind_row d = libdw_row(cfi, ends[e], a);

			if (d.cfa_type == LP_CFA_UNSUPPORTED)
				continue;
			(*compared)++;
			if (d.cfa_type != r->cfa_type ||
			    (r->cfa_type != LP_CFA_END &&
			     (d.cfa_off != r->cfa_off || d.rbp_off != r->rbp_off))) {
				if (diff++ < 3)
					fprintf(stderr, "%s: at %#llx: ours %u/%d/%d, libdw's %u/%d/%d\n",
						path, (unsigned long long)ends[e], r->cfa_type,
						(int16_t)r->cfa_off, r->rbp_off, d.cfa_type,
						(int16_t)d.cfa_off, d.rbp_off);
			}
		}
	}
	if (!cfi)
		diff = -1;
	else
		dwarf_cfi_end(cfi);
	if (elf)
		elf_end(elf);
	close(fd);
	unwind_table_free(&t);
	return diff;
}

TEST(unwind_table_agrees_with_libdw)
{
	Dl_info info;
	uint32_t n;

	CHECK(differences("/proc/self/exe", &x86_64, &n) == 0);
	CHECK(n > 100);
	CHECK(dladdr((void *)printf, &info) && info.dli_fname);
	CHECK(differences(info.dli_fname, &x86_64, &n) == 0);
	CHECK(n > 10000);
}

/* arm64's libc as libc6-arm64-cross ships it (make deps installs it). */
#define ARM64_LIBC "/usr/aarch64-linux-gnu/lib/libc.so.6"
TEST(unwind_table_agrees_with_libdw_arm64)
{
	uint32_t n;

	CHECK(access(ARM64_LIBC, R_OK) == 0);
	CHECK(differences(ARM64_LIBC, &aarch64, &n) == 0);
	CHECK(n > 10000);
}

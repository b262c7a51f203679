/*
 * test_unwind_libdw.c - the unwind table builder (record/unwind_table.c)
 * checked against a second reader of the same CFI: libdw's, which runs
 * each FDE's instructions itself (dwarf_cfi_addrframe) and hands over the
 * rules as DWARF expressions.  At the first and last address of every row
 * of libc's table and of this test binary's, both must agree on the CFA,
 * the return address and rbp, for the rules both can state (register +
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

/* The row libdw's frame at pc amounts to, or type LP_CFA_UNSUPPORTED
 * when it is a rule this test does not state. */
static struct lp_unwind_row libdw_row(Dwarf_CFI *cfi, uint64_t pc)
{
	struct lp_unwind_row row = { .cfa_type = LP_CFA_UNSUPPORTED };
	Dwarf_Op *ops, mem[3];
	Dwarf_Frame *f;
	size_t n;

	if (dwarf_cfi_addrframe(cfi, pc, &f)) {
		row.cfa_type = LP_CFA_GAP;
		return row;
	}
	/* The return address: undefined (outermost), or at CFA - 8. */
	dwarf_frame_register(f, 16, mem, &ops, &n);
	if (!n && ops) {
		row.cfa_type = LP_CFA_END;
		goto out;
	}
	if (n != 2 || ops[0].atom != DW_OP_call_frame_cfa ||
	    ops[1].atom != DW_OP_plus_uconst || (int64_t)ops[1].number != -8)
		goto out;
	dwarf_frame_cfa(f, &ops, &n);
	if (n == 1 && ops[0].atom == DW_OP_bregx && (ops[0].number == 6 || ops[0].number == 7)) {
		row.cfa_type = ops[0].number == 7 ? LP_CFA_RSP : LP_CFA_RBP;
		row.cfa_off = (uint16_t)ops[0].number2;
	} else if (n == 2 && ops[0].atom == DW_OP_breg6 && ops[1].atom == DW_OP_deref) {
		row.cfa_type = LP_CFA_DEREF_RBP;
		row.cfa_off = (uint16_t)(int16_t)(int64_t)ops[0].number;
	} else {
		goto out;
	}
	dwarf_frame_register(f, 6, mem, &ops, &n);
	if (!n)
		row.rbp_off = 0; /* same value, or undefined: unchanged */
	else if (n == 2 && ops[0].atom == DW_OP_call_frame_cfa &&
		 ops[1].atom == DW_OP_plus_uconst)
		row.rbp_off = (int8_t)((int64_t)ops[1].number / 8);
	else if (n == 2 && ops[0].atom == DW_OP_call_frame_cfa &&
		 ops[1].atom == DW_OP_breg6 && !ops[1].number)
		row.rbp_off = LP_RBP_AT_RBP;
	else
		row.cfa_type = LP_CFA_UNSUPPORTED;
out:
	free(f);
	return row;
}

/* Rows of our table at both ends of each, against libdw: 0 differences,
 * and how many were compared in *compared. */
static int differences(const char *path, uint32_t *compared)
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

		if (r->cfa_type != LP_CFA_RSP && r->cfa_type != LP_CFA_RBP &&
		    r->cfa_type != LP_CFA_DEREF_RBP && r->cfa_type != LP_CFA_END)
			continue;
		for (int e = 0; e < 2; e++) {
			struct lp_unwind_row d = libdw_row(cfi, ends[e]);

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

	CHECK(differences("/proc/self/exe", &n) == 0);
	CHECK(n > 100);
	CHECK(dladdr((void *)printf, &info) && info.dli_fname);
	CHECK(differences(info.dli_fname, &n) == 0);
	CHECK(n > 10000);
}

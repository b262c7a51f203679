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
 * pointer plus the frame's size: there the row that holds an instruction
 * known to be the interpreter's is taken if it has that rule and the
 * interpreter's extent.
 */
#include <errno.h>
#include <fcntl.h>
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

/* The interpreter's row as unwind_table.c makes it from a CFA of the
 * frame pointer + a->cfa_off (arm64's x29 + 16), the caller's frame
 * pointer saved right under the return address; its extent is its FDE's
 * (lj_vm_ffi_call, right after it, has an FDE of the same rule). */
int lj_vm_from_row_fd(int fd, const struct lj_arch *a, uint64_t inside, uint64_t *start,
		      uint64_t *end)
{
	struct unwind_table tab;
	const struct lp_unwind_row *r;
	const struct unwind_fn *fn;
	int err = -ENOENT;

	if (!a->cfa_off)
		return -ENOTSUP; /* a CFA from the frame's size: lj_vm_from_cfi_fd */
	if (unwind_table_build_fd(fd, &tab))
		return -ENOENT;
	r = unwind_table_lookup(&tab, inside);
	fn = unwind_table_function(&tab, inside);
	if (r && fn && LP_CFA_KIND(r->cfa_type) == LP_CFA_RBP && r->cfa_off == a->cfa_off &&
	    r->rbp_off == -2 && fn->hi - fn->lo >= VM_MIN && fn->hi - fn->lo <= VM_MAX) {
		*start = fn->lo;
		*end = fn->hi;
		err = 0;
	}
	unwind_table_free(&tab);
	return err;
}

/*
 * test_unwind_table.c - unit tests of the unwind table builder
 * (record/unwind_table.c) on objects whose CFI is known: this test binary
 * itself (/proc/self/exe, built with -O2 and so without frame pointers)
 * and the system's libc.  The strongest test walks this very stack with
 * the table, the way bpf/unwind_native.bpf.h does in the kernel, and
 * checks the return addresses it finds against the ones the compiler
 * reports; the others check invariants of the rows, the idioms the
 * builder recognises, and that a damaged .eh_frame is survived.
 */
#include <dlfcn.h>
#include <errno.h>
#include <gelf.h>
#include <gnu/libc-version.h>
#include <libelf.h>
#include <link.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "record/unwind_table.h"
#include "tests/unit/unit.h"

/* The main program's load bias: vaddr = address - bias. */
static int main_bias_cb(struct dl_phdr_info *info, size_t size, void *data)
{
	(void)size;
	*(uint64_t *)data = info->dlpi_addr;
	return 1; /* the first object is the main program */
}

static uint64_t main_bias(void)
{
	uint64_t bias = 0;

	dl_iterate_phdr(main_bias_cb, &bias);
	return bias;
}

static int rows_sorted_and_merged(const struct unwind_table *t)
{
	for (uint32_t i = 1; i < t->nrows; i++) {
		const struct lp_unwind_row *a = &t->rows[i - 1], *b = &t->rows[i];

		if (a->pc >= b->pc)
			return 0;
		if (a->cfa_type == b->cfa_type && a->cfa_off == b->cfa_off &&
		    a->rbp_off == b->rbp_off)
			return 0;
	}
	return 1;
}

TEST(unwind_table_self)
{
	struct unwind_table t;
	uint32_t rsp = 0, other = 0;

	CHECK(unwind_table_build_path("/proc/self/exe", &t) == 0);
	CHECK(t.source == UNWIND_SRC_EH_FRAME);
	CHECK(t.fdes > 10);
	CHECK(t.nrows > t.fdes);
	CHECK(t.bad_entries == 0);
	CHECK(rows_sorted_and_merged(&t));
	for (uint32_t i = 0; i < t.nrows; i++) {
		const struct lp_unwind_row *r = &t.rows[i];

		if (r->cfa_type == LP_CFA_RSP) {
			rsp++;
			/* At least the return address; pushes keep 8-byte steps. */
			if (r->cfa_off < 8 || r->cfa_off % 8)
				other++;
		}
		/* A saved rbp is below the CFA, under the return address
		 * (or, in a realigned frame, where rbp points). */
		if (r->rbp_off != 0 && r->rbp_off != LP_RBP_UNKNOWN &&
		    r->rbp_off != LP_RBP_AT_RBP && r->rbp_off > -2)
			other++;
	}
	CHECK(rsp > t.nrows / 2); /* -O2: rsp-based frames dominate */
	CHECK(other == 0);
	unwind_table_free(&t);
}

/* A function whose entry and body rules are known. */
__attribute__((noinline)) int unwind_test_vla(int n)
{
	/* A variable-length array makes GCC keep rbp as frame base:
	 * CFA = rbp + 16, rbp saved at CFA - 16. */
	volatile char v[n + 16];

	v[n] = 1;
	return v[n] + n;
}

TEST(unwind_table_known_function)
{
	struct unwind_table t;
	const struct lp_unwind_row *r;
	uint64_t entry = (uint64_t)(uintptr_t)unwind_test_vla - main_bias();
	int saw_rbp = 0;

	CHECK(unwind_table_build_path("/proc/self/exe", &t) == 0);
	/* At the first instruction the call has pushed only the return
	 * address: CFA = rsp + 8, rbp untouched. */
	r = unwind_table_lookup(&t, entry);
	CHECK(r);
	CHECK(r->cfa_type == LP_CFA_RSP);
	CHECK(r->cfa_off == 8);
	CHECK(r->rbp_off == 0);
	/* Inside, the frame is addressed from rbp, saved at CFA - 16. */
	for (uint64_t pc = entry; pc < entry + 64; pc++) {
		r = unwind_table_lookup(&t, pc);
		CHECK(r);
		if (r->cfa_type == LP_CFA_RBP) {
			CHECK(r->cfa_off == 16);
			CHECK(r->rbp_off == -2);
			saw_rbp = 1;
			break;
		}
	}
	CHECK(saw_rbp);
	CHECK(unwind_test_vla(3) == 4);
	/* Nothing below the first row. */
	CHECK(!unwind_table_lookup(&t, 0));
	unwind_table_free(&t);
}

/* ---- walking this stack with the table ---------------------------------- */

struct walk {
	uint64_t pcs[16];
	int n;
	uint64_t ret[4]; /* __builtin_return_address(0) of each level */
};

/*
 * Walks from its own pc and registers, as the BPF walker does from a
 * sample's: row for pc (pc - 1 past frame 0), CFA (from rsp or rbp, or
 * read where a realigned frame saved it), return address at CFA - 8, rbp
 * at CFA + 8 * rbp_off or at [rbp].  The stack is our own, so reading it
 * needs no bounds beyond the table's.
 */
__attribute__((noinline)) void unwind_test_walk(const struct unwind_table *t,
						 uint64_t bias, struct walk *w)
{
	uint64_t pc, sp, bp;

	asm volatile("lea 0(%%rip), %0\n\tmov %%rsp, %1\n\tmov %%rbp, %2"
		     : "=r"(pc), "=r"(sp), "=r"(bp));
	for (w->n = 0; w->n < 16; w->n++) {
		const struct lp_unwind_row *r;
		uint64_t cfa;

		w->pcs[w->n] = pc;
		r = unwind_table_lookup(t, pc - bias - (w->n ? 1 : 0));
		if (!r)
			break;
		switch (LP_CFA_KIND(r->cfa_type)) {
		case LP_CFA_RSP:
		case LP_CFA_RBP:
			cfa = (r->cfa_type == LP_CFA_RSP ? sp : bp) + r->cfa_off;
			break;
		case LP_CFA_DEREF_RSP:
		case LP_CFA_DEREF_RBP:
			cfa = *(const uint64_t *)(uintptr_t)((LP_CFA_KIND(r->cfa_type) ==
							      LP_CFA_DEREF_RSP ? sp : bp) +
							     (int16_t)r->cfa_off) +
			      8 * LP_CFA_AUX(r->cfa_type);
			break;
		default:
			return;
		}
		if (r->rbp_off == LP_RBP_UNKNOWN)
			break;
		if (r->rbp_off == LP_RBP_AT_RBP)
			bp = *(const uint64_t *)(uintptr_t)bp;
		else if (r->rbp_off)
			bp = *(const uint64_t *)(uintptr_t)(cfa + 8 * (int64_t)r->rbp_off);
		pc = *(const uint64_t *)(uintptr_t)(cfa - 8);
		sp = cfa;
	}
}

__attribute__((noinline)) int unwind_test_level2(const struct unwind_table *t,
						uint64_t bias, struct walk *w, int n)
{
	volatile char vla[n + 8]; /* an rbp-based frame in the chain */

	vla[0] = 1;
	w->ret[3] = (uint64_t)(uintptr_t)__builtin_return_address(0);
	unwind_test_walk(t, bias, w);
	return vla[0] + 1;
}

/* A realigned frame: GCC keeps a 64-byte aligned local next to a
 * variable-length array through a DRAP register, and describes the frame
 * with DWARF expressions (CFA = *(rbp - N), rbp saved at [rbp]). */
__attribute__((noinline)) int unwind_test_drap(const struct unwind_table *t,
					       uint64_t bias, struct walk *w, int n)
{
	volatile char aligned[64] __attribute__((aligned(64)));
	volatile char vla[n + 8];

	aligned[0] = 3;
	vla[0] = 1;
	w->ret[2] = (uint64_t)(uintptr_t)__builtin_return_address(0);
	return unwind_test_level2(t, bias, w, n) + aligned[0] + vla[0];
}

__attribute__((noinline)) int unwind_test_level1(const struct unwind_table *t,
						uint64_t bias, struct walk *w)
{
	volatile char buf[300]; /* an rsp-based frame of its own size */

	buf[0] = 2;
	w->ret[1] = (uint64_t)(uintptr_t)__builtin_return_address(0);
	return unwind_test_drap(t, bias, w, 5) + buf[0];
}

TEST(unwind_table_walks_own_stack)
{
	struct unwind_table t;
	struct walk w;
	int r;

	memset(&w, 0, sizeof(w));
	CHECK(unwind_table_build_path("/proc/self/exe", &t) == 0);
	r = unwind_test_level1(&t, main_bias(), &w);
	CHECK(r == 8);
	CHECK(w.n >= 5);
	/* pcs[0] is in unwind_test_walk; then level2's, the realigned
	 * frame's, level1's and this test's return addresses, each as its
	 * callee saw it. */
	CHECK(w.pcs[2] == w.ret[3]);
	CHECK(w.pcs[3] == w.ret[2]);
	CHECK(w.pcs[4] == w.ret[1]);
	unwind_table_free(&t);
}

/* ---- libc: the .plt and signal-trampoline idioms ------------------------- */

TEST(unwind_table_libc_idioms)
{
	struct unwind_table t;
	Dl_info info;
	int64_t delta;

	/* Not printf: under AddressSanitizer that is libasan's. */
	CHECK(dladdr((void *)gnu_get_libc_version, &info) && info.dli_fname);
	CHECK(unwind_table_build_path(info.dli_fname, &t) == 0);
	CHECK(t.source == UNWIND_SRC_EH_FRAME);
	CHECK(rows_sorted_and_merged(&t));
	CHECK(t.plt_rows >= 1);    /* glibc's own .plt */
	CHECK(t.signal_rows == 1); /* __restore_rt */
	CHECK(t.end_rows >= 1);    /* clone's child: return address undefined */
	CHECK(t.unsupported < 50); /* a few hand-written expressions at most */
	/* Code is mapped from an executable segment. */
	CHECK(unwind_table_vaddr_delta(&t, 0, &delta) == 0);
	unwind_table_free(&t);
}

/* ---- damaged input ------------------------------------------------------ */

static uint8_t *read_file(const char *path, size_t *size)
{
	FILE *f = fopen(path, "rb");
	uint8_t *buf = NULL;
	long n;

	if (!f)
		return NULL;
	if (fseek(f, 0, SEEK_END) == 0 && (n = ftell(f)) > 0 && fseek(f, 0, SEEK_SET) == 0) {
		buf = malloc(n);
		if (buf && fread(buf, 1, n, f) != (size_t)n) {
			free(buf);
			buf = NULL;
		}
		*size = n;
	}
	fclose(f);
	return buf;
}

/* The file offset and size of .eh_frame in an ELF image. */
static int find_eh_frame(uint8_t *image, size_t size, size_t *off, size_t *len)
{
	Elf *elf;
	Elf_Scn *scn = NULL;
	size_t shstrndx;
	int found = 0;

	elf_version(EV_CURRENT);
	elf = elf_memory((char *)image, size);
	if (!elf || elf_getshdrstrndx(elf, &shstrndx))
		return 0;
	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		const char *name;

		if (!gelf_getshdr(scn, &sh))
			continue;
		name = elf_strptr(elf, shstrndx, sh.sh_name);
		if (name && !strcmp(name, ".eh_frame")) {
			*off = sh.sh_offset;
			*len = sh.sh_size;
			found = 1;
		}
	}
	elf_end(elf);
	return found;
}

TEST(unwind_table_damaged)
{
	size_t size = 0, off = 0, len = 0;
	uint8_t *image = read_file("/proc/self/exe", &size), *copy;
	struct unwind_table t;
	uint32_t first_len;
	unsigned int seed = 12345;

	CHECK(image);
	CHECK(find_eh_frame(image, size, &off, &len) && len > 64 && off + len <= size);
	copy = malloc(size);
	CHECK(copy);
	/* Not an ELF file. */
	memset(copy, 0x5a, size);
	CHECK(unwind_table_build_mem(copy, size, &t) == -ENOEXEC);
	/* The first entry claims to run past the section: nothing after it
	 * can be framed, and nothing is read out of bounds. */
	memcpy(copy, image, size);
	memcpy(&first_len, copy + off, 4);
	first_len = 0x7ffffff0;
	memcpy(copy + off, &first_len, 4);
	CHECK(unwind_table_build_mem(copy, size, &t) == 0);
	CHECK(t.bad_entries >= 1);
	CHECK(t.nrows == 0);
	unwind_table_free(&t);
	/* Random damage inside .eh_frame: whatever comes out is sorted. */
	for (int round = 0; round < 200; round++) {
		memcpy(copy, image, size);
		for (int k = 0; k < 8; k++) {
			seed = seed * 1103515245u + 12345u;
			copy[off + (seed >> 8) % len] ^= (uint8_t)(1u << (seed >> 28) % 8);
		}
		if (unwind_table_build_mem(copy, size, &t) == 0) {
			CHECK(rows_sorted_and_merged(&t));
			unwind_table_free(&t);
		}
	}
	free(copy);
	free(image);
}

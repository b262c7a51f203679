/*
 * test_unwind_expr.c - unit tests of the DWARF expressions the unwind
 * table builder (record/unwind_table.c) turns into rows BPF can run, on
 * objects made here: a minimal ELF image whose .eh_frame holds one CIE and
 * one FDE with the instructions under test, so each form is tested whether
 * or not the system's libraries happen to use it.
 *
 *   image: ELF header | PT_LOAD (all of it, vaddr 0, R+X) | .eh_frame |
 *          .shstrtab | section headers (null, .eh_frame, .shstrtab)
 *   .eh_frame: CIE "zR", absolute pointers, CFA = rsp + 8, RA at CFA - 8;
 *              FDE for [FN, FN + 0x100): 2 bytes at the CIE's rules, then
 *              the instructions under test from FN + 2 on.
 */
#include <elf.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "record/unwind_table.h"
#include "tests/unit/unit.h"

#define FN 0x1000 /* the function the FDE describes */

struct image {
	uint8_t b[4096];
	size_t n;
};

static size_t put(struct image *im, const void *p, size_t n)
{
	size_t at = im->n;

	memcpy(im->b + im->n, p, n);
	im->n += n;
	return at;
}

static void put_u32(struct image *im, uint32_t v) { put(im, &v, 4); }
static void put_u64(struct image *im, uint64_t v) { put(im, &v, 8); }

static void align8(struct image *im)
{
	while (im->n % 8)
		im->b[im->n++] = 0; /* DW_CFA_nop */
}

static uint64_t entry_point; /* the image's e_entry */
/* A function symbol the image's .symtab holds, when sym_name is set;
 * of sym_type and in .dynsym instead when those are set. */
static const char *sym_name;
static uint64_t sym_addr, sym_size;
static unsigned char sym_type = STT_FUNC;
static int sym_dynamic;
static Elf64_Half machine = EM_X86_64;

/* Builds the image around the FDE instructions ins[0..n). */
static void build(struct image *im, const uint8_t *ins, size_t n)
{
	static const uint8_t cie_body[] = {
		1, 'z', 'R', 0, /* version, augmentation */
		1, 0x78, 16,    /* code align 1, data align -8, RA = r16 */
		1, 0x00,        /* augmentation data: FDE pointers absolute */
		0x0c, 7, 8,     /* def_cfa rsp 8 */
		0x90, 1,        /* offset r16 at cfa - 8 */
	};
	static const char shstr[] = "\0.eh_frame\0.shstrtab\0.symtab\0.strtab";
	Elf64_Ehdr eh = { 0 };
	Elf64_Phdr ph = { 0 };
	Elf64_Shdr sh[5];
	size_t eh_off, cie, len_at, fde_start, str_off, sh_off, sym_off = 0, symstr_off = 0;
	unsigned nsh = sym_name ? 5 : 3;

	memset(im, 0, sizeof(*im));
	im->n = sizeof(eh) + sizeof(ph);
	eh_off = im->n;
	/* CIE */
	len_at = im->n;
	put_u32(im, 0);
	cie = len_at;
	put_u32(im, 0); /* CIE id */
	put(im, cie_body, sizeof(cie_body));
	align8(im);
	*(uint32_t *)(im->b + len_at) = (uint32_t)(im->n - len_at - 4);
	/* FDE */
	len_at = im->n;
	put_u32(im, 0);
	fde_start = im->n;
	put_u32(im, (uint32_t)(fde_start - cie)); /* back to the CIE */
	put_u64(im, FN);
	put_u64(im, 0x100);
	im->b[im->n++] = 0; /* augmentation data length */
	im->b[im->n++] = 0x42; /* advance_loc 2 */
	put(im, ins, n);
	align8(im);
	*(uint32_t *)(im->b + len_at) = (uint32_t)(im->n - len_at - 4);
	put_u32(im, 0); /* terminator */
	str_off = put(im, shstr, sizeof(shstr));
	if (sym_name) {
		Elf64_Sym sym[2] = { { 0 }, { .st_name = 1, .st_value = sym_addr,
					      .st_size = sym_size, .st_shndx = 1,
					      .st_info = ELF64_ST_INFO(STB_GLOBAL, sym_type) } };

		symstr_off = put(im, "", 1);
		put(im, sym_name, strlen(sym_name) + 1);
		align8(im);
		sym_off = put(im, sym, sizeof(sym));
	}
	align8(im);
	sh_off = im->n;
	memset(sh, 0, sizeof(sh));
	sh[3] = (Elf64_Shdr){ .sh_name = 21, .sh_type = sym_dynamic ? SHT_DYNSYM : SHT_SYMTAB,
			      .sh_offset = sym_off,
			      .sh_size = 2 * sizeof(Elf64_Sym), .sh_link = 4, .sh_info = 1,
			      .sh_entsize = sizeof(Elf64_Sym), .sh_addralign = 8 };
	sh[4] = (Elf64_Shdr){ .sh_name = 29, .sh_type = SHT_STRTAB, .sh_offset = symstr_off,
			      .sh_size = sym_name ? strlen(sym_name) + 2 : 0, .sh_addralign = 1 };
	sh[1] = (Elf64_Shdr){ .sh_name = 1, .sh_type = SHT_PROGBITS, .sh_flags = SHF_ALLOC,
			      .sh_addr = eh_off, .sh_offset = eh_off,
			      .sh_size = str_off - eh_off, .sh_addralign = 8 };
	sh[2] = (Elf64_Shdr){ .sh_name = 11, .sh_type = SHT_STRTAB, .sh_offset = str_off,
			      .sh_size = sizeof(shstr), .sh_addralign = 1 };
	put(im, sh, nsh * sizeof(*sh));
	memcpy(eh.e_ident, ELFMAG, SELFMAG);
	eh.e_ident[EI_CLASS] = ELFCLASS64;
	eh.e_ident[EI_DATA] = ELFDATA2LSB;
	eh.e_ident[EI_VERSION] = EV_CURRENT;
	eh.e_type = ET_DYN;
	eh.e_machine = machine;
	eh.e_version = EV_CURRENT;
	eh.e_entry = entry_point;
	eh.e_phoff = sizeof(eh);
	eh.e_shoff = sh_off;
	eh.e_ehsize = sizeof(eh);
	eh.e_phentsize = sizeof(ph);
	eh.e_phnum = 1;
	eh.e_shentsize = sizeof(Elf64_Shdr);
	eh.e_shnum = (uint16_t)nsh;
	eh.e_shstrndx = 2;
	ph = (Elf64_Phdr){ .p_type = PT_LOAD, .p_flags = PF_R | PF_X, .p_offset = 0,
			   .p_vaddr = 0, .p_filesz = sizeof(im->b), .p_memsz = 0x2000,
			   .p_align = 0x1000 };
	memcpy(im->b, &eh, sizeof(eh));
	memcpy(im->b + sizeof(eh), &ph, sizeof(ph));
}

/* The row that holds at FN + 2, after the instructions under test. */
static int row_for(const uint8_t *ins, size_t n, struct lp_unwind_row *out,
		   struct unwind_table *stats)
{
	static struct image im;
	struct unwind_table t;
	const struct lp_unwind_row *r;

	build(&im, ins, n);
	if (unwind_table_build_mem(im.b, sizeof(im.b), &t))
		return -1;
	r = unwind_table_lookup(&t, FN + 2);
	if (r)
		*out = *r;
	*stats = t;
	stats->rows = NULL;
	stats->segs = NULL;
	unwind_table_free(&t);
	return r && stats->fdes == 1 ? 0 : -1;
}

TEST(unwind_expr_drap)
{
	/* GCC's DRAP body: CFA = *(rbp - 40), rbp saved at [rbp + 0].
	 *   0f 03 76 58 06    def_cfa_expression (breg6 -40; deref)
	 *   10 06 02 76 00    expression r6 (breg6 0) */
	static const uint8_t ins[] = { 0x0f, 3, 0x76, 0x58, 0x06, 0x10, 6, 2, 0x76, 0x00 };
	struct lp_unwind_row r;
	struct unwind_table st;

	CHECK(row_for(ins, sizeof(ins), &r, &st) == 0);
	CHECK(LP_CFA_KIND(r.cfa_type) == LP_CFA_DEREF_RBP);
	CHECK(LP_CFA_AUX(r.cfa_type) == 0);
	CHECK((int16_t)r.cfa_off == -40);
	CHECK(r.rbp_off == LP_RBP_AT_RBP);
	CHECK(st.unsupported == 0 && st.deref_rows >= 1);
}

TEST(unwind_expr_drap_prologue)
{
	/* Before the push: CFA = r10 + 0, which only the interrupted frame
	 * knows (0c 0a 00: def_cfa r10 0). */
	static const uint8_t ins[] = { 0x0c, 10, 0 };
	struct lp_unwind_row r;
	struct unwind_table st;

	CHECK(row_for(ins, sizeof(ins), &r, &st) == 0);
	CHECK(LP_CFA_KIND(r.cfa_type) == LP_CFA_REG);
	CHECK(LP_CFA_AUX(r.cfa_type) == 10);
	CHECK(r.cfa_off == 0);
	CHECK(r.rbp_off == 0);
}

TEST(unwind_expr_saved_rsp)
{
	/* OpenSSL: CFA = *(rsp + 40) + 8 (the rsp it saved, before the call's
	 * return address), rbp at CFA - 24.
	 *   0f 05 77 28 06 23 08   def_cfa_expression (breg7 40; deref;
	 *                          plus_uconst 8)
	 *   86 03                  offset r6 at cfa - 24 */
	static const uint8_t ins[] = { 0x0f, 5, 0x77, 0x28, 0x06, 0x23, 0x08, 0x86, 3 };
	struct lp_unwind_row r;
	struct unwind_table st;

	CHECK(row_for(ins, sizeof(ins), &r, &st) == 0);
	CHECK(LP_CFA_KIND(r.cfa_type) == LP_CFA_DEREF_RSP);
	CHECK(LP_CFA_AUX(r.cfa_type) == 1);
	CHECK((int16_t)r.cfa_off == 40);
	CHECK(r.rbp_off == -3);
}

TEST(unwind_expr_register_at_rsp)
{
	/* CFA = rsp + 32 and rbp saved at rsp + 8 (breg7 8): that is CFA - 24.
	 *   0e 20           def_cfa_offset 32
	 *   10 06 02 77 08  expression r6 (breg7 8) */
	static const uint8_t ins[] = { 0x0e, 32, 0x10, 6, 2, 0x77, 0x08 };
	struct lp_unwind_row r;
	struct unwind_table st;

	CHECK(row_for(ins, sizeof(ins), &r, &st) == 0);
	CHECK(r.cfa_type == LP_CFA_RSP);
	CHECK(r.cfa_off == 32);
	CHECK(r.rbp_off == -3);
}

TEST(unwind_expr_unknown_counted)
{
	/* CFA = rsp + 8 + r9 * 8, dereferenced: no rule BPF runs; the row
	 * stops the walk and both the row and the expression are counted.
	 *   0f 07 77 08 79 00 38 1e 22 ... (breg7 8; breg9 0; lit8; mul; plus)
	 */
	static const uint8_t ins[] = { 0x0f, 7, 0x77, 0x08, 0x79, 0x00, 0x38, 0x1e, 0x22 };
	struct lp_unwind_row r;
	struct unwind_table st;

	CHECK(row_for(ins, sizeof(ins), &r, &st) == 0);
	CHECK(r.cfa_type == LP_CFA_UNSUPPORTED);
	CHECK(st.unsupported >= 1);
	CHECK(st.unsupported_exprs == 1);
}

TEST(unwind_expr_plt)
{
	/* The .plt expression still gives its own row type. */
	static const uint8_t ins[] = { 0x0f, 11, 0x77, 0x08, 0x80, 0x00, 0x3f, 0x1a,
				       0x3b, 0x2a, 0x33, 0x24, 0x22 };
	struct lp_unwind_row r;
	struct unwind_table st;

	CHECK(row_for(ins, sizeof(ins), &r, &st) == 0);
	CHECK(r.cfa_type == LP_CFA_PLT);
	CHECK(r.cfa_off == 11);
}

TEST(unwind_expr_entry_without_cfi)
{
	/* The dynamic loader's _start has no FDE: its entry point ends the
	 * stack (an END row up to the next row) instead of cutting it. */
	static const uint8_t ins[] = { 0x0e, 16 };
	static struct image im;
	const struct lp_unwind_row *r;
	struct unwind_table t;

	for (int inside = 0; inside < 2; inside++) {
		entry_point = inside ? FN + 8 : FN + 0x180;
		build(&im, ins, sizeof(ins));
		CHECK(unwind_table_build_mem(im.b, sizeof(im.b), &t) == 0);
		r = unwind_table_lookup(&t, entry_point + 7);
		CHECK(r);
		if (inside)
			CHECK(r->cfa_type == LP_CFA_RSP && r->cfa_off == 16);
		else
			CHECK(r->cfa_type == LP_CFA_END && r->pc == entry_point);
		unwind_table_free(&t);
	}
	entry_point = 0;
}

TEST(unwind_expr_fiber_root_without_cfi)
{
	/* Boost.Context's make_fcontext has no FDE, and a fiber's first
	 * function returns into it: its bytes end the stack; the code after
	 * it (jump_fcontext, as bare) is still no CFI, a cut. */
	static const uint8_t ins[] = { 0x0e, 16 };
	static struct image im;
	const struct lp_unwind_row *r;
	struct unwind_table t;

	for (int named = 0; named < 2; named++) {
		sym_name = named ? "make_fcontext" : "make_context";
		sym_addr = FN + 0x200;
		sym_size = 0x38;
		build(&im, ins, sizeof(ins));
		CHECK(unwind_table_build_mem(im.b, sizeof(im.b), &t) == 0);
		r = unwind_table_lookup(&t, sym_addr + 0x2f);
		CHECK(r);
		if (named)
			CHECK(r->cfa_type == LP_CFA_END && r->pc == sym_addr && t.end_rows == 1);
		else
			CHECK(r->cfa_type == LP_CFA_GAP && t.end_rows == 0);
		r = unwind_table_lookup(&t, sym_addr + sym_size);
		CHECK(r && r->cfa_type == LP_CFA_GAP);
		r = unwind_table_lookup(&t, FN + 0x10); /* the FDE's function, unchanged */
		CHECK(r && r->cfa_type == LP_CFA_RSP && r->cfa_off == 16);
		unwind_table_free(&t);
	}
	sym_name = NULL;
}

TEST(unwind_expr_function_bounds)
{
	/* The FDE bounds its function, for a stripped object's frames:
	 * [FN, FN + 0x100). */
	static const uint8_t ins[] = { 0x0e, 16 };
	static struct image im;
	const struct unwind_fn *fn;
	struct unwind_table t;

	build(&im, ins, sizeof(ins));
	CHECK(unwind_table_build_mem(im.b, sizeof(im.b), &t) == 0);
	CHECK(t.nfns == 1);
	fn = unwind_table_function(&t, FN + 0x80);
	CHECK(fn && fn->lo == FN && fn->hi == FN + 0x100);
	CHECK(unwind_table_function(&t, FN) == fn);
	CHECK(!unwind_table_function(&t, FN + 0x100));
	CHECK(!unwind_table_function(&t, FN - 1));
	unwind_table_free(&t);
}

TEST(unwind_expr_arm64_sigreturn)
{
	/* arm64's vDSO: __kernel_rt_sigreturn, a dynamic symbol of no type,
	 * with no CFI (nor any other code here: the CIE's registers are
	 * x86's, foreign to arm64).  Its nop, mov x8, #139 and svc #0 get a
	 * signal row, and the address after the svc (a tick in the system
	 * call), if the bytes are those, the object arm64's and read as the
	 * vDSO. */
	static const uint32_t tramp[] = { 0xd503201f, 0xd2801168, 0xd4000001 };
	static const uint8_t ins[] = { 0x0e, 16 };
	static struct image im;
	const struct lp_unwind_row *r;
	struct unwind_table t;

	sym_name = "__kernel_rt_sigreturn";
	sym_addr = 0xf04;
	sym_size = 8;
	sym_type = STT_NOTYPE;
	sym_dynamic = 1;
	for (int k = 0; k < 3; k++) {
		machine = k == 2 ? EM_X86_64 : EM_AARCH64;
		build(&im, ins, sizeof(ins));
		memcpy(im.b + 0xf00, tramp, sizeof(tramp));
		if (k == 1)
			im.b[0xf08] = 0x21; /* svc #1 */
		/* Not looked for in other objects. */
		CHECK(unwind_table_build_mem(im.b, sizeof(im.b), &t) == 0);
		CHECK(t.signal_rows == 0);
		unwind_table_free(&t);
		CHECK(unwind_table_build_vdso(im.b, sizeof(im.b), &t) == 0);
		r = unwind_table_lookup(&t, sym_addr - 1); /* a handler's return */
		if (k == 0) {
			CHECK(r && r->cfa_type == LP_CFA_SIGNAL && r->pc == 0xf00);
			CHECK(t.signal_rows == 1);
			r = unwind_table_lookup(&t, sym_addr + 7);
			CHECK(r && r->cfa_type == LP_CFA_SIGNAL);
			r = unwind_table_lookup(&t, sym_addr + 8); /* after the svc */
			CHECK(r && r->cfa_type == LP_CFA_SIGNAL);
			r = unwind_table_lookup(&t, sym_addr + 12);
			CHECK(r && r->cfa_type == LP_CFA_GAP);
			CHECK(!unwind_table_lookup(&t, 0xeff));
		} else {
			CHECK(!r || r->cfa_type != LP_CFA_SIGNAL);
			CHECK(t.signal_rows == 0);
		}
		unwind_table_free(&t);
	}
	sym_name = NULL;
	sym_type = STT_FUNC;
	sym_dynamic = 0;
	machine = EM_X86_64;
}

/*
 * unwind_table.c - turns an ELF object's call frame information into the
 * compact rows the BPF walker searches (bpf/unwind_maps.h).
 *
 * CFI is a program per function (an FDE, with a shared prologue in its
 * CIE) that, run from the function's first instruction, says after each
 * address advance where the CFA is and where each register was saved.
 * The walker needs only three of those rules on x86_64: the CFA (rsp or
 * rbp plus an offset), where the caller's rbp was saved, and that the
 * return address sits at CFA - 8.  So every FDE is run once (its CFA
 * program by unwind_cfa.c, its framing read here, sharing unwind_cfi.h);
 * a row is written at each address where one of those three changes, and
 * the rest is dropped (rbx, r12..r15 are never needed to find the next frame).
 *
 * arm64 objects make the same rows with sp and x29 for rsp and rbp (the
 * ELF's e_machine chooses, struct cfi_regs).  A call leaves the return
 * address in x30, which the function saves, if ever, beside x29 (stp x29,
 * x30, [sp, #-N]!), anywhere in its frame: the row's aux says where
 * (bpf/unwind_maps.h's LP_RA_*), and a row whose return address is
 * elsewhere is unsupported.  In arm64's libc 98% of rows keep it in x30
 * or beside x29.  DW_CFA_AARCH64_negate_ra_state (pointer authentication)
 * changes no rule: the walker clears the signature bits.
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
 * (in unwind_cfa.c) and turned into rules BPF can run (bpf/unwind_maps.h): the one every
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

#include "lib/elfsyms.h"
#include "lib/grow.h"
#include "record/unwind_cfi.h"
#include "record/unwind_table.h"
#include "lib/bsearch.h"

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
	 * the CIE's own program sets CFA = rsp + 8 and RA at CFA - 8 on
	 * x86_64; on arm64 it sets CFA = sp, and the return address stays in
	 * x30 until a rule says where it was saved. */
	c->init = (struct cfa_state){ .regs = b->regs, .cfa_kind = CFA_EXPR,
				      .rbp = { .rule = RULE_SAME },
				      .ra = { .rule = b->regs->link ? RULE_SAME : RULE_OTHER } };
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

static void note_fn(struct builder *b, uint64_t lo, uint64_t hi)
{
	if (GROW(b->fns, b->capfns, b->nfns + 1)) {
		b->err = -ENOMEM;
		return;
	}
	b->fns[b->nfns++] = (struct range){ lo, hi };
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
	note_fn(b, begin, begin + range);
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

/* The functions, sorted; those above 4 GiB are left out, as their rows
 * fail the table (-ERANGE) anyway. */
static int finish_fns(struct builder *b)
{
	struct unwind_table *t = b->t;

	if (b->nfns)
		qsort(b->fns, b->nfns, sizeof(*b->fns), range_cmp);
	t->fns = malloc((b->nfns ? b->nfns : 1) * sizeof(*t->fns));
	if (!t->fns)
		return -ENOMEM;
	for (size_t i = 0; i < b->nfns; i++)
		if (b->fns[i].hi <= UINT32_MAX)
			t->fns[t->nfns++] = (struct unwind_fn){ (uint32_t)b->fns[i].lo,
								(uint32_t)b->fns[i].hi };
	return 0;
}

/* Inserts a row of cfa_type at pc before row i. */
static int insert_row(struct unwind_table *t, uint32_t i, uint32_t pc, uint8_t cfa_type)
{
	struct lp_unwind_row *v = realloc(t->rows, (t->nrows + 1) * sizeof(*v));

	if (!v)
		return -ENOMEM;
	t->rows = v;
	memmove(v + i + 1, v + i, (t->nrows - i) * sizeof(*v));
	v[i] = (struct lp_unwind_row){ .pc = pc, .cfa_type = cfa_type };
	t->nrows++;
	return 0;
}

/* Code [lo, hi) that no FDE covers gets a row of cfa_type at lo, and no
 * CFI again from hi: 1 if it did, 0 if CFI covers some of it already. */
static int mark_span(struct unwind_table *t, uint64_t lo, uint64_t hi, uint8_t cfa_type)
{
	const struct lp_unwind_row *r = unwind_table_lookup(t, lo);
	uint32_t i = r ? (uint32_t)(r - t->rows) + 1 : 0;
	int err;

	if (!lo || hi <= lo || hi > UINT32_MAX || (r && r->cfa_type != LP_CFA_GAP) ||
	    (r && r->pc == lo) || (i < t->nrows && t->rows[i].pc < hi))
		return 0;
	err = (i < t->nrows && t->rows[i].pc == hi) ? 0 : insert_row(t, i, (uint32_t)hi, LP_CFA_GAP);
	if (!err)
		err = insert_row(t, i, (uint32_t)lo, cfa_type);
	return err ? err : 1;
}

/* Code [lo, hi) that no FDE covers ends stacks. */
static int mark_end(struct unwind_table *t, uint64_t lo, uint64_t hi)
{
	int err = mark_span(t, lo, hi, LP_CFA_END);

	if (err > 0)
		t->end_rows++;
	return err < 0 ? err : 0;
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
	t->end_rows++;
	return insert_row(t, i, (uint32_t)entry, LP_CFA_END);
}

/*
 * A fiber's first function returns into code that its library wrote by
 * hand, without CFI, as a thread's returns into clone's: Boost.Context's
 * make_fcontext holds the trampoline that enters a context's function
 * and the return address it is given (a call of _exit).  A walk that
 * reaches it has the fiber's whole stack, not a cut one.  Only the
 * symbol's own bytes end stacks: jump_fcontext, beside it and as bare,
 * switches stacks midway and must stay a cut.
 */
#define FIBER_ROOTS(_) _(make_fcontext)

static int mark_fiber_roots(Elf *elf, struct unwind_table *t)
{
	static const char *const roots[] = {
#define ROOT_NAME(name) #name,
		FIBER_ROOTS(ROOT_NAME)
#undef ROOT_NAME
	};
	struct elf_fsym *syms;
	size_t n;
	int err = elf_function_symbols(elf, &syms, &n);

	for (size_t i = 0; !err && i < n; i++) {
		const struct elf_fsym *s = &syms[i];

		for (size_t k = 0; k < sizeof(roots) / sizeof(*roots) && !err; k++)
			if (s->size && !strcmp(s->name, roots[k]))
				err = mark_end(t, s->addr, s->addr + s->size);
	}
	free(syms);
	return err;
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
 * arm64's kernel returns from a signal handler through the vDSO's
 * __kernel_rt_sigreturn, which has no CFI: the kernel left it out so that
 * unwinders know it by its instructions and read the interrupted
 * registers from the sigcontext, as libgcc does and the walker does
 * (LP_CFA_SIGNAL, bpf/arch_arm64.bpf.h).  A handler returns to the symbol
 * itself, which a walk looks up a byte before: the row starts at the nop
 * the kernel puts there for that.  Only these three instructions get it,
 * and the address after the svc, where a tick during the system call
 * finds the pc (sp still at the frame), unless another function's CFI
 * starts there.  Looked for in the vDSO only (unwind_table_build_vdso()):
 * no other object holds it, and a search of every object's symbols
 * would cost each one's table.
 */
#define ARM64_SIGRETURN "__kernel_rt_sigreturn"
static const uint32_t arm64_sigreturn[] = {
	0xd503201f, /* nop */
	0xd2801168, /* mov x8, #139 (__NR_rt_sigreturn) */
	0xd4000001, /* svc #0 */
};

/* The value of the dynamic symbol called name, or 0. */
static uint64_t dynsym_value(Elf *elf, const char *name)
{
	Elf_Scn *scn = NULL;
	GElf_Shdr sh;

	while ((scn = elf_nextscn(elf, scn))) {
		Elf_Data *d;
		GElf_Sym sym;
		const char *nm;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_DYNSYM || !sh.sh_entsize ||
		    !(d = elf_getdata(scn, NULL)))
			continue;
		for (size_t i = 1; i < sh.sh_size / sh.sh_entsize; i++)
			if (gelf_getsym(d, (int)i, &sym) && sym.st_shndx != SHN_UNDEF &&
			    (nm = elf_strptr(elf, sh.sh_link, sym.st_name)) && !strcmp(nm, name))
				return sym.st_value;
	}
	return 0;
}

static int mark_sigreturn(Elf *elf, struct unwind_table *t)
{
	uint64_t at = dynsym_value(elf, ARM64_SIGRETURN), lo = at - 4;
	size_t isize = 0, avail = 0;
	const uint8_t *image = (const uint8_t *)elf_rawfile(elf, &isize);
	const uint8_t *code;
	int err;

	if (at < 4 || !image)
		return 0;
	code = vaddr_bytes(t, image, isize, lo, &avail);
	if (!code || avail < sizeof(arm64_sigreturn) ||
	    memcmp(code, arm64_sigreturn, sizeof(arm64_sigreturn)))
		return 0;
	err = mark_span(t, lo, lo + sizeof(arm64_sigreturn) + 4, LP_CFA_SIGNAL);
	if (!err)
		err = mark_span(t, lo, lo + sizeof(arm64_sigreturn), LP_CFA_SIGNAL);
	if (err > 0)
		t->signal_rows++;
	return err < 0 ? err : 0;
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

const struct cfi_regs cfi_regs_x86_64 = { EM_X86_64, 7, 6, 16, 0 };
const struct cfi_regs cfi_regs_aarch64 = { EM_AARCH64, 31, 29, 32, 1 };

/* vdso: the image is the kernel's vDSO (its signal trampoline). */
static int build_elf(Elf *elf, struct unwind_table *t, int vdso)
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
	    ehdr.e_ident[EI_DATA] != ELFDATA2LSB)
		return -ENOEXEC;
	b.regs = ehdr.e_machine == EM_X86_64 ? &cfi_regs_x86_64 :
		 ehdr.e_machine == EM_AARCH64 ? &cfi_regs_aarch64 : NULL;
	if (!b.regs)
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
	err = finish_rows(&b) ?: finish_fns(&b);
	if (!err && t->nrows)
		err = mark_entry(t, ehdr.e_entry) ?: mark_fiber_roots(elf, t);
	if (!err && vdso && ehdr.e_machine == EM_AARCH64)
		err = mark_sigreturn(elf, t);
	free(b.v);
	free(b.ranges);
	free(b.fns);
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
	err = build_elf(elf, t, 0);
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

static int build_mem(const void *image, size_t size, struct unwind_table *t, int vdso)
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
	err = build_elf(elf, t, vdso);
	elf_end(elf);
	return err;
}

int unwind_table_build_mem(const void *image, size_t size,
			   struct unwind_table *t)
{
	return build_mem(image, size, t, 0);
}

int unwind_table_build_vdso(const void *image, size_t size, struct unwind_table *t)
{
	return build_mem(image, size, t, 1);
}

const struct lp_unwind_row *unwind_table_lookup(const struct unwind_table *t,
						uint64_t vaddr)
{
	/* The last row whose pc <= vaddr. */
	size_t n = LP_UPPER_BOUND(t->rows, 0, t->nrows, pc, vaddr);

	return n ? &t->rows[n - 1] : NULL;
}

int unwind_table_vaddr_delta(const struct unwind_table *t, uint64_t pgoff,
			     int64_t *d)
{
	/* The kernel maps a segment from the start of its page, in this
	 * kernel's pages (arm64's may be 16 or 64 KiB). */
	uint64_t mask = (uint64_t)sysconf(_SC_PAGESIZE) - 1;

	/* Executable segments first: a page can hold the end of one segment
	 * and the start of the next. */
	for (int pass = 0; pass < 2; pass++) {
		for (uint32_t i = 0; i < t->nsegs; i++) {
			const struct unwind_seg *g = &t->segs[i];
			uint64_t page = g->offset & ~mask;

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

const struct unwind_fn *unwind_table_function(const struct unwind_table *t, uint64_t vaddr)
{
	/* The last function starting at or below vaddr; FDEs do not nest. */
	size_t n = LP_UPPER_BOUND(t->fns, 0, t->nfns, lo, vaddr);

	return n && vaddr < t->fns[n - 1].hi ? &t->fns[n - 1] : NULL;
}

void unwind_table_free(struct unwind_table *t)
{
	free(t->fns);
	free(t->rows);
	free(t->segs);
	memset(t, 0, sizeof(*t));
}

/*
 * elfplt.c - PLT stubs named by the GOT slots they jump through (see
 * elfplt.h).  The slot is read from the stub's own instructions rather
 * than from its place in the table: .plt.sec, .plt.got and BTI stubs
 * each lay the table out their own way, and a slot either names a
 * relocated symbol or names nothing.
 *
 *   x86_64, each entry (sh_entsize bytes, 16 if unsaid):
 *     [endbr64 f3 0f 1e fa] [bnd f2] jmp *disp32(%rip) ff 25 d32 ...
 *                                    GOT slot = end of the jmp + d32
 *   arm64, anywhere in .plt:
 *     [bti c] adrp x16, PAGE; ldr x17, [x16, #OFF]; add x16, ...; br x17
 *                                    GOT slot = PAGE + OFF
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "lib/elfplt.h"
#include "lib/grow.h"

/* A GOT slot and the symbol a relocation binds to it. */
struct slot {
	uint64_t got;
	const char *name;
};

static int slot_cmp(const void *a, const void *b)
{
	const struct slot *x = a, *y = b;

	return x->got < y->got ? -1 : x->got > y->got;
}

static int binds_slot(GElf_Half machine, uint32_t type)
{
	if (machine == EM_X86_64)
		return type == R_X86_64_JUMP_SLOT || type == R_X86_64_GLOB_DAT;
	return type == R_AARCH64_JUMP_SLOT || type == R_AARCH64_GLOB_DAT;
}

static int is_irelative(GElf_Half machine, uint32_t type)
{
	return machine == EM_X86_64 ? type == R_X86_64_IRELATIVE : type == R_AARCH64_IRELATIVE;
}

static const char *slot_name(const struct slot *v, size_t n, uint64_t got)
{
	const struct slot key = { got, NULL }, *s;

	s = n ? bsearch(&key, v, n, sizeof(*v), slot_cmp) : NULL;
	return s ? s->name : NULL;
}

/* An ifunc as read: its resolver's address, and its place in the
 * tables, the first of several names for one resolver being the one. */
struct ifunc {
	uint64_t addr;
	size_t order;
	const char *name;
};

static int ifunc_cmp(const void *a, const void *b)
{
	const struct ifunc *x = a, *y = b;

	if (x->addr != y->addr)
		return x->addr < y->addr ? -1 : 1;
	return x->order < y->order ? -1 : x->order > y->order;
}

/* The STT_GNU_IFUNC symbols of elf's symbol tables as slots keyed by
 * their resolver's address, the first name of each, sorted: an
 * IRELATIVE relocation's addend names one, a call of an ifunc from
 * within its own object (libc's of memcpy). */
static int read_ifuncs(Elf *elf, struct slot **out, size_t *nout)
{
	struct ifunc *v = NULL;
	size_t n = 0, cap = 0;
	Elf_Scn *scn = NULL;

	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		Elf_Data *d;
		GElf_Sym st;

		if (!gelf_getshdr(scn, &sh) || (sh.sh_type != SHT_SYMTAB && sh.sh_type != SHT_DYNSYM) ||
		    !sh.sh_entsize || !(d = elf_getdata(scn, NULL)))
			continue;
		for (size_t i = 0; i < sh.sh_size / sh.sh_entsize && i < INT32_MAX; i++) {
			const char *name;

			if (!gelf_getsym(d, (int)i, &st))
				break;
			if (GELF_ST_TYPE(st.st_info) != STT_GNU_IFUNC || st.st_shndx == SHN_UNDEF ||
			    !(name = elf_strptr(elf, sh.sh_link, st.st_name)) || !name[0])
				continue;
			if (GROW(v, cap, n + 1)) {
				free(v);
				return -ENOMEM;
			}
			v[n] = (struct ifunc){ st.st_value, n, name };
			n++;
		}
	}
	if (n)
		qsort(v, n, sizeof(*v), ifunc_cmp);
	*out = n ? malloc(n * sizeof(**out)) : NULL;
	if (n && !*out) {
		free(v);
		return -ENOMEM;
	}
	*nout = 0;
	for (size_t i = 0; i < n; i++)
		if (!i || v[i].addr != v[i - 1].addr)
			(*out)[(*nout)++] = (struct slot){ v[i].addr, v[i].name };
	free(v);
	return 0;
}

/* The ifuncs (read_ifuncs()), read when first needed. */
struct ifuncs {
	struct slot *v;
	size_t n;
	int read;
};

/* The named symbols of one relocation section's slots, appended. */
static int section_slots(Elf *elf, GElf_Half machine, const GElf_Shdr *sh,
			 Elf_Data *d, struct ifuncs *ifn, struct slot **v, size_t *n,
			 size_t *cap)
{
	Elf_Scn *symscn = elf_getscn(elf, sh->sh_link);
	GElf_Shdr symsh;
	Elf_Data *syms;

	if (!symscn || !gelf_getshdr(symscn, &symsh) || !(syms = elf_getdata(symscn, NULL)))
		return 0;
	for (size_t i = 0; i < sh->sh_size / sh->sh_entsize && i < INT32_MAX; i++) {
		GElf_Rela r;
		GElf_Sym st;
		const char *name;

		if (!gelf_getrela(d, (int)i, &r))
			break;
		if (is_irelative(machine, GELF_R_TYPE(r.r_info))) {
			if (!ifn->read) {
				ifn->read = 1;
				if (read_ifuncs(elf, &ifn->v, &ifn->n))
					return -ENOMEM;
			}
			name = slot_name(ifn->v, ifn->n, (uint64_t)r.r_addend);
		} else if (binds_slot(machine, GELF_R_TYPE(r.r_info)) && GELF_R_SYM(r.r_info) &&
			 gelf_getsym(syms, (int)GELF_R_SYM(r.r_info), &st))
			name = elf_strptr(elf, symsh.sh_link, st.st_name);
		else
			continue;
		if (!name || !name[0])
			continue;
		if (GROW(*v, *cap, *n + 1))
			return -ENOMEM;
		(*v)[(*n)++] = (struct slot){ r.r_offset, name };
	}
	return 0;
}

/* Every named slot of elf's RELA sections, sorted by address. */
static int read_slots(Elf *elf, GElf_Half machine, struct slot **v, size_t *n)
{
	struct ifuncs ifn = { NULL, 0, 0 };
	Elf_Scn *scn = NULL;
	size_t cap = 0;
	int err = 0;

	*v = NULL;
	*n = 0;
	while (!err && (scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		Elf_Data *d;

		if (gelf_getshdr(scn, &sh) && sh.sh_type == SHT_RELA && sh.sh_entsize &&
		    (d = elf_getdata(scn, NULL)))
			err = section_slots(elf, machine, &sh, d, &ifn, v, n, &cap);
	}
	free(ifn.v);
	if (*n)
		qsort(*v, *n, sizeof(**v), slot_cmp);
	return err;
}

/* The slot an x86_64 entry at addr jumps through; 0 if it is no stub. */
static uint64_t x86_slot(const uint8_t *b, size_t len, uint64_t addr)
{
	size_t k = len >= 4 && !memcmp(b, "\xf3\x0f\x1e\xfa", 4) ? 4 : 0;
	int32_t disp;

	if (k < len && b[k] == 0xf2)
		k++;
	if (k + 6 > len || b[k] != 0xff || b[k + 1] != 0x25)
		return 0;
	memcpy(&disp, b + k + 2, sizeof(disp));
	return addr + k + 6 + (int64_t)disp;
}

#define A64_BTI_C 0xd503245fu
#define A64_BR_X17 0xd61f0220u
#define A64_IS_ADRP_X16(w) (((w) & 0x9f00001fu) == 0x90000010u)
#define A64_IS_LDR_X17_X16(w) (((w) & 0xffc003ffu) == 0xf9400211u)

static uint32_t word(const uint8_t *b, size_t i)
{
	uint32_t w;

	memcpy(&w, b + 4 * i, sizeof(w));
	return w;
}

/* The slot of adrp x16 at pc and the ldr x17 that follows it. */
static uint64_t a64_slot(uint32_t adrp, uint32_t ldr, uint64_t pc)
{
	int64_t page = (int64_t)((((adrp >> 5) & 0x7ffff) << 2) | ((adrp >> 29) & 3));

	page = (page ^ 0x100000) - 0x100000; /* 21 bits, signed */
	return (pc & ~0xfffull) + (uint64_t)(page * 4096) + ((ldr >> 10) & 0xfff) * 8;
}

static int add_stub(struct elf_plt_stub **v, size_t *n, size_t *cap,
		    uint64_t addr, uint64_t size, const char *name)
{
	if (!name)
		return 0;
	if (GROW(*v, *cap, *n + 1))
		return -ENOMEM;
	(*v)[(*n)++] = (struct elf_plt_stub){ addr, size, name };
	return 0;
}

static int x86_stubs(const GElf_Shdr *sh, const uint8_t *b, const struct slot *slots,
		     size_t nslots, struct elf_plt_stub **v, size_t *n, size_t *cap)
{
	uint64_t es = sh->sh_entsize >= 8 && sh->sh_entsize <= 32 ? sh->sh_entsize : 16;
	int err = 0;

	for (uint64_t off = 0; !err && off + es <= sh->sh_size; off += es) {
		uint64_t got = x86_slot(b + off, es, sh->sh_addr + off);

		if (got)
			err = add_stub(v, n, cap, sh->sh_addr + off, es,
				       slot_name(slots, nslots, got));
	}
	return err;
}

static int a64_stubs(const GElf_Shdr *sh, const uint8_t *b, const struct slot *slots,
		     size_t nslots, struct elf_plt_stub **v, size_t *n, size_t *cap)
{
	size_t nw = sh->sh_size / 4;
	int err = 0;

	for (size_t i = 0; !err && i + 1 < nw; i++) {
		size_t start = i, end = i + 2;

		if (!A64_IS_ADRP_X16(word(b, i)) || !A64_IS_LDR_X17_X16(word(b, i + 1)))
			continue;
		while (end < nw && end < i + 4 && word(b, end) != A64_BR_X17)
			end++;
		if (end >= nw || word(b, end) != A64_BR_X17)
			continue;
		if (i > 0 && word(b, i - 1) == A64_BTI_C)
			start = i - 1;
		err = add_stub(v, n, cap, sh->sh_addr + 4 * start, 4 * (end + 1 - start),
			       slot_name(slots, nslots,
					 a64_slot(word(b, i), word(b, i + 1), sh->sh_addr + 4 * i)));
		i = end;
	}
	return err;
}

static int is_plt(const char *name, GElf_Half machine)
{
	return !strcmp(name, ".plt") ||
	       (machine == EM_X86_64 && (!strcmp(name, ".plt.sec") || !strcmp(name, ".plt.got")));
}

int elf_plt_stubs(Elf *elf, struct elf_plt_stub **out, size_t *n)
{
	struct slot *slots = NULL;
	size_t nslots = 0, cap = 0, shstrndx;
	Elf_Scn *scn = NULL;
	GElf_Ehdr eh;
	int err;

	*out = NULL;
	*n = 0;
	if (!gelf_getehdr(elf, &eh) || (eh.e_machine != EM_X86_64 && eh.e_machine != EM_AARCH64) ||
	    elf_getshdrstrndx(elf, &shstrndx))
		return 0;
	err = read_slots(elf, eh.e_machine, &slots, &nslots);
	while (!err && nslots && (scn = elf_nextscn(elf, scn))) {
		const char *name;
		GElf_Shdr sh;
		Elf_Data *d;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_PROGBITS ||
		    !(name = elf_strptr(elf, shstrndx, sh.sh_name)) || !is_plt(name, eh.e_machine) ||
		    !(d = elf_getdata(scn, NULL)) || !d->d_buf || d->d_size < sh.sh_size)
			continue;
		err = eh.e_machine == EM_X86_64 ?
			x86_stubs(&sh, d->d_buf, slots, nslots, out, n, &cap) :
			a64_stubs(&sh, d->d_buf, slots, nslots, out, n, &cap);
	}
	free(slots);
	if (err) {
		free(*out);
		*out = NULL;
		*n = 0;
	}
	return err;
}

/*
 * elfsyms.c - reads and merges an ELF object's function symbols, and
 * places file offsets in its segments (see elfsyms.h for why this lives
 * in lib/).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/elfsyms.h"
#include "lib/bsearch.h"
#include "lib/elfplt.h"
#include "lib/grow.h"

#define ENTRY_SIZE 0x40

/* A symbol as read, before aliases are merged. */
struct raw_sym {
	struct elf_fsym s;
	int rank; /* 0 global, 1 weak, 2 anything else, 3 made up (_start, @plt) */
};

static int raw_cmp(const void *a, const void *b)
{
	const struct raw_sym *x = a, *y = b;

	if (x->s.addr != y->s.addr)
		return x->s.addr < y->s.addr ? -1 : 1;
	if (x->rank != y->rank)
		return x->rank - y->rank;
	if (x->s.len != y->s.len)
		return x->s.len < y->s.len ? -1 : 1;
	return strcmp(x->s.name, y->s.name);
}

/* Whether section ndx holds code.  An exported symbol of no type there
 * is code too, written by hand: the arm64 vDSO's __kernel_rt_sigreturn
 * (a .dynsym's other untyped symbols, _edata and the like, mark data). */
static int in_code(Elf *elf, size_t ndx)
{
	Elf_Scn *scn = ndx < SHN_LORESERVE ? elf_getscn(elf, ndx) : NULL;
	GElf_Shdr sh;

	return scn && gelf_getshdr(scn, &sh) && (sh.sh_flags & SHF_EXECINSTR);
}

/* Appends the function symbols of every section of type `type`. */
static int read_section_type(Elf *elf, Elf64_Word type, struct raw_sym **v,
			     size_t *n, size_t *cap)
{
	Elf_Scn *scn = NULL;

	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		Elf_Data *data;
		size_t count;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != type || !sh.sh_entsize)
			continue;
		data = elf_getdata(scn, NULL);
		if (!data)
			continue;
		count = sh.sh_size / sh.sh_entsize;
		for (size_t i = 0; i < count && i < INT32_MAX; i++) {
			GElf_Sym st;
			const char *name;
			int t, b;

			if (!gelf_getsym(data, (int)i, &st))
				break;
			t = GELF_ST_TYPE(st.st_info);
			b = GELF_ST_BIND(st.st_info);
			if (!st.st_value || st.st_shndx == SHN_UNDEF ||
			    (t != STT_FUNC && t != STT_GNU_IFUNC &&
			     !(t == STT_NOTYPE && type == SHT_DYNSYM && in_code(elf, st.st_shndx))))
				continue;
			name = elf_strptr(elf, sh.sh_link, st.st_name);
			if (!name || !name[0])
				continue;
			if (*n == *cap) {
				size_t ncap = *cap ? 2 * *cap : 1024;
				struct raw_sym *nv = realloc(*v, ncap * sizeof(*nv));

				if (!nv)
					return -ENOMEM;
				*v = nv;
				*cap = ncap;
			}
			(*v)[*n].s = (struct elf_fsym){ st.st_value, st.st_size, name,
							strlen(name) };
			(*v)[*n].rank = b == STB_GLOBAL ? 0 : b == STB_WEAK ? 1 : 2;
			(*n)++;
		}
	}
	return 0;
}

/* An executable's entry point, which stripped executables and the
 * dynamic loader name in no symbol table: "_start", as the tools name it
 * and as it is (the first frame of every process).  For objects that can
 * be run: with an interpreter, or needing no library (the loader, a
 * static executable).  ENTRY_SIZE bytes: glibc's _start calls
 * __libc_start_main within its first 0x30, the loader's calls _dl_start
 * at once; a symbol with no size would name the code after it too. */
static int add_entry(Elf *elf, struct raw_sym **v, size_t *n, size_t *cap)
{
	GElf_Ehdr eh;
	size_t nph;
	int interp = 0, needed = 0;
	Elf_Scn *scn = NULL;

	if (!gelf_getehdr(elf, &eh) || !eh.e_entry || (eh.e_type != ET_EXEC && eh.e_type != ET_DYN) ||
	    elf_getphdrnum(elf, &nph))
		return 0;
	for (size_t i = 0; i < nph; i++) {
		GElf_Phdr ph;

		if (gelf_getphdr(elf, (int)i, &ph) && ph.p_type == PT_INTERP)
			interp = 1;
	}
	while (!interp && (scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		Elf_Data *d;
		GElf_Dyn dyn;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_DYNAMIC || !sh.sh_entsize ||
		    !(d = elf_getdata(scn, NULL)))
			continue;
		for (size_t i = 0; i < sh.sh_size / sh.sh_entsize && gelf_getdyn(d, (int)i, &dyn); i++)
			needed |= dyn.d_tag == DT_NEEDED;
	}
	if (!interp && needed)
		return 0;
	for (size_t i = 0; i < *n; i++) {
		const struct elf_fsym *s = &(*v)[i].s;

		if (eh.e_entry == s->addr || (eh.e_entry > s->addr && eh.e_entry - s->addr < s->size))
			return 0;
	}
	if (*n == *cap) {
		size_t ncap = *cap ? 2 * *cap : 16;
		struct raw_sym *nv = realloc(*v, ncap * sizeof(*nv));

		if (!nv)
			return -ENOMEM;
		*v = nv;
		*cap = ncap;
	}
	(*v)[(*n)++] = (struct raw_sym){ { eh.e_entry, ENTRY_SIZE, "_start", 6 }, 3 };
	return 0;
}

/* Folds each run of symbols at one address into its first, which sorting
 * made the preferred one, in place; returns the count left. */
static size_t merge_sorted(struct elf_fsym *v, size_t n)
{
	size_t k = 0;

	for (size_t i = 0; i < n; i++) {
		if (k && v[i].addr == v[k - 1].addr) {
			/* An alias: the first of the group was preferred, but
			 * a size it lacks may be known by another name. */
			if (!v[k - 1].size)
				v[k - 1].size = v[i].size;
			continue;
		}
		v[k++] = v[i];
	}
	return k;
}

static int fsym_cmp(const void *a, const void *b)
{
	const struct raw_sym x = { *(const struct elf_fsym *)a, 0 };
	const struct raw_sym y = { *(const struct elf_fsym *)b, 0 };

	return raw_cmp(&x, &y);
}

size_t elf_fsyms_merge(struct elf_fsym *v, size_t n)
{
	if (n)
		qsort(v, n, sizeof(*v), fsym_cmp);
	return merge_sorted(v, n);
}

/* The PLT's stubs, "sym@plt", their names written to *names (malloc'd):
 * the raw symbols point into it. */
static int add_plt(Elf *elf, struct raw_sym **v, size_t *n, size_t *cap, char **names)
{
	struct elf_plt_stub *stubs;
	size_t nstubs, bytes = 0, at = 0;
	int err = elf_plt_stubs(elf, &stubs, &nstubs);

	*names = NULL;
	for (size_t i = 0; !err && i < nstubs; i++)
		bytes += strlen(stubs[i].name) + sizeof("@plt");
	if (!err && nstubs && (!(*names = malloc(bytes)) || GROW(*v, *cap, *n + nstubs)))
		err = -ENOMEM;
	for (size_t i = 0; !err && i < nstubs; i++) {
		char *name = *names + at;
		size_t len = (size_t)sprintf(name, "%s@plt", stubs[i].name);

		(*v)[(*n)++] = (struct raw_sym){ { stubs[i].addr, stubs[i].size, name, len }, 3 };
		at += len + 1;
	}
	free(stubs);
	return err;
}

/* The end of the executable section that holds addr, or UINT64_MAX. */
static uint64_t section_end(Elf *elf, uint64_t addr)
{
	Elf_Scn *scn = NULL;

	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;

		if (gelf_getshdr(scn, &sh) && (sh.sh_flags & SHF_ALLOC) &&
		    (sh.sh_flags & SHF_EXECINSTR) && sh.sh_type != SHT_NOBITS &&
		    addr >= sh.sh_addr && addr - sh.sh_addr < sh.sh_size)
			return sh.sh_addr + sh.sh_size;
	}
	return UINT64_MAX;
}

/* A symbol without a size (hand-written assembly, _init) covers up to
 * the next symbol, and no further than its section: _init's .init, not
 * the .plt after it.  The size is written out, so that a table read from
 * the file and one embedded (a few symbols) bound it alike. */
static void bound_sizeless(Elf *elf, struct elf_fsym *v, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		uint64_t end;

		if (v[i].size)
			continue;
		end = section_end(elf, v[i].addr);
		if (i + 1 < n && v[i + 1].addr < end)
			end = v[i + 1].addr;
		if (end != UINT64_MAX)
			v[i].size = end - v[i].addr;
	}
}

/* The table and the names made up for it in one block, freed as one. */
static struct elf_fsym *pack(const struct elf_fsym *v, size_t n, const char *names,
			     size_t nbytes)
{
	struct elf_fsym *out = malloc(n * sizeof(*out) + nbytes);
	char *copy;

	if (!out)
		return NULL;
	copy = (char *)(out + n);
	memcpy(out, v, n * sizeof(*out));
	if (nbytes)
		memcpy(copy, names, nbytes);
	for (size_t i = 0; i < n; i++)
		if (names && out[i].name >= names && out[i].name < names + nbytes)
			out[i].name = copy + (out[i].name - names);
	return out;
}

int elf_function_symbols(Elf *elf, struct elf_fsym **out, size_t *n)
{
	struct raw_sym *raw = NULL;
	struct elf_fsym *syms = NULL;
	char *names = NULL;
	size_t nraw = 0, cap = 0, nnames = 0, nsyms;
	int err;

	*out = NULL;
	*n = 0;
	err = read_section_type(elf, SHT_SYMTAB, &raw, &nraw, &cap) ?:
	      read_section_type(elf, SHT_DYNSYM, &raw, &nraw, &cap) ?:
	      add_entry(elf, &raw, &nraw, &cap);
	if (!err) {
		size_t before = nraw;

		err = add_plt(elf, &raw, &nraw, &cap, &names);
		for (size_t i = before; i < nraw; i++)
			nnames += raw[i].s.len + 1;
	}
	if (err || !nraw)
		goto cleanup;
	qsort(raw, nraw, sizeof(*raw), raw_cmp);
	syms = malloc(nraw * sizeof(*syms));
	if (!syms) {
		err = -ENOMEM;
		goto cleanup;
	}
	for (size_t i = 0; i < nraw; i++)
		syms[i] = raw[i].s;
	nsyms = merge_sorted(syms, nraw);
	bound_sizeless(elf, syms, nsyms);
	*out = pack(syms, nsyms, names, nnames);
	if (!*out)
		err = -ENOMEM;
	else
		*n = nsyms;
cleanup:
	free(syms);
	free(names);
	free(raw);
	return err;
}

int elf_seg_vaddr(const struct lp_objseg *segs, size_t nsegs, uint64_t off,
		  uint64_t *vaddr)
{
	const struct lp_objseg *g = NULL;

	for (size_t i = 0; !g && i < nsegs; i++)
		if (off >= segs[i].offset && off - segs[i].offset < segs[i].filesz)
			g = &segs[i];
	for (size_t i = 0; !g && i < nsegs; i++)
		if (off < segs[i].offset && off >= (segs[i].offset & ~0xfffull))
			g = &segs[i];
	if (!g)
		return -ENOENT;
	*vaddr = off - g->offset + g->vaddr;
	return 0;
}

long lp_objsym_find(const struct lp_objsym *v, size_t n, uint64_t addr,
		    size_t *from, size_t *to)
{
	size_t lo, bottom, j;
	long found = -1;

	if (from)
		*from = *to = 0;
	if (!n || addr < v[0].addr)
		return -1;
	lo = LP_UPPER_BOUND(v, 0, n, addr, addr) - 1; /* v[0] is at or below */
	bottom = lo >= LP_SYM_LOOKBACK - 1 ? lo - (LP_SYM_LOOKBACK - 1) : 0;
	for (j = lo;; j--) {
		if (v[j].size ? addr - v[j].addr < v[j].size : j == lo) {
			found = (long)j;
			break;
		}
		if (j == bottom)
			break;
	}
	if (from) {
		*from = j;
		*to = lo + 1;
	}
	return found;
}

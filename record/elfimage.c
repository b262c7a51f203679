/*
 * elfimage.c - reads an ELF object for symexec.h (see elfimage.h): its
 * program headers, executable segments, exported functions, PLT and
 * relative relocations, with libelf over a descriptor.
 */
#include <errno.h>
#include <gelf.h>
#include <libelf.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "record/elfimage.h"

#define MAX_SYMS (1u << 20)
#define MAX_RELS (1u << 22)

static int sym_cmp(const void *a, const void *b)
{
	return strcmp(((const struct elf_image_sym *)a)->name,
		      ((const struct elf_image_sym *)b)->name);
}

static int rel_cmp(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static int read_segments(struct elf_image *im, Elf *elf)
{
	uint64_t lo = UINT64_MAX, hi = 0;
	size_t n;

	if (elf_getphdrnum(elf, &n))
		return -ENOEXEC;
	for (size_t i = 0; i < n; i++) {
		GElf_Phdr ph;

		if (!gelf_getphdr(elf, (int)i, &ph) || ph.p_type != PT_LOAD)
			continue;
		if (im->nseg < sizeof(im->seg) / sizeof(im->seg[0])) {
			im->seg[im->nseg].vaddr = ph.p_vaddr;
			im->seg[im->nseg].filesz = ph.p_filesz;
			im->seg[im->nseg].offset = ph.p_offset;
			im->nseg++;
		}
		if (!(ph.p_flags & PF_X) || !ph.p_filesz)
			continue;
		if (ph.p_vaddr < lo)
			lo = ph.p_vaddr;
		if (ph.p_vaddr + ph.p_filesz > hi)
			hi = ph.p_vaddr + ph.p_filesz;
	}
	if (lo >= hi || hi - lo > ELFIMAGE_MAX_CODE)
		return -ENOEXEC;
	im->code.code = calloc(1, hi - lo);
	if (!im->code.code)
		return -ENOMEM;
	im->code.start = lo;
	im->code.end = hi;
	for (unsigned i = 0; i < im->nseg; i++) {
		uint64_t v = im->seg[i].vaddr, end = v + im->seg[i].filesz;

		if (v < lo || end > hi)
			continue;
		if (pread(im->fd, (uint8_t *)im->code.code + (v - lo), end - v,
			  (off_t)im->seg[i].offset) != (ssize_t)(end - v))
			return -EIO;
	}
	return 0;
}

/* .dynsym's defined functions, and the PLT's range from section names. */
static int read_sections(struct elf_image *im, Elf *elf)
{
	Elf_Scn *scn = NULL;
	size_t shstrndx, cap = 0, relcap = 0;

	if (elf_getshdrstrndx(elf, &shstrndx))
		shstrndx = 0;
	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		Elf_Data *data;
		const char *sname;

		if (!gelf_getshdr(scn, &sh))
			continue;
		sname = shstrndx ? elf_strptr(elf, shstrndx, sh.sh_name) : NULL;
		if ((sh.sh_flags & SHF_EXECINSTR) && sh.sh_type == SHT_PROGBITS && sh.sh_size) {
			if (!im->text_end || sh.sh_addr < im->text_start)
				im->text_start = sh.sh_addr;
			if (sh.sh_addr + sh.sh_size > im->text_end)
				im->text_end = sh.sh_addr + sh.sh_size;
		}
		if (sname && (!strcmp(sname, ".plt") || !strcmp(sname, ".plt.sec") ||
			      !strcmp(sname, ".plt.got"))) {
			if (!im->code.plt_end || sh.sh_addr < im->code.plt_start)
				im->code.plt_start = sh.sh_addr;
			if (sh.sh_addr + sh.sh_size > im->code.plt_end)
				im->code.plt_end = sh.sh_addr + sh.sh_size;
		}
		if (sh.sh_type == SHT_RELA && sh.sh_entsize &&
		    (data = elf_getdata(scn, NULL))) {
			for (size_t i = 0; i < sh.sh_size / sh.sh_entsize; i++) {
				GElf_Rela r;
				uint64_t *v;

				if (!gelf_getrela(data, (int)i, &r) ||
				    (GELF_R_TYPE(r.r_info) != R_X86_64_RELATIVE &&
				     GELF_R_TYPE(r.r_info) != R_AARCH64_RELATIVE) ||
				    im->nrel >= MAX_RELS)
					continue;
				if (im->nrel == relcap) {
					relcap = relcap ? relcap * 2 : 256;
					v = realloc(im->rel, relcap * 2 * sizeof(*v));
					if (!v)
						return -ENOMEM;
					im->rel = v;
				}
				im->rel[2 * im->nrel] = r.r_offset;
				im->rel[2 * im->nrel + 1] = (uint64_t)r.r_addend;
				im->nrel++;
			}
		}
		if (sh.sh_type != SHT_DYNSYM || !sh.sh_entsize || !(data = elf_getdata(scn, NULL)))
			continue;
		for (size_t i = 0; i < sh.sh_size / sh.sh_entsize && im->nsyms < MAX_SYMS; i++) {
			GElf_Sym sym;
			const char *name;
			struct elf_image_sym *v;

			if (!gelf_getsym(data, (int)i, &sym) || !sym.st_value ||
			    sym.st_shndx == SHN_UNDEF || GELF_ST_TYPE(sym.st_info) != STT_FUNC)
				continue;
			name = elf_strptr(elf, sh.sh_link, sym.st_name);
			if (!name || !name[0])
				continue;
			if (im->nsyms == cap) {
				cap = cap ? cap * 2 : 256;
				v = realloc(im->syms, cap * sizeof(*v));
				if (!v)
					return -ENOMEM;
				im->syms = v;
			}
			im->syms[im->nsyms].name = strdup(name);
			if (!im->syms[im->nsyms].name)
				return -ENOMEM;
			im->syms[im->nsyms++].addr = sym.st_value;
		}
	}
	if (im->nsyms)
		qsort(im->syms, im->nsyms, sizeof(*im->syms), sym_cmp);
	if (im->nrel)
		qsort(im->rel, im->nrel, 2 * sizeof(*im->rel), rel_cmp);
	return 0;
}

static int image_read(const void *obj, uint64_t vaddr, void *buf, size_t len)
{
	return elf_image_read(obj, vaddr, buf, len);
}

static int image_pointer(const void *obj, uint64_t vaddr, uint64_t *out)
{
	return elf_image_pointer(obj, vaddr, out);
}

int elf_image_open(struct elf_image *im, int fd)
{
	GElf_Ehdr eh;
	Elf *elf;
	int err;

	memset(im, 0, sizeof(*im));
	im->fd = fd;
	elf_version(EV_CURRENT);
	elf = elf_begin(fd, ELF_C_READ, NULL);
	if (!elf)
		return -ENOEXEC;
	if (!gelf_getehdr(elf, &eh) || eh.e_ident[EI_CLASS] != ELFCLASS64) {
		elf_end(elf);
		return -ENOEXEC;
	}
	im->machine = eh.e_machine;
	err = read_segments(im, elf);
	if (!err)
		err = read_sections(im, elf);
	elf_end(elf);
	im->code.read = image_read;
	im->code.pointer = image_pointer;
	im->code.obj = im;
	if (err)
		elf_image_close(im);
	return err;
}

void elf_image_close(struct elf_image *im)
{
	for (size_t i = 0; i < im->nsyms; i++)
		free(im->syms[i].name);
	free(im->syms);
	free(im->rel);
	free((void *)im->code.code);
	memset(im, 0, sizeof(*im));
	im->fd = -1;
}

int elf_image_is_text(const struct elf_image *im, uint64_t vaddr)
{
	if (im->text_end)
		return vaddr >= im->text_start && vaddr < im->text_end;
	return vaddr >= im->code.start && vaddr < im->code.end;
}

uint64_t elf_image_sym(const struct elf_image *im, const char *name)
{
	struct elf_image_sym key = { .name = (char *)name }, *s;

	if (!im->nsyms)
		return 0;
	s = bsearch(&key, im->syms, im->nsyms, sizeof(*im->syms), sym_cmp);
	return s ? s->addr : 0;
}

int elf_image_read(const struct elf_image *im, uint64_t vaddr, void *buf, size_t len)
{
	for (unsigned i = 0; i < im->nseg; i++) {
		const struct elf_image_seg *s = &im->seg[i];

		if (vaddr < s->vaddr || vaddr - s->vaddr > s->filesz ||
		    len > s->filesz - (vaddr - s->vaddr))
			continue;
		if (pread(im->fd, buf, len, (off_t)(s->offset + (vaddr - s->vaddr))) ==
		    (ssize_t)len)
			return 0;
		return -EFAULT;
	}
	return -EFAULT;
}

int elf_image_pointer(const struct elf_image *im, uint64_t vaddr, uint64_t *out)
{
	size_t lo = 0, hi = im->nrel;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (im->rel[2 * mid] == vaddr) {
			*out = im->rel[2 * mid + 1];
			return 0;
		}
		if (im->rel[2 * mid] < vaddr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return elf_image_read(im, vaddr, out, sizeof(*out));
}

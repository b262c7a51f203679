/*
 * dwarf_image.c - an object's DWARF sections made into one ELF image in
 * memory for libdw (see dwarf_image.h).
 *
 * The image is the least libdw needs: an ELF header of the object's
 * class, byte order and machine, the sections, a section name table and
 * the section headers; no program headers and no symbols (names of
 * functions come from the symbol tables).  Its headers are written field
 * by field in the object's byte order, so a big-endian object reads the
 * same here; libelf converts them on reading.  What libdw then makes of
 * the DWARF, which whoever wrote the files controls, is libdw's to check;
 * the sections' total is bounded before anything that large is copied.
 * A dwz shared file becomes an image the same way, its sections counted
 * in the same bound: libdw reads it only where the object's DWARF points.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/dwarf_image.h"

struct image {
	uint8_t *b;
	size_t len, cap;
	int be;    /* big-endian */
	int is64;  /* ELFCLASS64 */
};

/* Appends an integer of `bytes` bytes in the image's byte order. */
static void put(struct image *im, uint64_t v, int bytes)
{
	for (int i = 0; i < bytes; i++) {
		int shift = 8 * (im->be ? bytes - 1 - i : i);

		im->b[im->len++] = (uint8_t)(v >> shift);
	}
}

/* An address-sized field: 8 bytes in a 64-bit file, 4 in a 32-bit one. */
static void put_addr(struct image *im, uint64_t v)
{
	put(im, v, im->is64 ? 8 : 4);
}

static void align(struct image *im, size_t a)
{
	while (im->len % a)
		im->b[im->len++] = 0;
}

static int present(const struct lp_debug_sections *s, int i)
{
	return s->scn[i] && s->size[i];
}

/*
 * Builds and opens the image of s's sections (one without data or bytes
 * is left out): 0, 1 when libdw refuses them or the ELF identity is not
 * one it reads, -ENOMEM.  Layout: header, the sections (8-aligned),
 * .shstrtab, the section headers: [0] null, then each present section,
 * then .shstrtab.
 */
static int build(struct lp_dwarf_image *d, const struct lp_debug_sections *s)
{
	uint32_t eclass = s->eclass, edata = s->edata, emachine = s->emachine;
	struct image im = { 0 };
	uint64_t off[LP_DEBUG_NSECT] = { 0 }, name_off[LP_DEBUG_NSECT] = { 0 };
	uint64_t strtab_off, strtab_len = 1, shoff;
	size_t ehsize, shentsize, need, nsect = 0, k;

	memset(d, 0, sizeof(*d));
	if ((eclass != ELFCLASS32 && eclass != ELFCLASS64) ||
	    (edata != ELFDATA2LSB && edata != ELFDATA2MSB) || emachine > 0xffff)
		return 1;
	im.is64 = eclass == ELFCLASS64;
	im.be = edata == ELFDATA2MSB;
	ehsize = im.is64 ? 64 : 52;
	shentsize = im.is64 ? 64 : 40;
	need = ehsize + 8;
	for (int i = 0; i < LP_DEBUG_NSECT; i++) {
		if (!present(s, i))
			continue;
		nsect++;
		name_off[i] = strtab_len;
		strtab_len += strlen(lp_debug_section_names[i]) + 1;
		need += s->size[i] + 8;
	}
	strtab_len += sizeof(".shstrtab");
	need += strtab_len + 8 + (nsect + 2) * shentsize;
	if (!im.is64 && need > UINT32_MAX)
		return 1;
	im.b = malloc(need);
	if (!im.b)
		return -ENOMEM;
	im.cap = need;
	im.len = ehsize; /* the header goes in last, once offsets are known */
	for (int i = 0; i < LP_DEBUG_NSECT; i++) {
		if (!present(s, i))
			continue;
		align(&im, 8);
		off[i] = im.len;
		if (lp_debug_section_copy(s, i, im.b + im.len)) {
			free(im.b);
			return 1;
		}
		im.len += s->size[i];
	}
	strtab_off = im.len;
	im.b[im.len++] = 0;
	for (int i = 0; i < LP_DEBUG_NSECT; i++) {
		if (!present(s, i))
			continue;
		k = strlen(lp_debug_section_names[i]) + 1;
		memcpy(im.b + im.len, lp_debug_section_names[i], k);
		im.len += k;
	}
	memcpy(im.b + im.len, ".shstrtab", sizeof(".shstrtab"));
	im.len += sizeof(".shstrtab");
	align(&im, 8);
	shoff = im.len;
	memset(im.b + im.len, 0, shentsize); /* section 0 */
	im.len += shentsize;
	for (int i = 0; i <= LP_DEBUG_NSECT; i++) {
		int last = i == LP_DEBUG_NSECT;

		if (!last && !present(s, i))
			continue;
		put(&im, last ? strtab_len - sizeof(".shstrtab") : name_off[i], 4);
		put(&im, last ? SHT_STRTAB : SHT_PROGBITS, 4);
		put_addr(&im, 0);                          /* flags */
		put_addr(&im, 0);                          /* addr */
		put_addr(&im, last ? strtab_off : off[i]); /* offset */
		put_addr(&im, last ? strtab_len : s->size[i]);
		put(&im, 0, 4);                            /* link */
		put(&im, 0, 4);                            /* info */
		put_addr(&im, 1);                          /* addralign */
		put_addr(&im, 0);                          /* entsize */
	}
	k = im.len;
	im.len = 0;
	memcpy(im.b, ELFMAG, SELFMAG);
	im.b[EI_CLASS] = (uint8_t)eclass;
	im.b[EI_DATA] = (uint8_t)edata;
	im.b[EI_VERSION] = EV_CURRENT;
	memset(im.b + EI_OSABI, 0, EI_NIDENT - EI_OSABI);
	im.len = EI_NIDENT;
	put(&im, ET_EXEC, 2);
	put(&im, emachine, 2);
	put(&im, EV_CURRENT, 4);
	put_addr(&im, 0);     /* entry */
	put_addr(&im, 0);     /* phoff */
	put_addr(&im, shoff);
	put(&im, 0, 4);       /* flags */
	put(&im, ehsize, 2);
	put(&im, 0, 2);       /* phentsize */
	put(&im, 0, 2);       /* phnum */
	put(&im, shentsize, 2);
	put(&im, nsect + 2, 2);
	put(&im, nsect + 1, 2); /* shstrndx */
	d->image = im.b;
	d->elf = elf_memory((char *)im.b, k);
	d->dwarf = d->elf ? dwarf_begin_elf(d->elf, DWARF_C_READ, NULL) : NULL;
	if (!d->dwarf) {
		lp_dwarf_image_close(d);
		return 1;
	}
	return 0;
}

void lp_dwarf_image_close(struct lp_dwarf_image *d)
{
	/* The main Dwarf first: it reads the shared one, which libdw does
	 * not end for us when it was given by dwarf_setalt(). */
	if (d->dwarf)
		dwarf_end(d->dwarf);
	if (d->elf)
		elf_end(d->elf);
	free(d->image);
	if (d->alt_dwarf)
		dwarf_end(d->alt_dwarf);
	if (d->alt_elf)
		elf_end(d->alt_elf);
	free(d->alt_image);
	memset(d, 0, sizeof(*d));
}

/*
 * Finds the dwz shared file that elf's DWARF names, under symfs first when
 * it is set, then on this machine.  `file` is the debug file elf was read
 * from, NULL when elf is the object itself, whose path is `recorded`: a
 * relative link is in the directory of the file that holds it.  0 with
 * *alt open, 1 when elf names none, -ENOENT.
 */
static int find_alt(Elf *elf, const char *file, const char *recorded,
		    const char *symfs, struct lp_debug_file *alt)
{
	const char *roots[2] = { symfs, "" };
	char own[PATH_MAX];
	int err = -ENOENT;

	for (int i = symfs ? 0 : 1; i < 2; i++) {
		const char *where = file;

		if (!file) {
			if ((size_t)snprintf(own, sizeof(own), "%s%s", roots[i], recorded) >=
			    sizeof(own))
				continue;
			where = own;
		}
		err = lp_debug_altfile_find(elf, where, roots[i], alt);
		if (err >= 0)
			return err;
	}
	return err;
}

/*
 * Opens the dwz shared file that elf's DWARF names, if any, and gives it
 * to d's Dwarf; `used` bytes of the bound are d's own sections.  Without
 * it (none named, none found, over the bound) d reads as it would have:
 * what the shared file holds goes unnamed.  0, or -ENOMEM.  A shared file
 * needs no lines of its own: its units are imported for their
 * declarations, and hold no code.
 */
static int open_alt(struct lp_dwarf_image *d, Elf *elf, const char *file,
		    const char *recorded, const char *symfs, uint64_t used)
{
	struct lp_debug_file f = { .fd = -1 };
	struct lp_debug_sections s;
	struct lp_dwarf_image a;
	int err;

	if (find_alt(elf, file, recorded, symfs, &f))
		return 0;
	err = lp_debug_sections_read(f.elf, &s);
	if (err == -ENOENT && s.scn[LP_DEBUG_INFO] && s.scn[LP_DEBUG_ABBREV])
		err = 0;
	if (!err && s.total <= LP_DWARF_MAX_BYTES - used)
		err = build(&a, &s);
	else
		err = 1;
	if (!err) {
		d->alt_image = a.image;
		d->alt_elf = a.elf;
		d->alt_dwarf = a.dwarf;
		dwarf_setalt(d->dwarf, d->alt_dwarf);
	}
	lp_debug_file_close(&f);
	return err < 0 ? err : 0;
}

int lp_dwarf_image_open(struct lp_dwarf_image *d, Elf *obj, const char *recorded,
			const char *symfs)
{
	struct lp_debug_file dbg = { .fd = -1 };
	struct lp_debug_sections s;
	Elf *elf = obj;
	int err = 1;

	memset(d, 0, sizeof(*d));
	if (!lp_has_debug_info(elf)) {
		if ((!symfs || lp_debug_file_find(obj, recorded, symfs, &dbg)) &&
		    lp_debug_file_find(obj, recorded, "", &dbg))
			return 1;
		elf = dbg.elf;
	}
	if (lp_debug_sections_read(elf, &s) || s.total > LP_DWARF_MAX_BYTES)
		goto cleanup;
	err = build(d, &s);
	if (!err)
		err = open_alt(d, elf, elf == obj ? NULL : dbg.path, recorded, symfs,
			       s.total);
	if (err < 0)
		lp_dwarf_image_close(d);
cleanup:
	lp_debug_file_close(&dbg);
	return err;
}

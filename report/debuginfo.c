/*
 * debuginfo.c - an object's DWARF sections, embedded or local, made into
 * one ELF image in memory for libdw (see debuginfo.h).
 *
 * The image is the least libdw needs: an ELF header of the recorded
 * class, byte order and machine, the sections, a section name table and
 * the section headers; no program headers and no symbols (names of
 * functions come from the symbol tables, §3.14).  Its headers are written
 * field by field in the recorded byte order, so a trace of a big-endian
 * machine reads the same here; libelf converts them on reading.
 *
 * Sections may be sparse: the recorder embeds of .debug_info,
 * .debug_abbrev and .debug_line only the compilation units samples hit
 * (and every unit's header), each piece at its true offset, so the bytes
 * between pieces are zeros here.  libdw then sees a unit not embedded as
 * one whose first entry is a null one, and never reads the rest, as no
 * address the trace holds falls in it.
 *
 * Everything comes from an untrusted trace: every section is assembled
 * from pieces whose offsets and lengths decode.c checked against the
 * section's size, which is itself bounded (LP_DEBUG_MAX_OBJECT per
 * section); the sizes of one object's sections together are held to the
 * same bound before anything that large is allocated, as the pieces of
 * one object are before anything is kept.  What libdw then makes of
 * hostile DWARF is libdw's to check.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "format/debuginfo.h"
#include "report/debuginfo.h"
#include "report/htab.h"

struct dbg_piece {
	int sect; /* index in lp_debug_section_names */
	uint64_t size, offset;
	uint32_t len;
	size_t order; /* arrival: of overlapping pieces, the first stands */
	uint8_t *data;
};

int dbg_pieces_add(struct dbg_pieces *p, const struct lp_debug *rec)
{
	struct dbg_piece *pc;
	int sect, err;

	if (rec->flags || !rec->name)
		return 0; /* a note: nothing to read */
	sect = lp_debug_section_index(rec->name);
	if (sect < 0 || !rec->len)
		return 0;
	if (!p->identity) {
		p->eclass = rec->eclass;
		p->edata = rec->edata;
		p->emachine = rec->emachine;
		p->identity = 1;
	} else if (rec->eclass != p->eclass || rec->edata != p->edata ||
		   rec->emachine != p->emachine) {
		return 0;
	}
	/* The recorder embeds at most LP_DEBUG_MAX_OBJECT per object; a
	 * trace that holds more for one is damaged or hostile. */
	if (rec->len > LP_DEBUG_MAX_OBJECT - p->bytes)
		return 0;
	err = GROW(p->v, p->cap, p->n + 1);
	if (err)
		return err;
	pc = &p->v[p->n];
	pc->data = malloc(rec->len);
	if (!pc->data)
		return -ENOMEM;
	memcpy(pc->data, rec->data, rec->len);
	pc->sect = sect;
	pc->size = rec->size;
	pc->offset = rec->offset;
	pc->len = rec->len;
	pc->order = p->n;
	p->bytes += rec->len;
	p->n++;
	return 0;
}

void dbg_pieces_free(struct dbg_pieces *p)
{
	for (size_t i = 0; i < p->n; i++)
		free(p->v[i].data);
	free(p->v);
	memset(p, 0, sizeof(*p));
}

static int piece_cmp(const void *a, const void *b)
{
	const struct dbg_piece *x = *(const struct dbg_piece *const *)a;
	const struct dbg_piece *y = *(const struct dbg_piece *const *)b;

	if (x->offset != y->offset)
		return x->offset < y->offset ? -1 : 1;
	return x->order < y->order ? -1 : x->order > y->order;
}

/* ---- the ELF image ------------------------------------------------------ */

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

struct sect {
	const uint8_t *data;
	uint64_t size;
};

/*
 * Builds the ELF image of the given sections (NULL data: absent) and
 * opens it.  Layout: header, the sections (8-aligned), .shstrtab, the
 * section headers: [0] null, then each present section, then .shstrtab.
 */
static int build_image(struct dbg_image *d, const struct sect *s, uint32_t eclass,
		       uint32_t edata, uint32_t emachine)
{
	struct image im = { 0 };
	uint64_t off[LP_DEBUG_NSECT] = { 0 }, name_off[LP_DEBUG_NSECT] = { 0 };
	uint64_t strtab_off, strtab_len = 1, shoff;
	size_t ehsize, shentsize, need, nsect = 0, k;

	if ((eclass != ELFCLASS32 && eclass != ELFCLASS64) ||
	    (edata != ELFDATA2LSB && edata != ELFDATA2MSB) || emachine > 0xffff)
		return 1;
	im.is64 = eclass == ELFCLASS64;
	im.be = edata == ELFDATA2MSB;
	ehsize = im.is64 ? 64 : 52;
	shentsize = im.is64 ? 64 : 40;
	need = ehsize + 8;
	for (int i = 0; i < LP_DEBUG_NSECT; i++) {
		if (!s[i].data)
			continue;
		nsect++;
		name_off[i] = strtab_len;
		strtab_len += strlen(lp_debug_section_names[i]) + 1;
		need += s[i].size + 8;
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
		if (!s[i].data)
			continue;
		align(&im, 8);
		off[i] = im.len;
		memcpy(im.b + im.len, s[i].data, s[i].size);
		im.len += s[i].size;
	}
	strtab_off = im.len;
	im.b[im.len++] = 0;
	for (int i = 0; i < LP_DEBUG_NSECT; i++) {
		if (!s[i].data)
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

		if (!last && !s[i].data)
			continue;
		put(&im, last ? strtab_len - sizeof(".shstrtab") : name_off[i], 4);
		put(&im, last ? SHT_STRTAB : SHT_PROGBITS, 4);
		put_addr(&im, 0);                          /* flags */
		put_addr(&im, 0);                          /* addr */
		put_addr(&im, last ? strtab_off : off[i]); /* offset */
		put_addr(&im, last ? strtab_len : s[i].size);
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
		dbg_image_close(d);
		return 1;
	}
	return 0;
}

void dbg_image_close(struct dbg_image *d)
{
	if (d->dwarf)
		dwarf_end(d->dwarf);
	if (d->elf)
		elf_end(d->elf);
	free(d->image);
	memset(d, 0, sizeof(*d));
}

/* Assembles section `sect` from its pieces into *out (malloc'd), the
 * gaps between them zero-filled: 0, 1 when no piece has it or it would
 * take the object's sections past LP_DEBUG_MAX_OBJECT (*total: their
 * sizes so far), -ENOMEM. */
static int assemble(const struct dbg_pieces *p, int sect, struct dbg_piece **tmp,
		    struct sect *out, uint64_t *total)
{
	uint64_t size = 0, covered = 0;
	size_t n = 0;
	uint8_t *buf;

	for (size_t i = 0; i < p->n; i++) {
		if (p->v[i].sect != sect)
			continue;
		if (!n)
			size = p->v[i].size; /* the first size met stands */
		if (p->v[i].size == size)
			tmp[n++] = &p->v[i];
	}
	if (!n)
		return 1;
	/* Each size is bounded, but sizes are not pieces: a few small
	 * pieces must not make an object cost ten times the bound. */
	if (size > LP_DEBUG_MAX_OBJECT - *total)
		return 1;
	*total += size;
	qsort(tmp, n, sizeof(*tmp), piece_cmp);
	buf = calloc(1, size ? size : 1);
	if (!buf)
		return -ENOMEM;
	/* In offset order, each byte from the first piece that holds it;
	 * decode.c checked that every piece lies inside size. */
	for (size_t i = 0; i < n && covered < size; i++) {
		uint64_t start = tmp[i]->offset, end = start + tmp[i]->len;

		if (end > size || end <= covered)
			continue;
		if (start < covered)
			start = covered;
		memcpy(buf + start, tmp[i]->data + (start - tmp[i]->offset), end - start);
		covered = end;
	}
	out->data = buf;
	out->size = size;
	return 0;
}

int dbg_image_from_pieces(struct dbg_image *d, const struct dbg_pieces *p)
{
	struct sect s[LP_DEBUG_NSECT] = { 0 };
	struct dbg_piece **tmp;
	uint64_t total = 0;
	int err = 0;

	memset(d, 0, sizeof(*d));
	if (!p->n)
		return 1;
	tmp = malloc(p->n * sizeof(*tmp));
	if (!tmp)
		return -ENOMEM;
	for (int i = 0; i < LP_DEBUG_NSECT && err >= 0; i++) {
		int r = assemble(p, i, tmp, &s[i], &total);

		if (r < 0 || (r && i < LP_DEBUG_UNIT_SECTS)) /* info, abbrev, line */
			err = r;
	}
	if (!err)
		err = build_image(d, s, p->eclass, p->edata, p->emachine);
	for (int i = 0; i < LP_DEBUG_NSECT; i++)
		free((void *)s[i].data);
	free(tmp);
	return err;
}

int dbg_image_from_file(struct dbg_image *d, const char *path,
			const char *recorded, const char *symfs)
{
	struct lp_debug_file obj, dbg = { .fd = -1 };
	struct lp_debug_sections ds;
	struct sect s[LP_DEBUG_NSECT] = { 0 };
	Elf *elf;
	int err = 1;

	memset(d, 0, sizeof(*d));
	if (lp_debug_file_open(&obj, path))
		return 1;
	elf = obj.elf;
	if (!lp_has_debug_info(elf)) {
		if ((!symfs || lp_debug_file_find(elf, recorded, symfs, &dbg)) &&
		    lp_debug_file_find(elf, recorded, "", &dbg))
			goto cleanup;
		elf = dbg.elf;
	}
	/* The bound of the embedded case, so that a report of a --no-embed
	 * trace is the one it would have been with the DWARF embedded. */
	if (lp_debug_sections_read(elf, LP_DEBUG_MAX_OBJECT, &ds) ||
	    ds.total > LP_DEBUG_MAX_OBJECT)
		goto cleanup;
	for (int i = 0; i < LP_DEBUG_NSECT; i++) {
		s[i].data = ds.size[i] ? ds.data[i] : NULL;
		s[i].size = ds.size[i];
	}
	err = build_image(d, s, ds.eclass, ds.edata, ds.emachine);
cleanup:
	lp_debug_file_close(&dbg);
	lp_debug_file_close(&obj);
	return err;
}

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
#include "format/dwarf_image.h"
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

/* Assembles section `sect` from its pieces into *out (malloc'd), the
 * gaps between them zero-filled: 0, 1 when no piece has it or it would
 * take the object's sections past LP_DEBUG_MAX_OBJECT (*total: their
 * sizes so far), -ENOMEM. */
static int assemble(const struct dbg_pieces *p, int sect, struct dbg_piece **tmp,
		    struct lp_debug_sections *out, uint64_t *total)
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
	out->data[sect] = buf;
	out->size[sect] = size;
	return 0;
}

int dbg_image_from_pieces(struct lp_dwarf_image *d, const struct dbg_pieces *p)
{
	struct lp_debug_sections s = { .eclass = p->eclass, .edata = p->edata,
				       .emachine = p->emachine };
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
		int r = assemble(p, i, tmp, &s, &total);

		if (r < 0 || (r && i < LP_DEBUG_UNIT_SECTS)) /* info, abbrev, line */
			err = r;
	}
	if (!err)
		err = lp_dwarf_image_build(d, &s);
	for (int i = 0; i < LP_DEBUG_NSECT; i++)
		free((void *)s.data[i]);
	free(tmp);
	return err;
}

/*
 * debug_units.c - picks, for each address samples hit, the compilation
 * unit of its object's DWARF that describes it, and embeds that unit if
 * the trace does not hold it yet (debuginfo.c embeds the rest: the small
 * sections and every unit's header).
 *
 * A unit needs three pieces: its bytes in .debug_info (from the end of
 * its header, which is already there, to the next unit's), its
 * abbreviation table in .debug_abbrev (from the offset its header names
 * to the table's 0 code) and its line program in .debug_line (at its
 * DW_AT_stmt_list, as long as the program's unit_length says).  Each goes at its true offset, so no
 * offset inside the DWARF changes; a table or program several units share
 * is written once.  The unit is found with libdw (dwarf_addrdie: the
 * .debug_aranges, or the units' ranges), the same lookup the report makes,
 * for the same address: the leaf as it is, a return address less one.
 *
 * What the files say is untrusted: every extent is checked against its
 * section (format/dwarf_units.c), and a unit that does not check out is
 * not embedded, and not tried again.
 */
#include <dwarf.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "format/dwarf_units.h"
#include "record/recorder.h"

/* Where v is in the set, or would go: the first element not below it. */
static size_t offset_set_pos(const struct offset_set *s, uint64_t v)
{
	size_t lo = 0, hi = s->n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (s->v[mid] < v)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static int offset_set_has(const struct offset_set *s, uint64_t v)
{
	size_t at = offset_set_pos(s, v);

	return at < s->n && s->v[at] == v;
}

/* Adds v to the set: 1 if it was not there, 0 if it was, -ENOMEM. */
static int offset_set_add(struct offset_set *s, uint64_t v)
{
	size_t at = offset_set_pos(s, v);

	if (at < s->n && s->v[at] == v)
		return 0;
	if (s->n == s->cap) {
		size_t ncap = s->cap ? 2 * s->cap : 16;
		uint64_t *nv = realloc(s->v, ncap * sizeof(*nv));

		if (!nv)
			return -ENOMEM;
		s->v = nv;
		s->cap = ncap;
	}
	memmove(s->v + at + 1, s->v + at, (s->n - at) * sizeof(*s->v));
	s->v[at] = v;
	s->n++;
	return 1;
}

/* The link-time address of a file offset, through the PT_LOAD segments. */
static int to_vaddr(const struct debug_object *d, uint64_t fileoff, uint64_t *vaddr)
{
	for (size_t i = 0; i < d->nsegs; i++) {
		const struct lp_objseg *g = &d->segs[i];

		if (fileoff >= g->offset && fileoff - g->offset < g->filesz) {
			*vaddr = g->vaddr + (fileoff - g->offset);
			return 0;
		}
	}
	return -ENOENT;
}

/* A unit's three pieces: [off, off + len) of .debug_info, .debug_abbrev
 * and .debug_line (by enum lp_debug_sect), len 0 when the piece is
 * already in the trace. */
struct unit_pieces {
	uint64_t off[LP_DEBUG_UNIT_SECTS], len[LP_DEBUG_UNIT_SECTS];
};

static int unit_pieces(struct debug_object *d, Dwarf_Die *cudie, uint64_t cuoff,
		       struct unit_pieces *p)
{
	const struct lp_debug_sections *s = &d->s;
	Dwarf_Off next, abbrev;
	Dwarf_Attribute attr;
	Dwarf_Word stmt;
	size_t hsize;

	memset(p, 0, sizeof(*p));
	if (dwarf_next_unit(d->dw, cuoff, &next, &hsize, NULL, &abbrev, NULL, NULL,
			    NULL, NULL) || next <= cuoff + hsize || next > s->size[LP_DEBUG_INFO])
		return -EINVAL;
	/* The header went in with the first records. */
	p->off[LP_DEBUG_INFO] = cuoff + hsize;
	p->len[LP_DEBUG_INFO] = next - cuoff - hsize;
	if (!offset_set_has(&d->abbrevs, abbrev)) {
		p->off[LP_DEBUG_ABBREV] = abbrev;
		if (lp_dwarf_abbrev_len(s->data[LP_DEBUG_ABBREV], s->size[LP_DEBUG_ABBREV],
					abbrev, &p->len[LP_DEBUG_ABBREV]))
			return -EINVAL;
	}
	/* A unit without a line program still gives inlined frames. */
	if (dwarf_attr(cudie, DW_AT_stmt_list, &attr) && !dwarf_formudata(&attr, &stmt) &&
	    !offset_set_has(&d->lines, stmt)) {
		p->off[LP_DEBUG_LINE] = stmt;
		if (lp_dwarf_unit_len(s->data[LP_DEBUG_LINE], s->size[LP_DEBUG_LINE], stmt,
				      d->be, &p->len[LP_DEBUG_LINE]))
			return -EINVAL;
	}
	return 0;
}

int debug_object_add(struct debug_object *d, uint64_t fileoff,
		     struct debug_budget *b, struct trace_writer *w)
{
	struct unit_pieces p;
	Dwarf_Die cudie;
	uint64_t vaddr, cuoff, need;
	int err = 0;

	if (d->full || to_vaddr(d, fileoff, &vaddr) || !dwarf_addrdie(d->dw, vaddr, &cudie))
		return 0;
	cuoff = dwarf_dieoffset(&cudie) - dwarf_cuoffset(&cudie);
	/* Memory short: the unit is left out, the recording goes on. */
	if (offset_set_add(&d->cus, cuoff) <= 0)
		return 0; /* embedded already (or tried) */
	if (unit_pieces(d, &cudie, cuoff, &p))
		return 0;
	need = p.len[LP_DEBUG_INFO] + p.len[LP_DEBUG_ABBREV] + p.len[LP_DEBUG_LINE];
	if (d->bytes + need > DEBUG_MAX_EMBED_OBJECT || need > b->left) {
		d->full = 1;
		return debuginfo_skip(w, d, b, need > b->left ? LP_DEBUG_SKIPPED_BUDGET :
				      LP_DEBUG_SKIPPED_SIZE, d->s.total);
	}
	for (int i = 0; i < LP_DEBUG_UNIT_SECTS && !err; i++)
		if (p.len[i])
			err = debuginfo_write(w, d, i, p.off[i], p.len[i]);
	if (err)
		return err;
	/* Without memory to remember them, they are written again for the
	 * next unit that shares them: the report keeps the first copy. */
	if (p.len[LP_DEBUG_ABBREV])
		offset_set_add(&d->abbrevs, p.off[LP_DEBUG_ABBREV]);
	if (p.len[LP_DEBUG_LINE])
		offset_set_add(&d->lines, p.off[LP_DEBUG_LINE]);
	d->bytes += need;
	b->left -= need;
	b->bytes += need;
	b->units++;
	return 0;
}

/*
 * srcline.c - source lines and inlined frames from DWARF (see srcline.h
 * for what a chain is and why this is in lib/).
 *
 * An address is first placed in its compilation unit through a table of
 * every unit's address ranges, built once per object from the units
 * themselves: .debug_aranges is optional (and this libdw does not fall
 * back to the units when it is missing), and the units' own ranges are
 * what the compiler vouches for.  Within the unit, the scopes that hold
 * the address are found as dwarf_getscopes() finds them, in the concrete
 * tree: at each level the first child whose ranges hold it, from the
 * unit down.  dwarf_getscopes() walks every top-level entry of the unit
 * for each address, which in a large unit (LuaJIT's amalgamated one)
 * costs milliseconds, and the recorder looks up thousands of addresses;
 * so each unit hit gets, once, a table of its top-level entries' ranges,
 * and only the entry that holds the address is walked.  The line table
 * gives the innermost line.  The tables are bounded in size, and every
 * index read from the DWARF (a call site's file number) is checked by
 * libdw against the unit's file table.
 */
#include <dwarf.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "lib/grow.h"
#include "lib/srcline.h"
#include "lib/bsearch.h"

/* Units and ranges one object may have, and ranges of top-level entries
 * all its units together; past that, the rest go without lines (hostile
 * DWARF must not make us grow without bound). */
#define MAX_UNITS (1u << 20)
#define MAX_RANGES (1u << 22)
#define MAX_ENTRY_RANGES (1u << 22)
/* Scopes looked at for one address, and entries met walking to them. */
#define MAX_SCOPES 256
#define MAX_STEPS (1u << 20)

/* An address range of a unit (unit: its index), or of a top-level entry
 * of one (unit: the entry's place among the unit's children). */
struct range {
	uint64_t lo, hi;
	uint32_t unit;
};

struct unit {
	Dwarf_Die die;
	int indexed;             /* entries and eranges are built */
	Dwarf_Die *entries;      /* its top-level entries that have ranges */
	size_t nentries;
	struct range *eranges;   /* theirs, sorted by lo; .unit: the entry */
	size_t neranges;
};

struct srcline {
	Dwarf *dwarf;
	struct unit *units;
	size_t nunits, capunits;
	struct range *ranges; /* the units', sorted by lo */
	size_t nranges, capranges;
	size_t entry_ranges;  /* of every unit indexed so far */
};

static int range_cmp(const void *a, const void *b)
{
	const struct range *x = a, *y = b;

	if (x->lo != y->lo)
		return x->lo < y->lo ? -1 : 1;
	if (x->hi != y->hi)
		return x->hi < y->hi ? -1 : 1;
	return x->unit < y->unit ? -1 : x->unit > y->unit;
}

static int add_unit(struct srcline *s, Dwarf_Die *die)
{
	Dwarf_Addr base, lo, hi;
	ptrdiff_t off = 0;
	int err;

	if (s->nunits >= MAX_UNITS)
		return 0;
	err = GROW(s->units, s->capunits, s->nunits + 1);
	if (err)
		return err;
	s->units[s->nunits] = (struct unit){ .die = *die };
	while (s->nranges < MAX_RANGES &&
	       (off = dwarf_ranges(die, off, &base, &lo, &hi)) > 0) {
		if (hi <= lo)
			continue;
		err = GROW(s->ranges, s->capranges, s->nranges + 1);
		if (err)
			return err;
		s->ranges[s->nranges++] = (struct range){ lo, hi, (uint32_t)s->nunits };
	}
	s->nunits++;
	return 0;
}

int srcline_new(struct srcline **out, Dwarf *dwarf)
{
	Dwarf_CU *cu = NULL, *next;
	struct srcline *s;
	Dwarf_Die die;
	uint8_t type;
	int err = 0;

	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	s->dwarf = dwarf;
	while (!err && dwarf_get_units(dwarf, cu, &next, NULL, &type, &die, NULL) == 0) {
		cu = next;
		if (type == DW_UT_compile)
			err = add_unit(s, &die);
	}
	if (err) {
		srcline_free(s);
		return err;
	}
	if (s->nranges)
		qsort(s->ranges, s->nranges, sizeof(*s->ranges), range_cmp);
	*out = s;
	return 0;
}

void srcline_free(struct srcline *s)
{
	if (!s)
		return;
	for (size_t i = 0; i < s->nunits; i++) {
		free(s->units[i].entries);
		free(s->units[i].eranges);
	}
	free(s->units);
	free(s->ranges);
	free(s);
}

/*
 * Of the ranges v[0..n), sorted by lo, one that holds addr, or NULL:
 * with `first`, the one of lowest .unit (of overlapping entries, the
 * first in DIE order, as dwarf_getscopes() takes it), else the one that
 * starts last (units rarely overlap).
 */
static const struct range *find_range(const struct range *v, size_t n, uint64_t addr,
				      int first)
{
	const struct range *best = NULL;
	size_t lo;

	if (!n || addr < v[0].lo)
		return NULL;
	lo = LP_UPPER_BOUND(v, 0, n, lo, addr) - 1; /* v[0] is at or below */
	/* Overlaps are rare; look back a little. */
	for (size_t j = lo + 1, tries = 0; j-- > 0 && tries < 64; tries++) {
		if (addr >= v[j].hi || (best && v[j].unit >= best->unit))
			continue;
		best = &v[j];
		if (!first)
			break;
	}
	return best;
}

/* Indexes the top-level entries of unit u that have address ranges:
 * the scopes dwarf_getscopes() would try first.  Entries without ranges
 * (types, variables, namespaces) never hold an address for it. */
static int index_unit(struct srcline *s, struct unit *u)
{
	size_t capentries = 0, capranges = 0;
	Dwarf_Die child;
	int r, err = 0;

	u->indexed = 1;
	r = dwarf_child(&u->die, &child);
	for (size_t steps = 0; r == 0 && !err && steps < MAX_STEPS; steps++) {
		Dwarf_Addr base, lo, hi;
		ptrdiff_t off = 0;
		size_t first = u->neranges;

		while (s->entry_ranges < MAX_ENTRY_RANGES &&
		       (off = dwarf_ranges(&child, off, &base, &lo, &hi)) > 0) {
			if (hi <= lo)
				continue;
			err = GROW(u->eranges, capranges, u->neranges + 1);
			if (err)
				break;
			u->eranges[u->neranges++] = (struct range){ lo, hi, (uint32_t)u->nentries };
			s->entry_ranges++;
		}
		if (!err && u->neranges > first) {
			err = GROW(u->entries, capentries, u->nentries + 1);
			if (!err)
				u->entries[u->nentries++] = child;
			else
				u->neranges = first;
		}
		r = dwarf_siblingof(&child, &child);
	}
	if (u->neranges)
		qsort(u->eranges, u->neranges, sizeof(*u->eranges), range_cmp);
	return err;
}

/* Whether dwarf_getscopes() looks for scopes inside an entry of this
 * tag (libdw's may_have_scopes()). */
static int may_have_scopes(int tag)
{
	switch (tag) {
	case DW_TAG_compile_unit:
	case DW_TAG_module:
	case DW_TAG_lexical_block:
	case DW_TAG_with_stmt:
	case DW_TAG_catch_block:
	case DW_TAG_try_block:
	case DW_TAG_entry_point:
	case DW_TAG_inlined_subroutine:
	case DW_TAG_subprogram:
	case DW_TAG_namespace:
	case DW_TAG_class_type:
	case DW_TAG_structure_type:
		return 1;
	}
	return 0;
}

/*
 * The concrete scopes of unit u that hold addr, outermost first, into
 * path[0..MAX_SCOPES): the top-level entry that holds it, then at each
 * level the first child that holds it, down to one that has none.  This
 * is the tree dwarf_getscopes() walks, without its walk of the whole
 * unit, and without its step into an inlined function's abstract
 * definition, whose scopes are not the inlined function's callers.
 */
static int scopes_at(struct srcline *s, struct unit *u, uint64_t addr,
		     Dwarf_Die *path, size_t *n)
{
	const struct range *top;
	size_t steps = 0;
	int err;

	*n = 0;
	if (!u->indexed && (err = index_unit(s, u)))
		return err;
	top = find_range(u->eranges, u->neranges, addr, 1);
	if (!top)
		return 0;
	path[(*n)++] = u->entries[top->unit];
	while (*n < MAX_SCOPES && may_have_scopes(dwarf_tag(&path[*n - 1])) &&
	       dwarf_haschildren(&path[*n - 1]) > 0) {
		Dwarf_Die child;
		int r = dwarf_child(&path[*n - 1], &child);

		while (r == 0 && steps++ < MAX_STEPS && dwarf_haspc(&child, addr) <= 0)
			r = dwarf_siblingof(&child, &child);
		if (r != 0 || steps > MAX_STEPS)
			break;
		path[(*n)++] = child;
	}
	return 0;
}

/* A function's name as the symbol table would give it: the linkage
 * name when DWARF has one (C++), else the plain name. */
static const char *die_name(Dwarf_Die *die)
{
	Dwarf_Attribute attr;
	const char *name;

	if ((dwarf_attr_integrate(die, DW_AT_linkage_name, &attr) ||
	     dwarf_attr_integrate(die, DW_AT_MIPS_linkage_name, &attr)) &&
	    (name = dwarf_formstring(&attr)) && name[0])
		return name;
	name = dwarf_diename(die);
	return name && name[0] ? name : NULL;
}

/* The call site of an inlined scope, in the unit's file table. */
static void call_site(Dwarf_Die *die, Dwarf_Files *files, const char **file,
		      uint32_t *line)
{
	Dwarf_Attribute attr;
	Dwarf_Word v;

	*file = NULL;
	*line = 0;
	if (files && dwarf_attr(die, DW_AT_call_file, &attr) &&
	    !dwarf_formudata(&attr, &v))
		*file = dwarf_filesrc(files, v, NULL, NULL); /* bounds-checked */
	if (dwarf_attr(die, DW_AT_call_line, &attr) && !dwarf_formudata(&attr, &v) &&
	    v <= UINT32_MAX)
		*line = (uint32_t)v;
	if (!*line)
		*file = NULL;
}

int srcline_lookup(struct srcline *s, uint64_t addr, struct src_chain *c)
{
	struct src_frame chain[MAX_SCOPES + 1];
	Dwarf_Die path[MAX_SCOPES];
	Dwarf_Files *files = NULL;
	const struct range *ur;
	struct unit *unit;
	Dwarf_Line *ln;
	size_t nfiles, n, k = 0;
	const char *file = NULL;
	uint32_t line = 0;
	int err;

	c->n = 0;
	ur = find_range(s->ranges, s->nranges, addr, 0);
	if (!ur)
		return 0;
	unit = &s->units[ur->unit];
	ln = dwarf_getsrc_die(&unit->die, addr);
	if (ln) {
		int l;

		file = dwarf_linesrc(ln, NULL, NULL);
		if (!dwarf_lineno(ln, &l) && l > 0)
			line = (uint32_t)l;
		if (!line)
			file = NULL;
	}
	if (dwarf_getsrcfiles(&unit->die, &files, &nfiles))
		files = NULL;
	err = scopes_at(s, unit, addr, path, &n);
	if (err)
		return err;
	/* Innermost first: each inlined function at the line of the frame
	 * inside it, then the function whose code it is. */
	for (size_t i = n; i-- > 0;) {
		int tag = dwarf_tag(&path[i]);

		if (tag != DW_TAG_inlined_subroutine && tag != DW_TAG_subprogram)
			continue;
		chain[k++] = (struct src_frame){ die_name(&path[i]), file, line };
		if (tag == DW_TAG_subprogram)
			break;
		/* The frame outside this one runs at its call site. */
		call_site(&path[i], files, &file, &line);
	}
	if (!k) /* code outside any function DIE: the line alone */
		chain[k++] = (struct src_frame){ NULL, file, line };
	/* Too deep: keep the outermost, which say whose code this is. */
	if (k > SRCLINE_MAX_FRAMES) {
		memmove(chain, chain + k - SRCLINE_MAX_FRAMES,
			SRCLINE_MAX_FRAMES * sizeof(*chain));
		k = SRCLINE_MAX_FRAMES;
	}
	memcpy(c->f, chain, k * sizeof(*chain));
	c->n = (uint32_t)k;
	return 0;
}

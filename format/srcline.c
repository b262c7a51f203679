/*
 * srcline.c - source lines and inlined frames from DWARF (see srcline.h
 * for what a chain is and why this is in format/).
 *
 * An address is first placed in its compilation unit through a table of
 * every unit's address ranges, built once per object from the units
 * themselves: .debug_aranges is optional (and this libdw does not fall
 * back to the units when it is missing), and the units' own ranges are
 * what the compiler vouches for.  Within the unit, dwarf_getscopes()
 * gives the nested scopes at the address, innermost first, and the line
 * table the innermost line.  The table is bounded in size, and every
 * index read from the DWARF (a call site's file number) is checked by
 * libdw against the unit's file table.
 */
#include <dwarf.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "format/srcline.h"

/* Units and ranges one object may have; past that, the rest go without
 * lines (a hostile trace must not make the report grow without bound). */
#define MAX_UNITS (1u << 20)
#define MAX_RANGES (1u << 22)
/* Scopes looked at for one address. */
#define MAX_SCOPES 256

struct cu_range {
	uint64_t lo, hi;
	uint32_t unit;
};

struct srcline {
	Dwarf *dwarf;
	Dwarf_Die *units; /* the units' DIEs */
	size_t nunits, capunits;
	struct cu_range *ranges; /* sorted by lo */
	size_t nranges, capranges;
};

/* Makes room for `need` elements of `size` bytes in *v: 0 or -ENOMEM. */
static int grow(void **v, size_t *cap, size_t need, size_t size)
{
	size_t ncap = *cap ? *cap : 16;
	void *nv;

	if (need <= *cap)
		return 0;
	while (ncap < need)
		ncap *= 2;
	nv = realloc(*v, ncap * size);
	if (!nv)
		return -ENOMEM;
	*v = nv;
	*cap = ncap;
	return 0;
}

#define GROW(v, cap, need) grow((void **)&(v), &(cap), (need), sizeof(*(v)))

static int range_cmp(const void *a, const void *b)
{
	const struct cu_range *x = a, *y = b;

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
	s->units[s->nunits] = *die;
	while (s->nranges < MAX_RANGES &&
	       (off = dwarf_ranges(die, off, &base, &lo, &hi)) > 0) {
		if (hi <= lo)
			continue;
		err = GROW(s->ranges, s->capranges, s->nranges + 1);
		if (err)
			return err;
		s->ranges[s->nranges++] = (struct cu_range){ lo, hi, (uint32_t)s->nunits };
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
	free(s->units);
	free(s->ranges);
	free(s);
}

/* The unit whose ranges hold addr, or NULL. */
static Dwarf_Die *find_unit(struct srcline *s, uint64_t addr)
{
	size_t lo = 0, hi = s->nranges;

	if (!s->nranges || addr < s->ranges[0].lo)
		return NULL;
	while (hi - lo > 1) {
		size_t mid = lo + (hi - lo) / 2;

		if (s->ranges[mid].lo <= addr)
			lo = mid;
		else
			hi = mid;
	}
	/* Ranges of different units rarely overlap; look back a little. */
	for (size_t j = lo + 1, tries = 0; j-- > 0 && tries < 64; tries++)
		if (addr < s->ranges[j].hi)
			return &s->units[s->ranges[j].unit];
	return NULL;
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
	Dwarf_Die *unit, *scopes = NULL;
	Dwarf_Files *files = NULL;
	Dwarf_Line *ln;
	size_t nfiles, k = 0;
	const char *file = NULL;
	uint32_t line = 0;
	int n;

	c->n = 0;
	unit = find_unit(s, addr);
	if (!unit)
		return 0;
	ln = dwarf_getsrc_die(unit, addr);
	if (ln) {
		int l;

		file = dwarf_linesrc(ln, NULL, NULL);
		if (!dwarf_lineno(ln, &l) && l > 0)
			line = (uint32_t)l;
		if (!line)
			file = NULL;
	}
	if (dwarf_getsrcfiles(unit, &files, &nfiles))
		files = NULL;
	/* dwarf_getscopes() continues from an inlined instance into the
	 * scopes of its abstract definition, which are not its callers; so
	 * at each inlined instance the walk starts over from that instance
	 * with dwarf_getscopes_die(), which follows the concrete tree. */
	n = dwarf_getscopes(unit, addr, &scopes);
	for (int i = 0, steps = 0; i < n && steps < MAX_SCOPES; i++, steps++) {
		int tag = dwarf_tag(&scopes[i]);
		Dwarf_Die *outer;

		if (tag != DW_TAG_inlined_subroutine && tag != DW_TAG_subprogram)
			continue;
		chain[k++] = (struct src_frame){ die_name(&scopes[i]), file, line };
		if (tag == DW_TAG_subprogram)
			break;
		/* The frame outside this one runs at its call site. */
		call_site(&scopes[i], files, &file, &line);
		outer = NULL;
		n = dwarf_getscopes_die(&scopes[i], &outer);
		free(scopes);
		scopes = n > 0 ? outer : NULL;
		i = 0; /* outer[0] is the instance itself */
	}
	free(scopes);
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

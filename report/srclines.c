/*
 * srclines.c - an object's embedded source-line chains, by address (see
 * srclines.h; record/srclines.c writes them).
 *
 * Entries are appended as records are read and sorted by address on the
 * first lookup, the order of arrival breaking ties so that the first
 * chain read for an address is the one kept; a lookup is then a binary
 * search.  The decoder has checked every record (string indexes within
 * the record's table, 1 to LP_SRCLINES_MAX_FRAMES frames per chain); what
 * is left to bound here is how much one object may make the report keep.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "lib/htab.h"
#include "report/srclines.h"

/* More chains than a recorder ever writes for one object (its set of
 * addresses holds at most 2^19 for the whole trace): a trace with more is
 * damaged or hostile, and the report's memory stays bounded. */
#define MAX_CHAINS (1u << 20)
#define MAX_FRAMES (4u << 20)

struct linetab_entry {
	uint64_t vaddr;
	uint32_t first, n; /* frames[first .. first + n), first in arrival order */
};

/* A record's string by frame index (1 + its index, 0 none), interned. */
static int intern(struct strtab *names, const struct lp_srclines *rec, uint32_t idx,
		  const char **out)
{
	uint32_t id;
	int err;

	*out = NULL;
	if (!idx || idx > rec->nstr || !rec->strs[idx - 1])
		return 0;
	err = strtab_intern(names, rec->strs[idx - 1], strlen(rec->strs[idx - 1]), &id);
	if (!err)
		*out = strtab_get(names, id);
	return err;
}

int linetab_add(struct linetab *t, struct strtab *names,
		const struct lp_srclines *rec)
{
	int err;

	t->embedded = 1;
	for (uint32_t i = 0; i < rec->nchain; i++) {
		const struct lp_srcchain *c = &rec->chains[i];

		if (t->n >= MAX_CHAINS || c->nframe > MAX_FRAMES - t->nframes)
			return 0;
		err = GROW(t->v, t->cap, t->n + 1) ?:
		      GROW(t->frames, t->capframes, t->nframes + c->nframe);
		if (err)
			return err;
		for (uint32_t k = 0; k < c->nframe; k++) {
			struct src_frame *f = &t->frames[t->nframes + k];

			err = intern(names, rec, c->frames[k].func, &f->func) ?:
			      intern(names, rec, c->frames[k].file, &f->file);
			if (err)
				return err;
			f->line = c->frames[k].line;
		}
		t->v[t->n++] = (struct linetab_entry){ c->vaddr, (uint32_t)t->nframes,
						       c->nframe };
		t->nframes += c->nframe;
		t->sorted = 0;
	}
	return 0;
}

static int entry_cmp(const void *a, const void *b)
{
	const struct linetab_entry *x = a, *y = b;

	if (x->vaddr != y->vaddr)
		return x->vaddr < y->vaddr ? -1 : 1;
	return x->first < y->first ? -1 : x->first > y->first;
}

/* Sorts by address and keeps the first chain read for each. */
static void sort_entries(struct linetab *t)
{
	size_t k = 0;

	if (t->n)
		qsort(t->v, t->n, sizeof(*t->v), entry_cmp);
	for (size_t i = 0; i < t->n; i++)
		if (!k || t->v[i].vaddr != t->v[k - 1].vaddr)
			t->v[k++] = t->v[i];
	t->n = k;
	t->sorted = 1;
}

int linetab_lookup(struct linetab *t, uint64_t vaddr, struct src_chain *c)
{
	size_t lo = 0, hi;

	c->n = 0;
	if (!t->sorted)
		sort_entries(t);
	hi = t->n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (t->v[mid].vaddr < vaddr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == t->n || t->v[lo].vaddr != vaddr)
		return 0;
	/* The decoder bounds n by LP_SRCLINES_MAX_FRAMES, the size of c->f. */
	c->n = t->v[lo].n;
	memcpy(c->f, t->frames + t->v[lo].first, c->n * sizeof(*c->f));
	return 0;
}

void linetab_free(struct linetab *t)
{
	free(t->v);
	free(t->frames);
	memset(t, 0, sizeof(*t));
}

/*
 * stacks.c - interns stacks by content.  Each distinct (kind, addresses)
 * gets an id, from 1, that the trace defines once and samples then name in
 * a few bytes.  nginx workers forked from one master share their layout,
 * so their identical stacks share an id; the report resolves addresses per
 * process, so that is safe.
 *
 * Open addressing over a power-of-two slot array; the addresses live in
 * one growing pool, so a table of a million stacks is two allocations.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "record/stacks.h"

struct stack_entry {
	uint64_t hash;
	uint64_t pool_off; /* index of the first address in the pool */
	uint32_t depth;
	uint32_t kind;
};

struct stack_table {
	struct stack_entry *entries; /* entries[id - 1] */
	uint64_t nentries, capentries;
	uint32_t *slots; /* 0 empty, else id */
	uint64_t nslots;
	uint64_t *pool;
	uint64_t npool, cappool;
};

static uint64_t hash_stack(uint32_t kind, const uint64_t *a, uint32_t n)
{
	uint64_t h = 0x9e3779b97f4a7c15ull ^ ((uint64_t)kind << 32 | n);

	for (uint32_t i = 0; i < n; i++) {
		h ^= a[i];
		h *= 0xff51afd7ed558ccdull;
		h ^= h >> 33;
	}
	return h ? h : 1;
}

struct stack_table *stack_table_new(void)
{
	struct stack_table *t = calloc(1, sizeof(*t));

	if (!t)
		return NULL;
	t->nslots = 1024;
	t->slots = calloc(t->nslots, sizeof(*t->slots));
	if (!t->slots) {
		free(t);
		return NULL;
	}
	return t;
}

static int grow_slots(struct stack_table *t)
{
	uint64_t n = t->nslots * 2;
	uint32_t *s = calloc(n, sizeof(*s));

	if (!s)
		return -ENOMEM;
	for (uint64_t id = 1; id <= t->nentries; id++) {
		uint64_t i = t->entries[id - 1].hash & (n - 1);

		while (s[i])
			i = (i + 1) & (n - 1);
		s[i] = id;
	}
	free(t->slots);
	t->slots = s;
	t->nslots = n;
	return 0;
}

static int reserve(void **p, uint64_t *cap, uint64_t need, size_t elem)
{
	uint64_t ncap = *cap ? *cap : 1024;
	void *np;

	if (need <= *cap)
		return 0;
	while (ncap < need)
		ncap *= 2;
	np = realloc(*p, ncap * elem);
	if (!np)
		return -ENOMEM;
	*p = np;
	*cap = ncap;
	return 0;
}

uint64_t stack_table_intern(struct stack_table *t, uint32_t kind,
			    const uint64_t *addrs, uint32_t depth, int *is_new)
{
	uint64_t h = hash_stack(kind, addrs, depth), i, id;
	struct stack_entry *e;

	*is_new = 0;
	for (i = h & (t->nslots - 1); t->slots[i]; i = (i + 1) & (t->nslots - 1)) {
		e = &t->entries[t->slots[i] - 1];
		if (e->hash == h && e->kind == kind && e->depth == depth &&
		    !memcmp(t->pool + e->pool_off, addrs, depth * sizeof(*addrs)))
			return t->slots[i];
	}
	if (reserve((void **)&t->entries, &t->capentries, t->nentries + 1,
		    sizeof(*t->entries)) ||
	    reserve((void **)&t->pool, &t->cappool, t->npool + depth,
		    sizeof(*t->pool)))
		return 0;
	id = ++t->nentries;
	e = &t->entries[id - 1];
	e->hash = h;
	e->kind = kind;
	e->depth = depth;
	e->pool_off = t->npool;
	memcpy(t->pool + t->npool, addrs, depth * sizeof(*addrs));
	t->npool += depth;
	t->slots[i] = id;
	*is_new = 1;
	/* Keep the load under one half so probes stay short; a failed grow
	 * only makes the table slower. */
	if (t->nentries * 2 > t->nslots)
		grow_slots(t);
	return id;
}

uint64_t stack_table_count(const struct stack_table *t)
{
	return t->nentries;
}

uint64_t stack_table_bytes(const struct stack_table *t)
{
	return t->capentries * sizeof(*t->entries) +
	       t->nslots * sizeof(*t->slots) + t->cappool * sizeof(*t->pool);
}

void stack_table_free(struct stack_table *t)
{
	if (!t)
		return;
	free(t->entries);
	free(t->slots);
	free(t->pool);
	free(t);
}

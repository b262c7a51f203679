/*
 * addrset.c - the set of addresses samples hit, so that each is looked up
 * in its object's DWARF once (srclines.c), not once per sample.
 *
 * Samples repeat the same few thousand addresses; a hash set of 64-bit
 * keys (open addressing, linear probing, load at most one half) remembers
 * them, and keeps in `fresh` those added since the caller last drained
 * it.  It is bounded (ADDR_SET_MAX keys): past that, new addresses are
 * counted and dropped, so they have no lines in the trace, but
 * the recording goes on in bounded memory.
 */
#include <errno.h>
#include <stdlib.h>

#include "record/addrset.h"

static size_t hash(uint64_t k, size_t cap)
{
	k ^= k >> 33;
	k *= 0xff51afd7ed558ccdull;
	k ^= k >> 33;
	return (size_t)k & (cap - 1);
}

static int grow(struct addr_set *a)
{
	size_t ncap = a->cap ? 2 * a->cap : 4096;
	uint64_t *v = calloc(ncap, sizeof(*v));

	if (!v)
		return -ENOMEM;
	for (size_t i = 0; i < a->cap; i++) {
		size_t h;

		if (!a->slot[i])
			continue;
		for (h = hash(a->slot[i], ncap); v[h]; h = (h + 1) & (ncap - 1))
			;
		v[h] = a->slot[i];
	}
	free(a->slot);
	a->slot = v;
	a->cap = ncap;
	return 0;
}

int addr_set_add(struct addr_set *a, uint64_t key)
{
	size_t h;

	if (!key)
		return 0;
	if (a->cap) {
		for (h = hash(key, a->cap); a->slot[h]; h = (h + 1) & (a->cap - 1))
			if (a->slot[h] == key)
				return 0;
	}
	if (a->n >= ADDR_SET_MAX) {
		a->dropped++;
		return -ENOSPC;
	}
	if (2 * (a->n + 1) > a->cap && grow(a))
		return -ENOMEM;
	if (a->nfresh == a->freshcap) {
		size_t ncap = a->freshcap ? 2 * a->freshcap : 1024;
		uint64_t *f = realloc(a->fresh, ncap * sizeof(*f));

		if (!f)
			return -ENOMEM;
		a->fresh = f;
		a->freshcap = ncap;
	}
	for (h = hash(key, a->cap); a->slot[h]; h = (h + 1) & (a->cap - 1))
		;
	a->slot[h] = key;
	a->n++;
	a->fresh[a->nfresh++] = key;
	return 1;
}

int u64_cmp(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

void addr_set_free(struct addr_set *a)
{
	free(a->slot);
	free(a->fresh);
	*a = (struct addr_set){ 0 };
}

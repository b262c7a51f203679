/*
 * htab.c - open addressing with linear probing over (hash, index) pairs,
 * and the array growth every table uses.  See htab.h for why the table
 * holds indices rather than entries.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "lib/htab.h"

static void place(struct htab_slot *slots, size_t cap, uint32_t hash,
		  uint32_t idx)
{
	size_t pos = hash & (cap - 1);

	while (slots[pos].idx)
		pos = (pos + 1) & (cap - 1);
	slots[pos].hash = hash;
	slots[pos].idx = idx;
}

/* Keeping the load at or under one half keeps probe runs short even with
 * the clustering linear probing is known for. */
static int rehash(struct htab *h)
{
	size_t ncap = h->cap ? h->cap * 2 : 64;
	struct htab_slot *ns;

	if (ncap < h->cap || ncap > (size_t)UINT32_MAX + 1)
		return -ENOMEM;
	ns = calloc(ncap, sizeof(*ns));
	if (!ns)
		return -ENOMEM;
	for (size_t i = 0; i < h->cap; i++)
		if (h->slots[i].idx)
			place(ns, ncap, h->slots[i].hash, h->slots[i].idx);
	free(h->slots);
	h->slots = ns;
	h->cap = ncap;
	return 0;
}

int htab_insert(struct htab *h, uint64_t hash, uint32_t idx)
{
	int err;

	if (idx == UINT32_MAX)
		return -ENOMEM;
	if ((h->len + 1) * 2 > h->cap) {
		err = rehash(h);
		if (err)
			return err;
	}
	place(h->slots, h->cap, (uint32_t)hash, idx + 1);
	h->len++;
	return 0;
}

void htab_free(struct htab *h)
{
	free(h->slots);
	memset(h, 0, sizeof(*h));
}

/* Eight bytes a step (a multiply, an xor and a shift), finished with a
 * mixer: the keys are names and sequences of ids (a stack of 30 frames is
 * 120 bytes), and a byte-at-a-time hash made interning a stack cost more
 * than finding it. */
uint64_t hash_bytes(const void *p, size_t n)
{
	const unsigned char *b = p;
	uint64_t h = 0x243f6a8885a308d3ull ^ n, w;

	for (; n >= 8; b += 8, n -= 8) {
		memcpy(&w, b, 8);
		h = (h ^ w) * 0x9e3779b97f4a7c15ull;
		h ^= h >> 29;
	}
	if (n) {
		w = 0;
		memcpy(&w, b, n);
		h = (h ^ w) * 0x9e3779b97f4a7c15ull;
	}
	return hash_u64(h);
}

/*
 * htab.h - the one hash table that every table of report/ (and record/) is built from
 * (their arrays grow with lib/grow.h's GROW).
 *
 * The table stores only (hash, index) pairs: the entries themselves live in
 * the caller's own array, so each table keeps its entries dense, typed and
 * addressable by index (ids are indices), and the hash table never needs to
 * know how to compare keys.  A lookup walks the candidates with the same
 * hash and the caller compares; nothing is ever removed, which a streaming
 * aggregation does not need and which keeps open addressing trivial.
 */
#ifndef LUAPROF_LIB_HTAB_H
#define LUAPROF_LIB_HTAB_H

#include <stddef.h>
#include <stdint.h>

#include "lib/grow.h"

/* 8 bytes a slot, so that a probe's run of slots shares a cache line:
 * the hash's low 32 bits (which also place the slot: tables stay under
 * 2^32 slots, as indices are 32-bit) and the entry's index + 1, 0 for an
 * empty slot.  A slot whose 32 bits match is only a candidate: callers
 * compare keys. */
struct htab_slot {
	uint32_t hash;
	uint32_t idx;
};

struct htab {
	struct htab_slot *slots;
	size_t cap; /* a power of two, 0 until the first insert */
	size_t len;
};

struct htab_probe {
	size_t pos;
	uint32_t hash;
};

/* Starts walking the entries whose hash is `hash`.  Inline with
 * htab_probe_next(): every sample of a report goes through a few. */
static inline void htab_probe_start(const struct htab *h, uint64_t hash,
				    struct htab_probe *p)
{
	p->hash = (uint32_t)hash;
	p->pos = h->cap ? hash & (h->cap - 1) : 0;
}

/* The next candidate's entry index, or -1 when there is none left. */
static inline int64_t htab_probe_next(const struct htab *h, struct htab_probe *p)
{
	if (!h->cap)
		return -1;
	for (;;) {
		const struct htab_slot *s = &h->slots[p->pos];

		if (!s->idx)
			return -1;
		p->pos = (p->pos + 1) & (h->cap - 1);
		if (s->hash == p->hash)
			return (int64_t)s->idx - 1;
	}
}

/* Hints for a lookup to come in a table larger than the caches, a few
 * lookups ahead: htab_prefetch() starts reading hash's slot; once it is
 * read, htab_peek() gives its first candidate (-1 for none), whose entry
 * the caller can start reading in turn. */
static inline void htab_prefetch(const struct htab *h, uint64_t hash)
{
	if (h->cap)
		__builtin_prefetch(&h->slots[hash & (h->cap - 1)]);
}

static inline int64_t htab_peek(const struct htab *h, uint64_t hash)
{
	struct htab_probe p;

	htab_probe_start(h, hash, &p);
	return htab_probe_next(h, &p);
}

/* Adds entry `idx` under `hash`; 0 or -ENOMEM. */
int htab_insert(struct htab *h, uint64_t hash, uint32_t idx);
void htab_free(struct htab *h);


/* splitmix64's finalizer: cheap and mixes every input bit. */
static inline uint64_t hash_u64(uint64_t x)
{
	x ^= x >> 30;
	x *= 0xbf58476d1ce4e5b9ull;
	x ^= x >> 27;
	x *= 0x94d049bb133111ebull;
	x ^= x >> 31;
	return x;
}

static inline uint64_t hash_mix(uint64_t h, uint64_t v)
{
	return hash_u64(h ^ (v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2)));
}

/* Up to four fields (0 for those unused) into one hash: one multiply
 * each, independent of each other, and one finalizer, where a chain of
 * hash_mix() takes as many finalizers, one after another, as fields. */
static inline uint64_t hash_fields(uint64_t a, uint64_t b, uint64_t c, uint64_t d)
{
	return hash_u64((a * 0x9e3779b97f4a7c15ull) ^ (b * 0xc2b2ae3d27d4eb4full) ^
			(c * 0x165667b19e3779f9ull) ^ (d * 0xd6e8feb86659fd93ull));
}

uint64_t hash_bytes(const void *p, size_t n);

#endif

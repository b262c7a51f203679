/*
 * intern.h - interning of strings and of id sequences into dense ids.
 *
 * Aggregating millions of samples is only cheap if equal things become
 * equal small integers once: frame names are interned to name ids, stacks
 * of name ids to stack ids, and every later step (counting, sorting,
 * printing) works on those ids.  Interned data is immutable and lives
 * until the table is freed, so pointers to it stay valid.
 */
#ifndef LUAPROF_REPORT_INTERN_H
#define LUAPROF_REPORT_INTERN_H

#include <stddef.h>
#include <stdint.h>

#include "lib/htab.h"

struct strtab {
	struct htab h;
	char **strs; /* id -> NUL-terminated copy */
	size_t len, cap;
};

/* Interns the n bytes at s (which need no terminator); 0 or -ENOMEM. */
int strtab_intern(struct strtab *t, const char *s, size_t n, uint32_t *id);
void strtab_free(struct strtab *t);

static inline const char *strtab_get(const struct strtab *t, uint32_t id)
{
	return t->strs[id];
}

struct seq_ent {
	size_t off; /* into data */
	uint32_t len;
};

struct seqtab {
	struct htab h;
	uint32_t *data; /* every sequence, back to back */
	size_t data_len, data_cap;
	struct seq_ent *ents; /* id -> sequence */
	size_t len, cap;
};

/* Interns v[0..n); *created says whether the id is new.  0 or -ENOMEM. */
int seqtab_intern(struct seqtab *t, const uint32_t *v, uint32_t n,
		  uint32_t *id, int *created);
/* The same, given hash = seqtab_hash(v, n): a caller that interns many
 * sequences hashes a few ahead and fetches their slots (seqtab_prefetch())
 * while it interns the ones before. */
static inline uint64_t seqtab_hash(const uint32_t *v, uint32_t n)
{
	return hash_bytes(v, (size_t)n * sizeof(*v));
}
int seqtab_intern_hashed(struct seqtab *t, const uint32_t *v, uint32_t n, uint64_t hash,
			 uint32_t *id, int *created);
static inline void seqtab_prefetch(const struct seqtab *t, uint64_t hash)
{
	htab_prefetch(&t->h, hash);
}
void seqtab_free(struct seqtab *t);
/* A sequence to sort (seq_keys_sort()), and an id of the caller's. */
struct seq_key {
	const uint32_t *v;
	uint32_t n, id;
};

/* Sorts k[0..n) by their sequences, element by element, a prefix first;
 * equal sequences in no particular order. */
void seq_keys_sort(struct seq_key *k, size_t n);
/* Sorts ids[0..n) by their sequences as seq_keys_sort() does: walked in
 * this order, each sequence shares the most with the one before (building
 * a tree of them looks up only what is new).  0 or -ENOMEM. */
int seqtab_sort(const struct seqtab *t, uint32_t *ids, size_t n);
/* The ids of t's sequences whose counts[id] is not 0, sorted so; *n of
 * them.  NULL if out of memory; free() it. */
uint32_t *seqtab_sorted_counted(const struct seqtab *t, const uint64_t *counts, size_t *n);

static inline const uint32_t *seqtab_get(const struct seqtab *t, uint32_t id,
					 uint32_t *n)
{
	static const uint32_t none[1];

	/* An empty sequence may come before any data: never NULL + 0. */
	*n = t->ents[id].len;
	return *n ? t->data + t->ents[id].off : none;
}

#endif

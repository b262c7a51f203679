/*
 * intern.c - string and id-sequence interning (see intern.h).  Both tables
 * are append-only: an id, once given, names the same content until the
 * table is freed.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "report/intern.h"

int strtab_intern(struct strtab *t, const char *s, size_t n, uint32_t *id)
{
	struct htab_probe p;
	uint64_t hash;
	int64_t i;
	char *copy;
	int err;

	/* A string ends at its first NUL, whatever length we were given;
	 * this also keeps the comparison below within both copies. */
	n = strnlen(s, n);
	hash = hash_bytes(s, n);
	htab_probe_start(&t->h, hash, &p);
	while ((i = htab_probe_next(&t->h, &p)) >= 0) {
		if (!strncmp(t->strs[i], s, n) && t->strs[i][n] == '\0') {
			*id = i;
			return 0;
		}
	}
	if (t->len >= UINT32_MAX - 1)
		return -ENOMEM;
	err = GROW(t->strs, t->cap, t->len + 1);
	if (err)
		return err;
	copy = malloc(n + 1);
	if (!copy)
		return -ENOMEM;
	memcpy(copy, s, n);
	copy[n] = '\0';
	err = htab_insert(&t->h, hash, t->len);
	if (err) {
		free(copy);
		return err;
	}
	t->strs[t->len] = copy;
	*id = t->len++;
	return 0;
}

void strtab_free(struct strtab *t)
{
	for (size_t i = 0; i < t->len; i++)
		free(t->strs[i]);
	free(t->strs);
	htab_free(&t->h);
	memset(t, 0, sizeof(*t));
}

int seqtab_intern(struct seqtab *t, const uint32_t *v, uint32_t n,
		  uint32_t *id, int *created)
{
	return seqtab_intern_hashed(t, v, n, seqtab_hash(v, n), id, created);
}

int seqtab_intern_hashed(struct seqtab *t, const uint32_t *v, uint32_t n, uint64_t hash,
			 uint32_t *id, int *created)
{
	struct htab_probe p;
	int64_t i;
	int err;

	htab_probe_start(&t->h, hash, &p);
	while ((i = htab_probe_next(&t->h, &p)) >= 0) {
		const struct seq_ent *e = &t->ents[i];

		if (e->len == n && (!n ||
		    !memcmp(t->data + e->off, v, (size_t)n * sizeof(*v)))) {
			*id = i;
			if (created)
				*created = 0;
			return 0;
		}
	}
	if (t->len >= UINT32_MAX - 1)
		return -ENOMEM;
	err = GROW(t->ents, t->cap, t->len + 1);
	if (!err)
		err = GROW(t->data, t->data_cap, t->data_len + n);
	if (!err)
		err = htab_insert(&t->h, hash, t->len);
	if (err)
		return err;
	if (n)
		memcpy(t->data + t->data_len, v, (size_t)n * sizeof(*v));
	t->ents[t->len].off = t->data_len;
	t->ents[t->len].len = n;
	t->data_len += n;
	*id = t->len++;
	if (created)
		*created = 1;
	return 0;
}

void seqtab_free(struct seqtab *t)
{
	free(t->data);
	free(t->ents);
	htab_free(&t->h);
	memset(t, 0, sizeof(*t));
}

/* ---- sorting sequences -------------------------------------------------
 * Multikey quicksort (Bentley and Sedgewick): partition by the element at
 * one depth into less, equal and greater, and only the equal part goes
 * on to the next depth.  Stacks share long prefixes (main, the event
 * loop, the VM entry...), which a comparison sort reads again at every
 * one of its n log n comparisons; here each element of a shared prefix is
 * read about log n times in all.  Recursion goes into the two parts that
 * are not the largest, and the loop keeps the largest, so the depth stays
 * under log2 n whatever the input. */

/* Element d of k, + 1; 0 past its end, so that a prefix comes first. */
static inline uint64_t key_at(const struct seq_key *k, size_t d)
{
	return d < k->n ? (uint64_t)k->v[d] + 1 : 0;
}

static int key_cmp_from(const struct seq_key *a, const struct seq_key *b, size_t d)
{
	for (;; d++) {
		uint64_t x = key_at(a, d), y = key_at(b, d);

		if (x != y)
			return x < y ? -1 : 1;
		if (!x)
			return 0;
	}
}

static void key_swap(struct seq_key *a, size_t i, size_t j)
{
	struct seq_key t = a[i];

	a[i] = a[j];
	a[j] = t;
}

static uint64_t median3(uint64_t a, uint64_t b, uint64_t c)
{
	if (a < b)
		return b < c ? b : a < c ? c : a;
	return a < c ? a : b < c ? c : b;
}

static void mkqs(struct seq_key *a, size_t n, size_t d)
{
	while (n > 1) {
		size_t lt = 0, i = 0, gt = n, nlt, ngt, neq;
		uint64_t piv;

		if (n < 12) {
			for (size_t j = 1; j < n; j++)
				for (size_t k = j; k && key_cmp_from(&a[k - 1], &a[k], d) > 0; k--)
					key_swap(a, k - 1, k);
			return;
		}
		piv = median3(key_at(&a[0], d), key_at(&a[n / 2], d), key_at(&a[n - 1], d));
		/* [0, lt) less, [lt, i) equal, [gt, n) greater. */
		while (i < gt) {
			uint64_t x = key_at(&a[i], d);

			if (x < piv)
				key_swap(a, lt++, i++);
			else if (x > piv)
				key_swap(a, i, --gt);
			else
				i++;
		}
		nlt = lt;
		neq = gt - lt;
		ngt = n - gt;
		/* Sequences that all ended here are equal: nothing to order. */
		if (!piv)
			neq = 0;
		if (nlt >= neq && nlt >= ngt) {
			mkqs(a + lt, neq, d + 1);
			mkqs(a + gt, ngt, d);
			n = nlt;
		} else if (ngt >= neq) {
			mkqs(a, nlt, d);
			mkqs(a + lt, neq, d + 1);
			a += gt;
			n = ngt;
		} else {
			mkqs(a, nlt, d);
			mkqs(a + gt, ngt, d);
			a += lt;
			n = neq;
			d++;
		}
	}
}

void seq_keys_sort(struct seq_key *k, size_t n)
{
	mkqs(k, n, 0);
}

int seqtab_sort(const struct seqtab *t, uint32_t *ids, size_t n)
{
	struct seq_key *k = malloc((n ? n : 1) * sizeof(*k));

	if (!k)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		k[i].v = seqtab_get(t, ids[i], &k[i].n);
		k[i].id = ids[i];
	}
	seq_keys_sort(k, n);
	for (size_t i = 0; i < n; i++)
		ids[i] = k[i].id;
	free(k);
	return 0;
}

uint32_t *seqtab_sorted_counted(const struct seqtab *t, const uint64_t *counts, size_t *n)
{
	uint32_t *ids = malloc((t->len ? t->len : 1) * sizeof(*ids));

	*n = 0;
	if (!ids)
		return NULL;
	for (size_t s = 0; s < t->len; s++)
		if (counts[s])
			ids[(*n)++] = (uint32_t)s;
	if (seqtab_sort(t, ids, *n)) {
		free(ids);
		return NULL;
	}
	return ids;
}

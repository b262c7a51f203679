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
	uint64_t hash = hash_bytes(v, (size_t)n * sizeof(*v));
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

static int seq_cmp(const void *a, const void *b, void *arg)
{
	const struct seqtab *t = arg;
	const uint32_t *x, *y;
	uint32_t nx, ny, n;

	x = seqtab_get(t, *(const uint32_t *)a, &nx);
	y = seqtab_get(t, *(const uint32_t *)b, &ny);
	n = nx < ny ? nx : ny;
	for (uint32_t i = 0; i < n; i++)
		if (x[i] != y[i])
			return x[i] < y[i] ? -1 : 1;
	return nx < ny ? -1 : nx > ny;
}

void seqtab_sort(const struct seqtab *t, uint32_t *ids, size_t n)
{
	qsort_r(ids, n, sizeof(*ids), seq_cmp, (void *)t);
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
	seqtab_sort(t, ids, *n);
	return ids;
}

/*
 * out_folded.c - the folded format flame graph tools read: one line per
 * distinct stack, "root;...;leaf COUNT".  Lines are sorted by their stack
 * text so that one trace always gives byte-identical output, whatever
 * order hash tables happened to meet the stacks in.
 *
 * A ';' inside a frame name would split the frame in two, so it is
 * written as ':'; two stacks that then read the same are merged.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "report/formats.h"

char *folded_stack(const struct profile *p, uint32_t id)
{
	const uint32_t *v;
	size_t len = 0, pos = 0;
	uint32_t n;
	char *s;

	v = seqtab_get(&p->stacks, id, &n);
	for (uint32_t i = 0; i < n; i++)
		len += strlen(strtab_get(&p->names, v[i])) + 1;
	s = malloc(len + 1);
	if (!s)
		return NULL;
	for (uint32_t i = 0; i < n; i++) {
		const char *name = strtab_get(&p->names, v[i]);

		if (i)
			s[pos++] = ';';
		for (; *name; name++)
			s[pos++] = *name == ';' ? ':' : *name;
	}
	s[pos] = '\0';
	return s;
}

/* ---- sorting by text without building it ------------------------------
 * Lines sort as their texts would by strcmp, but the texts are not made
 * to be compared: each frame name gets a rank among the names, and lines
 * compare as sequences of ranks (seq_keys_sort()).  A name has two ranks:
 * as followed by ';' (every frame of a line but the last) and as followed
 * by the end of the text (the last), ordered together as those texts
 * would be, the end before any character.  Ranks then differ where the
 * texts first differ, in the same order, and are equal where the texts
 * read the same.  Names are as written, ';' made ':'. */

static const struct profile *sort_p; /* qsort has no context argument */

static int folded_char(const char *s, size_t i)
{
	return s[i] == ';' ? ':' : (unsigned char)s[i];
}

/* A name's rank key: its id, times 2, + 1 for the ending one. */
#define LAST 1u

/* strcmp of two names as written, each followed by ';' or, as the last
 * of a line, by the end (-1: before any character). */
static int name_key_cmp(const void *x, const void *y)
{
	uint32_t kx = *(const uint32_t *)x, ky = *(const uint32_t *)y;
	const char *a = strtab_get(&sort_p->names, kx >> 1);
	const char *b = strtab_get(&sort_p->names, ky >> 1);

	for (size_t i = 0;; i++) {
		int u = a[i] ? folded_char(a, i) : (kx & LAST ? -1 : ';');
		int v = b[i] ? folded_char(b, i) : (ky & LAST ? -1 : ';');

		if (u != v)
			return u - v;
		if (!a[i])
			return 0; /* ';' is never a name's own character */
	}
}

/* The rank of each used name's key, rank[2 * id + LAST?], equal texts
 * equal ranks; rank[] holds 1 for the keys in use, 0 for the rest. */
static int rank_names(const struct profile *p, uint32_t *rank)
{
	size_t nkeys = 2 * p->names.len, n = 0;
	uint32_t *keys = malloc((nkeys ? nkeys : 1) * sizeof(*keys));

	if (!keys)
		return -ENOMEM;
	for (size_t i = 0; i < nkeys; i++)
		if (rank[i])
			keys[n++] = (uint32_t)i;
	qsort(keys, n, sizeof(*keys), name_key_cmp);
	for (size_t i = 0, r = 0; i < n; i++) {
		if (i && name_key_cmp(&keys[i - 1], &keys[i]))
			r++;
		rank[keys[i]] = (uint32_t)r;
	}
	free(keys);
	return 0;
}

static int same_ranks(const struct seq_key *a, const struct seq_key *b)
{
	return a->n == b->n && !memcmp(a->v, b->v, a->n * sizeof(*a->v));
}

/* The output, gathered and written in large pieces. */
struct obuf {
	FILE *out;
	char v[1 << 16];
	size_t len;
};

static void obuf_put(struct obuf *b, const char *s, size_t n)
{
	if (n > sizeof(b->v) - b->len) {
		fwrite(b->v, 1, b->len, b->out);
		b->len = 0;
		if (n > sizeof(b->v)) {
			fwrite(s, 1, n, b->out);
			return;
		}
	}
	memcpy(b->v + b->len, s, n);
	b->len += n;
}

/* The text of the line being written, frames as written (';' made ':')
 * and joined by ';', without its count.  Lines come sorted, so a line
 * shares its first frames with the one before: those stay, and only the
 * rest is appended.  Names' texts are made once, back to back. */
struct ftext {
	char *line;
	size_t len, cap;
	uint32_t *ends;     /* ends[j]: the text's length up to frame j */
	size_t capends;
	char *names;        /* used names' texts */
	size_t nlen, ncap;
	struct { size_t at, len; } *name; /* by name id: offset + 1 (0: not made) */
};

/* Name id's text, as written, made the first time. */
static int name_text(struct ftext *t, const struct profile *p, uint32_t id,
		     const char **s, size_t *n)
{
	if (!t->name[id].at) {
		const char *name = strtab_get(&p->names, id);
		size_t len = strlen(name);

		if (GROW(t->names, t->ncap, t->nlen + len))
			return -ENOMEM;
		for (size_t i = 0; i < len; i++)
			t->names[t->nlen + i] = name[i] == ';' ? ':' : name[i];
		t->name[id].at = t->nlen + 1;
		t->name[id].len = len;
		t->nlen += len;
	}
	*s = t->names + t->name[id].at - 1;
	*n = t->name[id].len;
	return 0;
}

/* Makes the text of stack id, whose first `keep` frames read as those of
 * the line before. */
static int line_text(struct ftext *t, const struct profile *p, uint32_t id, uint32_t keep)
{
	const uint32_t *v;
	uint32_t n;
	int err;

	v = seqtab_get(&p->stacks, id, &n);
	err = GROW(t->ends, t->capends, n ? n : 1);
	if (err)
		return err;
	t->len = keep ? t->ends[keep - 1] : 0;
	for (uint32_t j = keep; j < n; j++) {
		const char *s;
		size_t len;

		err = name_text(t, p, v[j], &s, &len) ?:
		      GROW(t->line, t->cap, t->len + len + 1);
		if (err)
			return err;
		if (j)
			t->line[t->len++] = ';';
		memcpy(t->line + t->len, s, len);
		t->len += len;
		t->ends[j] = (uint32_t)t->len;
	}
	return 0;
}

static void write_count(struct obuf *b, uint64_t count)
{
	char num[24];
	int k = sizeof(num);

	num[--k] = '\n';
	do {
		num[--k] = '0' + count % 10;
		count /= 10;
	} while (count);
	num[--k] = ' ';
	obuf_put(b, num + k, sizeof(num) - k);
}

/* Frames two sorted lines begin with alike (their last aside: its rank
 * is the ending one). */
static uint32_t common_frames(const struct seq_key *a, const struct seq_key *b)
{
	uint32_t n = (a->n < b->n ? a->n : b->n), i = 0;

	while (i + 1 < n && a->v[i] == b->v[i])
		i++;
	return i;
}

int out_folded(FILE *out, const struct profile *p, const struct out_opts *o)
{
	size_t n = p->stacks.len, k = 0, nranks = 0;
	struct seq_key *lines = NULL;
	uint32_t *rank = NULL, *ranks = NULL;
	struct obuf *b = NULL;
	struct ftext t = { 0 };
	int err = -ENOMEM;

	(void)o;
	if (p->names.len > UINT32_MAX / 2)
		return -ENOMEM;
	lines = calloc(n ? n : 1, sizeof(*lines));
	rank = calloc(p->names.len ? 2 * p->names.len : 1, sizeof(*rank));
	b = malloc(sizeof(*b));
	if (!lines || !rank || !b)
		goto cleanup;
	for (size_t i = 0; i < n; i++) {
		const uint32_t *v;
		uint32_t len;

		if (!p->counts[i])
			continue;
		v = seqtab_get(&p->stacks, i, &len);
		for (uint32_t j = 0; j < len; j++)
			rank[2 * v[j] + (j + 1 == len ? LAST : 0)] = 1; /* used */
		lines[k++] = (struct seq_key){ NULL, len, (uint32_t)i };
		nranks += len;
	}
	ranks = malloc((nranks ? nranks : 1) * sizeof(*ranks));
	sort_p = p;
	if (!ranks || rank_names(p, rank))
		goto cleanup;
	nranks = 0;
	for (size_t i = 0; i < k; i++) {
		const uint32_t *v;
		uint32_t len;

		v = seqtab_get(&p->stacks, lines[i].id, &len);
		for (uint32_t j = 0; j < len; j++)
			ranks[nranks + j] = rank[2 * v[j] + (j + 1 == len ? LAST : 0)];
		lines[i].v = ranks + nranks;
		nranks += len;
	}
	seq_keys_sort(lines, k);
	b->out = out;
	b->len = 0;
	t.name = calloc(p->names.len ? p->names.len : 1, sizeof(*t.name));
	if (!t.name)
		goto cleanup;
	for (size_t i = 0, prev = 0; i < k; i++) {
		uint64_t count = p->counts[lines[i].id];
		uint32_t id = lines[i].id, keep = i ? common_frames(&lines[prev], &lines[i]) : 0;

		/* Stacks whose texts read the same (';' made ':') merge. */
		prev = i;
		while (i + 1 < k && same_ranks(&lines[i], &lines[i + 1]))
			count += p->counts[lines[++i].id];
		err = line_text(&t, p, id, keep);
		if (err)
			goto cleanup;
		obuf_put(b, t.line, t.len);
		write_count(b, count);
	}
	fwrite(b->v, 1, b->len, out);
	err = 0;
cleanup:
	free(t.line);
	free(t.ends);
	free(t.names);
	free(t.name);
	free(lines);
	free(rank);
	free(ranks);
	free(b);
	return err;
}

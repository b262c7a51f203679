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
 * to be compared: each frame name gets its rank among the names, ordered
 * as if each ended in ';' (what follows it in a line but for the last),
 * and lines compare as sequences of ranks.  Ranks differ where the texts
 * first differ, in the same order, but for one case: the last frame of a
 * line, where the text ends instead of going on with ';', when the other
 * line's name there is longer with the same beginning (the ended text is
 * then first, whatever follows).  Names are as written, ';' made ':'. */

struct fline {
	size_t off;     /* its ranks in ranks[] */
	uint32_t n, id; /* frames; stack id */
	uint64_t count;
};

static const struct profile *sort_p; /* qsort has no context argument */
static const uint32_t *sort_ranks;
static const struct fline *sort_lines;

static int folded_char(const char *s, size_t i)
{
	return s[i] == ';' ? ':' : (unsigned char)s[i];
}

/* strcmp of two names as written, each followed by ';'. */
static int name_cmp(const char *a, const char *b)
{
	for (size_t i = 0;; i++) {
		int x = a[i] ? folded_char(a, i) : ';', y = b[i] ? folded_char(b, i) : ';';

		if (x != y)
			return x - y;
		if (!a[i])
			return 0;
	}
}

static int name_id_cmp(const void *x, const void *y)
{
	return name_cmp(strtab_get(&sort_p->names, *(const uint32_t *)x),
			strtab_get(&sort_p->names, *(const uint32_t *)y));
}

/* Whether name b, as written, begins with all of name a. */
static int name_starts(const char *b, const char *a)
{
	for (size_t i = 0; a[i]; i++)
		if (!b[i] || folded_char(a, i) != folded_char(b, i))
			return 0;
	return 1;
}

static int fline_cmp(const void *x, const void *y)
{
	const struct fline *a = &sort_lines[*(const uint32_t *)x];
	const struct fline *b = &sort_lines[*(const uint32_t *)y];
	const uint32_t *ra = sort_ranks + a->off, *rb = sort_ranks + b->off;
	uint32_t n = a->n < b->n ? a->n : b->n;

	for (uint32_t i = 0; i < n; i++) {
		const uint32_t *va, *vb;
		uint32_t na, nb;

		if (ra[i] == rb[i])
			continue;
		if (i + 1 == a->n || i + 1 == b->n) {
			va = seqtab_get(&sort_p->stacks, a->id, &na);
			vb = seqtab_get(&sort_p->stacks, b->id, &nb);
			if (i + 1 == a->n && name_starts(strtab_get(&sort_p->names, vb[i]),
							 strtab_get(&sort_p->names, va[i])))
				return -1;
			if (i + 1 == b->n && name_starts(strtab_get(&sort_p->names, va[i]),
							 strtab_get(&sort_p->names, vb[i])))
				return 1;
		}
		return ra[i] < rb[i] ? -1 : 1;
	}
	return a->n < b->n ? -1 : a->n > b->n;
}

/* Each used name's rank in name_cmp order, equal names equal ranks. */
static int rank_names(const struct profile *p, uint32_t *rank)
{
	uint32_t *ids = malloc((p->names.len ? p->names.len : 1) * sizeof(*ids));
	size_t n = 0;

	if (!ids)
		return -ENOMEM;
	for (size_t i = 0; i < p->names.len; i++)
		if (rank[i])
			ids[n++] = (uint32_t)i;
	qsort(ids, n, sizeof(*ids), name_id_cmp);
	for (size_t i = 0, r = 0; i < n; i++) {
		if (i && name_id_cmp(&ids[i - 1], &ids[i]))
			r++;
		rank[ids[i]] = (uint32_t)r;
	}
	free(ids);
	return 0;
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

static void write_line(struct obuf *b, const struct profile *p, uint32_t id,
		       uint64_t count)
{
	const uint32_t *v;
	char num[24];
	uint32_t n;
	int k = sizeof(num);

	v = seqtab_get(&p->stacks, id, &n);
	for (uint32_t i = 0; i < n; i++) {
		const char *name = strtab_get(&p->names, v[i]), *semi;
		size_t len = strlen(name);

		if (i)
			obuf_put(b, ";", 1);
		while ((semi = memchr(name, ';', len))) {
			obuf_put(b, name, (size_t)(semi - name));
			obuf_put(b, ":", 1);
			len -= (size_t)(semi - name) + 1;
			name = semi + 1;
		}
		obuf_put(b, name, len);
	}
	num[--k] = '\n';
	do {
		num[--k] = '0' + count % 10;
		count /= 10;
	} while (count);
	num[--k] = ' ';
	obuf_put(b, num + k, sizeof(num) - k);
}

int out_folded(FILE *out, const struct profile *p, const struct out_opts *o)
{
	size_t n = p->stacks.len, k = 0, nranks = 0;
	struct fline *lines = NULL;
	uint32_t *rank = NULL, *ranks = NULL, *order = NULL;
	struct obuf *b = NULL;
	int err = -ENOMEM;

	(void)o;
	lines = calloc(n ? n : 1, sizeof(*lines));
	order = calloc(n ? n : 1, sizeof(*order));
	rank = calloc(p->names.len ? p->names.len : 1, sizeof(*rank));
	b = malloc(sizeof(*b));
	if (!lines || !order || !rank || !b)
		goto cleanup;
	for (size_t i = 0; i < n; i++) {
		const uint32_t *v;
		uint32_t len;

		if (!p->counts[i])
			continue;
		v = seqtab_get(&p->stacks, i, &len);
		for (uint32_t j = 0; j < len; j++)
			rank[v[j]] = 1; /* used */
		lines[k] = (struct fline){ nranks, len, (uint32_t)i, p->counts[i] };
		order[k] = (uint32_t)k;
		nranks += len;
		k++;
	}
	ranks = malloc((nranks ? nranks : 1) * sizeof(*ranks));
	sort_p = p;
	if (!ranks || rank_names(p, rank))
		goto cleanup;
	for (size_t i = 0; i < k; i++) {
		const uint32_t *v;
		uint32_t len;

		v = seqtab_get(&p->stacks, lines[i].id, &len);
		for (uint32_t j = 0; j < len; j++)
			ranks[lines[i].off + j] = rank[v[j]];
	}
	sort_ranks = ranks;
	sort_lines = lines;
	qsort(order, k, sizeof(*order), fline_cmp);
	b->out = out;
	b->len = 0;
	for (size_t i = 0; i < k; i++) {
		uint64_t count = lines[order[i]].count;
		uint32_t id = lines[order[i]].id;

		/* Stacks whose texts read the same (';' made ':') merge. */
		while (i + 1 < k && !fline_cmp(&order[i], &order[i + 1]))
			count += lines[order[++i]].count;
		write_line(b, p, id, count);
	}
	fwrite(b->v, 1, b->len, out);
	err = 0;
cleanup:
	free(lines);
	free(order);
	free(rank);
	free(ranks);
	free(b);
	return err;
}

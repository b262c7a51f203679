/*
 * out_callgraph.c - a caller-to-callee tree, perf style: every node shows
 * the share of samples in its subtree (total) and of samples it was the
 * leaf of (self), then its name indented two spaces per level.  Children
 * come in order of total, then name, so the hot path reads top-down and
 * the output is deterministic.  Nodes under --percent-limit are left out,
 * with their subtrees, and counted in a closing line, so the reader knows
 * the tree was pruned and by how much.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "lib/grow.h"
#include "report/count.h"
#include "report/formats.h"

struct node {
	uint32_t name, parent;
	uint64_t total, self;
	uint32_t first, nkids; /* range in kids[], once built */
	uint32_t size;         /* nodes in the subtree, itself included */
};

struct tree {
	const struct profile *p;
	struct node *v;
	size_t n, cap;
	uint32_t *kids;
	double limit;
	uint64_t hidden;
};

/* A new child of parent.  Stacks come sorted (seqtab_sorted_counted()),
 * so those that share a path are next to each other: past the frames a
 * stack shares with the one before, every node is new, and none needs
 * to be looked up. */
static int child(struct tree *t, uint32_t parent, uint32_t name,
		 uint32_t *out)
{
	struct node *nd;
	int err;

	if (t->n >= UINT32_MAX - 1)
		return -ENOMEM;
	err = GROW(t->v, t->cap, t->n + 1);
	if (err)
		return err;
	nd = &t->v[t->n];
	memset(nd, 0, sizeof(*nd));
	nd->name = name;
	nd->parent = parent;
	*out = t->n++;
	return 0;
}

static int build(struct tree *t)
{
	const struct profile *p = t->p;
	uint32_t *fill;
	int err;

	err = GROW(t->v, t->cap, 1);
	if (err)
		return err;
	memset(&t->v[0], 0, sizeof(t->v[0])); /* the root above all roots */
	t->n = 1;
	/* The nodes of the last stack's path, for the frames the next one
	 * shares with it (stacks of one program share long roots). */
	const uint32_t *prev = NULL;
	uint32_t nprev = 0, *path = NULL, *order;
	size_t cappath = 0, norder = 0;

	order = seqtab_sorted_counted(&p->stacks, p->counts, &norder);
	if (!order)
		return -ENOMEM;
	for (size_t k = 0; k < norder; k++) {
		uint32_t s = order[k];
		const uint32_t *v;
		uint32_t n, cur = 0, i = 0;

		v = seqtab_get(&p->stacks, s, &n);
		if (GROW(path, cappath, n + 1)) {
			free(path);
			free(order);
			return -ENOMEM;
		}
		for (; i < n && i < nprev && v[i] == prev[i]; i++) {
			cur = path[i];
			t->v[cur].total = count_add(t->v[cur].total, p->counts[s]);
		}
		for (; i < n; i++) {
			err = child(t, cur, v[i], &cur);
			if (err) {
				free(path);
				free(order);
				return err;
			}
			path[i] = cur;
			t->v[cur].total = count_add(t->v[cur].total, p->counts[s]);
		}
		t->v[cur].self += p->counts[s];
		prev = v;
		nprev = n;
	}
	free(path);
	free(order);
	/* A child is always created after its parent, so one backward pass
	 * sums subtree sizes and a forward one lays out children. */
	for (size_t i = t->n; i-- > 1;) {
		t->v[i].size++;
		t->v[t->v[i].parent].size += t->v[i].size;
		t->v[t->v[i].parent].nkids++;
	}
	t->kids = calloc(t->n, sizeof(*t->kids));
	fill = calloc(t->n, sizeof(*fill));
	if (!t->kids || !fill) {
		free(fill);
		return -ENOMEM;
	}
	for (size_t i = 0, pos = 0; i < t->n; i++) {
		t->v[i].first = pos;
		pos += t->v[i].nkids;
	}
	for (size_t i = 1; i < t->n; i++) {
		uint32_t par = t->v[i].parent;

		t->kids[t->v[par].first + fill[par]++] = i;
	}
	free(fill);
	return 0;
}

/* qsort has no context argument; the tree being sorted is set here. */
static const struct tree *sort_tree;

static int kid_cmp(const void *a, const void *b)
{
	const struct node *x = &sort_tree->v[*(const uint32_t *)a];
	const struct node *y = &sort_tree->v[*(const uint32_t *)b];

	if (x->total != y->total)
		return x->total > y->total ? -1 : 1;
	return strcmp(strtab_get(&sort_tree->p->names, x->name),
		      strtab_get(&sort_tree->p->names, y->name));
}

static double pct(const struct tree *t, uint64_t n)
{
	return t->p->shown ? 100.0 * n / t->p->shown : 0.0;
}

static void print(FILE *out, struct tree *t, uint32_t idx, int depth)
{
	const struct node *nd = &t->v[idx];

	sort_tree = t;
	qsort(t->kids + nd->first, nd->nkids, sizeof(*t->kids), kid_cmp);
	for (uint32_t i = 0; i < nd->nkids; i++) {
		const struct node *k = &t->v[t->kids[nd->first + i]];

		if (pct(t, k->total) < t->limit) {
			t->hidden += k->size;
			continue;
		}
		fprintf(out, "%7.2f%% %7.2f%%  %*s%s\n", pct(t, k->total),
			pct(t, k->self), depth * 2, "",
			strtab_get(&t->p->names, k->name));
		print(out, t, t->kids[nd->first + i], depth + 1);
	}
}

int out_callgraph(FILE *out, const struct profile *p, const struct out_opts *o)
{
	struct tree t = { .p = p, .limit = o->limit };
	int err;

	err = build(&t);
	if (err)
		goto cleanup;
	profile_header(out, p, "callgraph");
	fprintf(out, "# %6s %8s  %s\n", "total", "self",
		"function (callees indented below their caller)");
	print(out, &t, 0, 0);
	if (t.hidden)
		fprintf(out, "# %" PRIu64 " nodes below %g%% hidden (--percent-limit)\n",
			t.hidden, o->limit);
cleanup:
	free(t.v);
	free(t.kids);
	return err;
}

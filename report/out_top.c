/*
 * out_top.c - the functions that cost most, two ways: "by self" counts
 * the samples a function was the leaf of (where the CPU was), "by total"
 * those it was anywhere on the stack of (what it and its callees cost).
 * A recursive function appears several times on one stack but is counted
 * once per sample, or its total could exceed 100%.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "report/count.h"
#include "report/formats.h"

struct row {
	uint32_t name;
	uint64_t count;
};

/* qsort has no context argument; the table being sorted is set here. */
static const struct strtab *sort_names;

static int row_cmp(const void *a, const void *b)
{
	const struct row *x = a, *y = b;

	if (x->count != y->count)
		return x->count > y->count ? -1 : 1;
	return strcmp(strtab_get(sort_names, x->name),
		      strtab_get(sort_names, y->name));
}

static void table(FILE *out, const struct profile *p, const char *title,
		  const uint64_t *by_name, struct row *rows, unsigned limit)
{
	size_t n = 0;

	for (size_t i = 0; i < p->names.len; i++) {
		if (!by_name[i])
			continue;
		rows[n].name = i;
		rows[n++].count = by_name[i];
	}
	sort_names = &p->names;
	qsort(rows, n, sizeof(*rows), row_cmp);
	fprintf(out, "# %s\n%10s  %7s  %s\n", title, profile_unit(p), "percent",
		"function");
	for (size_t i = 0; i < n && (!limit || i < limit); i++)
		fprintf(out, "%10" PRIu64 "  %6.2f%%  %s\n", rows[i].count,
			p->shown ? 100.0 * rows[i].count / p->shown : 0.0,
			strtab_get(&p->names, rows[i].name));
	if (limit && n > limit)
		fprintf(out, "# ... %zu more\n", n - limit);
}

int out_top(FILE *out, const struct profile *p, const struct out_opts *o)
{
	unsigned limit = o->rows;
	size_t nn = p->names.len ? p->names.len : 1;
	uint64_t *self, *total, *seen;
	struct row *rows;
	int err = 0;

	self = calloc(nn, sizeof(*self));
	total = calloc(nn, sizeof(*total));
	/* seen[name] = stack id + 1 of the last stack that counted it. */
	seen = calloc(nn, sizeof(*seen));
	rows = calloc(nn, sizeof(*rows));
	if (!self || !total || !seen || !rows) {
		err = -ENOMEM;
		goto cleanup;
	}
	for (size_t s = 0; s < p->stacks.len; s++) {
		uint64_t c = p->counts[s];
		const uint32_t *v;
		uint32_t n;

		v = seqtab_get(&p->stacks, s, &n);
		if (!c || !n)
			continue;
		self[v[n - 1]] = count_add(self[v[n - 1]], c);
		for (uint32_t i = 0; i < n; i++) {
			if (seen[v[i]] == s + 1)
				continue;
			seen[v[i]] = s + 1;
			total[v[i]] = count_add(total[v[i]], c);
		}
	}
	profile_header(out, p, "top");
	table(out, p, "by self", self, rows, limit);
	fputc('\n', out);
	table(out, p, "by total", total, rows, limit);
cleanup:
	free(self);
	free(total);
	free(seen);
	free(rows);
	return err;
}

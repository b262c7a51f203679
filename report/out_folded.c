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

struct line {
	char *text;
	uint64_t count;
};

static int line_cmp(const void *a, const void *b)
{
	const struct line *x = a, *y = b;

	return strcmp(x->text, y->text);
}

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

int out_folded(FILE *out, const struct profile *p, const struct out_opts *o)
{
	size_t n = p->stacks.len, k = 0;
	struct line *lines;
	int err = 0;

	(void)o;
	lines = calloc(n ? n : 1, sizeof(*lines));
	if (!lines)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		if (!p->counts[i])
			continue;
		lines[k].text = folded_stack(p, i);
		if (!lines[k].text) {
			err = -ENOMEM;
			goto cleanup;
		}
		lines[k++].count = p->counts[i];
	}
	qsort(lines, k, sizeof(*lines), line_cmp);
	for (size_t i = 0; i < k; i++) {
		uint64_t count = lines[i].count;

		while (i + 1 < k && !strcmp(lines[i].text, lines[i + 1].text))
			count += lines[++i].count;
		fprintf(out, "%s %" PRIu64 "\n", lines[i].text, count);
	}
cleanup:
	for (size_t i = 0; i < k; i++)
		free(lines[i].text);
	free(lines);
	return err;
}

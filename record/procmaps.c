/*
 * procmaps.c - reads /proc/PID/maps into a sorted table of the executable
 * mappings, the only ones a native frame can be in.  Data mappings are
 * left out because they cost trace bytes and say nothing about code.
 *
 * The recorder keeps one table per target and compares a fresh read with
 * the last one, so a library loaded while recording (dlopen) is written to
 * the trace as an added mapping rather than as another full snapshot.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "record/recorder.h"

static int mapping_cmp(const void *a, const void *b)
{
	const struct lp_mapping *x = a, *y = b;

	return x->start < y->start ? -1 : x->start > y->start;
}

/* One line: "start-end perms offset dev inode   path". */
static int parse_line(char *line, struct lp_mapping *m)
{
	unsigned long long start, end, pgoff, inode;
	char perms[8];
	int pathpos = 0;
	char *path, *nl;

	if (sscanf(line, "%llx-%llx %7s %llx %*s %llu %n", &start, &end, perms,
		   &pgoff, &inode, &pathpos) < 5)
		return -EINVAL;
	if (perms[2] != 'x')
		return 1; /* not code: skip */
	path = pathpos ? line + pathpos : (char *)"";
	nl = strchr(path, '\n');
	if (nl)
		*nl = '\0';
	m->start = start;
	m->end = end;
	m->pgoff = pgoff;
	m->inode = inode;
	m->prot = LP_PROT_EXEC | (perms[0] == 'r' ? LP_PROT_READ : 0) |
		  (perms[1] == 'w' ? LP_PROT_WRITE : 0);
	m->path = strdup(path);
	return m->path ? 0 : -ENOMEM;
}

int procmaps_read(pid_t pid, struct maps_table *out)
{
	char fname[64], *line = NULL;
	size_t linecap = 0;
	uint32_t cap = 0;
	FILE *f;
	int err = 0;

	out->v = NULL;
	out->n = 0;
	snprintf(fname, sizeof(fname), "/proc/%d/maps", (int)pid);
	f = fopen(fname, "re");
	if (!f)
		return -errno;
	while (getline(&line, &linecap, f) > 0) {
		struct lp_mapping m;
		int r = parse_line(line, &m);

		if (r == 1 || r == -EINVAL)
			continue;
		if (r < 0) {
			err = r;
			break;
		}
		if (out->n == cap) {
			uint32_t ncap = cap ? cap * 2 : 32;
			struct lp_mapping *v = realloc(out->v, ncap * sizeof(*v));

			if (!v) {
				free((char *)m.path);
				err = -ENOMEM;
				break;
			}
			out->v = v;
			cap = ncap;
		}
		out->v[out->n++] = m;
	}
	free(line);
	fclose(f);
	if (err) {
		maps_table_free(out);
		return err;
	}
	qsort(out->v, out->n, sizeof(*out->v), mapping_cmp);
	return 0;
}

const struct lp_mapping *maps_table_find(const struct maps_table *t,
					 uint64_t addr)
{
	uint32_t lo = 0, hi = t->n;

	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;

		if (addr < t->v[mid].start)
			hi = mid;
		else if (addr >= t->v[mid].end)
			lo = mid + 1;
		else
			return &t->v[mid];
	}
	return NULL;
}

static int same_mapping(const struct lp_mapping *a, const struct lp_mapping *b)
{
	return a->start == b->start && a->end == b->end && a->pgoff == b->pgoff &&
	       a->inode == b->inode && a->prot == b->prot &&
	       !strcmp(a->path, b->path);
}

uint32_t maps_table_added(const struct maps_table *old,
			  const struct maps_table *now,
			  const struct lp_mapping **added, uint32_t cap)
{
	uint32_t n = 0;

	for (uint32_t i = 0; i < now->n && n < cap; i++) {
		const struct lp_mapping *o = maps_table_find(old, now->v[i].start);

		if (!o || !same_mapping(o, &now->v[i]))
			added[n++] = &now->v[i];
	}
	return n;
}

void maps_table_free(struct maps_table *t)
{
	for (uint32_t i = 0; i < t->n; i++)
		free((char *)t->v[i].path);
	free(t->v);
	t->v = NULL;
	t->n = 0;
}

/*
 * maps.c - per-process mappings replayed from MAPS records (see maps.h).
 *
 * A layout is a sorted array of non-overlapping mappings.  Snapshots
 * (LP_MAPS_REPLACE) are sorted once; added mappings cut away whatever they
 * overlap, as mmap(MAP_FIXED) would, so the array never overlaps and a
 * lookup is one binary search.  Paths are interned: a process maps the
 * same few files again and again, and forks share them all.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "lib/htab.h"
#include "report/intern.h"
#include "report/maps.h"

/* How many exited processes keep their layout for trailing samples. */
#define EXIT_GRACE 64

struct pid_maps {
	uint32_t pid;
	uint64_t gen;      /* 0: no layout */
	uint64_t exit_gen; /* gen when the pid exited, 0 while it lives */
	struct map_ent *v;
	size_t n;
};

struct maps {
	struct pid_maps *pids;
	size_t len, cap;
	struct htab h; /* pid -> pids[] index, one entry per pid ever seen */
	size_t hot;    /* pids[] index + 1 of the pid last asked its
			* generation, 0 none: a trace's samples come in runs
			* of few pids, and each sample asks */
	struct strtab paths;
	uint64_t last_gen;
	struct {
		size_t idx;
		uint64_t gen;
	} exited[EXIT_GRACE]; /* a ring of exited layouts, oldest first */
	unsigned exited_head, exited_len;
};

int maps_new(struct maps **out)
{
	*out = calloc(1, sizeof(**out));
	return *out ? 0 : -ENOMEM;
}

void maps_free(struct maps *m)
{
	if (!m)
		return;
	for (size_t i = 0; i < m->len; i++)
		free(m->pids[i].v);
	free(m->pids);
	htab_free(&m->h);
	strtab_free(&m->paths);
	free(m);
}

static struct pid_maps *find_pid(const struct maps *m, uint32_t pid)
{
	struct htab_probe p;
	int64_t i;

	htab_probe_start(&m->h, hash_u64(pid), &p);
	while ((i = htab_probe_next(&m->h, &p)) >= 0)
		if (m->pids[i].pid == pid)
			return &m->pids[i];
	return NULL;
}

/* The returned pointer is valid until the next call that adds a pid. */
static int get_pid(struct maps *m, uint32_t pid, struct pid_maps **out)
{
	int err;

	*out = find_pid(m, pid);
	if (*out)
		return 0;
	err = GROW(m->pids, m->cap, m->len + 1);
	if (!err)
		err = htab_insert(&m->h, hash_u64(pid), m->len);
	if (err)
		return err;
	*out = &m->pids[m->len++];
	memset(*out, 0, sizeof(**out));
	(*out)->pid = pid;
	return 0;
}

static int ent_cmp(const void *a, const void *b)
{
	const struct map_ent *x = a, *y = b;

	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	return x->end < y->end ? -1 : x->end > y->end;
}

/* Sorts a set of mappings and trims overlaps within it (the earlier
 * start wins), which a damaged or racy snapshot may hold; lookups need a
 * layout without overlaps to be well defined.  Returns the new count. */
static size_t normalize(struct map_ent *v, size_t n)
{
	size_t k = 0;

	if (!n)
		return 0;
	qsort(v, n, sizeof(*v), ent_cmp);
	for (size_t i = 0; i < n; i++) {
		struct map_ent e = v[i];

		if (k && e.start < v[k - 1].end) {
			if (e.end <= v[k - 1].end)
				continue;
			e.pgoff += v[k - 1].end - e.start;
			e.start = v[k - 1].end;
		}
		v[k++] = e;
	}
	return k;
}

static int replace_all(struct pid_maps *pm, struct map_ent *v, size_t n)
{
	free(pm->v);
	pm->v = v;
	pm->n = normalize(v, n);
	return 0;
}

/*
 * Adds mappings the way mmap(MAP_FIXED) would: whatever part of an older
 * mapping they cover is cut away, the rest of it stays.  Both sets are
 * sorted and disjoint, so one sweep finds every overlap, and a record of
 * many mappings costs a sort, not a pass over the layout per mapping.
 */
static int add_many(struct pid_maps *pm, struct map_ent *nv, size_t k)
{
	struct map_ent *out;
	size_t n = 0, j = 0;

	if (!k)
		return 0;
	k = normalize(nv, k);
	/* Each added mapping splits at most one older one in two. */
	out = malloc((pm->n + 2 * k + 1) * sizeof(*out));
	if (!out)
		return -ENOMEM;
	for (size_t i = 0; i < pm->n; i++) {
		const struct map_ent *o = &pm->v[i];
		uint64_t cur = o->start;

		while (j < k && nv[j].end <= o->start)
			j++;
		for (size_t jj = j; jj < k && nv[jj].start < o->end; jj++) {
			if (nv[jj].start > cur) {
				out[n] = *o;
				out[n].start = cur;
				out[n].end = nv[jj].start;
				out[n++].pgoff = o->pgoff + (cur - o->start);
			}
			if (nv[jj].end > cur)
				cur = nv[jj].end;
		}
		if (cur < o->end) {
			out[n] = *o;
			out[n].start = cur;
			out[n++].pgoff = o->pgoff + (cur - o->start);
		}
	}
	memcpy(out + n, nv, k * sizeof(*nv));
	n += k;
	qsort(out, n, sizeof(*out), ent_cmp);
	free(pm->v);
	pm->v = out;
	pm->n = n;
	return 0;
}

int maps_apply(struct maps *m, const struct lp_maps *rec)
{
	struct map_ent *v = NULL;
	struct pid_maps *pm;
	size_t n = 0;
	uint32_t id;
	int err;

	err = get_pid(m, rec->pid, &pm);
	if (err)
		return err;
	if (rec->count) {
		v = calloc(rec->count, sizeof(*v));
		if (!v)
			return -ENOMEM;
	}
	for (uint32_t i = 0; i < rec->count; i++) {
		const struct lp_mapping *lm = &rec->mappings[i];
		const char *path = lm->path ? lm->path : "";

		if (lm->end <= lm->start)
			continue; /* says nothing usable */
		err = strtab_intern(&m->paths, path, strlen(path), &id);
		if (err)
			goto cleanup;
		v[n].start = lm->start;
		v[n].end = lm->end;
		v[n].pgoff = lm->pgoff;
		v[n].prot = lm->prot;
		v[n].path = strtab_get(&m->paths, id);
		v[n].object = lm->object;
		n++;
	}
	if (rec->flags & LP_MAPS_REPLACE) {
		err = replace_all(pm, v, n);
		v = NULL; /* owned by pm now */
	} else {
		err = add_many(pm, v, n);
		if (err)
			goto cleanup;
	}
	pm->gen = ++m->last_gen;
	pm->exit_gen = 0;
cleanup:
	free(v);
	return err;
}

int maps_fork(struct maps *m, uint32_t pid, uint32_t ppid)
{
	struct pid_maps *child, *parent;
	struct map_ent *v;
	int err;

	err = get_pid(m, pid, &child);
	if (err)
		return err;
	if (child->gen && !child->exit_gen)
		return 0; /* its own MAPS record came first: keep it */
	parent = find_pid(m, ppid);
	if (!parent || !parent->gen || parent == child)
		return 0;
	v = malloc((parent->n ? parent->n : 1) * sizeof(*v));
	if (!v)
		return -ENOMEM;
	if (parent->n)
		memcpy(v, parent->v, parent->n * sizeof(*v));
	free(child->v);
	child->v = v;
	child->n = parent->n;
	child->gen = ++m->last_gen;
	child->exit_gen = 0;
	return 0;
}

void maps_exit(struct maps *m, uint32_t pid)
{
	struct pid_maps *pm = find_pid(m, pid);
	unsigned slot;

	if (!pm || !pm->gen || pm->exit_gen)
		return;
	pm->exit_gen = pm->gen;
	if (m->exited_len == EXIT_GRACE) {
		/* Drop the oldest exited layout unless its pid came back
		 * (then its generation moved on and it is not ours). */
		struct pid_maps *old = &m->pids[m->exited[m->exited_head].idx];

		if (old->gen == m->exited[m->exited_head].gen &&
		    old->exit_gen == old->gen) {
			free(old->v);
			old->v = NULL;
			old->n = 0;
			old->gen = 0;
			old->exit_gen = 0;
		}
		m->exited_head = (m->exited_head + 1) % EXIT_GRACE;
		m->exited_len--;
	}
	slot = (m->exited_head + m->exited_len) % EXIT_GRACE;
	m->exited[slot].idx = pm - m->pids;
	m->exited[slot].gen = pm->gen;
	m->exited_len++;
}

void maps_view(struct maps *m, uint32_t pid, struct maps_view *v)
{
	const struct pid_maps *pm;

	if (m->hot && m->pids[m->hot - 1].pid == pid) {
		pm = &m->pids[m->hot - 1];
	} else {
		pm = find_pid(m, pid);
		if (pm)
			m->hot = (size_t)(pm - m->pids) + 1;
	}
	v->pid = pid;
	v->pm = pm;
	v->gen = pm ? pm->gen : 0;
}

const struct map_ent *maps_view_find(const struct maps_view *v, uint64_t addr)
{
	const struct pid_maps *pm = v->pm;
	size_t lo = 0, hi;

	if (!pm || !pm->n)
		return NULL;
	/* The last mapping starting at or below addr is the only candidate. */
	hi = pm->n;
	while (hi - lo > 1) {
		size_t mid = lo + (hi - lo) / 2;

		if (pm->v[mid].start <= addr)
			lo = mid;
		else
			hi = mid;
	}
	if (pm->v[lo].start <= addr && addr < pm->v[lo].end)
		return &pm->v[lo];
	return NULL;
}

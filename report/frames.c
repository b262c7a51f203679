/*
 * frames.c - names of user and kernel frames (see frames.h).
 *
 * The naming rules, in order, for a user address:
 *   in no mapping            [unmapped]
 *   anonymous memory         [anon]+0xOFF     (from the mapping's start)
 *   a special mapping        [vdso]+0xOFF if executable, else [stack] etc.
 *   a file, symbol found     the function's name
 *   a file, no symbol        MODULE+0xOFF     (OFF an ELF virtual address,
 *                                              what addr2line -e takes, or
 *                                              the file offset when the file
 *                                              cannot be read)
 * and for a kernel address NAME_[k], or [kernel]_[k] without a symbol.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "report/frames.h"
#include "report/htab.h"

struct ksym {
	uint64_t addr;
	char *name;
	uint32_t id; /* name id of "NAME_[k]", UINT32_MAX until needed */
};

struct frames {
	struct strtab *names;
	struct maps *maps;
	struct symbolizer *sym;
	struct objects *objs; /* NULL: mappings are read from their paths */
	struct ksym *ksyms;
	size_t nksyms, capksyms;
	int sorted;
	uint32_t unmapped_id, kernel_id; /* interned on first use */
};

int frames_new(struct frames **out, struct strtab *names, struct maps *maps,
	       struct symbolizer *sym)
{
	struct frames *f = calloc(1, sizeof(*f));

	if (!f)
		return -ENOMEM;
	f->names = names;
	f->maps = maps;
	f->sym = sym;
	f->sorted = 1;
	f->unmapped_id = f->kernel_id = UINT32_MAX;
	*out = f;
	return 0;
}

void frames_set_objects(struct frames *f, struct objects *o)
{
	f->objs = o;
}

void frames_free(struct frames *f)
{
	if (!f)
		return;
	for (size_t i = 0; i < f->nksyms; i++)
		free(f->ksyms[i].name);
	free(f->ksyms);
	free(f);
}

int frames_name(struct frames *f, const char *name, uint32_t *id)
{
	size_t n = strlen(name);
	char *clean;
	int err;

	for (size_t i = 0; i < n; i++) {
		unsigned char c = name[i];

		if (c < 0x20 || c == 0x7f)
			goto dirty;
	}
	return strtab_intern(f->names, name, n, id);
dirty:
	clean = strdup(name);
	if (!clean)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++)
		if ((unsigned char)clean[i] < 0x20 || clean[i] == 0x7f)
			clean[i] = '?';
	err = strtab_intern(f->names, clean, n, id);
	free(clean);
	return err;
}

static const char *base_name(const char *path)
{
	const char *slash = strrchr(path, '/');

	return slash && slash[1] ? slash + 1 : path;
}

int frames_user(struct frames *f, uint32_t pid, uint64_t addr, int ret,
		uint32_t *id)
{
	const struct map_ent *m;
	struct sym_result res;
	char buf[512];
	uint64_t at = ret && addr ? addr - 1 : addr;
	int err;

	m = maps_find(f->maps, pid, at);
	if (!m) {
		if (f->unmapped_id == UINT32_MAX) {
			err = frames_name(f, "[unmapped]", &f->unmapped_id);
			if (err)
				return err;
		}
		*id = f->unmapped_id;
		return 0;
	}
	if (!m->path[0]) {
		snprintf(buf, sizeof(buf), "[anon]+0x%" PRIx64, at - m->start);
	} else if (m->path[0] != '/') {
		/* [vdso], [stack], or anything else the kernel names. */
		if (m->prot & LP_PROT_EXEC)
			snprintf(buf, sizeof(buf), "%s+0x%" PRIx64, m->path,
				 at - m->start);
		else
			snprintf(buf, sizeof(buf), "%s", m->path);
	} else {
		if (f->objs)
			err = objects_lookup(f->objs, m->object, m->path,
					     at - m->start + m->pgoff, &res);
		else
			err = symbolizer_lookup(f->sym, m->path,
						at - m->start + m->pgoff, &res);
		if (err)
			return err;
		if (res.func)
			return frames_name(f, res.func, id);
		snprintf(buf, sizeof(buf), "%s+0x%" PRIx64, base_name(m->path),
			 res.addr);
	}
	return frames_name(f, buf, id);
}

int frames_add_ksyms(struct frames *f, const struct lp_ksyms *rec)
{
	int err;

	err = GROW(f->ksyms, f->capksyms, f->nksyms + rec->count);
	if (err)
		return err;
	for (uint32_t i = 0; i < rec->count; i++) {
		const char *name = rec->syms[i].name ? rec->syms[i].name : "";
		struct ksym *k = &f->ksyms[f->nksyms];

		k->name = strdup(name);
		if (!k->name)
			return -ENOMEM;
		k->addr = rec->syms[i].addr;
		k->id = UINT32_MAX;
		f->nksyms++;
	}
	f->sorted = 0;
	return 0;
}

static int ksym_cmp(const void *a, const void *b)
{
	const struct ksym *x = a, *y = b;

	if (x->addr != y->addr)
		return x->addr < y->addr ? -1 : 1;
	return strcmp(x->name, y->name);
}

int frames_kernel(struct frames *f, uint64_t addr, int ret, uint32_t *id)
{
	uint64_t at = ret && addr ? addr - 1 : addr;
	size_t lo = 0, hi = f->nksyms;
	struct ksym *k;
	char buf[512];
	int err;

	if (!f->sorted && f->nksyms) {
		qsort(f->ksyms, f->nksyms, sizeof(*f->ksyms), ksym_cmp);
		f->sorted = 1;
	}
	if (!f->nksyms || at < f->ksyms[0].addr) {
		if (f->kernel_id == UINT32_MAX) {
			err = frames_name(f, "[kernel]_[k]", &f->kernel_id);
			if (err)
				return err;
		}
		*id = f->kernel_id;
		return 0;
	}
	while (hi - lo > 1) {
		size_t mid = lo + (hi - lo) / 2;

		if (f->ksyms[mid].addr <= at)
			lo = mid;
		else
			hi = mid;
	}
	/* Of several names at one address, the first in sort order. */
	while (lo && f->ksyms[lo - 1].addr == f->ksyms[lo].addr)
		lo--;
	k = &f->ksyms[lo];
	if (k->id == UINT32_MAX) {
		snprintf(buf, sizeof(buf), "%s_[k]", k->name);
		err = frames_name(f, buf, &k->id);
		if (err)
			return err;
	}
	*id = k->id;
	return 0;
}

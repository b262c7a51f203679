/*
 * kallsyms.c - the kernel symbols a trace needs.  Kernel frames are
 * addresses that only this machine's running kernel can name, so the
 * recorder notes every kernel address the stacks hold and, at each flush,
 * writes the symbols that the addresses noted since the last flush fall in
 * and that the trace does not hold yet, as one KSYMS record.  Writing them
 * as it goes, not at the end, keeps kernel frames named in a trace cut
 * short.  Only the symbols hit are written: /proc/kallsyms has over 100k.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "record/recorder.h"

struct kallsym {
	uint64_t addr;
	char *name;
	int written;
};

struct ksym_set {
	uint64_t *pending; /* noted since the last write */
	size_t npending, cappending;
	struct kallsym *all; /* /proc/kallsyms text symbols, ascending */
	size_t nall;
	int loaded; /* 1 loaded, -errno failed */
};

struct ksym_set *ksym_set_new(void)
{
	return calloc(1, sizeof(struct ksym_set));
}

void ksym_set_note(struct ksym_set *s, const uint64_t *addrs, uint32_t n)
{
	if (s->npending + n > s->cappending) {
		size_t ncap = s->cappending ? s->cappending * 2 : 4096;
		uint64_t *v;

		while (ncap < s->npending + n)
			ncap *= 2;
		v = realloc(s->pending, ncap * sizeof(*v));
		if (!v)
			return; /* these frames will print as [kernel] */
		s->pending = v;
		s->cappending = ncap;
	}
	memcpy(s->pending + s->npending, addrs, n * sizeof(*addrs));
	s->npending += n;
}

static int kallsym_cmp(const void *a, const void *b)
{
	const struct kallsym *x = a, *y = b;

	return x->addr < y->addr ? -1 : x->addr > y->addr;
}

static int kallsym_cmp_lp(const void *a, const void *b)
{
	const struct lp_ksym *x = a, *y = b;

	return x->addr < y->addr ? -1 : x->addr > y->addr;
}

/* Text symbols only (t/T/w/W), which is where a stack can point. */
static int load_kallsyms(struct ksym_set *s)
{
	size_t cap = 0;
	unsigned long long addr;
	char type, name[256];
	FILE *f = fopen("/proc/kallsyms", "re");

	if (!f)
		return -errno;
	while (fscanf(f, "%llx %c %255s%*[^\n]", &addr, &type, name) == 3) {
		if (!addr || !strchr("tTwW", type))
			continue;
		if (s->nall == cap) {
			size_t ncap = cap ? cap * 2 : 65536;
			struct kallsym *v = realloc(s->all, ncap * sizeof(*v));

			if (!v)
				break;
			s->all = v;
			cap = ncap;
		}
		s->all[s->nall].addr = addr;
		s->all[s->nall].written = 0;
		s->all[s->nall].name = strdup(name);
		if (s->all[s->nall].name)
			s->nall++;
	}
	fclose(f);
	qsort(s->all, s->nall, sizeof(*s->all), kallsym_cmp);
	return s->nall ? 0 : -ENOENT; /* all zero: kptr_restrict hides them */
}

/* The symbol containing addr: the last one starting at or below it. */
static struct kallsym *find_kallsym(struct ksym_set *s, uint64_t addr)
{
	size_t lo = 0, hi = s->nall;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (s->all[mid].addr <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo ? &s->all[lo - 1] : NULL;
}

int ksym_set_write(struct ksym_set *s, struct trace_writer *w)
{
	struct lp_ksym *hit = NULL;
	struct lp_record rec;
	size_t nhit = 0;
	int err = 0;

	if (!s->npending)
		return 0;
	if (!s->loaded)
		s->loaded = load_kallsyms(s) ?: 1;
	if (s->loaded < 0) {
		err = s->loaded;
		goto cleanup;
	}
	hit = calloc(s->npending, sizeof(*hit));
	if (!hit) {
		err = -ENOMEM;
		goto cleanup;
	}
	for (size_t i = 0; i < s->npending; i++) {
		struct kallsym *k = find_kallsym(s, s->pending[i]);

		if (!k || k->written)
			continue;
		k->written = 1;
		hit[nhit].addr = k->addr;
		hit[nhit].name = k->name;
		nhit++;
	}
	if (nhit) {
		/* The record lists ascending addresses. */
		qsort(hit, nhit, sizeof(*hit), kallsym_cmp_lp);
		memset(&rec, 0, sizeof(rec));
		rec.type = LP_REC_KSYMS;
		rec.u.ksyms.count = nhit;
		rec.u.ksyms.syms = hit;
		err = trace_write(w, &rec);
	}
cleanup:
	s->npending = 0;
	free(hit);
	return err;
}

void ksym_set_free(struct ksym_set *s)
{
	if (!s)
		return;
	for (size_t i = 0; i < s->nall; i++)
		free(s->all[i].name);
	free(s->all);
	free(s->pending);
	free(s);
}

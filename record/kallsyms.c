/*
 * kallsyms.c - the kernel symbols a trace needs.  Kernel frames are
 * addresses that only this machine's running kernel can name, so the
 * recorder notes every kernel address the stacks hold and, at each flush,
 * writes the symbols that the addresses noted since the last flush fall in
 * and that the trace does not hold yet, as one KSYMS record.  Writing them
 * as it goes, not at the end, keeps kernel frames named in a trace cut
 * short.  Only the symbols hit are written: /proc/kallsyms has over 100k.
 * Reading it costs the machine tens of milliseconds, so the session loads
 * it before sampling starts, with the other setup, not in the middle of
 * the recording.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "record/recorder.h"

struct kallsym {
	uint64_t addr;
	char *name;
	int written;
};

struct ksym_set {
	uint64_t *pending; /* noted since the last write */
	size_t npending, cappending;
	char *text; /* /proc/kallsyms as read; the names point into it */
	struct kallsym *all; /* its text symbols, ascending */
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

/* Reads all of path into a NUL-terminated buffer.  /proc files report no
 * size, so it grows until read() says the end. */
static int slurp(const char *path, char **out, size_t *outlen)
{
	size_t len = 0, cap = 1 << 20;
	char *buf = malloc(cap), *v;
	int fd = open(path, O_RDONLY | O_CLOEXEC), err = 0;
	ssize_t n;

	if (fd < 0 || !buf) {
		err = fd < 0 ? -errno : -ENOMEM;
		goto fail;
	}
	for (;;) {
		if (cap - len < 65536) {
			v = realloc(buf, cap * 2);
			if (!v) {
				err = -ENOMEM;
				goto fail;
			}
			buf = v;
			cap *= 2;
		}
		n = read(fd, buf + len, cap - len - 1);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			err = -errno;
			goto fail;
		}
		if (!n)
			break;
		len += n;
	}
	close(fd);
	buf[len] = 0;
	*out = buf;
	*outlen = len;
	return 0;
fail:
	if (fd >= 0)
		close(fd);
	free(buf);
	return err;
}

/* Text symbols only (t/T/w/W), which is where a stack can point.  The
 * kernel takes ~35 ms to print its 120k lines; parsing them by hand, with
 * the names left in place in the one buffer, keeps the recorder's own part
 * small (fscanf and a strdup per name took as long again, while the
 * target ran).  The lines come in address order but for modules, so the
 * sort is skipped when they are in order already. */
static int load_kallsyms(struct ksym_set *s)
{
	size_t cap = 0, len = 0;
	char *p, *end, *line_end;
	int err, sorted = 1;

	err = slurp("/proc/kallsyms", &s->text, &len);
	if (err)
		return err;
	for (p = s->text, end = s->text + len; p < end; p = line_end + 1) {
		unsigned long long addr;
		char *q, *name;
		char type;

		line_end = memchr(p, '\n', end - p);
		if (!line_end)
			line_end = end;
		*line_end = 0;
		/* "ffffffff81000000 T _stext" or "... t name\t[module]" */
		addr = strtoull(p, &q, 16);
		if (q == p || *q != ' ' || !q[1] || q[2] != ' ')
			continue;
		type = q[1];
		name = q + 3;
		name[strcspn(name, "\t ")] = 0;
		if (!addr || !*name || !strchr("tTwW", type))
			continue;
		if (s->nall == cap) {
			size_t ncap = cap ? cap * 2 : 65536;
			struct kallsym *v = realloc(s->all, ncap * sizeof(*v));

			if (!v)
				break;
			s->all = v;
			cap = ncap;
		}
		if (s->nall && s->all[s->nall - 1].addr > addr)
			sorted = 0;
		s->all[s->nall].addr = addr;
		s->all[s->nall].written = 0;
		s->all[s->nall].name = name;
		s->nall++;
	}
	if (!sorted)
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

int ksym_set_load(struct ksym_set *s)
{
	if (!s->loaded)
		s->loaded = load_kallsyms(s) ?: 1;
	return s->loaded < 0 ? s->loaded : 0;
}

int ksym_set_write(struct ksym_set *s, struct trace_writer *w)
{
	struct lp_ksym *hit = NULL;
	struct lp_record rec;
	size_t nhit = 0;
	int err = 0;

	if (!s->npending)
		return 0;
	err = ksym_set_load(s);
	if (err)
		goto cleanup;
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
	free(s->text);
	free(s->all);
	free(s->pending);
	free(s);
}

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
#include <lz4.h>
#include <unistd.h>

#include "format/trace.h"
#include "lib/grow.h"
#include "record/kallsyms.h"
#include "lib/bsearch.h"

/* 16 bytes a symbol; the names, in the order the file gives them, in
 * blocks of NAMES_PER_BLOCK compressed with LZ4 (5 ms for the lot): the
 * kernel's 120k text symbols take 3 MiB, not the 11 MiB of the file as
 * read and an array of pointers into it.  Names are read back only for
 * the symbols samples hit, when the trace gets them. */
#define NAMES_PER_BLOCK 64
#define NAME_MAX_LEN 511 /* longer is no symbol (KSYM_NAME_LEN is 512) */

struct kallsym {
	uint64_t addr;
	uint32_t seq;     /* its line among those kept: its name */
	uint32_t written; /* in a KSYMS record already */
};

struct ksym_set {
	uint64_t *pending; /* noted since the last write */
	size_t npending, cappending;
	char *blocks; /* the compressed blocks of names, one after another */
	size_t lblocks, capblocks;
	uint32_t *block_at; /* where block i starts; one more for the end */
	size_t nblock_at, capblock_at;
	char stage[NAMES_PER_BLOCK * (NAME_MAX_LEN + 1)]; /* the block filling */
	size_t lstage;
	struct kallsym *all; /* the text symbols, ascending */
	size_t nall, capall;
	int loaded; /* 1 loaded, -errno failed */
	/* The block last read back, decompressed. */
	char block[NAMES_PER_BLOCK * (NAME_MAX_LEN + 1)];
	long block_no; /* -1 none */
};

struct ksym_set *ksym_set_new(void)
{
	struct ksym_set *s = calloc(1, sizeof(struct ksym_set));

	if (s)
		s->block_no = -1;
	return s;
}

void ksym_set_note(struct ksym_set *s, const uint64_t *addrs, uint32_t n)
{
	if (GROW(s->pending, s->cappending, s->npending + n))
		return; /* these frames will print as [kernel] */
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

/* Compresses the names staged into the next block. */
static int seal_block(struct ksym_set *s)
{
	int bound = LZ4_compressBound((int)s->lstage), n;

	if (!s->lstage)
		return 0;
	if (GROW(s->blocks, s->capblocks, s->lblocks + (size_t)bound) ||
	    GROW(s->block_at, s->capblock_at, s->nblock_at + 2))
		return -ENOMEM;
	n = LZ4_compress_default(s->stage, s->blocks + s->lblocks, (int)s->lstage, bound);
	if (n <= 0 || s->lblocks + (size_t)n > UINT32_MAX)
		return -ENOMEM;
	s->block_at[s->nblock_at++] = (uint32_t)s->lblocks;
	s->lblocks += (size_t)n;
	s->block_at[s->nblock_at] = (uint32_t)s->lblocks;
	s->lstage = 0;
	return 0;
}

/* Keeps one line of /proc/kallsyms, "ffffffff81000000 T _stext" or
 * "... t name\t[module]", if it names a text symbol (t/T/w/W: where a
 * stack can point).  *sorted is cleared when it comes below the last. */
static int keep_line(struct ksym_set *s, char *p, int *sorted)
{
	unsigned long long addr;
	char *q, *name;
	size_t len;

	addr = strtoull(p, &q, 16);
	if (q == p || *q != ' ' || !q[1] || q[2] != ' ' || !strchr("tTwW", q[1]))
		return 0;
	name = q + 3;
	len = strcspn(name, "\t ");
	if (!addr || !len || len > NAME_MAX_LEN)
		return 0;
	if (GROW(s->all, s->capall, s->nall + 1) || s->nall >= UINT32_MAX)
		return -ENOMEM;
	if (s->nall && s->all[s->nall - 1].addr > addr)
		*sorted = 0;
	memcpy(s->stage + s->lstage, name, len);
	s->stage[s->lstage + len] = '\0';
	s->lstage += len + 1;
	s->all[s->nall] = (struct kallsym){ addr, (uint32_t)s->nall, 0 };
	s->nall++;
	return s->nall % NAMES_PER_BLOCK ? 0 : seal_block(s);
}

/* The name of the symbol kept seq-th, from its block; NULL if lost. */
static const char *name_of(struct ksym_set *s, uint32_t seq)
{
	long b = seq / NAMES_PER_BLOCK;
	const char *p, *end;
	int n;

	if ((size_t)b >= s->nblock_at)
		return NULL;
	if (b != s->block_no) {
		s->block_no = -1;
		n = LZ4_decompress_safe(s->blocks + s->block_at[b], s->block,
					(int)(s->block_at[b + 1] - s->block_at[b]),
					(int)sizeof(s->block));
		if (n <= 0)
			return NULL;
		s->block_no = b;
		s->block[n - 1] = '\0'; /* the last name's NUL, for safety */
	}
	p = s->block;
	end = s->block + sizeof(s->block);
	for (uint32_t i = seq % NAMES_PER_BLOCK; i > 0 && p < end; i--)
		p += strlen(p) + 1;
	return p < end ? p : NULL;
}

/* The kernel takes ~35 ms to print its 120k lines; parsing them by hand
 * as they come, a block at a time, keeps the recorder's own part small
 * (fscanf and a strdup per name took as long again, while the target
 * ran) and holds only what is kept.  The lines come in address order but
 * for modules, so the sort is skipped when they are in order already. */
static int load_kallsyms(struct ksym_set *s)
{
	char buf[65536 + 1];
	size_t have = 0;
	int fd = open("/proc/kallsyms", O_RDONLY | O_CLOEXEC), err = 0, sorted = 1;

	if (fd < 0)
		return -errno;
	for (;;) {
		ssize_t n = read(fd, buf + have, sizeof(buf) - 1 - have);
		char *p, *nl, *end;

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			err = -errno;
			break;
		}
		have += (size_t)n;
		end = buf + have;
		*end = '\0';
		for (p = buf; !err && (nl = memchr(p, '\n', end - p)); p = nl + 1) {
			*nl = '\0';
			err = keep_line(s, p, &sorted);
		}
		if (!err && !n && p < end) /* a last line without its newline */
			err = keep_line(s, p, &sorted);
		if (err || !n)
			break;
		have = end - p;
		if (have == sizeof(buf) - 1)
			have = 0; /* a line longer than the buffer: not a symbol */
		memmove(buf, p, have);
	}
	close(fd);
	err = err ?: seal_block(s);
	if (err)
		return err;
	if (!sorted)
		qsort(s->all, s->nall, sizeof(*s->all), kallsym_cmp);
	return s->nall ? 0 : -ENOENT; /* all zero: kptr_restrict hides them */
}

/* The symbol containing addr: the last one starting at or below it. */
static struct kallsym *find_kallsym(struct ksym_set *s, uint64_t addr)
{
	size_t n = LP_UPPER_BOUND(s->all, 0, s->nall, addr, addr);

	return n ? &s->all[n - 1] : NULL;
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
		hit[nhit].name = name_of(s, k->seq);
		if (!hit[nhit].name || !(hit[nhit].name = strdup(hit[nhit].name)))
			continue; /* the frames print as [kernel] */
		k->written = 1;
		hit[nhit].addr = k->addr;
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
	for (size_t i = 0; i < nhit; i++)
		free((char *)hit[i].name);
	free(hit);
	return err;
}

void ksym_set_free(struct ksym_set *s)
{
	if (!s)
		return;
	free(s->blocks);
	free(s->block_at);
	free(s->all);
	free(s->pending);
	free(s);
}

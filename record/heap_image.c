/*
 * heap_image.c - a copy of a stopped process's memory for `luaprof heap`
 * (heap.h): its private writable mappings, anonymous or the brk heap,
 * which is where LuaJIT's allocator (its own, or the system's) puts every
 * GC object.  The copy is taken while the target is stopped, so the walk
 * reads one instant of it and runs after the target goes on; the pause
 * is the time of the copy alone.  Pages that cannot be read are zeros in
 * the copy and counted; mappings past the bound are left out and counted.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/grow.h"
#include "record/heap.h"
#include "record/luajit.h" /* target_read() */

#define PAGE 4096u
#define READ_CHUNK (8u << 20)

/* Whether a /proc/PID/maps line is memory LuaJIT's objects may live in:
 * private, readable and writable, anonymous or the brk heap. */
static int heap_candidate(const char *perms, const char *path)
{
	if (perms[0] != 'r' || perms[1] != 'w' || perms[3] != 'p')
		return 0;
	return !path[0] || !strcmp(path, "[heap]");
}

/* Reads len bytes at addr into buf, page by page where a whole read
 * fails: the bytes it could not read stay zero, counted in *failed. */
static void read_span(pid_t pid, uint64_t addr, uint8_t *buf, size_t len, uint64_t *failed)
{
	if (!target_read(pid, addr, buf, len))
		return;
	for (size_t off = 0; off < len; off += PAGE) {
		size_t k = len - off < PAGE ? len - off : PAGE;

		if (target_read(pid, addr + off, buf + off, k)) {
			memset(buf + off, 0, k);
			*failed += k;
		}
	}
}

static int add_region(struct heap_image *im, uint64_t start, uint64_t end, uint8_t *data)
{
	if (GROW(im->r, im->cap, im->n + 1))
		return -ENOMEM;
	im->r[im->n++] = (struct heap_region){ start, end, data };
	im->bytes += end - start;
	return 0;
}

static int copy_mapping(struct heap_image *im, pid_t pid, uint64_t start, uint64_t end)
{
	uint8_t *data = malloc(end - start);
	int err;

	if (!data)
		return -ENOMEM;
	for (uint64_t a = start; a < end; a += READ_CHUNK)
		read_span(pid, a, data + (a - start),
			  end - a < READ_CHUNK ? end - a : READ_CHUNK, &im->failed_bytes);
	err = add_region(im, start, end, data);
	if (err)
		free(data);
	return err;
}

int heap_image_copy(struct heap_image *im, pid_t pid, uint64_t max_bytes)
{
	char path[64], line[4096], perms[8], name[4096];
	unsigned long long start, end;
	FILE *f;
	int err = 0;

	snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
	f = fopen(path, "re");
	if (!f)
		return -errno;
	while (!err && fgets(line, sizeof(line), f)) {
		name[0] = '\0';
		if (sscanf(line, "%llx-%llx %7s %*s %*s %*s %4095[^\n]", &start, &end, perms,
			   name) < 3 || end <= start)
			continue;
		if (!heap_candidate(perms, name))
			continue;
		if (im->bytes + (end - start) > max_bytes) {
			im->skipped_bytes += end - start;
			continue;
		}
		err = copy_mapping(im, pid, start, end);
	}
	fclose(f);
	return err;
}

static int region_cmp(const void *a, const void *b)
{
	const struct heap_region *x = a, *y = b;

	return x->start < y->start ? -1 : x->start > y->start;
}

int heap_image_add(struct heap_image *im, uint64_t start, const void *data, size_t len)
{
	uint8_t *copy;

	if (!len || start + len < start)
		return -EINVAL;
	copy = malloc(len);
	if (!copy)
		return -ENOMEM;
	memcpy(copy, data, len);
	if (add_region(im, start, start + len, copy)) {
		free(copy);
		return -ENOMEM;
	}
	qsort(im->r, im->n, sizeof(*im->r), region_cmp);
	return 0;
}

const uint8_t *heap_ptr(const struct heap_image *im, uint64_t addr, size_t len)
{
	size_t lo = 0, hi = im->n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (im->r[mid].end <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == im->n || addr < im->r[lo].start || len > im->r[lo].end - addr)
		return NULL;
	return im->r[lo].data + (addr - im->r[lo].start);
}

void heap_image_free(struct heap_image *im)
{
	for (size_t i = 0; i < im->n; i++)
		free(im->r[i].data);
	free(im->r);
	memset(im, 0, sizeof(*im));
}

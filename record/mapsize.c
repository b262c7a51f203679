/*
 * mapsize.c - sizes the BPF maps that cost the recorder memory, before
 * the sampler is loaded: a map cannot grow once created, and the sizes
 * bpf/ declares are the most any recording may need (an 8 MiB ring
 * buffer, 8 MiB of unwind rows, 2 MiB of their index).  The recorder maps
 * all three into its address space, whole, so their sizes are most of
 * its resident memory: 26 MiB of the 56 MiB a recording of one small
 * LuaJIT program used to take.
 *
 * The ring buffer holds a second of samples from every CPU at the rate
 * (a sample goes packed, at its real size: counted here as a typical one
 * of 16 kernel, 32 user and 16 Lua frames, 704 bytes), at least
 * 1 MiB and at most what bpf/ declares.  The recorder drains it at least
 * 10 times a second; the second covers its longer pauses (the first
 * flush reads symbol tables and DWARF) on a loaded machine, and in a
 * guest the host emulates (tests/kernels: half a second lost samples
 * there).
 *
 * The unwind rows and their bucket index (bpf/unwind_maps.h) are sized to the
 * objects the targets have mapped when recording starts, twice over for
 * what they map later (dlopen, children that exec), at least 1 MiB of
 * rows.  Building the tables to count them would double the recorder's
 * setup, so the counts are estimated from the ELF headers: a row costs
 * 4 to 7 bytes of .eh_frame (libc, LuaJIT, nginx and its modules, ld.so,
 * libm, tarantool, neovim: 4.5 to 7.7), so a quarter of its size bounds
 * the rows; the index has a bucket per 256 bytes of code.  A command that
 * record launches has mapped nothing yet: its executable (or a script's
 * interpreter), the dynamic loader and the libraries they need, found as
 * the loader finds them, stand for it, with the same room to grow, and
 * at least 2 MiB of rows.  An object that does not fit is walked with
 * frame pointers, and `record` says so (session.c).
 */
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bpf/sampler.h"
#include "bpf/unwind_maps.h"
#include "lib/grow.h"
#include "record/command_files.h"
#include "record/mapsize.h"
#include "record/procmaps.h"
#include "sampler.skel.h"

#define RING_SECONDS_DIV 1        /* a second of samples */
#define RING_MIN (1u << 20)
#define RING_TYPICAL_SAMPLE lp_event_sample_wire_size(16 * 8, 32 * 8, 16)
#define ROWS_MIN (128u << 10)     /* 1 MiB */
#define ROWS_LAUNCHED (1u << 18)  /* 2 MiB */
#define BUCKETS_MIN (16u << 10)   /* 128 KiB */
#define BUCKETS_LAUNCHED (1u << 15)
#define ROUND (4u << 10)          /* entries: sizes are multiples of this */

/* The distinct files the targets map code from: (inode, path). */
struct seen {
	struct lp_mapping *v;
	size_t n, cap;
};

static int seen_add(struct seen *s, const struct lp_mapping *m)
{
	for (size_t i = 0; i < s->n; i++)
		if (s->v[i].inode == m->inode && !strcmp(s->v[i].path, m->path))
			return 0;
	if (GROW(s->v, s->cap, s->n + 1))
		return -ENOMEM;
	s->v[s->n++] = *m;
	return 1;
}

/* The rows and buckets one object's tables will take, from its section
 * and program headers. */
static void estimate_object(Elf *elf, uint64_t *rows, uint64_t *buckets)
{
	uint64_t eh = 0, debug = 0;
	size_t shstrndx, nph;
	Elf_Scn *scn = NULL;

	if (elf_kind(elf) != ELF_K_ELF || elf_getshdrstrndx(elf, &shstrndx))
		return;
	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		const char *name;

		if (!gelf_getshdr(scn, &sh) || !(name = elf_strptr(elf, shstrndx, sh.sh_name)))
			continue;
		if (!strcmp(name, ".eh_frame"))
			eh += sh.sh_size;
		else if (!strcmp(name, ".debug_frame"))
			debug += sh.sh_size;
	}
	/* The unwinder reads .debug_frame only where .eh_frame is missing. */
	*rows += (eh ? eh : debug) / 4;
	if (elf_getphdrnum(elf, &nph))
		return;
	for (size_t i = 0; i < nph && i < 65536; i++) {
		GElf_Phdr ph;
		uint64_t b;

		if (!gelf_getphdr(elf, (int)i, &ph) || ph.p_type != PT_LOAD ||
		    !(ph.p_flags & PF_X))
			continue;
		b = (ph.p_filesz >> LP_UNWIND_BUCKET_SHIFT) + 1;
		*buckets += b < LP_UNWIND_MAX_OBJ_BUCKETS ? b : LP_UNWIND_MAX_OBJ_BUCKETS;
	}
}

/* Adds the objects pid maps code from, once each. */
static void estimate_process(pid_t pid, struct seen *seen, struct map_plan *p)
{
	struct maps_table t;

	if (procmaps_read(pid, &t))
		return;
	for (uint32_t i = 0; i < t.n; i++) {
		const struct lp_mapping *m = &t.v[i];
		char fname[96];
		Elf *elf;
		int fd;

		if (m->path[0] != '/' || seen_add(seen, m) != 1)
			continue;
		seen->v[seen->n - 1].path = strdup(m->path);
		if (!seen->v[seen->n - 1].path) {
			seen->n--;
			continue;
		}
		snprintf(fname, sizeof(fname), "/proc/%d/map_files/%llx-%llx", (int)pid,
			 (unsigned long long)m->start, (unsigned long long)m->end);
		fd = open(fname, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			fd = open(m->path, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			continue;
		elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
		if (elf) {
			estimate_object(elf, &p->rows_need, &p->buckets_need);
			p->objects++;
			elf_end(elf);
		}
		close(fd);
	}
	maps_table_free(&t);
}

/* Twice n, rounded up to ROUND, between lo and hi. */
static uint32_t with_room(uint64_t n, uint32_t lo, uint32_t hi)
{
	n *= 2;
	n = (n + ROUND - 1) / ROUND * ROUND;
	return n < lo ? lo : n > hi ? hi : (uint32_t)n;
}

/* A command not started yet: what the loader will map (command_files()). */
static void estimate_file(const char *path, int fd, struct Elf *elf, void *arg)
{
	struct map_plan *p = arg;

	(void)path;
	(void)fd;
	if (elf) {
		estimate_object(elf, &p->rows_need, &p->buckets_need);
		p->objects++;
	}
}

static uint32_t ring_size(unsigned int rate_hz, uint32_t max)
{
	long ncpus = sysconf(_SC_NPROCESSORS_CONF);
	uint64_t want = (uint64_t)(ncpus > 0 ? ncpus : 1) * rate_hz *
			(RING_TYPICAL_SAMPLE + 8) / RING_SECONDS_DIV;
	uint32_t size = RING_MIN;

	while (size < want && size < max)
		size <<= 1;
	return size;
}

void map_plan_make(struct map_plan *p, struct sampler *skel, const pid_t *pids,
		   int npids, char **command, unsigned int rate_hz)
{
	uint32_t rows_max = bpf_map__max_entries(skel->maps.unwind_rows);
	uint32_t buckets_max = bpf_map__max_entries(skel->maps.unwind_buckets);
	struct seen seen = { 0 };

	memset(p, 0, sizeof(*p));
	p->ring_bytes = ring_size(rate_hz, bpf_map__max_entries(skel->maps.events));
	p->launched = command != NULL;
	if (elf_version(EV_CURRENT) != EV_NONE) {
		if (command && command[0])
			command_files(command[0], estimate_file, p);
		for (int i = 0; !command && i < npids; i++)
			estimate_process(pids[i], &seen, p);
	}
	for (size_t i = 0; i < seen.n; i++)
		free((char *)seen.v[i].path);
	free(seen.v);
	p->rows = with_room(p->rows_need, command ? ROWS_LAUNCHED : ROWS_MIN, rows_max);
	p->buckets = with_room(p->buckets_need, command ? BUCKETS_LAUNCHED : BUCKETS_MIN,
			       buckets_max);
}

int map_plan_apply(const struct map_plan *p, struct sampler *skel)
{
	return bpf_map__set_max_entries(skel->maps.events, p->ring_bytes) ?:
	       bpf_map__set_max_entries(skel->maps.unwind_rows, p->rows) ?:
	       bpf_map__set_max_entries(skel->maps.unwind_buckets, p->buckets);
}

void map_plan_print(const struct map_plan *p, FILE *f)
{
	fprintf(f, "luaprof record: BPF maps: ring buffer %u KiB; unwind rows %u "
		"(%u KiB) and bucket index %u (%u KiB), for ", p->ring_bytes >> 10,
		p->rows, (uint32_t)(p->rows * sizeof(struct lp_unwind_row) >> 10),
		p->buckets, (uint32_t)(p->buckets * sizeof(struct lp_unwind_bucket) >> 10));
	fprintf(f, "%u objects %s needing about %llu rows and %llu buckets\n",
		p->objects, p->launched ? "the command will load" : "mapped",
		(unsigned long long)p->rows_need, (unsigned long long)p->buckets_need);
}

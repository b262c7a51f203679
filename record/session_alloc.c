/*
 * session_alloc.c - record -e alloc and -e inuse: the probes on each VM's
 * allocator, and at the end, the sampled blocks still alive written again
 * as inuse events (bpf/alloc.bpf.h says what the programs do).
 *
 * The allocator is g->allocf, read from the VM once its G is located
 * (locate_luajit(): at attach, from the VM's memory, or at the first
 * event showing the VM, a CPU sample), so a
 * stripped build and a host's own lua_Alloc are probed alike: where in it
 * comes from its code (luajit_alloc_x86.c, luajit_alloc_arm64.c).  Probes
 * are on the file (one serves every process mapping it, the programs keep
 * the targets' calls), once per file and site.  With inuse, each
 * allocation event is kept here (its stacks are interned ids: a copy is
 * small) until the end, when the map of sampled blocks still alive names
 * the ones to write again.
 */
#include <elf.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <bpf/libbpf.h>
#include <bpf/bpf.h>

#include "lib/grow.h"
#include "record/events.h"
#include "record/luajit_alloc.h"
#include "record/say.h"
#include "record/session_priv.h"
#include "sampler.skel.h"

/* g->allocf: at G+0 since LuaJIT 2.1's string interning moved (2022),
 * at G+16 before (after strhash, strmask, strnum): the first of the two
 * that points into code. */
static const uint32_t allocf_at[] = { 0, 16 };

static const struct lp_mapping *code_at(const struct target *t, uint64_t addr)
{
	const struct lp_mapping *m = maps_table_find(&t->maps, addr);

	return m && (m->prot & LP_PROT_EXEC) && m->path && m->path[0] == '/' ? m : NULL;
}

/* *fn = g->allocf, *at its offset in G; g->allocd follows it. */
static int read_allocf(const struct target *t, uint64_t *fn, uint32_t *at,
		       const struct lp_mapping **m)
{
	for (size_t i = 0; i < sizeof(allocf_at) / sizeof(allocf_at[0]); i++) {
		uint64_t v;

		if (target_read(t->pid, t->lj->G + allocf_at[i], &v, sizeof(v)) == 0 &&
		    (*m = code_at(t, v))) {
			*fn = v;
			*at = allocf_at[i];
			return 0;
		}
	}
	return -ENOENT;
}

/* The allocator's code, as far as its FDE says it goes, from its file
 * (in memory, a probe another process of this file took shows as a
 * breakpoint), and the file's e_machine. */
static int read_code(const struct target *t, const struct lp_mapping *m, uint64_t fn,
		     uint8_t *code, size_t *len, uint16_t *machine)
{
	int64_t bias = (int64_t)(m->start - m->pgoff);
	char path[PATH_MAX + 32];
	uint64_t start, end;
	ssize_t n;
	int fd;

	if (!strcmp(m->path, t->lj->object))
		bias = t->lj->bias;
	*len = LJ_ALLOC_CODE;
	if (lj_cfi_row(m->path, fn - bias, &start, &end) == 0 && start == fn - bias &&
	    end - start < *len)
		*len = end - start;
	if (fn + *len > m->end)
		*len = m->end - fn;
	snprintf(path, sizeof(path), "/proc/%d/root%s", (int)t->pid, m->path);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = pread(fd, code, *len, (off_t)(fn - m->start + m->pgoff));
	/* e_machine, at 18 in either ELF class */
	if (n > 0 && pread(fd, machine, sizeof(*machine), 18) != sizeof(*machine))
		n = 0;
	close(fd);
	if (n < 0)
		return -errno;
	*len = (size_t)n;
	return n ? 0 : -EIO;
}

static struct alloc_probe *probe_slot(struct session *s, const struct stat *st,
				      uint64_t off, int *fresh)
{
	*fresh = 0;
	for (int i = 0; i < s->nalloc_probes; i++)
		if (s->alloc_probes[i].dev == st->st_dev && s->alloc_probes[i].ino == st->st_ino &&
		    s->alloc_probes[i].off == off)
			return &s->alloc_probes[i];
	if (s->nalloc_probes == LUA_PROBES)
		return NULL;
	*fresh = 1;
	s->alloc_probes[s->nalloc_probes] =
		(struct alloc_probe){ .dev = st->st_dev, .ino = st->st_ino, .off = off };
	return &s->alloc_probes[s->nalloc_probes++];
}

/* prog on file as process pid sees it, at file offset off (or opts'
 * function), once per file and key: 0 or -errno. */
static int attach_once(struct session *s, struct bpf_program *prog, pid_t pid,
		       const char *file, uint64_t key, uint64_t off,
		       const struct bpf_uprobe_opts *opts)
{
	char path[PATH_MAX + 32];
	struct alloc_probe *p;
	struct stat st;
	int fresh;

	snprintf(path, sizeof(path), "/proc/%d/root%s", (int)pid, file);
	if (stat(path, &st))
		return -errno;
	p = probe_slot(s, &st, key, &fresh);
	if (!p)
		return -ENOSPC;
	if (!fresh)
		return p->link ? 0 : -EINVAL; /* said when it failed */
	p->link = bpf_program__attach_uprobe_opts(prog, -1, path, off, opts);
	return p->link ? 0 : -errno;
}

/* on_lua_close on the exported lua_close of t's LuaJIT object, told
 * where L->glref and g->allocd are (bpf/alloc.bpf.h): 0 or -errno. */
static int attach_close(struct session *s, struct target *t, uint32_t allocf_off)
{
	const struct lj_layout *lo = &t->lj->layout;
	LIBBPF_OPTS(bpf_uprobe_opts, opts, .func_name = "lua_close");

	opts.bpf_cookie = (uint64_t)lo->l_glref | (uint64_t)(allocf_off + 8) << 16 |
			  (uint64_t)(lo->ref_size == 8) << 32;
	return attach_once(s, s->skel->progs.on_lua_close, t->pid, t->lj->object, UINT64_MAX,
			   0, &opts);
}

/* A probe (or a return probe) at runtime address addr of t: 0 or -errno. */
static int attach_at(struct session *s, struct target *t, uint64_t addr, int ret)
{
	LIBBPF_OPTS(bpf_uprobe_opts, opts, .retprobe = ret);
	const struct lp_mapping *m = code_at(t, addr);
	uint64_t off;

	if (!m)
		return -ENOENT;
	off = addr - m->start + m->pgoff;
	return attach_once(s, ret ? s->skel->progs.on_alloc_return : s->skel->progs.on_alloc,
			   t->pid, m->path, off | (uint64_t)ret << 63, off, &opts);
}

static void say_sites(struct session *s, struct target *t, const struct lj_alloc_sites *a)
{
	if (a->site_stepped)
		say(stderr, s->status_shown, "pid %d: the allocator's first instructions "
		    "are not ones the kernel emulates: its probe single-steps each call "
		    "(about ten times the cost, docs/memory.md)", (int)t->pid);
	if (s->o->verbose)
		fprintf(stderr, "luaprof record: pid %d: allocator probed at 0x%llx, "
			"%d return site%s%s\n", (int)t->pid, (unsigned long long)a->site,
			a->ret_self ? 1 : a->nret, (a->ret_self ? 1 : a->nret) == 1 ? "" : "s",
			a->ret_self ? " (its own)" : "");
}

/* The sites in the allocator's code, by its instruction set. */
static int find_sites(uint16_t machine, const uint8_t *code, size_t len, uint64_t fn,
		      struct lj_alloc_sites *a)
{
	switch (machine) {
	case EM_X86_64: return lj_alloc_sites_x86(code, len, fn, a);
	case EM_AARCH64: return lj_alloc_sites_arm64(code, len, fn, a);
	default: return -ENOEXEC;
	}
}

void probe_alloc(struct session *s, struct target *t)
{
	uint8_t code[LJ_ALLOC_CODE];
	const struct lp_mapping *m;
	struct lj_alloc_sites a;
	int inuse = !!(s->o->kinds & EVENTS_BIT(LP_KIND_INUSE)), err;
	uint32_t allocf_off;
	uint16_t machine;
	uint64_t fn;
	size_t len;

	if (!(s->o->kinds & EVENTS_BIT(LP_KIND_ALLOC)))
		return;
	err = read_allocf(t, &fn, &allocf_off, &m) ?: read_code(t, m, fn, code, &len, &machine) ?:
	      find_sites(machine, code, len, fn, &a) ?: attach_at(s, t, a.site, 0);
	for (int i = 0; !err && inuse && i < (a.ret_self ? 1 : a.nret); i++)
		err = attach_at(s, t, a.ret_self ? fn : a.ret[i], 1);
	if (!err && inuse)
		err = attach_close(s, t, allocf_off);
	if (err) {
		if (!t->alloc_refused_said)
			say(stderr, s->status_shown, "pid %d: cannot probe the LuaJIT "
			    "allocator: %s; no allocations from it", (int)t->pid,
			    err == -ENOENT ? "g->allocf points to no code" : strerror(-err));
		t->alloc_refused_said = 1;
		return;
	}
	say_sites(s, t, &a);
}

void unprobe_alloc(struct session *s)
{
	for (int i = 0; i < s->nalloc_probes; i++)
		bpf_link__destroy(s->alloc_probes[i].link);
	s->nalloc_probes = 0;
}

/* An allocation event written: kept for inuse, by its BPF time. */
void alloc_note_event(struct session *s, const struct lp_event_sample *e,
		      const struct lp_event *ev)
{
	struct alloc_kept *k;

	if (e->kind != LP_KIND_ALLOC || !(s->o->kinds & EVENTS_BIT(LP_KIND_INUSE)))
		return;
	if (GROW(s->alloc_kept, s->capalloc_kept, s->nalloc_kept + 1)) {
		s->inuse_unmatched++; /* its block, if alive, goes unsaid */
		return;
	}
	k = &s->alloc_kept[s->nalloc_kept++];
	k->tid = e->h.tid;
	k->time = e->h.time_ns;
	k->ev = *ev;
}

static int kept_cmp(const void *a, const void *b)
{
	const struct alloc_kept *x = a, *y = b;

	if (x->time != y->time)
		return x->time < y->time ? -1 : 1;
	return x->tid < y->tid ? -1 : x->tid > y->tid;
}

/* At the end, probes detached: each sampled block still alive, its
 * allocation event again as inuse. */
void alloc_emit_inuse(struct session *s)
{
	struct alloc_block_key { uint32_t tgid, pad; uint64_t ptr; } key, next;
	struct alloc_kept want = { 0 }, *k;
	struct { uint64_t time; uint32_t tid, pad; } val;
	uint64_t alive = 0, said = 0;
	int fd, more;

	if (!(s->o->kinds & EVENTS_BIT(LP_KIND_INUSE)))
		return;
	qsort(s->alloc_kept, s->nalloc_kept, sizeof(*s->alloc_kept), kept_cmp);
	fd = bpf_map__fd(s->skel->maps.alloc_live);
	for (more = !bpf_map_get_next_key(fd, NULL, &next); more;
	     more = !bpf_map_get_next_key(fd, &key, &next)) {
		struct lp_record rec = { .type = LP_REC_EVENT };

		key = next;
		if (bpf_map_lookup_elem(fd, &key, &val))
			continue;
		alive++;
		want.time = val.time;
		want.tid = val.tid;
		k = bsearch(&want, s->alloc_kept, s->nalloc_kept, sizeof(want), kept_cmp);
		if (!k) {
			s->inuse_unmatched++; /* its allocation event was lost */
			continue;
		}
		rec.u.event = k->ev;
		rec.u.event.kind = LP_KIND_INUSE;
		emit(s, &rec);
		s->events[LP_KIND_INUSE]++;
		s->samples++;
		said++;
	}
	if (s->o->verbose)
		fprintf(stderr, "luaprof record: inuse: %llu sampled blocks alive at the end, "
			"%llu of %zu allocation events\n", (unsigned long long)alive,
			(unsigned long long)said, s->nalloc_kept);
	free(s->alloc_kept);
	s->alloc_kept = NULL;
	s->nalloc_kept = s->capalloc_kept = 0;
}

/*
 * unwind.c - keeps the BPF sampler's unwind maps (bpf/unwind_maps.h) true for
 * the processes being recorded: one table of rows per object, loaded the
 * first time any target maps that object, and one list of executable
 * mappings per process pointing at those objects.
 *
 * An object is named by what the file is, not by where it was found: the
 * device and inode of the mapped file, as /proc/PID/map_files gives it
 * (the very file mapped, even if deleted, replaced or in another mount
 * namespace), with its size and mtime to catch an inode reused after a
 * file was replaced.  The nginx master and its workers, or any process
 * that maps libc, share one copy of each table.
 *
 * Rows are never freed during a recording: objects outlive the processes
 * that map them far more often than not, and the row array is sized for
 * the whole session (bpf/unwind_maps.h).  An object that does not fit, or has
 * no usable CFI, is walked with frame pointers.
 *
 * A command the recorder launches has its tables built before it runs
 * (unwind_preload(), from the files command_files.c finds).  Otherwise
 * the tables of an object are built when the recorder first sees it
 * mapped: after the exec for the program and its interpreter, and a
 * moment later for each library the dynamic loader maps, and a sample
 * taken in between cannot be walked past its leaf (NO_TABLE or
 * UNMAPPED): 76 ms of cut stacks at the start of every sysbench run.
 * Since an object is known by what the file is, a table built from the
 * file before the exec is the one its mapping uses later.
 *
 * Each object with rows is also named by its file in unwind_files
 * (register_file()), so that a walk meeting its code before the process's
 * list holds the mapping can still use its rows; a frame found so that
 * the recorder then cannot name (the process is gone before its mappings
 * are read again) ends the stack: the recorder keeps no frame it cannot
 * name (session_samples.c).
 *
 * Order of publication: rows and their bucket index (through the mmap()ed
 * arrays), then the object's descriptor, then the process's list; the BPF
 * walker reads them in the opposite order, so it never sees a descriptor
 * without its rows.
 */
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "bpf/sampler.h"
#include "lib/grow.h"
#include "record/clock.h"
#include "record/command_files.h"
#include "record/procmaps.h"
#include "record/unwind.h"
#include "record/vdso.h"
#include "record/unwind_buckets.h"
#include "record/unwind_table.h"
#include "sampler.skel.h"

/* A file's identity; the vDSO has its own (dev and ino 0, vdso 1). */
struct obj_key {
	uint64_t dev, ino;
	int64_t size, mtime_ns;
	int vdso;
};

struct uobj {
	struct obj_key key;
	uint32_t kind; /* LP_UMAP_ROWS or LP_UMAP_FP */
	uint32_t id;   /* unwind_objs index, for LP_UMAP_ROWS */
	/* The table without its rows (in the BPF map now): its segments
	 * turn each mapping's file offset into vaddrs. */
	struct unwind_table segs;
};

/* A process's mapping list as published, kept so that an identical list
 * (an nginx worker's, forked from the master) gets the same number, and
 * shares the walker's cached rows (bpf/unwind_maps.h). */
struct plist {
	pid_t pid;
	uint32_t gen, nmaps;
	struct lp_unwind_map *maps;
};

struct unwinder {
	struct sampler *skel;
	int rows_fd, objs_fd, procs_fd, files_fd;
	struct lp_unwind_row *rows; /* mmap of unwind_rows */
	size_t rows_map_bytes;
	uint32_t rows_max, nrows;
	struct lp_unwind_bucket *buckets; /* mmap of unwind_buckets */
	size_t buckets_map_bytes;
	uint32_t buckets_max, nbuckets;
	uint32_t objs_max, nobjs; /* unwind_objs ids handed out */
	uint32_t gen; /* the last number a mapping list got */
	struct plist *lists;      /* each process's list as published */
	size_t nlists, caplists;
	struct uobj *objs;        /* every object met, loaded or not */
	size_t nuobj, capuobj;
	struct lp_unwind_proc *proc; /* scratch for one update */
	struct unwind_stats st;
};

int unwind_init(struct unwinder **out, struct sampler *skel)
{
	struct unwinder *u;
	long page = sysconf(_SC_PAGESIZE);
	int err;

	*out = NULL;
	u = calloc(1, sizeof(*u));
	if (!u)
		return -ENOMEM;
	u->proc = calloc(1, sizeof(*u->proc));
	if (!u->proc) {
		err = -ENOMEM;
		goto cleanup;
	}
	u->skel = skel;
	u->rows_fd = bpf_map__fd(skel->maps.unwind_rows);
	u->objs_fd = bpf_map__fd(skel->maps.unwind_objs);
	u->procs_fd = bpf_map__fd(skel->maps.unwind_procs);
	u->files_fd = bpf_map__fd(skel->maps.unwind_files);
	u->rows_max = bpf_map__max_entries(skel->maps.unwind_rows);
	u->objs_max = bpf_map__max_entries(skel->maps.unwind_objs);
	u->rows_map_bytes = ((size_t)u->rows_max * sizeof(*u->rows) + page - 1) &
			    ~(size_t)(page - 1);
	u->rows = mmap(NULL, u->rows_map_bytes, PROT_READ | PROT_WRITE, MAP_SHARED,
		       u->rows_fd, 0);
	if (u->rows == MAP_FAILED) {
		u->rows = NULL;
		err = -errno;
		goto cleanup;
	}
	u->buckets_max = bpf_map__max_entries(skel->maps.unwind_buckets);
	u->buckets_map_bytes = ((size_t)u->buckets_max * sizeof(*u->buckets) + page - 1) &
			       ~(size_t)(page - 1);
	u->buckets = mmap(NULL, u->buckets_map_bytes, PROT_READ | PROT_WRITE, MAP_SHARED,
			  bpf_map__fd(skel->maps.unwind_buckets), 0);
	if (u->buckets == MAP_FAILED) {
		u->buckets = NULL;
		err = -errno;
		goto cleanup;
	}
	/* From now on a process without a mapping list gets its leaf,
	 * not a frame-pointer walk (bpf/unwind_native.bpf.h). */
	skel->bss->unwind_tables_on = 1;
	u->st.rows_max = u->rows_max;
	u->st.map_bytes = u->rows_map_bytes + u->buckets_map_bytes +
			  (uint64_t)u->objs_max * sizeof(struct lp_unwind_obj) +
			  (uint64_t)bpf_map__max_entries(skel->maps.unwind_procs) *
				  (sizeof(struct lp_unwind_proc) + sizeof(uint32_t)) +
			  (uint64_t)bpf_map__max_entries(skel->maps.unwind_files) *
				  (sizeof(struct lp_unwind_file) + sizeof(struct lp_file_id));
	*out = u;
	return 0;
cleanup:
	unwind_free(u);
	return err;
}

static int same_key(const struct obj_key *a, const struct obj_key *b)
{
	return a->dev == b->dev && a->ino == b->ino && a->size == b->size &&
	       a->mtime_ns == b->mtime_ns && a->vdso == b->vdso;
}

/* Copies the table's rows into the BPF maps; the object gets an id. */
static void load_rows(struct unwinder *u, struct uobj *o,
		      const struct unwind_table *t)
{
	struct unwind_buckets b;
	struct lp_unwind_obj d;

	if (!t->nrows)
		return;
	if (u->nobjs >= u->objs_max || t->nrows > u->rows_max - u->nrows) {
		u->st.objects_full++;
		return;
	}
	memcpy(u->rows + u->nrows, t->rows, (size_t)t->nrows * sizeof(*t->rows));
	d.first = u->nrows;
	d.count = t->nrows;
	/* The bucket index if it fits; else the walker searches all rows. */
	unwind_buckets_plan(t->rows, t->nrows, &b);
	d.base = b.base;
	d.shift = b.shift;
	d.bucket = u->nbuckets;
	d.nbuckets = 0;
	if (b.nbuckets <= u->buckets_max - u->nbuckets) {
		unwind_buckets_fill(t->rows, t->nrows, &b, u->buckets + u->nbuckets);
		d.nbuckets = b.nbuckets;
	} else {
		u->st.objects_unindexed++;
	}
	if (bpf_map_update_elem(u->objs_fd, &u->nobjs, &d, BPF_ANY))
		return;
	o->kind = LP_UMAP_ROWS;
	o->id = u->nobjs++;
	u->nrows += t->nrows;
	u->nbuckets += d.nbuckets;
	u->st.rows = u->nrows;
}

/* Names object o by its file in unwind_files (bpf/unwind_maps.h), with
 * its first executable segment, for walks that meet its code before
 * its mapping is in their process's list. */
static void register_file(struct unwinder *u, const struct uobj *o,
			  const struct obj_key *key)
{
	struct lp_file_id k = {
		.dev = lp_kernel_dev(major(key->dev), minor(key->dev)),
		.ino = key->ino,
		.size = key->size,
	};
	struct lp_unwind_file f = { .obj = o->id };

	for (uint32_t i = 0; i < o->segs.nsegs; i++) {
		const struct unwind_seg *g = &o->segs.segs[i];

		if (!(g->flags & PF_X))
			continue;
		f.off_lo = g->offset & ~((uint64_t)sysconf(_SC_PAGESIZE) - 1);
		f.off_hi = g->offset + g->filesz;
		f.delta = (int64_t)(g->vaddr - g->offset);
		f.vaddr = g->vaddr;
		bpf_map_update_elem(u->files_fd, &k, &f, BPF_ANY);
		return;
	}
}

/* The vDSO is the same image in every 64-bit process: read ours. */
static int build_vdso(struct unwind_table *t)
{
	void *copy;
	size_t size;
	int err = vdso_image(&copy, &size);

	if (!err)
		err = unwind_table_build_vdso(copy, size, t);
	free(copy);
	return err;
}

/* The object behind a key, built and loaded the first time it is met.
 * fd is the open file (-1 for the vDSO). */
static struct uobj *get_obj(struct unwinder *u, const struct obj_key *key,
			    int fd)
{
	struct unwind_table t;
	struct uobj *o;
	uint64_t t0;

	for (size_t i = 0; i < u->nuobj; i++)
		if (same_key(&u->objs[i].key, key))
			return &u->objs[i];
	if (GROW(u->objs, u->capuobj, u->nuobj + 1))
		return NULL;
	o = &u->objs[u->nuobj++];
	memset(o, 0, sizeof(*o));
	o->key = *key;
	o->kind = LP_UMAP_FP;
	t0 = mono_ns();
	if (!(key->vdso ? build_vdso(&t) : unwind_table_build_fd(fd, &t))) {
		u->st.rows_deref += t.deref_rows;
		u->st.rows_unsupported += t.unsupported;
		u->st.exprs_unsupported += t.unsupported_exprs;
		load_rows(u, o, &t);
		free(t.rows);
		t.rows = NULL;
		t.nrows = 0;
		o->segs = t;
	}
	u->st.build_ns += mono_ns() - t0;
	if (o->kind == LP_UMAP_ROWS && !key->vdso)
		register_file(u, o, key);
	if (o->kind == LP_UMAP_ROWS)
		u->st.objects++;
	else
		u->st.objects_fp++;
	return o;
}

static void key_of_file(const struct stat *st, struct obj_key *key)
{
	key->dev = st->st_dev;
	key->ino = st->st_ino;
	key->size = st->st_size;
	key->mtime_ns = (int64_t)st->st_mtim.tv_sec * 1000000000 + st->st_mtim.tv_nsec;
}

/* Builds and loads the tables of the open file fd, as a mapping of it
 * would; 0 or -errno. */
static int preload_file(struct unwinder *u, int fd)
{
	struct obj_key key = { 0 };
	struct stat st;

	if (!u || fstat(fd, &st))
		return u ? -errno : 0;
	key_of_file(&st, &key);
	return get_obj(u, &key, fd) ? 0 : -ENOMEM;
}

struct preload_also {
	struct unwinder *u;
	void (*also)(const char *path, void *arg);
	void *arg;
};

static void preload_one(const char *path, int fd, struct Elf *elf, void *arg)
{
	struct preload_also *a = arg;

	(void)elf;
	if (a->u)
		preload_file(a->u, fd);
	if (a->also)
		a->also(path, a->arg);
}

int unwind_preload(struct unwinder *u, const char *cmd,
		   void (*also)(const char *path, void *arg), void *arg)
{
	struct preload_also a = { .u = u, .also = also, .arg = arg };

	return u || also ? command_files(cmd, preload_one, &a) : 0;
}

/* Fills one BPF mapping entry; 0, or 1 to leave the mapping out. */
static int resolve_mapping(struct unwinder *u, pid_t pid,
			   const struct lp_mapping *m, struct lp_unwind_map *out)
{
	struct obj_key key = { 0 };
	struct uobj *o;
	struct stat st;
	int64_t delta;
	int fd = -1;

	out->start = m->start;
	out->end = m->end;
	out->bias = 0;
	out->obj = 0;
	if (vdso_mapping(m->path)) {
		key.vdso = 1;
	} else if (m->path[0] != '/') {
		/* Anonymous code ("", [anon:...], [heap]): a JIT's; the
		 * walk stops there.  [vsyscall] lies above user space. */
		if (!strcmp(m->path, "[vsyscall]"))
			return 1;
		out->kind = strcmp(m->path, "[uprobes]") ? LP_UMAP_JIT : LP_UMAP_URETPROBE;
		return 0;
	} else {
		fd = procmaps_open(pid, m);
		if (fd < 0 || fstat(fd, &st)) {
			if (fd >= 0)
				close(fd);
			out->kind = LP_UMAP_FP;
			return 0;
		}
		key_of_file(&st, &key);
	}
	o = get_obj(u, &key, fd);
	if (fd >= 0)
		close(fd);
	if (!o)
		return -ENOMEM;
	out->kind = o->kind;
	out->obj = o->id;
	if (o->kind == LP_UMAP_ROWS) {
		/* vaddr = pc - start + pgoff + delta, so bias = start - pgoff
		 * - delta.  The vDSO maps from offset 0 of its image. */
		if (unwind_table_vaddr_delta(&o->segs, key.vdso ? 0 : m->pgoff, &delta))
			out->kind = LP_UMAP_FP;
		else
			out->bias = m->start - (key.vdso ? 0 : m->pgoff) - (uint64_t)delta;
	}
	return 0;
}

static struct plist *find_list(struct unwinder *u, pid_t pid)
{
	for (size_t i = 0; i < u->nlists; i++)
		if (u->lists[i].pid == pid)
			return &u->lists[i];
	return NULL;
}

/*
 * The number of p, pid's new list: the number of an identical list
 * another process has, else a new one; kept as pid's.  Only equal lists
 * share a number, so the walker's cached rows stay true: a list's
 * contents, an object's rows once published, decide them.  Out of
 * memory, the list gets a new number and is not kept.
 */
static uint32_t list_gen(struct unwinder *u, pid_t pid, const struct lp_unwind_proc *p)
{
	size_t bytes = (size_t)p->nmaps * sizeof(p->maps[0]);
	struct plist *own = find_list(u, pid);
	struct lp_unwind_map *copy;
	uint32_t gen = 0;

	for (size_t i = 0; i < u->nlists && !gen; i++)
		if (u->lists[i].nmaps == p->nmaps && !memcmp(u->lists[i].maps, p->maps, bytes))
			gen = u->lists[i].gen;
	if (!gen)
		gen = ++u->gen;
	if (!own && GROW(u->lists, u->caplists, u->nlists + 1))
		return gen;
	copy = malloc(bytes ? bytes : 1);
	if (!copy)
		return gen;
	memcpy(copy, p->maps, bytes);
	if (!own) {
		own = &u->lists[u->nlists++];
		own->pid = pid;
		own->maps = NULL;
	}
	free(own->maps);
	own->maps = copy;
	own->nmaps = p->nmaps;
	own->gen = gen;
	return gen;
}

int unwind_add_process(struct unwinder *u, pid_t pid,
		       const struct maps_table *maps)
{
	struct lp_unwind_proc *p;
	uint32_t key = (uint32_t)pid, n = 0;
	int err;

	if (!u)
		return 0;
	p = u->proc;
	/* maps->v is sorted by start, as the walker's search needs. */
	for (uint32_t i = 0; i < maps->n; i++) {
		if (n == LP_UNWIND_MAX_MAPS) {
			u->st.maps_dropped += maps->n - i;
			break;
		}
		err = resolve_mapping(u, pid, &maps->v[i], &p->maps[n]);
		if (err < 0)
			return err;
		if (!err)
			n++;
	}
	p->nmaps = n;
	p->gen = list_gen(u, pid, p);
	/* Only the entries in use are meaningful; the rest are stale. */
	if (bpf_map_update_elem(u->procs_fd, &key, p, BPF_ANY))
		return -errno;
	return 0;
}

int unwind_update_process(struct unwinder *u, pid_t pid,
			  const struct maps_table *maps)
{
	/* The list is republished whole: one map update is atomic for the
	 * walker, and objects already loaded cost a lookup. */
	return unwind_add_process(u, pid, maps);
}

int unwind_function_start(const struct unwinder *u, pid_t pid, uint64_t addr,
			  uint64_t *start)
{
	const struct plist *l = NULL;
	const struct unwind_fn *fn;

	for (size_t i = 0; u && i < u->nlists && !l; i++)
		if (u->lists[i].pid == pid)
			l = &u->lists[i];
	for (uint32_t i = 0; l && i < l->nmaps; i++) {
		const struct lp_unwind_map *m = &l->maps[i];

		if (addr < m->start || addr >= m->end || m->kind != LP_UMAP_ROWS)
			continue;
		for (size_t j = 0; j < u->nuobj; j++) {
			if (u->objs[j].kind != LP_UMAP_ROWS || u->objs[j].id != m->obj)
				continue;
			fn = unwind_table_function(&u->objs[j].segs, addr - m->bias);
			if (!fn)
				return -ENOENT;
			*start = fn->lo + m->bias;
			return 0;
		}
	}
	return -ENOENT;
}

void unwind_remove_process(struct unwinder *u, pid_t pid)
{
	uint32_t key = (uint32_t)pid;
	struct plist *l;

	if (!u)
		return;
	bpf_map_delete_elem(u->procs_fd, &key);
	if ((l = find_list(u, pid))) {
		free(l->maps);
		*l = u->lists[--u->nlists];
	}
}

/* The walker's per-CPU counts (bpf/unwind_maps.h), summed over the CPUs. */
static void unwind_cache_stats(const struct unwinder *u, struct unwind_stats *st)
{
	int ncpus = libbpf_num_possible_cpus();
	struct lp_unwind_row_cache *v;
	uint32_t zero = 0;

	if (ncpus <= 0 || !(v = calloc(ncpus, sizeof(*v))))
		return;
	if (!bpf_map_lookup_elem(bpf_map__fd(u->skel->maps.unwind_row_caches), &zero, v))
		for (int c = 0; c < ncpus; c++) {
			st->cache_hits += v[c].hits;
			st->cache_misses += v[c].misses;
			st->memo_hits += v[c].memo_hits;
			st->frames += v[c].frames;
			for (int i = 0; i < LP_USTOP_MAX; i++)
				st->stops[i] += v[c].stops[i];
		}
	free(v);
}

void unwind_stats(const struct unwinder *u, struct unwind_stats *st)
{
	uint32_t key, next, n = 0;
	const void *prev = NULL;

	memset(st, 0, sizeof(*st));
	if (!u)
		return;
	*st = u->st;
	while (!bpf_map_get_next_key(u->procs_fd, prev, &next)) {
		n++;
		key = next;
		prev = &key;
	}
	st->processes = n;
	st->lists = u->gen;
	unwind_cache_stats(u, st);
}

const char *unwind_stop_name(uint32_t stop)
{
	static const char *const names[LP_USTOP_MAX] = {
		[LP_USTOP_FALLBACK] = "fp-fallback", [LP_USTOP_END] = "complete",
		[LP_USTOP_DEPTH] = "depth", [LP_USTOP_UNMAPPED] = "unmapped",
		[LP_USTOP_JIT] = "jit", [LP_USTOP_NO_ROW] = "no-cfi",
		[LP_USTOP_UNSUPPORTED] = "unsupported", [LP_USTOP_READ] = "read",
		[LP_USTOP_BAD_FRAME] = "bad-frame", [LP_USTOP_NO_REGS] = "no-regs",
		[LP_USTOP_NO_TABLE] = "no-table",
	};

	return stop < LP_USTOP_MAX && names[stop] ? names[stop] : "unknown";
}

void unwind_print_stats(const struct unwinder *u, FILE *f)
{
	struct unwind_stats st;
	uint64_t walks = 0;

	if (!u)
		return;
	unwind_stats(u, &st);
	for (int i = 1; i < LP_USTOP_MAX; i++)
		walks += st.stops[i];
	fprintf(f, "luaprof record: native unwind: %u objects (%llu rows, %.1f KiB, "
		"built in %.1f ms), %u with frame pointers%s; %.1f MiB of maps\n",
		st.objects, (unsigned long long)st.rows, st.rows * 8 / 1024.0,
		st.build_ns / 1e6, st.objects_fp, st.objects_full ? " (tables full)" : "",
		st.map_bytes / 1048576.0);
	if (st.rows_deref || st.rows_unsupported)
		fprintf(f, "luaprof record: native unwind: %llu rows of realigned frames "
			"(DWARF expressions); %llu rows the walker cannot run (%llu "
			"expressions of no known form)\n",
			(unsigned long long)st.rows_deref,
			(unsigned long long)st.rows_unsupported,
			(unsigned long long)st.exprs_unsupported);
	if (st.objects_unindexed)
		fprintf(f, "luaprof record: native unwind: %u objects searched without "
			"a bucket index (index full): slower walks\n", st.objects_unindexed);
	fprintf(f, "luaprof record: native unwind: %llu walks, %.1f frames each, "
		"%.1f%% of rows from the cache (%.1f%% from the last walk's frames; "
		"%u mapping lists); stops:",
		(unsigned long long)walks, walks ? (double)st.frames / walks : 0.0,
		st.cache_hits ? 100.0 * st.cache_hits / (st.cache_hits + st.cache_misses) : 0.0,
		st.cache_hits ? 100.0 * st.memo_hits / (st.cache_hits + st.cache_misses) : 0.0,
		st.lists);
	for (int i = 1; i < LP_USTOP_MAX; i++)
		if (st.stops[i])
			fprintf(f, " %s %llu", unwind_stop_name(i), (unsigned long long)st.stops[i]);
	fprintf(f, "\n");
}

void unwind_free(struct unwinder *u)
{
	if (!u)
		return;
	if (u->rows)
		munmap(u->rows, u->rows_map_bytes);
	if (u->buckets)
		munmap(u->buckets, u->buckets_map_bytes);
	for (size_t i = 0; i < u->nuobj; i++)
		unwind_table_free(&u->objs[i].segs);
	free(u->objs);
	for (size_t i = 0; i < u->nlists; i++)
		free(u->lists[i].maps);
	free(u->lists);
	free(u->proc);
	free(u);
}

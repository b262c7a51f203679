/*
 * heap.h - `luaprof heap`: a snapshot of a running LuaJIT VM's heap, read
 * from outside the process.  Three parts, one file each:
 *
 *   heap_image.c  a copy of the target's private writable memory, taken
 *                 while every thread is stopped (ptrace), so that the walk
 *                 reads one consistent instant and runs after the target
 *                 is resumed; every read from it is bounded and checked
 *   heap_layout.c the offsets the walk reads a build's VM with, and the
 *                 VM in the copy: its global_State and vmstate
 *   heap_walk.c   every GC object in the copy (the GC's object list and
 *                 string table) with its size as LuaJIT accounts it, and a
 *                 breadth-first walk from the VM's roots that gives each
 *                 object the first path that reaches it (_G;cache;users;[*])
 *   heap_stop.c   every thread of the target stopped, and let go
 *   heap.c        the command: options, stopping and resuming the target,
 *                 the trace (heap events on paths of name frames)
 *
 * Everything read from the target is untrusted: a pointer that leads
 * nowhere, a type tag that is wrong, a length past a bound ends that
 * branch and is counted, never followed.
 */
#ifndef LUAPROF_RECORD_HEAP_H
#define LUAPROF_RECORD_HEAP_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "bpf/luajit_layout.h"

/* ---- heap_image.c ------------------------------------------------------ */
struct heap_region {
	uint64_t start, end;
	uint8_t *data;
};

struct heap_image {
	struct heap_region *r; /* sorted by start, disjoint */
	size_t n, cap;
	uint64_t bytes;         /* copied */
	uint64_t skipped_bytes; /* left out past the bound */
	uint64_t failed_bytes;  /* could not be read: zeros in the copy */
};

/* Copies pid's private writable anonymous memory (and [heap]), at most
 * max_bytes of it: 0 or -errno. */
int heap_image_copy(struct heap_image *im, pid_t pid, uint64_t max_bytes);
/* Adds a region holding a copy of len bytes of data at start (the unit
 * tests build synthetic memory this way): 0 or -ENOMEM / -EINVAL. */
int heap_image_add(struct heap_image *im, uint64_t start, const void *data, size_t len);
/* len bytes at addr, all in one region, or NULL. */
const uint8_t *heap_ptr(const struct heap_image *im, uint64_t addr, size_t len);
void heap_image_free(struct heap_image *im);

/* ---- heap_layout.c ----------------------------------------------------- */
/* The offsets the walk needs, derived from a build's struct lj_layout (the
 * recorder's: from DWARF, from code, or built in) and the GC object
 * structs, which are the same in every LuaJIT 2.1 of one reference width
 * (tests/unit/test_heap.c holds them to each build's DWARF). */
struct heap_layout {
	unsigned gc64, ref;      /* ref: the size of a GCRef, 8 or 4 */
	uint32_t gg_g, l_glref;  /* from the build's layout */
	/* global_State */
	uint32_t g_total, g_state, g_root, g_strtab, g_strmask, g_vmstate;
	uint32_t g_mainth, g_registry, g_gcroot, ngcroot;
	/* lua_State */
	uint32_t l_stack, l_top, l_stacksize, l_env, l_size;
	/* GCtab, Node */
	uint32_t t_colo, t_array, t_meta, t_node, t_asize, t_hmask, t_size, node_size;
	/* GCudata */
	uint32_t u_env, u_len, u_meta, u_size;
	/* GCfunc: ffid, nupvalues, env, pc; Lua upvalue refs; C upvalue TValues */
	uint32_t f_ffid, f_nupv, f_env, f_pc, f_uvptr, f_cupv;
	/* GCupval */
	uint32_t uv_v, uv_size;
	/* GCstr */
	uint32_t s_len, s_size;
	/* GCproto */
	uint32_t pt_size, pt_sizept, pt_k, pt_sizekgc, pt_chunkname, pt_firstline;
	uint32_t pt_uvinfo, pt_sizeuv;
	uint32_t cd_size; /* GCcdata's header */
	uint32_t g_ctype_state, ct_size; /* the FFI's CTState, sizeof(CType) */
	/* compiled traces: J (g2j 0: unknown) and GCtrace's counts */
	uint32_t g2j, j_trace, j_sizetrace;
	uint32_t tr_size, tr_nins, tr_nk, tr_nsnap, tr_nsnapmap, tr_startpt, sn_size;
	int tr_snapmap32; /* nsnapmap is 32 bits wide (16 in older ones) */
};

/* Little-endian fields of the copy (x86_64's and arm64's), a GCRef of the
 * layout's width, and the type byte of the GC object at o (-1: not in the
 * copy). */
static inline uint32_t le32(const uint8_t *p)
{
	uint32_t v;

	__builtin_memcpy(&v, p, 4);
	return v;
}

static inline uint64_t le64(const uint8_t *p)
{
	uint64_t v;

	__builtin_memcpy(&v, p, 8);
	return v;
}

static inline uint64_t get_ref(const struct heap_layout *hl, const uint8_t *p)
{
	return hl->ref == 8 ? le64(p) : le32(p);
}

static inline int gct_of(const struct heap_image *im, const struct heap_layout *hl, uint64_t o)
{
	const uint8_t *h = o ? heap_ptr(im, o, hl->ref + 2) : NULL;

	return h ? h[hl->ref + 1] : -1;
}

/* The walk's layout for a build whose recorder layout is lo: 0, or
 * -EINVAL for one it cannot place (a field out of its range). */
int heap_layout_from(const struct lj_layout *lo, struct heap_layout *hl);

/* Finds global_State in the image: a lua_State whose glref points at the
 * G right after it in GG_State, whose mainthref points back, with a
 * thread's type.  0 with *L and *G (the which-th such by address, from
 * 1; *nvm how many), or -ENOENT (none, or fewer than which). */
int heap_find_vm(const struct heap_image *im, const struct heap_layout *hl, unsigned which,
		 uint64_t *L, uint64_t *G, unsigned *nvm);
/* The G of the one VM in pid's memory, found by heap_find_vm() in a copy
 * of at most HEAP_FIND_G_BYTES of it: what the recorder does at attach,
 * before any sample.  0 with *G; -ENOENT if there is none; -EEXIST for
 * more than one (which thread runs which is the samples' to say). */
#define HEAP_FIND_G_BYTES (32u << 20)
int heap_find_G(pid_t pid, const struct lj_layout *lo, uint64_t *G);
/* Whether G heads a VM in pid's memory as heap_find_vm() asks, read from
 * the process (one read, of the main thread and G up to mainthref): a G
 * known in another process of the same image, as a fork's (nginx's
 * workers run the VM their master made). */
int heap_is_G(pid_t pid, const struct lj_layout *lo, uint64_t G);
/* g->vmstate in the image: ~LJ_VMST_* or a trace number. */
int heap_vmstate(const struct heap_image *im, const struct heap_layout *hl, uint64_t G,
		 int32_t *vmstate);

/* ---- heap_walk.c ------------------------------------------------------- */
/* LuaJIT's GC object types, as a header's gct byte has them (~LJ_T*). */
enum heap_type {
	HT_STR = 4, HT_UPVAL = 5, HT_THREAD = 6, HT_PROTO = 7, HT_FUNC = 8,
	HT_TRACE = 9, HT_CDATA = 10, HT_TAB = 11, HT_UDATA = 12, HT_MAX = 13,
};

/* One line of the snapshot: the objects first reached along one path. */
struct heap_entry {
	uint32_t node;  /* the path's last step (struct heap_node) */
	uint32_t leaf;  /* the name of the objects' type, a name id */
	uint64_t bytes, count;
};

/* A path step: its name and the step before it (UINT32_MAX: a root). */
struct heap_node {
	uint32_t parent, name;
	uint32_t depth;
};

struct heap_stats {
	uint64_t objects, bytes;       /* every object found */
	uint64_t reached, reached_bytes;
	uint64_t unreachable, unreachable_bytes;
	uint64_t by_type[HT_MAX], bytes_by_type[HT_MAX];
	uint64_t gc_total;             /* g->gc.total, LuaJIT's own count */
	uint32_t gc_state;             /* g->gc.state */
	uint64_t bad_refs;             /* references that led nowhere */
	uint64_t off_list;             /* objects reached but on no GC list */
	uint64_t cut_chains;           /* GC lists cut short by a bad link */
	uint64_t deeper;               /* objects past --depth */
	uint64_t cdata;                /* cdata whose payload size was unknown */
};

struct heap_snapshot {
	char **names;            /* by name id - 1 */
	uint32_t nnames;
	struct heap_node *nodes;
	uint32_t nnodes;
	struct heap_entry *entries;
	size_t nentries;
	struct heap_stats st;
};

/* Walks the VM at G (main thread L) in im: every object, its size, the
 * first path that reaches it, at most depth steps deep.  0 with *out
 * filled (heap_snapshot_free() it), or -ENOMEM. */
int heap_walk(const struct heap_image *im, const struct heap_layout *hl, uint64_t L,
	      uint64_t G, uint32_t depth, struct heap_snapshot *out);
void heap_snapshot_free(struct heap_snapshot *s);

#endif

/*
 * test_heap.c - the heap walk (record/heap_walk.c) on synthetic memory: a
 * GC64 luajit2 VM laid out by hand in a heap_image, with _G holding a
 * table under "cache" whose array holds a string and a reference to
 * nowhere, a registry, the main thread, and a string no path reaches.
 * Every object's bytes go to the first path that reaches it, the bad
 * reference is counted and not followed, the garbage is [unreachable],
 * a key's separators and control bytes do not reach a path, --depth cuts
 * a path with [deeper], and no read crosses the copy's end.  The check of
 * a G read from a process (fake target memory), as the recorder makes it
 * at attach.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "record/heap.h"
#include "tests/unit/fake_target.h"
#include "record/luajit_layouts.h"
#include "tests/unit/unit.h"

#define BASE 0x10000ull
#define SIZE 0x4000u

struct mem {
	uint8_t b[SIZE];
};

static void put8(struct mem *m, uint64_t a, uint8_t v) { m->b[a - BASE] = v; }
static void put32(struct mem *m, uint64_t a, uint32_t v) { memcpy(&m->b[a - BASE], &v, 4); }
static void put64(struct mem *m, uint64_t a, uint64_t v) { memcpy(&m->b[a - BASE], &v, 8); }

/* A GC64 TValue holding GC object o of type t (~LJ_T* as gct has it). */
static void put_tv(struct mem *m, uint64_t a, uint64_t o, int t)
{
	put64(m, a, ((uint64_t)(uint32_t)~t << 47) | o);
}

static void header(struct mem *m, uint64_t o, uint64_t next, int type)
{
	put64(m, o, next);
	put8(m, o + 9, (uint8_t)type);
}

static void string(struct mem *m, const struct heap_layout *hl, uint64_t o, uint64_t next,
		   const char *s)
{
	header(m, o, next, HT_STR);
	put32(m, o + hl->s_len, (uint32_t)strlen(s));
	memcpy(&m->b[o + hl->s_size - BASE], s, strlen(s) + 1);
}

enum {
	L_ = BASE, STACK = BASE + 0x1800, TG = BASE + 0x2000, TCACHE = BASE + 0x2100,
	TREG = BASE + 0x2200, NODES = BASE + 0x2300, ARRAY = BASE + 0x2400,
	SCACHE = BASE + 0x2500, SHELLO = BASE + 0x2600, SDEAD = BASE + 0x2700,
	STRTAB = BASE + 0x2800, SKEY = BASE + 0x2900, SVAL = BASE + 0x2a00,
};

static void build(struct mem *m, const struct heap_layout *hl, uint64_t G)
{
	memset(m, 0, sizeof(*m));
	/* The main thread: two stack slots, nil; _G as its env. */
	header(m, L_, 0, HT_THREAD);
	put64(m, L_ + hl->l_glref, G);
	put64(m, L_ + hl->l_stack, STACK);
	put64(m, L_ + hl->l_top, STACK + 16);
	put32(m, L_ + hl->l_stacksize, 2);
	put64(m, STACK, ~0ull);
	put64(m, STACK + 8, ~0ull);
	put64(m, L_ + hl->l_env, TG);
	put64(m, G + hl->g_mainth, L_);
	put32(m, G + hl->g_vmstate, ~1u);
	put64(m, G + hl->g_root, TREG); /* TREG -> TCACHE -> TG -> L */
	put_tv(m, G + hl->g_registry, TREG, HT_TAB);
	put64(m, G + hl->g_strtab, STRTAB);
	put32(m, G + hl->g_strmask, 0);
	put64(m, STRTAB, SCACHE | 1); /* a chain head's flag bit */
	/* _G = { cache = TCACHE }: two nodes, the second empty. */
	header(m, TG, L_, HT_TAB);
	put64(m, TG + hl->t_node, NODES);
	put32(m, TG + hl->t_hmask, 1);
	put_tv(m, NODES, TCACHE, HT_TAB);
	put_tv(m, NODES + 8, SCACHE, HT_STR);
	put_tv(m, NODES + 24, SVAL, HT_STR); /* ["x;\033"] = "v" */
	put_tv(m, NODES + 32, SKEY, HT_STR);
	/* TCACHE = { "hello world", <a string nowhere> } */
	header(m, TCACHE, TG, HT_TAB);
	put64(m, TCACHE + hl->t_array, ARRAY);
	put32(m, TCACHE + hl->t_asize, 2);
	put_tv(m, ARRAY, SHELLO, HT_STR);
	put_tv(m, ARRAY + 8, 0x7f0000000000ull, HT_STR);
	header(m, TREG, TCACHE, HT_TAB);
	string(m, hl, SCACHE, SHELLO, "cache");
	string(m, hl, SHELLO, SDEAD, "hello world");
	string(m, hl, SDEAD, SKEY, "garbage");
	string(m, hl, SKEY, SVAL, "x;\033");
	string(m, hl, SVAL, 0, "v");
}

/* The entry whose path is `path` (steps ';'-joined, then the leaf). */
static const struct heap_entry *entry(const struct heap_snapshot *s, const char *path)
{
	for (size_t i = 0; i < s->nentries; i++) {
		char buf[256] = "", tmp[256];
		const struct heap_entry *e = &s->entries[i];

		for (uint32_t n = e->node; n != UINT32_MAX; n = s->nodes[n].parent) {
			snprintf(tmp, sizeof(tmp), "%s%s%s", s->names[s->nodes[n].name - 1],
				 buf[0] ? ";" : "", buf);
			memcpy(buf, tmp, sizeof(buf));
		}
		snprintf(tmp, sizeof(tmp), "%s;%s", buf, s->names[e->leaf - 1]);
		if (!strcmp(tmp, path))
			return e;
	}
	return NULL;
}

static int has(const struct heap_snapshot *s, const char *path, uint64_t bytes)
{
	const struct heap_entry *e = entry(s, path);

	return e && e->bytes == bytes && e->count == 1;
}

TEST(heap_walk_synthetic_gc64)
{
	const struct lj_build_desc *b = lj_known_build(LJ_LAYOUT_GC64 | LJ_LAYOUT_OPENRESTY);
	struct heap_image im = { 0 };
	struct heap_snapshot s;
	struct heap_layout hl;
	struct mem *m = malloc(sizeof(*m));
	uint64_t L = 0, G = 0;
	unsigned nvm = 0;
	int32_t vmstate = 0;

	CHECK(b && m && heap_layout_from(&b->layout, &hl) == 0);
	CHECK(hl.gc64 && hl.ref == 8 && hl.t_size == 64 && hl.s_size == 24);
	build(m, &hl, L_ + hl.gg_g);
	CHECK(heap_image_add(&im, BASE, m->b, SIZE) == 0);
	free(m);
	CHECK(heap_find_vm(&im, &hl, 1, &L, &G, &nvm) == 0 && L == L_ && G == L_ + hl.gg_g &&
	      nvm == 1);
	CHECK(heap_find_vm(&im, &hl, 2, &L, &G, &nvm) == -ENOENT && nvm == 1);
	CHECK(heap_vmstate(&im, &hl, G, &vmstate) == 0 && vmstate == ~1);
	CHECK(heap_walk(&im, &hl, L, G, 16, &s) == 0);
	CHECK(s.st.objects == 9 && s.st.unreachable == 1 && s.st.bad_refs == 1);
	/* A key's ';' and control bytes are '?' in its step. */
	CHECK(entry(&s, "_G;x??;[string]") && entry(&s, "_G;x??;[string]")->count == 2);
	CHECK(has(&s, "_G;[table]", 64 + 2 * 24));
	CHECK(has(&s, "_G;cache;[table]", 64 + 2 * 8));
	CHECK(has(&s, "_G;cache;[string]", 24 + 5 + 1)); /* the key */
	CHECK(has(&s, "_G;cache;[*];[string]", 24 + 11 + 1));
	CHECK(has(&s, "[registry];[table]", 64));
	CHECK(has(&s, "[main thread];[thread]", hl.l_size + 2 * 8));
	CHECK(has(&s, "[unreachable];[string]", 24 + 7 + 1));
	CHECK(s.st.bytes == 112 + 80 + 30 + 36 + 64 + hl.l_size + 16 + 32 + 28 + 26);
	heap_snapshot_free(&s);
	/* Two steps at most: the string in the array is cut. */
	CHECK(heap_walk(&im, &hl, L, G, 2, &s) == 0);
	CHECK(has(&s, "_G;cache;[deeper];[string]", 24 + 11 + 1) && s.st.deeper == 1);
	heap_snapshot_free(&s);
	/* A read across the end of the copy is refused. */
	CHECK(heap_ptr(&im, BASE + SIZE - 8, 8) && !heap_ptr(&im, BASE + SIZE - 8, 9) &&
	      !heap_ptr(&im, BASE - 1, 2) && !heap_ptr(&im, 0, 1));
	/* Memory that holds no VM. */
	heap_image_free(&im);
	m = calloc(1, sizeof(*m));
	CHECK(m && heap_image_add(&im, BASE, m->b, SIZE) == 0);
	free(m);
	CHECK(heap_find_vm(&im, &hl, 1, &L, &G, &nvm) == -ENOENT);
	heap_image_free(&im);
}

/* The recorder's check of a G known in another process of the same image
 * (heap_is_G(), before any sample): it holds where the main thread (a
 * thread object) and G's mainthref agree, in the target's own memory, and
 * nowhere else. */
TEST(heap_is_G_in_target_memory)
{
	const struct lj_build_desc *b = lj_known_build(LJ_LAYOUT_GC64 | LJ_LAYOUT_OPENRESTY);
	const struct lj_layout *lo = b ? &b->layout : NULL;
	uint64_t L = 0x7f0000010000ull, G;
	uint8_t *m;

	CHECK(lo);
	G = L + lo->gg_g;
	m = fake_region(L, 0x1000);
	CHECK(!heap_is_G(1, lo, G));
	m[9] = HT_THREAD; /* the main thread's gct */
	memcpy(m + lo->l_glref, &G, 8);
	CHECK(!heap_is_G(1, lo, G)); /* mainthref not yet */
	memcpy(m + lo->gg_g + lo->g_mainthref, &L, 8);
	CHECK(heap_is_G(1, lo, G) && !heap_is_G(1, lo, G + 8) && !heap_is_G(1, lo, 8));
	CHECK(!heap_is_G(1, lo, 0x6f0000010000ull + lo->gg_g)); /* unreadable */
	fake_regions_free();
}

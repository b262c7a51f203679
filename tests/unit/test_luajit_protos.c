/*
 * test_luajit_protos.c - reading a prototype from a process
 * (record/luajit_protos.c), on a GCproto and its chunk name built by hand
 * in this process's own memory with a built-in layout: a live proto is
 * read and named; one whose memory holds another object now, or whose
 * chunk name is no string any more (dead, its memory reused), is
 * "unknown", never named from dead memory.
 *
 * A proto whose block cannot be allocated is counted as out of memory,
 * not as unreadable.
 *
 * The reader is included rather than linked, its target_read() replaced
 * by a copy from this process's memory and its malloc() by one that can
 * be made to fail.
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

void *protos_test_malloc(size_t size);
#define target_read protos_test_read
#define malloc protos_test_malloc
#include "record/luajit_protos.c"
#undef target_read
#undef malloc

#include "record/luajit_layouts.h"
#include "tests/unit/unit.h"

static int malloc_fails; /* the next malloc() returns NULL */

void *protos_test_malloc(size_t size)
{
	if (malloc_fails) {
		malloc_fails = 0;
		return NULL;
	}
	return malloc(size);
}

int protos_test_read(pid_t pid, uint64_t addr, void *buf, size_t len)
{
	(void)pid;
	memcpy(buf, (const void *)(uintptr_t)addr, len);
	return 0;
}

#define GCT_PROTO 7
#define GCT_STR 4

struct fake {
	struct lj_target t;
	uint8_t proto[512];
	uint8_t str[128];
};

static void put_u32(uint8_t *p, uint32_t v) { memcpy(p, &v, 4); }
static void put_u64(uint8_t *p, uint64_t v) { memcpy(p, &v, 8); }

/* A proto of 2 instructions from line 10 to 12, named "@fake.lua". */
static int fake_init(struct fake *f)
{
	const struct lj_build_desc *b = lj_known_build(LJ_LAYOUT_GC64 | LJ_LAYOUT_OPENRESTY);
	const struct lj_layout *lo;
	const char *name = "@fake.lua";

	if (!b)
		return -1;
	memset(f, 0, sizeof(*f));
	f->t.pid = getpid();
	f->t.layout = b->layout;
	lo = &f->t.layout;
	if (lo->pt_size + 8u > sizeof(f->proto) ||
	    lo->str_size + strlen(name) + 1 > sizeof(f->str))
		return -1;
	f->str[lo->ref_size + 1] = GCT_STR;
	put_u32(f->str + lo->str_len, (uint32_t)strlen(name));
	memcpy(f->str + lo->str_size, name, strlen(name));
	f->proto[lo->ref_size + 1] = GCT_PROTO;
	put_u32(f->proto + lo->pt_sizept, lo->pt_size + 8);
	put_u32(f->proto + lo->pt_sizebc, 2);
	put_u64(f->proto + lo->pt_chunkname, (uint64_t)(uintptr_t)f->str);
	put_u32(f->proto + lo->pt_firstline, 10);
	put_u32(f->proto + lo->pt_numline, 2);
	return 0;
}

/* The id proto_table_get gives f's proto, and its record's chunk name. */
static uint64_t read_fake(struct fake *f, const char **chunk)
{
	struct proto_table *pt = proto_table_new();
	const struct lp_proto *rec = NULL;
	uint16_t fp = lj_proto_fingerprint((uint64_t)(uintptr_t)f->str, 10, 2);
	uint64_t id;

	*chunk = NULL;
	if (!pt)
		return 0;
	id = proto_table_get(pt, &f->t, (uint64_t)(uintptr_t)f->proto, fp, &rec);
	if (rec)
		*chunk = strdup(rec->chunkname);
	proto_table_free(pt);
	return id;
}

TEST(lj_proto_live)
{
	static struct fake f;
	const char *chunk;

	CHECK(!fake_init(&f));
	CHECK(read_fake(&f, &chunk) != 0);
	CHECK(chunk && !strcmp(chunk, "@fake.lua"));
	free((void *)chunk);
}

TEST(lj_proto_reused_is_unknown)
{
	static struct fake f;
	const char *chunk;

	/* Its memory now another object's (a table's type), the fields the
	 * fingerprint reads as they were. */
	CHECK(!fake_init(&f));
	f.proto[f.t.layout.ref_size + 1] = 11;
	CHECK(read_fake(&f, &chunk) == 0);
	CHECK(!chunk);
}

TEST(lj_proto_dead_chunkname_is_unknown)
{
	static struct fake f;
	const char *chunk;

	/* The chunk name's memory reused by something other than a string. */
	CHECK(!fake_init(&f));
	f.str[f.t.layout.ref_size + 1] = 11;
	CHECK(read_fake(&f, &chunk) == 0);
	CHECK(!chunk);
}

TEST(lj_proto_gone_is_named_from_the_walker)
{
	static struct fake f;
	struct proto_table *pt = proto_table_new();
	const struct lp_proto *rec = NULL;
	uint16_t fp = 0x1234;
	uint64_t addr, id;

	/* What the walker saw before the first sample, then the proto's
	 * memory reused: named from the former, without bytecode. */
	CHECK(pt && !fake_init(&f));
	addr = (uint64_t)(uintptr_t)f.proto;
	f.proto[f.t.layout.ref_size + 1] = 11;
	proto_table_note(pt, (uint32_t)f.t.pid, addr, fp, 10, 2, "@gone.lua", 9, 9);
	id = proto_table_get(pt, &f.t, addr, fp, &rec);
	CHECK(id != 0 && rec);
	CHECK(rec && !strcmp(rec->chunkname, "@gone.lua") && rec->firstline == 10 &&
	      rec->numline == 2 && rec->nbc == 0);
	CHECK(proto_table_from_ident(pt) == 1 && proto_table_failed(pt) == 0);
	/* The same proto again: the same id, no new record. */
	CHECK(proto_table_get(pt, &f.t, addr, fp, &rec) == id && !rec);
	/* A file name cut short names nothing. */
	proto_table_note(pt, (uint32_t)f.t.pid, addr + 8, fp, 1, 1, "@a/b", 4, 300);
	CHECK(proto_table_get(pt, &f.t, addr + 8, fp, &rec) == 0 && !rec);
	proto_table_free(pt);
}

TEST(lj_proto_out_of_memory_is_not_unreadable)
{
	static struct fake f, g;
	struct proto_table *pt = proto_table_new();
	const struct lp_proto *rec = NULL;
	uint64_t addr, addr2;
	uint16_t fp, fp2;

	/* A live proto whose block cannot be allocated: unknown, counted as
	 * memory, not as a proto that could not be read; and another with
	 * what the walker saw of it, named from that, still counted as
	 * memory. */
	CHECK(pt && !fake_init(&f) && !fake_init(&g));
	addr = (uint64_t)(uintptr_t)f.proto;
	addr2 = (uint64_t)(uintptr_t)g.proto;
	fp = lj_proto_fingerprint((uint64_t)(uintptr_t)f.str, 10, 2);
	fp2 = lj_proto_fingerprint((uint64_t)(uintptr_t)g.str, 10, 2);
	CHECK(read_proto(pt, &f.t, addr, fp) == 0);
	malloc_fails = 1;
	CHECK(read_proto(pt, &f.t, addr, fp) == -ENOMEM);
	malloc_fails = 1;
	CHECK(proto_table_get(pt, &f.t, addr, fp, &rec) == 0 && !rec);
	CHECK(proto_table_nomem(pt) == 1 && proto_table_failed(pt) == 0);
	proto_table_note(pt, (uint32_t)g.t.pid, addr2, fp2, 10, 2, "@seen.lua", 9, 9);
	malloc_fails = 1;
	CHECK(proto_table_get(pt, &g.t, addr2, fp2, &rec) != 0 && rec &&
	      !strcmp(rec->chunkname, "@seen.lua") && rec->nbc == 0);
	CHECK(proto_table_nomem(pt) == 2 && proto_table_from_ident(pt) == 0 &&
	      proto_table_failed(pt) == 0);
	malloc_fails = 0;
	proto_table_free(pt);
}

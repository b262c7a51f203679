/*
 * test_unwind_buckets.c - unit tests of the bucket index over unwind rows
 * (record/unwind_buckets.c): the search the BPF walker makes through the
 * index must find, for every address, the row a plain binary search of
 * the whole object finds.  Checked on the system's libc, on this test
 * binary, and on synthetic tables at the edges (one row, rows sharing a
 * bucket, an object so large its buckets are widened).
 */
#include <stdint.h>
#include <stdlib.h>

#include "record/unwind_buckets.h"
#include "record/unwind_table.h"
#include "tests/unit/unit.h"

/* The vaddrs [lo, hi) by step where the index disagrees with
 * unwind_table_lookup(). */
static uint64_t mismatches_in(const struct unwind_table *t, uint64_t lo,
			      uint64_t hi, uint64_t step)
{
	struct unwind_buckets b;
	struct lp_unwind_bucket *index;
	uint64_t bad = 0;

	unwind_buckets_plan(t->rows, t->nrows, &b);
	index = calloc(b.nbuckets, sizeof(*index));
	if (!index)
		return ~0ull;
	unwind_buckets_fill(t->rows, t->nrows, &b, index);
	for (uint64_t v = lo; v < hi; v += step) {
		const struct lp_unwind_row *want = unwind_table_lookup(t, v);
		int64_t got = unwind_buckets_lookup(t->rows, t->nrows, &b, index, v);

		if (want ? got != want - t->rows : got != -1)
			bad++;
	}
	free(index);
	return bad;
}

/* Every vaddr from below the first row to past the last, by step. */
static uint64_t mismatches(const struct unwind_table *t, uint64_t step)
{
	uint64_t lo = t->rows[0].pc > 300 ? t->rows[0].pc - 300 : 0;

	return mismatches_in(t, lo, (uint64_t)t->rows[t->nrows - 1].pc + 3000, step);
}

TEST(unwind_buckets_agree_on_libc_and_self)
{
	static const char *const paths[] = {
		"/lib/x86_64-linux-gnu/libc.so.6", "/proc/self/exe",
	};

	for (int i = 0; i < 2; i++) {
		struct unwind_table t;
		struct unwind_buckets b;

		CHECK(unwind_table_build_path(paths[i], &t) == 0);
		CHECK(t.nrows > 100);
		unwind_buckets_plan(t.rows, t.nrows, &b);
		CHECK(b.shift == LP_UNWIND_BUCKET_SHIFT);
		CHECK(b.base <= t.rows[0].pc);
		CHECK(mismatches(&t, 1) == 0);
		unwind_table_free(&t);
	}
}

TEST(unwind_buckets_edges)
{
	struct lp_unwind_row rows[6] = {
		{ .pc = 0x1010 }, { .pc = 0x1011 }, { .pc = 0x1012 },
		{ .pc = 0x10ff }, { .pc = 0x1100 }, { .pc = 0x5000 },
	};
	struct unwind_table t = { .rows = rows };
	struct unwind_buckets b;

	t.nrows = 1; /* a single row */
	CHECK(mismatches(&t, 1) == 0);
	t.nrows = 6; /* a crowded bucket, a row on a bucket's start, a gap */
	unwind_buckets_plan(rows, 6, &b);
	CHECK(b.base == 0x1000 && b.nbuckets == 0x41);
	CHECK(mismatches(&t, 1) == 0);
	/* 1 GiB of code: buckets widen to stay within the per-object cap. */
	rows[5].pc = 0x40001000;
	unwind_buckets_plan(rows, 6, &b);
	CHECK(b.shift > LP_UNWIND_BUCKET_SHIFT);
	CHECK(b.nbuckets <= LP_UNWIND_MAX_OBJ_BUCKETS);
	CHECK(b.base <= rows[0].pc);
	CHECK(mismatches(&t, 4093) == 0);
	CHECK(mismatches_in(&t, 0, 0x1200, 1) == 0);
	CHECK(mismatches_in(&t, 0x40000f00, 0x40001100, 1) == 0);
}

/*
 * test_luajit_jit_traces.c - a trace that runs without its number
 * (arm64's) found by an address of its code (record/luajit_jit_traces.c,
 * jit_trace_at()), in J->trace[] laid out by hand in fake target memory:
 * found with the number, GCtrace and fingerprint the walk gives a
 * numbered trace; not found outside its code (another JIT's), nor once
 * its number holds another trace, nor known when J->trace[] cannot be
 * read; and J->trace[] not read again for a process within
 * JIT_TRACE_SCAN_NS.
 */
#include <errno.h>
#include <string.h>

#include "record/luajit.h"
#include "record/luajit_layouts.h"
#include "tests/unit/fake_target.h"
#include "tests/unit/unit.h"

#define G_ 0x300000ull
#define TRARR 0x310000ull
#define TR2 0x320000ull
#define MCODE 0x7000000ull
#define STARTPC 0x4001234ull

static void put(uint8_t *p, uint64_t v, size_t n)
{
	memcpy(p, &v, n);
}

TEST(jit_trace_at_finds_an_unnumbered_trace_by_its_code)
{
	const struct lj_build_desc *b = lj_known_build(LJ_LAYOUT_GC64);
	const struct lj_layout *lo = b ? &b->layout : NULL;
	struct jit_trace_table *tt = jit_trace_table_new();
	struct lj_target t = { .pid = 1, .G = G_, .state = LJ_READY };
	uint8_t *g, *arr, *tr;
	uint32_t no = 0;
	uint64_t addr = 0;
	uint16_t fp = 0, want;

	CHECK(lo && lo->g2j && lo->fn_ffid && tt);
	t.layout = *lo;
	g = fake_region(G_, 0x2000);
	arr = fake_region(TRARR, 0x100);
	tr = fake_region(TR2, 0x1000);
	put(g + lo->g2j + lo->j_trace, TRARR, 8);
	put(g + lo->g2j + lo->j_sizetrace, 4, 4);
	put(arr + 2 * 8, TR2, 8);
	tr[lo->fn_ffid - 1] = 9; /* ~LJ_TTRACE */
	put(tr + lo->tr_traceno, 2, 2);
	put(tr + lo->tr_mcode, MCODE, 8);
	put(tr + lo->tr_szmcode, 0x100, 4);
	put(tr + lo->tr_startpc, STARTPC, 8);
	want = (uint16_t)((STARTPC >> 2) ^ (MCODE >> 4) ^ (MCODE >> 20)) | 1;
	CHECK(jit_trace_at(tt, &t, MCODE + 0x10, &no, &addr, &fp) == 0 && no == 2 &&
	      addr == TR2 && fp == want);
	/* Outside its code: no trace holds it (another JIT's); then, for
	 * that process, the answer from that same read of J->trace[], not a
	 * new one (the trace's code moved since, unseen). */
	t.pid = 2;
	CHECK(jit_trace_at(tt, &t, MCODE + 0x100, &no, &addr, &fp) == -ESRCH);
	put(tr + lo->tr_mcode, MCODE + 0x1000, 8);
	no = 0;
	CHECK(jit_trace_at(tt, &t, MCODE + 0x10, &no, &addr, &fp) == 0 && no == 2);
	put(tr + lo->tr_mcode, MCODE, 8);
	/* The number now holds another trace. */
	t.pid = 3;
	put(tr + lo->tr_traceno, 3, 2);
	CHECK(jit_trace_at(tt, &t, MCODE + 0x10, &no, &addr, &fp) == -ESRCH);
	/* J->trace[] unreadable: no answer. */
	t.pid = 4;
	t.G = G_ + 0x100000;
	CHECK(jit_trace_at(tt, &t, MCODE + 0x10, &no, &addr, &fp) == -ENOENT);
	jit_trace_table_free(tt);
	fake_regions_free();
}

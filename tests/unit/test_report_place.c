/*
 * test_report_place.c - samples in compiled code placed in the functions
 * their trace inlined (report/lua_place.c), on a hand-built trace: the
 * snapshot a sample's address falls in, from its leaf or from the return
 * address of a helper the trace called; the base frame's position from
 * the snapshot; the samples that cannot be placed (an address outside
 * the trace's code, a snapshot the recorder could not decode, a base
 * frame that disagrees) keeping the walked stack and counted; code the
 * recorder marked as not told apart, shown in the caller's frame with the
 * functions it may be; and a trace from before trace_snaps existed, which
 * reads as it always did.
 */
#include <stdlib.h>
#include <string.h>

#include "lib/lua_bc.h"
#include "tests/unit/report_test.h"


#define F_ADDR 0x70000ull  /* f's proto; its bytecode 104 bytes on */
#define BCOFS 104
#define MCODE 0x50000ull   /* trace 3's machine code, not in any mapping */

/* pid 40: the host at 0x10000..0x30000, the VM's code at 0x20000.  main
 * calls f, whose loop trace 3 (starting at f's instruction 8) inlines g,
 * an upvalue of f called at f's instruction 4.  Without snaps, the trace
 * is as an older luaprof wrote it; with snaps 2, a last range marks its
 * code as g's or f's, not told apart, with two samples in it. */
static int write_place_trace(const char *path, int snaps)
{
	static const uint32_t main_bc[] = { LBC_AD(LBC_FUNCV, 2, 0), LBC_AD(LBC_GGET, 0, 0),
					    LBC_ABC(LBC_CALL, 0, 1, 1), LBC_AD(LBC_RET0, 0, 1) };
	static const uint32_t main_lines[] = { 0, 3, 3, 4 };
	static const uint32_t f_bc[] = {
		LBC_AD(LBC_FUNCF, 4, 0), LBC_AD(LBC_KSHORT, 1, 1), LBC_AD(LBC_KSHORT, 2, 1),
		LBC_AD(LBC_UGET, 3, 0), LBC_ABC(LBC_CALL, 3, 2, 2), LBC_AD(LBC_MOV, 1, 3),
		LBC_AD(LBC_KSHORT, 2, 2), LBC_AD(LBC_MOV, 1, 2), LBC_AD(LBC_KSHORT, 0, 0),
		LBC_AD(LBC_MOV, 0, 1), LBC_AD(LBC_KSHORT, 0, 0), LBC_AD(LBC_RET0, 0, 1),
	};
	static const uint32_t f_lines[] = { 10, 11, 12, 12, 12, 13, 14, 15, 15, 16, 16, 17 };
	static const uint32_t g_bc[] = { LBC_AD(LBC_FUNCF, 2, 0), LBC_AD(LBC_KSHORT, 1, 1),
					 LBC_AD(LBC_RET0, 0, 1), LBC_AD(LBC_RET0, 0, 1) };
	static const uint32_t g_lines[] = { 20, 21, 22, 22 };
	static const char *const uvnames[] = { "g" };
	static const struct lp_proto_kstr kstr[] = { { 0, "f" } };
	static const struct lp_lframe lframes[] = {
		{ LP_LFRAME_TRACE, 0, 3, 1 },   /* trace 3, record 1 */
		{ LP_LFRAME_LUA, 0, 2, 3 },     /* f, as the walker finds it: the
						 * interpreter's stale pc */
		{ LP_LFRAME_LUA, 3, 1, 3 },     /* main */
		{ LP_LFRAME_ENTRY, 0, 0, 0 },
	};
	/* Snapshots: f alone at position 6; f at its call (5) and g at 2;
	 * one not decoded; one whose base position is not in f. */
	static const struct lp_lframe s0[] = { { LP_LFRAME_BASE, 0, 3 /* -2 */, 0 } };
	static const struct lp_lframe s1[] = { { LP_LFRAME_BASE, 0, 5 /* -3 */, 0 },
					       { LP_LFRAME_LUA, LP_LFRAME_LINK_LUA, 3, 2 } };
	static const struct lp_lframe s3[] = { { LP_LFRAME_BASE, 0, 200 /* +100 */, 0 } };
	static const struct lp_lframe s4[] = { { LP_LFRAME_BASE, 0, 5 /* -3 */, 0 },
					       { LP_LFRAME_INLINED, 0, 3, 5 } };
	static const struct lp_tsnap tsnaps[] = {
		{ 0, 1, s0 }, { 0x100, 2, s1 }, { 0x200, 0, NULL }, { 0x300, 1, s3 },
		{ 0x380, 2, s4 },
	};
	/* Leaf first: the trace's code; a helper the trace called; no
	 * address of the trace at all. */
	static const uint64_t u1[] = { MCODE + 0x10, 0x10200 };
	static const uint64_t u2[] = { MCODE + 0x110, 0x10200 };
	static const uint64_t u3[] = { 0x10100, MCODE + 0x120, 0x10200 };
	static const uint64_t u4[] = { MCODE + 0x210, 0x10200 };
	static const uint64_t u5[] = { MCODE + 0x310, 0x10200 };
	static const uint64_t u6[] = { 0x10180, 0x10200 };
	static const uint64_t u7[] = { MCODE + 0x390, 0x10200 };
	static const struct { const uint64_t *a; uint32_t n; int count; } us[] = {
		{ u1, 2, 1 }, { u2, 2, 4 }, { u3, 3, 2 }, { u4, 2, 1 }, { u5, 2, 1 }, { u6, 2, 1 },
		{ u7, 2, 2 },
	};
	size_t nus = sizeof(us) / sizeof(us[0]) - (snaps != 2);
	struct lp_record rec = { 0 };
	struct trace_writer *w = rt_open(path);
	uint64_t t = 0;
	int err;

	if (!w)
		return -1;
	err = rt_lua_host(w, 40, "host", t, 2);
	rec.type = LP_REC_PROTO;
	rec.u.proto = (struct lp_proto){ .id = 1, .addr = 0x60000, .chunkname = "@t.lua",
					 .numline = 30, .nbc = 4, .bc = main_bc,
					 .lines = main_lines, .nkstr = 1, .kstr = kstr };
	err = err ?: trace_write(w, &rec);
	rec.u.proto = (struct lp_proto){ .id = 2, .addr = F_ADDR, .chunkname = "@t.lua",
					 .firstline = 10, .numline = 8, .nbc = 12, .bc = f_bc,
					 .lines = f_lines, .nuv = 1, .uvnames = uvnames };
	err = err ?: trace_write(w, &rec);
	rec.u.proto = (struct lp_proto){ .id = 3, .addr = 0x71000, .chunkname = "@t.lua",
					 .firstline = 20, .numline = 3, .nbc = 4, .bc = g_bc,
					 .lines = g_lines };
	err = err ?: trace_write(w, &rec);
	rec.type = LP_REC_TRACE;
	rec.u.trace = (struct lp_trace){ .id = 1, .pid = 40, .traceno = 3, .proto = 2,
					 .startpc = 8, .mcode = MCODE, .szmcode = 0x400 };
	err = err ?: trace_write(w, &rec);
	if (snaps) {
		rec.type = LP_REC_TRACE_SNAPS;
		rec.u.trace_snaps = (struct lp_trace_snaps){ .trace = 1, .bcofs = BCOFS,
							     .bcbase = F_ADDR + BCOFS + 4 * 8,
							     .nsnap = snaps == 2 ? 5 : 4,
							     .snaps = tsnaps };
		err = err ?: trace_write(w, &rec);
	}
	rec.type = LP_REC_LUA_STACK;
	rec.u.lua_stack = (struct lp_lua_stack){ .id = 9, .depth = 4, .frames = lframes };
	err = err ?: trace_write(w, &rec);
	for (size_t i = 0; !err && i < nus; i++) {
		err = rt_stack(w, 100 + i, LP_STACK_USER, us[i].a, us[i].n);
		for (int k = 0; !err && k < us[i].count; k++) {
			rec.type = LP_REC_SAMPLE;
			rec.u.sample = (struct lp_sample){ .time_ns = t += 1000, .pid = 40,
							   .tid = 40, .ustack = 100 + i,
							   .lstack = 9, .vmstate = 3,
							   .lua_state = LP_LUA_WALKED };
			err = trace_write(w, &rec);
		}
	}
	return trace_writer_close(w, NULL) ?: err;
}

TEST(report_place_inlined_frames)
{
	const char *path = rt_path("place.lp");
	char *out = NULL, *err = NULL;

	CHECK(write_place_trace(path, 1) == 0);
	CHECK(rt_run(cmd_report, &out, &err, "report", "--format", "folded", path, NULL) == 0);
	/* g in f where its snapshot says, from the leaf or from the return
	 * address of the helper; named from f's call site (an upvalue). */
	CHECK(strstr(out, "host+0x1ff;main (t.lua:0);f (t.lua:10);g (t.lua:20) 4\n"));
	CHECK(strstr(out, "host+0x1ff;main (t.lua:0);f (t.lua:10);g (t.lua:20);host+0x100 2\n"));
	/* f alone: placed in snapshot 0, and the two that could not be. */
	CHECK(strstr(out, "host+0x1ff;main (t.lua:0);f (t.lua:10) 3\n"));
	CHECK(strstr(err, "note: 3 of 10 samples in compiled code were not placed"));
	CHECK(strstr(err, "(1 at no address in the trace's code, 1 in a snapshot the recorder "
			  "could not read, 1 whose base frame disagrees)"));
	free(out);
	free(err);
	out = err = NULL;
	/* --lines: f at the snapshot's position (13), at the call (12) under
	 * g, which runs its line 21; the unplaced at the trace's start (15). */
	CHECK(rt_run(cmd_report, &out, NULL, "report", "--format", "folded", "--lines",
		     path, NULL) == 0);
	CHECK(strstr(out, ";f (t.lua:13) 1\n"));
	CHECK(strstr(out, ";f (t.lua:12);g (t.lua:21) 4\n"));
	CHECK(strstr(out, ";f (t.lua:15) 2\n"));
	free(out);
	out = NULL;
	CHECK(rt_run(cmd_report, &out, NULL, "report", "-n", "3", path, NULL) == 0);
	CHECK(strstr(out, "# compiled code: 10 samples, 7 (70.0%) placed in the functions "
			  "their traces inlined\n"));
	free(out);
	out = NULL;
	/* --annotate: g's line holds its samples; --vmstate still names f,
	 * the function the trace runs in. */
	CHECK(rt_run(cmd_report, &out, NULL, "report", "--annotate", "-n", "0", path, NULL) == 0);
	CHECK(strstr(out, "g (t.lua:20-23): self 6 "));
	free(out);
	out = NULL;
	CHECK(rt_run(cmd_report, &out, NULL, "report", "--vmstate", path, NULL) == 0);
	CHECK(strstr(out, "f (t.lua:10)") && !strstr(out, "g (t.lua:20)"));
	free(out);
}

/* Code the recorder marked: the samples in it show f marked with g, named
 * from f's call, apart from f's own time and g's; counted apart. */
TEST(report_place_marked_code)
{
	const char *path = rt_path("place-marked.lp");
	char *out = NULL;

	CHECK(write_place_trace(path, 2) == 0);
	CHECK(rt_run(cmd_report, &out, NULL, "report", "--format", "folded", path, NULL) == 0);
	CHECK(strstr(out, "host+0x1ff;main (t.lua:0);f [inlined: g] (t.lua:10) 2\n"));
	CHECK(strstr(out, ";f (t.lua:10);g (t.lua:20) 4\n"));
	free(out);
	out = NULL;
	CHECK(rt_run(cmd_report, &out, NULL, "report", "-n", "3", path, NULL) == 0);
	CHECK(strstr(out, "# compiled code: 12 samples, 7 (58.3%) placed in the functions "
			  "their traces inlined, 2 (16.7%) in inlined code the trace does not "
			  "tell apart ([inlined: ...])\n"));
	free(out);
}

/* A trace written before trace_snaps: compiled time in the trace's base
 * function at the line the trace starts, as before, and a note. */
TEST(report_place_old_trace_reads_as_before)
{
	const char *path = rt_path("place-old.lp");
	char *out = NULL, *err = NULL;

	CHECK(write_place_trace(path, 0) == 0);
	CHECK(rt_run(cmd_report, &out, &err, "report", "--format", "folded", "--lines",
		     path, NULL) == 0);
	CHECK(!strstr(out, "g (t.lua"));
	CHECK(strstr(out, "host+0x1ff;main (t.lua:3);f (t.lua:15) 7\n"));
	CHECK(strstr(err, "note: 10 of 10 samples in compiled code are in traces recorded "
			  "without their snapshots"));
	free(out);
	free(err);
	out = NULL;
	CHECK(rt_run(cmd_report, &out, NULL, "report", "-n", "3", path, NULL) == 0);
	CHECK(strstr(out, "# compiled code: 10 samples, 0 (0.0%) placed"));
	free(out);
}

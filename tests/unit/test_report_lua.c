/*
 * test_report_lua.c - the report's Lua side on hand-built traces: Lua
 * frames in place of the VM's native frame, names from the call site,
 * builtins by name, the VM-state pseudo-frames and --vmstate.
 */
#include <stdlib.h>
#include <string.h>

#include "lib/lua_bc.h"
#include "report/vmstate.h"
#include "tests/unit/report_test.h"


/* pid 40: native code at 0x10000.., the VM's code at 0x20000..0x21000.
 * main chunk (proto 1) calls the global "work" (proto 2), which calls
 * string.rep (fast function 7 here).  Lua stack `frames` and native user
 * stack `native` (leaf first) for every sample; NULL: the default ones. */
static int write_lua_trace_with(const char *path, int32_t vmstate,
				const struct lp_lframe *lframes, uint32_t nlframes,
				const uint64_t *unative, uint32_t nunative)
{
	static const uint32_t main_bc[] = { LBC_AD(LBC_FUNCV, 2, 0), LBC_AD(LBC_GGET, 0, 0),
					    LBC_ABC(LBC_CALL, 0, 1, 1), LBC_AD(LBC_RET0, 0, 1) };
	static const uint32_t main_lines[] = { 0, 3, 3, 4 };
	static const uint32_t work_bc[] = { LBC_AD(LBC_FUNCF, 3, 0), LBC_AD(LBC_KSHORT, 0, 1),
					    LBC_ABC(LBC_CALL, 0, 1, 1), LBC_AD(LBC_RET0, 0, 1) };
	static const uint32_t work_lines[] = { 1, 2, 2, 2 };
	static const struct lp_proto_kstr kstr[] = { { 0, "work" } };
	static const struct lp_lframe frames[] = {
		{ LP_LFRAME_FF, 0, 7, 0 },         /* string.rep, called from work */
		{ LP_LFRAME_LUA, 0, 2, 3 },        /* work, called from main */
		{ LP_LFRAME_LUA, 3, 1, 3 },        /* main (vararg frame) */
		{ LP_LFRAME_ENTRY, 0, 0, 0 },
	};
	uint64_t native[] = { 0x10100 /* leaf: C code */, 0x20400 /* VM */,
			      0x10200 /* the host */ };
	struct lp_record rec = { 0 };
	struct trace_writer *w = rt_open(path);
	uint64_t t = 0;
	int err;

	if (!w)
		return -1;
	err = rt_lua_host(w, 40, "host", t, 8);
	rec.type = LP_REC_PROTO;
	rec.u.proto = (struct lp_proto){ .id = 1, .chunkname = "@t.lua", .firstline = 0,
					 .numline = 5, .nbc = 4, .bc = main_bc,
					 .lines = main_lines, .nkstr = 1, .kstr = kstr };
	err = err ?: trace_write(w, &rec);
	rec.u.proto = (struct lp_proto){ .id = 2, .chunkname = "@t.lua", .firstline = 1,
					 .numline = 2, .nbc = 4, .bc = work_bc,
					 .lines = work_lines };
	err = err ?: trace_write(w, &rec);
	rec.type = LP_REC_LUA_STACK;
	rec.u.lua_stack = (struct lp_lua_stack){ .id = 9, .depth = lframes ? nlframes : 4,
						 .frames = lframes ? lframes : frames };
	err = err ?: trace_write(w, &rec) ?:
	      rt_stack(w, 1, LP_STACK_USER, unative ? unative : native, unative ? nunative : 3);
	for (int i = 0; !err && i < 5; i++) {
		rec.type = LP_REC_SAMPLE;
		rec.u.sample = (struct lp_sample){ .time_ns = t += 1000, .pid = 40, .tid = 40,
						   .ustack = 1, .lstack = 9, .vmstate = vmstate,
						   .lua_state = LP_LUA_WALKED };
		err = trace_write(w, &rec);
	}
	return trace_writer_close(w, NULL) ?: err;
}

static int write_lua_trace(const char *path, int32_t vmstate)
{
	return write_lua_trace_with(path, vmstate, NULL, 0, NULL, 0);
}

TEST(report_lua_frames_replace_the_vm_frame)
{
	const char *path = rt_path("lua.lp");
	char *out = NULL;

	CHECK(write_lua_trace(path, ~1 /* C */) == 0);
	CHECK(rt_run(cmd_report, &out, NULL, "report", "--format", "folded", path, NULL) == 0);
	/* Root first: the host's frame, the Lua frames where the VM frame
	 * was, named from their call sites, then the C code the builtin ran
	 * (/x/host cannot be read here: file offsets). */
	CHECK(!strcmp(out, "host+0x1ff;main (t.lua:0);work (t.lua:1);string.rep;host+0x100 5\n"));
	free(out);
	out = NULL;
	CHECK(rt_run(cmd_report, &out, NULL, "report", "--format", "folded", "--lines",
		     path, NULL) == 0);
	/* --lines: the line of the instruction before each frame's pc. */
	CHECK(strstr(out, "main (t.lua:3);work (t.lua:2);"));
	free(out);
}

/* A builtin written in C whose code is the native frame before the VM's
 * (FF, pc 1: the recorder found the frame's function starts at the
 * builtin's): one frame, the builtin's, not its name and then its code. */
TEST(report_builtin_c_code_once)
{
	static const struct lp_lframe frames[] = {
		{ LP_LFRAME_FF, 0, 7, 1 },
		{ LP_LFRAME_LUA, 0, 2, 3 },
		{ LP_LFRAME_LUA, 3, 1, 3 },
		{ LP_LFRAME_ENTRY, 0, 0, 0 },
	};
	uint64_t called[] = { 0x10300 /* leaf: what the builtin called */,
			      0x10101 /* the builtin's code */, 0x20400 /* VM */,
			      0x10200 /* the host */ };
	const char *path = rt_path("ffcode.lp");
	char *out = NULL;

	CHECK(write_lua_trace_with(path, ~1, frames, 4, NULL, 0) == 0);
	CHECK(rt_run(cmd_report, &out, NULL, "report", "--format", "folded", path, NULL) == 0);
	CHECK(out && !strcmp(out, "host+0x1ff;main (t.lua:0);work (t.lua:1);string.rep 5\n"));
	free(out);
	out = NULL;
	CHECK(write_lua_trace_with(path, ~1, frames, 4, called, 4) == 0);
	CHECK(rt_run(cmd_report, &out, NULL, "report", "--format", "folded", path, NULL) == 0);
	CHECK(out && !strcmp(out, "host+0x1ff;main (t.lua:0);work (t.lua:1);string.rep;"
				  "host+0x300 5\n"));
	free(out);
}

/* A Lua walk that stopped: its [truncated] stands where the frames it
 * could not read would, and the header and info count it as they count
 * native cuts, so that the counts and the [truncated] frames agree. */
TEST(report_lua_cut_counted)
{
	static const struct lp_lframe frames[] = {
		{ LP_LFRAME_FF, 0, 7, 0 },
		{ LP_LFRAME_LUA, 0, 2, 3 },
		{ LP_LFRAME_TRUNC, 0, 1, 0 },
	};
	const char *path = rt_path("luacut.lp");
	char *out = NULL;

	CHECK(write_lua_trace_with(path, ~1, frames, 3, NULL, 0) == 0);
	CHECK(rt_run(cmd_report, &out, NULL, "report", "--format", "folded", path, NULL) == 0);
	CHECK(out && !strcmp(out, "host+0x1ff;[truncated];? (t.lua:1);string.rep;host+0x100 5\n"));
	free(out);
	out = NULL;
	CHECK(rt_run(cmd_report, &out, NULL, "report", path, NULL) == 0);
	CHECK(out && strstr(out, "# samples: 5, lost: 0, Lua stack cut: 5 (100.00%, [truncated])\n"));
	free(out);
	out = NULL;
	CHECK(rt_run(cmd_info, &out, NULL, "info", path, NULL) == 0);
	CHECK(out && strstr(out, "Lua stacks: 5 cut (100.00%, [truncated])\n"));
	free(out);
	out = NULL;
	CHECK(write_lua_trace(path, ~1) == 0); /* whole: no count */
	CHECK(rt_run(cmd_report, &out, NULL, "report", path, NULL) == 0);
	CHECK(out && !strstr(out, "Lua stack cut"));
	free(out);
}

/* A VM frame whose entry runs no Lua frame (bpf/walk_lua.bpf.h: an ENTRY
 * with nothing before it) keeps its native frame, and the Lua frames go
 * to the next VM frame: the JIT compiler's own C frame (lj_vm_cpcall)
 * above the interpreter's.  A helper the interpreter called, the leaf,
 * is the interpreter's work: no frame of its own. */
TEST(report_vm_frames_without_lua_keep_their_place)
{
	static const struct lp_lframe frames[] = {
		{ LP_LFRAME_ENTRY, 0, 0, 0 },      /* the compiler's C frame */
		{ LP_LFRAME_FF, 0, 7, 0 },
		{ LP_LFRAME_LUA, 0, 2, 3 },
		{ LP_LFRAME_LUA, 3, 1, 3 },
		{ LP_LFRAME_ENTRY, 0, 0, 0 },
	};
	uint64_t compiler[] = { 0x10100 /* leaf: the compiler */, 0x20600 /* VM: its
				C frame */, 0x10180 /* C: the hook */, 0x20400 /* VM:
				the interpreter */, 0x10200 /* the host */ };
	uint64_t helper[] = { 0x20700 /* leaf: VM helper */, 0x20400, 0x10200 };
	const char *path = rt_path("cpcall.lp");
	char *out = NULL;

	CHECK(write_lua_trace_with(path, ~4, frames, 5, compiler, 5) == 0);
	CHECK(rt_run(cmd_report, &out, NULL, "report", "--format", "folded", path, NULL) == 0);
	CHECK(!strcmp(out, "host+0x1ff;main (t.lua:0);work (t.lua:1);string.rep;host+0x17f;"
		      "host+0x105ff;host+0x100;[JIT compiler] 5\n"));
	free(out);
	out = NULL;
	CHECK(write_lua_trace_with(path, ~0, frames, 5, helper, 3) == 0);
	CHECK(rt_run(cmd_report, &out, NULL, "report", "--format", "folded", path, NULL) == 0);
	CHECK(!strcmp(out, "host+0x1ff;main (t.lua:0);work (t.lua:1);string.rep 5\n"));
	free(out);
}

/*
 * Anonymous code at the leaf, the native walk cut there (ustop JIT): while
 * a trace may run (interpreting: a trace's first instructions run before
 * they set vmstate) it is a trace's and stands for the VM's frame, the
 * Lua frames in its place; in a C function called from Lua (vmstate C) no
 * trace runs, and it is another JIT's (PCRE2's, which rspamd's
 * regexp:match reaches through native frames the walk could not follow):
 * a frame of its own under the Lua frames, not time of the C function.
 * With mcode, compiled trace 3 runs, its code there (see below).  With
 * gap, the walk stepped over the anonymous code to the VM's C frame and
 * went on to the root (host+0x1ff, host+0xff), a gap after the leaf.
 * With other, trace 1 of the process has its code there.
 */
static int write_anon_leaf_trace(const char *path, int32_t vmstate, uint64_t mcode, int gap,
				 uint64_t other)
{
	static const struct lp_mapping maps[] = {
		{ .start = 0x10000, .end = 0x30000, .prot = LP_PROT_READ | LP_PROT_EXEC,
		  .path = "/x/host" },
		{ .start = 0x40000, .end = 0x50000,
		  .prot = LP_PROT_READ | LP_PROT_WRITE | LP_PROT_EXEC, .path = "" },
		{ .start = 0x60000, .end = 0x70000,
		  .prot = LP_PROT_READ | LP_PROT_EXEC, .path = "" },
	};
	/* In a builtin, or (with mcode) in trace 3, record 1. */
	static const struct lp_lframe ff[] = {
		{ LP_LFRAME_FF, 0, 7, 0 },
		{ LP_LFRAME_LUA, 0, 2, 3 },
		{ LP_LFRAME_LUA, 3, 1, 3 },
		{ LP_LFRAME_ENTRY, 0, 0, 0 },
	};
	static const struct lp_lframe traced[] = {
		{ LP_LFRAME_TRACE, 0, 3, 1 },
		{ LP_LFRAME_LUA, 0, 2, 3 },
		{ LP_LFRAME_LUA, 3, 1, 3 },
		{ LP_LFRAME_ENTRY, 0, 0, 0 },
	};
	static const uint32_t bc[] = { LBC_AD(LBC_FUNCV, 2, 0), LBC_AD(LBC_RET0, 0, 1) };
	static const uint32_t lines[] = { 0, 1 };
	uint64_t leaf[] = { 0x40010, LP_ADDR_GAP, 0x10200, 0x10100 };
	/* gap 2: a helper of the VM's (0x20700) the trace called, returning
	 * to the trace's code, the walk on to the root through its C frame. */
	uint64_t helper[] = { 0x20700, 0x40011, 0x10200, 0x10100 };
	struct lp_record rec = { .type = LP_REC_PROTO };
	struct trace_writer *w = rt_open(path);
	uint64_t t = 0;
	int err;

	if (!w)
		return -1;
	err = rt_process(w, 40, 1, LP_PROC_EXISTING, "host", "/x/host", t) ?:
	      rt_maps(w, 40, LP_MAPS_REPLACE, maps, 3) ?: rt_luajit(w, 40, 8);
	for (uint32_t id = 1; id <= 2; id++) {
		rec.u.proto = (struct lp_proto){ .id = id, .chunkname = "@t.lua",
						 .firstline = id - 1, .numline = 2, .nbc = 2,
						 .bc = bc, .lines = lines };
		err = err ?: trace_write(w, &rec);
	}
	if (mcode) {
		rec.type = LP_REC_TRACE;
		rec.u.trace = (struct lp_trace){ .id = 1, .pid = 40, .traceno = 3, .proto = 2,
						 .mcode = mcode, .szmcode = 0x100 };
		err = err ?: trace_write(w, &rec);
	}
	if (other) {
		rec.type = LP_REC_TRACE;
		rec.u.trace = (struct lp_trace){ .id = 2, .pid = 40, .traceno = 1, .proto = 2,
						 .mcode = other, .szmcode = 0x100 };
		err = err ?: trace_write(w, &rec);
	}
	rec.type = LP_REC_LUA_STACK;
	rec.u.lua_stack = (struct lp_lua_stack){ .id = 9, .depth = 4,
						 .frames = mcode ? traced : ff };
	err = err ?: trace_write(w, &rec) ?:
	      rt_stack(w, 1, LP_STACK_USER, gap == 2 ? helper : leaf, gap ? 4 : 1);
	for (int i = 0; !err && i < 3; i++) {
		rec.type = LP_REC_SAMPLE;
		rec.u.sample = (struct lp_sample){ .time_ns = t += 1000, .pid = 40, .tid = 40,
						   .ustack = 1, .lstack = 9, .vmstate = vmstate,
						   .lua_state = LP_LUA_WALKED,
						   .ustop = gap ? LP_USTOP_R_COMPLETE :
								  LP_USTOP_R_JIT };
		err = trace_write(w, &rec);
	}
	return trace_writer_close(w, NULL) ?: err;
}

/* Whether that trace's folded report is `want` (printed if not). */
static int anon_other_folds_to(const char *path, int32_t vmstate, uint64_t mcode, int gap,
			       uint64_t other, const char *want)
{
	char *out = NULL;
	int same = write_anon_leaf_trace(path, vmstate, mcode, gap, other) == 0 &&
		   rt_run(cmd_report, &out, NULL, "report", "--format", "folded", path,
			  NULL) == 0 &&
		   out && !strcmp(out, want);

	if (!same)
		fprintf(stderr, "folded: %s", out ? out : "(none)\n");
	free(out);
	return same;
}

static int anon_leaf_folds_to(const char *path, int32_t vmstate, uint64_t mcode, int gap,
			      const char *want)
{
	return anon_other_folds_to(path, vmstate, mcode, gap, 0, want);
}

TEST(report_anon_leaf_is_a_trace_only_where_one_may_run)
{
	const char *path = rt_path("anon_leaf.lp");

	CHECK(anon_leaf_folds_to(path, ~0 /* interpreting */, 0, 0,
				 "[truncated];main (t.lua:0);? (t.lua:1);string.rep 3\n"));
	CHECK(anon_leaf_folds_to(path, ~1 /* C */, 0, 0,
				 "[truncated];main (t.lua:0);? (t.lua:1);string.rep;[anon] 3\n"));
}

/*
 * Anonymous code while compiled trace 3 runs (vmstate 3), the trace's own
 * code at [mcode, mcode + 0x100): the leaf at 0x40010 is the trace's when
 * that range holds it, or LuaJIT's (another trace's head, an exit stub)
 * when the mapping that holds the trace holds it too; in another
 * anonymous mapping (0x60000) it is another JIT's, called from the trace
 * through the FFI (PCRE's, under OpenResty's ngx.re.find(s, re, "jo")): a
 * native frame under the trace's Lua frames, as the walker left it.
 */
TEST(report_anon_leaf_outside_the_running_trace_is_native)
{
	const char *path = rt_path("ffi_anon.lp");

	CHECK(anon_leaf_folds_to(path, 3, 0x40000 /* holds the leaf */, 0,
				 "[truncated];main (t.lua:0);? (t.lua:1) 3\n"));
	CHECK(anon_leaf_folds_to(path, 3, 0x48000 /* in the leaf's mapping */, 0,
				 "[truncated];main (t.lua:0);? (t.lua:1) 3\n"));
	CHECK(anon_leaf_folds_to(path, 3, 0x60000 /* in another mapping */, 0,
				 "[truncated];main (t.lua:0);? (t.lua:1);[anon] 3\n"));
}

/*
 * The walk now steps over another JIT's code to the VM's C frame, as over
 * a trace's, and marks the gap (the C functions between, which it could
 * not see): the stack is whole, rooted, with [unknown frames] between the
 * Lua frames and the code, whether a trace called it through the FFI
 * (OpenResty's ngx.re.find with "jo") or a C function Lua called
 * (rspamd's regexp:match).  The header counts the gaps; the trace's
 * samples are not compiled code's.
 */
TEST(report_gap_after_another_jits_code)
{
	const char *path = rt_path("gap.lp");
	char *out = NULL;

	CHECK(anon_leaf_folds_to(path, 3, 0x60000 /* another mapping */, 1,
				 "host+0xff;host+0x1ff;main (t.lua:0);? (t.lua:1);"
				 "[unknown frames];[anon] 3\n"));
	CHECK(rt_run(cmd_report, &out, NULL, "report", path, NULL) == 0);
	CHECK(out && strstr(out, "# samples: 3, lost: 0, frames unseen: 3 (100.00%, "
				 "[unknown frames])\n"));
	CHECK(out && !strstr(out, "native stack cut") && !strstr(out, "# compiled code"));
	free(out);
	out = NULL;
	CHECK(rt_run(cmd_info, &out, NULL, "info", path, NULL) == 0);
	CHECK(out && strstr(out, "stacks defined: 1 (kernel 0, user 1, 1 of them with frames "
				 "unseen: [unknown frames])\n"));
	free(out);
	CHECK(anon_leaf_folds_to(path, ~1 /* C */, 0, 1,
				 "host+0xff;host+0x1ff;main (t.lua:0);? (t.lua:1);string.rep;"
				 "[unknown frames];[anon] 3\n"));
}

/*
 * A helper of the VM (lj_vm_modi, for an integer %) that trace 3 called:
 * its leaf in the VM's code, then the return address in the trace's code.
 * The trace's Lua frames stand for both, as for the trace's own code; the
 * trace's code is no native frame under them.
 */
TEST(report_vm_helper_called_by_a_trace_is_the_traces)
{
	const char *path = rt_path("trace_helper.lp");

	CHECK(anon_leaf_folds_to(path, 3, 0x40000, 2,
				 "host+0xff;host+0x1ff;main (t.lua:0);? (t.lua:1) 3\n"));
}

/*
 * The code the walk stepped over as another JIT's is the process's trace
 * 1 (a root, whose loop a side trace jumped back into, vmstate still
 * naming the side trace 3): trace code, standing for the VM's frame, no
 * gap and no [anon].
 */
TEST(report_gap_over_another_trace_is_trace_code)
{
	const char *path = rt_path("gap_root.lp");

	CHECK(anon_other_folds_to(path, 3, 0x60000, 1, 0x40000 /* holds the leaf */,
				  "host+0xff;host+0x1ff;main (t.lua:0);? (t.lua:1) 3\n"));
	CHECK(anon_other_folds_to(path, 3, 0x60000, 1, 0x48000 /* does not */,
				  "host+0xff;host+0x1ff;main (t.lua:0);? (t.lua:1);"
				  "[unknown frames];[anon] 3\n"));
}

TEST(report_vm_state_pseudo_frames)
{
	const char *path = rt_path("gc.lp");
	char *out = NULL;

	CHECK(write_lua_trace(path, ~2 /* GC */) == 0);
	CHECK(rt_run(cmd_report, &out, NULL, "report", "--format", "folded", path, NULL) == 0);
	CHECK(strstr(out, "string.rep;host+0x100;[GC] 5\n"));
	free(out);
	out = NULL;
	CHECK(write_lua_trace(path, ~4 /* trace recorder */) == 0);
	CHECK(rt_run(cmd_report, &out, NULL, "report", "--format", "folded", path, NULL) == 0);
	CHECK(strstr(out, ";[JIT compiler] 5\n"));
	free(out);
	out = NULL;
	CHECK(write_lua_trace(path, 3 /* compiled trace 3: Lua time */) == 0);
	CHECK(rt_run(cmd_report, &out, NULL, "report", "--format", "folded", path, NULL) == 0);
	CHECK(!strchr(out, '[') || !strstr(out, "[GC]"));
	free(out);
}

TEST(report_vmstate_table)
{
	const char *path = rt_path("vms.lp");
	char *out = NULL;

	CHECK(write_lua_trace(path, ~0 /* interpreted */) == 0);
	CHECK(rt_run(cmd_report, &out, NULL, "report", "--vmstate", path, NULL) == 0);
	CHECK(strstr(out, "100.00%  I  Interpreted"));
	/* The innermost Lua function is work, all interpreted. */
	CHECK(strstr(out, "0.0%  100.0%    0.0%    0.0%    0.0%  work (t.lua:1)"));
	free(out);
}

/* A sample with no Lua frame is host code, but for the collector that
 * the host runs itself (lua_gc()): its state is G, as jit.p counts it. */
TEST(report_vmstate_host_gc)
{
	struct lp_sample s = { .lua_state = LP_LUA_IDLE, .vmstate = ~2 };

	CHECK(vmstate_class(&s) == VMC_GC);
	s.vmstate = ~0;
	CHECK(vmstate_class(&s) == VMC_HOST);
	s.vmstate = 0; /* no VM state read: a thread that never ran Lua */
	CHECK(vmstate_class(&s) == VMC_HOST);
	s.lua_state = LP_LUA_NO_G;
	CHECK(vmstate_class(&s) == VMC_UNKNOWN);
}

/*
 * seedgen.c - writes one small trace that holds every kind of record a
 * report uses, with its references right (a sample's stacks, a mapping's
 * object, a Lua frame's proto, a proto's source, a trace's proto and
 * snapshots, a PUC Lua VM), for the
 * fuzzer's seed corpus (tests/fuzz/seeds.sh): real recordings embed whole
 * symbol tables, tens of KB, where a mutation is slow to try; here the
 * same record types take a few hundred bytes.  Not part of luaprof.
 *
 *   seedgen PATH
 */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "format/trace.h"

#define PUT(w, rec) (trace_write(w, rec) ? (fprintf(stderr, "seedgen: record %d\n", (rec)->type), 1) : 0)

int main(int argc, char **argv)
{
	static const char *const ff[] = { "Lua", "C", "assert", "string.rep" };
	static const uint32_t bc[] = { 0x00000359, 0x00000036, 0x01010042, 0x0001004b };
	static const uint32_t lines[] = { 1, 2, 2, 3 };
	static const struct lp_proto_kstr kstr[] = { { 0, "work" } };
	static const char *const uv[] = { "M" };
	static const uint8_t varinfo[] = { 'x', 0, 0, 4, 0 };
	static const char text[] = "local M = {}\nfunction work() return string.rep('x', 9) end\nwork()\n";
	static const struct lp_lframe lf[] = {
		{ LP_LFRAME_TRACE, 0, 3, 1 }, { LP_LFRAME_FF, 0, 3, 0 },
		{ LP_LFRAME_LUA, 0, 1, 3 }, { LP_LFRAME_C, 1, 0x401020, 0 },
		{ LP_LFRAME_ENTRY, 0, 0, 0 }, { LP_LFRAME_TRUNC, 0, 1, 0 },
	};
	/* Snapshots of trace 1: its base alone; the base and a Lua frame;
	 * one the recorder could not read. */
	static const struct lp_lframe s0[] = { { LP_LFRAME_BASE, 0, 3, 0 } };
	static const struct lp_lframe s1[] = { { LP_LFRAME_BASE, 0, 5, 0 },
					       { LP_LFRAME_LUA, LP_LFRAME_LINK_LUA, 3, 1 } };
	static const struct lp_tsnap tsnaps[] = { { 0, 1, s0 }, { 0x40, 2, s1 }, { 0x80, 0, NULL } };
	static const uint8_t bid[4] = { 0xb1, 0xd0, 0, 7 };
	static const struct lp_objseg segs[] = { { 0, 0x2000, 0x400000 } };
	static const struct lp_objsym syms[] = {
		{ 0x401000, 0x20, "main" }, { 0x401020, 0, "lua_cfunc" }, { 0x401100, 0x10, "leaf" },
	};
	static const char *const strs[] = { "leaf", "main", "app.c" };
	static const struct lp_srcframe fr[] = { { 1, 3, 12 }, { 2, 3, 40 } };
	static const struct lp_srcchain chains[] = { { 0x401000, 1, fr + 1 }, { 0x401100, 2, fr } };
	static const struct lp_ksym ks[] = { { 0xffffffff81000000ull, "do_syscall_64" },
					     { 0xffffffff81000100ull, "read_zero" } };
	struct lp_mapping maps[] = {
		{ 0x400000, 0x402000, 0, LP_PROT_READ | LP_PROT_EXEC, 9, "/srv/app", 1 },
		{ 0x7f0000000000, 0x7f0000001000, 0, LP_PROT_READ | LP_PROT_EXEC, 0, "[vdso]", 0 },
		{ 0x500000, 0x501000, 0, LP_PROT_READ | LP_PROT_EXEC, 0, "", 0 },
		{ 0x700000, 0x701000, 0, LP_PROT_READ | LP_PROT_EXEC, 0, "", 0 },
	};
	uint64_t ustack[] = { 0x401104, 0x500010, 0x401010 }, jstack[] = { 0x700044, 0x401010 },
		 /* Stacks 5 and 6 are written as branches of stack 3. */
		 bstack[] = { 0x401120, 0x500010, 0x401010 },
		 kstack[] = { 0xffffffff81000104ull,
									   0xffffffff81000010ull };
	struct trace_writer *w;
	struct lp_record r;
	int err = 0;

	if (argc != 2)
		return 2;
	unlink(argv[1]);
	if (trace_writer_open(&w, argv[1], LP_CODEC_NONE))
		return 1;
	memset(&r, 0, sizeof(r));
	r.type = LP_REC_META;
	r.u.meta = (struct lp_meta){ "0.1.0", "luaprof record -p 7", "pid: 7", "host", "6.1",
				     "monotonic", 999, 1000, 2000, LP_META_FOLLOW_CHILDREN };
	err |= PUT(w, &r);
	r.type = LP_REC_PROCESS;
	r.u.process = (struct lp_process){ 7, 1, 1000, LP_PROC_EXISTING, "app", "/srv/app" };
	err |= PUT(w, &r);
	r.u.process = (struct lp_process){ 8, 7, 1500, LP_PROC_FORKED, "app", "/srv/app" };
	err |= PUT(w, &r);
	r.type = LP_REC_OBJECT;
	r.u.object = (struct lp_object){ 1, "/srv/app", LP_OBJID_BUILD_ID, 4, bid, 8192 };
	err |= PUT(w, &r);
	r.type = LP_REC_MAPS;
	r.u.maps = (struct lp_maps){ 7, 1000, LP_MAPS_REPLACE, 4, maps };
	err |= PUT(w, &r);
	r.type = LP_REC_LUAJIT;
	r.u.luajit = (struct lp_luajit){ .pid = 7, .G = 0x600000, .vm_start = 0x500000,
					 .vm_end = 0x501000, .flags = LP_LUAJIT_GC64, .name = "LuaJIT",
					 .source = "built in", .nff = 4, .ffnames = ff };
	err |= PUT(w, &r);
	r.type = LP_REC_LUA_SOURCE;
	r.u.lua_source = (struct lp_lua_source){ .id = 5, .chunkname = "@app.lua",
						 .path = "/srv/app.lua", .status = LP_LUASRC_WHOLE,
						 .size = sizeof(text) - 1, .text_len = sizeof(text) - 1,
						 .text = text };
	err |= PUT(w, &r);
	r.type = LP_REC_PROTO;
	r.u.proto = (struct lp_proto){ .id = 1, .addr = 0x610000, .chunkname = "@app.lua",
				       .firstline = 1, .numline = 2, .nbc = 4, .bc = bc,
				       .lines = lines, .nkstr = 1, .kstr = kstr, .nuv = 1,
				       .uvnames = uv, .varinfo = varinfo,
				       .varinfo_len = sizeof(varinfo), .source = 5 };
	err |= PUT(w, &r);
	r.type = LP_REC_TRACE;
	r.u.trace = (struct lp_trace){ 1, 7, 3, 1, 1, 0, 0x700000, 0x100 };
	err |= PUT(w, &r);
	r.type = LP_REC_TRACE_SNAPS;
	r.u.trace_snaps = (struct lp_trace_snaps){ .trace = 1, .bcofs = 0x68,
						   .bcbase = 0x610068 + 4 * 4, .nsnap = 3,
						   .snaps = tsnaps };
	err |= PUT(w, &r);
	r.type = LP_REC_PUC_LUA;
	r.u.puc_lua = (struct lp_puc_lua){ 8, "Lua 5.3.6", "/usr/lib/liblua5.3.so.0" };
	err |= PUT(w, &r);
	r.type = LP_REC_LUA_STACK;
	r.u.lua_stack = (struct lp_lua_stack){ 2, 6, lf };
	err |= PUT(w, &r);
	r.type = LP_REC_STACK;
	r.u.stack = (struct lp_stack){ 3, LP_STACK_USER, 3, ustack };
	err |= PUT(w, &r);
	r.u.stack = (struct lp_stack){ 4, LP_STACK_KERNEL, 2, kstack };
	err |= PUT(w, &r);
	r.u.stack = (struct lp_stack){ 5, LP_STACK_USER, 2, jstack };
	err |= PUT(w, &r);
	r.u.stack = (struct lp_stack){ 6, LP_STACK_USER, 3, bstack };
	err |= PUT(w, &r);
	for (int i = 0; i < 6; i++) {
		r.type = LP_REC_SAMPLE;
		r.u.sample = (struct lp_sample){ .time_ns = 2000 + i * 1000, .pid = 7 + i % 2,
						 .tid = 7 + i % 3, .cpu = i % 2, .kstack = i % 3 ? 4 : 0,
						 .ustack = i % 4 ? 3 : 6, .lstack = i % 2 ? 2 : 0,
						 .vmstate = i % 2 ? 3 : ~i, .lua_state = i % 2 ? 2 : i % 6 };
		err |= PUT(w, &r);
	}
	/* Off-CPU events on the same stacks (one uninterruptible), a
	 * Lua-land wait (a suspended coroutine's frames), a stall, one of
	 * a kind unknown, an allocation standing for many and its inuse. */
	for (int i = 0; i < 7; i++) {
		static const uint32_t kinds[] = { LP_KIND_OFF_CPU, LP_KIND_OFF_CPU,
						  LP_KIND_LUA_WAIT, LP_KIND_STALL, 77,
						  LP_KIND_ALLOC, LP_KIND_INUSE };

		r.type = LP_REC_EVENT;
		r.u.event = (struct lp_event){ .kind = kinds[i], .weight = 1500000u >> i,
					       .count = i >= 5 ? 300 : 1,
					       .s = { .time_ns = 2500 + i * 1000, .pid = 7, .tid = 7,
						      .kstack = 4, .ustack = 3, .lstack = 2,
						      .flags = i ? 0x4 : 0x8, .vmstate = ~1,
						      .lua_state = i == 2 ? 6 : 2 } };
		err |= PUT(w, &r);
	}
	/* A heap snapshot's events: named paths, one name missing. */
	{
		static const struct lp_lframe hf[] = {
			{ LP_LFRAME_NAME, 0, 3, 0 }, { LP_LFRAME_NAME, 0, 2, 0 },
			{ LP_LFRAME_NAME, 0, 1, 0 }, { LP_LFRAME_NAME, 0, 9, 0 },
		};
		static const char *const hn[] = { "_G", "cache", "[table]" };

		for (int i = 0; i < 3; i++) {
			r.type = LP_REC_NAME;
			r.u.name = (struct lp_name){ i + 1, hn[i] };
			err |= PUT(w, &r);
		}
		r.type = LP_REC_LUA_STACK;
		r.u.lua_stack = (struct lp_lua_stack){ 20, 3, hf };
		err |= PUT(w, &r);
		r.u.lua_stack = (struct lp_lua_stack){ 21, 4, hf };
		err |= PUT(w, &r);
		for (int i = 0; i < 2; i++) {
			r.type = LP_REC_EVENT;
			r.u.event = (struct lp_event){ .kind = LP_KIND_HEAP, .weight = 4096 << i,
						       .count = 3 + i,
						       .s = { .time_ns = 7500, .pid = 7, .tid = 7,
							      .lstack = 20 + i, .vmstate = ~1,
							      .lua_state = 2 } };
			err |= PUT(w, &r);
		}
	}
	r.type = LP_REC_SAMPLE;
	/* In trace 1's machine code, in its second snapshot. */
	r.u.sample = (struct lp_sample){ .time_ns = 8000, .pid = 7, .tid = 7, .ustack = 5,
					 .lstack = 2, .vmstate = 0, .lua_state = 2 };
	err |= PUT(w, &r);
	r.type = LP_REC_LOST;
	r.u.lost = (struct lp_lost){ 9000, 2, LP_LOST_RINGBUF };
	err |= PUT(w, &r);
	r.type = LP_REC_EXIT;
	r.u.exit = (struct lp_exit){ 8, 9500 };
	err |= PUT(w, &r);
	r.type = LP_REC_KSYMS;
	r.u.ksyms = (struct lp_ksyms){ 2, ks };
	err |= PUT(w, &r);
	r.type = LP_REC_SYMTAB;
	r.u.symtab = (struct lp_symtab){ 1, 1, segs, 3, syms };
	err |= PUT(w, &r);
	r.type = LP_REC_SRCLINES;
	r.u.srclines = (struct lp_srclines){ 1, 0, 3, strs, 2, chains };
	err |= PUT(w, &r);
	return trace_writer_close(w, NULL) || err;
}

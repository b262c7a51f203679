/*
 * luajit_layouts.c - the table of LuaJIT builds luaprof can walk without
 * debug info, and the cheap static test that tells their reference width
 * apart.  Every LuaJIT build has its own struct offsets; the BPF walker
 * gets them as a struct lj_layout, and builtins are named by the build's
 * fast-function ids, which differ between LuaJIT variants.
 *
 * The rows come from Debian bookworm's two x86_64 LuaJIT builds:
 * luajit/libluajit-5.1-2 2.1.0~beta3+git20220320+dfsg-4.1+deb12u1
 * (upstream LuaJIT 2.1) and luajit2/libluajit2-5.1-2 2.1-20230119-1
 * (OpenResty's luajit2).  Both are GC64; the non-GC64 rows describe the
 * same sources built with -DLUAJIT_DISABLE_GC64, which the end-to-end
 * tests build with tests/luajit-variants.sh.  Each source was built the
 * way its debian/rules does (`make amalg` with dpkg-buildflags) plus -g,
 * with and without GC64, and a probe compiled against LuaJIT's internal
 * headers (lj_obj.h, lj_frame.h, lj_dispatch.h, lj_jit.h, lj_ff.h) with
 * the same defines printed every offsetof, sizeof and constant below and
 * in the last two columns of bpf/luajit_layout.h's LJ_LAYOUTDEF
 * (GCtrace and SnapShot too, with lj_ir.h for luajit_snaps.c's IR).  The
 * fast-function names are buildvm's jit/vmdef.lua of those builds, which is
 * identical to the one each Debian package ships.  The GC64 builds' .text
 * and .rodata are byte for byte those of the Debian objects, so the flags
 * are Debian's.
 *
 * The rows were then checked against the stripped Debian objects
 * themselves: each Debian `luajit -joff` and each Debian libluajit (loaded
 * by a small dlopen host) ran an interpreted busy loop, gdb attached, read
 * DISPATCH from r14 and, with G = r14 - g2disp, found mainthref == G -
 * gg_g, cur_L->glref == G, vmstate == ~0 (interpreting), L->cframe == rsp
 * with the cframe's saved L == L, and the running closure's proto (via
 * fn_pc and pt_size) with its bytecode around rbx (PC) and the expected
 * chunk name (pt_chunkname, str_len, str_size).  The non-GC64 rows passed
 * the same check on the non-GC64 executables of tests/luajit-variants.sh.
 * Every builtin reachable from the standard libraries printed as
 * "builtin#ID" with the ID this table gives its name, in all four.
 * Statically, lj_vm_call's prologue in the stripped objects (lua_call
 * tail-jumps to it) does "add r14, g2disp" and stores L and ~0 at the
 * cur_L and vmstate offsets, agreeing.
 *
 * The rows are x86-64's.  The same sources on arm64 (Debian's arm64
 * packages, and cross-builds with DWARF: tests/luajit-arm64.sh) have the
 * same offsets but for jit_State, 24 bytes shorter before its trace
 * array, so g2disp and j_trace are 24 less (g2disp 3944, 3984, 3992 for
 * bookworm's luajit, luajit2 and trixie's; j_trace 360), and arm64's C
 * frame (luajit_arch.h).  arm64 layouts come from the code, never from
 * these rows, which name builtins there and nothing more.
 */
#include <errno.h>
#include <stdint.h>
#include <string.h>

#include "record/luajit_layouts.h"

/*
 * The offsets shared by upstream and OpenResty, for each reference width,
 * are the last two columns of bpf/luajit_layout.h's list: the two variants differ
 * only in the size of lua_State, global_State and jit_State, i.e. in gg_g,
 * g2disp and g2j, which each row gives.  Without GC64 a GCRef or MRef is 4
 * bytes, but some fields stay 8: L->base and L->top are TValue pointers,
 * L->cframe and the cframe's prev link are void pointers, fn_f is a C
 * function pointer and fn_upvalue holds 8-byte TValues.  SnapShot
 * (lj_jit.h) is the same in all four: { u32 mapofs; IRRef1 ref; u16 mcofs;
 * u8 nslots, topslot, nent, count; }; releases before 2020 had no mcofs
 * and a u16 mapofs: DWARF tells them apart.
 */
#define LJ_COMMON_GC64(type, name, group, from, str, member, width, gc64, nogc64) \
	LJ_COMMON_##from(name, gc64)
#define LJ_COMMON_NOGC64(type, name, group, from, str, member, width, gc64, nogc64) \
	LJ_COMMON_##from(name, nogc64)
#define LJ_COMMON_M(f, v) .f = v,
#define LJ_COMMON_SIZE(f, v) .f = v,
#define LJ_COMMON_FRAME(f, v) .f = v,
#define LJ_COMMON_FF(f, v) .f = v,
#define LJ_COMMON_GG(f, v)    /* each row's own */
#define LJ_COMMON_FLAGS(f, v) /* each row's own */
#define LJ_COMMON_NONE(f, v)
#define LJ_GC64_COMMON LJ_LAYOUTDEF(LJ_COMMON_GC64)
#define LJ_NOGC64_COMMON LJ_LAYOUTDEF(LJ_COMMON_NOGC64)

/*
 * Fast-function names by id.  Index 0 is a Lua function, 1 a C function;
 * the rest are the builtins in the order buildvm numbered them.  OpenResty
 * inserts thread.exdata and thread.exdata2 after coroutine.wrap (37) and
 * four table functions and jit.prngstate later, so from id 38 on the same
 * id names different builtins in the two variants.  GC64 does not change
 * the numbering.
 */
/* Upstream's builtins in three pieces, so that tarantool's fork, which
 * has neither jit.security (147 upstream) nor the string buffer library
 * (204 on), is the same list with two pieces left out. */
#define LJ_FF_UPSTREAM_TO_JIT_STATUS \
	/*   0 */ "Lua", "C", "assert", "type", "next", "pairs", "ipairs_aux", \
	/*   7 */ "ipairs", "getmetatable", "setmetatable", "getfenv", \
	/*  11 */ "setfenv", "rawget", "rawset", "rawequal", "unpack", \
	/*  16 */ "select", "tonumber", "tostring", "error", "pcall", "xpcall", \
	/*  22 */ "loadfile", "load", "loadstring", "dofile", "gcinfo", \
	/*  27 */ "collectgarbage", "newproxy", "print", "coroutine.status", \
	/*  31 */ "coroutine.running", "coroutine.isyieldable", \
	/*  33 */ "coroutine.create", "coroutine.yield", "coroutine.resume", \
	/*  36 */ "coroutine.wrap_aux", "coroutine.wrap", "math.abs", \
	/*  39 */ "math.floor", "math.ceil", "math.sqrt", "math.log10", \
	/*  43 */ "math.exp", "math.sin", "math.cos", "math.tan", "math.asin", \
	/*  48 */ "math.acos", "math.atan", "math.sinh", "math.cosh", \
	/*  52 */ "math.tanh", "math.frexp", "math.modf", "math.log", \
	/*  56 */ "math.atan2", "math.pow", "math.fmod", "math.ldexp", \
	/*  60 */ "math.min", "math.max", "math.random", "math.randomseed", \
	/*  64 */ "bit.tobit", "bit.bnot", "bit.bswap", "bit.lshift", \
	/*  68 */ "bit.rshift", "bit.arshift", "bit.rol", "bit.ror", \
	/*  72 */ "bit.band", "bit.bor", "bit.bxor", "bit.tohex", \
	/*  76 */ "string.byte", "string.char", "string.sub", "string.rep", \
	/*  80 */ "string.reverse", "string.lower", "string.upper", \
	/*  83 */ "string.dump", "string.find", "string.match", \
	/*  86 */ "string.gmatch_aux", "string.gmatch", "string.gsub", \
	/*  89 */ "string.format", "table.maxn", "table.insert", \
	/*  92 */ "table.concat", "table.sort", "table.new", "table.clear", \
	/*  96 */ "io.method.close", "io.method.read", "io.method.write", \
	/*  99 */ "io.method.flush", "io.method.seek", "io.method.setvbuf", \
	/* 102 */ "io.method.lines", "io.method.__gc", "io.method.__tostring", \
	/* 105 */ "io.open", "io.popen", "io.tmpfile", "io.close", "io.read", \
	/* 110 */ "io.write", "io.flush", "io.input", "io.output", "io.lines", \
	/* 115 */ "io.type", "os.execute", "os.remove", "os.rename", \
	/* 119 */ "os.tmpname", "os.getenv", "os.exit", "os.clock", "os.date", \
	/* 124 */ "os.time", "os.difftime", "os.setlocale", \
	/* 127 */ "debug.getregistry", "debug.getmetatable", \
	/* 129 */ "debug.setmetatable", "debug.getfenv", "debug.setfenv", \
	/* 132 */ "debug.getinfo", "debug.getlocal", "debug.setlocal", \
	/* 135 */ "debug.getupvalue", "debug.setupvalue", "debug.upvalueid", \
	/* 138 */ "debug.upvaluejoin", "debug.sethook", "debug.gethook", \
	/* 141 */ "debug.debug", "debug.traceback", "jit.on", "jit.off", \
	/* 145 */ "jit.flush", "jit.status"
#define LJ_FF_UPSTREAM_JIT_ATTACH_TO_FFI_LOAD \
	/* 148 */ "jit.attach", \
	/* 149 */ "jit.util.funcinfo", "jit.util.funcbc", "jit.util.funck", \
	/* 152 */ "jit.util.funcuvname", "jit.util.traceinfo", \
	/* 154 */ "jit.util.traceir", "jit.util.tracek", "jit.util.tracesnap", \
	/* 157 */ "jit.util.tracemc", "jit.util.traceexitstub", \
	/* 159 */ "jit.util.ircalladdr", "jit.opt.start", "jit.profile.start", \
	/* 162 */ "jit.profile.stop", "jit.profile.dumpstack", \
	/* 164 */ "ffi.meta.__index", "ffi.meta.__newindex", "ffi.meta.__eq", \
	/* 167 */ "ffi.meta.__len", "ffi.meta.__lt", "ffi.meta.__le", \
	/* 170 */ "ffi.meta.__concat", "ffi.meta.__call", "ffi.meta.__add", \
	/* 173 */ "ffi.meta.__sub", "ffi.meta.__mul", "ffi.meta.__div", \
	/* 176 */ "ffi.meta.__mod", "ffi.meta.__pow", "ffi.meta.__unm", \
	/* 179 */ "ffi.meta.__tostring", "ffi.meta.__pairs", \
	/* 181 */ "ffi.meta.__ipairs", "ffi.clib.__index", \
	/* 183 */ "ffi.clib.__newindex", "ffi.clib.__gc", "ffi.callback.free", \
	/* 186 */ "ffi.callback.set", "ffi.cdef", "ffi.new", "ffi.cast", \
	/* 190 */ "ffi.typeof", "ffi.typeinfo", "ffi.istype", "ffi.sizeof", \
	/* 194 */ "ffi.alignof", "ffi.offsetof", "ffi.errno", "ffi.string", \
	/* 198 */ "ffi.copy", "ffi.fill", "ffi.abi", "ffi.metatype", "ffi.gc", \
	/* 203 */ "ffi.load"
#define LJ_FF_UPSTREAM_BUFFER \
	/* 204 */ "buffer.method.free", "buffer.method.reset", \
	/* 206 */ "buffer.method.skip", "buffer.method.set", \
	/* 208 */ "buffer.method.put", "buffer.method.putf", \
	/* 210 */ "buffer.method.get", "buffer.method.putcdata", \
	/* 212 */ "buffer.method.reserve", "buffer.method.commit", \
	/* 214 */ "buffer.method.ref", "buffer.method.encode", \
	/* 216 */ "buffer.method.decode", "buffer.method.__gc", \
	/* 218 */ "buffer.method.__tostring", "buffer.method.__len", \
	/* 220 */ "buffer.new", "buffer.encode", "buffer.decode"

static const char *const upstream_ffnames[] = {
	LJ_FF_UPSTREAM_TO_JIT_STATUS, "jit.security",
	LJ_FF_UPSTREAM_JIT_ATTACH_TO_FFI_LOAD, LJ_FF_UPSTREAM_BUFFER,
};

/* Ids from 147 on are one less than upstream's. */
static const char *const tarantool_ffnames[] = {
	LJ_FF_UPSTREAM_TO_JIT_STATUS, LJ_FF_UPSTREAM_JIT_ATTACH_TO_FFI_LOAD,
};

static const char *const openresty_ffnames[] = {
	/*   0 */ "Lua", "C", "assert", "type", "next", "pairs", "ipairs_aux",
	/*   7 */ "ipairs", "getmetatable", "setmetatable", "getfenv",
	/*  11 */ "setfenv", "rawget", "rawset", "rawequal", "unpack",
	/*  16 */ "select", "tonumber", "tostring", "error", "pcall", "xpcall",
	/*  22 */ "loadfile", "load", "loadstring", "dofile", "gcinfo",
	/*  27 */ "collectgarbage", "newproxy", "print", "coroutine.status",
	/*  31 */ "coroutine.running", "coroutine.isyieldable",
	/*  33 */ "coroutine.create", "coroutine.yield", "coroutine.resume",
	/*  36 */ "coroutine.wrap_aux", "coroutine.wrap", "thread.exdata",
	/*  39 */ "thread.exdata2", "math.abs", "math.floor", "math.ceil",
	/*  43 */ "math.sqrt", "math.log10", "math.exp", "math.sin",
	/*  47 */ "math.cos", "math.tan", "math.asin", "math.acos",
	/*  51 */ "math.atan", "math.sinh", "math.cosh", "math.tanh",
	/*  55 */ "math.frexp", "math.modf", "math.log", "math.atan2",
	/*  59 */ "math.pow", "math.fmod", "math.ldexp", "math.min",
	/*  63 */ "math.max", "math.random", "math.randomseed", "bit.tobit",
	/*  67 */ "bit.bnot", "bit.bswap", "bit.lshift", "bit.rshift",
	/*  71 */ "bit.arshift", "bit.rol", "bit.ror", "bit.band", "bit.bor",
	/*  76 */ "bit.bxor", "bit.tohex", "string.byte", "string.char",
	/*  80 */ "string.sub", "string.rep", "string.reverse", "string.lower",
	/*  84 */ "string.upper", "string.dump", "string.find", "string.match",
	/*  88 */ "string.gmatch_aux", "string.gmatch", "string.gsub",
	/*  91 */ "string.format", "table.maxn", "table.insert",
	/*  94 */ "table.concat", "table.clone", "table.isarray",
	/*  97 */ "table.nkeys", "table.isempty", "table.sort", "table.new",
	/* 101 */ "table.clear", "io.method.close", "io.method.read",
	/* 104 */ "io.method.write", "io.method.flush", "io.method.seek",
	/* 107 */ "io.method.setvbuf", "io.method.lines", "io.method.__gc",
	/* 110 */ "io.method.__tostring", "io.open", "io.popen", "io.tmpfile",
	/* 114 */ "io.close", "io.read", "io.write", "io.flush", "io.input",
	/* 119 */ "io.output", "io.lines", "io.type", "os.execute",
	/* 123 */ "os.remove", "os.rename", "os.tmpname", "os.getenv",
	/* 127 */ "os.exit", "os.clock", "os.date", "os.time", "os.difftime",
	/* 132 */ "os.setlocale", "debug.getregistry", "debug.getmetatable",
	/* 135 */ "debug.setmetatable", "debug.getfenv", "debug.setfenv",
	/* 138 */ "debug.getinfo", "debug.getlocal", "debug.setlocal",
	/* 141 */ "debug.getupvalue", "debug.setupvalue", "debug.upvalueid",
	/* 144 */ "debug.upvaluejoin", "debug.sethook", "debug.gethook",
	/* 147 */ "debug.debug", "debug.traceback", "jit.on", "jit.off",
	/* 151 */ "jit.flush", "jit.status", "jit.security", "jit.attach",
	/* 155 */ "jit.prngstate", "jit.util.funcinfo", "jit.util.funcbc",
	/* 158 */ "jit.util.funck", "jit.util.funcuvname",
	/* 160 */ "jit.util.traceinfo", "jit.util.traceir", "jit.util.tracek",
	/* 163 */ "jit.util.tracesnap", "jit.util.tracemc",
	/* 165 */ "jit.util.traceexitstub", "jit.util.ircalladdr",
	/* 167 */ "jit.opt.start", "jit.profile.start", "jit.profile.stop",
	/* 170 */ "jit.profile.dumpstack", "ffi.meta.__index",
	/* 172 */ "ffi.meta.__newindex", "ffi.meta.__eq", "ffi.meta.__len",
	/* 175 */ "ffi.meta.__lt", "ffi.meta.__le", "ffi.meta.__concat",
	/* 178 */ "ffi.meta.__call", "ffi.meta.__add", "ffi.meta.__sub",
	/* 181 */ "ffi.meta.__mul", "ffi.meta.__div", "ffi.meta.__mod",
	/* 184 */ "ffi.meta.__pow", "ffi.meta.__unm", "ffi.meta.__tostring",
	/* 187 */ "ffi.meta.__pairs", "ffi.meta.__ipairs", "ffi.clib.__index",
	/* 190 */ "ffi.clib.__newindex", "ffi.clib.__gc", "ffi.callback.free",
	/* 193 */ "ffi.callback.set", "ffi.cdef", "ffi.new", "ffi.cast",
	/* 197 */ "ffi.typeof", "ffi.typeinfo", "ffi.istype", "ffi.sizeof",
	/* 201 */ "ffi.alignof", "ffi.offsetof", "ffi.errno", "ffi.string",
	/* 205 */ "ffi.copy", "ffi.fill", "ffi.abi", "ffi.metatype", "ffi.gc",
	/* 210 */ "ffi.load", "buffer.method.free", "buffer.method.reset",
	/* 213 */ "buffer.method.skip", "buffer.method.set",
	/* 215 */ "buffer.method.put", "buffer.method.putf",
	/* 217 */ "buffer.method.get", "buffer.method.putcdata",
	/* 219 */ "buffer.method.reserve", "buffer.method.commit",
	/* 221 */ "buffer.method.ref", "buffer.method.encode",
	/* 223 */ "buffer.method.decode", "buffer.method.__gc",
	/* 225 */ "buffer.method.__tostring", "buffer.method.__len",
	/* 227 */ "buffer.new", "buffer.encode", "buffer.decode",
};

#define LJ_NAMES(a) .ffnames = a, .nffnames = sizeof(a) / sizeof(a[0])

const struct lj_build_desc lj_builds[] = {
	{
		.name = "upstream-gc64",
		.flags = LJ_LAYOUT_GC64,
		.layout = { .flags = LJ_LAYOUT_GC64,
			    .g2disp = 3968, .gg_g = 96, .g2j = 728, LJ_GC64_COMMON },
		LJ_NAMES(upstream_ffnames),
	},
	{
		.name = "upstream-nogc64",
		.flags = 0,
		.layout = { .flags = 0,
			    .g2disp = 3176, .gg_g = 64, .g2j = 488, LJ_NOGC64_COMMON },
		LJ_NAMES(upstream_ffnames),
	},
	{
		/*
		 * lua_State gains exdata and exdata2 (gg_g + 16),
		 * global_State saved_jit_base and jit_State a PRNG state
		 * (g2disp + 40).
		 */
		.name = "openresty-gc64",
		.flags = LJ_LAYOUT_GC64 | LJ_LAYOUT_OPENRESTY,
		.layout = { .flags = LJ_LAYOUT_GC64 | LJ_LAYOUT_OPENRESTY,
			    .g2disp = 4008, .gg_g = 112, .g2j = 736, LJ_GC64_COMMON },
		LJ_NAMES(openresty_ffnames),
	},
	{
		.name = "openresty-nogc64",
		.flags = LJ_LAYOUT_OPENRESTY,
		.layout = { .flags = LJ_LAYOUT_OPENRESTY,
			    .g2disp = 3216, .gg_g = 80, .g2j = 496, LJ_NOGC64_COMMON },
		LJ_NAMES(openresty_ffnames),
	},
	{
		/*
		 * tarantool's fork of LuaJIT 2.1 (Debian bookworm's
		 * tarantool 2.6.0-1.2+b1, linked into /usr/bin/tarantool),
		 * 32-bit references: the same variant as upstream-nogc64 by
		 * its exports and lua_gettop, told apart by its interpreter's
		 * "add r14d, 3144" (G to DISPATCH).  Read from the DWARF in
		 * that executable by luajit_dwarf.c; GCstr lost 4 bytes,
		 * global_State's fields moved, jit_State shrank by 40.  The
		 * e2e test app_tarantool.sh records a copy stripped of its
		 * DWARF with this row and checks names and trace lines.
		 */
		.name = "tarantool-2.6-nogc64",
		.flags = 0,
		.layout = { .flags = 0, .g2disp = 3144, .gg_g = 64, .ref_size = 4,
			    .g_vmstate = 120, .g_mainthref = 160, .g_cur_L = 280,
			    .g_jit_base = 284,
			    .l_glref = 8, .l_base = 16, .l_top = 24, .l_stack = 36,
			    .l_maxstack = 32, .l_cframe = 48,
			    .fn_ffid = 6, .fn_pc = 16, .fn_f = 24, .fn_upvalue = 32,
			    .pt_size = 64, .pt_sizebc = 8, .pt_k = 16, .pt_sizekgc = 24,
			    .pt_sizekn = 28, .pt_sizept = 32, .pt_numparams = 6,
			    .pt_framesize = 7, .pt_sizeuv = 36, .pt_flags = 37,
			    .pt_chunkname = 40, .pt_firstline = 44, .pt_numline = 48,
			    .pt_lineinfo = 52, .pt_uvinfo = 56, .pt_varinfo = 60,
			    .str_len = 12, .str_size = 16,
			    .cf_l = 24, .cf_pc = 28, .cf_prev = 32, .cf_size = 80,
			    .ffid_coroutine_resume = 35, .ffid_coroutine_wrap_aux = 36,
			    .g2j = 448, .j_trace = 368, .j_sizetrace = 380,
			    .tr_startpt = 48, .tr_startpc = 52, .tr_mcode = 64,
			    .tr_szmcode = 60, .tr_root = 84, .tr_traceno = 80 },
		LJ_NAMES(tarantool_ffnames),
	},
};

const size_t lj_nbuilds = sizeof(lj_builds) / sizeof(lj_builds[0]);

const struct lj_build_desc *lj_known_build(uint32_t flags)
{
	for (size_t i = 0; i < lj_nbuilds; i++)
		if (lj_builds[i].flags == flags)
			return &lj_builds[i];
	return NULL;
}

#define IN_DWARF_M 1
#define IN_DWARF_SIZE 1
#define IN_DWARF_GG 1
#define IN_DWARF_FLAGS 1
#define IN_DWARF_FF 1
#define IN_DWARF_FRAME 0
#define IN_DWARF_NONE 0
#define FIELD_DESC(type, name, group, from, ...) \
	[LJF_##name] = { #name, offsetof(struct lj_layout, name), \
			 sizeof(((struct lj_layout *)0)->name), LJG_##group, IN_DWARF_##from },
const struct lj_field_desc lj_fields[LJF__N] = {
	LJ_LAYOUTDEF(FIELD_DESC)
};
#undef FIELD_DESC

long long lj_field_get(const struct lj_layout *lo, enum lj_field f)
{
	const char *p = (const char *)lo + lj_fields[f].off;
	uint32_t u32;
	uint16_t u16;

	switch (lj_fields[f].size) {
	case 1:
		return *(const uint8_t *)p;
	case 2:
		memcpy(&u16, p, 2);
		return u16;
	default:
		memcpy(&u32, p, 4);
		return f == LJF_g2disp ? (long long)(int32_t)u32 : (long long)u32;
	}
}

int lj_field_fits(enum lj_field f, long long value)
{
	if (f == LJF_g2disp)
		return value >= INT32_MIN && value <= INT32_MAX;
	return value >= 0 && (unsigned long long)value < 1ull << (8 * lj_fields[f].size);
}

void lj_field_set(struct lj_layout *lo, enum lj_field f, long long value)
{
	memcpy((char *)lo + lj_fields[f].off, &value, lj_fields[f].size);
}

const char *lj_ffname(const struct lj_build_desc *b, uint32_t ffid)
{
	if (!b || ffid >= b->nffnames)
		return NULL;
	return b->ffnames[ffid];
}

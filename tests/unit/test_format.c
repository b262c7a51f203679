/*
 * test_format.c - unit tests of the trace format library (format/): the
 * byte encodings of codec.c, and writer/reader round trips of every record
 * type under every codec, across chunks, and through write errors.  The
 * reader's handling of damaged, foreign and hand-made files is tested in
 * test_format_damage.c.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "format/codec.h"
#include "format/trace.h"
#include "tests/unit/format_util.h"
#include "tests/unit/unit.h"

/* ---- encodings --------------------------------------------------------- */

static int uv_bytes(const uint8_t *p, size_t n, uint64_t *v)
{
	struct lp_cursor c = { p, p + n };
	int err = lp_get_uv(&c, v);

	/* A successful decode must consume exactly the encoding given. */
	return err ? err : (c.p == p + n ? 0 : -1);
}

TEST(varint_edges)
{
	static const uint64_t values[] = { 0, 1, 127, 128, 255, 16383, 16384,
					   UINT32_MAX, 1ull << 63, UINT64_MAX };
	static const size_t sizes[] = { 1, 1, 1, 2, 2, 2, 3, 5, 10, 10 };
	uint8_t buf[LP_UV_MAX];
	uint64_t v;
	size_t i, n;

	for (i = 0; i < ARRAY_SIZE(values); i++) {
		n = lp_uv_encode(buf, values[i]);
		CHECK(n == sizes[i]);
		CHECK(uv_bytes(buf, n, &v) == 0 && v == values[i]);
		/* Every proper prefix is a truncated varint. */
		while (n-- > 0)
			CHECK(uv_bytes(buf, n, &v) == -EBADMSG);
	}
	CHECK(lp_uv_encode(buf, 128) == 2 && buf[0] == 0x80 && buf[1] == 0x01);
	CHECK(lp_uv_encode(buf, UINT64_MAX) == 10 && buf[9] == 0x01);

	/* Overlong spellings of 0 and 1, an 11-byte run, a tenth byte with
	 * bits beyond 2^64, and nothing at all are all refused. */
	CHECK(uv_bytes((const uint8_t *)"\x80\x00", 2, &v) == -EBADMSG);
	CHECK(uv_bytes((const uint8_t *)"\x81\x80\x00", 3, &v) == -EBADMSG);
	CHECK(uv_bytes((const uint8_t *)"\xff\xff\xff\xff\xff\xff\xff\xff\xff\x02",
		       10, &v) == -EBADMSG);
	CHECK(uv_bytes((const uint8_t *)"\xff\xff\xff\xff\xff\xff\xff\xff\xff\x81\x00",
		       11, &v) == -EBADMSG);
	CHECK(uv_bytes((const uint8_t *)"\x80\x80\x80\x80\x80\x80\x80\x80\x80\x00",
		       10, &v) == -EBADMSG);
	CHECK(uv_bytes(buf, 0, &v) == -EBADMSG);
}

TEST(zigzag_and_fixed)
{
	static const int64_t values[] = { 0, -1, 1, -2, 2, INT64_MAX, INT64_MIN };
	static const uint64_t zz[] = { 0, 1, 2, 3, 4, UINT64_MAX - 1, UINT64_MAX };
	struct lp_buf b = { 0 };
	struct lp_cursor c;
	const uint8_t *s;
	uint16_t u16;
	uint32_t u32;
	int64_t sv;
	size_t i, n;

	for (i = 0; i < ARRAY_SIZE(values); i++) {
		CHECK(lp_zigzag(values[i]) == zz[i]);
		CHECK(lp_unzigzag(zz[i]) == values[i]);
	}
	CHECK(lp_put_sv(&b, INT64_MIN) == 0 && lp_put_u16(&b, 0x1234) == 0 &&
	      lp_put_u32(&b, 0xdeadbeef) == 0 && lp_put_str(&b, "") == 0 &&
	      lp_put_str(&b, "a\xff") == 0 && lp_put_uv(&b, 1ull << 32) == 0);
	c = (struct lp_cursor){ b.data, b.data + b.len };
	CHECK(lp_get_sv(&c, &sv) == 0 && sv == INT64_MIN);
	CHECK(c.p[0] == 0x34 && c.p[1] == 0x12);
	CHECK(lp_get_u16(&c, &u16) == 0 && u16 == 0x1234);
	CHECK(lp_get_u32(&c, &u32) == 0 && u32 == 0xdeadbeef);
	CHECK(lp_get_str(&c, &s, &n) == 0 && n == 0);
	CHECK(lp_get_str(&c, &s, &n) == 0 && n == 2 && !memcmp(s, "a\xff", 2));
	CHECK(lp_get_uv32(&c, &u32) == -EBADMSG); /* 2^32 does not fit */
	CHECK(lp_cursor_left(&c) == 5);
	c.p = c.end;
	CHECK(lp_get_u16(&c, &u16) == -EBADMSG && lp_get_u32(&c, &u32) == -EBADMSG);
	/* A string longer than what is left is refused, cursor unmoved. */
	c = (struct lp_cursor){ (const uint8_t *)"\x05" "abcd", NULL };
	c.end = c.p + 5;
	CHECK(lp_get_str(&c, &s, &n) == -EBADMSG && lp_cursor_left(&c) == 5);
	lp_buf_free(&b);
}

TEST(codecs_and_names)
{
	static char src[20000];
	char packed[40000], out[20000];
	enum lp_codec codec;
	size_t i, n;

	for (i = 0; i < sizeof(src); i++)
		src[i] = (char)(i % 251 < 100 ? 'x' : i * 7);
	for (i = 0; i < ARRAY_SIZE(fmt_codecs); i++) {
		codec = fmt_codecs[i];
		CHECK(lp_compress_bound(codec, LP_CHUNK_MAX_RAW) <= LP_CHUNK_MAX_STORED);
		CHECK(lp_compress(codec, src, sizeof(src), packed, sizeof(packed), &n) == 0);
		CHECK(lp_decompress(codec, packed, n, out, sizeof(src)) == 0);
		CHECK(!memcmp(src, out, sizeof(src)));
		/* The size from the chunk header must match exactly. */
		CHECK(lp_decompress(codec, packed, n, out, sizeof(src) - 1) != 0);
		CHECK(lp_decompress(codec, packed, n - 1, out, sizeof(src)) != 0);
		CHECK(!strcmp(lp_codec_name(codec), i == 0 ? "none" : i == 1 ? "lz4" : "zlib"));
		CHECK(lp_codec_parse(lp_codec_name(codec), &codec) == 0 &&
		      codec == fmt_codecs[i]);
	}
	CHECK(lp_codec_parse("gzip", &codec) == -EINVAL);
	CHECK(!strcmp(lp_codec_name((enum lp_codec)7), "unknown"));
	CHECK(!strcmp(lp_record_name(LP_REC_MAPS), "maps"));
	CHECK(!strcmp(lp_record_name(LP_REC_DEBUG_RETIRED), "debug"));
	/* Every type of LP_RECDEF has a name of its own. */
	{
		static const struct { enum lp_record_type type; const char *name; } types[] = {
#define TYPE(T, name, num, kind) { LP_REC_##T, #name },
			LP_RECDEF(TYPE)
#undef TYPE
		};

		for (size_t i = 0; i < ARRAY_SIZE(types); i++) {
			CHECK(!strcmp(lp_record_name(types[i].type), types[i].name));
			for (size_t k = 0; k < i; k++)
				CHECK(types[k].type != types[i].type &&
				      strcmp(types[k].name, types[i].name));
		}
	}
	CHECK(!strcmp(lp_record_name((enum lp_record_type)0), "unknown"));
	CHECK(!strcmp(lp_record_name((enum lp_record_type)99), "unknown"));
}

/* ---- round trips --------------------------------------------------------- */

static struct lp_mapping many_maps[1000];
static uint64_t deep_addrs[LP_STACK_MAX_DEPTH];
static uint64_t kernel_addrs[64];
static struct lp_ksym ksyms[500];
static char ksym_names[500][32];

/* Fills the arrays the records below point to: odd values on purpose. */
static void make_arrays(void)
{
	static const char *paths[] = {
		"", "/usr/lib/x86_64-linux-gnu/liblua5.4.so.0", "[vdso]",
		"/tmp/odd \n\t\"name\xc3\xa9\xff",
	};
	uint64_t start;
	size_t i;

	for (i = 0; i < ARRAY_SIZE(many_maps); i++) {
		start = 0x400000ull + i * 0x10000;
		many_maps[i] = (struct lp_mapping){
			.start = start, .end = start + 0x1000 * (i % 5),
			.pgoff = i * 4096, .prot = (uint32_t)(i % 8),
			.inode = i * 7919ull, .path = paths[i % 4],
			.object = i % 3 ? i * 1000003ull : 0,
		};
	}
	many_maps[999].start = 0xffffffffff600000ull;
	many_maps[999].end = 0xffffffffff601000ull;
	/* Addresses that jump up and down, by a little and by a lot. */
	for (i = 0; i < ARRAY_SIZE(deep_addrs); i++)
		deep_addrs[i] = i % 3 == 0 ? 0x7fff00000000ull - i * 16 :
				i % 3 == 1 ? 0x555555554000ull + i :
				i % 7 ? 1 : 0;
	deep_addrs[5] = UINT64_MAX; /* no user address is, but deltas wrap */
	for (i = 0; i < ARRAY_SIZE(kernel_addrs); i++)
		kernel_addrs[i] = UINT64_MAX -
				  (i % 2 ? i * 0x1234 : 0x7e000000ull + i);
	for (i = 0; i < ARRAY_SIZE(ksyms); i++) {
		snprintf(ksym_names[i], sizeof(ksym_names[i]), "sym_%zu", i);
		if (i % 50 == 0)
			ksym_names[i][0] = '\0'; /* an empty name now and then */
		/* Pairs share an address, as kernel aliases do. */
		ksyms[i].addr = 0xffffffff81000000ull + (i / 2) * 0x40;
		ksyms[i].name = ksym_names[i];
	}
	ksyms[499].addr = UINT64_MAX;
}

/* Objects and their embedded symbol tables: a build-id holding NUL
 * bytes, an object without segments or symbols, and symbol addresses up
 * to the top of the address space with aliases' neighbours. */
static const char *const src_strs[] = { "mix", "../sysdeps/x86_64/read.c", "", "step" };
static const struct lp_srcframe src_frames[LP_SRCLINES_MAX_FRAMES] = {
	{ 1, 2, 41 }, { 4, 2, UINT32_MAX }, { 0, 0, 0 }, { 3, 3, 1 },
};
static const struct lp_srcchain src_chains[] = {
	{ 0, 1, src_frames },
	{ 0x401000, 2, src_frames },
	{ 0x401001, LP_SRCLINES_MAX_FRAMES, src_frames },
	{ UINT64_MAX, 1, src_frames + 3 },
};

static size_t make_object_records(struct lp_record *r)
{
	static const uint8_t bid[20] = { 0x93, 0, 0x61, 0xec, 0, 0, 0xff, 1 };
	static const uint8_t hash[8] = { 1, 2, 3, 4, 5, 6, 7, 8 };
	static const struct lp_objseg segs[] = {
		{ 0, 0x1000, 0 }, { 0x1000, 0x2345, 0x401000 }, { 0x4000, 0, UINT64_MAX },
	};
	static struct lp_objsym syms[300];
	static char names[300][24];
	size_t n = 0;

	for (size_t i = 0; i < ARRAY_SIZE(syms); i++) {
		if (i % 7) /* else an empty name */
			snprintf(names[i], sizeof(names[i]), "fn_%zu", i);
		else
			names[i][0] = '\0';
		syms[i] = (struct lp_objsym){ 0x401000 + i * 0x10 + i % 5, i % 3 ? i : 0,
					      names[i] };
	}
	syms[299].addr = UINT64_MAX;
	r[n].type = LP_REC_OBJECT;
	r[n++].u.object = (struct lp_object){ 1, "/usr/lib/x86_64-linux-gnu/libc.so.6",
					      LP_OBJID_BUILD_ID, sizeof(bid), bid, 1926232 };
	r[n].type = LP_REC_OBJECT;
	r[n++].u.object = (struct lp_object){ UINT64_MAX, "", LP_OBJID_CONTENT,
					      sizeof(hash), hash, 0 };
	r[n].type = LP_REC_OBJECT;
	r[n++].u.object = (struct lp_object){ .id = 7, .path = "/x", .id_kind = 99 };
	r[n].type = LP_REC_SYMTAB;
	r[n++].u.symtab = (struct lp_symtab){ 1, ARRAY_SIZE(segs), segs,
					      ARRAY_SIZE(syms), syms };
	r[n].type = LP_REC_SYMTAB;
	r[n++].u.symtab = (struct lp_symtab){ .object = UINT64_MAX };
	/* Source lines: chains of one to the deepest, strings shared, empty
	 * or absent (0), addresses up to the top of the address space; a
	 * note with no chains. */
	r[n].type = LP_REC_SRCLINES;
	r[n++].u.srclines = (struct lp_srclines){ 1, 0, ARRAY_SIZE(src_strs), src_strs,
						  ARRAY_SIZE(src_chains), src_chains };
	r[n].type = LP_REC_SRCLINES;
	r[n++].u.srclines = (struct lp_srclines){ .object = UINT64_MAX,
						  .flags = LP_SRCLINES_SKIPPED_BUDGET };
	return n;
}

/* A trace's snapshots: a base frame far from where the trace starts,
 * frames repeated from the snapshot before (keep) and not, a snapshot
 * not decoded between two that are, the deepest snapshot, values at the
 * top of their ranges; and a trace with no snapshots. */
static struct lp_lframe tsnap_deep[LP_TSNAP_MAX_FRAMES];

static size_t make_trace_snaps_records(struct lp_record *r)
{
	static const struct lp_lframe fr[] = {
		{ LP_LFRAME_BASE, 0, UINT64_MAX, 0 },
		{ LP_LFRAME_LUA, LP_LFRAME_LINK_LUA, 9, UINT32_MAX },
		{ LP_LFRAME_FF, 6, 20, 0 },
		{ LP_LFRAME_LUA, 0, 10, 3 },
	};
	static struct lp_tsnap snaps[6];
	size_t n = 0;

	for (uint32_t k = 0; k < LP_TSNAP_MAX_FRAMES; k++)
		tsnap_deep[k] = (struct lp_lframe){ LP_LFRAME_LUA, k % 8, k, k };
	snaps[0] = (struct lp_tsnap){ 0, 1, fr };
	snaps[1] = (struct lp_tsnap){ 1, 3, fr };
	snaps[2] = (struct lp_tsnap){ 200, 4, fr };
	snaps[3] = (struct lp_tsnap){ 300, 0, NULL };
	snaps[4] = (struct lp_tsnap){ 301, 2, fr + 2 };
	snaps[5] = (struct lp_tsnap){ UINT32_MAX, LP_TSNAP_MAX_FRAMES, tsnap_deep };
	r[n].type = LP_REC_TRACE_SNAPS;
	r[n++].u.trace_snaps = (struct lp_trace_snaps){ 3, 104, 0x7f0000123450ull + 104,
							ARRAY_SIZE(snaps), snaps };
	r[n].type = LP_REC_TRACE_SNAPS;
	r[n++].u.trace_snaps = (struct lp_trace_snaps){ .trace = UINT64_MAX, .bcofs = UINT32_MAX,
							.bcbase = UINT64_MAX };
	return n;
}

/* One or more records of every type; returns how many. */
static size_t make_records(struct lp_record *r)
{
	static const char *const ffnames[] = { "Lua", "C", "assert", "string.format" };
	static const uint32_t bc[] = { 0x00000059, 0x12345678, 0xffffffff, 0 };
	static const uint32_t lines[] = { 10, 12, 11, 310 };
	static const struct lp_proto_kstr kstr[] = { { 0, "print" }, { 7, "" } };
	static const char *const uvnames[] = { "M", "" };
	static const uint8_t varinfo[] = { 'x', 0, 1, 3, 7, 0, 2, 0 };
	static const struct lp_lframe lframes[] = {
		{ LP_LFRAME_LUA, 0, 9, 3 },
		{ LP_LFRAME_FF, 6, 17, 0 },
		{ LP_LFRAME_ENTRY, 0, 0, 0 },
		{ LP_LFRAME_C, 1, 0x7f00deadbeefull, 0 },
		{ LP_LFRAME_NAME, 0, UINT64_MAX, 0 },
		{ LP_LFRAME_TRUNC, 0, 1, 0 },
	};
	const uint64_t t0 = 123456789012345ull;
	size_t n = 0, i;

	make_arrays();
	r[n].type = LP_REC_META;
	r[n++].u.meta = (struct lp_meta){
		.version = "0.1.0",
		.cmdline = "luaprof record -F 999 -- lua \xe2\x98\x83.lua",
		.target = "", .hostname = "h\x01\x7f",
		.kernel = "6.1.0-13-amd64", .clock = "monotonic",
		.rate_hz = 999, .start_mono_ns = t0,
		.start_real_ns = 1700000000000000000ull,
		.flags = LP_META_FOLLOW_CHILDREN,
	};
	r[n].type = LP_REC_PROCESS;
	r[n++].u.process = (struct lp_process){
		.pid = 4242, .ppid = 1, .time_ns = t0,
		.flags = LP_PROC_LAUNCHED, .comm = "lua5.4", .exe = NULL,
	};
	r[n].type = LP_REC_MAPS;
	r[n++].u.maps = (struct lp_maps){
		.pid = 4242, .time_ns = 5, .flags = LP_MAPS_REPLACE,
		.count = ARRAY_SIZE(many_maps), .mappings = many_maps,
	};
	r[n].type = LP_REC_MAPS;
	r[n++].u.maps = (struct lp_maps){ .pid = UINT32_MAX };
	r[n].type = LP_REC_KSYMS;
	r[n++].u.ksyms = (struct lp_ksyms){ ARRAY_SIZE(ksyms), ksyms };
	r[n].type = LP_REC_STACK;
	r[n++].u.stack = (struct lp_stack){
		1, LP_STACK_KERNEL, ARRAY_SIZE(kernel_addrs), kernel_addrs
	};
	r[n].type = LP_REC_STACK;
	r[n++].u.stack = (struct lp_stack){
		UINT64_MAX, LP_STACK_USER, LP_STACK_MAX_DEPTH, deep_addrs
	};
	r[n].type = LP_REC_STACK;
	r[n++].u.stack = (struct lp_stack){ .id = 3, .kind = LP_STACK_USER };
	for (i = 0; i < 20; i++) {
		r[n].type = LP_REC_SAMPLE;
		r[n++].u.sample = (struct lp_sample){
			.time_ns = t0 + i * 1001001 - (i % 3) * 3000000,
			.pid = 4242, .tid = 4242 + (uint32_t)i % 3,
			.cpu = (uint32_t)i % 4, .kstack = i % 2,
			.ustack = i % 3 ? UINT64_MAX : 3,
			.flags = i % 5 ? 0 : LP_SAMPLE_KSTACK_FAILED |
					     LP_SAMPLE_USTACK_FAILED,
			.lstack = i % 4 ? 0 : 7, .vmstate = i % 2 ? -1 - (int32_t)i : INT32_MAX,
			.lua_state = (uint32_t)i % 6, .ustop = (uint32_t)i % 12,
		};
		/* Events among the samples, on their time base: known kinds
		 * (an allocation standing for many), and a kind no reader
		 * knows. */
		if (i % 7 == 3) {
			struct lp_sample sa = r[n - 1].u.sample;

			r[n - 1].type = LP_REC_EVENT;
			r[n - 1].u.event = (struct lp_event){
				.kind = i == 3 ? LP_KIND_OFF_CPU : i == 10 ? LP_KIND_ALLOC : 99,
				.weight = i == 3 ? 1234567 : i == 10 ? 524288 : UINT64_MAX,
				.s = sa,
				/* how many it stands for: 1, or an allocation's */
				.count = i == 10 ? 9709 : 1,
			};
		}
	}
	r[n].type = LP_REC_LUAJIT;
	r[n++].u.luajit = (struct lp_luajit){
		.pid = 4242, .G = 0x7fffe0001000ull, .vm_start = 0x400000, .vm_end = 0x410000,
		.flags = LP_LUAJIT_GC64 | LP_LUAJIT_OPENRESTY, .name = "LuaJIT 2.1",
		.source = "built-in", .nff = ARRAY_SIZE(ffnames), .ffnames = ffnames,
		.build = "openresty-gc64",
	};
	r[n].type = LP_REC_PUC_LUA;
	r[n++].u.puc_lua = (struct lp_puc_lua){
		.pid = 4243, .version = "Lua 5.3.6",
		.object = "/usr/lib/x86_64-linux-gnu/liblua5.3.so.0.0.0",
	};
	r[n].type = LP_REC_PUC_LUA;
	r[n++].u.puc_lua = (struct lp_puc_lua){ .pid = UINT32_MAX };
	/* A source with a NUL byte and no final newline, and one refused. */
	r[n].type = LP_REC_LUA_SOURCE;
	r[n++].u.lua_source = (struct lp_lua_source){
		.id = 5, .chunkname = "@abc.lua", .path = "/srv/app/abc.lua",
		.status = LP_LUASRC_WHOLE, .size = 26, .mtime_ns = 1700000000123456789ull,
		.text_len = 26, .text = "local x = 1\nprint(\"a\0b\")\nx",
	};
	r[n].type = LP_REC_LUA_SOURCE;
	r[n++].u.lua_source = (struct lp_lua_source){
		.id = UINT64_MAX, .chunkname = "@/gone.lua", .path = "",
		.status = LP_LUASRC_CHANGED,
	};
	r[n].type = LP_REC_PROTO;
	r[n++].u.proto = (struct lp_proto){
		.source = 5, .id = 9, .addr = 0x7f0000123450ull, .chunkname = "@abc.lua",
		.firstline = 10, .numline = 300, .numparams = 2, .flags = 3,
		.nbc = ARRAY_SIZE(bc), .bc = bc, .lines = lines,
		.nkstr = ARRAY_SIZE(kstr), .kstr = kstr, .nuv = ARRAY_SIZE(uvnames),
		.uvnames = uvnames, .varinfo = varinfo, .varinfo_len = sizeof(varinfo),
	};
	r[n].type = LP_REC_PROTO;
	r[n++].u.proto = (struct lp_proto){ .id = 10, .chunkname = "=stdin" };
	r[n].type = LP_REC_LUA_STACK;
	r[n++].u.lua_stack = (struct lp_lua_stack){ 7, ARRAY_SIZE(lframes), lframes };
	/* A heap path's steps: a key with bytes a terminal must not see. */
	r[n].type = LP_REC_NAME;
	r[n++].u.name = (struct lp_name){ .id = 1, .text = "_G" };
	r[n].type = LP_REC_NAME;
	r[n++].u.name = (struct lp_name){ .id = UINT64_MAX, .text = "k\033[2J\xff;x" };
	r[n].type = LP_REC_TRACE;
	r[n++].u.trace = (struct lp_trace){ .id = 3, .pid = 4242, .traceno = 65535,
					    .proto = 9, .startpc = 2, .root = 1,
					    .mcode = 0x7fff00001000ull, .szmcode = 912 };
	/* Times at both ends of the range: the deltas wrap around. */
	r[n - 17].u.sample.time_ns = UINT64_MAX;
	r[n - 16].u.sample.time_ns = 0;
	n += make_trace_snaps_records(r + n);
	r[n].type = LP_REC_LOST;
	r[n++].u.lost = (struct lp_lost){ t0 + 1, 1ull << 40, LP_LOST_RINGBUF };
	r[n].type = LP_REC_EXIT;
	r[n++].u.exit = (struct lp_exit){ 4242, t0 + 2 };
	n += make_object_records(r + n);
	return n;
}

static int has_type(const struct lp_record *r, size_t n, enum lp_record_type type)
{
	for (size_t i = 0; i < n; i++)
		if (r[i].type == type)
			return 1;
	return 0;
}

TEST(roundtrip_every_record_every_codec)
{
	static struct lp_record recs[64];
	struct lp_footer footer = { .samples = 20, .lost = 1ull << 40, .end_mono_ns = 9 }, got;
	struct trace_reader_stats st;
	struct trace_writer_stats ws;
	size_t n = make_records(recs), i;
	const char *path = fmt_tmp_path("every.lp");

	/* Every type of LP_RECDEF a caller writes is among the records (the
	 * footer is trace_writer_close()'s, compared below). */
#define COVERED(T, name, num, kind) LP_REC_IF_BODY(kind, CHECK(LP_REC_##T == LP_REC_FOOTER || \
							has_type(recs, n, LP_REC_##T));)
	LP_RECDEF(COVERED)
#undef COVERED
	for (i = 0; i < ARRAY_SIZE(fmt_codecs); i++) {
		memset(&got, 0, sizeof(got));
		CHECK(fmt_write_trace(path, fmt_codecs[i], recs, n, 0, &footer, NULL, &ws) == 0);
		CHECK(ws.records == n && ws.chunks == 0);
		CHECK(fmt_read_expect(path, recs, n, &got, &st) == n);
		CHECK(st.footer_seen && got.samples == 20 && got.lost == 1ull << 40 &&
		      got.end_mono_ns == 9 && got.chunks == 1);
		CHECK(st.chunks == 1 && st.version == LP_VERSION && !st.bad_chunks &&
		      !st.bad_records && !st.unknown_records && !st.garbage_bytes && !st.truncated);
		CHECK(st.codec_chunks[fmt_codecs[i]] == 1); /* the records compress */
		/* The same records, one chunk each, decode the same. */
		CHECK(fmt_write_trace(path, fmt_codecs[i], recs, n, 1, NULL, NULL, NULL) == 0);
		CHECK(fmt_read_expect(path, recs, n, &got, &st) == n);
		CHECK(st.chunks == n + 1 && got.chunks == n + 1 && got.samples == 17 &&
		      got.events == 3 && got.lost == 1ull << 40);
		CHECK(st.samples == 17 && st.events == 3);
		CHECK(st.codec_chunks[0] + st.codec_chunks[1] + st.codec_chunks[2] == n + 1 &&
		      !st.codec_chunks[3]);
	}
}

TEST(multi_chunk_sample_times)
{
	const size_t n = 150000;
	struct lp_record *recs = calloc(n, sizeof(*recs));
	struct trace_writer_stats ws;
	struct trace_reader_stats st;
	struct lp_footer got = { 0 };
	const char *path = fmt_tmp_path("multi.lp");
	size_t i, c;

	CHECK(recs);
	for (i = 0; i < n; i++) {
		/* Out-of-order times, as samples from several CPUs are. */
		recs[i].type = LP_REC_SAMPLE;
		recs[i].u.sample = (struct lp_sample){
			.time_ns = 1000000000000ull + i * 1000003 - (i % 4) * 2500000,
			.pid = 100 + (uint32_t)(i % 7), .tid = (uint32_t)i,
			.cpu = (uint32_t)(i % 16), .kstack = i % 3, .ustack = i * 31 % 1000 };
	}
	for (c = 0; c < ARRAY_SIZE(fmt_codecs); c++) {
		CHECK(fmt_write_trace(path, fmt_codecs[c], recs, n, 0, NULL, NULL, &ws) == 0);
		CHECK(ws.raw_bytes > 3 * LP_CHUNK_TARGET_RAW && ws.chunks >= 4);
		CHECK(fmt_read_expect(path, recs, n, &got, &st) == n);
		CHECK(st.chunks == ws.chunks + 1 && got.chunks == st.chunks && got.samples == n);
		CHECK(!st.bad_chunks && !st.bad_records && st.footer_seen);
		CHECK(st.raw_bytes >= ws.raw_bytes);
	}
	free(recs);
}

TEST(writer_refuses_bad_records)
{
	struct lp_record rec = { .type = LP_REC_STACK, .u.stack = { .id = 0 } };
	struct lp_ksym down[2] = { { 0x2000, "b" }, { 0x1000, "a" } };
	struct lp_mapping big = { .start = 0, .end = 4096 };
	struct trace_reader_stats st;
	struct trace_writer *w;
	struct lp_footer got;
	struct lp_record ok[3] = {
		{ .type = LP_REC_EXIT, .u.exit = { 1, 2 } },
		{ .type = LP_REC_MAPS, .u.maps = { .count = 1, .mappings = &big } },
		{ .type = LP_REC_EXIT, .u.exit = { 3, 4 } },
	};
	const char *path = fmt_tmp_path("refuse.lp");
	char *huge = malloc(LP_CHUNK_MAX_RAW + 1);

	CHECK(huge);
	CHECK(trace_writer_open(&w, path, (enum lp_codec)3) == -EINVAL);
	CHECK(trace_writer_open(&w, fmt_tmp_path("no/such/dir.lp"), LP_CODEC_NONE) == -ENOENT);
	CHECK(trace_writer_open(&w, path, LP_CODEC_LZ4) == 0);
	CHECK(trace_write(w, &rec) == -EINVAL); /* stack id 0 means "none" */
	rec.u.stack = (struct lp_stack){ .id = 1, .depth = LP_STACK_MAX_DEPTH + 1, .addrs = deep_addrs };
	CHECK(trace_write(w, &rec) == -EINVAL);
	rec = (struct lp_record){ .type = LP_REC_KSYMS, .u.ksyms = { 2, down } };
	CHECK(trace_write(w, &rec) == -EINVAL);
	rec = (struct lp_record){ .type = LP_REC_FOOTER };
	CHECK(trace_write(w, &rec) == -EINVAL);
	rec = (struct lp_record){ .type = (enum lp_record_type)42 };
	CHECK(trace_write(w, &rec) == -EINVAL);
	rec = (struct lp_record){ .type = LP_REC_DEBUG_RETIRED };
	CHECK(trace_write(w, &rec) == -EINVAL); /* retired: never written */
	/* SRCLINES: object 0; a string index past the table; a chain of no
	 * frames, and one deeper than allowed; addresses not ascending. */
	{
		struct lp_srcframe fr[LP_SRCLINES_MAX_FRAMES + 1] = { { 1, 1, 7 } };
		struct lp_srcchain ch[2] = { { 0x20, 1, fr }, { 0x10, 1, fr } };
		const char *strs[] = { "f" };
		struct lp_srclines *sl = &rec.u.srclines;

		rec = (struct lp_record){ .type = LP_REC_SRCLINES,
					  .u.srclines = { 0, 0, 1, strs, 1, ch } };
		CHECK(trace_write(w, &rec) == -EINVAL && lp_srclines_size(sl) == 0);
		sl->object = 1;
		CHECK(lp_srclines_size(sl) == 11);
		fr[0].file = 2;
		CHECK(trace_write(w, &rec) == -EINVAL && lp_srclines_size(sl) == 0);
		fr[0].file = 1;
		ch[0].nframe = 0;
		CHECK(trace_write(w, &rec) == -EINVAL);
		ch[0].nframe = LP_SRCLINES_MAX_FRAMES + 1;
		CHECK(trace_write(w, &rec) == -EINVAL);
		ch[0].nframe = 1;
		sl->nchain = 2;
		CHECK(trace_write(w, &rec) == -EINVAL);
		ch[1].vaddr = 0x20;
		CHECK(trace_write(w, &rec) == -EINVAL);
	}
	/* TRACE_SNAPS: trace 0; offsets not ascending; a snapshot deeper
	 * than allowed.  Its size is 0 for what the writer refuses. */
	{
		struct lp_lframe fr[LP_TSNAP_MAX_FRAMES + 1] = { { LP_LFRAME_BASE, 0, 2, 0 } };
		struct lp_tsnap sn[2] = { { 10, 1, fr }, { 10, 1, fr } };
		struct lp_trace_snaps *ts = &rec.u.trace_snaps;

		rec = (struct lp_record){ .type = LP_REC_TRACE_SNAPS,
					  .u.trace_snaps = { 0, 104, 0, 1, sn } };
		CHECK(trace_write(w, &rec) == -EINVAL && lp_trace_snaps_size(ts) == 0);
		ts->trace = 1;
		CHECK(lp_trace_snaps_size(ts) == 11);
		ts->nsnap = 2;
		CHECK(trace_write(w, &rec) == -EINVAL && lp_trace_snaps_size(ts) == 0);
		sn[1].mcofs = 11;
		sn[1].nframe = LP_TSNAP_MAX_FRAMES + 1;
		CHECK(trace_write(w, &rec) == -EINVAL);
		sn[1].nframe = 2;
		CHECK(lp_trace_snaps_size(ts) == 18); /* keeps the first frame */
	}
	/* A record that cannot fit in any chunk is refused; one that fits
	 * only in an empty chunk gets a chunk of its own. */
	memset(huge, 'p', LP_CHUNK_MAX_RAW);
	huge[LP_CHUNK_MAX_RAW] = '\0';
	big.path = huge;
	CHECK(trace_write(w, &ok[0]) == 0);
	CHECK(trace_write(w, &ok[1]) == -E2BIG);
	/* This maps record takes 20 bytes besides its path (its mapping's
	 * object id included), and the chunk it starts 3 more, its chunk
	 * record (chunk 1): one byte more than LP_CHUNK_MAX_RAW in all is
	 * refused, exactly that much is not. */
	huge[LP_CHUNK_MAX_RAW - 22] = '\0';
	CHECK(trace_write(w, &ok[1]) == -E2BIG);
	huge[LP_CHUNK_MAX_RAW - 23] = '\0';
	CHECK(trace_write(w, &ok[1]) == 0);
	CHECK(trace_write(w, &ok[2]) == 0);
	/* None of the refusals is sticky. */
	CHECK(trace_writer_close(w, NULL) == 0);
	CHECK(fmt_read_expect(path, ok, 3, &got, &st) == 3);
	CHECK(st.chunks == 3 && st.footer_seen && !st.bad_records);
	CHECK(st.raw_bytes > LP_CHUNK_MAX_RAW && st.raw_bytes < LP_CHUNK_MAX_RAW + 100);
	free(huge);
}

/* The descriptor this process has open on path, or -1. */
static int fd_of(const char *path)
{
	char want[PATH_MAX], link[300], have[PATH_MAX];
	struct dirent *de;
	DIR *d;
	int fd = -1;
	ssize_t n;

	if (!realpath(path, want) || !(d = opendir("/proc/self/fd")))
		return -1;
	while ((de = readdir(d))) {
		snprintf(link, sizeof(link), "/proc/self/fd/%s", de->d_name);
		n = readlink(link, have, sizeof(have) - 1);
		if (n <= 0)
			continue;
		have[n] = '\0';
		if (!strcmp(have, want))
			fd = atoi(de->d_name);
	}
	closedir(d);
	return fd;
}

TEST(write_error_is_sticky)
{
	struct lp_record s = { .type = LP_REC_SAMPLE, .u.sample = { .time_ns = 5, .tid = 9 } };
	struct trace_reader_stats st;
	struct trace_writer *w;
	struct lp_footer got;
	const char *path = fmt_tmp_path("full.lp");
	int fd, full;

	/* A device is not a new file: the writer creates its own. */
	CHECK(trace_writer_open(&w, "/dev/full", LP_CODEC_NONE) == -EEXIST);
	/* A disk that fills up after the first chunk. */
	CHECK(trace_writer_open(&w, path, LP_CODEC_ZLIB) == 0);
	CHECK(trace_write(w, &s) == 0 && trace_writer_flush(w) == 0);
	fd = fd_of(path);
	full = open("/dev/full", O_WRONLY);
	CHECK(fd >= 0 && full >= 0 && dup2(full, fd) == fd);
	close(full);
	CHECK(trace_write(w, &s) == 0); /* only buffered */
	CHECK(trace_writer_flush(w) == -ENOSPC);
	CHECK(trace_write(w, &s) == -ENOSPC);
	CHECK(trace_writer_flush(w) == -ENOSPC);
	CHECK(trace_writer_close(w, NULL) == -ENOSPC);
	/* What was written before the error is still a trace. */
	CHECK(fmt_read_expect(path, &s, 1, &got, &st) == 1);
	CHECK(st.chunks == 1 && !st.footer_seen && !st.truncated && !st.bad_chunks);
}

TEST(short_write_is_cut_back)
{
	struct lp_record recs[2000];
	struct trace_writer_stats ws;
	struct trace_reader_stats st;
	struct rlimit old, lim;
	struct trace_writer *w;
	struct lp_footer got;
	const char *path = fmt_tmp_path("efbig.lp");
	struct stat sb;
	size_t i;

	for (i = 0; i < ARRAY_SIZE(recs); i++)
		recs[i] = (struct lp_record){ .type = LP_REC_SAMPLE, .u.sample = {
			.time_ns = i * 977, .tid = (uint32_t)(i * 2654435761u) } };
	CHECK(trace_writer_open(&w, path, LP_CODEC_NONE) == 0);
	CHECK(trace_write(w, &recs[0]) == 0 && trace_writer_flush(w) == 0);
	trace_writer_get_stats(w, &ws);
	/* RLIMIT_FSIZE makes the next chunk's write() stop half way. */
	signal(SIGXFSZ, SIG_IGN);
	CHECK(getrlimit(RLIMIT_FSIZE, &old) == 0);
	lim = old;
	lim.rlim_cur = ws.file_bytes + 100;
	CHECK(setrlimit(RLIMIT_FSIZE, &lim) == 0);
	for (i = 1; i < ARRAY_SIZE(recs); i++)
		trace_write(w, &recs[i]);
	i = (size_t)trace_writer_flush(w);
	CHECK(setrlimit(RLIMIT_FSIZE, &old) == 0);
	signal(SIGXFSZ, SIG_DFL);
	CHECK((int)i == -EFBIG);
	CHECK(trace_writer_close(w, NULL) == -EFBIG);
	CHECK(stat(path, &sb) == 0 && (uint64_t)sb.st_size == ws.file_bytes);
	CHECK(fmt_read_expect(path, recs, 1, &got, &st) == 1);
	CHECK(st.chunks == 1 && !st.truncated && !st.bad_chunks && !st.footer_seen);
}

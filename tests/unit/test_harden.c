/*
 * test_harden.c - a trace is untrusted input and a recording is private:
 * the defects the hardening issue found, each pinned by a test.  Traces
 * with no samples through every report mode; strings with control bytes
 * never reaching a terminal raw; counters that would wrap; missing,
 * repeated and reordered chunks counted, never silently; traces created
 * 0600 and never through a symbolic link.
 */
#include <errno.h>
#include <limits.h>
#include <malloc.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "format/codec.h"
#include "lib/lua_bc.h"
#include "lib/escape.h"
#include "tests/unit/pb_read.h"
#include "tests/unit/report_test.h"

/* A file of six bytes that a trace must never overwrite. */
static int fmt_victim(const char *path)
{
	FILE *f = fopen(path, "w");

	if (!f)
		return -1;
	fputs("victim", f);
	return fclose(f);
}

/* Every report mode and format, diff and info on a trace that holds no
 * sample at all (the sanitizer build catches a NULL passed to memcpy or
 * qsort for an empty array). */
TEST(harden_every_mode_on_a_trace_without_samples)
{
	static const char *const modes[][3] = {
		{ "--format", "top", NULL }, { "--format", "folded", NULL },
		{ "--format", "callgraph", NULL }, { "--vmstate", NULL, NULL },
		{ "--annotate", NULL, NULL }, { "--by", "line", NULL },
		{ "--format", "flamegraph", NULL }, { "--format", "pprof", NULL },
		{ "--format", "speedscope", NULL }, { "--from", "1", NULL },
	};
	static const char *const diffs[] = { "top", "folded", "flamegraph" };
	const char *path = rt_path("nosamples.lp");
	struct trace_writer *w = rt_open(path);
	char *out = NULL, *err = NULL;

	CHECK(w && rt_meta(w, 1, 2) == 0 && trace_writer_close(w, NULL) == 0);
	for (size_t i = 0; i < sizeof(modes) / sizeof(modes[0]); i++) {
		CHECK(rt_run(cmd_report, &out, &err, "report", modes[i][0],
			     modes[i][1] ? modes[i][1] : path,
			     modes[i][1] ? path : NULL, NULL) == 0);
		CHECK(strstr(err, "no samples to report"));
		free(out);
		free(err);
		out = err = NULL;
	}
	for (size_t i = 0; i < sizeof(diffs) / sizeof(diffs[0]); i++) {
		CHECK(rt_run(cmd_diff, &out, &err, "diff", "--format", diffs[i], path, path,
			     NULL) == 0);
		free(out);
		free(err);
		out = err = NULL;
	}
	CHECK(rt_run(cmd_info, &out, NULL, "info", path, NULL) == 0);
	CHECK(strstr(out, "samples: 0"));
	free(out);
}

/* A trace holds command lines, memory maps and sources of production
 * processes: it is created 0600 whatever the umask, and never through a
 * symbolic link, dangling or not, nor over an existing file. */
TEST(harden_trace_is_private_and_never_follows_a_link)
{
	const char *path = rt_path("private.lp"), *victim = rt_path("victim");
	const char *link = rt_path("link.lp"), *dangling = rt_path("dangling.lp");
	const char *gone = rt_path("gone");
	struct trace_writer *w = NULL;
	struct stat st;
	mode_t old = umask(022);
	int err;

	unlink(path);
	err = trace_writer_open(&w, path, LP_CODEC_NONE);
	umask(old);
	CHECK(err == 0 && trace_writer_close(w, NULL) == 0);
	CHECK(stat(path, &st) == 0 && (st.st_mode & 07777) == 0600);
	unlink(path);
	old = umask(0277); /* even a umask that takes the owner's write bit */
	err = trace_writer_open(&w, path, LP_CODEC_NONE);
	umask(old);
	CHECK(err == 0 && trace_writer_close(w, NULL) == 0);
	CHECK(stat(path, &st) == 0 && (st.st_mode & 07777) == 0600);

	CHECK(fmt_victim(victim) == 0);
	CHECK(symlink(victim, link) == 0);
	CHECK(trace_writer_open(&w, link, LP_CODEC_NONE) == -EEXIST && !w);
	CHECK(stat(victim, &st) == 0 && st.st_size == 6); /* untouched */
	CHECK(symlink(gone, dangling) == 0);
	CHECK(trace_writer_open(&w, dangling, LP_CODEC_NONE) == -EEXIST && !w);
	CHECK(stat(gone, &st) < 0 && errno == ENOENT); /* nothing created */
	/* An existing trace is the caller's to move away (record keeps it as
	 * NAME.old): the writer never truncates one. */
	CHECK(trace_writer_open(&w, path, LP_CODEC_NONE) == -EEXIST && !w);
	CHECK(stat(path, &st) == 0 && st.st_size > 0);
}

/* What report and diff write with -o says as much as the trace: opened
 * the recorder's way (format/private.c), 0600 even over an existing
 * world-readable file, never through a symbolic link, dangling or not. */
TEST(harden_report_output_is_private_and_never_follows_a_link)
{
	const char *path = rt_path("out-src.lp"), *o = rt_path("out.txt");
	const char *victim = rt_path("out-victim"), *link = rt_path("out-link");
	const char *gone = rt_path("out-gone"), *dangling = rt_path("out-dangling");
	struct trace_writer *w = rt_open(path);
	char *err = NULL;
	struct stat st;
	mode_t old;

	CHECK(w && rt_meta(w, 1, 2) == 0 && trace_writer_close(w, NULL) == 0);
	CHECK(fmt_victim(o) == 0 && chmod(o, 0644) == 0);
	old = umask(022);
	CHECK(rt_run(cmd_report, NULL, NULL, "report", "--format", "folded", "-o", o, path,
		     NULL) == 0);
	umask(old);
	CHECK(stat(o, &st) == 0 && (st.st_mode & 07777) == 0600 && st.st_size == 0);
	CHECK(fmt_victim(victim) == 0);
	unlink(link);
	CHECK(symlink(victim, link) == 0);
	CHECK(rt_run(cmd_report, NULL, &err, "report", "-o", link, path, NULL) == 1);
	CHECK(strstr(err, "symbolic link"));
	free(err);
	err = NULL;
	CHECK(rt_run(cmd_diff, NULL, &err, "diff", "-o", link, path, path, NULL) == 1);
	CHECK(strstr(err, "symbolic link"));
	free(err);
	CHECK(stat(victim, &st) == 0 && st.st_size == 6); /* untouched */
	unlink(dangling);
	CHECK(symlink(gone, dangling) == 0);
	CHECK(rt_run(cmd_report, NULL, NULL, "report", "-o", dangling, path, NULL) == 1);
	CHECK(stat(gone, &st) < 0 && errno == ENOENT); /* nothing created */
}

/* ---- chunks missing, repeated, reordered or retyped ------------------ */

/* A trace of 7 uncompressed chunks: meta, a stack and 10 samples; five
 * more of 10 samples; kernel symbols and the footer. */
static int write_chunky(const char *path)
{
	static const char *const names[] = { "main", "work" };
	static const int s[] = { 0, 1 };
	struct trace_writer *w = NULL;
	uint64_t t = 1000;
	int err;

	unlink(path);
	err = trace_writer_open(&w, path, LP_CODEC_NONE);
	if (err)
		return err;
	err = rt_meta(w, 1, 2) ?: rt_kstack(w, 1, s, 2);
	for (int c = 0; c < 6 && !err; c++)
		err = rt_samples(w, &t, 7, 7, 1, 0, 10) ?: trace_writer_flush(w);
	err = err ?: rt_kfuncs(w, names, 2);
	return trace_writer_close(w, NULL) ?: err;
}

struct chunks {
	uint8_t *data;
	size_t len;
	size_t off[16], size[16]; /* off[0] is the end of the header */
	size_t n;
};

static int split_chunks(const char *path, struct chunks *c)
{
	size_t at = LP_HEADER_SIZE;

	c->data = (uint8_t *)rt_slurp(path);
	if (!c->data)
		return -1;
	c->len = 0;
	{
		struct stat st;

		if (stat(path, &st))
			return -1;
		c->len = (size_t)st.st_size;
	}
	for (c->n = 0; at + LP_CHUNK_HEADER_SIZE <= c->len && c->n < 16; c->n++) {
		const uint8_t *h = c->data + at;
		size_t stored = h[12] | h[13] << 8 | h[14] << 16 | (size_t)h[15] << 24;

		c->off[c->n] = at;
		c->size[c->n] = LP_CHUNK_HEADER_SIZE + stored;
		at += c->size[c->n];
	}
	return at == c->len ? 0 : -1;
}

/* Writes the header and the chunks listed in order (-1 ends the list). */
static int join_chunks(const char *path, const struct chunks *c, const int *order)
{
	FILE *f;

	unlink(path);
	f = fopen(path, "w");
	if (!f)
		return -1;
	fwrite(c->data, 1, LP_HEADER_SIZE, f);
	for (; *order >= 0; order++)
		fwrite(c->data + c->off[*order], 1, c->size[*order], f);
	return fclose(f);
}

/* Runs report --format folded and info on path; *samples is the sum of
 * the folded counts, *err both commands' standard error. */
static int report_both(const char *path, long *samples, char **err)
{
	char *out = NULL, *e1 = NULL, *e2 = NULL, *p;
	int rc;

	rc = rt_run(cmd_report, &out, &e1, "report", "--format", "folded", path, NULL) |
	     rt_run(cmd_info, NULL, &e2, "info", path, NULL);
	*samples = 0;
	for (p = out; p && (p = strchr(p, ' ')); p++)
		*samples += strtol(p + 1, NULL, 10);
	*err = malloc(strlen(e1 ? e1 : "") + strlen(e2 ? e2 : "") + 1);
	if (*err)
		strcat(strcpy(*err, e1 ? e1 : ""), e2 ? e2 : "");
	free(out);
	free(e1);
	free(e2);
	return rc;
}

TEST(harden_chunk_sequence_gaps_repeats_and_reorders)
{
	const char *path = rt_path("chunky.lp"), *edit = rt_path("chunky-edit.lp");
	struct chunks c = { 0 };
	char *err = NULL;
	long n;

	CHECK(write_chunky(path) == 0 && split_chunks(path, &c) == 0 && c.n == 7);
	CHECK(report_both(path, &n, &err) == 0 && n == 60);
	CHECK(!strstr(err, "warning"));
	free(err);

	/* Chunk 2 deleted: 10 samples short, and said, in both commands. */
	CHECK(join_chunks(edit, &c, (int[]){ 0, 1, 3, 4, 5, 6, -1 }) == 0);
	CHECK(report_both(edit, &n, &err) == 0 && n == 50);
	CHECK(rt_count(err, "1 chunk missing from the trace's sequence") == 2);
	CHECK(rt_count(err, "footer counts 60 samples in 7 chunks, but 50 samples "
			    "in 6 chunks were read") == 2);
	free(err);

	/* Chunk 2 twice: counted once. */
	CHECK(join_chunks(edit, &c, (int[]){ 0, 1, 2, 2, 3, 4, 5, 6, -1 }) == 0);
	CHECK(report_both(edit, &n, &err) == 0 && n == 60);
	CHECK(rt_count(err, "1 chunk repeated or out of order, skipped") == 2);
	CHECK(!strstr(err, "footer counts"));
	free(err);
	/* ... even when the copy comes after the footer. */
	CHECK(join_chunks(edit, &c, (int[]){ 0, 1, 2, 3, 4, 5, 6, 2, -1 }) == 0);
	CHECK(report_both(edit, &n, &err) == 0 && n == 60);
	CHECK(rt_count(err, "1 chunk repeated or out of order, skipped") == 2);
	free(err);

	/* Chunks 2 and 3 swapped: 3 is read in place of 2, 2 comes late. */
	CHECK(join_chunks(edit, &c, (int[]){ 0, 1, 3, 2, 4, 5, 6, -1 }) == 0);
	CHECK(report_both(edit, &n, &err) == 0 && n == 50);
	CHECK(rt_count(err, "1 chunk missing from the trace's sequence") == 2);
	CHECK(rt_count(err, "1 chunk repeated or out of order, skipped") == 2);
	free(err);

	/* Chunk 2 retyped to a type no luaprof knows (its CRC made good). */
	c.data[c.off[2] + 4] = 9;
	{
		uint8_t *h = c.data + c.off[2];
		uint32_t crc = lp_crc32(lp_crc32(0, h + 4, 12), h + LP_CHUNK_HEADER_SIZE,
					c.size[2] - LP_CHUNK_HEADER_SIZE);

		for (int i = 0; i < 4; i++)
			h[16 + i] = (uint8_t)(crc >> (8 * i));
	}
	CHECK(join_chunks(edit, &c, (int[]){ 0, 1, 2, 3, 4, 5, 6, -1 }) == 0);
	CHECK(report_both(edit, &n, &err) == 0 && n == 50);
	CHECK(rt_count(err, "1 chunk of an unknown type skipped") == 2);
	free(err);
	free(c.data);
}

static void put32(uint8_t *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

/* Makes c what a luaprof from before chunk numbers wrote: no compat bit,
 * no chunk record at the start of each (uncompressed) chunk. */
static void unnumber(struct chunks *c)
{
	uint8_t *out = malloc(c->len), *h;
	size_t at = LP_HEADER_SIZE;

	memcpy(out, c->data, LP_HEADER_SIZE);
	put32(out + 16, 0);
	put32(out + 20, lp_crc32(0, out, 20));
	for (size_t i = 0; i < c->n; i++) {
		const uint8_t *src = c->data + c->off[i], *pay = src + LP_CHUNK_HEADER_SIZE;
		size_t skip = 2 + pay[1], size = c->size[i] - LP_CHUNK_HEADER_SIZE - skip;

		h = out + at;
		memcpy(h, src, 8);
		put32(h + 8, (uint32_t)size);
		put32(h + 12, (uint32_t)size);
		memcpy(h + LP_CHUNK_HEADER_SIZE, pay + skip, size);
		put32(h + 16, lp_crc32(lp_crc32(0, h + 4, 12), h + LP_CHUNK_HEADER_SIZE, size));
		c->off[i] = at;
		c->size[i] = LP_CHUNK_HEADER_SIZE + size;
		at += c->size[i];
	}
	free(c->data);
	c->data = out;
	c->len = at;
}

/* Older traces still read, and their footer's counts are checked. */
TEST(harden_old_trace_footer_counts_checked)
{
	const char *path = rt_path("old.lp"), *edit = rt_path("old-edit.lp");
	struct chunks c = { 0 };
	char *err = NULL;
	long n;

	CHECK(write_chunky(path) == 0 && split_chunks(path, &c) == 0 && c.n == 7);
	CHECK(c.data[c.off[0] + LP_CHUNK_HEADER_SIZE] == LP_REC_CHUNK);
	unnumber(&c);
	CHECK(join_chunks(edit, &c, (int[]){ 0, 1, 2, 3, 4, 5, 6, -1 }) == 0);
	CHECK(report_both(edit, &n, &err) == 0 && n == 60);
	CHECK(!strstr(err, "warning"));
	free(err);
	CHECK(join_chunks(edit, &c, (int[]){ 0, 1, 3, 4, 5, 6, -1 }) == 0);
	CHECK(report_both(edit, &n, &err) == 0 && n == 50);
	CHECK(rt_count(err, "footer counts 60 samples in 7 chunks, but 50 samples "
			    "in 6 chunks were read") == 2);
	free(err);
	/* Without chunk numbers a repeat cannot be told: it is said. */
	CHECK(join_chunks(edit, &c, (int[]){ 0, 1, 2, 2, 3, 4, 5, 6, -1 }) == 0);
	CHECK(report_both(edit, &n, &err) == 0 && n == 70);
	CHECK(rt_count(err, "footer counts 60 samples in 7 chunks, but 70 samples "
			    "in 8 chunks were read") == 2);
	free(err);
	free(c.data);
}

/* ---- strings from a trace never reach a terminal raw ----------------- */

/* Whether s holds a byte a terminal would act on: a C0 control but
 * newline and tab, DEL, or a C1 control (U+0080..U+009F in UTF-8). */
static int has_raw_control(const char *s)
{
	for (const unsigned char *p = (const unsigned char *)s; p && *p; p++) {
		if ((*p < 0x20 && *p != '\n' && *p != '\t') || *p == 0x7f)
			return 1;
		if (*p == 0xc2 && p[1] >= 0x80 && p[1] <= 0x9f)
			return 1;
	}
	return 0;
}

#define EVIL "\x1b[31mred\x07\x1b]0;title\x07\xc2\x9b" "2J\x7f" "end</text><script>\"}\\\xff"

/* One of everything that carries a string, each with EVIL in it. */
static int write_evil(const char *path)
{
	static const uint32_t bc[] = { 0x00000459, 0x0000024c };
	static const uint32_t lines[] = { 1, 2 };
	/* The caller: GGET 0 "k..."; CALL 0 1 1; RET0, so that LuaJIT's
	 * naming gives the leaf the string constant's name. */
	static const uint32_t cbc[] = { LBC_FUNCF | 3 << 8, LBC_GGET, LBC_CALL | 1 << 16 | 1 << 24,
					LBC_RET0 | 1 << 16 };
	static const uint32_t clines[] = { 5, 6, 6, 7 };
	static const struct lp_lframe lf[] = { { LP_LFRAME_LUA, 0, 2, 1 },
					       { LP_LFRAME_LUA, 2, 8, 3 } };
	static const char *const ff[] = { "Lua", "C", "ff" EVIL };
	static const struct lp_proto_kstr kstr[] = { { 0, "k" EVIL } };
	static const char text[] = "local x = '" EVIL "'\nreturn x\n";
	static const uint8_t bid[] = { 1, 2, 3, 4 };
	static const char *const kn[] = { "kfn" EVIL };
	struct lp_mapping m = { 0x400000, 0x401000, 0, LP_PROT_READ | LP_PROT_EXEC, 5,
				"/nonexistent/" EVIL ".so", 1 };
	struct trace_writer *w = rt_open(path);
	uint64_t ua = 0x400100, ka = RT_K(0) + 8, t = 10;
	struct lp_record r = { .type = LP_REC_META };
	int err;

	if (!w)
		return -1;
	r.u.meta = (struct lp_meta){ "v" EVIL, "cmd" EVIL, "target" EVIL, "host" EVIL,
				     "kernel" EVIL, "clock" EVIL, 99, 1, 2, 0 };
	err = trace_write(w, &r);
	err = err ?: rt_process(w, 7, 1, LP_PROC_EXISTING, "x" EVIL, "/bin/" EVIL, 5);
	r = (struct lp_record){ .type = LP_REC_OBJECT,
				.u.object = { 1, m.path, LP_OBJID_BUILD_ID, 4, bid, 9 } };
	err = err ?: trace_write(w, &r) ?: rt_maps(w, 7, LP_MAPS_REPLACE, &m, 1);
	r = (struct lp_record){ .type = LP_REC_LUAJIT, .u.luajit = {
		.pid = 7, .vm_start = 0x500000, .vm_end = 0x501000, .name = "lj" EVIL,
		.source = "src" EVIL, .nff = 3, .ffnames = ff } };
	err = err ?: trace_write(w, &r);
	r = (struct lp_record){ .type = LP_REC_LUA_SOURCE, .u.lua_source = {
		.id = 3, .chunkname = "@" EVIL ".lua", .path = "/srv/" EVIL ".lua",
		.status = LP_LUASRC_WHOLE, .size = sizeof(text) - 1,
		.text_len = sizeof(text) - 1, .text = text } };
	err = err ?: trace_write(w, &r);
	r = (struct lp_record){ .type = LP_REC_PROTO, .u.proto = {
		.id = 2, .chunkname = "@" EVIL ".lua", .firstline = 1, .numline = 1,
		.nbc = 2, .bc = bc, .lines = lines, .source = 3 } };
	err = err ?: trace_write(w, &r);
	r = (struct lp_record){ .type = LP_REC_PROTO, .u.proto = {
		.id = 8, .chunkname = "@" EVIL ".lua", .firstline = 5, .numline = 2,
		.nbc = 4, .bc = cbc, .lines = clines, .nkstr = 1, .kstr = kstr, .source = 3 } };
	err = err ?: trace_write(w, &r);
	r = (struct lp_record){ .type = LP_REC_LUA_STACK, .u.lua_stack = { 4, 2, lf } };
	err = err ?: trace_write(w, &r);
	err = err ?: rt_stack(w, 5, LP_STACK_USER, &ua, 1) ?:
	      rt_stack(w, 6, LP_STACK_KERNEL, &ka, 1);
	r = (struct lp_record){ .type = LP_REC_SAMPLE, .u.sample = {
		.time_ns = t, .pid = 7, .tid = 7, .kstack = 6, .ustack = 5, .lstack = 4,
		.vmstate = ~0, .lua_state = LP_LUA_WALKED } };
	err = err ?: trace_write(w, &r);
	err = err ?: rt_kfuncs(w, kn, 1);
	return trace_writer_close(w, NULL) ?: err;
}

TEST(harden_strings_from_a_trace_are_escaped)
{
	static const char *const modes[][3] = {
		{ "--format", "top", NULL }, { "--format", "folded", NULL },
		{ "--format", "callgraph", NULL }, { "--vmstate", NULL, NULL },
		{ "--annotate", NULL, NULL }, { "--by", "line", NULL },
		{ "--comm", "--lines", NULL },
	};
	const char *path = rt_path("evil.lp");
	char *out = NULL, *err = NULL;

	CHECK(write_evil(path) == 0);
	for (size_t i = 0; i < sizeof(modes) / sizeof(modes[0]); i++) {
		CHECK(rt_run(cmd_report, &out, &err, "report", modes[i][0],
			     modes[i][1] ? modes[i][1] : path,
			     modes[i][1] ? path : NULL, NULL) == 0);
		if (has_raw_control(out) || has_raw_control(err))
			printf("  report %s %s:\n%s%s", modes[i][0], modes[i][1] ? modes[i][1] : "",
			       out, err);
		CHECK(!has_raw_control(out) && !has_raw_control(err));
		CHECK(strstr(out, "red") || strstr(err, "red")); /* shown, escaped */
		if (i >= 4) /* --annotate, --by line: named from the constant */
			CHECK(strstr(out, "k?[31mred??]0;title?"));
		free(out);
		free(err);
		out = err = NULL;
	}
	/* diff, and two traces merged in a window: the text they print. */
	for (int i = 0; i < 3; i++) {
		CHECK((i < 2 ? rt_run(cmd_diff, &out, &err, "diff", "--format",
				      i ? "folded" : "top", path, path, NULL) :
			       rt_run(cmd_report, &out, &err, "report", "--from", "0", "--to", "1",
				      "--comm", path, path, NULL)) == 0);
		CHECK(!has_raw_control(out) && !has_raw_control(err));
		CHECK(strstr(out, "red") || strstr(err, "red"));
		free(out);
		free(err);
		out = err = NULL;
	}
	CHECK(rt_run(cmd_info, &out, &err, "info", path, NULL) == 0);
	if (has_raw_control(out) || has_raw_control(err))
		printf("  info:\n%s%s", out, err);
	CHECK(!has_raw_control(out) && !has_raw_control(err));
	CHECK(strstr(out, "cmd?[31mred??]0;title?") && strstr(out, "x?[31mred"));
	free(out);
	free(err);
}

/* Whether the whole of s (n bytes) is UTF-8 with no control but newline
 * and tab. */
static int clean_utf8(const char *s, size_t n)
{
	for (size_t i = 0; i < n;) {
		int k = utf8_seq((const unsigned char *)s + i);

		if (!k || i + k > n || esc_control_len((const unsigned char *)s + i, n - i) ||
		    (s[i] == '\0'))
			if (!(k == 1 && (s[i] == '\n' || s[i] == '\t')))
				return 0;
		i += k ? k : 1;
	}
	return 1;
}

/* Whether python3 parses path as XML (how = "xml") or JSON ("json"),
 * strictly as UTF-8. */
static int parses_as(const char *how, const char *path)
{
	char cmd[512];

	snprintf(cmd, sizeof(cmd),
		 "python3 -c 'import sys, json, xml.dom.minidom as m\n"
		 "t = open(sys.argv[2], encoding=\"utf-8\", errors=\"strict\").read()\n"
		 "m.parseString(t) if sys.argv[1] == \"xml\" else json.loads(t)' %s %s",
		 how, path);
	return system(cmd) == 0;
}

/* Every string of a gzipped pprof profile's string table is clean. */
static int pprof_strings_clean(const char *path, int *nred)
{
	size_t n = 0;
	uint8_t *v = gunzip_file(path, &n);
	struct pbr r = { v, v + n }, sub;
	uint32_t f;
	uint64_t x;
	int rc, ok = v != NULL;

	*nred = 0;
	while (ok && (rc = pbr_next(&r, &f, &x, &sub)) == 1) {
		if (f != 6)
			continue;
		ok = clean_utf8((const char *)sub.p, sub.end - sub.p);
		*nred += memmem(sub.p, sub.end - sub.p, "red", 3) != NULL;
	}
	free(v);
	return ok && rc == 0;
}

/* The formats other tools read: valid XML, JSON and protobuf strings,
 * with every string of the trace in them escaped, whatever it holds
 * (terminal controls, markup, quotes, bytes that are not UTF-8); so for
 * a window of the trace, several traces merged, and diff. */
TEST(harden_structured_outputs_escape_trace_strings)
{
	static const struct {
		const char *kind, *args[6];
	} runs[] = {
		{ "xml", { "report", "--format", "flamegraph", "--comm", "--lines", NULL } },
		{ "xml", { "report", "--format", "flamegraph", "--from", "0", NULL } },
		{ "xml", { "diff", "--format", "flamegraph", NULL } },
		{ "json", { "report", "--format", "speedscope", "--comm", NULL } },
		{ "json", { "report", "--format", "speedscope", "--to", "5", NULL } },
		{ "pb", { "report", "--format", "pprof", "--lines", NULL } },
	};
	const char *path = rt_path("evil.lp"), *o = rt_path("evil.out");

	CHECK(write_evil(path) == 0);
	for (size_t i = 0; i < sizeof(runs) / sizeof(runs[0]); i++) {
		char *a[12] = { NULL }, *s;
		int n = 0, nred = 0, diff = !strcmp(runs[i].args[0], "diff");

		for (; runs[i].args[n]; n++)
			a[n] = (char *)runs[i].args[n];
		a[n++] = "-o";
		a[n++] = (char *)o;
		a[n++] = (char *)path;
		if (diff || i == 3) /* diff; speedscope of the trace merged with itself */
			a[n++] = (char *)path;
		unlink(o);
		/* Standard error (objects not found) captured, not shown. */
		CHECK(rt_run(diff ? cmd_diff : cmd_report, NULL, NULL, a[0], a[1], a[2], a[3],
			     a[4], a[5], a[6], a[7], a[8], a[9], a[10]) == 0);
		if (!strcmp(runs[i].kind, "pb")) {
			CHECK(pprof_strings_clean(o, &nred) && nred > 0);
			continue;
		}
		s = rt_slurp(o);
		CHECK(s && clean_utf8(s, strlen(s)));
		/* The markup, quotes and stray byte escaped as each format
		 * does (the controls are '?' already, in every name). */
		if (!strcmp(runs[i].kind, "xml"))
			CHECK(s && strstr(s, "red??]0;title???2J?end&lt;/text&gt;&lt;script&gt;"
					     "&quot;}\\\xef\xbf\xbd"));
		else
			CHECK(s && strstr(s, "red??]0;title???2J?end</text><script>\\\"}"
					     "\\\\\\ufffd"));
		CHECK(parses_as(runs[i].kind, o));
		free(s);
	}
}

/* ---- counts that would wrap ------------------------------------------ */

/* lost counts near 2^64, in LOST records and the footer: saturated, never
 * wrapped into small numbers or shares above 100%. */
TEST(harden_lost_counts_saturate)
{
	static const int s[] = { 0 };
	const char *path = rt_path("lost.lp");
	struct trace_writer *w = rt_open(path);
	struct lp_footer f = { .samples = 3, .lost = UINT64_MAX };
	char *out = NULL, *err = NULL;
	uint64_t t = 0;

	CHECK(w && rt_kstack(w, 1, s, 1) == 0 && rt_samples(w, &t, 1, 1, 1, 0, 3) == 0);
	CHECK(rt_lost(w, 1ull << 63, LP_LOST_RINGBUF) == 0);
	CHECK(rt_lost(w, 1ull << 63, LP_LOST_RINGBUF) == 0);
	CHECK(rt_lost(w, 5, LP_LOST_WRITE) == 0);
	CHECK(trace_writer_close(w, &f) == 0);
	CHECK(rt_run(cmd_report, &out, &err, "report", path, NULL) == 0);
	CHECK(strstr(out, "lost: 18446744073709551615 (100.00%)"));
	CHECK(strstr(err, "18446744073709551615 samples were lost while recording (100.00% of "
		      "18446744073709551615)"));
	free(out);
	free(err);
	CHECK(rt_run(cmd_info, &out, NULL, "info", path, NULL) == 0);
	CHECK(strstr(out, "lost: 18446744073709551615 (100.00% of 18446744073709551615; "
		      "ring buffer full 18446744073709551615, recorder could not keep 5"));
	free(out);
}

/* ---- a disk that fills ------------------------------------------------ */

/* The writer counts the samples that reached the file, so a recorder that
 * met a write error can say how many it kept and how many it lost. */
TEST(harden_writer_counts_the_samples_written)
{
	struct lp_record s = { .type = LP_REC_SAMPLE, .u.sample = { .time_ns = 5, .tid = 9 } };
	const char *path = rt_path("enospc.lp");
	struct trace_writer_stats ws;
	struct trace_writer *w = rt_open(path);
	char fdpath[64], target[512];
	ssize_t n;
	int fd = -1, full;

	CHECK(w);
	for (int i = 0; i < 3; i++)
		CHECK(trace_write(w, &s) == 0);
	CHECK(trace_writer_flush(w) == 0);
	trace_writer_get_stats(w, &ws);
	CHECK(ws.samples == 3);
	/* The disk fills: the writer's descriptor now writes to /dev/full. */
	for (int i = 3; i < 1024 && fd < 0; i++) {
		snprintf(fdpath, sizeof(fdpath), "/proc/self/fd/%d", i);
		n = readlink(fdpath, target, sizeof(target) - 1);
		if (n > 0 && (target[n] = '\0', !strcmp(target, path)))
			fd = i;
	}
	full = open("/dev/full", O_WRONLY);
	CHECK(fd >= 0 && full >= 0 && dup2(full, fd) == fd);
	close(full);
	CHECK(trace_write(w, &s) == 0 && trace_write(w, &s) == 0); /* buffered */
	CHECK(trace_writer_flush(w) == -ENOSPC);
	CHECK(trace_write(w, &s) == -ENOSPC);
	trace_writer_get_stats(w, &ws);
	CHECK(ws.samples == 3); /* the two in the failed chunk are not */
	CHECK(trace_writer_close(w, NULL) == -ENOSPC);
}

/* ---- found by the fuzzer ---------------------------------------------- */

/* An empty user stack, the only one defined: no addresses at all yet
 * (s->addrs + 0 on a NULL array was undefined behaviour). */
TEST(harden_fuzz_empty_stack_first)
{
	const char *path = rt_path("emptystack.lp");
	struct trace_writer *w = rt_open(path);
	char *out = NULL;
	uint64_t t = 0;

	CHECK(w && rt_stack(w, 1, LP_STACK_USER, NULL, 0) == 0 &&
	      rt_samples(w, &t, 5, 5, 0, 1, 2) == 0 && trace_writer_close(w, NULL) == 0);
	CHECK(rt_run(cmd_report, &out, NULL, "report", "--format", "folded", path, NULL) == 0);
	CHECK(out && strstr(out, " 2\n"));
	free(out);
	out = NULL;
	/* The same in compiled code: placing the sample by its trace's
	 * snapshots looks at the (empty) stack too (found by the fuzzer). */
	{
		static const struct lp_lframe lf[] = { { LP_LFRAME_TRACE, 0, 3, 1 } };
		struct lp_record r = { .type = LP_REC_LUA_STACK,
				       .u.lua_stack = { .id = 2, .depth = 1, .frames = lf } };

		w = rt_open(path);
		CHECK(w && rt_stack(w, 1, LP_STACK_USER, NULL, 0) == 0 && trace_write(w, &r) == 0);
		r = (struct lp_record){ .type = LP_REC_SAMPLE, .u.sample = {
			.time_ns = 10, .pid = 5, .tid = 5, .ustack = 1, .lstack = 2,
			.vmstate = 0, .lua_state = LP_LUA_WALKED } };
		CHECK(trace_write(w, &r) == 0 && trace_writer_close(w, NULL) == 0);
	}
	CHECK(rt_run(cmd_report, &out, NULL, "report", "--format", "folded", path, NULL) == 0);
	CHECK(out && strstr(out, " 1\n"));
	free(out);
}

/* ---- a compression bomb ------------------------------------------------ */

#if defined(__SANITIZE_ADDRESS__)
#define UNDER_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define UNDER_ASAN 1
#endif
#endif

/* A trace of `chunks` zlib chunks of 16 MiB each once inflated, nearly all
 * of it one 12-byte sample record over and over: 1.4 M samples per chunk
 * in 16 KB of file.  Returns the samples written, or 0. */
static uint64_t write_bomb(const char *path, int chunks)
{
	static const uint8_t sample[] = { LP_REC_SAMPLE, 10, 0, 7, 7, 0, 1, 0, 0, 0, 0, 0 };
	static const uint64_t ka = RT_K(0) + 8;
	struct lp_buf raw = { 0 }, hdr = { 0 }, out = { 0 };
	uint64_t n = 0;
	FILE *f;

	unlink(path);
	f = fopen(path, "w");
	if (!f)
		return 0;
	lp_put_bytes(&hdr, LP_MAGIC, LP_MAGIC_SIZE);
	lp_put_u16(&hdr, LP_VERSION);
	lp_put_u16(&hdr, LP_HEADER_SIZE);
	lp_put_u32(&hdr, 0);
	lp_put_u32(&hdr, LP_COMPAT_CHUNK_SEQ);
	lp_put_u32(&hdr, lp_crc32(0, hdr.data, hdr.len));
	fwrite(hdr.data, 1, hdr.len, f);
	for (int c = 0; c < chunks; c++) {
		size_t bound, stored = 0;
		uint32_t crc;

		raw.len = 0;
		lp_put_uv(&raw, LP_REC_CHUNK);
		lp_put_uv(&raw, 1);
		lp_put_uv(&raw, (uint64_t)c);
		if (!c) { /* the stack the samples name: one kernel frame */
			struct lp_buf body = { 0 };

			lp_put_uv(&body, 1);
			lp_put_uv(&body, LP_STACK_KERNEL);
			lp_put_uv(&body, 1);
			lp_put_uv(&body, ka);
			lp_put_uv(&raw, LP_REC_STACK);
			lp_put_uv(&raw, body.len);
			lp_put_bytes(&raw, body.data, body.len);
			lp_buf_free(&body);
		}
		while (raw.len + sizeof(sample) <= LP_CHUNK_MAX_RAW) {
			lp_put_bytes(&raw, sample, sizeof(sample));
			n++;
		}
		bound = lp_compress_bound(LP_CODEC_ZLIB, raw.len);
		out.len = 0;
		if (lp_buf_reserve(&out, LP_CHUNK_HEADER_SIZE + bound) ||
		    lp_compress(LP_CODEC_ZLIB, raw.data, raw.len,
				out.data + LP_CHUNK_HEADER_SIZE, bound, &stored))
			n = 0;
		memcpy(out.data, LP_CHUNK_MAGIC, 4);
		out.data[4] = LP_CHUNK_RECORDS;
		out.data[5] = LP_CODEC_ZLIB;
		out.data[6] = out.data[7] = 0;
		put32(out.data + 8, (uint32_t)raw.len);
		put32(out.data + 12, (uint32_t)stored);
		crc = lp_crc32(lp_crc32(0, out.data + 4, 12), out.data + LP_CHUNK_HEADER_SIZE, stored);
		put32(out.data + 16, crc);
		fwrite(out.data, 1, LP_CHUNK_HEADER_SIZE + stored, f);
	}
	lp_buf_free(&raw);
	lp_buf_free(&hdr);
	lp_buf_free(&out);
	return fclose(f) ? 0 : n;
}

/* A line of /proc/self/status ("VmRSS:", "VmHWM:"), in KiB. */
static long status_kib(const char *key)
{
	char line[256];
	long v = -1;
	FILE *f = fopen("/proc/self/status", "r");

	while (f && fgets(line, sizeof(line), f))
		if (!strncmp(line, key, strlen(key)))
			v = strtol(line + strlen(key), NULL, 10);
	if (f)
		fclose(f);
	return v;
}

/* Runs `report --format folded` on path in a child: its CPU time in ms,
 * and how much its resident set grew, in KiB; the summed counts. */
static int bomb_run(const char *path, long *cpu_ms, long *grew_kib, uint64_t *samples)
{
	char out[300];
	struct rusage ru;
	int pipefd[2], status;
	pid_t pid;
	FILE *f;

	snprintf(out, sizeof(out), "%s.folded", path);
	if (pipe(pipefd))
		return -1;
	pid = fork();
	if (pid == 0) {
		char *argv[] = { "report", "--format", "folded", "-o", out, (char *)path, NULL };
		int rc, fd = open("/dev/null", O_WRONLY), clear = open("/proc/self/clear_refs", O_WRONLY);
		long before, peak;

		/* Free memory of the test process given back first, so that
		 * what the report needs shows; then "5" resets the peak
		 * resident set (VmHWM) to what it is now. */
		malloc_trim(0);
		if (clear < 0 || write(clear, "5", 1) != 1)
			_exit(3);
		before = status_kib("VmRSS:");
		dup2(fd, 2);
		rc = cmd_report(6, argv);
		peak = status_kib("VmHWM:") - before;
		if (write(pipefd[1], &peak, sizeof(peak)) != sizeof(peak))
			rc = 1;
		_exit(rc);
	}
	close(pipefd[1]);
	if (pid < 0 || read(pipefd[0], grew_kib, sizeof(*grew_kib)) != sizeof(*grew_kib) ||
	    wait4(pid, &status, 0, &ru) != pid || !WIFEXITED(status) || WEXITSTATUS(status)) {
		close(pipefd[0]);
		return -1;
	}
	close(pipefd[0]);
	*cpu_ms = (ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1000 +
		  (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1000;
	*samples = 0;
	f = fopen(out, "r");
	if (f) {
		unsigned long long c;

		while (fscanf(f, "%*s %llu", &c) == 1)
			*samples += c;
		fclose(f);
	}
	return 0;
}

/* A trace that inflates a thousandfold reports in memory bounded by one
 * chunk, and in time that grows with the samples, not faster. */
TEST(harden_compression_bomb_bounded_and_linear)
{
	const char *one = rt_path("bomb1.lp"), *two = rt_path("bomb2.lp");
	uint64_t n1 = write_bomb(one, 1), n2 = write_bomb(two, 2), got;
	long cpu1, cpu2, rss1, rss2;
	struct stat st;

	CHECK(n1 > 1000000 && n2 >= 2 * n1 && n2 <= 2 * n1 + 2); /* + where the stack was */
	CHECK(stat(two, &st) == 0 && st.st_size < 100000); /* 30 MiB of records */
	/* The least of three runs each, interleaved: on a virtual machine
	 * time stolen by the host is charged to the process as CPU time, and
	 * a busy host stole 3x once; the least is the code's own cost. */
	cpu1 = cpu2 = LONG_MAX;
	for (int i = 0; i < 3; i++) {
		long c1, c2;

		CHECK(bomb_run(one, &c1, &rss1, &got) == 0 && got == n1);
		CHECK(bomb_run(two, &c2, &rss2, &got) == 0 && got == n2);
		cpu1 = c1 < cpu1 ? c1 : cpu1;
		cpu2 = c2 < cpu2 ? c2 : cpu2;
	}
	printf("  compression bomb: %llu samples in %lld bytes: %ld ms, +%ld KiB; "
	       "twice as many: %ld ms, +%ld KiB\n", (unsigned long long)n2 / 2,
	       (long long)st.st_size / 2, cpu1, rss1, cpu2, rss2);
	/* Linear: twice the samples, about twice the time (4 if quadratic). */
	CHECK(cpu2 < 3 * cpu1 + 200);
#ifndef UNDER_ASAN
	/* One 16 MiB chunk inflated at a time, plus small tables; no more
	 * for twice the chunks.  (ASan keeps freed memory aside.) */
	CHECK(rss1 < 40 * 1024 && rss2 < rss1 + 8 * 1024);
#endif
}

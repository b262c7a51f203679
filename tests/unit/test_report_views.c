/*
 * test_report_views.c - the formats other tools read (flame graph SVG,
 * pprof, speedscope), `luaprof diff`, --from/--to and several traces in
 * one report, on traces written with the real writer.  Names in these
 * traces carry XML, JSON and invalid UTF-8 on purpose: every format
 * must escape them.  tests/e2e/views.sh checks the same formats with
 * their real consumers (go tool pprof, Chromium, speedscope).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <zlib.h>

#include "lib/lua_bc.h"
#include "tests/unit/pb_read.h"
#include "tests/unit/report_test.h"


/* A chunk name no output may pass through raw: markup, quotes, a
 * backslash and a byte that is not UTF-8. */
#define CHUNK "@/srv/<x>&\"q\\\xff.lua"
#define CHUNK_XML "/srv/&lt;x&gt;&amp;&quot;q\\\xef\xbf\xbd.lua"
#define CHUNK_JSON "/srv/<x>&\\\"q\\\\\\ufffd.lua"

/* pid 40 ("app"), threads 40 and 41: host code at 0x10000.., the VM at
 * 0x20000..0x21000.  The main chunk calls the global `work` (defined at
 * line 10, running line 12), which calls string.rep.  Thread 40 takes
 * n40 samples `gap` ns apart from time 1 s; thread 41 takes 2 samples in
 * the kernel function sys_read from 1 s.  Then `extra` samples of
 * thread 40 in main alone (no work frame) follow.  With events, off-CPU
 * events too (and losses, with events 2). */
static int write_views_trace_ev(const char *path, int n40, uint64_t gap, int extra,
				int events)
{
	static const uint32_t main_bc[] = { LBC_AD(LBC_FUNCV, 2, 0), LBC_AD(LBC_GGET, 0, 0),
					    LBC_ABC(LBC_CALL, 0, 1, 1), LBC_AD(LBC_RET0, 0, 1) };
	static const uint32_t main_lines[] = { 0, 3, 3, 4 };
	static const uint32_t work_bc[] = { LBC_AD(LBC_FUNCF, 3, 0), LBC_AD(LBC_KSHORT, 0, 1),
					    LBC_ABC(LBC_CALL, 0, 1, 1), LBC_AD(LBC_RET0, 0, 1) };
	static const uint32_t work_lines[] = { 10, 11, 12, 13 };
	static const struct lp_proto_kstr kstr[] = { { 0, "work" } };
	static const struct lp_lframe frames[] = {
		{ LP_LFRAME_FF, 0, 7, 0 },
		{ LP_LFRAME_LUA, 0, 2, 3 },
		{ LP_LFRAME_LUA, 3, 1, 3 },
		{ LP_LFRAME_ENTRY, 0, 0, 0 },
	}, main_only[] = {
		{ LP_LFRAME_LUA, 3, 1, 3 },
		{ LP_LFRAME_ENTRY, 0, 0, 0 },
	};
	static const char *const kfn[] = { "sys_read" };
	uint64_t native[] = { 0x10100, 0x20400, 0x10200 }, vm_only[] = { 0x20400, 0x10200 };
	static const int ks[] = { 0 };
	struct lp_record rec = { 0 };
	struct trace_writer *w = rt_open(path);
	uint64_t t = 1000000000ull;
	int err;

	if (!w)
		return -1;
	err = rt_meta(w, t - 1000, 1700000000ull * 1000000000ull) ?:
	      rt_lua_host(w, 40, "app", t, 8);
	rec.type = LP_REC_PROTO;
	rec.u.proto = (struct lp_proto){ .id = 1, .chunkname = CHUNK, .firstline = 0,
					 .numline = 5, .nbc = 4, .bc = main_bc,
					 .lines = main_lines, .nkstr = 1, .kstr = kstr };
	err = err ?: trace_write(w, &rec);
	rec.u.proto = (struct lp_proto){ .id = 2, .chunkname = CHUNK, .firstline = 10,
					 .numline = 4, .nbc = 4, .bc = work_bc,
					 .lines = work_lines };
	err = err ?: trace_write(w, &rec);
	rec.type = LP_REC_LUA_STACK;
	rec.u.lua_stack = (struct lp_lua_stack){ .id = 9, .depth = 4, .frames = frames };
	err = err ?: trace_write(w, &rec);
	rec.u.lua_stack = (struct lp_lua_stack){ .id = 10, .depth = 2, .frames = main_only };
	err = err ?: trace_write(w, &rec) ?: rt_stack(w, 1, LP_STACK_USER, native, 3) ?:
	      rt_stack(w, 2, LP_STACK_USER, vm_only, 2) ?: rt_kstack(w, 3, ks, 1);
	for (int i = 0; !err && i < n40 + extra; i++) {
		rec.type = LP_REC_SAMPLE;
		rec.u.sample = (struct lp_sample){ .time_ns = t + i * gap, .pid = 40, .tid = 40,
						   .ustack = i < n40 ? 1 : 2,
						   .lstack = i < n40 ? 9 : 10,
						   .vmstate = ~0, .lua_state = LP_LUA_WALKED };
		err = trace_write(w, &rec);
	}
	for (int i = 0; !err && i < 2; i++) {
		rec.u.sample = (struct lp_sample){ .time_ns = t + i * gap, .pid = 40, .tid = 41,
						   .kstack = 3, .lua_state = LP_LUA_NONE };
		err = trace_write(w, &rec);
	}
	/* Off-CPU: 3 events of 1.5 ms in work, 1 of 0.4 ms in sys_read, and
	 * 2 of a kind no luaprof knows (99), among the samples' times. */
	for (int i = 0; !err && events && i < 6; i++) {
		rec.type = LP_REC_EVENT;
		rec.u.event = (struct lp_event){
			.kind = i < 4 ? LP_KIND_OFF_CPU : 99,
			.weight = i < 3 ? 1500000 : 400000,
			.s = { .time_ns = t + i * gap + 5000, .pid = 40, .tid = i < 3 ? 40 : 41,
			       .ustack = i < 3 ? 1 : 0, .lstack = i < 3 ? 9 : 0,
			       .kstack = i < 3 ? 0 : 3, .vmstate = ~0,
			       .lua_state = i < 3 ? LP_LUA_WALKED : LP_LUA_NONE },
		};
		err = trace_write(w, &rec);
	}
	/* events == 2: 2 events lost in the ring buffer, and 3 waits not
	 * measured. */
	if (events == 2)
		err = err ?: rt_lost(w, 2, LP_LOST_RINGBUF) ?: rt_lost(w, 3, LP_LOST_UNTRACKED);
	err = err ?: rt_kfuncs(w, kfn, 1);
	return trace_writer_close(w, NULL) ?: err;
}

static int write_views_trace(const char *path, int n40, uint64_t gap, int extra)
{
	return write_views_trace_ev(path, n40, gap, extra, 0);
}

TEST(views_help_lists_every_format)
{
	static const char *const names[] = { "top", "folded", "callgraph", "flamegraph",
					      "pprof", "speedscope" };
	char *out = NULL, *err = NULL;

	CHECK(rt_run(cmd_report, &out, NULL, "report", "--help", NULL) == 0);
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		char want[64];

		snprintf(want, sizeof(want), "  --format %s ", names[i]);
		CHECK(strstr(out, want));
	}
	free(out);
	CHECK(rt_run(cmd_report, NULL, &err, "report", "--format", "svg", "x.lp", NULL) == 2);
	CHECK(strstr(err, "unknown format 'svg'"));
	free(err);
}

TEST(views_flamegraph_escapes_and_colours)
{
	const char *path = rt_path("views.lp"), *svg = rt_path("views.svg");
	char *s;

	CHECK(write_views_trace(path, 6, 10000000, 0) == 0);
	CHECK(rt_run(cmd_report, NULL, NULL, "report", "--format", "flamegraph", "-o", svg,
		     path, NULL) == 0);
	s = rt_slurp(svg);
	CHECK(s);
	CHECK(!strncmp(s, "<?xml", 5));
	CHECK(strstr(s, "<title>work (" CHUNK_XML ":10) (6 samples, 75.00%)</title>"));
	CHECK(strstr(s, "<title>sys_read_[k] (2 samples, 25.00%)</title>"));
	CHECK(strstr(s, "<title>all (8 samples, 100.00%)</title>"));
	/* Nothing from the trace arrives raw. */
	CHECK(!strstr(s, "<x>") && !strstr(s, "\xff"));
	/* The title says what was recorded. */
	CHECK(strstr(s, "luaprof: luaprof record -F 99 -p 100</text>"));
	CHECK(strstr(s, "8 samples</text>"));
	/* The script is inside; nothing is fetched. */
	CHECK(strstr(s, "<![CDATA[") && strstr(s, "function fgZoom"));
	CHECK(!strstr(s, "href") && !strstr(s, "src="));
	/* Lua frames green, the builtin aqua, the kernel orange. */
	{
		const char *work = strstr(s, "<title>work ("), *rep = strstr(s, "<title>string.rep (");
		const char *k = strstr(s, "<title>sys_read_[k] (");
		int r, g, b;

		CHECK(work && rep && k);
		CHECK(sscanf(strstr(work, "fill=\"rgb(") + 10, "%d,%d,%d", &r, &g, &b) == 3);
		CHECK(g > 170 && r < 130 && b < 110);
		CHECK(sscanf(strstr(rep, "fill=\"rgb(") + 10, "%d,%d,%d", &r, &g, &b) == 3);
		CHECK(g > 190 && b > 190 && r < 130);
		CHECK(sscanf(strstr(k, "fill=\"rgb(") + 10, "%d,%d,%d", &r, &g, &b) == 3);
		CHECK(r >= 230 && g >= 120 && g < 180 && b < 60);
	}
	free(s);
}

/* The y of the first frame whose title starts with `name`. */
static int frame_y(const char *s, const char *name)
{
	char want[128];
	const char *p;

	snprintf(want, sizeof(want), "<title>%s", name);
	p = strstr(s, want);
	if (!p || !(p = strstr(p, " y=\"")))
		return -1;
	return atoi(p + 4);
}

TEST(views_flamegraph_inverted)
{
	const char *path = rt_path("views.lp"), *svg = rt_path("views.svg");
	char *s;
	int root, leaf;

	CHECK(write_views_trace(path, 6, 10000000, 0) == 0);
	CHECK(rt_run(cmd_report, NULL, NULL, "report", "--format=flamegraph", "-o", svg, path,
		     NULL) == 0);
	s = rt_slurp(svg);
	root = frame_y(s, "all ");
	leaf = frame_y(s, "string.rep ");
	free(s);
	CHECK(root > 0 && leaf > 0 && root > leaf); /* flames grow up */
	CHECK(rt_run(cmd_report, NULL, NULL, "report", "--format=flamegraph", "--inverted",
		     "-o", svg, path, NULL) == 0);
	s = rt_slurp(svg);
	root = frame_y(s, "all ");
	leaf = frame_y(s, "string.rep ");
	free(s);
	CHECK(root > 0 && leaf > 0 && root < leaf); /* icicles hang down */
}

TEST(views_flamegraph_merges_narrow_frames)
{
	const char *path = rt_path("narrow.lp"), *svg = rt_path("narrow.svg");
	struct trace_writer *w = rt_open(path);
	const char *names[40];
	char bufs[40][16];
	uint64_t t = 0;
	char *s;

	CHECK(w);
	/* One wide stack of 100000 samples, 39 one-sample siblings. */
	for (int i = 0; i < 40; i++) {
		int st[2] = { 0, i };

		snprintf(bufs[i], sizeof(bufs[i]), "f%02d", i);
		names[i] = bufs[i];
		CHECK(rt_kstack(w, i + 1, st, 2) == 0);
		CHECK(rt_samples(w, &t, 1, 1, i + 1, 0, i == 1 ? 100000 : 1) == 0);
	}
	CHECK(rt_kfuncs(w, names, 40) == 0);
	CHECK(trace_writer_close(w, NULL) == 0);
	CHECK(rt_run(cmd_report, NULL, NULL, "report", "--format", "flamegraph", "-o", svg, path,
		     NULL) == 0);
	s = rt_slurp(svg);
	CHECK(strstr(s, "<title>f01_[k] (100000 samples"));
	CHECK(!strstr(s, "<title>f02_[k]"));
	/* Under the root f00, its 39 one-sample children (f00 itself,
	 * f02..f39) are one block. */
	CHECK(strstr(s, "<title>[39 frames, each under 0.1 px] (39 samples"));
	free(s);
}

/* ---- pprof, read back with a decoder of the test's own ---------------- */

struct pprof_read {
	const char *strs[256];
	uint32_t nstrs;
	uint64_t values[2], nsamples, nlabels;
	uint64_t fn_name[64], fn_file[64], fn_start[64], fn_id[64];
	uint32_t nfn;
	uint64_t loc_line[64], loc_fn[64], loc_map[64];
	uint32_t nloc;
	uint64_t nmaps;
	uint64_t type[2], unit[2]; /* sample types (string indices) */
	uint32_t ntypes;
	uint64_t default_type, period_type;
};

static int read_pprof(const uint8_t *v, size_t n, struct pprof_read *pr)
{
	struct pbr r = { v, v + n }, sub, sub2, sub3;
	uint32_t f, g, h;
	uint64_t x, y;
	int rc;

	memset(pr, 0, sizeof(*pr));
	while ((rc = pbr_next(&r, &f, &x, &sub)) == 1) {
		if (f == 6 && pr->nstrs < 256) {
			char *s = strndup((const char *)sub.p, sub.end - sub.p);

			pr->strs[pr->nstrs++] = s;
		} else if (f == 2) {
			pr->nsamples++;
			while (pbr_next(&sub, &g, &y, &sub2) == 1) {
				if (g == 2) { /* packed values */
					for (int i = 0; i < 2 && !pbr_varint(&sub2, &y); i++)
						pr->values[i] += y;
				} else if (g == 3) {
					pr->nlabels++;
				}
			}
		} else if (f == 5 && pr->nfn < 64) {
			while (pbr_next(&sub, &g, &y, &sub2) == 1) {
				if (g == 1)
					pr->fn_id[pr->nfn] = y;
				if (g == 2)
					pr->fn_name[pr->nfn] = y;
				if (g == 4)
					pr->fn_file[pr->nfn] = y;
				if (g == 5)
					pr->fn_start[pr->nfn] = y;
			}
			pr->nfn++;
		} else if (f == 4 && pr->nloc < 64) {
			while (pbr_next(&sub, &g, &y, &sub2) == 1) {
				if (g == 2)
					pr->loc_map[pr->nloc] = y;
				if (g != 4)
					continue;
				while (pbr_next(&sub2, &h, &y, &sub3) == 1) {
					if (h == 1)
						pr->loc_fn[pr->nloc] = y;
					if (h == 2)
						pr->loc_line[pr->nloc] = y;
				}
			}
			pr->nloc++;
		} else if (f == 3) {
			pr->nmaps++;
		} else if (f == 1 && pr->ntypes < 2) {
			while (pbr_next(&sub, &g, &y, &sub2) == 1) {
				if (g == 1)
					pr->type[pr->ntypes] = y;
				if (g == 2)
					pr->unit[pr->ntypes] = y;
			}
			pr->ntypes++;
		} else if (f == 14) {
			pr->default_type = x;
		} else if (f == 11) {
			pr->period_type = 1;
		}
	}
	return rc;
}

static const char *pp_str(const struct pprof_read *pr, uint64_t i)
{
	return i < pr->nstrs ? pr->strs[i] : "";
}

TEST(views_pprof_functions_lines_labels)
{
	const char *path = rt_path("views.lp"), *pb = rt_path("views.pb.gz");
	struct pprof_read pr;
	uint8_t *v;
	size_t n = 0;
	int found = 0;

	CHECK(write_views_trace(path, 6, 10000000, 0) == 0);
	CHECK(rt_run(cmd_report, NULL, NULL, "report", "--format", "pprof", "-o", pb, path,
		     NULL) == 0);
	v = gunzip_file(pb, &n);
	CHECK(v);
	CHECK(read_pprof(v, n, &pr) == 0);
	free(v);
	CHECK(pr.nstrs > 0 && !strcmp(pr.strs[0], ""));
	/* Two sample types; 8 samples of 1/99 s each. */
	CHECK(pr.values[0] == 8);
	CHECK(pr.values[1] == 8 * (1000000000ull / 99));
	/* (stack, thread) pairs: threads 40 and 41; four labels each. */
	CHECK(pr.nsamples == 2 && pr.nlabels == 8);
	/* work: a function named as top names it, with its chunk (clean
	 * UTF-8) and start line; its location runs line 12. */
	for (uint32_t i = 0; i < pr.nfn; i++) {
		if (strncmp(pp_str(&pr, pr.fn_name[i]), "work (", 6))
			continue;
		found = 1;
		CHECK(!strcmp(pp_str(&pr, pr.fn_name[i]),
			      "work (/srv/<x>&\"q\\\xef\xbf\xbd.lua:10)"));
		CHECK(!strcmp(pp_str(&pr, pr.fn_file[i]), "/srv/<x>&\"q\\\xef\xbf\xbd.lua"));
		CHECK(pr.fn_start[i] == 10);
		for (uint32_t l = 0; l < pr.nloc; l++)
			if (pr.loc_fn[l] == pr.fn_id[i])
				CHECK(pr.loc_line[l] == 12);
	}
	CHECK(found);
	/* Labels' keys and values are strings of the table. */
	found = 0;
	for (uint32_t i = 0; i < pr.nstrs; i++)
		found += !strcmp(pr.strs[i], "pid") + !strcmp(pr.strs[i], "tid") +
			 !strcmp(pr.strs[i], "process") + !strcmp(pr.strs[i], "vmstate") +
			 !strcmp(pr.strs[i], "Interpreted") + !strcmp(pr.strs[i], "app") +
			 !strcmp(pr.strs[i], "[kernel.kallsyms]");
	CHECK(found == 7);
	for (uint32_t i = 0; i < pr.nstrs; i++)
		free((char *)pr.strs[i]);
}

TEST(views_speedscope_threads_and_times)
{
	const char *path = rt_path("views.lp"), *js = rt_path("views.json");
	char *s, *t40, *t41;

	/* 10 ms apart at 99 Hz (a period of 10.1 ms): back to back; then
	 * a gap of 50 ms before 2 samples in main alone. */
	CHECK(write_views_trace(path, 6, 10000000, 0) == 0);
	CHECK(rt_run(cmd_report, NULL, NULL, "report", "--format", "speedscope", "-o", js,
		     path, NULL) == 0);
	s = rt_slurp(js);
	CHECK(s);
	CHECK(!strncmp(s, "{\"$schema\":\"https://www.speedscope.app/file-format-schema.json\"", 62));
	t40 = strstr(s, "\"name\":\"app 40/40\"");
	t41 = strstr(s, "\"name\":\"app 40/41\"");
	CHECK(t40 && t41);
	/* Six samples of one stack are one of six periods' weight. */
	CHECK(strstr(t40, "\"weights\":[60606060],\"startValue\":0,\"endValue\":60606060}"));
	CHECK(strstr(t41, "\"weights\":[20202020],\"startValue\":0,\"endValue\":20202020}"));
	/* Names escaped as JSON; files and lines where known. */
	CHECK(strstr(s, "{\"name\":\"work (" CHUNK_JSON ":10)\",\"file\":\"" CHUNK_JSON
			"\",\"line\":10}"));
	CHECK(!strstr(s, "\xff"));
	free(s);
}

TEST(views_speedscope_gaps_are_real_time)
{
	const char *path = rt_path("gaps.lp"), *js = rt_path("gaps.json");
	char *s;

	/* Thread 40: samples 100 ms apart at 99 Hz: each followed by an
	 * empty stack until the next, so times are real. */
	CHECK(write_views_trace(path, 3, 100000000, 0) == 0);
	CHECK(rt_run(cmd_report, NULL, NULL, "report", "--format", "speedscope", "-o", js,
		     path, NULL) == 0);
	s = rt_slurp(js);
	CHECK(s);
	CHECK(strstr(s, "\"samples\":[[0,1,2,3,4],[],[0,1,2,3,4],[],[0,1,2,3,4]],"
			"\"weights\":[10101010,89898990,10101010,89898990,10101010],"
			"\"startValue\":0,\"endValue\":210101010}"));
	free(s);
}

TEST(views_speedscope_time_order_within_threads)
{
	const char *path = rt_path("order.lp"), *js = rt_path("order.json");
	struct lp_record r = { .type = LP_REC_SAMPLE };
	static const uint64_t at[] = { 0x10100, 0x10200, 0x10300 };
	/* Thread 41's samples come out of time order, 40's in it: both are
	 * written by time, 40 (the lower tid) first. */
	static const struct { uint32_t tid; uint64_t ms, stack; } smp[] = {
		{ 41, 30, 1 }, { 40, 0, 1 }, { 41, 10, 2 }, { 40, 10, 3 }, { 41, 20, 3 },
	};
	struct trace_writer *w = rt_open(path);
	char *s, *t40, *t41;
	int err;

	CHECK(w);
	err = rt_process(w, 40, 1, LP_PROC_EXISTING, "app", "/x/host", 0) ?:
	      rt_map1(w, 40, LP_MAPS_REPLACE, 0x10000, 0x30000, 0, "/x/host");
	for (int i = 0; i < 3 && !err; i++)
		err = rt_stack(w, i + 1, LP_STACK_USER, &at[i], 1);
	for (size_t i = 0; i < sizeof(smp) / sizeof(smp[0]) && !err; i++) {
		r.u.sample = (struct lp_sample){ .time_ns = 1000000000ull + smp[i].ms * 1000000,
						 .pid = 40, .tid = smp[i].tid,
						 .ustack = smp[i].stack };
		err = trace_write(w, &r);
	}
	CHECK(!err && trace_writer_close(w, NULL) == 0);
	CHECK(rt_run(cmd_report, NULL, NULL, "report", "--format", "speedscope", "-o", js,
		     path, NULL) == 0);
	s = rt_slurp(js);
	CHECK(s);
	t40 = strstr(s, "\"name\":\"app 40/40\"");
	t41 = strstr(s, "\"name\":\"app 40/41\"");
	CHECK(t40 && t41 && t40 < t41);
	/* Frames numbered as met: host+0x100 (0), host+0x300 (1), then 41's
	 * host+0x200 (2) at 10 ms, host+0x300 at 20, host+0x100 at 30. */
	CHECK(strstr(t40, "\"samples\":[[0],[1]],"));
	CHECK(strstr(t41, "\"samples\":[[2],[1],[0]],"));
	CHECK(strstr(s, "\"frames\":[\n{\"name\":\"host+0x100\"},\n{\"name\":\"host+0x300\"},"
			"\n{\"name\":\"host+0x200\"}]"));
	free(s);
}

/* ---- --from/--to, several traces -------------------------------------- */

static long folded_count(const char *out, const char *stack)
{
	const char *p = strstr(out, stack);

	return p ? strtol(p + strlen(stack), NULL, 10) : -1;
}

TEST(views_time_window)
{
	const char *path = rt_path("win.lp");
	char *out = NULL;

	/* Thread 40: 10 samples 100 ms apart from 0 s (its first sample). */
	CHECK(write_views_trace(path, 10, 100000000, 0) == 0);
	CHECK(rt_run(cmd_report, &out, NULL, "report", "--format", "folded", "--tid", "40",
		     "--from", "0.25", "--to", "0.55", path, NULL) == 0);
	CHECK(folded_count(out, "string.rep;host+0x100 ") == 3); /* 0.3, 0.4, 0.5 */
	free(out);
	out = NULL;
	CHECK(rt_run(cmd_report, &out, NULL, "report", "--format", "folded", "--from", "0.85",
		     path, NULL) == 0);
	CHECK(folded_count(out, "string.rep;host+0x100 ") == 1);
	CHECK(!strstr(out, "sys_read")); /* thread 41 ran at 0 and 0.1 s */
	free(out);
	out = NULL;
	CHECK(rt_run(cmd_report, &out, NULL, "report", "--format", "top", "--from", "0.9",
		     "--to", "0.95", path, NULL) == 0);
	CHECK(strstr(out, "# samples: 1 shown of 12 read"));
	free(out);
	CHECK(rt_run(cmd_report, NULL, NULL, "report", "--from", "2", "--to", "1", path,
		     NULL) == 2);
	CHECK(rt_run(cmd_report, NULL, NULL, "report", "--from", "-1", path, NULL) == 2);
}

TEST(views_several_traces_merged)
{
	const char *a = rt_path("a.lp"), *b = rt_path("b.lp");
	char *out = NULL;

	CHECK(write_views_trace(a, 6, 10000000, 0) == 0);
	CHECK(write_views_trace(b, 4, 10000000, 3) == 0);
	CHECK(rt_run(cmd_report, &out, NULL, "report", "--format", "folded", a, b, NULL) == 0);
	CHECK(folded_count(out, "string.rep;host+0x100 ") == 10);
	CHECK(folded_count(out, "sys_read_[k] ") == 4);
	CHECK(folded_count(out, ".lua:0) ") == 3); /* main alone */
	free(out);
	out = NULL;
	CHECK(rt_run(cmd_report, &out, NULL, "report", a, b, NULL) == 0);
	CHECK(strstr(out, "# traces (merged): "));
	CHECK(strstr(out, "# samples: 17, lost: 0"));
	free(out);
}

TEST(views_output_private_never_through_symlink)
{
	const char *path = rt_path("views.lp"), *o = rt_path("out.svg"), *l = rt_path("link");
	char *err = NULL;
	struct stat st;

	CHECK(write_views_trace(path, 2, 10000000, 0) == 0);
	unlink(o);
	CHECK(rt_run(cmd_report, NULL, NULL, "report", "--format", "flamegraph", "-o", o, path,
		     NULL) == 0);
	CHECK(stat(o, &st) == 0 && (st.st_mode & 0777) == 0600);
	unlink(l);
	CHECK(symlink(o, l) == 0);
	CHECK(rt_run(cmd_report, NULL, &err, "report", "--format", "folded", "-o", l, path,
		     NULL) == 1);
	CHECK(strstr(err, "link"));
	free(err);
	unlink(l);
}

/* ---- diff ----------------------------------------------------------------- */

TEST(views_diff_ranks_the_change)
{
	const char *a = rt_path("base.lp"), *b = rt_path("new.lp");
	char *out = NULL;
	const char *work, *mainl;

	/* Base: 6 samples in work, 2 in the kernel, 3 in main alone (of 11);
	 * new: 3 in work, 2 kernel, 6 main (of 11). */
	CHECK(write_views_trace(a, 6, 10000000, 3) == 0);
	CHECK(write_views_trace(b, 3, 10000000, 6) == 0);
	CHECK(rt_run(cmd_diff, &out, NULL, "diff", a, b, NULL) == 0);
	/* The C code string.rep ran (host+0x100, the leaf) lost 27.27
	 * points of self to main's; work and string.rep, never leaves,
	 * changed only in total, so they come after, by name. */
	work = strstr(out, "    54.55    27.27   -27.27      54.55     27.27    -27.27  host+0x100\n");
	mainl = strstr(out, "    27.27    54.55   +27.27      81.82     81.82     +0.00  main (");
	CHECK(work && mainl && work < mainl);
	work = strstr(out, "     0.00     0.00    +0.00      54.55     27.27    -27.27  work (");
	CHECK(work && mainl < work);
	CHECK(strstr(out, "     0.00     0.00    +0.00      54.55     27.27    -27.27  string.rep\n") <
	      work);
	CHECK(!strstr(out, "sys_read")); /* unchanged: not listed */
	free(out);
	out = NULL;
	CHECK(rt_run(cmd_diff, &out, NULL, "diff", "--format", "folded", a, b, NULL) == 0);
	CHECK(strstr(out, "string.rep;host+0x100 6 3\n"));
	CHECK(strstr(out, "sys_read_[k] 2 2\n"));
	free(out);
	CHECK(rt_run(cmd_diff, NULL, NULL, "diff", a, NULL) == 2);
}

TEST(views_diff_flamegraph_colours)
{
	const char *a = rt_path("base.lp"), *b = rt_path("new.lp"), *svg = rt_path("d.svg");
	const char *p;
	char *s;
	int r, g, bl;

	CHECK(write_views_trace(a, 6, 10000000, 3) == 0);
	CHECK(write_views_trace(b, 3, 10000000, 6) == 0);
	CHECK(rt_run(cmd_diff, NULL, NULL, "diff", "--format", "flamegraph", "-o", svg, a, b,
		     NULL) == 0);
	s = rt_slurp(svg);
	CHECK(s);
	/* string.rep shrank (by the most of any frame): full blue. */
	p = strstr(s, "<title>string.rep (3 samples, 27.27%; base 54.55%, change -27.27%)");
	CHECK(p);
	CHECK(sscanf(strstr(p, "fill=\"rgb(") + 10, "%d,%d,%d", &r, &g, &bl) == 3);
	CHECK(bl == 255 && r < 100);
	CHECK(strstr(s, "luaprof diff: "));
	free(s);
}


/* ---- event kinds ---------------------------------------------------- */

/* CPU samples read as before beside events of other kinds, which the
 * header counts; --kind off-cpu weighs its events in microseconds. */
TEST(kinds_one_at_a_time_weighted)
{
	const char *path = rt_path("kinds.lp"), *cpu_only = rt_path("kinds-cpu.lp");
	char *out = NULL, *plain = NULL, *err = NULL;

	CHECK(write_views_trace_ev(path, 6, 10000000, 0, 1) == 0);
	CHECK(write_views_trace(cpu_only, 6, 10000000, 0) == 0);
	/* cpu, the default: the same stacks and counts as without events. */
	CHECK(rt_run(cmd_report, &out, NULL, "report", "--format", "folded", path, NULL) == 0);
	CHECK(rt_run(cmd_report, &plain, NULL, "report", "--format", "folded", cpu_only,
		     NULL) == 0);
	CHECK(out && plain && !strcmp(out, plain));
	CHECK(strstr(out, ";work (") && strstr(out, " 6\n") && strstr(out, "sys_read_[k] 2\n"));
	free(out);
	free(plain);
	CHECK(rt_run(cmd_report, &out, NULL, "report", path, NULL) == 0);
	CHECK(strstr(out, "# samples: 8, lost: 0"));
	CHECK(strstr(out, "# also in the trace: 4 off-cpu events (--kind off-cpu), 2 events "
			  "of kinds this luaprof does not know\n"));
	free(out);
	/* off-cpu: 4.5 ms in work, 0.4 ms in sys_read, as microseconds. */
	CHECK(rt_run(cmd_report, &out, NULL, "report", "--kind", "off-cpu", "--format", "folded",
		     path, NULL) == 0);
	CHECK(strstr(out, ";work (") && strstr(out, " 4500\n") && strstr(out, "sys_read_[k] 400\n"));
	CHECK(rt_count(out, "\n") == 2);
	free(out);
	CHECK(rt_run(cmd_report, &out, NULL, "report", "--kind", "off-cpu", path, NULL) == 0);
	CHECK(strstr(out, "# kind: off-cpu, "));
	CHECK(strstr(out, "# off-cpu: 4900 us in 4 events, lost: 0"));
	CHECK(strstr(out, "# also in the trace: 8 cpu events (--kind cpu), 2 events"));
	CHECK(strstr(out, "        us  percent  function"));
	CHECK(strstr(out, "91.84%"));
	free(out);
	/* Waits not measured are lost to off-cpu's view (and wall's), and
	 * said apart in the others'. */
	CHECK(write_views_trace_ev(path, 6, 10000000, 0, 2) == 0);
	CHECK(rt_run(cmd_report, &out, &err, "report", path, NULL) == 0);
	CHECK(strstr(out, "# samples: 8, lost: 2 (20.00%), waits not measured: 3 "
			  "(off-cpu, lua-wait)\n"));
	free(out);
	free(err);
	CHECK(rt_run(cmd_report, &out, &err, "report", "--kind", "off-cpu", path, NULL) == 0);
	CHECK(strstr(out, "# off-cpu: 4900 us in 4 events, lost: 5 (55.56%)\n"));
	free(out);
	free(err);
	/* Misuse: a kind no one knows; a mode that counts CPU samples. */
	CHECK(rt_run(cmd_report, NULL, &err, "report", "--kind", "walls", path, NULL) == 2);
	CHECK(strstr(err, "unknown event kind 'walls'"));
	free(err);
	CHECK(rt_run(cmd_report, NULL, &err, "report", "--kind", "off-cpu", "--vmstate", path,
		     NULL) == 2);
	CHECK(strstr(err, "--vmstate counts cpu events: not with --kind off-cpu"));
	free(err);
}

/* The wall view: each thread's CPU samples (the sampling period each, 99
 * Hz here: 10,101,010 ns) and its waits off the CPU on one axis, in
 * microseconds, under the thread; the events of other kinds left out. */
TEST(kinds_wall_view)
{
	const char *path = rt_path("kinds.lp");
	char *out = NULL;

	CHECK(write_views_trace_ev(path, 6, 10000000, 0, 1) == 0);
	CHECK(rt_run(cmd_report, &out, NULL, "report", "--kind", "wall", "--format", "folded",
		     path, NULL) == 0);
	/* tid 40: 6 samples and 3 waits of 1.5 ms in work; tid 41: 2 samples
	 * and a wait of 0.4 ms in sys_read. */
	CHECK(out && rt_count(out, "\n") == 2);
	CHECK(strstr(out, "app tid 40;") && strstr(out, ";work (") && strstr(out, " 65106\n"));
	CHECK(strstr(out, "app tid 41;") && strstr(out, "sys_read_[k] 20602\n"));
	free(out);
	CHECK(rt_run(cmd_report, &out, NULL, "report", "--kind", "wall", path, NULL) == 0);
	CHECK(out && strstr(out, "# kind: wall, "));
	CHECK(strstr(out, "# wall: 85708 us in 12 events, lost: 0"));
	CHECK(strstr(out, "# also in the trace: 2 events of kinds this luaprof does not know\n"));
	free(out);
}

/* pprof names a kind's sample types as Go's pprof does, and weighs each
 * sample by its event's weight, not a sampling period. */
TEST(kinds_pprof_sample_types)
{
	const char *path = rt_path("kinds.lp"), *pb = rt_path("kinds.pb.gz");
	struct pprof_read pr;
	uint8_t *v;
	size_t n = 0;

	CHECK(write_views_trace_ev(path, 6, 10000000, 0, 1) == 0);
	CHECK(rt_run(cmd_report, NULL, NULL, "report", "--kind", "off-cpu", "--format", "pprof",
		     "-o", pb, path, NULL) == 0);
	v = gunzip_file(pb, &n);
	CHECK(v);
	CHECK(read_pprof(v, n, &pr) == 0);
	free(v);
	CHECK(pr.ntypes == 2);
	CHECK(!strcmp(pp_str(&pr, pr.type[0]), "waits") &&
	      !strcmp(pp_str(&pr, pr.unit[0]), "count"));
	CHECK(!strcmp(pp_str(&pr, pr.type[1]), "off_cpu") &&
	      !strcmp(pp_str(&pr, pr.unit[1]), "nanoseconds"));
	CHECK(!strcmp(pp_str(&pr, pr.default_type), "off_cpu") && !pr.period_type);
	CHECK(pr.values[0] == 4 && pr.values[1] == 4900000);
	for (uint32_t i = 0; i < pr.nstrs; i++)
		free((char *)pr.strs[i]);
	/* CPU's as before: samples/count, cpu/nanoseconds with a period. */
	CHECK(rt_run(cmd_report, NULL, NULL, "report", "--format", "pprof", "-o", pb, path,
		     NULL) == 0);
	v = gunzip_file(pb, &n);
	CHECK(v && read_pprof(v, n, &pr) == 0);
	free(v);
	CHECK(!strcmp(pp_str(&pr, pr.type[0]), "samples") &&
	      !strcmp(pp_str(&pr, pr.type[1]), "cpu") && pr.period_type);
	CHECK(pr.values[0] == 8);
	for (uint32_t i = 0; i < pr.nstrs; i++)
		free((char *)pr.strs[i]);
}

/* info counts each kind's events and their weight. */
TEST(kinds_info_counts)
{
	const char *path = rt_path("kinds.lp");
	char *out = NULL;

	CHECK(write_views_trace_ev(path, 6, 10000000, 0, 1) == 0);
	CHECK(rt_run(cmd_info, &out, NULL, "info", path, NULL) == 0);
	CHECK(strstr(out, "\nsamples: 8 "));
	CHECK(strstr(out, "\nevents: 4 off-cpu (4900000 nanoseconds), 2 of kinds this luaprof "
			  "does not know\n"));
	free(out);
}

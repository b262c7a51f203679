/*
 * test_report_annotate.c - `report --annotate` and `--by line` on a
 * hand-built trace: self and total samples per source line from the
 * embedded lua_source record, a chunk not from a file shown as such, and
 * the same bytes on every run.
 */
#include <stdlib.h>
#include <string.h>

#include "lib/lua_bc.h"
#include "tests/unit/report_test.h"


static const char t_lua[] =
	"function work()\n"
	"  return string.rep('x', 9)\n"
	"end\n"
	"work()\n";

static int put(struct trace_writer *w, struct lp_record *rec)
{
	return trace_write(w, rec);
}

/* The LUA_SOURCE record (id 6) of /srv/t.lua, chunk @t.lua: t_lua. */
static int put_t_source(struct trace_writer *w)
{
	struct lp_record rec = { .type = LP_REC_LUA_SOURCE };

	rec.u.lua_source = (struct lp_lua_source){ .id = 6, .chunkname = "@t.lua",
						   .path = "/srv/t.lua",
						   .status = LP_LUASRC_WHOLE,
						   .size = sizeof(t_lua) - 1,
						   .text_len = sizeof(t_lua) - 1,
						   .text = t_lua };
	return put(w, &rec);
}

/* n samples of pid naming Lua stack lstack (0: none, the VM idle). */
struct lua_samples {
	uint64_t lstack;
	int n;
};

static int put_lua_samples(struct trace_writer *w, uint32_t pid,
			   const struct lua_samples *s, size_t count)
{
	struct lp_record rec = { .type = LP_REC_SAMPLE };
	uint64_t t = 0;
	int err = 0;

	for (size_t i = 0; !err && i < count; i++) {
		for (int k = 0; !err && k < s[i].n; k++) {
			rec.u.sample = (struct lp_sample){
				.time_ns = t += 1000, .pid = pid, .tid = pid,
				.lstack = s[i].lstack, .vmstate = ~0,
				.lua_state = s[i].lstack ? LP_LUA_WALKED : LP_LUA_IDLE };
			err = put(w, &rec);
		}
	}
	return err;
}

/* pid 40.  t.lua's main chunk (proto 1) calls the global work (proto 2)
 * at line 4, which calls string.rep at line 2: 5 samples there, 2 in main
 * itself at line 4, 1 in a chunk from stdin, 1 without Lua: 9 in all. */
static int write_annotate_trace(const char *path)
{
	static const uint32_t main_bc[] = { LBC_AD(LBC_FUNCV, 2, 0), LBC_AD(LBC_GGET, 0, 0),
					    LBC_ABC(LBC_CALL, 0, 1, 1), LBC_AD(LBC_RET0, 0, 1) };
	static const uint32_t main_lines[] = { 0, 4, 4, 5 };
	static const uint32_t work_bc[] = { LBC_AD(LBC_FUNCF, 3, 0), LBC_AD(LBC_KSHORT, 0, 1),
					    LBC_ABC(LBC_CALL, 0, 1, 1), LBC_AD(LBC_RET0, 0, 1) };
	static const uint32_t work_lines[] = { 1, 2, 2, 3 };
	static const uint32_t stdin_bc[] = { LBC_AD(LBC_FUNCF, 1, 0), LBC_AD(LBC_RET0, 0, 1) };
	static const uint32_t stdin_lines[] = { 1, 1 };
	static const struct lp_proto_kstr kstr[] = { { 0, "work" } };
	static const struct lp_lframe in_work[] = {
		{ LP_LFRAME_FF, 0, 7, 0 }, { LP_LFRAME_LUA, 0, 2, 2 },
		{ LP_LFRAME_LUA, 3, 1, 3 }, { LP_LFRAME_ENTRY, 0, 0, 0 },
	};
	static const struct lp_lframe in_main[] = {
		{ LP_LFRAME_LUA, 3, 1, 2 }, { LP_LFRAME_ENTRY, 0, 0, 0 },
	};
	static const struct lp_lframe in_stdin[] = {
		{ LP_LFRAME_LUA, 5, 3, 1 }, { LP_LFRAME_ENTRY, 0, 0, 0 },
	};
	static const struct lua_samples samples[] = {
		{ 9, 5 }, { 10, 2 }, { 11, 1 }, { 0, 1 },
	};
	struct lp_record rec = { 0 };
	struct trace_writer *w = rt_open(path);
	uint64_t t = 0;
	int err;

	if (!w)
		return -1;
	err = rt_process(w, 40, 1, LP_PROC_EXISTING, "host", "/x/host", t);
	err = err ?: rt_luajit(w, 40, 8);
	err = err ?: put_t_source(w);
	rec.type = LP_REC_PROTO;
	rec.u.proto = (struct lp_proto){ .id = 1, .chunkname = "@t.lua", .firstline = 0,
					 .numline = 5, .nbc = 4, .bc = main_bc,
					 .lines = main_lines, .nkstr = 1, .kstr = kstr,
					 .source = 6 };
	err = err ?: put(w, &rec);
	rec.u.proto = (struct lp_proto){ .id = 2, .chunkname = "@t.lua", .firstline = 1,
					 .numline = 2, .nbc = 4, .bc = work_bc,
					 .lines = work_lines, .source = 6 };
	err = err ?: put(w, &rec);
	rec.u.proto = (struct lp_proto){ .id = 3, .chunkname = "=stdin", .firstline = 1,
					 .numline = 0, .nbc = 2, .bc = stdin_bc,
					 .lines = stdin_lines };
	err = err ?: put(w, &rec);
	rec.type = LP_REC_LUA_STACK;
	rec.u.lua_stack = (struct lp_lua_stack){ 9, 4, in_work };
	err = err ?: put(w, &rec);
	rec.u.lua_stack = (struct lp_lua_stack){ 10, 2, in_main };
	err = err ?: put(w, &rec);
	rec.u.lua_stack = (struct lp_lua_stack){ 11, 2, in_stdin };
	err = err ?: put(w, &rec);
	err = err ?: put_lua_samples(w, 40, samples, sizeof(samples) / sizeof(samples[0]));
	return trace_writer_close(w, NULL) ?: err;
}

TEST(report_by_line_ranks_source_lines)
{
	const char *path = rt_path("annotate.lp");
	char *out = NULL, *again = NULL;

	CHECK(write_annotate_trace(path) == 0);
	CHECK(rt_run(cmd_report, &out, NULL, "report", "--by", "line", path, NULL) == 0);
	CHECK(strstr(out, "# luaprof report: lines\n"));
	CHECK(strstr(out, "\n       5  55.56%       5  55.56%  t.lua:2  work: "
		      "return string.rep('x', 9)\n"
		      "       2  22.22%       7  77.78%  t.lua:4  main: work()\n"
		      "       1  11.11%       1  11.11%  =stdin:1  ?: "
		      "(source not available: not loaded from a file)\n"));
	CHECK(rt_run(cmd_report, &again, NULL, "report", "--by", "line", path, NULL) == 0);
	CHECK(!strcmp(out, again));
	free(again);
	again = NULL;
	/* -n: the top row only. */
	CHECK(rt_run(cmd_report, &again, NULL, "report", "--by", "line", "-n", "1", path,
		     NULL) == 0);
	CHECK(strstr(again, "t.lua:2  work:") && !strstr(again, "t.lua:4"));
	free(again);
	free(out);
}

TEST(report_annotate_lists_functions_with_their_source)
{
	const char *path = rt_path("annotate2.lp");
	char *out = NULL, *err = NULL;

	CHECK(write_annotate_trace(path) == 0);
	CHECK(rt_run(cmd_report, &out, NULL, "report", "--annotate", path, NULL) == 0);
	/* Hottest first (by self), each line of the function with its
	 * self and total samples; '.' for none. */
	CHECK(strstr(out, "\nwork (t.lua:1-3): self 5 (55.56%), total 5 (55.56%) of 9 samples\n"
		      "    self   self%    total  total%   line  source\n"
		      "       .       .       .       .      1  function work()\n"
		      "       5  55.56%       5  55.56%      2    return string.rep('x', 9)\n"
		      "       .       .       .       .      3  end\n"));
	CHECK(strstr(out, "\nmain (t.lua:0-5): self 2 (22.22%), total 7 (77.78%) of 9 samples\n"));
	CHECK(strstr(out, "       2  22.22%       7  77.78%      4  work()\n"
		      "       .       .       .       .      5  \n"));
	CHECK(strstr(out, "\n? (=stdin:1-1): self 1 (11.11%), total 1 (11.11%) of 9 samples\n"
		      "  (source not available: not loaded from a file)\n"
		      "    self   self%    total  total%   line  source\n"
		      "       1  11.11%       1  11.11%      1  \n"));
	CHECK(strstr(out, "work (") < strstr(out, "main (") &&
	      strstr(out, "main (") < strstr(out, "? (=stdin"));
	free(out);
	out = NULL;
	CHECK(rt_run(cmd_report, &out, NULL, "report", "--annotate", "-n", "1", path, NULL) == 0);
	CHECK(strstr(out, "work (t.lua") && !strstr(out, "main (t.lua"));
	free(out);
	out = NULL;
	CHECK(rt_run(cmd_report, &out, &err, "report", "--by", "lines", path, NULL) == 2);
	CHECK(strstr(err, "unknown --by 'lines'"));
	free(err);
	free(out);
	err = out = NULL;
	CHECK(rt_run(cmd_report, &out, &err, "report", "--annotate", "--vmstate", path,
		     NULL) == 2);
	free(err);
	free(out);
}

/* pid 41: work (t.lua:1-3) with 3 samples at line 2 and 2 at no known
 * line (pc 0: compiled code whose trace started elsewhere, say); a
 * function of a chunk loaded from a string, 1 sample. */
static int write_unknown_line_trace(const char *path)
{
	static const uint32_t work_bc[] = { LBC_AD(LBC_FUNCF, 3, 0), LBC_AD(LBC_KSHORT, 0, 1),
					    LBC_ABC(LBC_CALL, 0, 1, 1), LBC_AD(LBC_RET0, 0, 1) };
	static const uint32_t work_lines[] = { 1, 2, 2, 3 };
	static const uint32_t str_bc[] = { LBC_AD(LBC_FUNCF, 1, 0), LBC_AD(LBC_RET0, 0, 1) };
	static const uint32_t str_lines[] = { 1, 1 };
	static const struct lp_lframe at_2[] = {
		{ LP_LFRAME_LUA, 1, 2, 2 }, { LP_LFRAME_ENTRY, 0, 0, 0 },
	};
	static const struct lp_lframe at_none[] = {
		{ LP_LFRAME_LUA, 1, 2, 0 }, { LP_LFRAME_ENTRY, 0, 0, 0 },
	};
	static const struct lp_lframe in_str[] = {
		{ LP_LFRAME_LUA, 1, 3, 1 }, { LP_LFRAME_ENTRY, 0, 0, 0 },
	};
	static const struct lua_samples samples[] = {
		{ 9, 3 }, { 10, 2 }, { 11, 1 },
	};
	struct lp_record rec = { 0 };
	struct trace_writer *w = rt_open(path);
	uint64_t t = 0;
	int err;

	if (!w)
		return -1;
	err = rt_process(w, 41, 1, LP_PROC_EXISTING, "host", "/x/host", t);
	err = err ?: rt_luajit(w, 41, 0);
	err = err ?: put_t_source(w);
	rec.type = LP_REC_PROTO;
	rec.u.proto = (struct lp_proto){ .id = 2, .chunkname = "@t.lua", .firstline = 1,
					 .numline = 2, .nbc = 4, .bc = work_bc,
					 .lines = work_lines, .source = 6 };
	err = err ?: put(w, &rec);
	rec.u.proto = (struct lp_proto){ .id = 3, .chunkname = "local f = ...\nreturn f",
					 .firstline = 1, .numline = 0, .nbc = 2,
					 .bc = str_bc, .lines = str_lines };
	err = err ?: put(w, &rec);
	rec.type = LP_REC_LUA_STACK;
	rec.u.lua_stack = (struct lp_lua_stack){ 9, 2, at_2 };
	err = err ?: put(w, &rec);
	rec.u.lua_stack = (struct lp_lua_stack){ 10, 2, at_none };
	err = err ?: put(w, &rec);
	rec.u.lua_stack = (struct lp_lua_stack){ 11, 2, in_str };
	err = err ?: put(w, &rec);
	err = err ?: put_lua_samples(w, 41, samples, sizeof(samples) / sizeof(samples[0]));
	return trace_writer_close(w, NULL) ?: err;
}

/* Samples at no known line are a row of their own, after the function's
 * lines, said to be so, not a "line 0" with no text; a chunk from a
 * string is named by its text. */
TEST(report_annotate_unknown_line_and_string_chunk)
{
	const char *path = rt_path("annotate3.lp");
	char *out = NULL;

	CHECK(write_unknown_line_trace(path) == 0);
	CHECK(rt_run(cmd_report, &out, NULL, "report", "--annotate", path, NULL) == 0);
	CHECK(strstr(out, "\n? (t.lua:1-3): self 5 (83.33%), total 5 (83.33%) of 6 samples\n"
		      "    self   self%    total  total%   line  source\n"
		      "       .       .       .       .      1  function work()\n"
		      "       3  50.00%       3  50.00%      2    return string.rep('x', 9)\n"
		      "       .       .       .       .      3  end\n"
		      "       2  33.33%       2  33.33%      ?  (line not known: "));
	CHECK(!strstr(out, "      0  "));
	CHECK(strstr(out, "\n? ([string \"local f = ......\"]:1-1): self 1 (16.67%)"));
	free(out);
	out = NULL;
	CHECK(rt_run(cmd_report, &out, NULL, "report", "--by", "line", path, NULL) == 0);
	CHECK(strstr(out, "       3  50.00%       3  50.00%  t.lua:2  ?: return string.rep"));
	CHECK(strstr(out, "       2  33.33%       2  33.33%  t.lua:?  ?: (line not known: "));
	CHECK(strstr(out, "  [string \"local f = ......\"]:1  ?: (source not available"));
	free(out);
}

/*
 * test_report_sym.c - user-space symbolization in `luaprof report`,
 * without a compiler or root: the test binary symbolizes itself.  Its own
 * /proc/self/maps becomes a MAPS record and the addresses of functions
 * defined below become a user stack, so the names must come back from the
 * binary's .symtab through the PT_LOAD offset-to-vaddr translation, in
 * root-to-leaf order.  Also: the fallbacks for what has no symbol
 * (module+0xOFF, [anon], [vdso], [unmapped]), kernel frames under user
 * frames, and layouts that change while the trace runs.
 */
#include <dlfcn.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/unit/report_test.h"

/* Three functions the test names by address.  Not static, not inlined,
 * each long enough that a few bytes past its start are still inside. */
__attribute__((noinline, used)) int rt_sym_leaf(int x)
{
	volatile int v = x;

	return v * 3 + 1;
}

__attribute__((noinline, used)) int rt_sym_mid(int x)
{
	volatile int v = rt_sym_leaf(x);

	return v + 2;
}

__attribute__((noinline, used)) int rt_sym_root(int x)
{
	volatile int v = rt_sym_mid(x);

	return v - 1;
}

/* One function under three names: the global with the shortest name
 * must win over a longer global and over a shorter weak alias. */
__attribute__((noinline, used)) int rt_sym_target(int x)
{
	volatile int v = x;

	return v * 5 + 3;
}
extern int rt_sym_target_long_alias(int) __attribute__((alias("rt_sym_target")));
extern int rt_w(int) __attribute__((weak, alias("rt_sym_target")));

#define SELF_PID 4242
#define MAX_MAPS 512

static struct lp_mapping self_v[MAX_MAPS];
static char self_paths[MAX_MAPS][256];

/* Every mapping of this process, as the recorder would write them. */
static uint32_t self_maps(void)
{
	FILE *f = fopen("/proc/self/maps", "r");
	char line[512];
	uint32_t n = 0;

	if (!f)
		return 0;
	while (n < MAX_MAPS && fgets(line, sizeof(line), f)) {
		unsigned long long start, end, pgoff;
		char perms[8];
		int pos = 0;

		if (sscanf(line, "%llx-%llx %7s %llx %*s %*u %n", &start, &end,
			   perms, &pgoff, &pos) < 4)
			continue;
		snprintf(self_paths[n], sizeof(self_paths[n]), "%s",
			 pos ? line + pos : "");
		self_paths[n][strcspn(self_paths[n], "\n")] = '\0';
		self_v[n].start = start;
		self_v[n].end = end;
		self_v[n].pgoff = pgoff;
		self_v[n].prot = (perms[0] == 'r' ? LP_PROT_READ : 0) |
				 (perms[1] == 'w' ? LP_PROT_WRITE : 0) |
				 (perms[2] == 'x' ? LP_PROT_EXEC : 0);
		self_v[n].path = self_paths[n];
		n++;
	}
	fclose(f);
	return n;
}

static uint64_t fn_addr(int (*fn)(int))
{
	return (uint64_t)(uintptr_t)fn;
}

TEST(report_symbolizes_self)
{
	const char *path = rt_path("self.lp");
	struct trace_writer *w = rt_open(path);
	uint64_t deep[3], shallow[2], libc[1], hdr[1], alias[1], t = 0;
	const char *exe = NULL, *base;
	char *out = NULL, *err = NULL, want[300];
	uint32_t n = self_maps();
	Dl_info dl;

	CHECK(w && n > 0);
	/* Leaf first: the leaf is an interrupted pc, the others return
	 * addresses a few bytes into their caller. */
	deep[0] = fn_addr(rt_sym_leaf) + 2;
	deep[1] = fn_addr(rt_sym_mid) + 3;
	deep[2] = fn_addr(rt_sym_root) + 3;
	shallow[0] = fn_addr(rt_sym_mid) + 2;
	shallow[1] = fn_addr(rt_sym_root) + 3;
	libc[0] = (uint64_t)(uintptr_t)&qsort + 2;
	alias[0] = fn_addr(rt_sym_target) + 1;
	/* The executable's first mapping starts with its ELF header: no
	 * function there, so it must print as module+vaddr. */
	for (uint32_t i = 0; i < n && !exe; i++)
		if (self_v[i].start <= deep[0] && deep[0] < self_v[i].end)
			exe = self_v[i].path;
	CHECK(exe && exe[0] == '/');
	for (uint32_t i = 0; i < n; i++)
		if (!strcmp(self_v[i].path, exe) && self_v[i].pgoff == 0)
			hdr[0] = self_v[i].start + 0x10;
	base = strrchr(exe, '/') + 1;

	CHECK(rt_maps(w, SELF_PID, LP_MAPS_REPLACE, self_v, n) == 0);
	CHECK(rt_stack(w, 1, LP_STACK_USER, deep, 3) == 0);
	CHECK(rt_stack(w, 2, LP_STACK_USER, shallow, 2) == 0);
	CHECK(rt_stack(w, 3, LP_STACK_USER, libc, 1) == 0);
	CHECK(rt_stack(w, 4, LP_STACK_USER, hdr, 1) == 0);
	CHECK(rt_samples(w, &t, SELF_PID, SELF_PID, 0, 1, 5) == 0);
	CHECK(rt_samples(w, &t, SELF_PID, SELF_PID, 0, 2, 2) == 0);
	CHECK(rt_samples(w, &t, SELF_PID, SELF_PID, 0, 3, 1) == 0);
	CHECK(rt_stack(w, 5, LP_STACK_USER, alias, 1) == 0);
	CHECK(rt_samples(w, &t, SELF_PID, SELF_PID, 0, 4, 1) == 0);
	CHECK(rt_samples(w, &t, SELF_PID, SELF_PID, 0, 5, 1) == 0);
	CHECK(trace_writer_close(w, NULL) == 0);

	CHECK(rt_run(cmd_report, &out, &err, "report", "--format", "folded",
		     path, NULL) == 0);
	CHECK(strstr(out, "rt_sym_root;rt_sym_mid;rt_sym_leaf 5\n"));
	CHECK(strstr(out, "rt_sym_root;rt_sym_mid 2\n"));
	/* The header's vaddr: 0x10 in a PIE, 0x400010 in a fixed binary. */
	snprintf(want, sizeof(want), "\n%s+0x10 1\n", base);
	if (!strstr(out, want))
		snprintf(want, sizeof(want), "\n%s+0x400010 1\n", base);
	CHECK(strstr(out, want));
	/* libc is stripped of .symtab on Debian: .dynsym names it. */
	if (dladdr(&qsort, &dl) && dl.dli_sname && !strcmp(dl.dli_sname, "qsort"))
		CHECK(strstr(out, "qsort 1\n"));
	CHECK(strstr(out, "\nrt_sym_target 1\n"));
	CHECK(!strstr(out, "[unmapped]"));
	CHECK(!strcmp(err, ""));
	free(out);
	free(err);

	/* Top agrees: rt_sym_mid is on 7 stacks and the leaf of 2. */
	CHECK(rt_run(cmd_report, &out, NULL, "report", path, NULL) == 0);
	CHECK(strstr(out, "         5   50.00%  rt_sym_leaf\n"));
	CHECK(strstr(out, "         7   70.00%  rt_sym_mid\n"));
	free(out);
}

/* A fixed layout of things that have no symbols. */
static int odd_layout(struct trace_writer *w, uint32_t pid, const char *text)
{
	struct lp_mapping m[] = {
		{ 0x10000, 0x20000, 0x1000, LP_PROT_READ | LP_PROT_EXEC, 1,
		  "/nonexistent/libfoo.so", 0 },
		{ 0x30000, 0x31000, 0, LP_PROT_READ | LP_PROT_EXEC, 0, "", 0 },
		{ 0x40000, 0x42000, 0, LP_PROT_READ | LP_PROT_EXEC, 0, "[vdso]", 0 },
		{ 0x50000, 0x51000, 0, LP_PROT_READ | LP_PROT_WRITE, 0, "[stack]", 0 },
		{ 0x60000, 0x61000, 0x2000, LP_PROT_READ | LP_PROT_EXEC, 2, text, 0 },
	};

	return rt_maps(w, pid, LP_MAPS_REPLACE, m, 5);
}

TEST(report_unsymbolized_frames)
{
	const char *path = rt_path("odd.lp"), *text = rt_path("notelf.so");
	/* Leaf first; all but the first are looked up at addr - 1. */
	uint64_t s1[] = { 0x10010, 0x30011, 0x40021, 0x50009, 0x60001, 0x90000 };
	uint64_t s2[] = { 0x10020 };
	static const char *const kn[] = { "do_syscall_64", "ksys_read" };
	uint64_t k1[] = { RT_K(1) + 0x8, RT_K(0) + 0x10, 0x1000 };
	struct trace_writer *w = rt_open(path);
	char *out = NULL, *err = NULL;
	uint64_t t = 0;
	FILE *f = fopen(text, "w");

	CHECK(w && f);
	fputs("plain text, not ELF\n", f);
	fclose(f);
	CHECK(odd_layout(w, 7, text) == 0);
	CHECK(rt_stack(w, 1, LP_STACK_USER, s1, 6) == 0);
	CHECK(rt_stack(w, 2, LP_STACK_USER, s2, 1) == 0);
	CHECK(rt_stack(w, 3, LP_STACK_KERNEL, k1, 3) == 0);
	CHECK(rt_samples(w, &t, 7, 7, 0, 1, 1) == 0);
	CHECK(rt_samples(w, &t, 7, 7, 3, 2, 4) == 0);
	CHECK(rt_kfuncs(w, kn, 2) == 0);
	CHECK(trace_writer_close(w, NULL) == 0);

	CHECK(rt_run(cmd_report, &out, &err, "report", "--format", "folded",
		     path, NULL) == 0);
	/* Kernel frames below user frames; 0x1000 is below every ksym. */
	CHECK(!strcmp(out,
		      "[unmapped];notelf.so+0x2000;[stack];[vdso];[anon];"
		      "libfoo.so+0x1010 1\n"
		      "libfoo.so+0x1020;[kernel]_[k];do_syscall_64_[k];ksys_read_[k] 4\n"));
	free(out);
	free(err);
	/* --lines: where in the mappings' code, as it would say the line. */
	CHECK(rt_run(cmd_report, &out, &err, "report", "--format", "folded", "--lines",
		     path, NULL) == 0);
	CHECK(strstr(out, ";[stack];[vdso]+0x20;[anon]+0x10;libfoo.so+0x1010 1\n"));
	/* One warning per unreadable file, however many frames hit it. */
	CHECK(rt_count(err, "cannot read /nonexistent/libfoo.so: No such file or directory; "
		       "its frames print as module+offset\n") == 1);
	CHECK(rt_count(err, "notelf.so: not an ELF file;") == 1);
	free(out);
	free(err);
}

/*
 * Another JIT's code (PCRE's, say) in anonymous memory: one function,
 * "[anon]", whatever the address, so that top gives its time in one row
 * and a flame graph one box; --lines tells the addresses apart.
 */
TEST(report_anon_code_is_one_function)
{
	const char *path = rt_path("anon.lp");
	uint64_t a[] = { 0x30010, 0x10010 }, b[] = { 0x30024, 0x10010 };
	uint64_t c[] = { 0x30a00, 0x10010 };
	struct trace_writer *w = rt_open(path);
	char *out = NULL;
	uint64_t t = 0;

	CHECK(w && odd_layout(w, 7, "/nonexistent/x.so") == 0);
	CHECK(rt_stack(w, 1, LP_STACK_USER, a, 2) == 0);
	CHECK(rt_stack(w, 2, LP_STACK_USER, b, 2) == 0);
	CHECK(rt_stack(w, 3, LP_STACK_USER, c, 2) == 0);
	CHECK(rt_samples(w, &t, 7, 7, 0, 1, 3) == 0);
	CHECK(rt_samples(w, &t, 7, 7, 0, 2, 2) == 0);
	CHECK(rt_samples(w, &t, 7, 7, 0, 3, 1) == 0);
	CHECK(trace_writer_close(w, NULL) == 0);

	CHECK(rt_run(cmd_report, &out, NULL, "report", "--format", "folded", path, NULL) == 0);
	CHECK(out && !strcmp(out, "libfoo.so+0x100f;[anon] 6\n"));
	free(out);
	out = NULL;
	CHECK(rt_run(cmd_report, &out, NULL, "report", path, NULL) == 0);
	CHECK(out && strstr(out, "         6  100.00%  [anon]\n"));
	free(out);
	out = NULL;
	CHECK(rt_run(cmd_report, &out, NULL, "report", "--format", "folded", "--lines",
		     path, NULL) == 0);
	CHECK(out && !strcmp(out, "libfoo.so+0x100f;[anon]+0x10 3\n"
				  "libfoo.so+0x100f;[anon]+0x24 2\n"
				  "libfoo.so+0x100f;[anon]+0xa00 1\n"));
	free(out);
}

TEST(report_maps_change_mid_trace)
{
	const char *path = rt_path("remap.lp");
	uint64_t s[] = { 0x10010 }, s_front[] = { 0x8010 }, s_back[] = { 0x11010 };
	struct trace_writer *w = rt_open(path);
	char *out = NULL;
	uint64_t t = 0;

	CHECK(w);
	CHECK(rt_map1(w, 9, LP_MAPS_REPLACE, 0x10000, 0x20000, 0, "/x/liba.so") == 0);
	CHECK(rt_stack(w, 1, LP_STACK_USER, s, 1) == 0);
	CHECK(rt_samples(w, &t, 9, 9, 0, 1, 2) == 0);
	/* A new snapshot with another layout: only later samples move. */
	CHECK(rt_map1(w, 9, LP_MAPS_REPLACE, 0x8000, 0x18000, 0, "/x/libb.so") == 0);
	CHECK(rt_samples(w, &t, 9, 9, 0, 1, 3) == 0);
	/* An added mapping in the middle of it, as a dlopen would: the old
	 * one lives on at both sides, with its offsets. */
	CHECK(rt_map1(w, 9, 0, 0x10000, 0x11000, 0x5000, "/x/libc.so") == 0);
	CHECK(rt_samples(w, &t, 9, 9, 0, 1, 4) == 0);
	CHECK(rt_stack(w, 2, LP_STACK_USER, s_front, 1) == 0);
	CHECK(rt_stack(w, 3, LP_STACK_USER, s_back, 1) == 0);
	CHECK(rt_samples(w, &t, 9, 9, 0, 2, 6) == 0);
	CHECK(rt_samples(w, &t, 9, 9, 0, 3, 7) == 0);
	/* Another pid's layout does not matter to pid 9. */
	CHECK(rt_map1(w, 10, LP_MAPS_REPLACE, 0x10000, 0x20000, 0, "/x/libd.so") == 0);
	CHECK(rt_samples(w, &t, 9, 9, 0, 1, 1) == 0);
	CHECK(trace_writer_close(w, NULL) == 0);

	CHECK(rt_run(cmd_report, &out, NULL, "report", "--format", "folded",
		     path, NULL) == 0);
	CHECK(!strcmp(out, "liba.so+0x10 2\nlibb.so+0x10 6\nlibb.so+0x8010 3\n"
			   "libb.so+0x9010 7\nlibc.so+0x5010 5\n"));
	free(out);
}

TEST(report_fork_exit_and_pid_reuse)
{
	const char *path = rt_path("fork.lp");
	uint64_t s[] = { 0x10010 }, t = 0;
	struct trace_writer *w = rt_open(path);
	char *out = NULL;

	CHECK(w);
	CHECK(rt_process(w, 20, 1, LP_PROC_EXISTING, "parent", "/bin/p", t) == 0);
	CHECK(rt_map1(w, 20, LP_MAPS_REPLACE, 0x10000, 0x20000, 0, "/x/libp.so") == 0);
	CHECK(rt_stack(w, 1, LP_STACK_USER, s, 1) == 0);
	/* A forked child with no MAPS record of its own has its parent's. */
	CHECK(rt_process(w, 21, 20, LP_PROC_FORKED, "child", "/bin/p", t) == 0);
	CHECK(rt_samples(w, &t, 21, 21, 0, 1, 2) == 0);
	/* Samples precede the exit; one trailing it is still resolved. */
	CHECK(rt_exit(w, 21, t) == 0);
	CHECK(rt_samples(w, &t, 21, 21, 0, 1, 1) == 0);
	/* The pid comes back as another program. */
	CHECK(rt_process(w, 21, 1, LP_PROC_LAUNCHED, "other", "/bin/o", t) == 0);
	CHECK(rt_map1(w, 21, LP_MAPS_REPLACE, 0x10000, 0x20000, 0, "/x/libo.so") == 0);
	CHECK(rt_samples(w, &t, 21, 21, 0, 1, 4) == 0);
	CHECK(trace_writer_close(w, NULL) == 0);

	CHECK(rt_run(cmd_report, &out, NULL, "report", "--format", "folded",
		     "--comm", path, NULL) == 0);
	CHECK(!strcmp(out, "child;libp.so+0x10 3\nother;libo.so+0x10 4\n"));
	free(out);
}

/* An exec keeps the process: one entry, the new name, both ways it joined. */
TEST(report_exec_is_the_same_process)
{
	const char *path = rt_path("exec.lp");
	uint64_t s[] = { 0x10010 }, t = 0;
	struct trace_writer *w = rt_open(path);
	char *out = NULL;

	CHECK(w);
	CHECK(rt_process(w, 30, 1, LP_PROC_LAUNCHED, "luaprof", "/bin/luaprof", t) == 0);
	CHECK(rt_process(w, 30, 1, LP_PROC_EXEC, "hot", "/bin/hot", t) == 0);
	CHECK(rt_map1(w, 30, LP_MAPS_REPLACE, 0x10000, 0x20000, 0, "/x/hot") == 0);
	CHECK(rt_stack(w, 1, LP_STACK_USER, s, 1) == 0);
	CHECK(rt_samples(w, &t, 30, 30, 0, 1, 2) == 0);
	CHECK(trace_writer_close(w, NULL) == 0);

	CHECK(rt_run(cmd_report, &out, NULL, "report", "--format", "folded",
		     "--comm", path, NULL) == 0);
	CHECK(!strcmp(out, "hot;hot+0x10 2\n"));
	free(out);
	out = NULL;
	CHECK(rt_run(cmd_info, &out, NULL, "info", path, NULL) == 0);
	CHECK(strstr(out, "processes: 1\n"));
	CHECK(strstr(out, "exec,launched"));
	CHECK(!strstr(out, "luaprof "));
	free(out);
}

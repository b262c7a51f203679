/*
 * report_test.h - what the report tests share: building traces with the
 * real writer (format/writer.c), running a command with its standard
 * output and error captured, and reading files back.  Everything is
 * static inline so each test file includes it without unused-function
 * warnings; it is a test helper, not part of luaprof.
 */
#ifndef LUAPROF_TESTS_REPORT_TEST_H
#define LUAPROF_TESTS_REPORT_TEST_H

#include <fcntl.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "format/trace.h"
#include "report/report.h"
#include "tests/unit/unit.h"

/* A path in the test scratch directory, in one of 8 static buffers used
 * in turn: a test may hold up to 8 at once. */
static inline const char *rt_path(const char *name)
{
	static char bufs[8][256];
	static unsigned next;
	char *b = bufs[next++ % 8];

	snprintf(b, sizeof(bufs[0]), "%s/%s", unit_tmpdir(), name);
	return b;
}

/* The whole file as a NUL-terminated string, or NULL. */
static inline char *rt_slurp(const char *path)
{
	FILE *f = fopen(path, "r");
	size_t len = 0, cap = 4096, n;
	char *s;

	if (!f)
		return NULL;
	s = malloc(cap);
	while (s && (n = fread(s + len, 1, cap - len - 1, f)) > 0) {
		len += n;
		if (cap - len - 1 == 0) {
			char *ns = realloc(s, cap * 2);

			if (!ns) {
				free(s);
				s = NULL;
				break;
			}
			s = ns;
			cap *= 2;
		}
	}
	fclose(f);
	if (s)
		s[len] = '\0';
	return s;
}

/* Runs cmd(argc, argv) with the NULL-terminated arguments that follow,
 * stdout and stderr captured into *out and *err (malloc'd; either may be
 * NULL to discard).  Returns the command's exit code. */
static inline int rt_run(int (*cmd)(int, char **), char **out, char **err, ...)
{
	char *argv[64], opath[256], epath[256];
	int argc = 0, rc, so, se, fo, fe;
	va_list ap;

	/* Not rt_path(): callers hold its buffers across many runs. */
	snprintf(opath, sizeof(opath), "%s/run.stdout", unit_tmpdir());
	snprintf(epath, sizeof(epath), "%s/run.stderr", unit_tmpdir());
	va_start(ap, err);
	while (argc < 63 && (argv[argc] = va_arg(ap, char *)))
		argc++;
	va_end(ap);
	argv[argc] = NULL;
	fflush(stdout);
	fflush(stderr);
	so = dup(1);
	se = dup(2);
	fo = open(opath, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	fe = open(epath, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	dup2(fo, 1);
	dup2(fe, 2);
	close(fo);
	close(fe);
	rc = cmd(argc, argv);
	fflush(stdout);
	fflush(stderr);
	dup2(so, 1);
	dup2(se, 2);
	close(so);
	close(se);
	if (out)
		*out = rt_slurp(opath);
	if (err)
		*err = rt_slurp(epath);
	return rc;
}

/* How many times needle occurs in hay. */
static inline int rt_count(const char *hay, const char *needle)
{
	int n = 0;

	while (hay && (hay = strstr(hay, needle))) {
		n++;
		hay += strlen(needle);
	}
	return n;
}

/* ---- building traces ---------------------------------------------- */

static inline struct trace_writer *rt_open(const char *path)
{
	struct trace_writer *w = NULL;

	unlink(path); /* the writer creates a new file only */
	if (trace_writer_open(&w, path, LP_CODEC_LZ4))
		return NULL;
	return w;
}

static inline int rt_meta(struct trace_writer *w, uint64_t start_mono,
			  uint64_t start_real)
{
	struct lp_record r = { .type = LP_REC_META };

	r.u.meta.version = "0.1.0";
	r.u.meta.cmdline = "luaprof record -F 99 -p 100";
	r.u.meta.target = "pid 100";
	r.u.meta.hostname = "testhost";
	r.u.meta.kernel = "6.1.0-test";
	r.u.meta.clock = "CLOCK_MONOTONIC";
	r.u.meta.rate_hz = 99;
	r.u.meta.start_mono_ns = start_mono;
	r.u.meta.start_real_ns = start_real;
	r.u.meta.flags = LP_META_FOLLOW_CHILDREN;
	return trace_write(w, &r);
}

static inline int rt_process(struct trace_writer *w, uint32_t pid,
			     uint32_t ppid, uint32_t flags, const char *comm,
			     const char *exe, uint64_t time)
{
	struct lp_record r = { .type = LP_REC_PROCESS };

	r.u.process.pid = pid;
	r.u.process.ppid = ppid;
	r.u.process.flags = flags;
	r.u.process.comm = comm;
	r.u.process.exe = exe;
	r.u.process.time_ns = time;
	return trace_write(w, &r);
}

static inline int rt_exit(struct trace_writer *w, uint32_t pid, uint64_t time)
{
	struct lp_record r = { .type = LP_REC_EXIT };

	r.u.exit.pid = pid;
	r.u.exit.time_ns = time;
	return trace_write(w, &r);
}

static inline int rt_maps(struct trace_writer *w, uint32_t pid, uint32_t flags,
			  const struct lp_mapping *m, uint32_t count)
{
	struct lp_record r = { .type = LP_REC_MAPS };

	r.u.maps.pid = pid;
	r.u.maps.flags = flags;
	r.u.maps.count = count;
	r.u.maps.mappings = m;
	return trace_write(w, &r);
}

/* One mapping, for the common case. */
static inline int rt_map1(struct trace_writer *w, uint32_t pid, uint32_t flags,
			  uint64_t start, uint64_t end, uint64_t pgoff,
			  const char *path)
{
	struct lp_mapping m = {
		.start = start, .end = end, .pgoff = pgoff,
		.prot = LP_PROT_READ | LP_PROT_EXEC, .path = path,
	};

	return rt_maps(w, pid, flags, &m, 1);
}

static inline int rt_stack(struct trace_writer *w, uint64_t id, uint32_t kind,
			   const uint64_t *addrs, uint32_t depth)
{
	struct lp_record r = { .type = LP_REC_STACK };

	r.u.stack.id = id;
	r.u.stack.kind = kind;
	r.u.stack.depth = depth;
	r.u.stack.addrs = addrs;
	return trace_write(w, &r);
}

/* `n` samples one microsecond apart from *t, which moves on. */
static inline int rt_samples(struct trace_writer *w, uint64_t *t, uint32_t pid,
			     uint32_t tid, uint64_t kstack, uint64_t ustack,
			     int n)
{
	struct lp_record r = { .type = LP_REC_SAMPLE };
	int err = 0;

	r.u.sample.pid = pid;
	r.u.sample.tid = tid;
	r.u.sample.kstack = kstack;
	r.u.sample.ustack = ustack;
	for (int i = 0; i < n && !err; i++) {
		r.u.sample.time_ns = (*t += 1000);
		err = trace_write(w, &r);
	}
	return err;
}

static inline int rt_ksyms(struct trace_writer *w, const struct lp_ksym *syms,
			   uint32_t count)
{
	struct lp_record r = { .type = LP_REC_KSYMS };

	r.u.ksyms.count = count;
	r.u.ksyms.syms = syms;
	return trace_write(w, &r);
}

static inline int rt_lost(struct trace_writer *w, uint64_t count,
			  uint32_t reason)
{
	struct lp_record r = { .type = LP_REC_LOST };

	r.u.lost.count = count;
	r.u.lost.reason = reason;
	return trace_write(w, &r);
}

/* ---- Lua ------------------------------------------------------------ *
 * The hand-built Lua traces (test_report_lua.c, _place.c, _annotate.c,
 * _views.c) share one host: its code at 0x10000..0x30000 (rt_map1 of
 * /x/host), and in it a LuaJIT VM whose interpreter is 0x20000..0x21000,
 * with fast functions named as RT_FFNAMES has them (0 Lua, 1 C, ...,
 * 7 string.rep).  Instructions are made with lua_bc.h's LBC_AD and
 * LBC_ABC. */

/* pid's LUAJIT record: the VM above, with its first nff fast functions
 * named (at most 8). */
static inline int rt_luajit(struct trace_writer *w, uint32_t pid, uint32_t nff)
{
	static const char *const ffnames[] = { "Lua", "C", "assert", "type", "next",
					       "pairs", "ipairs", "string.rep" };
	struct lp_record r = { .type = LP_REC_LUAJIT };

	r.u.luajit = (struct lp_luajit){ .pid = pid, .G = 0x1000, .vm_start = 0x20000,
					 .vm_end = 0x21000, .flags = LP_LUAJIT_GC64,
					 .name = "test", .source = "test",
					 .nff = nff < 8 ? nff : 8, .ffnames = ffnames };
	return trace_write(w, &r);
}

/* The host process pid (comm, /x/host, running since t) with its code
 * mapped and the VM of rt_luajit(w, pid, nff) in it. */
static inline int rt_lua_host(struct trace_writer *w, uint32_t pid, const char *comm,
			      uint64_t t, uint32_t nff)
{
	return rt_process(w, pid, 1, LP_PROC_EXISTING, comm, "/x/host", t) ?:
	       rt_map1(w, pid, LP_MAPS_REPLACE, 0x10000, 0x30000, 0, "/x/host") ?:
	       rt_luajit(w, pid, nff);
}

/* ---- kernel frames by name ------------------------------------------ *
 * Tests that only care about stack shapes name their frames through
 * KSYMS: function i lives at RT_K(i), so a kernel stack of RT_K() values
 * reads back as "NAME_[k]" frames. */
#define RT_K(i) (0xffffffff81000000ull + (uint64_t)(i) * 0x1000)

static inline int rt_kfuncs(struct trace_writer *w, const char *const *names,
			    uint32_t n)
{
	struct lp_ksym syms[64];

	for (uint32_t i = 0; i < n && i < 64; i++) {
		syms[i].addr = RT_K(i);
		syms[i].name = names[i];
	}
	return rt_ksyms(w, syms, n < 64 ? n : 64);
}

/* A kernel stack given root first, as one reads it; stored leaf first
 * with return addresses (+0x10) above the leaf (+0x8). */
static inline int rt_kstack(struct trace_writer *w, uint64_t id,
			    const int *root_first, uint32_t depth)
{
	uint64_t a[64];

	for (uint32_t i = 0; i < depth && i < 64; i++)
		a[i] = RT_K(root_first[depth - 1 - i]) + (i ? 0x10 : 0x8);
	return rt_stack(w, id, LP_STACK_KERNEL, a, depth < 64 ? depth : 64);
}

#endif

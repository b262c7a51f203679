/*
 * test_report_dwarf.c - source lines and inlined frames in the report,
 * without root or a compiler, from the two places they come from: the
 * chains a trace embeds (SRCLINES records), and the DWARF of a trusted
 * local file for an object the trace embeds nothing of (record
 * --no-embed).  For the second the unit test binary (built with -g) is
 * its own fixture: the return address of a call made from inside an
 * always-inlined function must come back as that function [inlined] at
 * the call's line, inside its caller at the line that inlined it.  For
 * the first, records given out of order, twice for one address, as a
 * note only, or for an object the trace does not name.
 */
#include <dlfcn.h>
#include <elfutils/libdwelf.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "format/trace.h"
#include "lib/debuginfo.h"
#include "report/objects.h"
#include "report/symbolize.h"
#include "tests/unit/unit.h"

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

int main(int argc, char **argv); /* in main.c: another unit */

static volatile int dw_line_call, dw_line_inline;
static void *volatile dw_sink;

__attribute__((noinline, used)) void *dw_callee(void)
{
	return __builtin_return_address(0);
}

/* The call is not a tail call: the store after it keeps it a call whose
 * return address lies in the inlined copy of this function. */
static inline __attribute__((always_inline)) void *dw_inlined(void)
{
	void *r = dw_callee(); dw_line_call = __LINE__;

	dw_sink = r;
	return r;
}

__attribute__((noinline, used)) void *dw_outer(void)
{
	void *r = dw_inlined(); dw_line_inline = __LINE__;

	dw_sink = r;
	return r;
}

static const char *base(const char *path)
{
	const char *s = path ? strrchr(path, '/') : NULL;

	return s ? s + 1 : path ? path : "";
}

/* An object the trace embeds nothing of gets its lines from the local
 * file whose build-id is the recorded one, read as the recorder reads
 * it.  A file of another build gives none, and an object the trace embeds
 * lines of (here only a note) takes none from the file. */
TEST(report_dwarf_lines_and_inlines_from_local_file)
{
	struct lp_object obj = { .path = "/proc/self/exe" };
	struct lp_srclines note = { .object = 3, .flags = LP_SRCLINES_SKIPPED_BUDGET };
	uint8_t ident[LP_OBJID_MAX];
	struct symbolizer *sym = NULL;
	struct objects *o = NULL;
	struct sym_result res;
	struct src_chain c;
	Dl_info info;
	uint64_t vaddr, off, size;
	void *ret = dw_outer();
	int fd;

	CHECK(dladdr(ret, &info) && info.dli_fbase);
	/* A PIE's first PT_LOAD is at 0: its link-time address is the
	 * runtime one less the load base.  The call is the byte before. */
	vaddr = (uint64_t)((uintptr_t)ret - (uintptr_t)info.dli_fbase) - 1;
	fd = open("/proc/self/exe", O_RDONLY | O_CLOEXEC);
	CHECK(fd >= 0);
	CHECK(lp_objid_read(fd, &obj.id_kind, ident, &obj.ident_len, &size) == 0);
	close(fd);
	obj.ident = ident;
	CHECK(symbolizer_new(&sym, "test") == 0);
	CHECK(objects_new(&o, sym, NULL, "test") == 0);
	obj.id = 1;
	CHECK(objects_add(o, &obj) == 0);
	obj.id = 3;
	CHECK(objects_add(o, &obj) == 0 && objects_add_srclines(o, &note) == 0);
	ident[0] ^= 0xff;
	obj.id = 2;
	CHECK(objects_add(o, &obj) == 0);
	/* The file offset of vaddr, found by asking the symbolizer page by
	 * page: segments map pages of the file to pages of addresses. */
	for (off = 0; off < (64u << 20); off += 0x1000) {
		CHECK(objects_lookup(o, 1, obj.path, off, &res) == 0);
		if (res.elf && res.addr == (vaddr & ~0xfffull))
			break;
	}
	off += vaddr & 0xfff;
	CHECK(objects_lookup(o, 1, obj.path, off, &res) == 0 && res.addr == vaddr);
	CHECK(objects_lookup(o, 2, obj.path, off, &res) == 0 && !res.elf);
	CHECK(objects_lookup(o, 3, obj.path, off, &res) == 0 && res.addr == vaddr);

	CHECK(objects_srcline(o, 1, vaddr, &c) == 0);
	CHECK(c.n == 2);
	CHECK(c.f[0].func && !strcmp(c.f[0].func, "dw_inlined"));
	CHECK(!strcmp(base(c.f[0].file), "test_report_dwarf.c"));
	CHECK(c.f[0].line == (uint32_t)dw_line_call);
	CHECK(c.f[1].func && !strcmp(c.f[1].func, "dw_outer"));
	CHECK(!strcmp(base(c.f[1].file), "test_report_dwarf.c"));
	CHECK(c.f[1].line == (uint32_t)dw_line_inline);
	CHECK(objects_srcline(o, 2, vaddr, &c) == 0 && c.n == 0);
	CHECK(objects_srcline(o, 3, vaddr, &c) == 0 && c.n == 0);
	/* A function that inlines nothing there: one frame, its own. */
	vaddr = (uint64_t)((uintptr_t)dw_callee - (uintptr_t)info.dli_fbase);
	CHECK(objects_srcline(o, 1, vaddr, &c) == 0);
	CHECK(c.n == 1 && c.f[0].func && !strcmp(c.f[0].func, "dw_callee"));
	/* Another unit's function; an address no unit covers. */
	vaddr = (uint64_t)((uintptr_t)main - (uintptr_t)info.dli_fbase);
	CHECK(objects_srcline(o, 1, vaddr, &c) == 0 && c.n >= 1);
	CHECK(objects_srcline(o, 1, 0x10, &c) == 0 && c.n == 0);
	CHECK(objects_srcline(o, 99, vaddr, &c) == 0 && c.n == 0);
	objects_free(o);
	symbolizer_free(sym);
}

/* Chains from SRCLINES records: records in any order, an address given
 * twice (the first read stands), an address no chain covers (no lines),
 * an object whose only record is a note (no lines, and no file either),
 * a record of an object the trace does not name (ignored). */
TEST(report_lines_from_srclines_records)
{
	static const char *const strs1[] = { "inner", "outer", "/src/a.c" };
	static const char *const strs2[] = { "/src/b.c", "late" };
	static const struct lp_srcframe fr1[] = { { 1, 3, 12 }, { 2, 3, 40 } };
	static const struct lp_srcframe fr2[] = { { 2, 1, 7 } };
	static const struct lp_srcchain ch1[] = {
		{ 0x1000, 2, fr1 }, { 0x1010, 1, fr1 + 1 },
	};
	static const struct lp_srcchain ch2[] = { { 0x800, 1, fr2 }, { 0x1000, 1, fr2 } };
	static const uint8_t bid[4] = { 9, 9, 9, 9 };
	struct lp_object obj = { .path = "/proc/self/exe", .id_kind = LP_OBJID_BUILD_ID,
				 .ident_len = sizeof(bid), .ident = bid };
	struct lp_srclines later = { 1, 0, ARRAY_SIZE(strs2), strs2, ARRAY_SIZE(ch2), ch2 };
	struct lp_srclines first = { 1, 0, ARRAY_SIZE(strs1), strs1, ARRAY_SIZE(ch1), ch1 };
	struct lp_srclines note = { .object = 2, .flags = LP_SRCLINES_SKIPPED_SIZE };
	struct lp_srclines stray = first;
	struct lp_symtab st = { 0 };
	struct symbolizer *sym = NULL;
	struct objects *o = NULL;
	struct src_chain c;

	CHECK(symbolizer_new(&sym, "test") == 0);
	CHECK(objects_new(&o, sym, NULL, "test") == 0);
	for (uint64_t id = 1; id <= 2; id++) {
		obj.id = st.object = id;
		CHECK(objects_add(o, &obj) == 0 && objects_add_symtab(o, &st) == 0);
	}
	stray.object = 99;
	CHECK(objects_add_srclines(o, &first) == 0 && objects_add_srclines(o, &later) == 0);
	CHECK(objects_add_srclines(o, &note) == 0 && objects_add_srclines(o, &stray) == 0);
	CHECK(objects_srcline(o, 1, 0x1000, &c) == 0 && c.n == 2);
	CHECK(!strcmp(c.f[0].func, "inner") && !strcmp(c.f[0].file, "/src/a.c") &&
	      c.f[0].line == 12);
	CHECK(!strcmp(c.f[1].func, "outer") && c.f[1].line == 40);
	CHECK(objects_srcline(o, 1, 0x800, &c) == 0 && c.n == 1);
	CHECK(!strcmp(c.f[0].func, "late") && !strcmp(c.f[0].file, "/src/b.c") &&
	      c.f[0].line == 7);
	CHECK(objects_srcline(o, 1, 0x1010, &c) == 0 && c.n == 1 &&
	      !strcmp(c.f[0].func, "outer"));
	CHECK(objects_srcline(o, 1, 0x1001, &c) == 0 && c.n == 0);
	CHECK(objects_srcline(o, 1, 0x7ff, &c) == 0 && c.n == 0);
	CHECK(objects_srcline(o, 1, UINT64_MAX, &c) == 0 && c.n == 0);
	CHECK(objects_srcline(o, 2, 0x1000, &c) == 0 && c.n == 0);
	CHECK(objects_srcline(o, 99, 0x1000, &c) == 0 && c.n == 0);
	objects_free(o);
	symbolizer_free(sym);
}

/* ---- dwz's shared file ---------------------------------------------------- */

/* A shell command's success. */
static int dwz_run(const char *cmd)
{
	return system(cmd) == 0;
}

/*
 * A stripped copy of this binary, DIR/obj, whose debug file DIR/a.debug
 * went through `dwz -m` with an identical DIR/b.debug, as dh_dwz does a
 * package's debug files: what the two have in common (dw_inlined's
 * declaration, the strings of names such as dw_outer) moves to the
 * shared file, written to DIR/common.debug and named in a.debug's
 * .gnu_debugaltlink as `link`.
 */
static int dwz_fixture_opts(const char *dir, const char *link, const char *opts)
{
	char cmd[PATH_MAX * 6 + 256], self[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);

	if (n <= 0)
		return 0;
	self[n] = '\0';
	snprintf(cmd, sizeof(cmd),
		 "mkdir -p '%s' && cd '%s' && objcopy --only-keep-debug '%s' a.debug && "
		 "cp a.debug b.debug && dwz %s -m common.debug -M '%s' a.debug b.debug && "
		 "objcopy --strip-debug --add-gnu-debuglink=a.debug '%s' obj",
		 dir, dir, self, opts, link, self);
	return dwz_run(cmd);
}

static int dwz_fixture(const char *dir, const char *link)
{
	return dwz_fixture_opts(dir, link, "");
}

/* Whether dwz (0.15, bookworm's) can read this binary's DWARF: not
 * clang's DWARF 5, which has .debug_addr (the sanitizer build's). */
static int dwz_can_read_self(void)
{
	struct lp_debug_sections s;
	struct lp_debug_file f;
	int ok = 0;

	if (lp_debug_file_open(&f, "/proc/self/exe"))
		return 0;
	if (!lp_debug_sections_read(f.elf, &s)) {
		ok = 1;
		for (int i = 0; i < LP_DEBUG_NSECT; i++)
			if (s.scn[i] && !strcmp(lp_debug_section_names[i], ".debug_addr"))
				ok = 0;
	}
	lp_debug_file_close(&f);
	return ok;
}

/* Whether the dwz tests can run here: dwz and objcopy installed, and
 * DWARF that dwz reads. */
static int dwz_usable(void)
{
	return dwz_run("command -v dwz >/dev/null && command -v objcopy >/dev/null") &&
	       dwz_can_read_self();
}

/* The link-time address of dw_outer()'s call, inside dw_inlined()'s
 * inlined copy (as report_dwarf_lines_and_inlines_from_local_file finds
 * it): the return address less the load base, less one.  0 if dladdr()
 * cannot say. */
static uint64_t dw_call_vaddr(void)
{
	void *ret = dw_outer();
	Dl_info info;

	if (!dladdr(ret, &info) || !info.dli_fbase)
		return 0;
	return (uint64_t)((uintptr_t)ret - (uintptr_t)info.dli_fbase) - 1;
}

/* The chain at vaddr of the object at path (this binary's build-id) as
 * the report reads its local DWARF, under symfs if set: its length, and
 * the names of its first two frames ("" for a frame without one) and the
 * first one's line. */
static size_t dwz_chain(const char *path, const char *symfs, uint64_t vaddr,
			char names[2][64], uint32_t *line)
{
	struct lp_object obj = { .id = 1, .path = path };
	uint8_t ident[LP_OBJID_MAX];
	struct symbolizer *sym = NULL;
	struct objects *o = NULL;
	struct sym_result res;
	struct src_chain c = { 0 };
	uint64_t size;
	int fd = open("/proc/self/exe", O_RDONLY | O_CLOEXEC);

	if (fd < 0 || lp_objid_read(fd, &obj.id_kind, ident, &obj.ident_len, &size)) {
		if (fd >= 0)
			close(fd);
		return 0;
	}
	close(fd);
	obj.ident = ident;
	if (!symbolizer_new(&sym, "test") && !objects_new(&o, sym, symfs, "test") &&
	    !objects_add(o, &obj) && !objects_lookup(o, 1, path, 0, &res))
		objects_srcline(o, 1, vaddr, &c);
	for (size_t i = 0; i < 2; i++)
		snprintf(names[i], 64, "%s", i < c.n && c.f[i].func ? c.f[i].func : "");
	*line = c.n ? c.f[0].line : 0;
	objects_free(o);
	symbolizer_free(sym);
	return c.n;
}

/* The build-id path of the file at path under root. */
static int dwz_build_id_path(const char *path, const char *root, char *out, size_t len)
{
	struct lp_debug_file f;
	const uint8_t *id;
	ssize_t n;
	size_t k;

	if (lp_debug_file_open(&f, path))
		return 0;
	n = dwelf_elf_gnu_build_id(f.elf, (const void **)&id);
	k = (size_t)snprintf(out, len, "%s/usr/lib/debug/.build-id/%02x/", root,
			     n > 1 ? id[0] : 0);
	for (ssize_t i = 1; i < n && k < len; i++)
		k += (size_t)snprintf(out + k, len - k, "%02x", id[i]);
	if (k < len)
		snprintf(out + k, len - k, ".debug");
	lp_debug_file_close(&f);
	return n > 1 && k < len;
}

/*
 * DWARF that dwz -m shrank, as Debian's -dbgsym packages ship it: the
 * inlined function's name and its caller's come from the shared file,
 * found at the path the link names (absolute, as Debian's
 * /usr/lib/debug/.dwz/..., under --symfs first; or relative to the debug
 * file, as Fedora's), else by its build-id; one with another build-id at
 * that path is refused.  Without the shared file the chain keeps its
 * frames and lines but not the names.  Skipped without dwz (tests/deps.sh
 * installs it, and tests/e2e/dwz.sh requires it) and in a build dwz
 * cannot read (clang's DWARF 5).
 */
TEST(report_dwarf_dwz_shared_file)
{
	char abs[256], rel[256], symfs[256], obj[512], at[512];
	char byid[PATH_MAX], cmd[PATH_MAX * 4 + 64], names[2][64];
	uint32_t line;
	uint64_t vaddr;

	if (!dwz_usable())
		return;
	CHECK((vaddr = dw_call_vaddr()) != 0);
	snprintf(abs, sizeof(abs), "%s/dwz-abs", unit_tmpdir());
	snprintf(rel, sizeof(rel), "%s/dwz-rel", unit_tmpdir());
	snprintf(symfs, sizeof(symfs), "%s/dwz-symfs", unit_tmpdir());
	snprintf(at, sizeof(at), "%s/dwz/shared.debug", abs);

	/* Absolute: found where it says. */
	CHECK(dwz_fixture(abs, at));
	snprintf(cmd, sizeof(cmd), "mkdir -p '%s/dwz' && mv '%s/common.debug' '%s'", abs,
		 abs, at);
	CHECK(dwz_run(cmd));
	snprintf(obj, sizeof(obj), "%s/obj", abs);
	CHECK(dwz_chain(obj, NULL, vaddr, names, &line) == 2);
	CHECK(!strcmp(names[0], "dw_inlined") && !strcmp(names[1], "dw_outer"));
	CHECK(line == (uint32_t)dw_line_call);
	/* Gone: the frames and lines stay, the names it held go. */
	snprintf(cmd, sizeof(cmd), "mkdir -p '%s%s/dwz' && mv '%s' '%s%s'", symfs, abs, at,
		 symfs, at);
	CHECK(dwz_run(cmd));
	CHECK(dwz_chain(obj, NULL, vaddr, names, &line) == 2);
	CHECK(!names[0][0] && !names[1][0] && line == (uint32_t)dw_line_call);
	/* Under --symfs. */
	CHECK(dwz_chain(obj, symfs, vaddr, names, &line) == 2);
	CHECK(!strcmp(names[0], "dw_inlined") && !strcmp(names[1], "dw_outer"));
	/* By its build-id, under --symfs. */
	snprintf(cmd, sizeof(cmd), "%s%s", symfs, at);
	CHECK(dwz_build_id_path(cmd, symfs, byid, sizeof(byid)));
	snprintf(cmd, sizeof(cmd), "mkdir -p \"$(dirname '%s')\" && mv '%s%s' '%s'", byid,
		 symfs, at, byid);
	CHECK(dwz_run(cmd));
	CHECK(dwz_chain(obj, symfs, vaddr, names, &line) == 2);
	CHECK(!strcmp(names[0], "dw_inlined") && !strcmp(names[1], "dw_outer"));
	/* Another file at the path, with DWARF but another build-id: refused. */
	snprintf(cmd, sizeof(cmd), "rm '%s' && cp '%s/b.debug' '%s'", byid, abs, at);
	CHECK(dwz_run(cmd));
	CHECK(dwz_chain(obj, NULL, vaddr, names, &line) == 2);
	CHECK(!names[0][0] && !names[1][0]);

	/* Relative to the debug file, as Fedora's links are. */
	CHECK(dwz_fixture(rel, "../dwz-rel-shared/common.debug"));
	snprintf(cmd, sizeof(cmd), "mkdir -p '%s-shared' && mv '%s/common.debug' '%s-shared/'",
		 rel, rel, rel);
	CHECK(dwz_run(cmd));
	snprintf(obj, sizeof(obj), "%s/obj", rel);
	CHECK(dwz_chain(obj, NULL, vaddr, names, &line) == 2);
	CHECK(!strcmp(names[0], "dw_inlined") && !strcmp(names[1], "dw_outer"));
}

/*
 * The same debug files made by dwz -5: DWARF 5's .debug_sup instead of
 * .gnu_debugaltlink, and DW_FORM_ref_sup4 / strp_sup into the shared
 * file.  luaprof does not give libdw that file: bookworm's libdw (0.188),
 * given it, resolved a ref_sup4 to the shared file's DIE as the debug
 * file's DIE at that offset (a typedef's name, in a trial).  Read
 * without it, the names kept there are lost, never another's; the
 * frames and lines the debug file holds stay.
 */
TEST(report_dwarf_dwz5_no_wrong_name)
{
	char dir[256], obj[512], names[2][64];
	uint32_t line;
	uint64_t vaddr;
	size_t n;

	if (!dwz_usable())
		return;
	CHECK((vaddr = dw_call_vaddr()) != 0);
	snprintf(dir, sizeof(dir), "%s/dwz-5", unit_tmpdir());
	CHECK(dwz_fixture_opts(dir, "/nonexistent/common.debug", "-5"));
	snprintf(obj, sizeof(obj), "%s/obj", dir);
	n = dwz_chain(obj, NULL, vaddr, names, &line);
	CHECK(n == 2 && line == (uint32_t)dw_line_call);
	for (size_t i = 0; i < n && i < 2; i++)
		CHECK(!names[i][0] || !strcmp(names[i], i ? "dw_outer" : "dw_inlined"));
}

/*
 * test_report_dwarf.c - source lines and inlined frames from DWARF that
 * arrives as DEBUG records, without root or a compiler: the unit test
 * binary (built with -g) is its own fixture.  Its line and inline sections
 * are read with format/debuginfo.c, as the recorder reads them, cut into
 * pieces given out of order and overlapping, and handed to report/objects.c
 * as a trace would; the return address of a call made from inside an
 * always-inlined function must then come back as that function [inlined]
 * at the call's line, inside its caller at the line that inlined it.  The
 * same holds for sparse sections, as the recorder embeds them: the small
 * sections whole, the header of every unit, and only the unit holding the
 * function with its abbreviation table and line program; another unit's
 * address then gives no lines.  No .debug_line at all, or pieces of
 * another ELF identity, give no lines.  The extents the recorder computes
 * (format/dwarf_units.c) are checked on bytes made by hand, damaged too.
 */
#include <dlfcn.h>
#include <dwarf.h>
#include <elfutils/libdw.h>
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "format/debuginfo.h"
#include "format/dwarf_units.h"
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

/* Feeds the sections of `s` to object `id` in pieces of `piece` bytes,
 * each section's pieces last to first, the first piece twice; skips the
 * piece at `drop` of .debug_info (UINT64_MAX: none). */
static int feed(struct objects *o, uint64_t id, const struct lp_debug_sections *s,
		uint64_t piece, uint64_t drop, uint32_t emachine)
{
	for (int i = 0; i < LP_DEBUG_NSECT; i++) {
		uint64_t n = s->size[i] ? (s->size[i] + piece - 1) / piece : 0;

		for (uint64_t k = n + 1; k-- > 0;) {
			uint64_t p = k == n ? 0 : k, off = p * piece;
			struct lp_debug d = {
				.object = id, .eclass = s->eclass, .edata = s->edata,
				.emachine = emachine, .name = lp_debug_section_names[i],
				.size = s->size[i], .offset = off,
				.len = (uint32_t)(s->size[i] - off < piece ? s->size[i] - off : piece),
				.data = s->data[i] + off,
			};

			if (!n || (i == 0 && p == drop))
				continue;
			if (objects_add_debug(o, &d))
				return -1;
		}
	}
	return 0;
}

static int feed_range(struct objects *o, uint64_t id, const struct lp_debug_sections *s,
		      int sect, uint64_t off, uint64_t len)
{
	struct lp_debug d = {
		.object = id, .eclass = s->eclass, .edata = s->edata,
		.emachine = s->emachine, .name = lp_debug_section_names[sect],
		.size = s->size[sect], .offset = off, .len = (uint32_t)len,
		.data = s->data[sect] + off,
	};

	return len ? objects_add_debug(o, &d) : 0;
}

/* Feeds what the recorder would for one unit hit, the one holding vaddr:
 * the small sections whole, every unit's header, that unit whole with
 * its abbreviation table and line program.  Nothing of .debug_line when
 * no_line is set. */
static int feed_sparse(struct objects *o, uint64_t id, const struct lp_debug_sections *s,
		       Elf *elf, uint64_t vaddr, int no_line)
{
	Dwarf *dw = dwarf_begin_elf(elf, DWARF_C_READ, NULL);
	Dwarf_Off off = 0, next, abbrev, cuoff;
	Dwarf_Attribute attr;
	Dwarf_Word stmt;
	Dwarf_Die cu;
	uint64_t alen, llen;
	size_t hsize;
	int err = -1;

	if (!dw || !dwarf_addrdie(dw, vaddr, &cu))
		goto out;
	for (int i = 3; i < LP_DEBUG_NSECT; i++)
		if (feed_range(o, id, s, i, 0, s->size[i]))
			goto out;
	while (dwarf_next_unit(dw, off, &next, &hsize, NULL, NULL, NULL, NULL, NULL,
			       NULL) == 0) {
		if (feed_range(o, id, s, 0, off, hsize))
			goto out;
		off = next;
	}
	cuoff = dwarf_dieoffset(&cu) - dwarf_cuoffset(&cu);
	if (dwarf_next_unit(dw, cuoff, &next, &hsize, NULL, &abbrev, NULL, NULL, NULL,
			    NULL) ||
	    lp_dwarf_abbrev_len(s->data[1], s->size[1], abbrev, &alen) ||
	    !dwarf_attr(&cu, DW_AT_stmt_list, &attr) || dwarf_formudata(&attr, &stmt) ||
	    lp_dwarf_unit_len(s->data[2], s->size[2], stmt, 0, &llen))
		goto out;
	/* The unit must be a small part of the whole, or this proves little. */
	if (next - cuoff > s->size[0] / 2 || alen >= s->size[1] || llen >= s->size[2])
		goto out;
	if (feed_range(o, id, s, 0, cuoff + hsize, next - cuoff - hsize) ||
	    feed_range(o, id, s, 1, abbrev, alen) ||
	    (!no_line && feed_range(o, id, s, 2, stmt, llen)))
		goto out;
	err = 0;
out:
	if (dw)
		dwarf_end(dw);
	return err;
}

static const char *base(const char *path)
{
	const char *s = path ? strrchr(path, '/') : NULL;

	return s ? s + 1 : path ? path : "";
}

TEST(report_dwarf_lines_and_inlines_from_pieces)
{
	static const uint8_t bid[4] = { 1, 2, 3, 4 };
	struct lp_object obj = { .path = "/self", .id_kind = LP_OBJID_BUILD_ID,
				 .ident_len = sizeof(bid), .ident = bid };
	struct lp_symtab st = { 0 };
	struct lp_debug_file f;
	struct lp_debug_sections s;
	struct symbolizer *sym = NULL;
	struct objects *o = NULL;
	struct src_chain c;
	Dl_info info;
	uint64_t vaddr;
	void *ret = dw_outer();

	CHECK(dladdr(ret, &info) && info.dli_fbase);
	/* A PIE's first PT_LOAD is at 0: its link-time address is the
	 * runtime one less the load base.  The call is the byte before. */
	vaddr = (uint64_t)((uintptr_t)ret - (uintptr_t)info.dli_fbase) - 1;
	CHECK(lp_debug_file_open(&f, "/proc/self/exe") == 0);
	CHECK(lp_has_debug_info(f.elf));
	CHECK(lp_debug_sections_read(f.elf, LP_DEBUG_MAX_OBJECT, &s) == 0);
	CHECK(s.total <= LP_DEBUG_MAX_OBJECT && s.size[0] > 3000);
	CHECK(symbolizer_new(&sym, "test") == 0);
	CHECK(objects_new(&o, sym, NULL, "test") == 0);
	for (uint64_t id = 1; id <= 4; id++) {
		obj.id = st.object = id;
		CHECK(objects_add(o, &obj) == 0 && objects_add_symtab(o, &st) == 0);
	}
	/* 1: whole; 2: sparse, the unit of dw_outer only; 3: another machine
	 * in all but the first pieces, which then stand alone, with gaps; 4:
	 * sparse, without .debug_line. */
	CHECK(feed(o, 1, &s, 1000, UINT64_MAX, s.emachine) == 0);
	CHECK(feed_sparse(o, 2, &s, f.elf, vaddr, 0) == 0);
	CHECK(feed_sparse(o, 4, &s, f.elf, vaddr, 1) == 0);
	{
		struct lp_debug first = { .object = 3, .eclass = s.eclass, .edata = s.edata,
					  .emachine = s.emachine, .name = ".debug_info",
					  .size = s.size[0], .len = 100, .data = s.data[0] };

		CHECK(objects_add_debug(o, &first) == 0);
		CHECK(feed(o, 3, &s, 1000, UINT64_MAX, s.emachine + 1) == 0);
	}
	/* feed_sparse read f.elf; keep it open till then. */
	lp_debug_file_close(&f);

	CHECK(objects_srcline(o, 1, vaddr, &c) == 0);
	CHECK(c.n == 2);
	CHECK(c.f[0].func && !strcmp(c.f[0].func, "dw_inlined"));
	CHECK(!strcmp(base(c.f[0].file), "test_report_dwarf.c"));
	CHECK(c.f[0].line == (uint32_t)dw_line_call);
	CHECK(c.f[1].func && !strcmp(c.f[1].func, "dw_outer"));
	CHECK(!strcmp(base(c.f[1].file), "test_report_dwarf.c"));
	CHECK(c.f[1].line == (uint32_t)dw_line_inline);
	/* The sparse copy: the same frames. */
	CHECK(objects_srcline(o, 2, vaddr, &c) == 0);
	CHECK(c.n == 2 && c.f[0].func && !strcmp(c.f[0].func, "dw_inlined"));
	CHECK(c.f[0].line == (uint32_t)dw_line_call);
	CHECK(c.f[1].func && !strcmp(c.f[1].func, "dw_outer"));
	CHECK(c.f[1].line == (uint32_t)dw_line_inline);
	CHECK(!strcmp(base(c.f[1].file), "test_report_dwarf.c"));
	/* A function that inlines nothing there: one frame, its own. */
	vaddr = (uint64_t)((uintptr_t)dw_callee - (uintptr_t)info.dli_fbase);
	CHECK(objects_srcline(o, 1, vaddr, &c) == 0);
	CHECK(c.n == 1 && c.f[0].func && !strcmp(c.f[0].func, "dw_callee"));
	CHECK(objects_srcline(o, 2, vaddr, &c) == 0);
	CHECK(c.n == 1 && c.f[0].func && !strcmp(c.f[0].func, "dw_callee"));
	/* Another unit's function: known to the whole copy, not the sparse. */
	{
		uint64_t other = (uint64_t)((uintptr_t)main - (uintptr_t)info.dli_fbase);

		CHECK(objects_srcline(o, 1, other, &c) == 0 && c.n >= 1);
		CHECK(objects_srcline(o, 2, other, &c) == 0 && c.n == 0);
	}
	/* An address no unit covers. */
	CHECK(objects_srcline(o, 1, 0x10, &c) == 0 && c.n == 0);
	CHECK(objects_srcline(o, 3, vaddr, &c) == 0 && c.n == 0);
	CHECK(objects_srcline(o, 4, vaddr, &c) == 0 && c.n == 0);
	CHECK(objects_srcline(o, 99, vaddr, &c) == 0 && c.n == 0);
	objects_free(o);
	symbolizer_free(sym);
}

TEST(dwarf_units_extents)
{
	/* Two tables: code 1 (tag 0x11, children, two attributes, the second
	 * DW_FORM_implicit_const with -3), code 2 (a uleb of two bytes as
	 * its tag), then 0; a second table of one empty entry. */
	static const uint8_t ab[] = {
		0x01, 0x11, 0x01, 0x03, 0x08, 0x3a, 0x21, 0x7d, 0x00, 0x00,
		0x02, 0x80, 0x01, 0x00, 0x00, 0x00,
		0x00,
		0x05, 0x24, 0x00, 0x00, 0x00, 0x00,
	};
	static const uint8_t cut[] = { 0x01, 0x11, 0x01, 0x03, 0x08, 0x3a };
	static const uint8_t leb[] = { 0x01, 0x11, 0x01, 0x83, 0x88 };
	uint8_t u[32] = { 0 };
	uint64_t len;

	CHECK(lp_dwarf_abbrev_len(ab, sizeof(ab), 0, &len) == 0 && len == 17);
	CHECK(lp_dwarf_abbrev_len(ab, sizeof(ab), 17, &len) == 0 && len == 6);
	/* A table that ends with the section, without its 0 code. */
	CHECK(lp_dwarf_abbrev_len(ab, sizeof(ab) - 1, 17, &len) == 0 && len == 5);
	CHECK(lp_dwarf_abbrev_len(ab, sizeof(ab), sizeof(ab), &len) == 0 && len == 0);
	CHECK(lp_dwarf_abbrev_len(ab, sizeof(ab), sizeof(ab) + 1, &len) == -EINVAL);
	CHECK(lp_dwarf_abbrev_len(cut, sizeof(cut), 0, &len) == -EINVAL);
	CHECK(lp_dwarf_abbrev_len(leb, sizeof(leb), 0, &len) == -EINVAL);
	/* An implicit constant cut short. */
	CHECK(lp_dwarf_abbrev_len(ab, 7, 0, &len) == -EINVAL);

	/* 32-bit: 4 + 20; the same big-endian; 64-bit: 12 + 8. */
	u[0] = 20;
	CHECK(lp_dwarf_unit_len(u, sizeof(u), 0, 0, &len) == 0 && len == 24);
	CHECK(lp_dwarf_unit_len(u, 24, 0, 0, &len) == 0 && len == 24);
	CHECK(lp_dwarf_unit_len(u, 23, 0, 0, &len) == -EINVAL);
	CHECK(lp_dwarf_unit_len(u, sizeof(u), 0, 1, &len) == -EINVAL);
	u[0] = 0;
	u[3] = 20;
	CHECK(lp_dwarf_unit_len(u, sizeof(u), 0, 1, &len) == 0 && len == 24);
	memset(u, 0xff, 4);
	memset(u + 4, 0, 8);
	u[4] = 8;
	CHECK(lp_dwarf_unit_len(u, sizeof(u), 0, 0, &len) == 0 && len == 20);
	CHECK(lp_dwarf_unit_len(u, 19, 0, 0, &len) == -EINVAL);
	CHECK(lp_dwarf_unit_len(u, 11, 0, 0, &len) == -EINVAL);
	u[0] = 0xf0; /* 0xfffffff0: reserved */
	CHECK(lp_dwarf_unit_len(u, sizeof(u), 0, 0, &len) == -EINVAL);
	CHECK(lp_dwarf_unit_len(u, sizeof(u), 30, 0, &len) == -EINVAL);
	CHECK(lp_dwarf_unit_len(u, sizeof(u), 33, 0, &len) == -EINVAL);
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

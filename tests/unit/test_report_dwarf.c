/*
 * test_report_dwarf.c - source lines and inlined frames from DWARF that
 * arrives as DEBUG records, without root or a compiler: the unit test
 * binary (built with -g) is its own fixture.  Its line and inline sections
 * are read with format/debuginfo.c, as the recorder reads them, cut into
 * pieces given out of order and overlapping, and handed to report/objects.c
 * as a trace would; the return address of a call made from inside an
 * always-inlined function must then come back as that function [inlined]
 * at the call's line, inside its caller at the line that inlined it.  A
 * section with a gap, or pieces of another ELF identity, give no lines.
 */
#include <dlfcn.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "format/debuginfo.h"
#include "report/objects.h"
#include "report/symbolize.h"
#include "tests/unit/unit.h"

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
	for (uint64_t id = 1; id <= 3; id++) {
		obj.id = st.object = id;
		CHECK(objects_add(o, &obj) == 0 && objects_add_symtab(o, &st) == 0);
	}
	/* 1: whole; 2: a piece of .debug_info missing; 3: another machine in
	 * all but the first pieces, which then stand alone, with gaps. */
	CHECK(feed(o, 1, &s, 1000, UINT64_MAX, s.emachine) == 0);
	CHECK(feed(o, 2, &s, 1000, 2, s.emachine) == 0);
	{
		struct lp_debug first = { .object = 3, .eclass = s.eclass, .edata = s.edata,
					  .emachine = s.emachine, .name = ".debug_info",
					  .size = s.size[0], .len = 100, .data = s.data[0] };

		CHECK(objects_add_debug(o, &first) == 0);
		CHECK(feed(o, 3, &s, 1000, UINT64_MAX, s.emachine + 1) == 0);
	}
	lp_debug_file_close(&f);

	CHECK(objects_srcline(o, 1, vaddr, &c) == 0);
	CHECK(c.n == 2);
	CHECK(c.f[0].func && !strcmp(c.f[0].func, "dw_inlined"));
	CHECK(!strcmp(base(c.f[0].file), "test_report_dwarf.c"));
	CHECK(c.f[0].line == (uint32_t)dw_line_call);
	CHECK(c.f[1].func && !strcmp(c.f[1].func, "dw_outer"));
	CHECK(!strcmp(base(c.f[1].file), "test_report_dwarf.c"));
	CHECK(c.f[1].line == (uint32_t)dw_line_inline);
	/* A function that inlines nothing there: one frame, its own. */
	vaddr = (uint64_t)((uintptr_t)dw_callee - (uintptr_t)info.dli_fbase);
	CHECK(objects_srcline(o, 1, vaddr, &c) == 0);
	CHECK(c.n == 1 && c.f[0].func && !strcmp(c.f[0].func, "dw_callee"));
	/* An address no unit covers. */
	CHECK(objects_srcline(o, 1, 0x10, &c) == 0 && c.n == 0);
	CHECK(objects_srcline(o, 2, vaddr, &c) == 0 && c.n == 0);
	CHECK(objects_srcline(o, 3, vaddr, &c) == 0 && c.n == 0);
	CHECK(objects_srcline(o, 99, vaddr, &c) == 0 && c.n == 0);
	objects_free(o);
	symbolizer_free(sym);
}

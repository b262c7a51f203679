/*
 * test_objects.c - symbolizing from the objects of a trace (report/
 * objects.c): a trace's embedded symbol table names frames without any
 * file, a table split over records adds up, an object whose table is not
 * embedded uses a local file only if its identity matches, and the
 * identity of a file (format/objid.c) is its build-id.
 */
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "report/objects.h"
#include "tests/unit/format_util.h"
#include "tests/unit/unit.h"

TEST(objects_embedded_table_names_frames)
{
	static const uint8_t bid[] = { 0xde, 0xad, 0, 0xbe, 0xef };
	static const struct lp_objseg segs[] = {
		{ 0, 0x800, 0 }, { 0x1000, 0x2000, 0x401000 },
	};
	static const struct lp_objsym part1[] = {
		{ 0x401000, 0x10, "alpha" }, { 0x401010, 0x20, "beta" },
	};
	static const struct lp_objsym part2[] = { { 0x402000, 0, "gamma" } };
	struct lp_record recs[] = {
		{ .type = LP_REC_OBJECT, .u.object = { 3, "/nonexistent/libfoo.so",
						       LP_OBJID_BUILD_ID, sizeof(bid), bid, 1 } },
		{ .type = LP_REC_OBJECT, .u.object = { 4, "/nonexistent/libbar.so",
						       LP_OBJID_BUILD_ID, sizeof(bid), bid, 1 } },
		{ .type = LP_REC_SYMTAB, .u.symtab = { 3, 2, segs, 2, part1 } },
		{ .type = LP_REC_SYMTAB, .u.symtab = { 3, 0, NULL, 1, part2 } },
	};
	const char *path = fmt_tmp_path("objects.lp");
	struct symbolizer *sym = NULL;
	struct objects *o = NULL;
	struct sym_result res;

	CHECK(fmt_write_trace(path, LP_CODEC_LZ4, recs, ARRAY_SIZE(recs), 1,
			      NULL, NULL, NULL) == 0);
	CHECK(symbolizer_new(&sym, "test") == 0);
	CHECK(objects_new(&o, sym, NULL, "test") == 0);
	CHECK(objects_preload(o, path) == 0);
	CHECK(objects_embedded(o) == 1);
	/* File offset 0x1015 is vaddr 0x401015, inside beta. */
	CHECK(objects_lookup(o, 3, "/nonexistent/libfoo.so", 0x1015, &res) == 0);
	CHECK(res.elf && res.addr == 0x401015 && res.func && !strcmp(res.func, "beta"));
	CHECK(objects_lookup(o, 3, "/nonexistent/libfoo.so", 0x1000, &res) == 0);
	CHECK(res.func && !strcmp(res.func, "alpha"));
	/* The second record's symbol, with no size: up to the end. */
	CHECK(objects_lookup(o, 3, "/nonexistent/libfoo.so", 0x2100, &res) == 0);
	CHECK(res.func && !strcmp(res.func, "gamma"));
	/* Between beta's end and gamma: no name, but a virtual address. */
	CHECK(objects_lookup(o, 3, "/nonexistent/libfoo.so", 0x1800, &res) == 0);
	CHECK(!res.func && res.elf && res.addr == 0x401800);
	/* Not embedded and not found: module+offset, the file offset. */
	CHECK(objects_lookup(o, 4, "/nonexistent/libbar.so", 0x1015, &res) == 0);
	CHECK(!res.func && !res.elf && res.addr == 0x1015);
	objects_free(o);
	symbolizer_free(sym);
}

/* A local file is used only when its identity is the recorded one. */
TEST(objects_local_file_needs_matching_build_id)
{
	uint8_t ident[LP_OBJID_MAX];
	uint32_t kind, len;
	uint64_t size;
	char self[4096];
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	int fd;
	struct symbolizer *sym = NULL;
	struct objects *o = NULL;
	struct sym_result res;
	struct lp_object good, bad;

	CHECK(n > 0);
	self[n] = '\0';
	fd = open(self, O_RDONLY);
	CHECK(fd >= 0);
	CHECK(lp_objid_read(fd, &kind, ident, &len, &size) == 0);
	close(fd);
	/* gcc on Debian links with --build-id. */
	CHECK(kind == LP_OBJID_BUILD_ID && len == 20 && size > 0);
	good = (struct lp_object){ 1, self, kind, len, ident, size };
	bad = good;
	bad.id = 2;
	bad.ident = (const uint8_t *)"01234567890123456789";
	CHECK(symbolizer_new(&sym, "test") == 0);
	CHECK(objects_new(&o, sym, NULL, "test") == 0);
	CHECK(objects_add(o, &good) == 0 && objects_add(o, &bad) == 0);
	CHECK(objects_lookup(o, 1, self, 0x1000, &res) == 0);
	CHECK(res.elf);
	CHECK(objects_lookup(o, 2, self, 0x1000, &res) == 0);
	CHECK(!res.elf && !res.func && res.addr == 0x1000);
	objects_free(o);
	symbolizer_free(sym);
}

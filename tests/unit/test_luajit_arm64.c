/*
 * test_luajit_arm64.c - layouts read from arm64 LuaJIT objects' code
 * (luajit_code.c through symexec_arm64.c) on whatever machine runs the
 * tests, held to the truth, object by object:
 *
 *   - bookworm's luajit, luajit2 and trixie's sources cross-built for
 *     arm64 with -g, stripped: every field DWARF has is DWARF's (the
 *     unstripped twin's), the C frame is lj_frame.h's for ARM64 in the
 *     same source, the interpreter's code is lj_vm_asm_begin to
 *     lj_vm_ffi_call (its one CFI row), every builtin is named as the
 *     DWARF enum names it; and the facts the BPF walker needs come from
 *     the code, not from a table: g2disp, the C frame, jit_base, mcode;
 *   - Debian's own arm64 objects of the same sources (executables and
 *     libraries, stripped as they ship): the cross-build's layout and
 *     builtins, and an interpreter as long (DynASM's code is the same
 *     whatever the C compiler); against the x86-64 rows of
 *     luajit_layouts.c, the same but for g2disp and j_trace, 24 less
 *     (jit_State is shorter on arm64), and the C frame.
 *
 * The objects are tests/luajit-arm64.sh's, kept in build/luajit-arm64/:
 * without them the tests say so and are skipped.
 */
#include <elf.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "record/luajit.h"
#include "record/luajit_arch.h"
#include "record/luajit_code.h"
#include "tests/unit/unit.h"

#define LIST "build/luajit-arm64/builds.txt"
#define MAX_OBJS 16

struct obj {
	char name[64], path[512], debug[512];
};

/* builds.txt's lines: how many, 0 when there is none. */
static int objects(struct obj *o, int max)
{
	char line[1400];
	FILE *f = fopen(LIST, "r");
	int n = 0;

	if (!f)
		return 0;
	while (n < max && fgets(line, sizeof(line), f))
		if (sscanf(line, "%63s %511s %511s", o[n].name, o[n].path, o[n].debug) == 3)
			n++;
	fclose(f);
	return n;
}

static int derive(const char *path, struct lj_code_result *r)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC), err;

	if (fd < 0)
		return -1;
	err = lj_code_derive(fd, r);
	close(fd);
	return err;
}

/* A symbol's value in the object's .symtab (a debug twin's), 0 if none. */
static uint64_t symtab_value(const char *path, const char *name)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	Elf *e;
	Elf_Scn *scn = NULL;
	uint64_t v = 0;

	if (fd < 0)
		return 0;
	elf_version(EV_CURRENT);
	e = elf_begin(fd, ELF_C_READ, NULL);
	while (e && !v && (scn = elf_nextscn(e, scn))) {
		GElf_Shdr sh;
		Elf_Data *d;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_SYMTAB ||
		    !(d = elf_getdata(scn, NULL)))
			continue;
		for (size_t i = 0; sh.sh_entsize && i < sh.sh_size / sh.sh_entsize; i++) {
			GElf_Sym s;
			const char *n;

			if (gelf_getsym(d, (int)i, &s) &&
			    (n = elf_strptr(e, sh.sh_link, s.st_name)) && !strcmp(n, name)) {
				v = s.st_value;
				break;
			}
		}
	}
	if (e)
		elf_end(e);
	close(fd);
	return v;
}

/* The source an object was built from: "bookworm2" of "deb-bookworm2-arm64-lib". */
static void source_of(const char *name, char *out, size_t len)
{
	const char *p = strncmp(name, "deb-", 4) ? name : name + 4;
	const char *end = strstr(p, "-arm64");

	snprintf(out, len, "%.*s", end ? (int)(end - p) : (int)strlen(p), p);
}

/* lj_frame.h's ARM64 C frame in the source at src: prev, pc, l, size. */
static int frame_h(const char *src, unsigned v[4])
{
	static const char *const names[4] = {
		"CFRAME_OFS_PREV", "CFRAME_OFS_PC", "CFRAME_OFS_L", "CFRAME_SIZE" };
	char path[256], line[256], name[64];
	unsigned val, in = 0, got = 0;
	FILE *f;

	snprintf(path, sizeof(path), "build/luajit-arm64/src/%s/src/lj_frame.h", src);
	if (!(f = fopen(path, "r")))
		return -1;
	while (fgets(line, sizeof(line), f) && got != 15) {
		if (!strncmp(line, "#elif LJ_TARGET_ARM64", 21))
			in = 1;
		else if (in && (!strncmp(line, "#elif", 5) || !strncmp(line, "#else", 5)))
			in = 0;
		else if (in && sscanf(line, "#define %63s %u", name, &val) == 2)
			for (int i = 0; i < 4; i++)
				if (!strcmp(name, names[i])) {
					v[i] = val;
					got |= 1u << i;
				}
	}
	fclose(f);
	return got == 15 ? 0 : -1;
}

/* The fields every arm64 derivation must show from the code itself,
 * those the BPF walker needs above all. */
static const enum lj_field from_code[] = {
	LJF_g2disp, LJF_gg_g, LJF_g_vmstate, LJF_g_cur_L, LJF_g_jit_base, LJF_l_cframe,
	LJF_cf_l, LJF_cf_pc, LJF_cf_prev, LJF_cf_size, LJF_g2j, LJF_j_trace, LJF_tr_mcode,
	LJF_fn_f, LJF_l_glref, LJF_g_mainthref, LJF_l_base, LJF_l_top, LJF_str_len,
	LJF_tr_startpt, LJF_pt_size,
};

/* A complete derivation: every VM field, no conflict, GC64, the fields
 * above from the code, arm64's G register holding G. */
static int complete(const struct lj_code_result *r)
{
	for (int f = 0; f < LJF__N; f++)
		if (lj_fields[f].group == LJG_VM && r->from[f] == LJ_FROM_NONE)
			return 0;
	for (size_t i = 0; i < sizeof(from_code) / sizeof(from_code[0]); i++)
		if (r->from[from_code[i]] != LJ_FROM_CODE)
			return 0;
	return !r->conflict[0] && r->layout.ref_size == 8 && (r->layout.flags & LJ_LAYOUT_GC64) &&
	       r->vm_end > r->vm_start && r->ff.n > 200 &&
	       lj_arch_g_bias(lj_arch_for(EM_AARCH64), &r->layout) == 0;
}

TEST(lj_arm64_cross_builds_are_their_dwarf)
{
	struct obj o[MAX_OBJS];
	int n = objects(o, MAX_OBJS), checked = 0;

	if (!n)
		SKIP("no " LIST ": tests/luajit-arm64.sh makes the arm64 objects");
	for (int i = 0; i < n; i++) {
		struct lj_code_result r;
		struct lj_layout dw;
		struct lj_ffnames ff;
		char msg[512], src[64];
		unsigned cf[4], same = 0;

		if (!strcmp(o[i].debug, "-"))
			continue;
		CHECK(!derive(o[i].path, &r));
		CHECK(complete(&r));
		CHECK(!lj_layout_from_dwarf(o[i].debug, &dw, &ff, msg, sizeof(msg)));
		for (int f = 0; f < LJF__N; f++) {
			if (!lj_fields[f].in_dwarf || lj_fields[f].group == LJG_PAD)
				continue;
			CHECK(lj_field_get(&r.layout, f) == lj_field_get(&dw, f));
			same++;
		}
		CHECK(same >= 55);
		source_of(o[i].name, src, sizeof(src));
		CHECK(!frame_h(src, cf));
		CHECK(r.layout.cf_prev == cf[0] && r.layout.cf_pc == cf[1] &&
		      r.layout.cf_l == cf[2] && r.layout.cf_size == cf[3]);
		CHECK(r.vm_start == symtab_value(o[i].debug, "lj_vm_asm_begin"));
		CHECK(r.vm_end == symtab_value(o[i].debug, "lj_vm_ffi_call"));
		CHECK(r.ff.n == ff.n);
		for (uint32_t k = 2; k < ff.n; k++)
			CHECK(!ff.names[k][0] || !strcmp(r.ff.names[k], ff.names[k]));
		CHECK(r.layout.ffid_coroutine_resume == dw.ffid_coroutine_resume &&
		      r.layout.ffid_coroutine_wrap_aux == dw.ffid_coroutine_wrap_aux);
		lj_ffnames_free(&ff);
		lj_ffnames_free(&r.ff);
		checked++;
	}
	CHECK(checked >= 6);
}

/*
 * Debian's object against the cross-build of its source: the same layout
 * field by field, from the same sources, an interpreter as long, and the
 * same builtins where Debian's are named.  (Debian builds with `make
 * amalg`, which inlines lj_lib_prereg into luaopen_table and luaopen_jit:
 * their lazily registered functions, table.new and jit.util's, are named
 * from the known build that numbers the others alike.)
 */
static int same_result(const struct lj_code_result *a, const struct lj_code_result *b)
{
	uint32_t named = 0;

	for (int f = 0; f < LJF__N; f++)
		if (a->from[f] != b->from[f] ||
		    lj_field_get(&a->layout, f) != lj_field_get(&b->layout, f))
			return 0;
	if (a->ff.n != b->ff.n || a->vm_end - a->vm_start != b->vm_end - b->vm_start)
		return 0;
	for (uint32_t k = 0; k < a->ff.n; k++) {
		if (a->ff.names[k][0] && strcmp(a->ff.names[k], b->ff.names[k]))
			return 0;
		named += a->ff.names[k][0] != 0;
	}
	return named >= 200;
}

/* The x86-64 row of the same source, field by field: all the same but
 * for jit_State's size before its trace array and the C frame. */
static int like_x86_row(const struct lj_layout *lo, const struct lj_build_desc *row)
{
	for (int f = 0; f < LJF__N; f++) {
		long long a = lj_field_get(lo, f), x = lj_field_get(&row->layout, f);

		switch (f) {
		case LJF_g2disp: case LJF_j_trace: case LJF_j_sizetrace:
			if (a != x - 24)
				return 0;
			break;
		case LJF_cf_l: case LJF_cf_pc: case LJF_cf_prev: case LJF_cf_size:
		case LJF_pad: case LJF_pad_end:
			break;
		default:
			if (a != x)
				return 0;
		}
	}
	return 1;
}

TEST(lj_arm64_debian_objects)
{
	struct obj o[MAX_OBJS];
	int n = objects(o, MAX_OBJS), checked = 0, rows = 0;

	if (!n)
		SKIP("no " LIST ": tests/luajit-arm64.sh makes the arm64 objects");
	for (int i = 0; i < n; i++) {
		struct lj_code_result r, twin;
		const struct lj_build_desc *row;
		int j;

		if (strncmp(o[i].name, "deb-", 4))
			continue;
		for (j = 0; j < n && strcmp(o[j].name, o[i].name + 4); j++)
			;
		CHECK(j < n);
		CHECK(!derive(o[i].path, &r));
		CHECK(complete(&r));
		CHECK(!derive(o[j].path, &twin));
		CHECK(same_result(&r, &twin));
		/* the rows were measured on bookworm's two sources */
		row = lj_known_build(r.layout.flags);
		if (row && strncmp(o[i].name, "deb-trixie", 10)) {
			CHECK(like_x86_row(&r.layout, row));
			rows++;
		}
		lj_ffnames_free(&r.ff);
		lj_ffnames_free(&twin.ff);
		checked++;
	}
	CHECK(checked >= 6 && rows >= 4);
}

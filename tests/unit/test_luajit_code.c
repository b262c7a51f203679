/*
 * test_luajit_code.c - the parts of a layout's derivation that need no
 * LuaJIT build to test (the builds themselves are tests/e2e/
 * luajit_builds.sh's): LuaJIT 2.1's declarations laid out for each
 * reference width, held to the built-in rows they must reproduce; the
 * reading of buildvm's library descriptions (record/luajit_libs.c,
 * included for its parser); the cache of derivations on disk, which must
 * give back what it was given and believe nothing else.
 */
#include <elf.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* included for its static parser; its one public function renamed, the
 * real one being linked */
#define lj_ffnames_from_code libs_test_ffnames_from_code
#include "record/luajit_libs.c"
#undef lj_ffnames_from_code

#include "record/luajit_arch.h"
#include "tests/unit/unit.h"

/* ---- declarations ------------------------------------------------------ */

/* Every field the declarations give is the built-in rows' value, for the
 * rows of both reference widths (the code gives the rest). */
TEST(lj_struct_matches_known_rows)
{
	const struct lj_arch *x86 = lj_arch_for(EM_X86_64);

	for (size_t b = 0; b < 4; b++) {
		const struct lj_build_desc *row = &lj_builds[b];
		struct lj_code_result r;
		int n = 0;

		memset(&r, 0, sizeof(r));
		lj_field_set(&r.layout, LJF_ref_size, row->layout.ref_size);
		r.from[LJF_ref_size] = LJ_FROM_CODE;
		lj_field_set(&r.layout, LJF_g2j, row->layout.g2j);
		r.from[LJF_g2j] = LJ_FROM_CODE;
		lj_field_set(&r.layout, LJF_j_trace, row->layout.j_trace);
		r.from[LJF_j_trace] = LJ_FROM_CODE;
		lj_struct_complete(&r, 1, x86);
		for (int f = 0; f < LJF__N; f++) {
			if (r.from[f] != LJ_FROM_STRUCT)
				continue;
			n++;
			CHECK(lj_field_get(&r.layout, f) == lj_field_get(&row->layout, f));
		}
		CHECK(n >= 30);
		CHECK(r.from[LJF_sn_size] == LJ_FROM_STRUCT);
	}
}

/* Without the 2021 snapshots, no snapshot field; without J, no trace. */
TEST(lj_struct_groups)
{
	const struct lj_arch *x86 = lj_arch_for(EM_X86_64);
	struct lj_code_result r;

	memset(&r, 0, sizeof(r));
	lj_field_set(&r.layout, LJF_ref_size, 8);
	r.from[LJF_ref_size] = LJ_FROM_CODE;
	lj_struct_complete(&r, 0, x86);
	CHECK(r.from[LJF_pt_chunkname] == LJ_FROM_STRUCT);
	CHECK(r.from[LJF_tr_mcode] == LJ_FROM_NONE);
	CHECK(r.from[LJF_sn_size] == LJ_FROM_NONE && r.from[LJF_tr_nsnap] == LJ_FROM_NONE);
	/* a field the code found is not overwritten */
	memset(&r, 0, sizeof(r));
	lj_field_set(&r.layout, LJF_ref_size, 4);
	r.from[LJF_ref_size] = LJ_FROM_CODE;
	lj_field_set(&r.layout, LJF_pt_size, 72);
	r.from[LJF_pt_size] = LJ_FROM_CODE;
	lj_struct_complete(&r, 0, x86);
	CHECK(r.layout.pt_size == 72 && r.from[LJF_pt_size] == LJ_FROM_CODE);
	CHECK(r.layout.pt_chunkname == 40);
	/* no reference width: nothing */
	memset(&r, 0, sizeof(r));
	lj_struct_complete(&r, 1, x86);
	for (int f = 0; f < LJF__N; f++)
		CHECK(r.from[f] == LJ_FROM_NONE);
}

/* The architectures' facts: x86-64's C frame is the built-in rows'; the
 * walker's G is r14 - g2disp on x86-64, x22 itself on arm64; nothing
 * else is an architecture luaprof reads. */
TEST(lj_arch_facts)
{
	const struct lj_arch *x86 = lj_arch_for(EM_X86_64), *a64 = lj_arch_for(EM_AARCH64);

	CHECK(x86 && a64 && !lj_arch_for(EM_386) && !lj_arch_for(EM_RISCV));
	CHECK(x86->isa == sx_isa_for(EM_X86_64) && a64->isa == sx_isa_for(EM_AARCH64));
	for (size_t b = 0; b < 4; b++) {
		const struct lj_layout *lo = &lj_builds[b].layout;
		const struct lj_arch_cframe *cf = &x86->cframe[lo->ref_size == 8];

		CHECK(cf->l == lo->cf_l && cf->pc == lo->cf_pc && cf->prev == lo->cf_prev &&
		      cf->size == lo->cf_size && cf->nres == lo->cf_l - 8);
		CHECK(lj_arch_g_bias(x86, lo) == lo->g2disp && lj_arch_g_bias(a64, lo) == 0);
	}
	CHECK(!a64->cframe[0].size && a64->cframe[1].size == 208);
	CHECK(a64->g_reg == 22 && a64->base_reg == 19 && a64->pc_reg == 21);
}

/* ---- library descriptions --------------------------------------------- */

/* "coroutine" as buildvm writes it, with the unnamed wrap_aux skipped by
 * an ffid tag, then a function written in Lua (a stripped prototype with
 * a number constant), then two more functions. */
static const uint8_t coroutine_init[] = {
	30, 0, 8,                                    /* ffid 30, bcff 0, hash 8 */
	0x46, 's', 't', 'a', 't', 'u', 's',          /* ASM status: 30 */
	0x07, 'r', 'u', 'n', 'n', 'i', 'n', 'g',     /* CF running: 31 */
	0xfe,                                        /* 32: registered elsewhere */
	0x04, 'w', 'r', 'a', 'p',                    /* CF wrap: 33 */
	0xf9, 3, 'd', 'e', 'g',                      /* LUA deg, then its proto: */
	0x00, 0x01, 0x02, 0x00, 0x00, 0x01, 0x02,    /* flags..sizeuv, kgc 0, kn 1, bc 2+1 */
	0x18, 0x01, 0x00, 0x00, 0x4c, 0x01, 0x02, 0x00, /* two instructions */
	0xf1, 0x87, 0x9e, 0xa6, 0x03, 0xdc, 0xcb, 0xb2, 0x82, 0x04, /* a number */
	0x82, 'y', 'o',                              /* ASM_ yo: 34 */
	0x00,                                        /* an unnamed CF: 35 */
	0x04, 'l', 'a', 's', 't',                    /* CF last: 36 */
	0xff,
};

TEST(lj_libs_parse_description)
{
	struct entry e[16];
	int n = parse_init(coroutine_init, sizeof(coroutine_init), e, 16);

	CHECK(n == 7);
	CHECK(e[0].ffid == 30 && !strcmp(e[0].name, "status"));
	CHECK(e[1].ffid == 31 && !strcmp(e[1].name, "running"));
	CHECK(e[2].ffid == 32 && !e[2].name[0]);
	CHECK(e[3].ffid == 33 && !strcmp(e[3].name, "wrap"));
	CHECK(e[4].ffid == 34 && !strcmp(e[4].name, "yo"));
	CHECK(e[5].ffid == 35 && !e[5].name[0]);
	CHECK(e[6].ffid == 36 && !strcmp(e[6].name, "last"));
}

/* Cut anywhere, or with a name of control bytes, it is no description. */
TEST(lj_libs_parse_rejects)
{
	uint8_t bad[sizeof(coroutine_init)];
	struct entry e[16];

	for (size_t len = 0; len < sizeof(coroutine_init); len++)
		CHECK(parse_init(coroutine_init, len, e, 16) < 0);
	memcpy(bad, coroutine_init, sizeof(bad));
	bad[4] = '\n';
	CHECK(parse_init(bad, sizeof(bad), e, 16) < 0);
	CHECK(parse_init(coroutine_init, sizeof(coroutine_init), e, 3) < 0);
}

/* ---- the cache --------------------------------------------------------- */

/* A file to stand for a LuaJIT object (its identity is its content). */
static int object_file(const char *name, const char *content)
{
	char path[512];
	int fd;

	snprintf(path, sizeof(path), "%s/%s", unit_tmpdir(), name);
	fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
	if (fd >= 0 && write(fd, content, strlen(content)) != (ssize_t)strlen(content)) {
		close(fd);
		return -1;
	}
	return fd;
}

static void sample_result(struct lj_code_result *r)
{
	memset(r, 0, sizeof(*r));
	lj_field_set(&r->layout, LJF_g2disp, 4016);
	r->from[LJF_g2disp] = LJ_FROM_CODE;
	r->via[LJF_g2disp] = "lua_call";
	lj_field_set(&r->layout, LJF_pt_k, 32);
	r->from[LJF_pt_k] = LJ_FROM_STRUCT;
	r->via[LJF_pt_k] = "GCproto";
	r->vm_start = 0x9b90;
	r->vm_end = 0xdbe2;
	r->ff.names = calloc(3, sizeof(char *));
	r->ff.names[0] = strdup("Lua");
	r->ff.names[1] = strdup("C");
	r->ff.names[2] = strdup("string.format");
	r->ff.n = 3;
}

/* The one file in the cache directory, by its path. */
static int cache_file(const char *dir, char *path, size_t len)
{
	char cmd[1024];
	FILE *p;
	int ok;

	snprintf(cmd, sizeof(cmd), "ls %s", dir);
	p = popen(cmd, "r");
	if (!p)
		return -1;
	ok = fgets(path + strlen(dir) + 1, (int)(len - strlen(dir) - 1), p) != NULL;
	pclose(p);
	memcpy(path, dir, strlen(dir));
	path[strlen(dir)] = '/';
	path[strcspn(path, "\n")] = '\0';
	return ok ? 0 : -1;
}

TEST(lj_cache_round_trip_and_distrust)
{
	char dir[512], path[1024], *old = getenv("LUAPROF_CACHE_DIR");
	struct lj_code_result r, back;
	int fd = object_file("fake-luajit", "not really an ELF file, but a file\n");
	FILE *f;

	CHECK(fd >= 0);
	snprintf(dir, sizeof(dir), "%s/cache", unit_tmpdir());
	setenv("LUAPROF_CACHE_DIR", dir, 1);
	CHECK(lj_cache_load(fd, &back) < 0); /* nothing yet */
	sample_result(&r);
	lj_cache_store(fd, &r);
	CHECK(!lj_cache_load(fd, &back));
	CHECK(back.layout.g2disp == 4016 && back.from[LJF_g2disp] == LJ_FROM_CODE);
	CHECK(!strcmp(back.via[LJF_g2disp], "lua_call"));
	CHECK(back.layout.pt_k == 32 && back.from[LJF_pt_k] == LJ_FROM_STRUCT);
	CHECK(back.vm_start == 0x9b90 && back.vm_end == 0xdbe2);
	CHECK(back.ff.n == 3 && !strcmp(back.ff.names[2], "string.format"));
	lj_ffnames_free(&back.ff);
	CHECK(!cache_file(dir, path, sizeof(path)));
	/* writable by others: not believed */
	CHECK(!chmod(path, 0622));
	CHECK(lj_cache_load(fd, &back) < 0);
	CHECK(!chmod(path, 0600));
	CHECK(!lj_cache_load(fd, &back));
	lj_ffnames_free(&back.ff);
	/* another luaprof's, a line it does not know, a cut file */
	f = fopen(path, "w");
	CHECK(f);
	fprintf(f, "luaprof-luajit-layout 1 0.0.0\nend\n");
	fclose(f);
	CHECK(lj_cache_load(fd, &back) < 0);
	lj_cache_store(fd, &r);
	f = fopen(path, "a");
	CHECK(f);
	fprintf(f, "field g2disp 4016 code somewhere_else\n");
	fclose(f);
	CHECK(lj_cache_load(fd, &back) < 0); /* after "end", and an unknown source */
	lj_cache_store(fd, &r);
	CHECK(!truncate(path, 60));
	CHECK(lj_cache_load(fd, &back) < 0);
	/* a link in its place is not followed */
	CHECK(!unlink(path) && !symlink("/etc/passwd", path));
	CHECK(lj_cache_load(fd, &back) < 0);
	lj_ffnames_free(&r.ff);
	close(fd);
	if (old)
		setenv("LUAPROF_CACHE_DIR", old, 1);
	else
		unsetenv("LUAPROF_CACHE_DIR");
}

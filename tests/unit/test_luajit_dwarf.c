/*
 * test_luajit_dwarf.c - unit tests of the DWARF layout reader
 * (record/luajit_dwarf.c) without building LuaJIT: this file defines
 * stand-ins for LuaJIT's structs, with offsets no real build has, and the
 * unit test binary (built with -g) reads them back from its own DWARF.
 * That checks every lj_layout field against offsetof(), the union path to
 * GCfuncC/GCfuncL, members inside anonymous structs, the enum's fast
 * function ids, a separate debug file found through .gnu_debuglink (made
 * with objcopy, skipped without it), a stale debug file being refused,
 * errors naming the missing type or member, and damaged files.
 *
 * The reader is included rather than linked: the Makefile links only
 * luajit_layouts.o and unwind_table.o of record/ into the unit tests, and
 * the tests also call its static fill_layout() on doctored type sets.
 * The end-to-end test tests/e2e/luajit_offsets.sh reads real LuaJIT builds.
 */
#include "record/luajit_dwarf.c"

#include <stdlib.h>

#include "tests/unit/unit.h"

/* ---- stand-ins for LuaJIT's types --------------------------------------- */

typedef struct GCRef {
	uint64_t gcptr64;
} GCRef;

typedef struct MRef {
	uint64_t ptr64;
} MRef;

typedef struct global_State {
	char pad0[40];
	volatile int32_t vmstate;
	uint32_t pad1;
	GCRef mainthref;
	char pad2[24];
	GCRef cur_L;
	MRef jit_base;
} global_State;

struct lua_State {
	GCRef nextgc;
	uint8_t marked, gct, dummy_ffid, status;
	uint32_t pad0;
	MRef glref;
	GCRef gclist;
	void *base;
	void *top;
	MRef maxstack;
	MRef stack;
	GCRef openupval;
	GCRef env;
	void *cframe;
	uint32_t stacksize;
	void *exdata; /* OpenResty's */
};
typedef struct lua_State lua_State;

/* Only the union is named as LuaJIT names it: the reader must go through
 * its members c and l. */
struct test_funcc {
	GCRef nextgc;
	uint8_t marked, gct, ffid, nupvalues;
	GCRef env, gclist;
	MRef pc;
	void *f;
	uint64_t upvalue[1];
};

struct test_funcl {
	GCRef nextgc;
	uint8_t marked, gct, ffid, nupvalues;
	GCRef env, gclist;
	MRef pc;
	GCRef uvptr[1];
};

typedef union GCfunc {
	struct test_funcc c;
	struct test_funcl l;
} GCfunc;

typedef struct GCproto {
	GCRef nextgc;
	uint8_t marked, gct, numparams, framesize;
	uint32_t sizebc;
	uint32_t pad0;
	GCRef gclist;
	MRef k, uv;
	uint32_t sizekgc, sizekn, sizept;
	uint8_t sizeuv, flags;
	uint16_t trace;
	struct { /* anonymous: found through it */
		GCRef chunkname;
		int32_t firstline, numline;
	};
	MRef lineinfo, uvinfo, varinfo;
	char pad1[8];
} GCproto;

typedef struct GCstr {
	GCRef nextgc;
	uint8_t marked, gct, reserved, hashalg;
	uint32_t sid, hash, pad;
	uint32_t len;
} GCstr;

typedef struct jit_State {
	char pad0[72];
	GCRef *trace;
	uint32_t freetrace;
	uint32_t sizetrace;
	char pad1[300];
} jit_State;

/* A trace's snapshots: fields moved from where LuaJIT has them. */
typedef struct SnapShot {
	uint16_t ref;
	uint16_t mcofs;
	uint8_t nslots, nent, topslot, count;
	uint32_t mapofs;
	uint32_t pad;
} SnapShot;

typedef struct GCtrace {
	GCRef nextgc;
	uint8_t marked, gct;
	uint16_t nsnap;
	uint32_t nins;
	char pad0[24];
	GCRef startpt;
	MRef startpc;
	uint32_t pad1;
	uint32_t szmcode;
	void *mcode;
	uint16_t pad2;
	uint16_t traceno;
	uint16_t link;
	uint16_t root;
	SnapShot *snap;
	uint32_t nsnapmap, nk;
	uint32_t *snapmap;
	void *ir;
} GCtrace;

typedef struct GG_State {
	lua_State L;
	char pad0[8];
	global_State g;
	char pad1[24];
	jit_State J;
	void *dispatch[100];
} GG_State;

/* The names of lj_ff.h's enum, and one no known build has. */
typedef enum {
	FF_LUA_,
	FF_C_,
	FF_assert,
	FF_io_method_close,
	FF_misc_getmetrics,
	FF_coroutine_resume = 7,
	FF_coroutine_wrap_aux = 9,
	FF__MAX
} FastFunc;

/* Definitions, so that the compiler emits the types. */
GG_State test_lj_gg;
GCproto test_lj_proto;
GCstr test_lj_str;
GCfunc test_lj_func;
FastFunc test_lj_ff;
GCtrace test_lj_trace;

/* ---- helpers ---------------------------------------------------------- */

static int self_path(char *buf, size_t len)
{
	ssize_t n = readlink("/proc/self/exe", buf, len - 1);

	if (n <= 0)
		return -1;
	buf[n] = '\0';
	return 0;
}

/* Whether this binary has DWARF at all: CFLAGS without -g has none. */
static int have_own_dwarf(const char *self)
{
	struct lp_debug_file f;
	int ok;

	elf_version(EV_CURRENT);
	if (lp_debug_file_open(&f, self))
		return 0;
	ok = lp_has_debug_info(f.elf);
	lp_debug_file_close(&f);
	return ok;
}

static int run(const char *cmd)
{
	return system(cmd) == 0;
}

static int copy_file(const char *from, const char *to, long keep)
{
	char cmd[PATH_MAX * 2 + 64];

	if (keep < 0)
		snprintf(cmd, sizeof(cmd), "cp '%s' '%s'", from, to);
	else
		snprintf(cmd, sizeof(cmd), "head -c %ld '%s' > '%s'", keep, from, to);
	return run(cmd);
}

#define FIELD_IS(f, v) ((long long)lo.f == (long long)(v))

/* ---- tests ------------------------------------------------------------ */

TEST(lj_dwarf_reads_own_types)
{
	const struct lj_build_desc *gc64 = lj_known_build(LJ_LAYOUT_GC64);
	char self[PATH_MAX], msg[PATH_MAX + 128];
	struct lj_layout lo;

	CHECK(!self_path(self, sizeof(self)));
	if (!have_own_dwarf(self))
		return; /* built without -g: nothing to read */
	CHECK(lj_layout_from_dwarf(self, &lo, NULL, msg, sizeof(msg)) == 0);
	CHECK(!strcmp(msg, self));
	CHECK(FIELD_IS(flags, LJ_LAYOUT_GC64 | LJ_LAYOUT_OPENRESTY));
	CHECK(FIELD_IS(ref_size, 8));
	CHECK(FIELD_IS(gg_g, offsetof(GG_State, g) - offsetof(GG_State, L)));
	CHECK(FIELD_IS(g2disp, offsetof(GG_State, dispatch) - offsetof(GG_State, g)));
	CHECK(FIELD_IS(g_vmstate, offsetof(global_State, vmstate)));
	CHECK(FIELD_IS(g_mainthref, offsetof(global_State, mainthref)));
	CHECK(FIELD_IS(g_cur_L, offsetof(global_State, cur_L)));
	CHECK(FIELD_IS(g_jit_base, offsetof(global_State, jit_base)));
	CHECK(FIELD_IS(l_glref, offsetof(lua_State, glref)));
	CHECK(FIELD_IS(l_base, offsetof(lua_State, base)));
	CHECK(FIELD_IS(l_top, offsetof(lua_State, top)));
	CHECK(FIELD_IS(l_stack, offsetof(lua_State, stack)));
	CHECK(FIELD_IS(l_maxstack, offsetof(lua_State, maxstack)));
	CHECK(FIELD_IS(l_cframe, offsetof(lua_State, cframe)));
	CHECK(FIELD_IS(fn_ffid, offsetof(struct test_funcl, ffid)));
	CHECK(FIELD_IS(fn_pc, offsetof(struct test_funcl, pc)));
	CHECK(FIELD_IS(fn_f, offsetof(struct test_funcc, f)));
	CHECK(FIELD_IS(fn_upvalue, offsetof(struct test_funcc, upvalue)));
	CHECK(FIELD_IS(pt_size, sizeof(GCproto)));
	CHECK(FIELD_IS(pt_sizebc, offsetof(GCproto, sizebc)));
	CHECK(FIELD_IS(pt_k, offsetof(GCproto, k)));
	CHECK(FIELD_IS(pt_sizekgc, offsetof(GCproto, sizekgc)));
	CHECK(FIELD_IS(pt_sizekn, offsetof(GCproto, sizekn)));
	CHECK(FIELD_IS(pt_sizept, offsetof(GCproto, sizept)));
	CHECK(FIELD_IS(pt_numparams, offsetof(GCproto, numparams)));
	CHECK(FIELD_IS(pt_framesize, offsetof(GCproto, framesize)));
	CHECK(FIELD_IS(pt_sizeuv, offsetof(GCproto, sizeuv)));
	CHECK(FIELD_IS(pt_flags, offsetof(GCproto, flags)));
	CHECK(FIELD_IS(pt_chunkname, offsetof(GCproto, chunkname)));
	CHECK(FIELD_IS(pt_firstline, offsetof(GCproto, firstline)));
	CHECK(FIELD_IS(pt_numline, offsetof(GCproto, numline)));
	CHECK(FIELD_IS(pt_lineinfo, offsetof(GCproto, lineinfo)));
	CHECK(FIELD_IS(pt_uvinfo, offsetof(GCproto, uvinfo)));
	CHECK(FIELD_IS(pt_varinfo, offsetof(GCproto, varinfo)));
	CHECK(FIELD_IS(str_len, offsetof(GCstr, len)));
	CHECK(FIELD_IS(str_size, sizeof(GCstr)));
	/* Not in DWARF: the GC64 row's C frame. */
	CHECK(gc64);
	CHECK(FIELD_IS(cf_l, gc64->layout.cf_l));
	CHECK(FIELD_IS(cf_pc, gc64->layout.cf_pc));
	CHECK(FIELD_IS(cf_prev, gc64->layout.cf_prev));
	CHECK(FIELD_IS(cf_size, gc64->layout.cf_size));
	CHECK(FIELD_IS(ffid_coroutine_resume, FF_coroutine_resume));
	CHECK(FIELD_IS(ffid_coroutine_wrap_aux, FF_coroutine_wrap_aux));
	/* Compiled traces: from DWARF too, not from a built-in row. */
	CHECK(FIELD_IS(g2j, offsetof(GG_State, J) - offsetof(GG_State, g)));
	CHECK(FIELD_IS(j_trace, offsetof(jit_State, trace)));
	CHECK(FIELD_IS(j_sizetrace, offsetof(jit_State, sizetrace)));
	CHECK(FIELD_IS(tr_startpt, offsetof(GCtrace, startpt)));
	CHECK(FIELD_IS(tr_startpc, offsetof(GCtrace, startpc)));
	CHECK(FIELD_IS(tr_mcode, offsetof(GCtrace, mcode)));
	CHECK(FIELD_IS(tr_szmcode, offsetof(GCtrace, szmcode)));
	CHECK(FIELD_IS(tr_root, offsetof(GCtrace, root)));
	CHECK(FIELD_IS(tr_traceno, offsetof(GCtrace, traceno)));
	/* Snapshots, from GCtrace and SnapShot. */
	CHECK(FIELD_IS(tr_nsnap, offsetof(GCtrace, nsnap)));
	CHECK(FIELD_IS(tr_nsnapmap, offsetof(GCtrace, nsnapmap)));
	CHECK(FIELD_IS(tr_nk, offsetof(GCtrace, nk)));
	CHECK(FIELD_IS(tr_snap, offsetof(GCtrace, snap)));
	CHECK(FIELD_IS(tr_snapmap, offsetof(GCtrace, snapmap)));
	CHECK(FIELD_IS(tr_ir, offsetof(GCtrace, ir)));
	CHECK(FIELD_IS(tr_nins, offsetof(GCtrace, nins)));
	CHECK(FIELD_IS(sn_size, sizeof(SnapShot)));
	CHECK(FIELD_IS(sn_mapofs, offsetof(SnapShot, mapofs)));
	CHECK(FIELD_IS(sn_mcofs, offsetof(SnapShot, mcofs)));
	CHECK(FIELD_IS(sn_nent, offsetof(SnapShot, nent)));
	CHECK(FIELD_IS(sn_ref, offsetof(SnapShot, ref)));
}

/* The fast functions' names come from the enum: a known build's spelling
 * where one has the name, the library and function otherwise. */
TEST(lj_dwarf_names_fast_functions)
{
	char self[PATH_MAX], msg[PATH_MAX + 128];
	struct lj_ffnames ff;
	struct lj_layout lo;

	CHECK(!self_path(self, sizeof(self)));
	if (!have_own_dwarf(self))
		return;
	CHECK(lj_layout_from_dwarf(self, &lo, &ff, msg, sizeof(msg)) == 0);
	CHECK(ff.n == FF__MAX);
	if (ff.n == FF__MAX) {
		CHECK(!strcmp(ff.names[FF_LUA_], "Lua") && !strcmp(ff.names[FF_C_], "C"));
		CHECK(!strcmp(ff.names[FF_assert], "assert"));
		CHECK(!strcmp(ff.names[FF_io_method_close], "io.method.close"));
		CHECK(!strcmp(ff.names[FF_misc_getmetrics], "misc.getmetrics"));
		CHECK(!strcmp(ff.names[5], "") && !strcmp(ff.names[6], ""));
		CHECK(!strcmp(ff.names[FF_coroutine_resume], "coroutine.resume"));
		CHECK(!strcmp(ff.names[FF_coroutine_wrap_aux], "coroutine.wrap_aux"));
	}
	lj_ffnames_free(&ff);
	CHECK(ff.n == 0 && !ff.names);
}

/* Snapshot offsets: without SnapShot in DWARF, or with a SnapShot of
 * another shape (no mcofs: before 2020), none, so that traces are
 * recorded without snapshots rather than misread (a fork moves them: a
 * built-in row's would be a guess). */
TEST(lj_dwarf_snapshot_fields)
{
	char self[PATH_MAX], msg[512];
	struct lp_debug_file f = { .fd = -1 };
	struct lj_types ty, doctored;
	struct lj_layout lo;
	Dwarf *dbg;
	int ok = 0;

	CHECK(!self_path(self, sizeof(self)));
	if (!have_own_dwarf(self))
		return;
	CHECK(!find_debug_info(self, &f));
	dbg = dwarf_begin_elf(f.elf, DWARF_C_READ, NULL);
	if (dbg && !find_types(dbg, &ty) && ty.have[T_TRACE] && ty.have[T_SNAP]) {
		doctored = ty;
		doctored.have[T_SNAP] = false;
		ok = !fill_layout(&doctored, &lo, "x", msg, sizeof(msg)) &&
		     !lo.sn_size && !lo.tr_snap && !lo.sn_mcofs;
		doctored = ty;
		doctored.die[T_SNAP] = ty.die[T_STR]; /* no mcofs */
		ok = ok && !fill_layout(&doctored, &lo, "x", msg, sizeof(msg)) &&
		     !lo.sn_size && !lo.tr_snap;
	}
	if (dbg)
		dwarf_end(dbg);
	lp_debug_file_close(&f);
	CHECK(ok);
}

/* A missing type or member is named, and nothing is made up for it. */
TEST(lj_dwarf_names_what_is_missing)
{
	char self[PATH_MAX], msg[512];
	struct lp_debug_file f = { .fd = -1 };
	struct lj_types ty, doctored;
	struct lj_layout lo;
	Dwarf *dbg;
	int ok = 0;

	CHECK(!self_path(self, sizeof(self)));
	if (!have_own_dwarf(self))
		return;
	CHECK(!find_debug_info(self, &f));
	dbg = dwarf_begin_elf(f.elf, DWARF_C_READ, NULL);
	if (dbg && !find_types(dbg, &ty)) {
		doctored = ty;
		doctored.have[T_STR] = false;
		ok = fill_layout(&doctored, &lo, "x", msg, sizeof(msg)) == -EINVAL &&
		     strstr(msg, "GCstr") != NULL;
		/* GCstr in lua_State's place has no glref. */
		doctored = ty;
		doctored.die[T_L] = ty.die[T_STR];
		ok = ok && fill_layout(&doctored, &lo, "x", msg, sizeof(msg)) == -EINVAL &&
		     strstr(msg, "lua_State has no member glref") != NULL;
		doctored = ty;
		ok = ok && fill_layout(&doctored, &lo, "x", msg, sizeof(msg)) == 0;
	}
	if (dbg)
		dwarf_end(dbg);
	lp_debug_file_close(&f);
	CHECK(ok);
}

TEST(lj_dwarf_no_debug_info)
{
	char path[PATH_MAX], msg[512];
	struct lj_layout lo;
	FILE *f;

	snprintf(path, sizeof(path), "%s/not-elf", unit_tmpdir());
	f = fopen(path, "w");
	CHECK(f);
	fputs("\x7f" "ELF but not really\n", f);
	fclose(f);
	CHECK(lj_layout_from_dwarf(path, &lo, NULL, msg, sizeof(msg)) == -ENOENT);
	CHECK(lj_layout_from_dwarf("/nonexistent/luajit", &lo, NULL, msg, sizeof(msg)) ==
	      -ENOENT);
	/* A FIFO is refused, not waited on. */
	snprintf(path, sizeof(path), "%s/fifo", unit_tmpdir());
	CHECK(mkfifo(path, 0600) == 0);
	CHECK(lj_layout_from_dwarf(path, &lo, NULL, msg, sizeof(msg)) == -ENOENT);
}

/* A stripped copy finds its DWARF through .gnu_debuglink, in its own
 * directory, and refuses a debug file whose CRC no longer matches. */
TEST(lj_dwarf_debuglink)
{
	char self[PATH_MAX], obj[PATH_MAX], dbg[PATH_MAX], msg[PATH_MAX + 128];
	char cmd[PATH_MAX * 5 + 128];
	struct lj_layout lo, own;

	CHECK(!self_path(self, sizeof(self)));
	if (!have_own_dwarf(self) || !run("command -v objcopy >/dev/null 2>&1"))
		return;
	CHECK(lj_layout_from_dwarf(self, &own, NULL, msg, sizeof(msg)) == 0);
	snprintf(obj, sizeof(obj), "%s/stripped", unit_tmpdir());
	snprintf(dbg, sizeof(dbg), "%s/stripped.debug", unit_tmpdir());
	snprintf(cmd, sizeof(cmd), "objcopy --only-keep-debug '%s' '%s' && "
		 "objcopy --strip-debug --add-gnu-debuglink='%s' '%s' '%s'",
		 self, dbg, dbg, self, obj);
	CHECK(run(cmd));
	CHECK(lj_layout_from_dwarf(obj, &lo, NULL, msg, sizeof(msg)) == 0);
	CHECK(!strcmp(msg, dbg));
	CHECK(!memcmp(&lo, &own, sizeof(lo)));
	snprintf(cmd, sizeof(cmd), "printf x >> '%s'", dbg);
	CHECK(run(cmd));
	CHECK(lj_layout_from_dwarf(obj, &lo, NULL, msg, sizeof(msg)) == -ENOENT);
}

/* Where section name lies in the file at path: 0 or -1. */
static int section_range(const char *path, const char *name, off_t *off,
			 size_t *size)
{
	struct lp_debug_file f;
	Elf_Scn *scn = NULL;
	size_t shstrndx;
	int ret = -1;

	if (lp_debug_file_open(&f, path))
		return -1;
	if (elf_getshdrstrndx(f.elf, &shstrndx))
		goto out;
	while ((scn = elf_nextscn(f.elf, scn))) {
		GElf_Shdr sh;
		const char *n;

		if (!gelf_getshdr(scn, &sh))
			continue;
		n = elf_strptr(f.elf, shstrndx, sh.sh_name);
		if (n && !strcmp(n, name) && sh.sh_type != SHT_NOBITS && sh.sh_size) {
			*off = (off_t)sh.sh_offset;
			*size = sh.sh_size;
			ret = 0;
			break;
		}
	}
out:
	lp_debug_file_close(&f);
	return ret;
}

/* Cut short, or with bytes of its DWARF overwritten, a file gives an
 * error or some layout, never a crash or a hang. */
TEST(lj_dwarf_damaged_files)
{
	static const char *const sections[] = { ".debug_info", ".debug_abbrev",
						".debug_str" };
	char self[PATH_MAX], path[PATH_MAX], msg[PATH_MAX + 128];
	struct lj_layout lo;
	struct stat st;
	uint32_t seed = 12345;
	int fd;

	CHECK(!self_path(self, sizeof(self)));
	if (!have_own_dwarf(self))
		return;
	CHECK(!stat(self, &st));
	snprintf(path, sizeof(path), "%s/damaged", unit_tmpdir());
	for (int i = 1; i <= 8; i++) {
		CHECK(copy_file(self, path, (long)(st.st_size * i / 9)));
		lj_layout_from_dwarf(path, &lo, NULL, msg, sizeof(msg));
	}
	for (int i = 0; i < 30; i++) {
		off_t off;
		size_t size;

		CHECK(copy_file(self, path, -1));
		CHECK(!section_range(path, sections[i % 3], &off, &size));
		fd = open(path, O_WRONLY | O_CLOEXEC);
		CHECK(fd >= 0);
		for (int j = 0; j < 32; j++) {
			unsigned char junk;

			seed = seed * 1103515245u + 12345u;
			junk = (unsigned char)(seed >> 24);
			if (pwrite(fd, &junk, 1, off + (off_t)(seed % size)) != 1)
				break;
		}
		close(fd);
		lj_layout_from_dwarf(path, &lo, NULL, msg, sizeof(msg));
	}
}

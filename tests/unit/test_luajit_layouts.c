/*
 * test_luajit_layouts.c - unit tests of the known LuaJIT builds
 * (record/luajit_layouts.c): fast-function names by id in both variants,
 * the lookup by flags, and invariants that any correct row must satisfy,
 * so that a mistyped offset in a new row shows up here.  The rows are what
 * the derivation from code is held to (test_luajit_code.c and
 * tests/e2e/luajit_builds.sh).
 */
#include <errno.h>
#include <stdint.h>
#include <string.h>

#include "record/luajit_layouts.h"
#include "tests/unit/unit.h"

static int streq(const char *a, const char *b)
{
	return a && b && !strcmp(a, b);
}

/* ---- fast-function names ---------------------------------------------- */

TEST(lj_ffname_upstream)
{
	const struct lj_build_desc *b = lj_known_build(LJ_LAYOUT_GC64);

	CHECK(b);
	CHECK(streq(lj_ffname(b, LJ_FF_LUA), "Lua"));
	CHECK(streq(lj_ffname(b, LJ_FF_C), "C"));
	CHECK(streq(lj_ffname(b, 2), "assert"));
	CHECK(streq(lj_ffname(b, 20), "pcall"));
	CHECK(streq(lj_ffname(b, 35), "coroutine.resume"));
	CHECK(streq(lj_ffname(b, 39), "math.floor"));
	CHECK(streq(lj_ffname(b, 89), "string.format"));
	CHECK(streq(lj_ffname(b, 93), "table.sort"));
	CHECK(b->nffnames == 223);
	CHECK(streq(lj_ffname(b, 222), "buffer.decode"));
	CHECK(!lj_ffname(b, 223));
	CHECK(!lj_ffname(b, UINT32_MAX));
}

/* OpenResty's extra builtins shift every id after coroutine.wrap. */
TEST(lj_ffname_openresty)
{
	const struct lj_build_desc *b =
		lj_known_build(LJ_LAYOUT_GC64 | LJ_LAYOUT_OPENRESTY);

	CHECK(b);
	CHECK(streq(lj_ffname(b, LJ_FF_LUA), "Lua"));
	CHECK(streq(lj_ffname(b, 20), "pcall"));
	CHECK(streq(lj_ffname(b, 35), "coroutine.resume"));
	CHECK(streq(lj_ffname(b, 37), "coroutine.wrap"));
	CHECK(streq(lj_ffname(b, 38), "thread.exdata"));
	CHECK(streq(lj_ffname(b, 39), "thread.exdata2"));
	CHECK(streq(lj_ffname(b, 41), "math.floor"));
	CHECK(streq(lj_ffname(b, 91), "string.format"));
	CHECK(streq(lj_ffname(b, 95), "table.clone"));
	CHECK(streq(lj_ffname(b, 99), "table.sort"));
	CHECK(streq(lj_ffname(b, 155), "jit.prngstate"));
	CHECK(b->nffnames == 230);
	CHECK(streq(lj_ffname(b, 229), "buffer.decode"));
	CHECK(!lj_ffname(b, 230));
	CHECK(!lj_ffname(b, UINT32_MAX));
}

TEST(lj_ffname_no_build)
{
	CHECK(!lj_ffname(NULL, 0));
	CHECK(!lj_ffname(NULL, 89));
}

/* GC64 does not renumber: both variants of a source share their names. */
TEST(lj_ffname_same_without_gc64)
{
	const struct lj_build_desc *u = lj_known_build(0);
	const struct lj_build_desc *o = lj_known_build(LJ_LAYOUT_OPENRESTY);

	CHECK(u && o);
	CHECK(u->ffnames == lj_known_build(LJ_LAYOUT_GC64)->ffnames);
	CHECK(o->ffnames ==
	      lj_known_build(LJ_LAYOUT_GC64 | LJ_LAYOUT_OPENRESTY)->ffnames);
	CHECK(streq(lj_ffname(u, 89), "string.format"));
	CHECK(streq(lj_ffname(o, 91), "string.format"));
}

/* Every name is set, and each appears once. */
TEST(lj_ffname_complete)
{
	for (size_t i = 0; i < lj_nbuilds; i++) {
		const struct lj_build_desc *b = &lj_builds[i];

		for (uint32_t id = 0; id < b->nffnames; id++) {
			CHECK(b->ffnames[id] && b->ffnames[id][0]);
			for (uint32_t j = 0; j < id; j++)
				CHECK(strcmp(b->ffnames[j], b->ffnames[id]));
		}
	}
}

/* ---- lookup by flags -------------------------------------------------- */

TEST(lj_known_build_all_flags)
{
	static const struct {
		uint32_t flags;
		const char *name;
	} want[] = {
		{ LJ_LAYOUT_GC64, "upstream-gc64" },
		{ 0, "upstream-nogc64" },
		{ LJ_LAYOUT_GC64 | LJ_LAYOUT_OPENRESTY, "openresty-gc64" },
		{ LJ_LAYOUT_OPENRESTY, "openresty-nogc64" },
	};

	CHECK(lj_nbuilds == 5);
	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
		const struct lj_build_desc *b = lj_known_build(want[i].flags);

		CHECK(b);
		CHECK(streq(b->name, want[i].name));
		CHECK(b->flags == want[i].flags);
		CHECK(b->layout.flags == want[i].flags);
	}
	CHECK(!lj_known_build(0x4));
	CHECK(!lj_known_build(LJ_LAYOUT_GC64 | 0x80000000u));
}

/* ---- invariants of every row ------------------------------------------ */

TEST(lj_layout_invariants)
{
	for (size_t i = 0; i < lj_nbuilds; i++) {
		const struct lj_build_desc *b = &lj_builds[i];
		const struct lj_layout *l = &b->layout;
		int gc64 = !!(b->flags & LJ_LAYOUT_GC64);
		int r = l->ref_size;

		CHECK(l->flags == b->flags);
		CHECK(r == (gc64 ? 8 : 4));
		/* The VM entry's C frame is 80 bytes either way. */
		CHECK(l->cf_size == 80);
		CHECK(l->cf_prev == 32);
		CHECK(l->cf_l < l->cf_pc && l->cf_pc < l->cf_prev);
		CHECK(gc64 ? l->cf_pc == l->cf_l + 8 : l->cf_pc == l->cf_l + 4);
		/* GG_State starts with the main lua_State, then G. */
		CHECK(l->gg_g >= (gc64 ? 96 : 64));
		CHECK(l->gg_g % 8 == 0);
		CHECK(l->g2disp > (int32_t)l->g_jit_base);
		/* global_State: vmstate (int32) then mainthref (older 2.1
		 * sources, as tarantool's, keep tmpbuf and strempty between
		 * them); cur_L and jit_base are adjacent references. */
		CHECK(l->g_mainthref == l->g_vmstate + r ||
		      (streq(b->name, "tarantool-2.6-nogc64") &&
		       l->g_mainthref == l->g_vmstate + 40));
		CHECK(l->g_jit_base == l->g_cur_L + r);
		/* lua_State: glref follows the 8- or 12-byte GC header (with
		 * dummy_ffid and status); base and top are pointers. */
		CHECK(l->l_glref == 2 * r);
		CHECK(l->l_top == l->l_base + 8);
		CHECK(l->l_maxstack == l->l_top + 8);
		CHECK(l->l_stack == l->l_maxstack + r);
		CHECK(l->l_cframe + 8u <= l->gg_g);
		/* GCfunc: ffid sits in the header; C function then upvalues. */
		CHECK(l->fn_ffid == r + 2);
		CHECK(l->fn_upvalue == l->fn_f + 8);
		CHECK(l->fn_pc < l->fn_f);
		/* GCproto: every field lies before the bytecode. */
		CHECK(l->pt_varinfo + r == l->pt_size);
		CHECK(l->pt_numparams == l->fn_ffid);
		CHECK(l->pt_framesize == l->pt_numparams + 1);
		CHECK(l->pt_flags == l->pt_sizeuv + 1);
		CHECK(l->pt_sizebc < l->pt_k && l->pt_k < l->pt_sizekgc);
		CHECK(l->pt_chunkname < l->pt_firstline);
		CHECK(l->pt_lineinfo + r == l->pt_uvinfo);
		CHECK(l->pt_uvinfo + r == l->pt_varinfo);
		CHECK(l->pt_size == (gc64 ? 104 : 64));
		/* GCstr: len is the last header field. */
		CHECK(l->str_size == l->str_len + 4);
		/* The coroutine builtins are what the walker follows. */
		CHECK(streq(lj_ffname(b, l->ffid_coroutine_resume),
			    "coroutine.resume"));
		CHECK(streq(lj_ffname(b, l->ffid_coroutine_wrap_aux),
			    "coroutine.wrap_aux"));
		/* GCtrace: the IR, its constants' bound, the snapshots and
		 * their map, then where the trace starts; a SnapShot is
		 * { u32 mapofs; u16 ref, mcofs; u8 nslots, topslot, nent }.
		 * tarantool's older LuaJIT has no SnapShot.mcofs: no
		 * snapshots are read there (all 0). */
		if (streq(b->name, "tarantool-2.6-nogc64")) {
			CHECK(!l->sn_size && !l->tr_snap && !l->sn_mcofs);
			continue;
		}
		CHECK(l->tr_nsnap == r + 2 && l->tr_nk == l->tr_ir + 8);
		CHECK(l->tr_nsnapmap == l->tr_nk + 4 && l->tr_snap == l->tr_nsnapmap + 4);
		CHECK(l->tr_snapmap == l->tr_snap + 8 && l->tr_startpt == l->tr_snapmap + 8);
		CHECK(l->sn_size == 12 && l->sn_mapofs == 0 && l->sn_mcofs == 6 &&
		      l->sn_nent == 10);
	}
}

/*
 * Upstream and OpenResty differ only in where G and the dispatch table
 * are: OpenResty's lua_State is 16 bytes larger, and its global_State and
 * jit_State 40 together.
 */
TEST(lj_layout_openresty_vs_upstream)
{
	static const uint32_t widths[] = { 0, LJ_LAYOUT_GC64 };

	for (size_t i = 0; i < 2; i++) {
		uint32_t gc64 = widths[i];
		struct lj_layout u, o;

		/* memcpy, unlike assignment, keeps the (zero) tail padding. */
		memcpy(&u, &lj_known_build(gc64)->layout, sizeof(u));
		memcpy(&o, &lj_known_build(gc64 | LJ_LAYOUT_OPENRESTY)->layout,
		       sizeof(o));

		CHECK(o.gg_g == u.gg_g + 16);
		CHECK(o.g2disp == u.g2disp + 40);
		/* jit_State follows global_State: it moves with gg_g too. */
		CHECK(o.g2j == u.g2j + 8);
		o.flags = u.flags;
		o.gg_g = u.gg_g;
		o.g2disp = u.g2disp;
		o.g2j = u.g2j;
		CHECK(!memcmp(&o, &u, sizeof(u)));
	}
}

/* ---- tarantool's fork -------------------------------------------------- */

/* Its builtins are upstream's without jit.security and the buffer
 * library. */
TEST(lj_ffname_tarantool)
{
	const struct lj_build_desc *t = &lj_builds[4];

	CHECK(streq(t->name, "tarantool-2.6-nogc64"));
	CHECK(streq(lj_ffname(t, 146), "jit.status"));
	CHECK(streq(lj_ffname(t, 147), "jit.attach"));
	CHECK(streq(lj_ffname(t, 202), "ffi.load"));
	CHECK(!lj_ffname(t, 203));
	CHECK(streq(lj_ffname(lj_known_build(0), 147), "jit.security"));
}

/*
 * luajit_struct.c - LuaJIT 2.1's own declarations of the structs whose
 * layout has not changed since 2.1.0-beta3 (2017), laid out for a
 * reference width as a C compiler lays them out: what completes a layout
 * where a build's code does not show a field (luajit_code.c).
 *
 * Which fields moved and which did not was measured on every commit of
 * upstream's v2.1 branch that touched lj_obj.h, lj_jit.h, lj_frame.h or
 * lj_dispatch.h since beta3, and every OpenResty luajit2 tag from
 * 2.1-20190507 on (docs/luajit-builds.md): lua_State's, GCfuncC's,
 * GCfuncL's and GCproto's members, the C frame's slots and most of
 * GCtrace did not; global_State, GG_State, jit_State, GCstr, GCtrace's
 * snapshot counts and SnapShot did, and are the code's to show.  The
 * SnapShot here is the one since 2021, with its mcofs: only with it can
 * compiled code be placed at a snapshot, and luajit_snaps.c checks every
 * trace's snapshots against their machine code before believing them.
 *
 *   type   GCRef/MRef: 8 bytes with GC64, 4 without; PTR: a C pointer, 8
 *   cond   ALL, or GC64 (LuaJIT's `#if LJ_GC64` padding members)
 */
#include <stddef.h>
#include <stdint.h>

#include "record/luajit_arch.h"
#include "record/luajit_code.h"

enum m_type { U8 = 1, U16, U32, REF, PTR, TV, END };
enum m_cond { ALL, GC64 };

struct member {
	uint8_t type, cond;
	int field; /* enum lj_field, or -1: a member luaprof does not read */
};

#define M(type, field) { type, ALL, field }
#define M64(type, field) { type, GC64, field }
#define NONE -1

/* lj_obj.h: GCHeader is GCRef nextgc; uint8_t marked, gct. */
#define GCHEADER M(REF, NONE), M(U8, NONE), M(U8, NONE)

static const struct member lua_state[] = {
	GCHEADER, M(U8, NONE) /* dummy_ffid */, M(U8, NONE) /* status */,
	M(REF, LJF_l_glref), M(REF, NONE) /* gclist */, M(PTR, LJF_l_base),
	M(PTR, LJF_l_top), M(REF, LJF_l_maxstack), M(REF, LJF_l_stack),
	M(REF, NONE) /* openupval */, M(REF, NONE) /* env */, M(PTR, LJF_l_cframe),
	{ END, ALL, NONE },
};

/* GCfuncHeader, then GCfuncC's f and upvalue[] (TValues, 8-aligned). */
static const struct member func_c[] = {
	GCHEADER, M(U8, LJF_fn_ffid), M(U8, NONE) /* nupvalues */,
	M(REF, NONE) /* env */, M(REF, NONE) /* gclist */, M(REF, LJF_fn_pc),
	M(PTR, LJF_fn_f), M(TV, LJF_fn_upvalue),
	{ END, ALL, NONE },
};

static const struct member proto[] = {
	GCHEADER, M(U8, LJF_pt_numparams), M(U8, LJF_pt_framesize),
	M(U32, LJF_pt_sizebc), M64(U32, NONE) /* unused_gc64 */,
	M(REF, NONE) /* gclist */, M(REF, LJF_pt_k), M(REF, NONE) /* uv */,
	M(U32, LJF_pt_sizekgc), M(U32, LJF_pt_sizekn), M(U32, LJF_pt_sizept),
	M(U8, LJF_pt_sizeuv), M(U8, LJF_pt_flags), M(U16, NONE) /* trace */,
	M(REF, LJF_pt_chunkname), M(U32, LJF_pt_firstline), M(U32, LJF_pt_numline),
	M(REF, LJF_pt_lineinfo), M(REF, LJF_pt_uvinfo), M(REF, LJF_pt_varinfo),
	{ END, ALL, LJF_pt_size },
};

/* GCtrace since 2019 (nsnap after the header, nsnapmap a u32); the
 * members from gclist to root have the same places in beta3's. */
static const struct member trace[] = {
	GCHEADER, M(U16, LJF_tr_nsnap), M(U32, LJF_tr_nins),
	M64(U32, NONE) /* unused_gc64 */, M(REF, NONE) /* gclist */,
	M(PTR, LJF_tr_ir), M(U32, LJF_tr_nk), M(U32, LJF_tr_nsnapmap),
	M(PTR, LJF_tr_snap), M(PTR, LJF_tr_snapmap), M(REF, LJF_tr_startpt),
	M(REF, LJF_tr_startpc), M(U32, NONE) /* startins */, M(U32, LJF_tr_szmcode),
	M(PTR, LJF_tr_mcode), M(U32, NONE) /* mcloop */, M(U16, NONE) /* nchild */,
	M(U16, NONE) /* spadjust */, M(U16, LJF_tr_traceno), M(U16, NONE) /* link */,
	M(U16, LJF_tr_root),
	{ END, ALL, NONE },
};

/* SnapShot since 2021. */
static const struct member snapshot[] = {
	M(U32, LJF_sn_mapofs), M(U16, LJF_sn_ref), M(U16, LJF_sn_mcofs),
	M(U8, NONE) /* nslots */, M(U8, NONE) /* topslot */, M(U8, LJF_sn_nent),
	M(U8, NONE) /* count */,
	{ END, ALL, LJF_sn_size },
};

static unsigned type_size(uint8_t t, unsigned ref)
{
	switch (t) {
	case U8: return 1;
	case U16: return 2;
	case U32: return 4;
	case REF: return ref;
	default: return 8; /* PTR, TV */
	}
}

/* Lays the struct out for reference width ref, calling back each field:
 * offsets as a C compiler aligns members (each to its size, the struct to
 * its largest). */
static void lay_out(const struct member *m, unsigned ref, struct lj_code_result *r,
		    const char *name, int snapshots)
{
	unsigned off = 0, align = 1;

	for (; m->type != END; m++) {
		unsigned sz = type_size(m->type, ref);

		if (m->cond == GC64 && ref != 8)
			continue;
		off = (off + sz - 1) & ~(sz - 1);
		if (sz > align)
			align = sz;
		if (m->field >= 0 && r->from[m->field] == LJ_FROM_NONE &&
		    (snapshots || lj_fields[m->field].group != LJG_SNAP)) {
			lj_field_set(&r->layout, (enum lj_field)m->field, off);
			r->from[m->field] = LJ_FROM_STRUCT;
			r->via[m->field] = name;
		}
		off += sz;
	}
	if (m->field >= 0 && r->from[m->field] == LJ_FROM_NONE) {
		lj_field_set(&r->layout, (enum lj_field)m->field, (off + align - 1) & ~(align - 1));
		r->from[m->field] = LJ_FROM_STRUCT;
		r->via[m->field] = name;
	}
}

/*
 * The C frame of a VM entry (lj_frame.h's CFRAME_OFS_*, luajit_arch.h):
 * on x86-64 with GC64 the saved L, PC and previous cframe are 8-byte
 * slots at +16, +24, +32, without 4-byte slots at +24, +28 and the link
 * at +32; on arm64 (GC64 only) the link, PC and L at +0, +8, +16.
 */
static void cframe(unsigned ref, const struct lj_arch *arch, struct lj_code_result *r)
{
	static const int f[3] = { LJF_cf_l, LJF_cf_pc, LJF_cf_prev };
	const struct lj_arch_cframe *cf = &arch->cframe[ref == 8];
	const unsigned v[3] = { cf->l, cf->pc, cf->prev };

	if (!cf->size)
		return; /* no such build on arch */
	for (int i = 0; i < 3; i++) {
		if (r->from[f[i]] != LJ_FROM_NONE)
			continue;
		lj_field_set(&r->layout, (enum lj_field)f[i], v[i]);
		r->from[f[i]] = LJ_FROM_STRUCT;
		r->via[f[i]] = "CFRAME_OFS_*";
	}
}

void lj_struct_complete(struct lj_code_result *r, int snapshots, const struct lj_arch *arch)
{
	unsigned ref = (unsigned)lj_field_get(&r->layout, LJF_ref_size);

	if (ref != 4 && ref != 8)
		return;
	lay_out(lua_state, ref, r, "lua_State", 0);
	lay_out(func_c, ref, r, "GCfuncC", 0);
	lay_out(proto, ref, r, "GCproto", 0);
	cframe(ref, arch, r);
	if (r->from[LJF_g2j] != LJ_FROM_NONE) {
		lay_out(trace, ref, r, "GCtrace", snapshots);
		if (r->from[LJF_j_sizetrace] == LJ_FROM_NONE &&
		    r->from[LJF_j_trace] != LJ_FROM_NONE) {
			/* jit_State: GCRef *trace; TraceNo freetrace; MSize sizetrace */
			lj_field_set(&r->layout, LJF_j_sizetrace,
				     lj_field_get(&r->layout, LJF_j_trace) + 12);
			r->from[LJF_j_sizetrace] = LJ_FROM_STRUCT;
			r->via[LJF_j_sizetrace] = "jit_State";
		}
	}
	if (snapshots)
		lay_out(snapshot, ref, r, "SnapShot", 1);
}

/*
 * test_luajit_snaps.c - the snapshot decoder (record/luajit_snaps.c) on
 * traces built by hand in a fake target memory, in both encodings LuaJIT
 * has: two-slot frames with links as KNUM constants (GC64) and one-slot
 * frames with the links after the PC (32-bit references).  Each trace
 * has snapshots of every kind of frame a trace inlines -- a Lua call, a
 * continuation (metamethod), a vararg function's own frame, a function
 * pcall called, a closure known only by its proto -- and the ones the
 * decoder must not believe or must merge: a PC outside its function,
 * one repeating the frames before it, two at one machine-code offset.
 * A trace that is gone (another object, another number) or whose
 * snapshots go backwards in the code is refused.
 *
 * The decoder is included rather than linked, with target_read() and
 * proto_table_at() replaced by the fake memory's (fake_target.c) (the latter under its
 * own name: test_luajit_protos.c includes the real one).
 */
#define proto_table_at snaps_test_proto_at
#include "record/luajit_snaps.c"

#include "tests/unit/fake_target.h"
#include "tests/unit/unit.h"

/* ---- the fake target ------------------------------------------------ */

#define region fake_region
#define free_regions fake_regions_free

/* Protos: f, g, h, each with sizebc instructions; ids 1, 2, 3. */
#define P_F 0x200000u
#define P_G 0x201000u
#define P_H 0x202000u
static const struct { uint64_t addr; uint32_t sizebc; } protos[] = {
	{ P_F, 20 }, { P_G, 10 }, { P_H, 6 },
};
static int protos_emitted;

uint64_t proto_table_at(struct proto_table *pt, const struct lj_target *t,
		      uint64_t addr, uint32_t *sizebc, const struct lp_proto **prec)
{
	static const struct lp_proto rec = { .id = 99 };

	(void)pt;
	(void)t;
	*prec = NULL;
	for (size_t i = 0; i < sizeof(protos) / sizeof(protos[0]); i++)
		if (protos[i].addr == addr) {
			*sizebc = protos[i].sizebc;
			*prec = &rec; /* each time: the emitter counts */
			return i + 1;
		}
	return 0;
}

static void count_proto(void *ctx, const struct lp_proto *rec)
{
	(void)ctx;
	protos_emitted += rec->id == 99;
}

/* Functions: f, g, h (Lua), and pcall (fast function 20). */
#define F_F 0x300000u
#define F_G 0x300100u
#define F_H 0x300200u
#define F_PCALL 0x300300u
#define FF_PCALL 20

#define TRACE_ADDR 0x100000u
#define SNAP_ADDR 0x110000u
#define MAP_ADDR 0x120000u
#define IR_ADDR 0x130000u /* where constant nk is */
#define NK (REF_BIAS - 64)
#define TRACENO 7

static uint64_t bc(uint64_t proto, const struct lj_layout *lo, uint32_t pos)
{
	return proto + lo->pt_size + 4ull * pos;
}

static void put(uint8_t *p, uint64_t v, size_t n)
{
	memcpy(p, &v, n);
}

/* A trace under construction in the fake memory. */
struct fake {
	const struct lj_layout *lo;
	int fr2;
	uint8_t *hdr, *snap, *ir;
	uint32_t *map;
	uint32_t nsnap, nmap, nextk;
};

/* An IR constant: KGC (a GC object of type irt) or KNUM (64 bits). */
static uint32_t konst(struct fake *f, uint8_t op, uint8_t irt, uint64_t v)
{
	uint32_t ref = f->nextk;
	uint8_t *ins = f->ir + (size_t)(ref - NK) * IRINS_SIZE;

	ins[IRINS_O] = op;
	ins[IRINS_T] = irt;
	if (op == IR_KGC && !f->fr2)
		put(ins, v, 4);
	else
		put(ins + IRINS_SIZE, v, 8);
	f->nextk += 2;
	return ref;
}

static uint32_t kfunc(struct fake *f, uint64_t fn)
{
	return konst(f, IR_KGC, IRT_FUNC, fn);
}

static uint32_t knum(struct fake *f, uint64_t v)
{
	return konst(f, IR_KNUM, 14, v);
}

static void func(const struct lj_layout *lo, uint64_t addr, uint8_t ffid, uint64_t proto)
{
	uint8_t *p = region(addr, 64);

	p[lo->fn_ffid - 1] = GCT_FUNC;
	p[lo->fn_ffid] = ffid;
	if (proto)
		put(p + lo->fn_pc, proto + lo->pt_size, lo->ref_size);
}

static void setup(struct fake *f, const struct lj_layout *lo)
{
	free_regions();
	memset(f, 0, sizeof(*f));
	f->lo = lo;
	f->fr2 = !!(lo->flags & LJ_LAYOUT_GC64);
	f->hdr = region(TRACE_ADDR, LJ_GCTRACE_HDR);
	f->snap = region(SNAP_ADDR, 64 * lo->sn_size);
	f->map = (uint32_t *)region(MAP_ADDR, 4096);
	f->ir = region(IR_ADDR, (REF_BIAS - NK) * IRINS_SIZE);
	f->nextk = NK;
	f->hdr[lo->fn_ffid - 1] = GCT_TRACE;
	put(f->hdr + lo->tr_traceno, TRACENO, 2);
	put(f->hdr + lo->tr_snap, SNAP_ADDR, 8);
	put(f->hdr + lo->tr_snapmap, MAP_ADDR, 8);
	put(f->hdr + lo->tr_ir, IR_ADDR - (uint64_t)NK * IRINS_SIZE, 8);
	put(f->hdr + lo->tr_nk, NK, 4);
	put(f->hdr + lo->tr_startpc, bc(P_F, lo, 15), lo->ref_size);
	put(f->hdr + lo->tr_mcode, 0x500000, 8);
	func(lo, F_F, 0, P_F);
	func(lo, F_G, 0, P_G);
	func(lo, F_H, 0, P_H);
	func(lo, F_PCALL, FF_PCALL, 0);
	for (size_t i = 0; i < sizeof(protos) / sizeof(protos[0]); i++)
		put(region(protos[i].addr, lo->pt_size) + lo->pt_sizebc, protos[i].sizebc, 4);
}

/* Adds a snapshot at mcofs with entries e[n] and trailer t[nt]. */
static void snap(struct fake *f, uint16_t mcofs, const uint32_t *e, uint32_t n,
		 const uint32_t *t, uint32_t nt)
{
	uint8_t *s = f->snap + (size_t)f->nsnap * f->lo->sn_size;

	put(s + f->lo->sn_mapofs, f->nmap, 4);
	put(s + f->lo->sn_mcofs, mcofs, 2);
	s[f->lo->sn_nent] = (uint8_t)n;
	if (n)
		memcpy(f->map + f->nmap, e, n * 4);
	memcpy(f->map + f->nmap + n, t, nt * 4);
	f->nmap += n + nt;
	f->nsnap++;
	put(f->hdr + f->lo->tr_nsnap, f->nsnap, 2);
	put(f->hdr + f->lo->tr_nsnapmap, f->nmap, 4);
}

/* GC64's trailer: PC << 8 | base slot, as two entries. */
static void pcword(uint32_t *t, uint64_t pc, uint32_t baseslot)
{
	uint64_t w = pc << 8 | baseslot;

	t[0] = (uint32_t)w;
	t[1] = (uint32_t)(w >> 32);
}

#define E(slot, flags, ref) ((uint32_t)(slot) << 24 | (flags) | (ref))

static int decode(struct fake *f, const struct lp_trace_snaps **out)
{
	struct snap_reader *sr = snap_reader_new();
	struct lj_target t = { .pid = 1 };
	uint8_t hdr[LJ_GCTRACE_HDR];
	static struct snap_reader *keep;
	int err;

	t.layout = *f->lo;
	memcpy(hdr, f->hdr, sizeof(hdr));
	protos_emitted = 0;
	err = snap_reader_read(sr, NULL, &t, TRACE_ADDR, TRACENO, hdr, 42, count_proto,
			       NULL, out);
	/* *out lives in the reader: free the previous test's. */
	snap_reader_free(keep);
	keep = sr;
	return err;
}

static int frame_is(const struct lp_lframe *fr, uint32_t kind, uint64_t value, uint32_t pc,
		    uint32_t link)
{
	return fr->kind == kind && fr->value == value && fr->pc == pc && fr->link == link;
}

/* ---- GC64: two-slot frames, links as constants ------------------------ */

TEST(snaps_gc64_every_frame_kind)
{
	const struct lj_layout *lo = &lj_known_build(LJ_LAYOUT_GC64)->layout;
	const struct lp_trace_snaps *ts;
	const struct lp_tsnap *s;
	struct fake f;
	uint32_t t[2], kf, kg, kh, kp, kret, kcont, kcpc, kvarg, kpcall, kpg;

	setup(&f, lo);
	kf = kfunc(&f, F_F);
	kg = kfunc(&f, F_G);
	kh = kfunc(&f, F_H);
	kp = kfunc(&f, F_PCALL);
	kret = knum(&f, bc(P_F, lo, 10));                    /* after f's call at 9 */
	kcont = knum(&f, 0x4242);                            /* a continuation's address */
	kcpc = knum(&f, bc(P_F, lo, 12));                    /* its PC, in f */
	kvarg = knum(&f, (4 << 3) | LJ_FRAME_VARG);
	kpcall = knum(&f, (2 << 3) | LJ_FRAME_PCALL);
	kpg = konst(&f, IR_KGC, IRT_PROTO, P_G);
	(void)kpg;

	/* 0: nothing inlined, f's base frame as the walker finds it. */
	pcword(t, bc(P_F, lo, 7), 0);
	snap(&f, 0, NULL, 0, t, 2);
	/* 1: g, called from f, inlined; f specialized in slot 0. */
	{
		uint32_t e[] = { E(0, 0, kf), E(2, 0, kg), E(3, SNAP_FRAME, kret) };

		pcword(t, bc(P_G, lo, 4), 2);
		snap(&f, 100, e, 3, t, 2);
		/* 2: the same frames again: merged into 1. */
		snap(&f, 120, e, 3, t, 2);
	}
	/* 3: h as a metamethod of f's instruction 11: a continuation. */
	{
		uint32_t e[] = { E(0, 0, kf), E(2, 0, kcont), E(3, SNAP_CONT, kcpc),
				 E(4, 0, kh), E(5, SNAP_FRAME, knum(&f, (4 << 3) | LJ_FRAME_CONT)) };

		pcword(t, bc(P_H, lo, 2), 4);
		snap(&f, 150, e, 5, t, 2);
	}
	/* 4: g a vararg function: its own frame above the one f called. */
	{
		uint32_t e[] = { E(0, 0, kf), E(2, 0, kg), E(3, SNAP_FRAME, kret),
				 E(6, 0, kg), E(7, SNAP_FRAME, kvarg) };

		pcword(t, bc(P_G, lo, 3), 6);
		snap(&f, 200, e, 5, t, 2);
	}
	/* 5: g called by pcall, which f called. */
	{
		uint32_t e[] = { E(0, 0, kf), E(2, 0, kp), E(3, SNAP_FRAME, kret),
				 E(4, 0, kg), E(5, SNAP_FRAME, kpcall) };

		pcword(t, bc(P_G, lo, 1), 4);
		snap(&f, 250, e, 5, t, 2);
	}
	/* 6: g a closure the trace did not specialize to: the function
	 * slot is an instruction; its PC lies in the proto the IR names. */
	{
		uint32_t e[] = { E(0, 0, kf), E(2, 0, REF_BIAS + 5), E(3, SNAP_FRAME, kret) };

		pcword(t, bc(P_G, lo, 8), 2);
		snap(&f, 300, e, 3, t, 2);
	}
	/* 7: g's slot names f, but the PC is g's: not believed. */
	{
		uint32_t e[] = { E(0, 0, kf), E(2, 0, kf), E(3, SNAP_FRAME, kret) };

		pcword(t, bc(P_G, lo, 4), 2);
		snap(&f, 350, e, 3, t, 2);
	}
	/* 8 and 9 at one offset: 9 covers the code. */
	pcword(t, bc(P_F, lo, 3), 0);
	snap(&f, 400, NULL, 0, t, 2);
	{
		uint32_t e[] = { E(0, 0, kf) };

		pcword(t, bc(P_F, lo, 16), 0);
		snap(&f, 400, e, 1, t, 2);
	}

	CHECK(decode(&f, &ts) == 0);
	CHECK(ts->trace == 42 && ts->bcofs == lo->pt_size && ts->bcbase == bc(P_F, lo, 15));
	CHECK(ts->nsnap == 8);
	s = ts->snaps;
	/* The base: position 8 (after instruction 7), 7 before the start. */
	CHECK(s[0].mcofs == 0 && s[0].nframe == 1);
	CHECK(frame_is(&s[0].frames[0], LP_LFRAME_BASE, 13 /* zigzag(-7) */, 0, 0));
	CHECK(s[1].mcofs == 100 && s[1].nframe == 2);
	CHECK(frame_is(&s[1].frames[0], LP_LFRAME_LUA, 1, 10, 0));
	CHECK(frame_is(&s[1].frames[1], LP_LFRAME_LUA, 2, 5, LJ_FRAME_LUA));
	CHECK(s[2].mcofs == 150 && s[2].nframe == 2);
	CHECK(frame_is(&s[2].frames[0], LP_LFRAME_LUA, 1, 12, 0));
	CHECK(frame_is(&s[2].frames[1], LP_LFRAME_LUA, 3, 3, LJ_FRAME_CONT));
	CHECK(s[3].mcofs == 200 && s[3].nframe == 2);
	CHECK(frame_is(&s[3].frames[0], LP_LFRAME_LUA, 1, 10, 0));
	CHECK(frame_is(&s[3].frames[1], LP_LFRAME_LUA, 2, 4, LJ_FRAME_VARG));
	CHECK(s[4].mcofs == 250 && s[4].nframe == 3);
	CHECK(frame_is(&s[4].frames[1], LP_LFRAME_FF, FF_PCALL, 0, LJ_FRAME_LUA));
	CHECK(frame_is(&s[4].frames[2], LP_LFRAME_LUA, 2, 2, LJ_FRAME_PCALL));
	CHECK(s[5].mcofs == 300 && s[5].nframe == 2);
	CHECK(frame_is(&s[5].frames[1], LP_LFRAME_LUA, 2, 9, LJ_FRAME_LUA));
	CHECK(s[6].mcofs == 350 && s[6].nframe == 0);
	CHECK(s[7].mcofs == 400 && s[7].nframe == 1);
	CHECK(frame_is(&s[7].frames[0], LP_LFRAME_LUA, 1, 17, 0));
	CHECK(protos_emitted >= 3);
	/* What the writer makes of it reads back the same. */
	CHECK(lp_trace_snaps_size(ts) > 0);
	free_regions();
}

/* ---- 32-bit references: one-slot frames, links after the PC ----------- */

TEST(snaps_nogc64_links_after_the_pc)
{
	const struct lj_layout *lo = &lj_known_build(0)->layout;
	const struct lp_trace_snaps *ts;
	const struct lp_tsnap *s;
	struct fake f;
	uint32_t kf, kg, kh, kc;

	setup(&f, lo);
	kf = kfunc(&f, F_F);
	kg = kfunc(&f, F_G);
	kh = kfunc(&f, F_H);
	kc = konst(&f, 25 /* KPTR */, 0, 0x4242);
	/* 0: the base. */
	{
		uint32_t t[] = { (uint32_t)bc(P_F, lo, 7) };

		snap(&f, 0, NULL, 0, t, 1);
	}
	/* 1: g called from f: the PC, then g's return PC. */
	{
		uint32_t e[] = { E(0, SNAP_FRAME, kf), E(2, SNAP_FRAME, kg) };
		uint32_t t[] = { (uint32_t)bc(P_G, lo, 4), (uint32_t)bc(P_F, lo, 10) };

		snap(&f, 64, e, 2, t, 2);
	}
	/* 2: h as a metamethod: its link, then the continuation's PC. */
	{
		uint32_t e[] = { E(0, SNAP_FRAME, kf), E(2, SNAP_CONT, kc), E(3, SNAP_FRAME, kh) };
		uint32_t t[] = { (uint32_t)bc(P_H, lo, 1), (3 << 3) | LJ_FRAME_CONT,
				 (uint32_t)bc(P_F, lo, 12) };

		snap(&f, 128, e, 3, t, 3);
	}
	/* 3: g vararg: the VARG frame's link, then the call's return PC. */
	{
		uint32_t e[] = { E(0, SNAP_FRAME, kf), E(2, SNAP_FRAME, kg), E(5, SNAP_FRAME, kg) };
		uint32_t t[] = { (uint32_t)bc(P_G, lo, 6), (3 << 3) | LJ_FRAME_VARG,
				 (uint32_t)bc(P_F, lo, 10) };

		snap(&f, 192, e, 3, t, 3);
	}
	/* 4: a link short: not decoded. */
	{
		uint32_t e[] = { E(0, SNAP_FRAME, kf), E(2, SNAP_FRAME, kg), E(5, SNAP_FRAME, kg) };
		uint32_t t[] = { (uint32_t)bc(P_G, lo, 6), (3 << 3) | LJ_FRAME_VARG };

		snap(&f, 256, e, 3, t, 2);
	}
	CHECK(decode(&f, &ts) == 0);
	CHECK(ts->nsnap == 5);
	s = ts->snaps;
	CHECK(s[0].nframe == 1 && frame_is(&s[0].frames[0], LP_LFRAME_BASE, 13, 0, 0));
	CHECK(s[1].nframe == 2 && frame_is(&s[1].frames[0], LP_LFRAME_LUA, 1, 10, 0) &&
	      frame_is(&s[1].frames[1], LP_LFRAME_LUA, 2, 5, LJ_FRAME_LUA));
	CHECK(s[2].nframe == 2 && frame_is(&s[2].frames[0], LP_LFRAME_LUA, 1, 12, 0) &&
	      frame_is(&s[2].frames[1], LP_LFRAME_LUA, 3, 2, LJ_FRAME_CONT));
	CHECK(s[3].nframe == 2 && frame_is(&s[3].frames[0], LP_LFRAME_LUA, 1, 10, 0) &&
	      frame_is(&s[3].frames[1], LP_LFRAME_LUA, 2, 7, LJ_FRAME_VARG));
	CHECK(s[4].mcofs == 256 && s[4].nframe == 0);
	free_regions();
}

/* ---- traces not to be read -------------------------------------------- */

TEST(snaps_refuses_gone_and_backwards)
{
	const struct lj_layout *lo = &lj_known_build(LJ_LAYOUT_GC64)->layout;
	const struct lp_trace_snaps *ts;
	struct lj_layout none = *lo;
	struct fake f;
	uint32_t t[2];

	setup(&f, lo);
	pcword(t, bc(P_F, lo, 7), 0);
	snap(&f, 50, NULL, 0, t, 2);
	snap(&f, 40, NULL, 0, t, 2);
	/* mcofs going backwards: not the layout the snapshots have. */
	CHECK(decode(&f, &ts) == -EINVAL && !ts);
	/* Another object where the trace was; another number. */
	f.hdr[lo->fn_ffid - 1] = GCT_FUNC;
	CHECK(decode(&f, &ts) == -ESTALE);
	f.hdr[lo->fn_ffid - 1] = GCT_TRACE;
	put(f.hdr + lo->tr_traceno, TRACENO + 1, 2);
	CHECK(decode(&f, &ts) == -ESTALE);
	put(f.hdr + lo->tr_traceno, TRACENO, 2);
	/* A snapshot array that cannot be read. */
	put(f.hdr + lo->tr_snap, 0x900000, 8);
	CHECK(decode(&f, &ts) == -EFAULT);
	/* No snapshot offsets in the layout. */
	none.sn_size = 0;
	f.lo = &none;
	CHECK(decode(&f, &ts) == -ENOTSUP);
	free_regions();
}

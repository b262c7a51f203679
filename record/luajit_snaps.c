/*
 * luajit_snaps.c - where a compiled trace's machine code stands in Lua
 * terms: the trace's snapshots, read once from the live process when the
 * recorder first meets the trace, decoded into a TRACE_SNAPS record.
 *
 * While a trace runs, the functions it inlined have no frames in memory:
 * the walker finds only the trace's base frame (g->jit_base).  LuaJIT
 * keeps what it would need to rebuild them at an exit, in the trace's
 * snapshots (lj_jit.h, lj_snap.c).  Snapshot i covers the machine code
 * from snap[i].mcofs to the next snapshot's (in MCode units: bytes on
 * x86-64, 4-byte words on arm64; lj_asm.c fills mcofs after
 * assembly; lj_trace.c finds an exit's snapshot from its address the same
 * way), and names the bytecode PC the interpreter would resume at and the
 * frames live there:
 *
 *   GCtrace                     SnapShot { mapofs, mcofs, nent, ... }
 *   | nsnap, snap ------------> [ snap 0 ][ snap 1 ] ...
 *   | nsnapmap, snapmap ------> [ entry * nent | trailer ][ ... ] ...
 *   | ir, nk                    entry = slot << 24 | SNAP_FRAME/CONT | ref
 *   | mcode, szmcode            ref < REF_BIAS: an IR constant, ir[ref]
 *
 * An IR instruction is 8 bytes, opcode at 5, type at 4; a constant's
 * 64-bit payload (every number, and GC pointers with GC64) is the next
 * instruction.  A frame's function is the KGC constant in its function
 * slot.  With GC64 (LJ_FR2) a frame takes two slots: the function, then
 * its link, a KNUM constant with the link's 64 bits, flagged SNAP_FRAME;
 * the trailer is one 64-bit word, PC << 8 | innermost base slot.  Without
 * GC64 the function slot is flagged SNAP_FRAME and the trailer is the PC,
 * then each frame's link, innermost first: a return PC, or a delta|type,
 * followed for a continuation by its PC.  Slot 0 is the trace's base
 * frame, which the walker finds in memory; it has an entry only if the
 * trace replaced its function (a tail call).
 *
 * The PCs of the frames follow from the links: the innermost frame runs
 * the snapshot's PC; below a Lua link (a return PC) the caller runs the
 * call; below a continuation (a metamethod, or a builtin a stitched trace
 * calls) the caller runs the continuation's PC; a vararg function's own
 * frame (VARG) sits above the frame it was called in, which the walker
 * skips; a function pcall called (PCALL) sits on pcall's own frame.
 *
 * The frames are written as the walker gives interpreted ones (lp_lframe:
 * proto ids and bytecode positions, builtin ids, link types), base first;
 * the base frame as its bytecode position only (LP_LFRAME_BASE), since its
 * function is the walker's to find.  A snapshot that does not decode in
 * full (a function slot that is not a constant and a PC no constant proto
 * holds, a PC outside its function, links that do not add up) is written
 * as not placed: a report then keeps the walker's frames, never a guess.
 * Consecutive snapshots with the same frames are written once.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "lib/grow.h"
#include "record/arch.h"
#include "record/luajit.h"
#include "record/luajit_arch.h"
#include "record/luajit_place.h"

/* LuaJIT's IR and snapshot encodings (lj_ir.h, lj_jit.h, lj_obj.h): the
 * same in every 2.1 build luaprof knows, GC64 or not. */
#define REF_BIAS 0x8000u
#define IRINS_SIZE 8
#define IRINS_T 4 /* byte offsets in an IRIns: type, opcode */
#define IRINS_O 5
#define IR_KGC 24
#define IR_KNUM 28
#define IRT_PROTO 7
#define IRT_FUNC 8
#define IRT_TYPE 0x1f
#define SNAP_FRAME 0x010000u
#define SNAP_CONT 0x020000u
#define GCT_TRACE 9 /* a GC object's gct byte: ~LJ_TTRACE, ~LJ_TFUNC */
#define GCT_FUNC 8

/* Bounds on what one trace may make the recorder read. */
#define SNAPMAP_MAX (1u << 20)
#define MCODE_MAX (1u << 20)
#define FUNC_CACHE 64

/* A function an IR constant names, read once per trace. */
struct fn_ent {
	uint64_t addr;
	uint32_t kind; /* LP_LFRAME_LUA, _FF or _C; 0: unreadable */
	uint64_t value;
	uint64_t bc; /* Lua: its bytecode's address and size */
	uint32_t sizebc;
	uint64_t func; /* its closure when addr is one, else 0 */
};

/* One frame of a snapshot while it is decoded. */
struct sframe {
	uint32_t fref;   /* the IR ref in its function slot, 0 none */
	uint64_t link;   /* its link (not the base's) */
	uint64_t contpc; /* a continuation link's PC, 0 none */
	uint64_t pc;     /* address of its position after the current
			  * instruction; 0 unknown */
	int skip;        /* the frame a VARG frame stands on */
	int32_t slot;    /* the slot of its first local */
};

struct snap_reader {
	/* The trace being read. */
	uint8_t *snap, *ir, *mc;
	uint32_t *map;
	size_t capsnap, capir, capmap, capmc;
	uint32_t nsnap, nsnapmap, nk, nins, szmcode;
	uint64_t startpc, startpt, mcode;
	struct fn_ent fns[FUNC_CACHE];
	uint32_t nfns;
	int fr2;
	struct sframe fr[LP_TSNAP_MAX_FRAMES]; /* one snapshot's */

	/* The record being built; frames are offsets until the end. */
	struct lp_tsnap *snaps;
	size_t capsnaps;
	struct lp_lframe *frames;
	size_t capframes, nframes;
	struct lp_trace_snaps rec;
	struct snap_stats stats;

	/* Every snapshot as placement takes them (luajit_place.c). */
	struct lj_tsnap *ts;
	size_t capts;
	struct lj_tframe *tf;
	size_t captf, ntf;
	struct lj_placer *placer;
	/* The read under way, for placement's proto_id callback. */
	struct proto_table *pt;
	const struct lj_target *t;
	snap_emit_proto_fn emit;
	void *emit_ctx;
};

struct snap_reader *snap_reader_new(void)
{
	return calloc(1, sizeof(struct snap_reader));
}

void snap_reader_free(struct snap_reader *sr)
{
	if (!sr)
		return;
	lj_placer_free(sr->placer);
	free(sr->ts);
	free(sr->tf);
	free(sr->mc);
	free(sr->snap);
	free(sr->ir);
	free(sr->map);
	free(sr->snaps);
	free(sr->frames);
	free(sr);
}

void snap_reader_stats(const struct snap_reader *sr, struct snap_stats *out)
{
	struct lj_place_stats ps = { 0 };

	*out = sr->stats;
	if (sr->placer)
		lj_placer_stats(sr->placer, &ps);
	out->exact = ps.exact;
	out->whole = ps.single;
}

static uint64_t get_u64(const uint8_t *p)
{
	uint64_t v;

	memcpy(&v, p, 8);
	return v;
}

static uint32_t get_u32(const uint8_t *p)
{
	uint32_t v;

	memcpy(&v, p, 4);
	return v;
}

/* Reads len bytes at addr into *buf, grown as needed: 0 or -errno. */
static int read_into(pid_t pid, uint64_t addr, size_t len, void **buf, size_t *cap)
{
	if (GROW(*(uint8_t **)buf, *cap, len ? len : 1))
		return -ENOMEM;
	return target_read(pid, addr, *buf, len);
}

/* The IR constant at ref: opcode and type, and its value (a GC object's
 * address for KGC, the 64 bits of a KNUM).  0, or -1 for a ref that is
 * not a constant the recorder read. */
static int ir_const(const struct snap_reader *sr, uint32_t ref, uint8_t *op,
		    uint8_t *type, uint64_t *v)
{
	const uint8_t *ins;

	if (ref < sr->nk || ref >= REF_BIAS)
		return -1;
	ins = sr->ir + (size_t)(ref - sr->nk) * IRINS_SIZE;
	*op = ins[IRINS_O];
	*type = ins[IRINS_T] & IRT_TYPE;
	if (*op == IR_KGC && !sr->fr2) {
		*v = get_u32(ins); /* a GCRef in op12 */
		return 0;
	}
	if (*op != IR_KGC && *op != IR_KNUM)
		return -1;
	if (ref + 1 >= REF_BIAS)
		return -1;
	*v = get_u64(ins + IRINS_SIZE);
	return 0;
}

/* A Lua function's proto: its id (read and handed to emit if new) and
 * its bytecode.  0, or -1 if it cannot be read. */
static int proto_of(struct proto_table *pt, const struct lj_target *t,
		    uint64_t proto, struct fn_ent *f, snap_emit_proto_fn emit, void *ctx)
{
	const struct lp_proto *prec;
	uint64_t id = proto_table_at(pt, t, proto, &f->sizebc, &prec);

	if (prec)
		emit(ctx, prec);
	if (!id)
		return -1;
	f->kind = LP_LFRAME_LUA;
	f->value = id;
	f->bc = proto + t->layout.pt_size;
	return 0;
}

/* The cache's entry for the function or proto at addr; *fresh is set if
 * it is new (then zeroed but for addr, for the caller to fill).  NULL if
 * the cache is full (the snapshot is then not placed). */
static struct fn_ent *fn_cached(struct snap_reader *sr, uint64_t addr, int *fresh)
{
	struct fn_ent *f;

	*fresh = 0;
	for (uint32_t i = 0; i < sr->nfns; i++)
		if (sr->fns[i].addr == addr)
			return &sr->fns[i];
	if (sr->nfns == FUNC_CACHE)
		return NULL;
	f = &sr->fns[sr->nfns++];
	memset(f, 0, sizeof(*f));
	f->addr = addr;
	*fresh = 1;
	return f;
}

/* The function at addr, from the cache or read now; NULL if the cache is
 * full. */
static const struct fn_ent *func_at(struct snap_reader *sr, struct proto_table *pt,
				    const struct lj_target *t, uint64_t addr,
				    snap_emit_proto_fn emit, void *ctx)
{
	const struct lj_layout *lo = &t->layout;
	uint32_t first = lo->fn_ffid - 1, end = (lo->fn_pc > lo->fn_f ? lo->fn_pc : lo->fn_f) + 8;
	struct fn_ent *f;
	uint8_t b[128];
	int fresh;

	f = fn_cached(sr, addr, &fresh);
	if (!f || !fresh)
		return f;
	if (!lo->fn_ffid || end - first > sizeof(b) ||
	    target_read(t->pid, addr + first, b, end - first) || b[0] != GCT_FUNC)
		return f;
	if (b[1] == LJ_FF_LUA) {
		uint64_t fnpc = lj_get_ref(lo, b + lo->fn_pc - first);

		f->func = addr;
		if (fnpc > lo->pt_size)
			proto_of(pt, t, fnpc - lo->pt_size, f, emit, ctx);
	} else if (b[1] == LJ_FF_C) {
		f->kind = LP_LFRAME_C;
		f->value = get_u64(b + lo->fn_f - first);
	} else {
		f->kind = LP_LFRAME_FF;
		f->value = b[1];
	}
	return f;
}

/* A proto the IR names (specializing to a proto instead of a closure, a
 * return to a lower frame) whose bytecode holds pc, as a function entry;
 * NULL if none does. */
static const struct fn_ent *proto_holding(struct snap_reader *sr, struct proto_table *pt,
					  const struct lj_target *t, uint64_t pc,
					  snap_emit_proto_fn emit, void *ctx)
{
	const struct lj_layout *lo = &t->layout;

	for (uint32_t ref = sr->nk; ref < REF_BIAS; ref++) {
		uint8_t op, type, hdr[16];
		uint32_t sizebc;
		uint64_t v;
		struct fn_ent *f;
		int fresh;

		if (ir_const(sr, ref, &op, &type, &v) || op != IR_KGC || type != IRT_PROTO ||
		    pc <= v + lo->pt_size || (size_t)lo->pt_sizebc + 4 > sizeof(hdr) ||
		    target_read(t->pid, v, hdr, lo->pt_sizebc + 4))
			continue;
		sizebc = get_u32(hdr + lo->pt_sizebc);
		if (pc > v + lo->pt_size + 4ull * sizebc)
			continue;
		/* A proto's address, never a function's. */
		f = fn_cached(sr, v, &fresh);
		if (f && fresh)
			proto_of(pt, t, v, f, emit, ctx);
		return f;
	}
	return NULL;
}

/* Fills lf with the function of the frame whose function slot holds fref
 * and runs at pc.  0, or -1 if it cannot be told. */
static int frame_func(struct snap_reader *sr, struct proto_table *pt,
		      const struct lj_target *t, uint32_t fref, uint64_t pc,
		      struct lp_lframe *lf, struct lj_tframe *tf,
		      snap_emit_proto_fn emit, void *ctx)
{
	const struct fn_ent *f = NULL;
	uint8_t op, type;
	uint64_t v;

	if (!ir_const(sr, fref, &op, &type, &v) && op == IR_KGC && type == IRT_FUNC)
		f = func_at(sr, pt, t, v, emit, ctx);
	else if (pc) /* a closure the trace did not specialize to */
		f = proto_holding(sr, pt, t, pc, emit, ctx);
	if (!f || !f->kind)
		return -1;
	lf->kind = f->kind;
	lf->value = f->value;
	lf->pc = 0;
	tf->func = f->kind == LP_LFRAME_FF ? f->addr : f->func;
	if (f->kind != LP_LFRAME_LUA)
		return 0;
	if (pc < f->bc || pc > f->bc + 4ull * f->sizebc || (pc - f->bc) % 4)
		return -1;
	lf->pc = (uint32_t)((pc - f->bc) / 4);
	tf->proto = f->bc - t->layout.pt_size;
	tf->pc = lf->pc ? lf->pc - 1 : 0;
	return 0;
}

/* The prototype the trace's base frame runs, which no constant names:
 * the one the trace starts in when it holds pc, or one the IR names. */
static uint64_t base_proto(struct snap_reader *sr, struct proto_table *pt,
			   const struct lj_target *t, uint64_t pc,
			   snap_emit_proto_fn emit, void *ctx)
{
	const struct lj_layout *lo = &t->layout;
	const struct fn_ent *f;
	uint8_t hdr[32];

	if (sr->startpt && (size_t)lo->pt_sizebc + 4 <= sizeof(hdr) &&
	    !target_read(t->pid, sr->startpt, hdr, lo->pt_sizebc + 4u) &&
	    pc > sr->startpt + lo->pt_size &&
	    pc <= sr->startpt + lo->pt_size + 4ull * get_u32(hdr + lo->pt_sizebc))
		return sr->startpt;
	f = proto_holding(sr, pt, t, pc, emit, ctx);
	return f && f->kind == LP_LFRAME_LUA ? f->bc - lo->pt_size : 0;
}

/* The map entry for slot among a snapshot's entries, or NULL. */
static const uint32_t *slot_entry(const uint32_t *e, uint32_t nent, uint32_t slot)
{
	for (uint32_t i = 0; i < nent; i++)
		if (e[i] >> 24 == slot)
			return &e[i];
	return NULL;
}

/* The KNUM constant an entry names, in *v: 0 or -1. */
static int entry_knum(const struct snap_reader *sr, const uint32_t *e, uint64_t *v)
{
	uint8_t op, type;

	return e && !ir_const(sr, *e & 0xffff, &op, &type, v) && op == IR_KNUM ? 0 : -1;
}

/* The frames of snapshot i, base first, into fr[]; *n of them.  Their
 * functions (fref) and links come from the entries, their PCs from the
 * trailer and the links.  0, or -1 if they do not add up. */
static int snap_frames(struct snap_reader *sr, const struct lj_layout *lo, uint32_t i,
		       struct sframe *fr, uint32_t *n)
{
	const uint8_t *s = sr->snap + (size_t)i * lo->sn_size;
	uint32_t mapofs = get_u32(s + lo->sn_mapofs), nent = s[lo->sn_nent];
	uint32_t next = i + 1 < sr->nsnap ?
			get_u32(sr->snap + (size_t)(i + 1) * lo->sn_size + lo->sn_mapofs) :
			sr->nsnapmap;
	const uint32_t *e = sr->map + mapofs, *base_e;
	uint32_t k = 1, at, inner_fslot = 0;
	uint64_t pc, word;

	if (mapofs > next || next > sr->nsnapmap || nent > next - mapofs ||
	    next - mapofs - nent < (sr->fr2 ? 2u : 1u))
		return -1;
	memset(fr, 0, sizeof(*fr));
	base_e = slot_entry(e, nent, 0);
	fr[0].fref = base_e ? *base_e & 0xffff : 0;
	fr[0].slot = 1 + sr->fr2;
	for (uint32_t j = 0; j < nent; j++) {
		uint32_t slot = e[j] >> 24;

		if (!(e[j] & SNAP_FRAME) || slot < 1 + (uint32_t)sr->fr2)
			continue;
		if (k >= LP_TSNAP_MAX_FRAMES)
			return -1;
		memset(&fr[k], 0, sizeof(fr[k]));
		if (sr->fr2) {
			/* The link slot: the function is one below, a
			 * continuation's PC two below. */
			const uint32_t *fe = slot_entry(e, nent, slot - 1);

			if (!fe || entry_knum(sr, &e[j], &fr[k].link))
				return -1;
			fr[k].fref = *fe & 0xffff;
			fr[k].slot = (int32_t)slot + 1;
			inner_fslot = slot - 1;
			if ((fr[k].link & 7) == LJ_FRAME_CONT &&
			    entry_knum(sr, slot_entry(e, nent, slot - 2), &fr[k].contpc))
				return -1;
		} else {
			fr[k].fref = e[j] & 0xffff;
			fr[k].slot = (int32_t)slot + 1;
		}
		k++;
	}
	at = mapofs + nent;
	if (sr->fr2) {
		/* The low byte is the innermost frame's base slot less 2: its
		 * function's slot, which the frames found must agree with. */
		word = sr->map[at] | (uint64_t)sr->map[at + 1] << 32;
		pc = word >> 8;
		if ((word & 0xff) != inner_fslot)
			return -1;
	} else {
		pc = sr->map[at++];
		/* The links, innermost first. */
		for (uint32_t j = k - 1; j >= 1; j--) {
			if (at >= next)
				return -1;
			fr[j].link = sr->map[at++];
			if ((fr[j].link & 3) != LJ_FRAME_LUA &&
			    (fr[j].link & 7) == LJ_FRAME_CONT) {
				if (at >= next)
					return -1;
				fr[j].contpc = sr->map[at++];
			}
		}
	}
	/* Each frame's PC, from the innermost down. */
	fr[k - 1].pc = pc + 4;
	for (uint32_t j = k - 1; j >= 1; j--) {
		uint64_t l = fr[j].link;

		if ((l & 3) == LJ_FRAME_LUA) {
			fr[j - 1].pc = l;
		} else if ((l & 7) == LJ_FRAME_CONT) {
			fr[j - 1].pc = fr[j].contpc;
		} else if ((l & 7) == LJ_FRAME_VARG) {
			fr[j - 1].pc = fr[j].pc;
			/* The walker skips the frame below; at the base, the
			 * base frame is that function and stands for both. */
			if (j > 1)
				fr[j - 1].skip = 1;
			else
				fr[j].skip = 1;
		} else if ((l & 7) == LJ_FRAME_PCALL || (l & 7) == LJ_FRAME_PCALLH) {
			fr[j - 1].pc = 0;
		} else {
			return -1; /* a C entry cannot be inside a trace */
		}
	}
	*n = k;
	return 0;
}

/* Appends snapshot i's frames to sr->frames as lframes; *nout of them,
 * or 0 if the snapshot does not decode.  The same frames as placement
 * takes them go to sr->tf; *pathable is cleared when placement cannot
 * follow the bytecode from them (the base frame's function not known). */
static int decode_snap(struct snap_reader *sr, struct proto_table *pt,
		       const struct lj_target *t, uint32_t i, uint32_t *nout,
		       int *pathable, snap_emit_proto_fn emit, void *ctx)
{
	struct sframe *fr = sr->fr;
	struct lp_lframe *lf;
	struct lj_tframe *tf;
	uint32_t n, m = 0;
	int usable = 1;

	*nout = 0;
	*pathable = 0;
	if (snap_frames(sr, &t->layout, i, fr, &n))
		return 0;
	if (GROW(sr->frames, sr->capframes, sr->nframes + n) ||
	    GROW(sr->tf, sr->captf, sr->ntf + n))
		return -ENOMEM;
	lf = sr->frames + sr->nframes;
	tf = sr->tf + sr->ntf;
	for (uint32_t j = 0; j < n; j++) {
		struct lp_lframe *f = &lf[m];
		struct lj_tframe *g = &tf[m];

		if (fr[j].skip)
			continue;
		memset(f, 0, sizeof(*f));
		memset(g, 0, sizeof(*g));
		if (j > 0)
			f->link = (fr[j].link & 3) == LJ_FRAME_LUA ? LJ_FRAME_LUA :
				  (uint32_t)(fr[j].link & 7);
		if (j == 0 && !fr[0].fref) {
			/* The walker's base frame: where it runs, as an
			 * instruction count from the trace's start. */
			if (!fr[0].pc || (fr[0].pc - sr->startpc) % 4)
				return 0;
			int64_t d = (int64_t)(fr[0].pc - sr->startpc) / 4;

			f->kind = LP_LFRAME_BASE;
			f->value = (uint64_t)d << 1 ^ (uint64_t)(d >> 63); /* zigzag */
			g->proto = base_proto(sr, pt, t, fr[0].pc, emit, ctx);
			if (g->proto && fr[0].pc >= g->proto + t->layout.pt_size + 4)
				g->pc = (uint32_t)((fr[0].pc - g->proto - t->layout.pt_size) / 4 - 1);
			else
				usable = 0;
		} else if (frame_func(sr, pt, t, fr[j].fref, fr[j].pc, f, g, emit, ctx)) {
			return 0;
		}
		g->base = fr[j].slot;
		g->link = f->link;
		g->lf = *f;
		m++;
	}
	*nout = m;
	*pathable = usable;
	return 0;
}

/* Adds snapshot i (nf frames at sr->frames + sr->nframes, 0: not placed)
 * at mcofs to the record, merged with the one before when nothing tells
 * them apart. */
static int add_snap(struct snap_reader *sr, uint32_t mcofs, uint32_t nf)
{
	struct lp_tsnap *prev = sr->rec.nsnap ? &sr->snaps[sr->rec.nsnap - 1] : NULL;
	const struct lp_lframe *fr = sr->frames + sr->nframes;

	if (prev && mcofs == prev->mcofs) {
		/* No code of its own: the later snapshot covers what
		 * follows, as LuaJIT's own search for an exit finds it. */
		sr->nframes = (size_t)(uintptr_t)prev->frames;
		memmove(sr->frames + sr->nframes, fr, nf * sizeof(*fr));
		fr = sr->frames + sr->nframes;
		sr->rec.nsnap--;
		prev = sr->rec.nsnap ? &sr->snaps[sr->rec.nsnap - 1] : NULL;
	}
	if (prev && prev->nframe == nf &&
	    !memcmp(sr->frames + (size_t)(uintptr_t)prev->frames, fr, nf * sizeof(*fr)))
		return 0; /* the same frames: the previous one goes on */
	if (GROW(sr->snaps, sr->capsnaps, sr->rec.nsnap + 1))
		return -ENOMEM;
	sr->snaps[sr->rec.nsnap].mcofs = mcofs;
	sr->snaps[sr->rec.nsnap].nframe = nf;
	sr->snaps[sr->rec.nsnap].frames = (const struct lp_lframe *)(uintptr_t)sr->nframes;
	sr->rec.nsnap++;
	sr->nframes += nf;
	if (sr->nframes > LP_TSNAP_MAX_TOTAL)
		return -E2BIG;
	return 0;
}

/* The fields of a GCtrace header the snapshots depend on, to see that a
 * trace did not change while it was read. */
static int same_trace(const struct lj_layout *lo, const uint8_t *a, const uint8_t *b)
{
	return !memcmp(a + lo->tr_nsnap, b + lo->tr_nsnap, 2) &&
	       !memcmp(a + lo->tr_nsnapmap, b + lo->tr_nsnapmap, 4) &&
	       !memcmp(a + lo->tr_snap, b + lo->tr_snap, 8) &&
	       !memcmp(a + lo->tr_mcode, b + lo->tr_mcode, 8) &&
	       !memcmp(a + lo->tr_traceno, b + lo->tr_traceno, 2);
}

/* Reads the arrays the header points to. */
static int read_arrays(struct snap_reader *sr, const struct lj_target *t,
		       const uint8_t *hdr)
{
	const struct lj_layout *lo = &t->layout;
	uint64_t snap = get_u64(hdr + lo->tr_snap), map = get_u64(hdr + lo->tr_snapmap);
	uint64_t ir = get_u64(hdr + lo->tr_ir);
	int err;

	uint32_t irend;

	sr->nsnap = (uint16_t)get_u32(hdr + lo->tr_nsnap);
	sr->nsnapmap = get_u32(hdr + lo->tr_nsnapmap);
	sr->nk = get_u32(hdr + lo->tr_nk);
	/* Without the instruction count, the constants only: snapshots
	 * are decoded, their code not placed (luajit_place.c). */
	sr->nins = lo->tr_nins ? get_u32(hdr + lo->tr_nins) : 0;
	if (sr->nins <= REF_BIAS || sr->nins > 0x10000 || !lo->sn_ref)
		sr->nins = 0;
	if (!sr->nsnap || sr->nsnapmap > SNAPMAP_MAX || sr->nk >= REF_BIAS ||
	    !snap || !map || !ir)
		return -EINVAL;
	/* The IR up to the last instruction and the slot after it (a
	 * constant's payload is read from the slot after the constant). */
	irend = sr->nins ? sr->nins + 1 : REF_BIAS;
	err = read_into(t->pid, snap, (size_t)sr->nsnap * lo->sn_size,
			(void **)&sr->snap, &sr->capsnap) ?:
	      read_into(t->pid, map, (size_t)sr->nsnapmap * 4, (void **)&sr->map, &sr->capmap) ?:
	      read_into(t->pid, ir + (uint64_t)sr->nk * IRINS_SIZE,
			(size_t)(irend - sr->nk) * IRINS_SIZE, (void **)&sr->ir, &sr->capir);
	if (!err && sr->nins && sr->szmcode && sr->szmcode <= MCODE_MAX &&
	    read_into(t->pid, sr->mcode, sr->szmcode, (void **)&sr->mc, &sr->capmc))
		sr->nins = 0;
	return err;
}

/* Placement's proto_id: the id of the proto at addr, its record written
 * first if new. */
static uint64_t place_proto_id(void *ctx, uint64_t proto)
{
	struct snap_reader *sr = ctx;
	struct fn_ent *f;
	int fresh;

	f = fn_cached(sr, proto, &fresh);
	if (f && fresh)
		proto_of(sr->pt, sr->t, proto, f, sr->emit, sr->emit_ctx);
	return f && f->kind == LP_LFRAME_LUA ? f->value : 0;
}

/* Replaces the record's snapshots with the trace's code placed
 * instruction by instruction, when placement can do it. */
static void place(struct snap_reader *sr, const struct lj_target *t)
{
	struct lj_trace_view tv = {
		.pid = t->pid, .lo = &t->layout, .fr2 = sr->fr2, .nk = sr->nk,
		.nins = sr->nins, .ir = sr->ir, .mcode = sr->mcode, .szmcode = sr->szmcode,
		.mc = sr->mc, .startpt = sr->startpt, .startpc = sr->startpc,
		.nsnap = sr->nsnap, .snaps = sr->ts, .proto_id = place_proto_id, .ctx = sr,
		.ffnames = t->build ? t->build->ffnames : NULL,
		.nff = t->build ? t->build->nffnames : 0,
	};
	const struct lp_tsnap *snaps;
	uint32_t n;

	if (!sr->nins || !sr->mc || (!sr->placer && !(sr->placer = lj_placer_new())))
		return;
	for (uint32_t i = 0; i < sr->nsnap; i++)
		sr->ts[i].frames = sr->tf + (size_t)(uintptr_t)sr->ts[i].frames;
	if (lj_place_trace(sr->placer, &tv, &snaps, &n) || !n)
		return;
	sr->rec.snaps = snaps;
	sr->rec.nsnap = n;
}

int snap_reader_read(struct snap_reader *sr, struct proto_table *pt,
		     const struct lj_target *t, uint64_t addr, uint32_t traceno,
		     const uint8_t *hdr, uint64_t trace_id, snap_emit_proto_fn emit,
		     void *ctx, const struct lp_trace_snaps **out)
{
	const struct lj_layout *lo = &t->layout;
	const struct lj_arch *arch = lj_arch_for(LP_HOST_MACHINE);
	uint32_t unit = arch ? arch->mcode_unit : 1; /* of mcofs: the trace's MCode */
	uint8_t again[LJ_GCTRACE_HDR];
	uint32_t prev_mcofs = 0, nf, szmcode;
	int pathable;
	int err;

	*out = NULL;
	if (!lo->sn_size || !lo->tr_snap || !lo->fn_ffid)
		return -ENOTSUP;
	szmcode = lo->tr_szmcode ? get_u32(hdr + lo->tr_szmcode) : 0;
	if (hdr[lo->fn_ffid - 1] != GCT_TRACE ||
	    (uint16_t)get_u32(hdr + lo->tr_traceno) != (uint16_t)traceno) {
		sr->stats.stale++;
		return -ESTALE;
	}
	sr->fr2 = !!(lo->flags & LJ_LAYOUT_GC64);
	sr->startpc = lj_get_ref(lo, hdr + lo->tr_startpc);
	sr->startpt = lj_get_ref(lo, hdr + lo->tr_startpt);
	sr->mcode = lo->tr_mcode ? get_u64(hdr + lo->tr_mcode) : 0;
	sr->szmcode = szmcode;
	sr->nfns = 0;
	sr->nframes = 0;
	sr->ntf = 0;
	sr->pt = pt;
	sr->t = t;
	sr->emit = emit;
	sr->emit_ctx = ctx;
	sr->rec = (struct lp_trace_snaps){ .trace = trace_id, .bcofs = lo->pt_size,
					   .bcbase = sr->startpc };
	err = read_arrays(sr, t, hdr);
	/* A trace flushed while it was read is another trace now. */
	if (!err && (target_read(t->pid, addr, again, sizeof(again)) ||
		     !same_trace(lo, hdr, again)))
		err = -ESTALE;
	for (uint32_t i = 0; !err && i < sr->nsnap; i++) {
		uint32_t mcofs = (uint16_t)get_u32(sr->snap + (size_t)i * lo->sn_size +
						   lo->sn_mcofs) * unit;

		/* LuaJIT writes the first snapshot's offset 0 and the others
		 * climbing through the trace's code: bytes that do not are
		 * not the layout they were taken for (a build without mcofs
		 * has padding there, most often zeros) */
		if (mcofs < prev_mcofs || (i == 0 && mcofs) ||
		    (szmcode && mcofs >= szmcode) ||
		    (i + 1 == sr->nsnap && i > 0 && !mcofs)) {
			err = -EINVAL;
			break;
		}
		prev_mcofs = mcofs;
		if (GROW(sr->ts, sr->capts, (size_t)i + 1)) {
			err = -ENOMEM;
			break;
		}
		err = decode_snap(sr, pt, t, i, &nf, &pathable, emit, ctx);
		sr->ts[i] = (struct lj_tsnap){
			.ref = (uint16_t)get_u32(sr->snap + (size_t)i * lo->sn_size + lo->sn_ref),
			.mcofs = mcofs, .nframe = nf, .pathable = (uint8_t)pathable,
			.frames = (const struct lj_tframe *)(uintptr_t)sr->ntf };
		sr->ntf += nf;
		if (!err)
			err = add_snap(sr, mcofs, nf);
	}
	if (err) {
		if (err == -ESTALE)
			sr->stats.stale++;
		else
			sr->stats.unreadable++;
		return err;
	}
	for (uint32_t i = 0; i < sr->rec.nsnap; i++)
		sr->snaps[i].frames = sr->frames + (size_t)(uintptr_t)sr->snaps[i].frames;
	sr->rec.snaps = sr->snaps;
	place(sr, t);
	for (uint32_t i = 0; i < sr->rec.nsnap; i++) {
		const struct lp_tsnap *s = &sr->rec.snaps[i];

		sr->stats.snaps++;
		sr->stats.unplaced += !s->nframe;
		sr->stats.marked += s->nframe && s->frames[s->nframe - 1].kind == LP_LFRAME_INLINED;
	}
	sr->stats.traces++;
	*out = &sr->rec;
	return 0;
}

/*
 * test_luajit_place.c - a compiled trace's machine code placed instruction
 * by instruction (record/luajit_place.c and its parts), on a trace built
 * by hand: the loop of
 *
 *   local function g(x) if x < 0 then x = -x end return x * 17 end
 *   local function f(n) local x = 1 for i = 1, n do x = g(x) * 23 end return x end
 *
 * as LuaJIT compiles it, with snapshots at the loop's start, at g's
 * comparison (resuming at the negation it did not take) and at the loop's
 * end (resuming past the loop), its IR, and x86_64 code for that IR (and
 * arm64 code, placed alike).
 * The multiply by 17 is g's and the one by 23 f's, though both lie
 * between g's snapshot and the loop's: their constants tell, and the code
 * follows its IR's registers.  With g's frame in its snapshot where no
 * call of f puts it (another base), the stretch from the loop's start to
 * g's comparison has no path: it is marked, naming g, not given to f;
 * from g's snapshot on, the path needs no call, and places as before.
 */
#include <string.h>

#include "lib/lua_bc.h"
#include "record/luajit_ir.h"
#include "record/luajit_layouts.h"
#include "record/luajit_place.h"
#include "tests/unit/fake_target.h"
#include "tests/unit/unit.h"

#define P_F 0x400000u
#define P_G 0x401000u
#define K_F 0x410000u /* each proto's number constants */
#define K_G 0x411000u
#define ID_F 11
#define ID_G 12
#define MCODE 0x500000u
#define NK (LJ_REF_BIAS - 8)

static uint64_t dbl(double d)
{
	uint64_t v;

	memcpy(&v, &d, 8);
	return v;
}

/* Bytecode as builds before the bit operator opcodes number it. */
static int older_numbering;
/* Integral constants as a dual-number build keeps them (arm64). */
static int dualnum;

/* A prototype in the fake memory: its bytecode and one number. */
static void proto(const struct lj_layout *lo, uint64_t at, uint64_t kat,
		  const uint32_t *bc, uint32_t nbc, double k, uint8_t framesize)
{
	uint8_t *p = fake_region(at, lo->pt_size + 4u * nbc);
	/* A dual-number build (arm64's) keeps an integral constant as an
	 * integer, tagged LJ_TISNUM (GC64: in the upper 17 bits). */
	uint64_t kn = dualnum && k == (int32_t)k ? (uint64_t)(0x1ffffu & ~13u) << 47 |
						   (uint32_t)(int32_t)k : dbl(k);

	memcpy(p + lo->pt_sizebc, &nbc, 4);
	memcpy(p + lo->pt_sizekn, &(uint32_t){ 1 }, 4);
	memcpy(p + lo->pt_k, &kat, lo->ref_size);
	p[lo->pt_framesize] = framesize;
	memcpy(p + lo->pt_size, bc, 4u * nbc);
	for (uint32_t i = 0; older_numbering && i < nbc; i++)
		if (LBC_OP(bc[i]) >= LBC_FUNCF)
			memcpy(p + lo->pt_size + 4 * i, &(uint32_t){ bc[i] - LBC_NBITOP }, 4);
	memcpy(fake_region(kat, 8), &kn, 8);
}

static uint64_t proto_id(void *ctx, uint64_t proto)
{
	(void)ctx;
	return proto == P_F ? ID_F : proto == P_G ? ID_G : 0;
}

/* IR: refs NK.. constants, then the instructions. */
static uint8_t ir[(LJ_REF_BIAS + 16 - NK) * LJ_IRINS_SIZE];

static void ins(uint32_t ref, uint8_t o, uint8_t t, uint16_t op1, uint16_t op2, uint8_t r)
{
	uint8_t *p = ir + (size_t)(ref - NK) * LJ_IRINS_SIZE;

	memcpy(p, &op1, 2);
	memcpy(p + 2, &op2, 2);
	p[4] = t;
	p[5] = o;
	p[6] = r;
	p[7] = 0;
}

static void knum(uint32_t ref, double d)
{
	uint64_t v = dbl(d);

	if (dualnum && d == (int32_t)d) { /* KINT: the value in op1 and op2 */
		ins(ref, LJ_IR_KINT, LJ_IRT_INT, (uint16_t)(int32_t)d,
		    (uint16_t)((uint32_t)(int32_t)d >> 16), LJ_RID_NONE);
		return;
	}

	ins(ref, LJ_IR_KNUM, LJ_IRT_NUM, 0, 0, LJ_RID_NONE);
	memcpy(ir + (size_t)(ref + 1 - NK) * LJ_IRINS_SIZE, &v, 8);
}

/* The machine code, stretch by stretch (offsets 0, 5, 26). */
static const uint8_t mc[] = {
	0xf2, 0x0f, 0x10, 0x7a, 0x18,             /* 0  movsd xmm7, [rdx+0x18] */
	0x66, 0x44, 0x0f, 0x2e, 0xff,             /* 5  ucomisd xmm15, xmm7 */
	0x0f, 0x87, 0x00, 0x10, 0x00, 0x00,       /* 10 ja exit */
	0xf2, 0x41, 0x0f, 0x59, 0xfd,             /* 16 mulsd xmm7, xmm13 */
	0xf2, 0x41, 0x0f, 0x59, 0xfc,             /* 21 mulsd xmm7, xmm12 */
	0x83, 0xf8, 0x10,                         /* 26 cmp eax, 0x10 */
	0x0f, 0x8f, 0x00, 0x10, 0x00, 0x00,       /* 29 jg exit */
};

/* The same code in AArch64's instructions (snapshots at 0, 4, 20). */
static const uint8_t mc_arm64[] = {
	0x67, 0x0e, 0x40, 0xfd,                   /* 0  ldr d7, [x19, #24] */
	0xe0, 0x21, 0x67, 0x1e,                   /* 4  fcmp d15, d7 */
	0x08, 0x80, 0x00, 0x54,                   /* 8  b.hi exit */
	0xe7, 0x08, 0x6d, 0x1e,                   /* 12 fmul d7, d7, d13 */
	0xe7, 0x08, 0x6c, 0x1e,                   /* 16 fmul d7, d7, d12 */
	0x1f, 0x40, 0x00, 0x71,                   /* 20 cmp w0, #0x10 */
	0x0c, 0x80, 0x00, 0x54,                   /* 24 b.gt exit */
};

/* An instruction set's code for the trace: its FPRs' first register id
 * (xmm0, d0), the offsets of the load, the comparison, its branch, the
 * two multiplies and the loop's guard (snapshots at the 1st, 2nd, 6th). */
struct code {
	const uint8_t *mc;
	uint32_t len;
	uint16_t machine;
	uint8_t fpr;
	uint32_t ofs[6];
};
static const struct code x86_64 = { mc, sizeof(mc), 62 /* EM_X86_64 */, 16,
				    { 0, 5, 10, 16, 21, 26 } };
static const struct code arm64 = { mc_arm64, sizeof(mc_arm64), 183 /* EM_AARCH64 */, 32,
				   { 0, 4, 8, 12, 16, 20 } };
static const struct code *code = &x86_64;

static uint64_t zz(int64_t d)
{
	return (uint64_t)d << 1 ^ (uint64_t)(d >> 63);
}

struct fixture {
	const struct lj_layout *lo;
	struct lj_tframe fr[5];
	struct lj_tsnap sn[3];
	struct lj_trace_view tv;
};

/* The trace; g_base: where snapshot 1 says g's frame is. */
static void build(struct fixture *x, int32_t g_base)
{
	static const uint32_t g[] = {
		LBC_AD(LBC_FUNCF, 2, 0), LBC_AD(LBC_KSHORT, 1, 0), LBC_AD(LBC_ISGE, 0, 1),
		LBC_AD(LBC_JMP, 1, LBC_BIAS_J + 1), LBC_AD(LBC_UNM, 0, 0),
		LBC_ABC(LBC_MULVN, 0, 0, 0), LBC_AD(LBC_RET1, 0, 2),
	};
	static const uint32_t f[] = {
		LBC_AD(LBC_FUNCF, 9, 0), LBC_AD(LBC_KSHORT, 1, 1), LBC_AD(LBC_KSHORT, 2, 1),
		LBC_AD(LBC_MOV, 3, 0), LBC_AD(LBC_KSHORT, 4, 1),
		LBC_AD(LBC_FORI, 2, LBC_BIAS_J + 5), LBC_AD(LBC_UGET, 6, 0),
		LBC_AD(LBC_MOV, 8, 1), LBC_ABC(LBC_CALL, 6, 2, 2), LBC_ABC(LBC_MULVN, 1, 6, 0),
		LBC_AD(LBC_FORL, 2, LBC_BIAS_J - 5), LBC_AD(LBC_RET1, 1, 2),
	};
	const struct lj_layout *lo = x->lo;
	uint64_t bc_f = P_F + lo->pt_size, startpc = bc_f + 4 * 6;

	fake_regions_free();
	proto(lo, P_F, K_F, f, 12, 23, 9);
	proto(lo, P_G, K_G, g, 7, 17, 2);
	memset(ir, 0, sizeof(ir));
	knum(NK, 0);
	knum(NK + 2, 17);
	knum(NK + 4, 23);
	ins(LJ_REF_BIAS + 1, LJ_IR_SLOAD, LJ_IRT_NUM, 3, 0, code->fpr + 7);
	ins(LJ_REF_BIAS + 2, LJ_IR_UGE, LJ_IRT_NUM | LJ_IRT_GUARD, LJ_REF_BIAS + 1, NK,
	    LJ_RID_NONE);
	ins(LJ_REF_BIAS + 3, LJ_IR_MUL, LJ_IRT_NUM, LJ_REF_BIAS + 1, NK + 2, code->fpr + 7);
	ins(LJ_REF_BIAS + 4, LJ_IR_MUL, LJ_IRT_NUM, LJ_REF_BIAS + 3, NK + 4, code->fpr + 7);
	ins(LJ_REF_BIAS + 5, LJ_IR_LE, LJ_IRT_INT | LJ_IRT_GUARD, LJ_REF_BIAS + 1,
	    LJ_REF_BIAS + 1, LJ_RID_NONE);
	ins(LJ_REF_BIAS + 6, LJ_IR_LOOP, 0, 0, 0, LJ_RID_NONE);

	/* Snapshot 0: f, about to run the loop's body (6). */
	x->fr[0] = (struct lj_tframe){ .proto = P_F, .pc = 6, .base = 2,
				       .lf = { .kind = LP_LFRAME_BASE, .value = zz(1) } };
	/* Snapshot 1: f calls g (8); g resumes at the negation it skipped. */
	x->fr[1] = (struct lj_tframe){ .proto = P_F, .pc = 8, .base = 2,
				       .lf = { .kind = LP_LFRAME_BASE, .value = zz(3) } };
	x->fr[2] = (struct lj_tframe){ .proto = P_G, .pc = 4, .base = g_base,
				       .link = LJ_FRAME_LUA,
				       .lf = { .kind = LP_LFRAME_LUA, .value = ID_G, .pc = 5 } };
	/* Snapshot 2: f's loop guard, resuming past the loop (11). */
	x->fr[3] = (struct lj_tframe){ .proto = P_F, .pc = 11, .base = 2,
				       .lf = { .kind = LP_LFRAME_BASE, .value = zz(6) } };
	x->sn[0] = (struct lj_tsnap){ .ref = LJ_REF_BIAS + 1, .mcofs = 0, .nframe = 1,
				      .pathable = 1, .frames = &x->fr[0] };
	x->sn[1] = (struct lj_tsnap){ .ref = LJ_REF_BIAS + 2, .mcofs = code->ofs[1], .nframe = 2,
				      .pathable = 1, .frames = &x->fr[1] };
	x->sn[2] = (struct lj_tsnap){ .ref = LJ_REF_BIAS + 5, .mcofs = code->ofs[5], .nframe = 1,
				      .pathable = 1, .frames = &x->fr[3] };
	x->tv = (struct lj_trace_view){
		.lo = lo, .fr2 = 1, .nk = NK, .nins = LJ_REF_BIAS + 7, .ir = ir,
		.mcode = MCODE, .szmcode = code->len, .mc = code->mc, .machine = code->machine,
		.startpt = P_F,
		.startpc = startpc, .nsnap = 3, .snaps = x->sn, .proto_id = proto_id,
	};
}

/* The range of ranges r that covers offset ofs. */
static const struct lp_tsnap *at(const struct lp_tsnap *r, uint32_t n, uint32_t ofs)
{
	const struct lp_tsnap *hit = NULL;

	for (uint32_t i = 0; i < n && r[i].mcofs <= ofs; i++)
		hit = &r[i];
	return hit;
}

/* f's base frame alone, at instruction pc (BASE: after it, from pc 6). */
static int in_f(const struct lp_tsnap *s, uint32_t pc)
{
	return s && s->nframe == 1 && s->frames[0].kind == LP_LFRAME_BASE &&
	       s->frames[0].value == zz((int64_t)pc + 1 - 6);
}

/* g under f's call (8), at instruction pc. */
static int in_g(const struct lp_tsnap *s, uint32_t pc)
{
	return s && s->nframe == 2 && s->frames[0].value == zz(3) &&
	       s->frames[1].kind == LP_LFRAME_LUA && s->frames[1].value == ID_G &&
	       s->frames[1].pc == pc + 1;
}

/* Bytecode numbered with the bit operators (FUNCF 0x60) or without
 * (0x59): entering g reads its header either way. */
static void splits_a_stretch(int older)
{
	struct lj_placer *p = lj_placer_new();
	struct fixture x = { .lo = &lj_known_build(LJ_LAYOUT_GC64)->layout };
	const struct lp_tsnap *r;
	struct lj_place_stats st;
	uint32_t n;

	CHECK(p != NULL);
	older_numbering = older;
	build(&x, 2 + 6 + 2);
	older_numbering = 0;
	CHECK(lj_place_trace(p, &x.tv, &r, &n) == 0);
	CHECK(r[0].mcofs == 0);
	/* The load of x: f's MOV that passes it to g. */
	CHECK(in_f(at(r, n, code->ofs[0]), 7));
	/* The comparison and its branch: g's ISGE. */
	CHECK(in_g(at(r, n, code->ofs[1]), 2));
	CHECK(in_g(at(r, n, code->ofs[2]), 2));
	/* x * 17 is g's, x * 23 f's: one stretch, two functions. */
	CHECK(in_g(at(r, n, code->ofs[3]), 5));
	CHECK(in_f(at(r, n, code->ofs[4]), 9));
	/* The loop's guard. */
	CHECK(in_f(at(r, n, code->ofs[5]), 10));
	lj_placer_stats(p, &st);
	CHECK(st.exact == 3 && st.marked == 0);
	lj_placer_free(p);
	fake_regions_free();
}

TEST(lj_place_splits_a_stretch_between_functions)
{
	splits_a_stretch(0);
}

/* The same trace compiled for arm64 (lj_asm_arm64.h's registers and
 * instructions), matched by the arm64 instruction set's rules, with its
 * constants as a dual-number build holds them: 17 and 23 integers. */
TEST(lj_place_splits_a_stretch_of_arm64_code)
{
	code = &arm64;
	dualnum = 1;
	splits_a_stretch(0);
	dualnum = 0;
	code = &x86_64;
}

TEST(lj_place_reads_bytecode_numbered_before_the_bit_operators)
{
	splits_a_stretch(1);
}

TEST(lj_place_marks_what_it_cannot_tell_apart)
{
	struct lj_placer *p = lj_placer_new();
	struct fixture x = { .lo = &lj_known_build(LJ_LAYOUT_GC64)->layout };
	const struct lp_tsnap *r, *s;
	struct lj_place_stats st;
	uint32_t n;

	CHECK(p != NULL);
	/* g's frame where no call of f puts it: no path joins the loop's
	 * start to it. */
	build(&x, 40);
	CHECK(lj_place_trace(p, &x.tv, &r, &n) == 0);
	/* The loop's start to g's snapshot: f, then g marked in it, named
	 * by the call that runs it (f's instruction 8). */
	s = at(r, n, 0);
	CHECK(s && s->nframe == 2 && s->frames[0].kind == LP_LFRAME_BASE &&
	      s->frames[0].value == zz(1) && s->frames[1].kind == LP_LFRAME_INLINED &&
	      s->frames[1].value == ID_G && s->frames[1].pc == 9);
	CHECK(at(r, n, 4) == s);
	/* g's snapshot on: placed. */
	CHECK(in_g(at(r, n, 16), 5));
	CHECK(in_f(at(r, n, 21), 9));
	lj_placer_stats(p, &st);
	CHECK(st.marked == 1 && st.exact == 2);
	lj_placer_free(p);
	fake_regions_free();
}

/*
 * Two FFI calls between two snapshots: the loop of samples/lua/durable.lua,
 *
 *   for _ = 1, n do ffi.C.write(fd, line, #line) ffi.C.fdatasync(fd) end
 *
 * whose results go unused, so that no snapshot parts the calls: LuaJIT's
 * loop copy is LOOP, CALLXS write, CALLXS fdatasync, ADD, LE, and its code
 * the argument moves and call r13, a move and call r12, then the loop's
 * increment.  Each call's code is its own line's (marked as a call into
 * a function the path does not know, named by its CALL), never the
 * other's: a sample in fdatasync returns after call r12, and a report
 * places it by the return address - 1, in the call itself.
 */
#define P_D 0x402000u
#define K_D 0x412000u

static const uint8_t mc_ffi[] = {
	0xba, 0x65, 0x00, 0x00, 0x00,             /* 0  mov edx, 0x65 */
	0x49, 0x8d, 0xb6, 0x60, 0xe2, 0xfe, 0xff, /* 5  lea rsi, [r14-0x11da0] */
	0xbf, 0x03, 0x00, 0x00, 0x00,             /* 12 mov edi, 3 */
	0x41, 0xff, 0xd5,                         /* 17 call r13 (write) */
	0xbf, 0x03, 0x00, 0x00, 0x00,             /* 20 mov edi, 3 */
	0x41, 0xff, 0xd4,                         /* 25 call r12 (fdatasync) */
	0x83, 0xc5, 0x01,                         /* 28 add ebp, 1 */
	0x39, 0xdd,                               /* 31 cmp ebp, ebx */
	0x0f, 0x8e, 0xd9, 0xff, 0xff, 0xff,       /* 33 jle 0 */
	0xe9, 0x00, 0x10, 0x00, 0x00,             /* 39 jmp exit */
};

static void kint(uint32_t ref, int32_t v)
{
	ins(ref, LJ_IR_KINT, LJ_IRT_INT, (uint16_t)v, (uint16_t)((uint32_t)v >> 16), LJ_RID_NONE);
}

static void kptr(uint32_t ref, uint64_t v)
{
	ins(ref, LJ_IR_KPTR, 0, 0, 0, LJ_RID_NONE);
	memcpy(ir + (size_t)(ref + 1 - NK) * LJ_IRINS_SIZE, &v, 8);
}

static uint64_t proto_id_d(void *ctx, uint64_t proto)
{
	(void)ctx;
	return proto == P_D ? 13 : 0;
}

/* The base frame at instruction pc (from pc 5), then a call into a
 * function not known, named by the CALL at pc. */
static int in_call(const struct lp_tsnap *s, uint32_t pc)
{
	return s && s->nframe == 2 && s->frames[0].kind == LP_LFRAME_BASE &&
	       s->frames[0].value == zz((int64_t)pc + 1 - 5) &&
	       s->frames[1].kind == LP_LFRAME_INLINED && s->frames[1].value == 0 &&
	       s->frames[1].pc == pc + 1;
}

/* The base frame alone at pc. */
static int in_line(const struct lp_tsnap *s, uint32_t pc)
{
	return s && s->nframe == 1 && s->frames[0].kind == LP_LFRAME_BASE &&
	       s->frames[0].value == zz((int64_t)pc + 1 - 5);
}

/* checks: the trace checks a closure the path does not know (as one
 * inlined through an unknown call would), so a call's C call may be that
 * function's: marked, named by its own call; without, placed at its
 * line. */
static void ffi_calls(int checks)
{
	static const uint32_t d[] = {
		LBC_AD(LBC_FUNCF, 10, 0), LBC_AD(LBC_KSHORT, 1, 1), LBC_AD(LBC_MOV, 2, 0),
		LBC_AD(LBC_KSHORT, 3, 1), LBC_AD(LBC_FORI, 1, LBC_BIAS_J + 14),
		LBC_AD(LBC_UGET, 5, 0), LBC_ABC(LBC_TGETS, 5, 5, 0), LBC_ABC(LBC_TGETS, 5, 5, 1),
		LBC_AD(LBC_UGET, 7, 1), LBC_AD(LBC_UGET, 8, 2), LBC_AD(LBC_UGET, 9, 2),
		LBC_AD(LBC_LEN, 9, 9), LBC_ABC(LBC_CALL, 5, 1, 4),
		LBC_AD(LBC_UGET, 5, 0), LBC_ABC(LBC_TGETS, 5, 5, 0), LBC_ABC(LBC_TGETS, 5, 5, 2),
		LBC_AD(LBC_UGET, 7, 1), LBC_ABC(LBC_CALL, 5, 1, 2),
		LBC_AD(LBC_FORL, 1, LBC_BIAS_J - 14), LBC_AD(LBC_RET0, 0, 1),
	};
	const struct lj_layout *lo = &lj_known_build(LJ_LAYOUT_GC64)->layout;
	const uint32_t B = LJ_REF_BIAS;
	struct lj_placer *p = lj_placer_new();
	struct lj_tframe fr[2];
	struct lj_tsnap sn[2];
	struct lj_trace_view tv;
	const struct lp_tsnap *r;
	struct lj_place_stats st;
	uint32_t n;

	CHECK(p != NULL);
	fake_regions_free();
	proto(lo, P_D, K_D, d, 20, 0, 10);
	memset(ir, 0, sizeof(ir));
	kint(NK, 3);
	kint(NK + 1, 101);
	kint(NK + 2, 1);
	kptr(NK + 3, 0x7f0000764340u); /* write */
	kptr(NK + 5, 0x7f000076acd0u); /* fdatasync, or a closure */
	ins(B + 1, LJ_IR_SLOAD, LJ_IRT_INT, 3, 0, 5);
	ins(B + 2, LJ_IR_SLOAD, LJ_IRT_INT | LJ_IRT_GUARD, 4, 0, 3);
	ins(B + 3, LJ_IR_CARG, LJ_IRT_NIL, NK, NK + 1, LJ_RID_NONE);
	if (checks) { /* two, or the one would be taken for the callee */
		ins(NK + 3, LJ_IR_KGC, LJ_IRT_FUNC, 0, 0, LJ_RID_NONE);
		ins(NK + 5, LJ_IR_KGC, LJ_IRT_FUNC, 0, 0, LJ_RID_NONE);
		ins(B + 3, LJ_IR_EQ, LJ_IRT_FUNC | LJ_IRT_GUARD, B + 1, NK + 3, LJ_RID_NONE);
	}
	ins(B + 4, LJ_IR_CARG, LJ_IRT_NIL, B + 3, NK + 1, LJ_RID_NONE);
	if (checks)
		ins(B + 4, LJ_IR_EQ, LJ_IRT_FUNC | LJ_IRT_GUARD, B + 1, NK + 5, LJ_RID_NONE);
	ins(B + 5, LJ_IR_LOOP, 0, 0, 0, LJ_RID_NONE);
	ins(B + 6, LJ_IR_CALLXS, LJ_IRT_INT, B + 4, NK + 3, LJ_RID_NONE);
	ins(B + 7, LJ_IR_CALLXS, LJ_IRT_INT, NK, NK + 5, LJ_RID_NONE);
	ins(B + 8, LJ_IR_ADD, LJ_IRT_INT, B + 1, NK + 2, 5);
	ins(B + 9, LJ_IR_LE, LJ_IRT_INT | LJ_IRT_GUARD, B + 8, B + 2, LJ_RID_NONE);

	/* The loop's start, resuming at its body (5), and its guard,
	 * resuming past the loop (19). */
	fr[0] = (struct lj_tframe){ .proto = P_D, .pc = 5, .base = 2,
				    .lf = { .kind = LP_LFRAME_BASE, .value = zz(1) } };
	fr[1] = (struct lj_tframe){ .proto = P_D, .pc = 19, .base = 2,
				    .lf = { .kind = LP_LFRAME_BASE, .value = zz(15) } };
	sn[0] = (struct lj_tsnap){ .ref = B + 5, .mcofs = 0, .nframe = 1, .pathable = 1,
				   .frames = &fr[0] };
	sn[1] = (struct lj_tsnap){ .ref = B + 9, .mcofs = 31, .nframe = 1, .pathable = 1,
				   .frames = &fr[1] };
	tv = (struct lj_trace_view){
		.lo = lo, .fr2 = 1, .nk = NK, .nins = B + 10, .ir = ir, .mcode = MCODE,
		.szmcode = sizeof(mc_ffi), .mc = mc_ffi, .startpt = P_D,
		.startpc = P_D + lo->pt_size + 4 * 5, .nsnap = 2, .snaps = sn,
		.proto_id = proto_id_d,
	};
	CHECK(lj_place_trace(p, &tv, &r, &n) == 0);
	lj_placer_stats(p, &st);
	CHECK(st.exact == 2 && st.marked == 0);
	/* write's arguments and call: line 20's CALL (12); fdatasync's: line
	 * 21's (17), to the call's last byte, where a sample inside it lands
	 * (its return address - 1). */
	for (uint32_t ofs = 0; ofs < 28; ofs++) {
		uint32_t pc = ofs < 20 ? 12 : 17;

		CHECK(checks ? in_call(at(r, n, ofs), pc) : in_line(at(r, n, ofs), pc));
	}
	lj_placer_free(p);
	fake_regions_free();
}

TEST(lj_place_gives_each_ffi_call_its_own_code)
{
	ffi_calls(0);
}

TEST(lj_place_marks_ffi_calls_each_by_its_own_name)
{
	ffi_calls(1);
}

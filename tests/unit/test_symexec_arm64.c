/*
 * test_symexec_arm64.c - the AArch64 backend (record/symexec_arm64.c) on
 * small functions whose facts are known: the shapes luajit_code.c's rules
 * rely on, as test_symexec.c holds the x86-64 backend to them (a
 * comparison with a load of a load, a spill through the frame with a
 * pre- and post-indexed pair, 32-bit references, LuaJIT's pointer mask, a
 * pair load and a subtraction, a post-indexed store, a followed call that
 * pushes nothing, halfword comparisons at their width, cbz as a
 * comparison with 0, sbfiz as a scaled index, movz/movk/movn constants,
 * the interpreter's entry frame and a dispatch through G).  The bytes were
 * assembled from the source beside each with aarch64-linux-gnu-as at
 * address 0.
 */
#include <elf.h>
#include <stdint.h>
#include <string.h>

#include "record/symexec.h"
#include "tests/unit/unit.h"

/*
 * 0x00 pushthread: ldr x1,[x0,#16]; ldr x1,[x1,#192]; cmp x0,x1; cset w0,eq; ret
 * 0x14 spill:      stp x29,x30,[sp,#-32]!; mov x29,sp; str x0,[sp,#24];
 *                  ldr x1,[sp,#24]; ldr x0,[x1,#40]; ldp x29,x30,[sp],#32; ret
 * 0x30 refs32:     ldr w1,[x0,#8]; ldr w2,[x1,#140]; cmp x2,x0; ret
 * 0x40 untag:      ldur x1,[x1,#-16]; and x1,x1,#0x7fffffffffff;
 *                  ldr x2,[x1,#32]; ldr w0,[x2]; ret
 * 0x54 gettop:     ldp x1,x2,[x0,#32]; sub x0,x2,x1; asr x0,x0,#3; ret
 * 0x64 push:       ldr x3,[x0,#40]; str x1,[x3],#8; str x3,[x0,#40]; ret
 * 0x74 caller:     stp x19,x30,[sp,#-16]!; mov x19,x0; add x0,x19,#64;
 *                  bl callee; ldr x0,[x19,#24]; ldp x19,x30,[sp],#16; ret
 * 0x90 callee:     str x0,[x0,#8]; ret
 * 0x98 narrow:     ldrh w1,[x0,#62]; ldrh w2,[x3,#104]; cmp w1,w2; cbz x1,1f;
 *                  ldr x4,[x0,#376]; cbnz x4,1f; 1: ret
 * 0xb4 index:      sbfiz x3,x1,#3,#32; ldr x0,[x0,#32]; add x0,x0,x3;
 *                  ldur x0,[x0,#-8]; ret
 * 0xc8 consts:     movz x1,#0x8000,lsl #32; movk x1,#0xfffc,lsl #48;
 *                  str x1,[x0]; movn w2,#0; str w2,[x0,#184]; ret
 * 0xe0 vmentry:    sub sp,sp,#208; stp x29,x30,[sp,#192]; add x29,sp,#192;
 *                  stp x19,x20,[sp,#176]; ldr x9,[x0,#80]; str x9,[sp];
 *                  str x0,[sp,#16]; str x0,[sp,#8]; add x9,sp,#0;
 *                  str x9,[x0,#80]; ret
 * 0x10c dispatch:  ldr w16,[x21],#4; add x9,x22,w16,uxtb #3; ubfx x27,x16,#8,#8;
 *                  ldr x8,[x9,#3984]; br x8
 */
static const uint8_t code[] = {
	0x01, 0x08, 0x40, 0xf9, 0x21, 0x60, 0x40, 0xf9, 0x1f, 0x00, 0x01, 0xeb, 0xe0, 0x17, 0x9f, 0x1a,
	0xc0, 0x03, 0x5f, 0xd6, 0xfd, 0x7b, 0xbe, 0xa9, 0xfd, 0x03, 0x00, 0x91, 0xe0, 0x0f, 0x00, 0xf9,
	0xe1, 0x0f, 0x40, 0xf9, 0x20, 0x14, 0x40, 0xf9, 0xfd, 0x7b, 0xc2, 0xa8, 0xc0, 0x03, 0x5f, 0xd6,
	0x01, 0x08, 0x40, 0xb9, 0x22, 0x8c, 0x40, 0xb9, 0x5f, 0x00, 0x00, 0xeb, 0xc0, 0x03, 0x5f, 0xd6,
	0x21, 0x00, 0x5f, 0xf8, 0x21, 0xb8, 0x40, 0x92, 0x22, 0x10, 0x40, 0xf9, 0x40, 0x00, 0x40, 0xb9,
	0xc0, 0x03, 0x5f, 0xd6, 0x01, 0x08, 0x42, 0xa9, 0x40, 0x00, 0x01, 0xcb, 0x00, 0xfc, 0x43, 0x93,
	0xc0, 0x03, 0x5f, 0xd6, 0x03, 0x14, 0x40, 0xf9, 0x61, 0x84, 0x00, 0xf8, 0x03, 0x14, 0x00, 0xf9,
	0xc0, 0x03, 0x5f, 0xd6, 0xf3, 0x7b, 0xbf, 0xa9, 0xf3, 0x03, 0x00, 0xaa, 0x60, 0x02, 0x01, 0x91,
	0x04, 0x00, 0x00, 0x94, 0x60, 0x0e, 0x40, 0xf9, 0xf3, 0x7b, 0xc1, 0xa8, 0xc0, 0x03, 0x5f, 0xd6,
	0x00, 0x04, 0x00, 0xf9, 0xc0, 0x03, 0x5f, 0xd6, 0x01, 0x7c, 0x40, 0x79, 0x62, 0xd0, 0x40, 0x79,
	0x3f, 0x00, 0x02, 0x6b, 0x61, 0x00, 0x00, 0xb4, 0x04, 0xbc, 0x40, 0xf9, 0x24, 0x00, 0x00, 0xb5,
	0xc0, 0x03, 0x5f, 0xd6, 0x23, 0x7c, 0x7d, 0x93, 0x00, 0x10, 0x40, 0xf9, 0x00, 0x00, 0x03, 0x8b,
	0x00, 0x80, 0x5f, 0xf8, 0xc0, 0x03, 0x5f, 0xd6, 0x01, 0x00, 0xd0, 0xd2, 0x81, 0xff, 0xff, 0xf2,
	0x01, 0x00, 0x00, 0xf9, 0x02, 0x00, 0x80, 0x12, 0x02, 0xb8, 0x00, 0xb9, 0xc0, 0x03, 0x5f, 0xd6,
	0xff, 0x43, 0x03, 0xd1, 0xfd, 0x7b, 0x0c, 0xa9, 0xfd, 0x03, 0x03, 0x91, 0xf3, 0x53, 0x0b, 0xa9,
	0x09, 0x28, 0x40, 0xf9, 0xe9, 0x03, 0x00, 0xf9, 0xe0, 0x0b, 0x00, 0xf9, 0xe0, 0x07, 0x00, 0xf9,
	0xe9, 0x03, 0x00, 0x91, 0x09, 0x28, 0x00, 0xf9, 0xc0, 0x03, 0x5f, 0xd6, 0xb0, 0x46, 0x40, 0xb8,
	0xc9, 0x0e, 0x30, 0x8b, 0x1b, 0x3e, 0x48, 0xd3, 0x28, 0xc9, 0x47, 0xf9, 0x00, 0x01, 0x1f, 0xd6,
};

enum { PUSHTHREAD = 0x00, SPILL = 0x14, REFS32 = 0x30, UNTAG = 0x40, GETTOP = 0x54,
       PUSH = 0x64, CALLER = 0x74, CALLEE = 0x90, NARROW = 0x98, INDEX = 0xb4,
       CONSTS = 0xc8, VMENTRY = 0xe0, DISPATCH = 0x10c, END = sizeof(code) };

#define BASE 0x400000

static struct sx_ctx *ctx(void)
{
	static const struct sx_image img = {
		.code = code, .start = BASE, .end = BASE + sizeof(code),
	};

	return sx_new(&img, sx_isa_for(EM_AARCH64));
}

static struct sx_val load(struct sx_ctx *c, uint32_t base, int64_t off, int w)
{
	struct sx_node n = { .kind = SXN_LOAD, .width = (uint8_t)w,
			     .addr = sx_term(base, off) };

	return sx_term(sx_intern(c, &n), 0);
}

static const struct sx_fact *find(struct sx_ctx *c, int kind, const struct sx_val *a,
				  const struct sx_val *b)
{
	size_t n;
	const struct sx_fact *f = sx_facts(c, &n);

	for (size_t i = 0; i < n; i++)
		if (f[i].kind == kind && sx_val_eq(&f[i].a, a) && (!b || sx_val_eq(&f[i].b, b)))
			return &f[i];
	return NULL;
}

/* The backend is the e_machine's, whatever this build's architecture. */
TEST(symexec_arm64_chosen_by_machine)
{
	CHECK(sx_isa_for(EM_AARCH64) == &sx_isa_arm64);
	CHECK(sx_isa_for(EM_X86_64) == &sx_isa_x86_64);
	CHECK(!sx_isa_for(EM_RISCV));
	CHECK(sx_isa_arm64.call_push == 0 && sx_isa_x86_64.call_push == 8);
}

TEST(symexec_arm64_compare_with_load_of_load)
{
	struct sx_ctx *c = ctx();
	struct sx_val L, g, m;

	CHECK(c);
	CHECK(!sx_run(c, BASE + PUSHTHREAD, NULL, 0, 0, 100));
	L = sx_term(sx_arg(c, 0), 0);
	g = load(c, sx_arg(c, 0), 16, 8);
	m = load(c, g.term, 192, 8);
	CHECK(find(c, SXF_CMP, &L, &m));
	sx_free(c);
}

/* stp/ldp with writeback move sp; a value through the frame is itself. */
TEST(symexec_arm64_spill_through_frame)
{
	struct sx_ctx *c = ctx();
	struct sx_val a = sx_term(sx_arg(c, 0), 40), sp;
	uint32_t spn = sx_intern(c, &(struct sx_node){ .kind = SXN_SP });

	CHECK(!sx_run(c, BASE + SPILL, NULL, 0, 0, 100));
	CHECK(find(c, SXF_LOAD, &a, NULL));
	sp = sx_term(spn, -32 + 24);
	CHECK(find(c, SXF_STORE, &sp, &(struct sx_val){ .term = sx_arg(c, 0), .known = 1 }));
	sx_free(c);
}

TEST(symexec_arm64_32bit_refs)
{
	struct sx_ctx *c = ctx();
	struct sx_val L = sx_term(sx_arg(c, 0), 0), g, m;

	CHECK(!sx_run(c, BASE + REFS32, NULL, 0, 0, 100));
	g = load(c, sx_arg(c, 0), 8, 4);
	m = load(c, g.term, 140, 4);
	CHECK(find(c, SXF_CMP, &m, &L));
	sx_free(c);
}

/* and with the 47-bit mask keeps the pointer (LuaJIT's GC64 untag). */
TEST(symexec_arm64_untag_keeps_pointer)
{
	struct sx_ctx *c = ctx();
	struct sx_val fn = load(c, sx_arg(c, 1), -16, 8), f;

	CHECK(!sx_run(c, BASE + UNTAG, NULL, 0, 0, 100));
	f = load(c, fn.term, 32, 8);
	CHECK(find(c, SXF_LOAD, &f, NULL));
	sx_free(c);
}

/* lua_gettop: (L->top - L->base) from one ldp. */
TEST(symexec_arm64_pair_and_sub)
{
	struct sx_ctx *c = ctx();
	struct sx_val top, base;

	CHECK(!sx_run(c, BASE + GETTOP, NULL, 0, 0, 100));
	base = load(c, sx_arg(c, 0), 32, 8);
	top = load(c, sx_arg(c, 0), 40, 8);
	CHECK(find(c, SXF_SUB, &top, &base));
	sx_free(c);
}

/* A post-indexed store stores at the base, then moves it. */
TEST(symexec_arm64_post_index)
{
	struct sx_ctx *c = ctx();
	struct sx_val top, at, moved;

	CHECK(!sx_run(c, BASE + PUSH, NULL, 0, 0, 100));
	top = load(c, sx_arg(c, 0), 40, 8);
	at = top;
	moved = sx_term(top.term, 8);
	CHECK(find(c, SXF_STORE, &at, &(struct sx_val){ .term = sx_arg(c, 1), .known = 1 }));
	CHECK(find(c, SXF_STORE, &(struct sx_val){ .term = sx_arg(c, 0), .off = 40, .known = 1 },
		   &moved));
	sx_free(c);
}

/* bl is followed in a frame whose sp is the caller's (nothing pushed);
 * x19 survives the call, x0 is what it returned. */
TEST(symexec_arm64_follows_calls)
{
	struct sx_ctx *c = ctx();
	uint32_t spn = sx_intern(c, &(struct sx_node){ .kind = SXN_SP });
	struct sx_val sp = sx_term(spn, -16), at, v, after;
	const struct sx_fact *e;

	CHECK(!sx_run(c, BASE + CALLER, NULL, 0, 1, 100));
	e = find(c, SXF_ENTER, &sp, NULL);
	CHECK(e && e->frame == 1 && e->depth == 1 && e->pc == BASE + CALLER + 12);
	at = sx_term(sx_arg(c, 0), 72);
	v = sx_term(sx_arg(c, 0), 64);
	CHECK(find(c, SXF_STORE, &at, &v));
	after = sx_term(sx_arg(c, 0), 24);
	CHECK(find(c, SXF_LOAD, &after, NULL));
	sx_free(c);
}

/* Halfwords compared in registers are compared at 2 bytes; cbz and cbnz
 * compare with 0. */
TEST(symexec_arm64_narrow_compare_and_cbz)
{
	struct sx_ctx *c = ctx();
	struct sx_val a, b, j, zero = sx_const(0);
	const struct sx_fact *f;

	CHECK(!sx_run(c, BASE + NARROW, NULL, 0, 0, 100));
	a = load(c, sx_arg(c, 0), 62, 2);
	b = load(c, sx_arg(c, 3), 104, 2);
	f = find(c, SXF_CMP, &a, &b);
	CHECK(f && f->width == 2);
	f = find(c, SXF_CMP, &a, &zero);
	CHECK(f && f->width == 2);
	j = load(c, sx_arg(c, 0), 376, 8);
	f = find(c, SXF_CMP, &j, &zero);
	CHECK(f && f->width == 8);
	sx_free(c);
}

/* sbfiz of a 32-bit index by 3 is the index times 8. */
TEST(symexec_arm64_scaled_index)
{
	struct sx_ctx *c = ctx();
	struct sx_val base, at;

	CHECK(!sx_run(c, BASE + INDEX, NULL, 0, 0, 100));
	base = load(c, sx_arg(c, 0), 32, 8);
	at = base;
	at.idx = sx_arg(c, 1);
	at.scale = 8;
	at.off = -8;
	CHECK(find(c, SXF_LOAD, &at, NULL));
	sx_free(c);
}

/* movz + movk build a 64-bit constant; movn w of 0 stores ~0 as 4 bytes
 * (st_vmstate's ~LJ_VMST_INTERP). */
TEST(symexec_arm64_constants)
{
	struct sx_ctx *c = ctx();
	struct sx_val at = sx_term(sx_arg(c, 0), 0), k = sx_const((int64_t)0xfffc800000000000ull);
	struct sx_val vs = sx_term(sx_arg(c, 0), 184), m1 = sx_const(0xffffffff);
	const struct sx_fact *f;

	CHECK(!sx_run(c, BASE + CONSTS, NULL, 0, 0, 100));
	CHECK(find(c, SXF_STORE, &at, &k));
	f = find(c, SXF_STORE, &vs, &m1);
	CHECK(f && f->width == 4);
	sx_free(c);
}

/* The interpreter's entry: L->cframe = sp after "sub sp, sp, #208", the
 * previous cframe and L saved in the frame. */
TEST(symexec_arm64_vm_entry_frame)
{
	struct sx_ctx *c = ctx();
	uint32_t spn = sx_intern(c, &(struct sx_node){ .kind = SXN_SP });
	struct sx_val cf = sx_term(sx_arg(c, 0), 80), frame = sx_term(spn, -208), prev;
	struct sx_val L = sx_term(sx_arg(c, 0), 0);

	CHECK(!sx_run(c, BASE + VMENTRY, NULL, 0, 0, 100));
	CHECK(find(c, SXF_STORE, &cf, &frame));
	prev = load(c, sx_arg(c, 0), 80, 8);
	CHECK(find(c, SXF_STORE, &frame, &prev));
	CHECK(find(c, SXF_STORE, &(struct sx_val){ .term = spn, .off = -208 + 16, .known = 1 }, &L));
	CHECK(find(c, SXF_STORE, &(struct sx_val){ .term = spn, .off = -208 + 8, .known = 1 }, &L));
	sx_free(c);
}

/* Swept with x22 = G and x21 = PC: the handler is LOAD(G + 3984 + op*8),
 * jumped to through a register, and PC moves by 4. */
TEST(symexec_arm64_dispatch_sweep)
{
	struct sx_ctx *c = ctx();
	const int regs[2] = { 22, 21 };
	struct sx_val vals[2], t, ins;
	uint32_t g, pc;
	const struct sx_fact *f;

	CHECK(c);
	g = sx_invar(c, 0);
	pc = sx_invar(c, 1);
	vals[0] = sx_term(g, 0);
	vals[1] = sx_term(pc, 0);
	CHECK(!sx_sweep(c, BASE + DISPATCH, BASE + END, regs, vals, 2));
	ins = load(c, pc, 0, 4);
	CHECK(find(c, SXF_LOAD, &(struct sx_val){ .term = pc, .known = 1 }, &ins));
	t = sx_term(sx_intern(c, &(struct sx_node){
		.kind = SXN_LOAD, .width = 8,
		.addr = { .term = g, .idx = sx_any(c), .scale = 8, .off = 3984, .known = 1 } }), 0);
	f = find(c, SXF_JMPI, &t, NULL);
	CHECK(f && !f->mem);
	sx_free(c);
}

/*
 * test_symexec.c - the symbolic reading of machine code (record/symexec.c,
 * symexec_x86.c) on small x86-64 functions whose facts are known: the
 * shapes luajit_code.c's rules rely on (a comparison of an argument with
 * a load of a load, a spill through the frame, 32-bit references,
 * LuaJIT's pointer untagging, a second look past a call that never
 * returns, a followed call, a switch table).  The bytes were assembled
 * from the source beside each, with `as` (Intel syntax) at address 0.
 */
#include <stdint.h>
#include <string.h>

#include "record/symexec.h"
#include "tests/unit/unit.h"

/*
 * 0x00 pushthread: mov rax,[rdi+0x10]; cmp rdi,[rax+0xc0]; sete al;
 *                  movzx eax,al; ret
 * 0x12 spill:      push rbp; mov rbp,rsp; mov [rbp-8],rdi; mov rax,[rbp-8];
 *                  mov rax,[rax+0x28]; pop rbp; ret
 * 0x24 refs32:     mov eax,[rdi+8]; mov ecx,[rax+0x8c]; cmp rcx,rdi; ret
 * 0x31 untag:      mov rbp,[rsi-0x10]; shl rbp,17; shr rbp,17;
 *                  mov rbx,[rbp+0x20]; mov eax,[rbx]; ret
 * 0x44 noret:      mov rcx,rdi; test esi,esi; je 1f; call err;
 *                  1: mov rax,[rcx+0x10]; ret
 * 0x55 err:        ud2
 * 0x57 caller:     push rbx; mov rbx,rdi; lea rdi,[rbx+0x40]; call callee;
 *                  mov rax,[rbx+0x18]; pop rbx; ret
 * 0x6a callee:     mov [rdi+8],rdi; ret
 * 0x6f swtch:      cmp edi,2; ja 9f; mov eax,edi; lea rdx,[rip+table];
 *                  movsxd rax,[rdx+rax*4]; add rax,rdx; jmp rax
 *      c0..c2:     mov dword [rsi+0x100+4*k],k; ret     9: ret
 * 0xa8 table:      .long c0-table, c1-table, c2-table
 */
static const uint8_t code[] = {
	0x48, 0x8b, 0x47, 0x10, 0x48, 0x3b, 0xb8, 0xc0, 0x00, 0x00, 0x00, 0x0f,
	0x94, 0xc0, 0x0f, 0xb6, 0xc0, 0xc3, 0x55, 0x48, 0x89, 0xe5, 0x48, 0x89,
	0x7d, 0xf8, 0x48, 0x8b, 0x45, 0xf8, 0x48, 0x8b, 0x40, 0x28, 0x5d, 0xc3,
	0x8b, 0x47, 0x08, 0x8b, 0x88, 0x8c, 0x00, 0x00, 0x00, 0x48, 0x39, 0xf9,
	0xc3, 0x48, 0x8b, 0x6e, 0xf0, 0x48, 0xc1, 0xe5, 0x11, 0x48, 0xc1, 0xed,
	0x11, 0x48, 0x8b, 0x5d, 0x20, 0x8b, 0x03, 0xc3, 0x48, 0x89, 0xf9, 0x85,
	0xf6, 0x74, 0x05, 0xe8, 0x05, 0x00, 0x00, 0x00, 0x48, 0x8b, 0x41, 0x10,
	0xc3, 0x0f, 0x0b, 0x53, 0x48, 0x89, 0xfb, 0x48, 0x8d, 0x7b, 0x40, 0xe8,
	0x06, 0x00, 0x00, 0x00, 0x48, 0x8b, 0x43, 0x18, 0x5b, 0xc3, 0x48, 0x89,
	0x7f, 0x08, 0xc3, 0x83, 0xff, 0x02, 0x77, 0x33, 0x89, 0xf8, 0x48, 0x8d,
	0x15, 0x2b, 0x00, 0x00, 0x00, 0x48, 0x63, 0x04, 0x82, 0x48, 0x01, 0xd0,
	0xff, 0xe0, 0xc7, 0x86, 0x00, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
	0xc3, 0xc7, 0x86, 0x04, 0x01, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0xc3,
	0xc7, 0x86, 0x08, 0x01, 0x00, 0x00, 0x02, 0x00, 0x00, 0x00, 0xc3, 0xc3,
	0xde, 0xff, 0xff, 0xff, 0xe9, 0xff, 0xff, 0xff, 0xf4, 0xff, 0xff, 0xff,
};

enum { PUSHTHREAD = 0x00, SPILL = 0x12, REFS32 = 0x24, UNTAG = 0x31, NORET = 0x44,
       CALLER = 0x57, SWTCH = 0x6f };

/* The image is loaded at BASE: the table is read through img.read. */
#define BASE 0x400000

static int read_code(const void *obj, uint64_t vaddr, void *buf, size_t len)
{
	(void)obj;
	if (vaddr < BASE || vaddr - BASE > sizeof(code) || len > sizeof(code) - (vaddr - BASE))
		return -1;
	memcpy(buf, code + (vaddr - BASE), len);
	return 0;
}

static struct sx_ctx *ctx(void)
{
	static const struct sx_image img = {
		.code = code, .start = BASE, .end = BASE + sizeof(code), .read = read_code,
	};

	return sx_new(&img, &sx_isa_x86_64);
}

/* LOAD(base_term + off, w) as a value (interned in c). */
static struct sx_val load(struct sx_ctx *c, uint32_t base, int64_t off, int w)
{
	struct sx_node n = { .kind = SXN_LOAD, .width = (uint8_t)w,
			     .addr = sx_term(base, off) };

	return sx_term(sx_intern(c, &n), 0);
}

/* The first fact of kind with a == *a (and b == *b, unless NULL). */
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

TEST(symexec_compare_with_load_of_load)
{
	struct sx_ctx *c = ctx();
	struct sx_val L, g, m;

	CHECK(c);
	CHECK(!sx_run(c, BASE + PUSHTHREAD, NULL, 0, 0, 100));
	L = sx_term(sx_arg(c, 0), 0);
	g = load(c, sx_arg(c, 0), 0x10, 8);
	m = load(c, g.term, 0xc0, 8);
	CHECK(find(c, SXF_CMP, &L, &m));
	sx_free(c);
}

/* A value spilled to the frame and read back is the same value. */
TEST(symexec_spill_through_frame)
{
	struct sx_ctx *c = ctx();
	struct sx_val a = sx_term(sx_arg(c, 0), 0x28);

	CHECK(!sx_run(c, BASE + SPILL, NULL, 0, 0, 100));
	CHECK(find(c, SXF_LOAD, &a, NULL));
	sx_free(c);
}

/* 32-bit references: 4-byte loads, and a 32-bit register is its value. */
TEST(symexec_32bit_refs)
{
	struct sx_ctx *c = ctx();
	struct sx_val g, m, L;

	CHECK(!sx_run(c, BASE + REFS32, NULL, 0, 0, 100));
	g = load(c, sx_arg(c, 0), 8, 4);
	m = load(c, g.term, 0x8c, 4);
	L = sx_term(sx_arg(c, 0), 0);
	CHECK(find(c, SXF_CMP, &m, &L));
	sx_free(c);
}

/* shl 17; shr 17 is LuaJIT's untagging of a GC64 pointer: the pointer. */
TEST(symexec_untag_keeps_pointer)
{
	struct sx_ctx *c = ctx();
	struct sx_val fn, pc;

	CHECK(!sx_run(c, BASE + UNTAG, NULL, 0, 0, 100));
	fn = load(c, sx_arg(c, 1), -0x10, 8);
	pc = load(c, fn.term, 0x20, 8);
	CHECK(find(c, SXF_LOAD, &pc, NULL));
	sx_free(c);
}

/* The first path reaches the load after a call that clobbered rcx; the
 * jump around the call brings rcx = L there too, and is read as well. */
TEST(symexec_second_look_past_noreturn)
{
	struct sx_ctx *c = ctx();
	struct sx_val a = sx_term(sx_arg(c, 0), 0x10);

	CHECK(!sx_run(c, BASE + NORET, NULL, 0, 0, 100));
	CHECK(find(c, SXF_LOAD, &a, NULL));
	sx_free(c);
}

/* A followed call is walked in a frame of its own, with the caller's
 * arguments; its facts say so, and the caller goes on after it. */
TEST(symexec_follows_calls)
{
	struct sx_ctx *c = ctx();
	struct sx_val arg = sx_term(sx_arg(c, 0), 0x40), at = sx_term(sx_arg(c, 0), 0x48);
	struct sx_val after = sx_term(sx_arg(c, 0), 0x18);
	const struct sx_fact *st, *enter = NULL;
	size_t n;
	const struct sx_fact *f;

	CHECK(!sx_run(c, BASE + CALLER, NULL, 0, 1, 100));
	CHECK(find(c, SXF_LOAD, &after, NULL));
	st = find(c, SXF_STORE, &at, &arg);
	CHECK(st && st->depth == 1 && st->frame != 0);
	f = sx_facts(c, &n);
	for (size_t i = 0; i < n; i++)
		if (f[i].kind == SXF_ENTER && f[i].frame == st->frame)
			enter = &f[i];
	CHECK(enter && enter->parent == 0 && enter->pc == BASE + CALLER + 8);
	sx_clear_facts(c);
	/* depth 0: the call is not followed */
	CHECK(!sx_run(c, BASE + CALLER, NULL, 0, 0, 100));
	CHECK(!find(c, SXF_STORE, &at, &arg));
	sx_free(c);
}

/* A switch's jump table: every case is walked, no further. */
TEST(symexec_switch_table)
{
	struct sx_ctx *c = ctx();

	CHECK(!sx_run(c, BASE + SWTCH, NULL, 0, 0, 100));
	for (int k = 0; k < 3; k++) {
		struct sx_val a = sx_term(sx_arg(c, 1), 0x100 + 4 * k), v = sx_const(k);

		CHECK(find(c, SXF_STORE, &a, &v));
	}
	sx_free(c);
}

/* A budget stops the walk; code outside the image is not read. */
TEST(symexec_bounds)
{
	struct sx_ctx *c = ctx();

	CHECK(sx_run(c, BASE + sizeof(code), NULL, 0, 0, 100) < 0);
	CHECK(sx_run(c, BASE - 1, NULL, 0, 0, 100) < 0);
	CHECK(!sx_run(c, BASE + SWTCH, NULL, 0, 0, 3));
	CHECK(sx_steps(c) == 3);
	sx_free(c);
}

/* Values: a term times a constant becomes an index; terms add. */
TEST(symexec_values)
{
	struct sx_ctx *c = ctx();
	struct sx_val a = sx_term(sx_arg(c, 0), 8), b = sx_term(sx_arg(c, 1), 0), k = sx_const(3);
	struct sx_val r = sx_mul(&b, 4), s = sx_add(&a, &r), t = sx_add(&s, &k);
	int64_t off;

	CHECK(r.idx == sx_arg(c, 1) && r.scale == 4 && !r.term);
	CHECK(s.term == sx_arg(c, 0) && s.idx == sx_arg(c, 1) && s.off == 8);
	CHECK(t.off == 11 && !sx_is_term(&t, sx_arg(c, 0), &off));
	CHECK(sx_is_term(&a, sx_arg(c, 0), &off) && off == 8);
	CHECK(!sx_add(&a, &(struct sx_val){ 0 }).known);
	sx_free(c);
}

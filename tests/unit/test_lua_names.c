/*
 * test_lua_names.c - naming Lua functions from their caller's call site
 * (report/lua_names.c), on hand-assembled LuaJIT bytecode, as LuaJIT's
 * lj_debug_funcname() would name them.
 */
#include <string.h>

#include "report/luajit_protos.h"
#include "lib/lua_bc.h"
#include "tests/unit/unit.h"

/* An instruction in the AD format (OP, A, D) or ABC format. */

static const struct lp_proto_kstr kstr[] = { { 0, "work" }, { 1, "M" }, { 2, "field_fn" } };
static const char *const uvnames[] = { "helper" };

static struct lp_proto proto(const uint32_t *bc, uint32_t n)
{
	struct lp_proto p = { .id = 1, .chunkname = "@t.lua", .firstline = 1,
			      .nbc = n, .bc = bc, .nkstr = 3, .kstr = kstr,
			      .nuv = 1, .uvnames = uvnames };
	return p;
}

TEST(lua_name_global)
{
	/* work(): GGET 0 "work"; CALL 0 1 1 */
	static const uint32_t bc[] = { LBC_AD(LBC_FUNCF, 2, 0), LBC_AD(LBC_GGET, 0, 0),
				       LBC_ABC(LBC_CALL, 0, 1, 1) };
	struct lp_proto p = proto(bc, 3);
	char name[64];

	/* The walker's pc is the position after the CALL. */
	CHECK(lua_call_name(&p, 3, 1, name, sizeof(name)) &&
	      !strcmp(lua_call_name(&p, 3, 1, name, sizeof(name)), "global"));
	CHECK(!strcmp(name, "work"));
}

TEST(lua_name_field_and_method)
{
	/* M.field_fn(): GGET 0 "M"; TGETS 0 0 "field_fn"; CALL 0 1 1
	 * M:field_fn(): GGET 0 "M"; MOV 2 0; TGETS 0 0 "field_fn"; CALL 0 1 2
	 * (with two-slot frames the object goes to A + 2) */
	static const uint32_t field[] = { LBC_AD(LBC_FUNCF, 2, 0), LBC_AD(LBC_GGET, 0, 1),
					  LBC_ABC(LBC_TGETS, 0, 0, 2), LBC_ABC(LBC_CALL, 0, 1, 1) };
	static const uint32_t method[] = { LBC_AD(LBC_FUNCF, 3, 0), LBC_AD(LBC_GGET, 0, 1),
					   LBC_AD(LBC_MOV, 2, 0), LBC_ABC(LBC_TGETS, 0, 0, 2),
					   LBC_ABC(LBC_CALL, 0, 1, 2) };
	struct lp_proto p = proto(field, 4);
	char name[64];

	CHECK(!strcmp(lua_call_name(&p, 4, 1, name, sizeof(name)), "field"));
	CHECK(!strcmp(name, "field_fn"));
	p = proto(method, 5);
	CHECK(!strcmp(lua_call_name(&p, 5, 1, name, sizeof(name)), "method"));
	CHECK(!strcmp(name, "field_fn"));
	/* With one-slot frames (32-bit refs) the same code is not a method. */
	CHECK(!strcmp(lua_call_name(&p, 5, 0, name, sizeof(name)), "field"));
}

TEST(lua_name_local_upvalue_and_mov)
{
	/* varinfo: local "fn" in slot 0 from pc 1 for 10 instructions. */
	static const uint8_t varinfo[] = { 'f', 'n', 0, 1, 10, 0 };
	static const uint32_t local[] = { LBC_AD(LBC_FUNCF, 2, 0), LBC_AD(LBC_KPRI, 1, 0),
					  LBC_ABC(LBC_CALL, 0, 1, 1) };
	/* helper(): UGET 1 0; MOV 0 1; CALL 0 1 1 -- follows the MOV */
	static const uint32_t upv[] = { LBC_AD(LBC_FUNCF, 2, 0), LBC_AD(LBC_UGET, 1, 0),
					LBC_AD(LBC_MOV, 0, 1), LBC_ABC(LBC_CALL, 0, 1, 1) };
	struct lp_proto p = proto(local, 3);
	char name[64];

	p.varinfo = varinfo;
	p.varinfo_len = sizeof(varinfo);
	CHECK(!strcmp(lua_call_name(&p, 3, 1, name, sizeof(name)), "local"));
	CHECK(!strcmp(name, "fn"));
	p = proto(upv, 4);
	CHECK(!strcmp(lua_call_name(&p, 4, 1, name, sizeof(name)), "upvalue"));
	CHECK(!strcmp(name, "helper"));
}

TEST(lua_name_metamethod_and_unknown)
{
	/* A TGETV calling __index; a call whose slot was filled by a call. */
	static const uint32_t mm[] = { LBC_AD(LBC_FUNCF, 2, 0), LBC_ABC(LBC_TGETV, 0, 1, 2) };
	static const uint32_t anon[] = { LBC_AD(LBC_FUNCF, 2, 0), LBC_ABC(LBC_CALL, 0, 2, 1),
					 LBC_ABC(LBC_CALL, 0, 1, 1) };
	struct lp_proto p = proto(mm, 2);
	char name[64];

	CHECK(!strcmp(lua_call_name(&p, 2, 1, name, sizeof(name)), "metamethod"));
	CHECK(!strcmp(name, "__index"));
	p = proto(anon, 3);
	CHECK(!lua_call_name(&p, 3, 1, name, sizeof(name)));
}

TEST(lua_name_bad_input)
{
	/* Out-of-range pcs, unknown opcodes, a constant that is not there,
	 * an upvalue index past the names and a MOV cycle give no name. */
	static const uint32_t bc[] = { LBC_AD(LBC_FUNCF, 2, 0), LBC_AD(LBC_GGET, 0, 77),
				       LBC_ABC(LBC_CALL, 0, 1, 1), 0xff };
	static const uint32_t cyc[] = { LBC_AD(LBC_FUNCF, 2, 0), LBC_AD(LBC_MOV, 0, 1),
					LBC_AD(LBC_MOV, 1, 0), LBC_ABC(LBC_CALL, 0, 1, 1) };
	static const uint32_t uv[] = { LBC_AD(LBC_FUNCF, 2, 0), LBC_AD(LBC_UGET, 0, 9),
				       LBC_ABC(LBC_CALL, 0, 1, 1) };
	struct lp_proto p = proto(bc, 4);
	char name[64];

	CHECK(!lua_call_name(&p, 0, 1, name, sizeof(name)));
	CHECK(!lua_call_name(&p, 99, 1, name, sizeof(name)));
	CHECK(!lua_call_name(&p, 4, 1, name, sizeof(name)));
	CHECK(!lua_call_name(&p, 3, 1, name, sizeof(name)));
	CHECK(!lua_call_name(NULL, 3, 1, name, sizeof(name)));
	p = proto(cyc, 4);
	CHECK(!lua_call_name(&p, 4, 1, name, sizeof(name)));
	p = proto(uv, 3);
	CHECK(!lua_call_name(&p, 3, 1, name, sizeof(name)));
}

/* Chunk names as LuaJIT's lj_debug_shortname gives them in tracebacks. */
TEST(lua_chunk_labels_as_luajit)
{
	char buf[LUA_CHUNK_LABEL_MAX];

	CHECK(!strcmp(lua_chunk_label("@/srv/app.lua", buf, sizeof(buf)), "/srv/app.lua"));
	CHECK(!strcmp(lua_chunk_label("=stdin", buf, sizeof(buf)), "=stdin"));
	/* A string chunk is named by its text, up to a control character. */
	CHECK(!strcmp(lua_chunk_label("<python>", buf, sizeof(buf)), "[string \"<python>\"]"));
	CHECK(!strcmp(lua_chunk_label("return 1", buf, sizeof(buf)), "[string \"return 1\"]"));
	CHECK(!strcmp(lua_chunk_label("", buf, sizeof(buf)), "[string \"\"]"));
	CHECK(!strcmp(lua_chunk_label("local x = 1\nreturn x", buf, sizeof(buf)),
		      "[string \"local x = 1...\"]"));
	CHECK(!strcmp(lua_chunk_label("a\tb", buf, sizeof(buf)), "[string \"a...\"]"));
	/* 48 bytes fit; 49 are cut to 45 and "...". */
	CHECK(!strcmp(lua_chunk_label("0123456789012345678901234567890123456789012345xy",
				      buf, sizeof(buf)),
		      "[string \"0123456789012345678901234567890123456789012345xy\"]"));
	CHECK(!strcmp(lua_chunk_label("0123456789012345678901234567890123456789012345xyz",
				      buf, sizeof(buf)),
		      "[string \"012345678901234567890123456789012345678901234...\"]"));
	CHECK(strlen(buf) < LUA_CHUNK_LABEL_MAX);
}

/* Bytecode of builds with the bit operator opcodes (LuaJIT 2.1 since
 * 2026-07) and of older ones, told apart by the function header. */
TEST(lua_bc_both_numberings)
{
	uint32_t newer[] = { LBC_AD(LBC_JFUNCV, 3, 7), LBC_AD(LBC_BAND, 0, 1),
			     LBC_AD(LBC_RET1, 0, 2) };
	uint32_t older[] = { LBC_AD(LBC_FUNCV - LBC_NBITOP, 3, 0),
			     LBC_AD(LBC_JFORL - 0, 1, 4),
			     LBC_AD(LBC_JFUNCF - LBC_NBITOP, 2, 9),
			     LBC_AD(LBC__MAX - LBC_NBITOP, 0, 0) };
	uint32_t junk[] = { LBC_AD(LBC_MOV, 0, 1), LBC_AD(LBC_RET1, 0, 2) };

	CHECK(lua_bc_numbering(newer[0]) == 1);
	CHECK(lua_bc_numbering(older[0]) == 0);
	CHECK(lua_bc_numbering(junk[0]) == -1);
	CHECK(lua_bc_numbering(LBC_AD(LBC_FUNCC, 0, 0)) == -1);
	lua_bc_norm(newer, 3, 1);
	CHECK(newer[0] == LBC_AD(LBC_JFUNCV, 3, 7) && LBC_OP(newer[1]) == LBC_BAND);
	lua_bc_norm(older, 4, 0);
	CHECK(older[0] == LBC_AD(LBC_FUNCV, 3, 0));
	CHECK(older[1] == LBC_AD(LBC_JFORL, 1, 4)); /* below the bit operators */
	CHECK(older[2] == LBC_AD(LBC_JFUNCF, 2, 9));
	CHECK(LBC_OP(older[3]) == 0xff && LBC_D(older[3]) == 0); /* none in 2.1 */
	lua_bc_norm(junk, 2, -1);
	CHECK(LBC_OP(junk[0]) == 0xff && LBC_OP(junk[1]) == 0xff && LBC_D(junk[1]) == 2);
}

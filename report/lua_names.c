/*
 * lua_names.c - names a Lua function the way LuaJIT names it in a
 * traceback: from its caller's call site (lj_debug_funcname,
 * lj_debug_slotname and debug_varname in LuaJIT's lj_debug.c), but
 * offline, from the prototype the recorder wrote into the trace.
 *
 * The call instruction says which slot held the function.  If a local
 * variable lives in that slot at that point, the function is that local;
 * otherwise the instructions before the call tell what last wrote the
 * slot: GGET (a global), TGETS (a field, or a method when the object was
 * copied into the next slot just before: obj:m()), UGET (an upvalue), or
 * MOV (follow the source slot).  Anything else gives no name.
 */
#include <stdio.h>
#include <string.h>

#include "report/luajit_protos.h"
#include "lib/lua_bc.h"

/* LuaJIT's internal names for hidden loop variables (VARNAMEDEF). */
static const char *const varname_internal[] = {
	NULL, "(for index)", "(for limit)", "(for step)",
	"(for generator)", "(for state)", "(for control)",
};
#define VARNAME_MAX 7

/* Unsigned LEB128, as lj_buf_ruleb128 reads it; 0 at the end of data. */
static uint32_t read_uleb(const uint8_t **p, const uint8_t *end)
{
	uint32_t v = 0;
	int shift = 0;

	while (*p < end) {
		uint8_t b = *(*p)++;

		if (shift < 32)
			v |= (uint32_t)(b & 0x7f) << shift;
		shift += 7;
		if (!(b & 0x80))
			break;
	}
	return v;
}

/* The local variable in `slot` at instruction pc, or NULL. */
static const char *varname(const struct lp_proto *pt, uint32_t pc, uint32_t slot)
{
	const uint8_t *p = pt->varinfo, *end = p ? p + pt->varinfo_len : NULL;
	uint32_t lastpc = 0;

	while (p && p < end) {
		const char *name = (const char *)p;
		uint32_t vn = *p, startpc, endpc;

		if (vn < VARNAME_MAX) {
			if (vn == 0)
				break; /* VARNAME_END */
			name = varname_internal[vn];
		} else {
			while (p < end && *p)
				p++; /* over the name */
		}
		p++;
		lastpc = startpc = lastpc + read_uleb(&p, end);
		if (startpc > pc)
			break;
		endpc = startpc + read_uleb(&p, end);
		if (pc < endpc && slot-- == 0)
			return name;
	}
	return NULL;
}

static const char *kstr(const struct lp_proto *pt, uint32_t index)
{
	for (uint32_t i = 0; i < pt->nkstr; i++)
		if (pt->kstr[i].index == index)
			return pt->kstr[i].str;
	return NULL;
}

static const char *named(char *buf, size_t len, const char *name, const char *kind)
{
	if (!name)
		return NULL;
	snprintf(buf, len, "%s", name);
	return kind;
}

/* lj_debug_slotname: what wrote `slot` before instruction ip. */
static const char *slotname(const struct lp_proto *pt, uint32_t ip, uint32_t slot,
			    int fr2, char *buf, size_t len)
{
	/* Each MOV moves to another slot; a chain longer than the function
	 * is a loop in corrupt bytecode. */
	for (uint32_t hops = 0; hops <= pt->nbc; hops++) {
		const char *lname = varname(pt, ip, slot);
		uint32_t i = ip, restart = 0;

		if (lname)
			return named(buf, len, lname, "local");
		while (!restart && --i > 0) {
			uint32_t ins = pt->bc[i], op = LBC_OP(ins), ra = LBC_A(ins);

			if (op >= LBC__MAX)
				return NULL;
			if (lua_bc_info[op].amode == LBC_A_BASE) {
				if (slot >= ra && (op != LBC_KNIL || slot <= LBC_D(ins)))
					return NULL;
			} else if (lua_bc_info[op].amode == LBC_A_DST && ra == slot) {
				switch (op) {
				case LBC_MOV:
					slot = LBC_D(ins);
					ip = i;
					restart = 1;
					break;
				case LBC_GGET:
					return named(buf, len, kstr(pt, LBC_D(ins)), "global");
				case LBC_TGETS: {
					uint32_t prev = pt->bc[i - 1];
					const char *kind = "field";

					if (LBC_OP(prev) == LBC_MOV &&
					    LBC_A(prev) == ra + 1 + (uint32_t)fr2 &&
					    LBC_D(prev) == LBC_B(ins))
						kind = "method";
					return named(buf, len, kstr(pt, LBC_C(ins)), kind);
				}
				case LBC_UGET:
					if (LBC_D(ins) >= pt->nuv)
						return NULL;
					return named(buf, len, pt->uvnames[LBC_D(ins)], "upvalue");
				default:
					return NULL;
				}
			}
		}
		if (!restart)
			return NULL;
	}
	return NULL;
}

const char *lua_call_name(const struct lp_proto *caller, uint32_t pc, int fr2,
			  char *buf, size_t len)
{
	uint32_t ins, op, slot;

	if (!caller || pc == 0 || pc > caller->nbc)
		return NULL;
	ins = caller->bc[pc - 1];
	op = LBC_OP(ins);
	if (op >= LBC__MAX || !lua_bc_info[op].mm)
		return NULL;
	if (strcmp(lua_bc_info[op].mm, "__call"))
		return named(buf, len, lua_bc_info[op].mm, "metamethod");
	slot = LBC_A(ins);
	if (op == LBC_ITERC) {
		if (slot < 3)
			return NULL;
		slot -= 3;
	}
	return slotname(caller, pc - 1, slot, fr2, buf, len);
}

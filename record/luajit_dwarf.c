/*
 * luajit_dwarf.c - a LuaJIT build's struct offsets (struct lj_layout)
 * read from its DWARF debug info, for builds the built-in table does not
 * know: another release, other defines, another compiler.  Whoever built
 * LuaJIT with -g, or installed its debug package, needs no offsets file.
 *
 * The debug info is the object's own .debug_info or a separate debug file
 * found the way gdb finds one: /usr/lib/debug/.build-id/xx/rest.debug from
 * the object's build-id note, then the name in its .gnu_debuglink in the
 * object's directory, its .debug/ subdirectory and /usr/lib/debug/<dir>/.
 * A separate file is believed only if it carries the object's build-id
 * and, found through the debuglink, the CRC the link names: a stale debug
 * file describes another build.
 *
 * The offsets are those of the members of LuaJIT's own structs
 * (global_State, lua_State, GCfuncC/GCfuncL, GCproto, GCstr, GG_State,
 * and for compiled code jit_State and GCtrace), taken from the unit that
 * defines GG_State: in an amalgamated build that is the one unit holding
 * all of them, and preferring it keeps a same-named struct of some other
 * code in the object (PUC Lua has a global_State too) out of the layout.
 * Every offset the walker uses comes from there, none from a built-in row
 * of the same variant: forks such as tarantool's move them all.  The
 * exceptions are the C frame's slots, macros of lj_frame.h, which leave no
 * trace in DWARF: the built-in row with the same reference width gives
 * them here, and the recorder takes them from the build's code where it
 * can read it (LUAJIT_NO_UNWIND makes the frame 96 bytes, not 80).  Without jit_State or GCtrace (a build
 * without the JIT) traces are recorded by number only.  The fast
 * functions' names come from lj_ff.h's enum, FF_string_format naming
 * "string.format", so that a fork's own numbering names its builtins.
 *
 * The object is whatever file a target process mapped, so every file read
 * here may be hostile: debug files are opened only if regular (a FIFO would
 * block the recorder), read rather than mapped (a file truncated under us
 * would be SIGBUS), DIE walks are bounded in depth and count and must move
 * forward, and every offset must fit its lj_layout field.  A layout from
 * DWARF is still only a candidate: the walker and luajit_vm.c validate it
 * on the live process like any other.
 */
#include <dwarf.h>
#include <elfutils/libdw.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lib/debuginfo.h"
#include "record/luajit.h"
#include "record/luajit_arch.h"

#define MAX_DEPTH 8            /* typedef chains, anonymous members, imports */
#define MAX_DIES (1ul << 24)   /* DIEs visited in one search */

/* The types the layout is read from, by their C names. */
enum lj_dwarf_type {
	T_GG,
	T_G,
	T_L,
	T_FUNCC,
	T_FUNCL,
	T_FUNC,
	T_PROTO,
	T_STR,
	T_GCREF,
	T_JIT,
	T_TRACE,
	T_SNAP,
	T_COUNT,
};

static const char *const type_names[T_COUNT] = {
	[T_GG] = "GG_State",   [T_G] = "global_State", [T_L] = "lua_State",
	[T_FUNCC] = "GCfuncC", [T_FUNCL] = "GCfuncL",  [T_FUNC] = "GCfunc",
	[T_PROTO] = "GCproto", [T_STR] = "GCstr",      [T_GCREF] = "GCRef",
	[T_JIT] = "jit_State", [T_TRACE] = "GCtrace", [T_SNAP] = "SnapShot",
};

#define FF_MAX 256 /* fast function ids fit the walker's u8 */

/* What one search found: the definition of each type, resolved through
 * typedefs, and the fast-function ids and names of lj_ff.h's enum (the
 * names point into libdw's data: valid while the Dwarf is open). */
struct lj_types {
	Dwarf_Die die[T_COUNT];
	bool have[T_COUNT];
	bool have_resume, have_wrap_aux;
	uint8_t ff_resume, ff_wrap_aux;
	const char *ff[FF_MAX]; /* "FF_string_format" by id */
	uint32_t nff;           /* 0: the enum was not found */
};

/* The lj_layout fields that are a member's offset in one of the types
 * (bpf/luajit_layout.h's list, from = M), by group: VM fields must all be there;
 * JIT fields (compiled traces) and SNAP fields (a trace's snapshots, each
 * of the width luajit_snaps.c reads: a u16 mapofs and no mcofs before
 * 2020) are taken all or none. */
enum member_group { MG_VM, MG_JIT, MG_SNAP };

struct member_field {
	enum member_group group;
	enum lj_dwarf_type type;
	const char *member;
	size_t field; /* a __u16 of struct lj_layout */
	unsigned width; /* the member's size, 0: any */
};

#define MEMBER_FIELD(type, name, group, from, str, member, width, ...) \
	MEMBER_FIELD_##from(name, group, str, member, width)
#define MEMBER_FIELD_M(f, g, t, m, w) \
	{ MG_##g, T_##t, #m, offsetof(struct lj_layout, f), w },
/* The other kinds are fill_layout()'s, trace_layout()'s and
 * snap_layout()'s code: sizes, GG_State's shape, flags, the C frame and
 * the fast function ids. */
#define MEMBER_FIELD_SIZE(f, g, t, m, w)
#define MEMBER_FIELD_GG(f, g, t, m, w)
#define MEMBER_FIELD_FLAGS(f, g, t, m, w)
#define MEMBER_FIELD_FRAME(f, g, t, m, w)
#define MEMBER_FIELD_FF(f, g, t, m, w)
#define MEMBER_FIELD_NONE(f, g, t, m, w)
static const struct member_field member_fields[] = {
	LJ_LAYOUTDEF(MEMBER_FIELD)
};
#undef MEMBER_FIELD
#undef MEMBER_FIELD_M
#undef MEMBER_FIELD_SIZE
#undef MEMBER_FIELD_GG
#undef MEMBER_FIELD_FLAGS
#undef MEMBER_FIELD_FRAME
#undef MEMBER_FIELD_FF
#undef MEMBER_FIELD_NONE
#define NMEMBER_FIELDS (sizeof(member_fields) / sizeof(member_fields[0]))

/* ---- finding the debug info ------------------------------------------- */

/* The file holding object's DWARF, open in *f (lib/debuginfo.h): 0,
 * -ENOENT if neither the object nor a debug file of it has any, or
 * -errno if the object cannot be read as ELF. */
static int find_debug_info(const char *object, struct lp_debug_file *f)
{
	struct lp_debug_file obj;
	int err;

	err = lp_debug_file_open(&obj, object);
	if (err)
		return err;
	if (lp_has_debug_info(obj.elf)) {
		*f = obj;
		return 0;
	}
	err = lp_debug_file_find(obj.elf, object, "", f);
	lp_debug_file_close(&obj);
	return err;
}

/* ---- reading types ------------------------------------------------------ */

/* The struct or union definition die names, through typedefs and
 * qualifiers: 0, or -ENOENT for anything else or a mere declaration. */
static int resolve_aggregate(Dwarf_Die *die, Dwarf_Die *out)
{
	Dwarf_Die cur = *die, next;
	Dwarf_Attribute attr;

	for (int i = 0; i < MAX_DEPTH; i++) {
		int tag = dwarf_tag(&cur);

		if (tag == DW_TAG_structure_type || tag == DW_TAG_union_type) {
			if (dwarf_hasattr_integrate(&cur, DW_AT_declaration) ||
			    dwarf_bytesize(&cur) <= 0)
				return -ENOENT;
			*out = cur;
			return 0;
		}
		if (tag != DW_TAG_typedef && tag != DW_TAG_const_type &&
		    tag != DW_TAG_volatile_type)
			return -ENOENT;
		if (!dwarf_attr_integrate(&cur, DW_AT_type, &attr) ||
		    !dwarf_formref_die(&attr, &next))
			return -ENOENT;
		cur = next;
	}
	return -ENOENT;
}

static bool next_sibling(Dwarf_Die *die)
{
	Dwarf_Die next;

	if (dwarf_siblingof(die, &next) != 0)
		return false;
	*die = next;
	return true;
}

static int type_index(const char *name)
{
	for (int i = 0; i < T_COUNT; i++)
		if (!strcmp(type_names[i], name))
			return i;
	return -1;
}

/* Records the fast-function ids and names if this enum is lj_ff.h's
 * FastFunc: enumerators FF_LUA_, FF_C_, FF_assert ... FF__MAX. */
static void scan_enum(Dwarf_Die *e, struct lj_types *ty, unsigned long *budget)
{
	const char *ff[FF_MAX] = { 0 };
	uint32_t nff = 0;
	bool fastfunc = false;
	Dwarf_Die c;
	Dwarf_Off last = dwarf_dieoffset(e);

	if (dwarf_child(e, &c) != 0)
		return;
	do {
		Dwarf_Attribute attr;
		Dwarf_Word v;
		const char *name;

		if (dwarf_dieoffset(&c) <= last || !(*budget)--)
			return;
		last = dwarf_dieoffset(&c);
		name = dwarf_diename(&c);
		if (dwarf_tag(&c) != DW_TAG_enumerator || !name ||
		    !dwarf_attr(&c, DW_AT_const_value, &attr) ||
		    dwarf_formudata(&attr, &v) || v > UINT8_MAX)
			continue;
		if (!strncmp(name, "FF_", 3) && strcmp(name, "FF__MAX")) {
			ff[v] = name;
			if (v + 1 > nff)
				nff = (uint32_t)v + 1;
		}
		fastfunc |= !strcmp(name, "FF_coroutine_resume");
		if (!ty->have_resume && !strcmp(name, "FF_coroutine_resume")) {
			ty->ff_resume = (uint8_t)v;
			ty->have_resume = true;
		} else if (!ty->have_wrap_aux && !strcmp(name, "FF_coroutine_wrap_aux")) {
			ty->ff_wrap_aux = (uint8_t)v;
			ty->have_wrap_aux = true;
		}
	} while (next_sibling(&c));
	if (fastfunc && !ty->nff) {
		memcpy(ty->ff, ff, sizeof(ff));
		ty->nff = nff;
	}
}

/* Looks through the top-level DIEs of a unit (and of the partial units
 * it imports, as dwz leaves them) for the types and the enum.  Offsets
 * must grow from one sibling to the next, so a hostile DW_AT_sibling
 * cannot send the walk round in circles. */
static void scan_unit(Dwarf_Die *unit, struct lj_types *ty, int depth,
		      unsigned long *budget)
{
	Dwarf_Die c, def;
	Dwarf_Off last = dwarf_dieoffset(unit);

	if (depth > MAX_DEPTH || dwarf_child(unit, &c) != 0)
		return;
	do {
		Dwarf_Attribute attr;
		const char *name;
		int i;

		if (dwarf_dieoffset(&c) <= last || !(*budget)--)
			return;
		last = dwarf_dieoffset(&c);
		switch (dwarf_tag(&c)) {
		case DW_TAG_structure_type:
		case DW_TAG_union_type:
		case DW_TAG_typedef:
			name = dwarf_diename(&c);
			i = name ? type_index(name) : -1;
			if (i >= 0 && !ty->have[i] && !resolve_aggregate(&c, &def)) {
				ty->die[i] = def;
				ty->have[i] = true;
			}
			break;
		case DW_TAG_enumeration_type:
			scan_enum(&c, ty, budget);
			break;
		case DW_TAG_imported_unit:
			if (dwarf_attr(&c, DW_AT_import, &attr) &&
			    dwarf_formref_die(&attr, &def))
				scan_unit(&def, ty, depth + 1, budget);
			break;
		}
	} while (next_sibling(&c));
}

/* Everything a layout can use, jit_State and GCtrace included: an
 * amalgamated build has them all in GG_State's unit, other builds may
 * define GCtrace only in the units that use it. */
static bool types_complete(const struct lj_types *ty)
{
	for (int i = 0; i < T_COUNT; i++)
		if (!ty->have[i] && i != T_FUNC && i != T_FUNCC && i != T_FUNCL &&
		    i != T_TRACE && i != T_SNAP)
			return false;
	if (!ty->have[T_TRACE] || !ty->have[T_SNAP])
		return false; /* worth looking on for, not required */
	return (ty->have[T_FUNCC] && ty->have[T_FUNCL]) || ty->have[T_FUNC];
}

/* Fills in what dst lacks from src. */
static void merge_types(struct lj_types *dst, const struct lj_types *src)
{
	for (int i = 0; i < T_COUNT; i++) {
		if (!dst->have[i] && src->have[i]) {
			dst->die[i] = src->die[i];
			dst->have[i] = true;
		}
	}
	if (!dst->have_resume && src->have_resume) {
		dst->ff_resume = src->ff_resume;
		dst->have_resume = true;
	}
	if (!dst->have_wrap_aux && src->have_wrap_aux) {
		dst->ff_wrap_aux = src->ff_wrap_aux;
		dst->have_wrap_aux = true;
	}
	if (!dst->nff && src->nff) {
		memcpy(dst->ff, src->ff, sizeof(dst->ff));
		dst->nff = src->nff;
	}
}

/* Every type from the first unit defining GG_State; what that unit lacks
 * from the other units.  0, or -ENOENT if no unit defines GG_State. */
static int find_types(Dwarf *dbg, struct lj_types *ty)
{
	struct lj_types any, unit;
	unsigned long budget = MAX_DIES;
	Dwarf_Off off = 0, next;
	size_t hsize;
	bool anchored = false;

	memset(ty, 0, sizeof(*ty));
	memset(&any, 0, sizeof(any));
	while (budget && dwarf_nextcu(dbg, off, &next, &hsize, NULL, NULL, NULL) == 0 &&
	       next > off) {
		Dwarf_Die cu;

		if (dwarf_offdie(dbg, off + hsize, &cu)) {
			memset(&unit, 0, sizeof(unit));
			scan_unit(&cu, &unit, 0, &budget);
			if (!anchored && unit.have[T_GG]) {
				*ty = unit;
				anchored = true;
			}
			merge_types(&any, &unit);
			if (anchored && types_complete(ty) && ty->have_resume &&
			    ty->have_wrap_aux && ty->nff)
				return 0;
		}
		off = next;
	}
	if (!anchored)
		return -ENOENT;
	merge_types(ty, &any);
	return 0;
}

/* A member's offset from DW_AT_data_member_location: a constant, or the
 * DW_OP_plus_uconst expression of DWARF 2.  Union members have none. */
static int member_location(Dwarf_Die *m, uint64_t *off)
{
	Dwarf_Attribute attr;
	Dwarf_Word w;
	Dwarf_Op *ops;
	size_t nops;

	if (!dwarf_attr_integrate(m, DW_AT_data_member_location, &attr)) {
		*off = 0;
		return 0;
	}
	switch (dwarf_whatform(&attr)) {
	case DW_FORM_data1:
	case DW_FORM_data2:
	case DW_FORM_data4:
	case DW_FORM_data8:
	case DW_FORM_udata:
	case DW_FORM_implicit_const:
		if (dwarf_formudata(&attr, &w))
			return -EINVAL;
		*off = w;
		return 0;
	default:
		if (dwarf_getlocation(&attr, &ops, &nops) || nops != 1 ||
		    ops[0].atom != DW_OP_plus_uconst)
			return -EINVAL;
		*off = ops[0].number;
		return 0;
	}
}

/* The offset of member name in the aggregate agg, looking into anonymous
 * struct and union members; its DIE in *found.  0 or -ENOENT. */
static int find_member(Dwarf_Die *agg, const char *name, uint64_t *off,
		       Dwarf_Die *found, int depth)
{
	Dwarf_Die c, sub;
	Dwarf_Off last = dwarf_dieoffset(agg);
	int budget = 4096; /* members of one struct */

	if (depth > MAX_DEPTH || dwarf_child(agg, &c) != 0)
		return -ENOENT;
	do {
		const char *mname;
		Dwarf_Attribute attr;
		uint64_t here, inner;

		if (dwarf_dieoffset(&c) <= last || !budget--)
			return -ENOENT;
		last = dwarf_dieoffset(&c);
		if (dwarf_tag(&c) != DW_TAG_member || member_location(&c, &here))
			continue;
		mname = dwarf_diename(&c);
		if (mname && !strcmp(mname, name)) {
			*off = here;
			*found = c;
			return 0;
		}
		if (!mname && dwarf_attr_integrate(&c, DW_AT_type, &attr) &&
		    dwarf_formref_die(&attr, &sub) && !resolve_aggregate(&sub, &sub) &&
		    !find_member(&sub, name, &inner, found, depth + 1)) {
			*off = here + inner;
			return 0;
		}
	} while (next_sibling(&c));
	return -ENOENT;
}

/* GCfuncC and GCfuncL through the members c and l of union GCfunc, for
 * debug info that kept the union but not the typedefs. */
static void func_from_union(struct lj_types *ty, enum lj_dwarf_type t,
			    const char *member)
{
	Dwarf_Die m, type, def;
	Dwarf_Attribute attr;
	uint64_t off;

	if (ty->have[t] || !ty->have[T_FUNC] ||
	    find_member(&ty->die[T_FUNC], member, &off, &m, 0) ||
	    !dwarf_attr_integrate(&m, DW_AT_type, &attr) ||
	    !dwarf_formref_die(&attr, &type) || resolve_aggregate(&type, &def))
		return;
	ty->die[t] = def;
	ty->have[t] = true;
}

/* An offset that must fit a __u16 field and lie inside its struct. */
static int member_u16(struct lj_types *ty, enum lj_dwarf_type t,
		      const char *member, uint16_t *out, const char *path,
		      char *msg, size_t msglen)
{
	Dwarf_Die m;
	uint64_t off;
	int size;

	if (!ty->have[t]) {
		snprintf(msg, msglen, "%s: DWARF has no definition of %s", path,
			 type_names[t]);
		return -EINVAL;
	}
	if (find_member(&ty->die[t], member, &off, &m, 0)) {
		snprintf(msg, msglen, "%s: DWARF: %s has no member %s", path,
			 type_names[t], member);
		return -EINVAL;
	}
	size = dwarf_bytesize(&ty->die[t]);
	if (off > UINT16_MAX || size <= 0 || off >= (uint64_t)size) {
		snprintf(msg, msglen, "%s: DWARF: %s.%s at offset %llu is out of "
			 "range", path, type_names[t], member,
			 (unsigned long long)off);
		return -EINVAL;
	}
	*out = (uint16_t)off;
	return 0;
}

static int type_size(struct lj_types *ty, enum lj_dwarf_type t, int *size,
		     const char *path, char *msg, size_t msglen)
{
	if (!ty->have[t]) {
		snprintf(msg, msglen, "%s: DWARF has no definition of %s", path,
			 type_names[t]);
		return -EINVAL;
	}
	*size = dwarf_bytesize(&ty->die[t]);
	if (*size <= 0 || *size > UINT16_MAX) {
		snprintf(msg, msglen, "%s: DWARF: sizeof(%s) = %d is out of range",
			 path, type_names[t], *size);
		return -EINVAL;
	}
	return 0;
}

/*
 * Compiled traces: J's place in GG_State (g2j, from G) and the members of
 * jit_State and GCtrace the recorder reads.  All or nothing: a build
 * without the JIT has neither type, and then g2j stays 0, which records
 * traces by number only.  Never the built-in row's: a fork moves them
 * (tarantool's jit_State is 40 bytes smaller than upstream's).
 */
static void trace_layout(struct lj_types *ty, struct lj_layout *lo, uint16_t gg_g)
{
	struct lj_layout t = *lo;
	uint64_t j;
	Dwarf_Die m;
	char msg[8];

	if (!ty->have[T_JIT] || !ty->have[T_TRACE] ||
	    find_member(&ty->die[T_GG], "J", &j, &m, 0) || j <= gg_g ||
	    j - gg_g > UINT16_MAX)
		return;
	for (size_t i = 0; i < NMEMBER_FIELDS; i++) {
		const struct member_field *f = &member_fields[i];
		uint16_t v;

		if (f->group != MG_JIT)
			continue;
		if (member_u16(ty, f->type, f->member, &v, "", msg, sizeof(msg)))
			return;
		memcpy((char *)&t + f->field, &v, sizeof(v));
	}
	t.g2j = (uint16_t)(j - gg_g);
	*lo = t;
}

/* The size of a member's type, through typedefs; 0 if unknown. */
static unsigned member_size(Dwarf_Die *m)
{
	Dwarf_Attribute attr;
	Dwarf_Die type;
	Dwarf_Word size;

	if (!dwarf_attr_integrate(m, DW_AT_type, &attr) ||
	    !dwarf_formref_die(&attr, &type) || dwarf_aggregate_size(&type, &size) ||
	    size > UINT16_MAX)
		return 0;
	return (unsigned)size;
}

/* The snapshot fields from GCtrace and SnapShot, as luajit_snaps.c reads
 * them: all from DWARF or none (then no snapshots are read), never the
 * built-in row's, for the reason trace_layout() gives; types of another
 * shape (an older release) leave them 0 too. */
static void snap_layout(struct lj_types *ty, struct lj_layout *lo)
{
	struct lj_layout sl = *lo;
	int size;

	if (!ty->have[T_TRACE] || !ty->have[T_SNAP])
		return;
	for (size_t i = 0; i < NMEMBER_FIELDS; i++) {
		const struct member_field *f = &member_fields[i];
		Dwarf_Die m;
		uint64_t off;
		uint16_t v;

		if (f->group != MG_SNAP)
			continue;
		if (find_member(&ty->die[f->type], f->member, &off, &m, 0) ||
		    off > UINT16_MAX || member_size(&m) != f->width)
			return;
		v = (uint16_t)off;
		memcpy((char *)&sl + f->field, &v, sizeof(v));
	}
	size = dwarf_bytesize(&ty->die[T_SNAP]);
	if (size <= 0 || size > 64)
		return;
	sl.sn_size = (uint16_t)size;
	*lo = sl;
}

static int fill_layout(struct lj_types *ty, struct lj_layout *lo,
		       const char *path, char *msg, size_t msglen)
{
	const struct lj_build_desc *cf, *known;
	uint16_t gg_l, gg_g;
	uint64_t disp, off;
	Dwarf_Die m;
	int size, err;

	memset(lo, 0, sizeof(*lo));
	func_from_union(ty, T_FUNCC, "c");
	func_from_union(ty, T_FUNCL, "l");
	for (size_t i = 0; i < NMEMBER_FIELDS; i++) {
		const struct member_field *f = &member_fields[i];
		uint16_t v;

		if (f->group != MG_VM)
			continue;
		err = member_u16(ty, f->type, f->member, &v, path, msg, msglen);
		if (err)
			return err;
		memcpy((char *)lo + f->field, &v, sizeof(v));
	}
	err = type_size(ty, T_PROTO, &size, path, msg, msglen);
	if (err)
		return err;
	lo->pt_size = (uint16_t)size;
	err = type_size(ty, T_STR, &size, path, msg, msglen);
	if (err)
		return err;
	lo->str_size = (uint16_t)size;
	err = type_size(ty, T_GCREF, &size, path, msg, msglen);
	if (err)
		return err;
	if (size != 4 && size != 8) {
		snprintf(msg, msglen, "%s: DWARF: sizeof(GCRef) = %d, neither 4 "
			 "nor 8", path, size);
		return -EINVAL;
	}
	lo->ref_size = (uint16_t)size;

	/* G's place in GG_State and the dispatch table's, which lies far
	 * beyond a __u16 from the start of the struct. */
	err = member_u16(ty, T_GG, "L", &gg_l, path, msg, msglen) ?:
	      member_u16(ty, T_GG, "g", &gg_g, path, msg, msglen);
	if (err)
		return err;
	if (find_member(&ty->die[T_GG], "dispatch", &disp, &m, 0)) {
		snprintf(msg, msglen, "%s: DWARF: GG_State has no member dispatch",
			 path);
		return -EINVAL;
	}
	if (gg_g <= gg_l || disp <= gg_g || disp - gg_g > INT32_MAX ||
	    disp >= (uint64_t)dwarf_bytesize(&ty->die[T_GG])) {
		snprintf(msg, msglen, "%s: DWARF: GG_State's L, g and dispatch "
			 "(at %u, %u, %llu) are not in that order", path, gg_l,
			 gg_g, (unsigned long long)disp);
		return -EINVAL;
	}
	lo->gg_g = (uint32_t)(gg_g - gg_l);
	lo->g2disp = (int32_t)(disp - gg_g);

	/* OpenResty's luajit2 adds exdata (and exdata2) to lua_State. */
	lo->flags = lo->ref_size == 8 ? LJ_LAYOUT_GC64 : 0;
	if (!find_member(&ty->die[T_L], "exdata", &off, &m, 0))
		lo->flags |= LJ_LAYOUT_OPENRESTY;

	/* lj_frame.h's CFRAME_OFS_* and CFRAME_SIZE: macros, so not in
	 * DWARF; those of a reference width's usual build (the recorder
	 * prefers the code's, luajit_detect.c). */
	cf = lj_known_build(lo->flags & LJ_LAYOUT_GC64);
	if (!cf) {
		snprintf(msg, msglen, "%s: no built-in C frame layout for %s",
			 path, lo->ref_size == 8 ? "GC64" : "32-bit refs");
		return -EINVAL;
	}
	lo->cf_l = cf->layout.cf_l;
	lo->cf_pc = cf->layout.cf_pc;
	lo->cf_prev = cf->layout.cf_prev;
	lo->cf_size = cf->layout.cf_size;
	trace_layout(ty, lo, gg_g);
	snap_layout(ty, lo);

	/* Without the enum (a compiler drops unused types), the ids of the
	 * variant's built-in row. */
	known = lj_known_build(lo->flags);
	if (ty->have_resume && ty->have_wrap_aux) {
		lo->ffid_coroutine_resume = ty->ff_resume;
		lo->ffid_coroutine_wrap_aux = ty->ff_wrap_aux;
	} else if (known) {
		lo->ffid_coroutine_resume = known->layout.ffid_coroutine_resume;
		lo->ffid_coroutine_wrap_aux = known->layout.ffid_coroutine_wrap_aux;
	}
	return 0;
}

/* Whether a dotted builtin name is the enumerator's: "string.format" is
 * FF_string_format (e is past "FF_"). */
static bool ff_matches(const char *dotted, const char *e)
{
	for (; *dotted && *e; dotted++, e++)
		if (*e != (*dotted == '.' ? '_' : *dotted))
			return false;
	return !*dotted && !*e;
}

/* The name of builtin FF_xxx as LuaJIT's vmdef.lua gives it: that of a
 * known build when one has it ("io_method_close" is "io.method.close"),
 * else the library and the function ("misc_getmetrics" is
 * "misc.getmetrics"). */
static char *ff_name(const char *enumerator)
{
	const char *e = enumerator + 3;
	char *s;

	if (!strcmp(e, "LUA_"))
		return strdup("Lua");
	if (!strcmp(e, "C_"))
		return strdup("C");
	for (size_t b = 0; b < lj_nbuilds; b++)
		for (uint32_t i = 2; i < lj_builds[b].nffnames; i++)
			if (ff_matches(lj_builds[b].ffnames[i], e))
				return strdup(lj_builds[b].ffnames[i]);
	s = strdup(e);
	if (s && strchr(s, '_'))
		*strchr(s, '_') = '.';
	return s;
}

void lj_ffnames_free(struct lj_ffnames *ff)
{
	for (uint32_t i = 0; i < ff->n; i++)
		free(ff->names[i]);
	free(ff->names);
	ff->names = NULL;
	ff->n = 0;
}

/* The enum's names, by id ("" for an id it does not name). */
static int ffnames_from(const struct lj_types *ty, struct lj_ffnames *ff)
{
	ff->n = 0;
	ff->names = calloc(ty->nff ? ty->nff : 1, sizeof(*ff->names));
	if (!ff->names)
		return -ENOMEM;
	for (uint32_t i = 0; i < ty->nff; i++) {
		ff->names[i] = ty->ff[i] ? ff_name(ty->ff[i]) : strdup("");
		ff->n = i + 1;
		if (!ff->names[i]) {
			lj_ffnames_free(ff);
			return -ENOMEM;
		}
	}
	return 0;
}

/* The C frame of the object's architecture (luajit_arch.h), in place of
 * the x86-64 one fill_layout() takes from the built-in rows: the
 * macros of lj_frame.h differ per architecture. */
static void arch_cframe(Elf *elf, struct lj_layout *lo)
{
	GElf_Ehdr eh;
	const struct lj_arch *a;
	const struct lj_arch_cframe *cf;

	if (!gelf_getehdr(elf, &eh) || !(a = lj_arch_for(eh.e_machine)))
		return;
	cf = &a->cframe[lo->ref_size == 8];
	if (!cf->size)
		return;
	lo->cf_l = cf->l;
	lo->cf_pc = cf->pc;
	lo->cf_prev = cf->prev;
	lo->cf_size = cf->size;
}

int lj_layout_from_dwarf(const char *object, struct lj_layout *lo,
			 struct lj_ffnames *ff, char *msg, size_t msglen)
{
	struct lp_debug_file f = { .fd = -1 };
	struct lj_types ty;
	Dwarf *dbg = NULL;
	int err;

	msg[0] = '\0';
	if (ff)
		*ff = (struct lj_ffnames){ 0 };
	elf_version(EV_CURRENT);
	err = find_debug_info(object, &f);
	if (err) {
		snprintf(msg, msglen, "%s: no DWARF debug info found", object);
		return -ENOENT;
	}
	dbg = dwarf_begin_elf(f.elf, DWARF_C_READ, NULL);
	if (!dbg) {
		snprintf(msg, msglen, "%s: cannot read its DWARF: %s", f.path,
			 dwarf_errmsg(-1));
		err = -EINVAL;
		goto cleanup;
	}
	err = find_types(dbg, &ty);
	if (err) {
		/* Debug info for the program around LuaJIT, not for LuaJIT. */
		snprintf(msg, msglen, "%s: DWARF has no GG_State: no debug info "
			 "for LuaJIT", f.path);
		err = -ENOENT;
		goto cleanup;
	}
	err = fill_layout(&ty, lo, f.path, msg, msglen);
	if (!err)
		arch_cframe(f.elf, lo);
	if (!err && ff)
		err = ffnames_from(&ty, ff);
	if (!err)
		snprintf(msg, msglen, "%s%s", f.path, lo->g2j ? "" :
			 "; no JIT state in it: compiled traces by number only");
cleanup:
	if (dbg)
		dwarf_end(dbg);
	lp_debug_file_close(&f);
	return err;
}

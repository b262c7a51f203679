/*
 * luajit_layouts.h - the LuaJIT builds luaprof knows without debug info
 * (lj_builds): their struct offsets (struct lj_layout, bpf/luajit_layout.h),
 * their fast function names by id, and a way to tell GC64 from 32-bit
 * references in a stripped binary without running it.  The recorder picks
 * a layout here for each target, then validates it on the live process,
 * and writes the build's fast function names into the trace's LUAJIT
 * record, from which the reporter names builtins; luajit_dwarf.c borrows
 * the names to spell a DWARF enum's builtins the same way.
 */
#ifndef LUAPROF_RECORD_LUAJIT_LAYOUTS_H
#define LUAPROF_RECORD_LUAJIT_LAYOUTS_H

#include <stddef.h>
#include <stdint.h>

#include "bpf/luajit_layout.h"

/* The fields of struct lj_layout by number (LJF_g2disp...), with their
 * names, places and groups, for code that goes through them all: the
 * offsets file's reader, the derivation from code, comparisons. */
#define LJ_FIELD_ENUM(type, name, ...) LJF_##name,
enum lj_field { LJ_LAYOUTDEF(LJ_FIELD_ENUM) LJF__N };
#undef LJ_FIELD_ENUM

enum lj_field_group { LJG_VM, LJG_FF, LJG_JIT, LJG_SNAP, LJG_PAD };

struct lj_field_desc {
	const char *name;
	uint16_t off;   /* in struct lj_layout */
	uint8_t size;   /* bytes */
	uint8_t group;  /* enum lj_field_group */
	uint8_t in_dwarf; /* DWARF can say it (not a macro of lj_frame.h) */
};

extern const struct lj_field_desc lj_fields[LJF__N];

/* A field's value (g2disp is the one signed field), and whether a value
 * fits it. */
long long lj_field_get(const struct lj_layout *lo, enum lj_field f);
int lj_field_fits(enum lj_field f, long long value);
/* Sets a field to a value that fits it. */
void lj_field_set(struct lj_layout *lo, enum lj_field f, long long value);

/* One known LuaJIT build: a release of a LuaJIT source with fixed flags. */
struct lj_build_desc {
	const char *name;            /* e.g. "openresty-gc64" */
	uint32_t flags;              /* LJ_LAYOUT_*, as in layout.flags */
	struct lj_layout layout;
	const char *const *ffnames;  /* ffid -> "string.format" */
	uint32_t nffnames;
};

/* Every known build, for callers that try each one against a target. */
extern const struct lj_build_desc lj_builds[];
extern const size_t lj_nbuilds;

/* The first known build with these LJ_LAYOUT_* flags, or NULL. */
const struct lj_build_desc *lj_known_build(uint32_t flags);

/* "string.format" for an ffid of that build, or NULL (for the tests: the
 * recorder hands the whole list on). */
const char *lj_ffname(const struct lj_build_desc *b, uint32_t ffid);

#endif

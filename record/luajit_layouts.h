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

/* Several builds of one variant (same flags) may be known: the one whose
 * interpreter adds g2disp to G to find the dispatch table, when the code
 * said (g2disp non-NULL), else the first with the flags; NULL if none
 * fits.  *nflags gets how many known builds have these flags. */
const struct lj_build_desc *lj_known_build_for(uint32_t flags, const int32_t *g2disp,
					       size_t *nflags);

/* The distance from G to the dispatch table that an interpreter's code
 * (the bytes of LuaJIT's VM, at most a few hundred KiB) adds to r14 as it
 * enters the VM ("add DISPATCH, GG_G2DISP": add r14, imm32 with GC64, add
 * r14d, imm32 without), if the code says it unambiguously: 0 with
 * *g2disp set, else -ENOENT. */
int lj_g2disp_from_vm(const uint8_t *code, size_t len, int gc64, int32_t *g2disp);

/* "string.format" for an ffid of that build, or NULL (for the tests: the
 * recorder hands the whole list on). */
const char *lj_ffname(const struct lj_build_desc *b, uint32_t ffid);

/* GC64 or not from lua_gettop's first bytes (at most 16): 1 GC64, 0 not,
 * -EINVAL unknown pattern. */
int lj_gc64_from_gettop(const uint8_t *code, size_t len);

#endif

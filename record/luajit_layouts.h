/*
 * luajit_layouts.h - the LuaJIT builds luaprof knows without debug info:
 * their struct offsets (struct lj_layout, bpf/luajit.h), their fast
 * function names by id, and a way to tell GC64 from 32-bit references in a
 * stripped binary without running it.  The recorder picks a layout here
 * for each target, then validates it on the live process; the reporter
 * names builtins with lj_ffname().
 */
#ifndef LUAPROF_RECORD_LUAJIT_LAYOUTS_H
#define LUAPROF_RECORD_LUAJIT_LAYOUTS_H

#include <stddef.h>
#include <stdint.h>

#include "bpf/luajit.h"

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

/* The layout for a build with these LJ_LAYOUT_* flags, or NULL. */
const struct lj_build_desc *lj_known_build(uint32_t flags);

/* "string.format" for an ffid of that build, or NULL. */
const char *lj_ffname(const struct lj_build_desc *b, uint32_t ffid);

/* GC64 or not from lua_gettop's first bytes (at most 16): 1 GC64, 0 not,
 * -EINVAL unknown pattern. */
int lj_gc64_from_gettop(const uint8_t *code, size_t len);

#endif

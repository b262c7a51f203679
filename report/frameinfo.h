/*
 * frameinfo.h - what each frame name stands for, beside the name itself:
 * its kind (Lua function, builtin, native code, kernel, VM state), the
 * function it belongs to, its file and lines, and the object it lives in.
 *
 * Text formats need only the name; the flame graph colours frames by
 * kind, and pprof and speedscope describe functions, files, lines and
 * mappings as fields of their own.  The table is indexed by name id and
 * filled where names are made (frames.c, luajit_protos.c, stacks.c): the first
 * description of a name wins, and a name nobody described reads as
 * FRAME_OTHER, a function of its own ("[truncated]", a --comm root).
 *
 * Strings the info points at (files, object paths, build-ids) are
 * interned into the same name table as frames, so they live as long as
 * the profile.
 */
#ifndef LUAPROF_REPORT_FRAMEINFO_H
#define LUAPROF_REPORT_FRAMEINFO_H

#include <stddef.h>
#include <stdint.h>

#include "lib/htab.h"
#include "report/intern.h"

#define FRAME_KINDS(_)                                                   \
	_(OTHER, "other", "a marker: [truncated], [no stack], a --comm root") \
	_(LUA, "lua", "a Lua function")                                   \
	_(BUILTIN, "builtin", "a LuaJIT builtin (string.format)")         \
	_(NATIVE, "native", "native code in user space")                  \
	_(KERNEL, "kernel", "kernel code")                                \
	_(VM, "vm", "the LuaJIT VM outside Lua code: GC, JIT compiler")

enum frame_kind {
#define FRAME_KIND_ENUM(k, name, help) FRAME_##k,
	FRAME_KINDS(FRAME_KIND_ENUM)
#undef FRAME_KIND_ENUM
	FRAME_NKINDS
};

#define FRAMEINFO_NONE UINT32_MAX

struct frame_info {
	uint32_t kind;       /* enum frame_kind */
	uint32_t func;       /* name id of the frame as named without --lines:
			      * the function, whatever line it runs */
	uint32_t file;       /* name id of its source file or chunk, or NONE */
	uint32_t start_line; /* Lua: where the function is defined; 0 unknown */
	uint32_t line;       /* the line running (or the call site); 0 unknown */
	uint32_t mapping;    /* index into the mappings, or NONE */
	uint64_t addr;       /* native: the ELF address in the mapping's file */
};

/* An object native frames live in, as pprof's mappings describe it. */
struct frame_mapping {
	uint32_t path;     /* name id */
	uint32_t build_id; /* name id of its lower-case hex, or NONE */
};

struct frame_infos {
	struct strtab *names;
	struct frame_info *v; /* by name id; kind OTHER, func NONE: unset */
	size_t len, cap;
	struct frame_mapping *maps;
	size_t nmaps, capmaps;
	struct htab maps_h;
};

void frameinfo_init(struct frame_infos *t, struct strtab *names);
void frameinfo_free(struct frame_infos *t);

/* Describes name id `id`, unless it was described before; fi->func may
 * be FRAMEINFO_NONE for "the name itself".  0 or -ENOMEM. */
int frameinfo_note(struct frame_infos *t, uint32_t id, const struct frame_info *fi);

/* Whether `id` was described. */
static inline int frameinfo_known(const struct frame_infos *t, uint32_t id)
{
	return id < t->len && (t->v[id].kind != FRAME_OTHER ||
			       t->v[id].func != FRAMEINFO_NONE);
}

/* The description of `id`: an OTHER frame that is its own function when
 * nobody gave one. */
struct frame_info frameinfo_get(const struct frame_infos *t, uint32_t id);

/* The mapping index of an object, by path and build-id bytes (len 0:
 * none known); 0 or -ENOMEM. */
int frameinfo_mapping(struct frame_infos *t, const char *path,
		      const uint8_t *build_id, uint32_t len, uint32_t *idx);

/* "lua", "native", ... */
const char *frame_kind_name(uint32_t kind);

#endif

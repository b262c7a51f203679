/*
 * frames.h - how one address becomes one frame name.
 *
 * User addresses are read against their process's current layout (maps.h)
 * and named by the file they fall in (symbolize.h); kernel addresses are
 * named from the trace's KSYMS records.  Names are interned into the
 * caller's name table, cleaned of control characters (a trace is
 * untrusted, and a newline in a name would forge output lines).
 *
 * A return address points after its call, possibly into the next
 * function, so every frame but a stack's leaf is looked up at addr - 1.
 */
#ifndef LUAPROF_REPORT_FRAMES_H
#define LUAPROF_REPORT_FRAMES_H

#include <stdint.h>

#include "format/trace.h"
#include "report/frameinfo.h"
#include "report/intern.h"
#include "report/maps.h"
#include "report/objects.h"
#include "lib/srcline.h"
#include "report/symbolize.h"

struct frames;

int frames_new(struct frames **out, struct strtab *names, struct symbolizer *sym);
void frames_free(struct frames *f);
/* Names the frames of mappings that name an object through `o`: the
 * trace's embedded tables, or verified local files (objects.h). */
void frames_set_objects(struct frames *f, struct objects *o);

/* Adds a KSYMS record's symbols; records may come anywhere in the trace,
 * so kernel frames are best named once the whole trace was read. */
int frames_add_ksyms(struct frames *f, const struct lp_ksyms *rec);

/* --lines: native frames whose object has DWARF show " (FILE:LINE)". */
void frames_set_lines(struct frames *f, int lines);
/* Whether native names are demangled (C++, Rust), as perf shows them;
 * not set: as the symbols have them. */
void frames_set_demangle(struct frames *f, int demangle);

/* The most frames one user address may name (frames_user_chain). */
#define FRAMES_MAX_CHAIN SRCLINE_MAX_FRAMES

/* The frames of a user address, leaf first, into ids[FRAMES_MAX_CHAIN]:
 * the functions DWARF says were inlined there, innermost first, named
 * "NAME [inlined]", then the function itself; *n their count (1 without
 * DWARF).  *func is the function's own name, without the FILE:LINE of
 * --lines.  `ret` is set for return addresses (all frames but a stack's
 * leaf): they are looked up at addr - 1, the call instruction. */
int frames_user_chain(struct frames *f, const struct maps_view *v, uint64_t addr, int ret,
		      uint32_t *ids, uint32_t *n, uint32_t *func);
/* The function alone: *func of frames_user_chain(). */
int frames_user(struct frames *f, const struct maps_view *v, uint64_t addr, int ret,
		uint32_t *id);
int frames_kernel(struct frames *f, uint64_t addr, int ret, uint32_t *id);
/* Interns any other name (a comm, "[no stack]") the same careful way. */
int frames_name(struct frames *f, const char *name, uint32_t *id);

/* Describes the frames named from now on into `infos` (frameinfo.h), for
 * the formats that tell kinds, files and mappings apart. */
void frames_set_infos(struct frames *f, struct frame_infos *infos);
/* Whether frames are being described (a format asked). */
int frames_describing(const struct frames *f);
/* frames_name(), and describes the name as fi says when asked to. */
int frames_name_as(struct frames *f, const char *name, const struct frame_info *fi,
		   uint32_t *id);

#endif

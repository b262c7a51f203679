/*
 * debuginfo.h - an object's DWARF for the report, from wherever it is:
 * the DEBUG records embedded in the trace, or a local file (the object's
 * own sections or its separate debug file) for objects the trace does not
 * embed.  Either way the sections end up in one small ELF image in memory
 * that libdw opens with elf_memory() + dwarf_begin_elf(), so there is one
 * way of reading DWARF, and a report over hundreds of objects holds no
 * descriptors or mappings.
 */
#ifndef LUAPROF_REPORT_DEBUGINFO_H
#define LUAPROF_REPORT_DEBUGINFO_H

#include <elfutils/libdw.h>
#include <stdint.h>

#include "format/dwarf_image.h"
#include "format/trace.h"

/* The DEBUG records of one object, as read: kept as pieces (copies) and
 * assembled only when the object's frames are first named. */
struct dbg_pieces {
	struct dbg_piece *v;
	size_t n, cap;
	uint64_t bytes; /* data held, for the bound below */
	int identity;   /* eclass/edata/emachine were set */
	uint32_t eclass, edata, emachine;
};

/* Keeps a DEBUG record's piece (a copy).  Pieces of sections we do not
 * read, of another ELF identity than the object's first, or beyond
 * LP_DEBUG_MAX_OBJECT bytes for the object are ignored.  0 or -ENOMEM. */
int dbg_pieces_add(struct dbg_pieces *p, const struct lp_debug *rec);
void dbg_pieces_free(struct dbg_pieces *p);

/* Opens the DWARF the pieces hold, the gaps between pieces zero-filled
 * (sections may be sparse, §3.16): 0, 1 when they hold no usable DWARF
 * (no piece of .debug_info, .debug_abbrev or .debug_line, sections over
 * LP_DEBUG_MAX_OBJECT together, or libdw refuses it), -ENOMEM. */
int dbg_image_from_pieces(struct lp_dwarf_image *d, const struct dbg_pieces *p);

#endif

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

/* An object's DWARF, open. */
struct dbg_image {
	uint8_t *image; /* the ELF image; the Elf and Dwarf read it in place */
	Elf *elf;
	Dwarf *dwarf;
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
int dbg_image_from_pieces(struct dbg_image *d, const struct dbg_pieces *p);
/* Opens the DWARF of the ELF file at `path` (already checked to be the
 * recorded object), from the file or its debug file, which is looked for
 * under `symfs` first when it is set, then on this machine (`recorded`
 * is the object's path on the recording machine, for .gnu_debuglink).
 * 0, 1 when there is none, -ENOMEM. */
int dbg_image_from_file(struct dbg_image *d, const char *path,
			const char *recorded, const char *symfs);
void dbg_image_close(struct dbg_image *d);

#endif

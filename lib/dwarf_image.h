/*
 * dwarf_image.h - an object's DWARF, open for libdw, as the source-line
 * lookup (srcline.h) reads it: the sections lines and inlined functions
 * need (debuginfo.h), from the object or its separate debug file, copied
 * decompressed into one small ELF image in memory that libdw opens with
 * elf_memory() + dwarf_begin_elf().
 *
 * The recorder resolves lines through it for the addresses samples hit,
 * and the report for traces that embed none (--no-embed, --symfs): the
 * same sections, the same bound and the same reader on both sides, so a
 * trace reports the same lines either way.  The image holds no
 * descriptor or mapping once open, only what libdw reads: the decompressed
 * sections of libc's debug file, not its location lists or call frames.
 *
 * DWARF that dwz -m made refers to a shared file for what several objects
 * of a package have in common (types, inlined functions' names and
 * declarations, strings), as Debian's -dbgsym packages do.  The image has
 * no .gnu_debugaltlink for libdw to find it by, so the shared file is
 * found here (debuginfo.h), made into an image of its own and given to
 * libdw with dwarf_setalt(); without it, what it holds has no name.
 */
#ifndef LUAPROF_LIB_DWARF_IMAGE_H
#define LUAPROF_LIB_DWARF_IMAGE_H

#include <elfutils/libdw.h>
#include <stdint.h>

#include "lib/debuginfo.h"

struct lp_dwarf_image {
	uint8_t *image; /* the ELF image; the Elf and Dwarf read it in place */
	Elf *elf;
	Dwarf *dwarf;
	/* dwz's shared file, when the DWARF names one and it was found:
	 * dwarf reads it (dwarf_setalt()); NULLs otherwise. */
	uint8_t *alt_image;
	Elf *alt_elf;
	Dwarf *alt_dwarf;
};

/*
 * Opens the DWARF of the ELF object `obj`, whose path on the recording
 * machine is `recorded` (for .gnu_debuglink): its own sections, or its
 * separate debug file, looked for under `symfs` first when it is set,
 * then on this machine; so is the dwz shared file it refers to.  Sections
 * over LP_DWARF_MAX_BYTES together are no DWARF, and a shared file that
 * would take them past it is left out.  0, 1 when there is none, -ENOMEM.
 */
int lp_dwarf_image_open(struct lp_dwarf_image *d, Elf *obj, const char *recorded,
			const char *symfs);
void lp_dwarf_image_close(struct lp_dwarf_image *d);

#endif

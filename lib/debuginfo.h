/*
 * debuginfo.h - where an ELF object's DWARF is, and which of its sections
 * source lines and inlined functions need.
 *
 * The recorder resolves the source lines of the addresses samples hit
 * from an object's DWARF and embeds them in the trace, and the report
 * resolves them from a local file when the trace does not embed them,
 * both through dwarf_image.h, which lib/ holds because both sides need
 * it, and both must find the same debug file and read the same
 * sections, or a trace would report differently with and without what it
 * embeds.  The recorder's LuaJIT layout reader uses the same search
 * (record/luajit_dwarf.c).
 *
 * The search is gdb's: the object's own sections if it has .debug_info;
 * else ROOT/usr/lib/debug/.build-id/xx/rest.debug from its build-id note;
 * else the name in its .gnu_debuglink, in the object's directory, its
 * .debug/ subdirectory and ROOT/usr/lib/debug/<dir>/.  A separate file is
 * believed only if it holds DWARF, carries the object's build-id when the
 * object has one, and, found through the debuglink, matches the link's
 * CRC: a stale debug file describes another build.  DWARF that dwz -m
 * shrank refers to a shared file by path and build-id (.gnu_debugaltlink),
 * looked for at the path, then by its build-id, and believed only with
 * that build-id.  Files may be hostile (they belong to the profiled
 * process or to whoever wrote the symfs): they are opened only if
 * regular and read, not mapped.
 */
#ifndef LUAPROF_LIB_DEBUGINFO_H
#define LUAPROF_LIB_DEBUGINFO_H

#include <gelf.h>
#include <limits.h>
#include <stddef.h>
#include <stdint.h>

struct lp_debug_file {
	int fd;
	Elf *elf;
	char path[PATH_MAX];
};

/* Opens path as an ELF file (regular files only, read with ELF_C_READ):
 * 0, or -errno with nothing left open (f->fd = -1, f->elf = NULL). */
int lp_debug_file_open(struct lp_debug_file *f, const char *path);
void lp_debug_file_close(struct lp_debug_file *f);

/* Whether elf holds DWARF, not just the NOBITS headers strip leaves. */
int lp_has_debug_info(Elf *elf);

/*
 * The separate debug file of the object `obj`, whose path on the
 * recording machine is `path` (for the debuglink's directories), looked
 * for under `root` ("" for this machine's file system, or a --symfs
 * directory).  0 with *f open, or -ENOENT.
 */
int lp_debug_file_find(Elf *obj, const char *path, const char *root,
		       struct lp_debug_file *f);

/*
 * The shared file of dwz -m (a Debian -dbgsym package's
 * /usr/lib/debug/.dwz/<triplet>/<package>.debug) that the DWARF in elf
 * refers to, named by its .gnu_debugaltlink: a path and the shared file's
 * build-id.  The path is looked for under `root` when absolute, else in
 * the directory of `file`, the file elf was read from; then
 * ROOT/usr/lib/debug/.build-id/xx/rest.debug.  A file is believed only if
 * it holds DWARF and carries the link's build-id.  0 with *f open, 1 when
 * elf names no shared file, -ENOENT.
 */
int lp_debug_altfile_find(Elf *elf, const char *file, const char *root,
			  struct lp_debug_file *f);

/* The sections source lines and inlined functions need, in this order;
 * nothing else is ever read.  The first three are the ones without which
 * there is no DWARF to use. */
enum lp_debug_sect {
	LP_DEBUG_INFO = 0,   /* .debug_info */
	LP_DEBUG_ABBREV = 1, /* .debug_abbrev */
	LP_DEBUG_LINE = 2,   /* .debug_line */
};
#define LP_DEBUG_NSECT 10
extern const char *const lp_debug_section_names[LP_DEBUG_NSECT];

/* The most DWARF, its sections decompressed and added up, that luaprof
 * reads for one object, its dwz shared file included: an object with
 * more has no lines (its shared file past it is left out). */
#define LP_DWARF_MAX_BYTES (64u << 20)

struct lp_debug_sections {
	Elf_Scn *scn[LP_DEBUG_NSECT]; /* into elf, NULL if absent */
	uint8_t how[LP_DEBUG_NSECT];  /* LP_DEBUG_PLAIN, _ELF, _GNU */
	uint64_t size[LP_DEBUG_NSECT]; /* decompressed */
	uint64_t total;
	uint32_t eclass, edata, emachine;
};
enum { LP_DEBUG_PLAIN, LP_DEBUG_ELF, LP_DEBUG_GNU }; /* how it is stored */

/*
 * Finds elf's needed DWARF sections and their plain (decompressed) sizes,
 * without decompressing anything: a section costs memory only where the
 * caller copies it, once (lp_debug_section_copy()).  0, or -ENOENT when
 * .debug_info, .debug_abbrev or .debug_line is missing, or -EINVAL for a
 * section that cannot be read.  The caller checks total against its bound.
 */
int lp_debug_sections_read(Elf *elf, struct lp_debug_sections *s);
/* Copies section i, decompressed, to dst (size[i] bytes): 0, or -EINVAL
 * when it does not decompress to exactly that.  Valid while elf is open. */
int lp_debug_section_copy(const struct lp_debug_sections *s, int i, uint8_t *dst);

#endif

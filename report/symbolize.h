/*
 * symbolize.h - turns (mapped file, file offset) into a function name.
 *
 * Each file is read once, on its first lookup, and what symbolization
 * needs is kept in a per-file cache: the PT_LOAD segments (to turn a file
 * offset into the ELF's own virtual address) and a sorted function symbol
 * table.  The interface speaks only of a path and an offset so that later
 * sources of names (line info from libdw, symbol tables embedded in the
 * trace, build-id lookups) slot in behind it without touching callers.
 */
#ifndef LUAPROF_REPORT_SYMBOLIZE_H
#define LUAPROF_REPORT_SYMBOLIZE_H

#include <stdint.h>

#include "format/trace.h"

struct symbolizer;

struct sym_result {
	const char *func; /* function name, NULL when no symbol covers it;
			   * valid until symbolizer_free() */
	uint64_t addr;    /* the ELF virtual address when elf is set,
			   * otherwise the file offset */
	int elf;          /* the file was read as ELF */
	uint64_t start;   /* the symbol's own address, when func is set */
};

/* `who` prefixes warnings, e.g. "luaprof report". */
int symbolizer_new(struct symbolizer **out, const char *who);
void symbolizer_free(struct symbolizer *s);

/* Looks up the byte at file offset `off` of the file at `path`.  A file
 * that cannot be read is warned about once on stderr and then answers
 * with elf = 0 and addr = off.  0 or -ENOMEM. */
int symbolizer_lookup(struct symbolizer *s, const char *path, uint64_t off,
		      struct sym_result *res);

/* Adds a symbol table embedded in the trace (a SYMTAB record) under
 * `key`, which then answers lookups from the table alone, never from a
 * file.  An object's table may come in several records: they add up, and
 * the first record with segments gives them.  0 or -ENOMEM. */
int symbolizer_add_table(struct symbolizer *s, const char *key,
			 const struct lp_symtab *rec);

#endif

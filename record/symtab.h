/*
 * symtab.h - an object's symbols, and those the trace embeds as SYMTAB
 * records (symtab.c).
 */
#ifndef LUAPROF_RECORD_SYMTAB_H
#define LUAPROF_RECORD_SYMTAB_H

#include <stddef.h>
#include <stdint.h>

#include "format/trace.h"

struct Elf; /* libelf's Elf */

struct obj_symtab;

/* Reads the PT_LOAD headers and function symbols of elf: 0, 1 when it is
 * not an ELF file with program headers (nothing to embed), -ENOMEM. */
int obj_symtab_read(struct obj_symtab **out, struct Elf *elf);
/* The same from segments and symbols already read (elf_function_symbols()
 * order: ascending, one per address).  0 or -ENOMEM. */
struct elf_fsym;
int obj_symtab_new(struct obj_symtab **out, const struct lp_objseg *segs,
		   size_t nsegs, const struct elf_fsym *v, size_t n);
const struct lp_objseg *obj_symtab_segs(const struct obj_symtab *t, size_t *n);
/* Marks the symbols a report looks at to name the code at file offset
 * off; obj_symtab_need_all() marks them all. */
void obj_symtab_need(struct obj_symtab *t, uint64_t off);
void obj_symtab_need_all(struct obj_symtab *t);
/* Writes the symbols marked since the last call as SYMTAB records of
 * object `object`; the first call writes one even with none, so that
 * the object counts as embedded.  0 or -errno. */
int obj_symtab_write(struct obj_symtab *t, uint64_t object,
		     struct trace_writer *w);
/* Symbols written so far, and in the whole table. */
void obj_symtab_counts(const struct obj_symtab *t, uint64_t *written,
		       uint64_t *total);
void obj_symtab_free(struct obj_symtab *t);

#endif

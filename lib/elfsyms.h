/*
 * elfsyms.h - the function symbols of an ELF object, one name per address,
 * chosen by one rule, and the one rule that turns a mapped file offset
 * into the ELF virtual address symbols and DWARF speak of.  The recorder
 * embeds symbols and source lines in traces and the report reads them
 * from files when a trace does not embed them (which is why it is in lib/, the
 * code record/ and report/ share): both must choose the same name
 * and look up the same address, or a trace would report differently with
 * and without what it embeds.
 */
#ifndef LUAPROF_LIB_ELFSYMS_H
#define LUAPROF_LIB_ELFSYMS_H

#include <gelf.h>
#include <stddef.h>
#include <stdint.h>

#include "format/trace.h"

struct elf_fsym {
	uint64_t addr, size;
	const char *name; /* into the ELF image: valid while elf is open */
	size_t len;
};

/*
 * The defined, non-zero STT_FUNC and STT_GNU_IFUNC symbols of .symtab and
 * .dynsym, and .dynsym's untyped ones in code (STT_NOTYPE: hand-written
 * entry points such as the arm64 vDSO's), in ascending address order, one per address: of several names
 * for one address, a global one over a weak over a local, then the
 * shortest, then the first in byte order; a size the chosen name lacks is
 * taken from another, and a symbol with none is given one: up to the next
 * symbol or the end of its section, whichever comes first.  An object
 * that can be run (an interpreter, or no library needed) whose entry
 * point no symbol covers has "_start" there, and its PLT stubs are
 * "sym@plt" (elfplt.h).  *out is malloc'd, with the names made up (NULL
 * when *n is 0).  0 or -ENOMEM.
 */
int elf_function_symbols(Elf *elf, struct elf_fsym **out, size_t *n);

/* The same ordering and merging for symbols of equal binding (tables
 * already chosen once, gathered from several places): sorts v in place
 * and returns how many remain, one per address. */
size_t elf_fsyms_merge(struct elf_fsym *v, size_t n);

/*
 * The symbol that names address `addr`, in a table v[0..n) sorted by
 * address with one symbol per address (as above): going down from the
 * last symbol at or below addr, the first of at most LP_SYM_LOOKBACK
 * that covers addr.  A sized symbol covers [addr, addr + size); one
 * without a size covers up to the next symbol, so only the first looked
 * at can.  (Looking back past a sized symbol that ends below addr finds
 * an outer function that a small one nested in it would otherwise hide;
 * compilers emit such.)  Returns the symbol's index, or -1 when none
 * covers addr.  *from and *to, unless NULL, get the symbols looked at,
 * v[*from .. *to): the answer depends on them alone, which is what lets a
 * recorder embed only those (docs/format.md §3.14).  The report's rule.
 */
#define LP_SYM_LOOKBACK 4
long lp_objsym_find(const struct lp_objsym *v, size_t n, uint64_t addr,
		    size_t *from, size_t *to);

/*
 * The ELF virtual address of file offset `off`, through the object's
 * PT_LOAD segments (docs/format.md §3.14): the segment that holds the
 * offset, failing that the one whose first page holds it (mappings start
 * on a page boundary, segments need not).  0, or -ENOENT when no segment
 * does.
 */
int elf_seg_vaddr(const struct lp_objseg *segs, size_t nsegs, uint64_t off,
		  uint64_t *vaddr);

#endif

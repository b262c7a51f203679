/*
 * elfsyms.h - the function symbols of an ELF object, one name per address,
 * chosen by one rule.  The recorder embeds them in traces and the report
 * reads them from files when a trace does not embed them (record/ and
 * report/ may not share code but through format/): both must choose the
 * same name for an address, or a trace would report differently with and
 * without its embedded tables.
 */
#ifndef LUAPROF_FORMAT_ELFSYMS_H
#define LUAPROF_FORMAT_ELFSYMS_H

#include <gelf.h>
#include <stddef.h>
#include <stdint.h>

struct elf_fsym {
	uint64_t addr, size;
	const char *name; /* into the ELF image: valid while elf is open */
	size_t len;
};

/*
 * The defined, non-zero STT_FUNC and STT_GNU_IFUNC symbols of .symtab and
 * .dynsym, in ascending address order, one per address: of several names
 * for one address, a global one over a weak over a local, then the
 * shortest, then the first in byte order; a size the chosen name lacks is
 * taken from another.  *out is malloc'd (NULL when *n is 0).  0 or -ENOMEM.
 */
int elf_function_symbols(Elf *elf, struct elf_fsym **out, size_t *n);

/* The same ordering and merging for symbols of equal binding (tables
 * already chosen once, gathered from several places): sorts v in place
 * and returns how many remain, one per address. */
size_t elf_fsyms_merge(struct elf_fsym *v, size_t n);

#endif

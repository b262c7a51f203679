/*
 * elfplt.h - names for an object's PLT stubs, "sym@plt" as objdump and
 * perf print them.  A stub has no symbol of its own: without a name, the
 * sizeless symbol before it (_init, whose .init section precedes .plt)
 * took it.  A stub is named after the symbol whose GOT slot it jumps
 * through, read from its own instructions and found among the object's
 * JUMP_SLOT and GLOB_DAT relocations: a stub whose slot no relocation
 * names (the PLT's first entry, which calls the resolver) stays unnamed.
 * An IRELATIVE slot (an object's call of its own ifunc) is named by the
 * ifunc whose resolver it holds, as libc's stub of memcpy is memcpy@plt.
 * For x86_64 (.plt, .plt.sec, .plt.got; with or without endbr64) and
 * arm64 (.plt; with or without bti).  In lib/ beside elfsyms.c, whose
 * table they join for record and report alike.
 */
#ifndef LUAPROF_LIB_ELFPLT_H
#define LUAPROF_LIB_ELFPLT_H

#include <gelf.h>
#include <stddef.h>
#include <stdint.h>

struct elf_plt_stub {
	uint64_t addr, size;
	const char *name; /* the target's, without "@plt": into the image */
};

/* The named stubs of elf, in no order; *out is malloc'd (NULL when *n is
 * 0).  0, or -ENOMEM; an object without a PLT, or of another machine,
 * has none. */
int elf_plt_stubs(Elf *elf, struct elf_plt_stub **out, size_t *n);

#endif

/*
 * srcline.h - what DWARF says about one code address: the source file and
 * line, and the chain of functions inlined there, innermost first.
 *
 * One address of machine code may stand for several source-level frames:
 * an inlined function's code lies inside its caller's, so at a sample in
 * it the stack is really (caller, inlined callee).  DWARF describes this
 * with DW_TAG_inlined_subroutine scopes nested in the DW_TAG_subprogram,
 * each carrying the call site (DW_AT_call_file, DW_AT_call_line) in the
 * scope around it; the line table gives the line of the innermost one.
 * So the frames of an address are, leaf first: each inlined function at
 * the line of the frame inside it (the address's own line for the
 * innermost), then the real function at the call site of the outermost
 * inlined one.
 *
 * The recorder resolves the addresses samples hit into chains and embeds
 * them (record/srclines.c); the report resolves them from a local file
 * for traces that embed none (--no-embed, --symfs).  Both use this code,
 * so a trace reports the same lines with and without what it embeds.
 */
#ifndef LUAPROF_LIB_SRCLINE_H
#define LUAPROF_LIB_SRCLINE_H

#include <elfutils/libdw.h>
#include <stdint.h>

#include "format/trace.h"

/* Inline nesting deeper than this keeps its outermost frames: as many as
 * a trace's SRCLINES chain may hold. */
#define SRCLINE_MAX_FRAMES LP_SRCLINES_MAX_FRAMES

struct src_frame {
	const char *func; /* NULL when DWARF names none */
	const char *file; /* NULL when the line is unknown */
	uint32_t line;
};

/* Leaf first: f[0 .. n-2] are inlined functions, f[n-1] the function
 * whose code it is.  n = 0 when DWARF does not cover the address.  The
 * strings live as long as the srcline table. */
struct src_chain {
	uint32_t n;
	struct src_frame f[SRCLINE_MAX_FRAMES];
};

struct srcline;

/* A table over an open Dwarf (not owned): 0 or -ENOMEM. */
int srcline_new(struct srcline **out, Dwarf *dwarf);
void srcline_free(struct srcline *s);

/* The chain at ELF virtual address addr.  0 or -ENOMEM. */
int srcline_lookup(struct srcline *s, uint64_t addr, struct src_chain *c);

#endif

/*
 * srclines.h - the source-line chains a trace embeds for one object
 * (SRCLINES records, docs/format.md §3.18), by address: the report's side
 * of record/srclines.c, which resolved and wrote them.
 *
 * The recorder resolved every address the report will look up, so the
 * report answers from what the records say and nothing else: an address
 * no chain covers has no lines, as one DWARF does not cover.  Records
 * arrive in any number and order, and may disagree; the table is sorted
 * once, on the first lookup, and of two chains for one address the first
 * read stands.  Names are interned in a table the caller owns, so the
 * chains it hands out stay valid as long as that table.
 */
#ifndef LUAPROF_REPORT_SRCLINES_H
#define LUAPROF_REPORT_SRCLINES_H

#include <stddef.h>
#include <stdint.h>

#include "lib/srcline.h"
#include "format/trace.h"
#include "report/intern.h"

struct linetab {
	struct linetab_entry *v; /* arrival order, then by address */
	size_t n, cap;
	struct src_frame *frames; /* every chain's frames, back to back */
	size_t nframes, capframes;
	int sorted;
	int embedded; /* the trace holds a SRCLINES record of the object */
};

/* Keeps a SRCLINES record's chains, its names interned into `names`.
 * Past a bound per object (a trace is untrusted) the rest are ignored.
 * 0 or -ENOMEM. */
int linetab_add(struct linetab *t, struct strtab *names,
		const struct lp_srclines *rec);
/* The chain at vaddr; c->n = 0 when none covers it.  Always 0. */
int linetab_lookup(struct linetab *t, uint64_t vaddr, struct src_chain *c);
void linetab_free(struct linetab *t);

#endif

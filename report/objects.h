/*
 * objects.h - the ELF objects a trace's mappings name (OBJECT records) and
 * where their symbols and source lines come from: the symbol tables and
 * source-line chains embedded in the trace (SYMTAB and SRCLINES records)
 * first; otherwise a file found under --symfs DIR or at its recorded
 * path, used only if its build-id is the recorded one, with its DWARF or
 * its debug file's.
 *
 * The recorder writes symbol tables and lines at its flushes and at the
 * end, after the samples that hit them, while a report names frames as
 * it reads the samples; objects_preload() therefore reads the trace's
 * OBJECT, SYMTAB and SRCLINES records in a pass of their own, before the
 * report's pass.
 */
#ifndef LUAPROF_REPORT_OBJECTS_H
#define LUAPROF_REPORT_OBJECTS_H

#include <stdint.h>

#include "format/trace.h"
#include "lib/srcline.h"
#include "report/symbolize.h"

struct objects;

/* symfs: NULL or a directory that mirrors the recording machine's files.
 * `who` prefixes warnings. */
int objects_new(struct objects **out, struct symbolizer *sym,
		const char *symfs, const char *who);
void objects_free(struct objects *o);

int objects_add(struct objects *o, const struct lp_object *rec);
int objects_add_symtab(struct objects *o, const struct lp_symtab *rec);
/* Keeps a SRCLINES record's chains of an object's addresses. */
int objects_add_srclines(struct objects *o, const struct lp_srclines *rec);
/* Reads every OBJECT, SYMTAB and SRCLINES record of the trace at `path`.  0, or
 * -errno when the trace cannot be read (the report's own pass says why). */
int objects_preload(struct objects *o, const char *path);

/* symbolizer_lookup() for the mapping of object `id` (0: none known) of
 * the file recorded at `path`, at file offset `off`. */
int objects_lookup(struct objects *o, uint64_t id, const char *path,
		   uint64_t off, struct sym_result *res);

/* The source lines and inlined frames at ELF virtual address vaddr of
 * object id, once objects_lookup() resolved it: from the chains the trace
 * embeds for it, or from the DWARF of its trusted local file (or that
 * file's debug file) when the trace embeds none.  c->n = 0 when unknown.
 * The strings live as long as o.  0 or -ENOMEM. */
int objects_srcline(struct objects *o, uint64_t id, uint64_t vaddr,
		    struct src_chain *c);

/* The GNU build-id the trace records for object id: 1 with *ident and
 * *len set, 0 when it has none (no such object, or a content hash). */
int objects_build_id(const struct objects *o, uint64_t id, const uint8_t **ident,
		     uint32_t *len);

/* For `luaprof info` and the tests: how many objects have embedded
 * symbols. */
uint64_t objects_embedded(const struct objects *o);

#endif

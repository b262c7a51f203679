/*
 * objects.h - the ELF objects a trace's mappings name (OBJECT records) and
 * where their symbols come from: the symbol tables embedded in the trace
 * (SYMTAB records) first; otherwise a file found under --symfs DIR or at
 * its recorded path, used only if its build-id is the recorded one.
 *
 * The recorder writes symbol tables at its flushes and at the end, after
 * the samples that hit them, while a report names frames as it reads the
 * samples; objects_preload() therefore reads the trace's OBJECT and SYMTAB
 * records in a pass of their own, before the report's pass.
 */
#ifndef LUAPROF_REPORT_OBJECTS_H
#define LUAPROF_REPORT_OBJECTS_H

#include <stdint.h>

#include "format/trace.h"
#include "report/symbolize.h"

struct objects;

/* symfs: NULL or a directory that mirrors the recording machine's files.
 * `who` prefixes warnings. */
int objects_new(struct objects **out, struct symbolizer *sym,
		const char *symfs, const char *who);
void objects_free(struct objects *o);

int objects_add(struct objects *o, const struct lp_object *rec);
int objects_add_symtab(struct objects *o, const struct lp_symtab *rec);
/* Reads every OBJECT and SYMTAB record of the trace at `path`.  0, or
 * -errno when the trace cannot be read (the report's own pass says why). */
int objects_preload(struct objects *o, const char *path);

/* symbolizer_lookup() for the mapping of object `id` (0: none known) of
 * the file recorded at `path`, at file offset `off`. */
int objects_lookup(struct objects *o, uint64_t id, const char *path,
		   uint64_t off, struct sym_result *res);

/* For `luaprof info` and the tests: how many objects have embedded
 * symbols. */
uint64_t objects_embedded(const struct objects *o);

#endif

/*
 * annotate.h - Lua samples by source line: `report --annotate` (the
 * hottest Lua functions' source with samples per line, like pprof's
 * `list`) and `report --by line` (source lines ranked).  Both count, per
 * line, self samples (the line running in the innermost Lua function) and
 * total samples (the line running in any Lua frame of the sample's stack,
 * a call in progress), from the trace alone.
 */
#ifndef LUAPROF_REPORT_ANNOTATE_H
#define LUAPROF_REPORT_ANNOTATE_H

#include <stdint.h>
#include <stdio.h>

#include "format/trace.h"
#include "report/luajit_protos.h"
#include "report/luajit_sources.h"
#include "report/profile.h"

struct annotate;

int annotate_new(struct annotate **out, struct lua *lua, const struct luasrc *src);
void annotate_free(struct annotate *a);
/* Counts one sample (after filters); lstack_idx is lua_find_stack()'s,
 * UINT32_MAX when the sample has no Lua stack. */
int annotate_add(struct annotate *a, const struct lp_sample *smp, uint32_t lstack_idx);
/* The `nfuncs` hottest functions (0 = all), each with its source. */
int out_annotate(FILE *out, const struct profile *p, struct annotate *a,
		 unsigned nfuncs);
/* The `rows` hottest lines (0 = all). */
int out_by_line(FILE *out, const struct profile *p, struct annotate *a,
		unsigned rows);

#endif

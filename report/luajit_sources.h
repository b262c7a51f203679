/*
 * luajit_sources.h - the Lua source files a trace embeds (LUA_SOURCE
 * records, which record/luajit_sources.c reads and writes), kept by id and
 * split into lines, for `report --annotate` and `--by line`.  Only the trace is read: a report shows the same source on
 * any machine, whatever files it has.
 */
#ifndef LUAPROF_REPORT_LUAJIT_SOURCES_H
#define LUAPROF_REPORT_LUAJIT_SOURCES_H

#include <stddef.h>
#include <stdint.h>

#include "format/trace.h"

struct luasrc;

int luasrc_new(struct luasrc **out);
void luasrc_free(struct luasrc *s);
/* Keeps a LUA_SOURCE record; the first definition of an id wins. */
int luasrc_add(struct luasrc *s, const struct lp_lua_source *rec);
/* The status of source id (enum lp_luasrc_status), 0 if the trace does
 * not define it. */
uint32_t luasrc_status(const struct luasrc *s, uint64_t id);
/* Line `line` (from 1) of source id, without its line break: 0 with
 * *text and *len set, or -ENOENT when the trace does not hold it. */
int luasrc_line(const struct luasrc *s, uint64_t id, uint32_t line,
		const char **text, size_t *len);
/* How many lines source id holds (0 when it holds no text). */
uint32_t luasrc_nlines(const struct luasrc *s, uint64_t id);
/* Why source id has no text, for people: "not loaded from a file" (id 0),
 * "the file changed since it was loaded" ... */
const char *luasrc_why_not(const struct luasrc *s, uint64_t id);

#endif

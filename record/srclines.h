/*
 * srclines.h - the source lines of the addresses samples hit, resolved
 * by an object's DWARF and embedded as SRCLINES records (srclines.c).
 */
#ifndef LUAPROF_RECORD_SRCLINES_H
#define LUAPROF_RECORD_SRCLINES_H

#include <stddef.h>
#include <stdint.h>

#include "format/trace.h"

/* The most SRCLINES bytes (bodies, as lp_srclines_size() counts them)
 * one object and one recording embed: a trace is meant to be attached to
 * a bug report.  A chain costs a few dozen bytes with its names, and a
 * server's profile hits hundreds to thousands of addresses of libc, so
 * these bound what a recording hits, not the debug files. */
#define SRCLINES_MAX_OBJECT (4ull << 20)
#define SRCLINES_MAX_TRACE (32ull << 20)

/* What one object's lines cost so far, and the bound that cut them. */
struct srclines_count {
	uint64_t chains, bytes;
	uint32_t skipped; /* LP_SRCLINES_SKIPPED_*: nothing more is resolved */
};

/* One object's DWARF, open while samples may hit new addresses in it. */
struct srclines_object;

/* Opens the DWARF of object `id` (open on fd, mapped from `path`, with
 * PT_LOAD segments segs): its own, or its separate debug file.  Always 0;
 * *out is NULL when it has none (or memory is short): nothing to embed. */
int srclines_open(struct srclines_object **out, int fd, const char *path,
		  uint64_t id, const struct lp_objseg *segs, size_t nsegs);
/*
 * Resolves the code at the file offsets offs[0..n) of the object (the
 * array is reused in place) into chains, at the ELF virtual address the
 * report looks up, and writes those that name something as SRCLINES
 * records.  Past SRCLINES_MAX_OBJECT for the object (its count in *cnt)
 * or the *left bytes the trace may still embed, writes one note and
 * resolves nothing more for the object.  0, or the writer's -errno.
 */
int srclines_write(struct srclines_object *o, uint64_t *offs, size_t n,
		   struct srclines_count *cnt, uint64_t *left, struct trace_writer *w);
void srclines_free(struct srclines_object *o);

#endif

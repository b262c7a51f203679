/*
 * unwind_buckets.h - the bucket index over one object's unwind rows that
 * lets the BPF walker find a pc's row in two or three steps instead of a
 * binary search of the whole object (layout and invariant in
 * bpf/unwind_maps.h).  Pure functions: record/unwind.c fills the BPF map with
 * them, and the unit tests check unwind_buckets_lookup(), the same search
 * the walker makes, against a plain binary search.
 */
#ifndef LUAPROF_RECORD_UNWIND_BUCKETS_H
#define LUAPROF_RECORD_UNWIND_BUCKETS_H

#include <stdint.h>

#include "bpf/unwind_maps.h"

struct unwind_buckets {
	uint32_t base, shift, nbuckets; /* as in struct lp_unwind_obj */
};

/* The geometry of nrows (> 0) sorted rows' index: buckets of
 * 1 << LP_UNWIND_BUCKET_SHIFT bytes, wider for an object that would need
 * more than LP_UNWIND_MAX_OBJ_BUCKETS. */
void unwind_buckets_plan(const struct lp_unwind_row *rows, uint32_t nrows,
			 struct unwind_buckets *b);

/* Fills out[0 .. b->nbuckets). */
void unwind_buckets_fill(const struct lp_unwind_row *rows, uint32_t nrows,
			 const struct unwind_buckets *b,
			 struct lp_unwind_bucket *out);

/* The index of the row covering vaddr, or -1 below the first row, found
 * as bpf/unwind_native.bpf.h finds it. */
int64_t unwind_buckets_lookup(const struct lp_unwind_row *rows, uint32_t nrows,
			      const struct unwind_buckets *b,
			      const struct lp_unwind_bucket *index,
			      uint64_t vaddr);

#endif

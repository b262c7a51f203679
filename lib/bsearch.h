/*
 * bsearch.h - the one binary search of the tree.  Every "last entry
 * starting at or below this address" lookup (unwind rows, kernel and ELF
 * symbols, source-line ranges, a trace's snapshots) is the same loop over
 * a sorted array with another element type; it is written once here, as
 * a macro so that each caller keeps its own types and the compiler its
 * inlining.
 */
#ifndef LUAPROF_LIB_BSEARCH_H
#define LUAPROF_LIB_BSEARCH_H

#include <stddef.h>

/* The first index in [lo, hi) of the array v, sorted by the member key,
 * whose key is above x; hi if none is.  So the entry at or below x is the
 * one before it, if the result is above lo. */
#define LP_UPPER_BOUND(v, lo, hi, key, x) __extension__({	\
	size_t lo_ = (lo), hi_ = (hi);				\
	while (lo_ < hi_) {					\
		size_t mid_ = lo_ + (hi_ - lo_) / 2;		\
		if ((v)[mid_].key <= (x))			\
			lo_ = mid_ + 1;				\
		else						\
			hi_ = mid_;				\
	}							\
	lo_;							\
})

#endif

/*
 * unwind_buckets.c - builds the bucket index of an object's unwind rows
 * (see bpf/unwind_maps.h for the invariant and unwind_buckets.h for the API).
 *
 * Why buckets and not a deeper search structure: the walker runs in BPF,
 * where each step is a map lookup and a bounded loop iteration, and in a
 * sample's few microseconds the cost is cache misses, not instructions.
 * One index entry pair narrows the search to the rows of 256 bytes of
 * code, which is one or two functions' worth: two or three more lines.
 */
#include "record/unwind_buckets.h"

void unwind_buckets_plan(const struct lp_unwind_row *rows, uint32_t nrows,
			 struct unwind_buckets *b)
{
	uint32_t shift = LP_UNWIND_BUCKET_SHIFT;
	uint64_t base, nb;

	/* Bucket 0 starts at or below the first row; the last bucket holds
	 * the last row.  Widen the buckets until they are few enough. */
	for (;;) {
		base = rows[0].pc & ~((1ull << shift) - 1);
		nb = (((uint64_t)rows[nrows - 1].pc - base) >> shift) + 1;
		if (nb <= LP_UNWIND_MAX_OBJ_BUCKETS)
			break;
		shift++;
	}
	b->base = (uint32_t)base;
	b->shift = shift;
	b->nbuckets = (uint32_t)nb;
}

void unwind_buckets_fill(const struct lp_unwind_row *rows, uint32_t nrows,
			 const struct unwind_buckets *b,
			 struct lp_unwind_bucket *out)
{
	uint32_t i = 0;

	/* One sweep: bucket starts and row pcs both ascend.  Entry k's hi
	 * is entry k + 1's lo. */
	for (uint32_t k = 0; k <= b->nbuckets; k++) {
		uint64_t start = (uint64_t)b->base + ((uint64_t)k << b->shift);

		while (i < nrows && rows[i].pc <= start)
			i++;
		if (k < b->nbuckets)
			out[k].lo = i;
		if (k)
			out[k - 1].hi = i;
	}
}

int64_t unwind_buckets_lookup(const struct lp_unwind_row *rows, uint32_t nrows,
			      const struct unwind_buckets *b,
			      const struct lp_unwind_bucket *index,
			      uint64_t vaddr)
{
	uint32_t lo, hi;
	uint64_t k;

	if (vaddr < b->base)
		return -1;
	k = (vaddr - b->base) >> b->shift;
	if (k >= b->nbuckets) {
		lo = hi = nrows; /* past the last row's bucket: the last row */
	} else {
		lo = index[k].lo;
		hi = index[k].hi;
	}
	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;

		if (rows[mid].pc <= vaddr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo ? (int64_t)lo - 1 : -1;
}

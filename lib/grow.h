/*
 * grow.h - growable arrays, one rule for every part that builds tables
 * of unknown size, often from untrusted input (the recorder's tables, the
 * DWARF index, the report's tables): capacity doubles, every size
 * computation is checked for overflow, and a failure leaves the array as
 * it was.
 */
#ifndef LUAPROF_LIB_GROW_H
#define LUAPROF_LIB_GROW_H

#include <stddef.h>

/* Makes room for `need` elements of `size` bytes in *v (capacity in *cap,
 * in elements); 0 or -ENOMEM, with *v untouched on failure. */
int lp_grow_array(void **v, size_t *cap, size_t need, size_t size);

/* The test inline: most calls find the room there, on every sample. */
static inline int lp_grow(void **v, size_t *cap, size_t need, size_t size)
{
	return need <= *cap ? 0 : lp_grow_array(v, cap, need, size);
}

#define GROW(v, cap, need) lp_grow((void **)&(v), &(cap), (need), sizeof(*(v)))

#endif

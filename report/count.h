/*
 * count.h - adding up counts read from a trace.  A trace is untrusted: a
 * LOST record or a footer may say 2^64 - 1, and a sum that wraps turns
 * that into a small number and a share above 100%.  Counts saturate at
 * UINT64_MAX instead: still absurd, but true to the trace and never less.
 */
#ifndef LUAPROF_REPORT_COUNT_H
#define LUAPROF_REPORT_COUNT_H

#include <stdint.h>

static inline uint64_t count_add(uint64_t a, uint64_t b)
{
	return a + b < a ? UINT64_MAX : a + b;
}

static inline uint64_t count_mul(uint64_t a, uint64_t b)
{
	return b && a > UINT64_MAX / b ? UINT64_MAX : a * b;
}

#endif

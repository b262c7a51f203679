/*
 * mix.h - an inline function two programs share, as a package's programs
 * share a header of its own: built -O2 -g, both programs' DWARF declare
 * mix() alike, and `dwz -m` moves that declaration (its name with it) to
 * the package's shared debug file (tests/e2e/dwz.sh).
 */
#ifndef SAMPLES_DWZ_MIX_H
#define SAMPLES_DWZ_MIX_H

#define MIX_ROUNDS 20000u

static inline __attribute__((always_inline)) unsigned long mix(unsigned long x)
{
	for (unsigned i = 0; i < MIX_ROUNDS; i++)
		x ^= (x << 13) ^ (x >> 7) ^ (x << 17) ^ i; /* LINE:mix */
	return x;
}

#endif

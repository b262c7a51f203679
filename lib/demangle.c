/*
 * demangle.c - mangled symbol names made readable (demangle.h), by
 * libiberty's cplus_demangle, whose styles cover GNU v3 C++ and Rust's
 * legacy and v0 manglings.  Names that cannot be mangled (no _Z or _R
 * prefix) are not handed to it: most of a profile's are C.
 */
#include <libiberty/demangle.h>
#include <stdlib.h>
#include <string.h>

#include "lib/demangle.h"

int lp_demangle(const char *sym, char *out, size_t len)
{
	char *d;
	size_t n;

	if (!sym || !len || sym[0] != '_' || (sym[1] != 'Z' && sym[1] != 'R'))
		return 0;
	d = cplus_demangle(sym, DMGL_PARAMS | DMGL_ANSI | DMGL_AUTO);
	if (!d)
		return 0;
	n = strlen(d);
	if (n >= len)
		n = len - 1;
	memcpy(out, d, n);
	out[n] = '\0';
	free(d);
	return 1;
}

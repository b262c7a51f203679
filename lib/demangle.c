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

#define PLT_SUFFIX "@plt"

int lp_demangle(const char *sym, char *out, size_t len)
{
	size_t n, suffix = 0, slen;
	char *d, *name;

	if (!sym || !len || sym[0] != '_' || (sym[1] != 'Z' && sym[1] != 'R'))
		return 0;
	/* A PLT stub's name is its target's and "@plt" (lib/elfplt.h),
	 * kept after the readable name, as c++filt keeps it. */
	slen = strlen(sym);
	if (slen > strlen(PLT_SUFFIX) && !strcmp(sym + slen - strlen(PLT_SUFFIX), PLT_SUFFIX))
		suffix = strlen(PLT_SUFFIX);
	name = strndup(sym, slen - suffix);
	d = name ? cplus_demangle(name, DMGL_PARAMS | DMGL_ANSI | DMGL_AUTO) : NULL;
	free(name);
	if (!d)
		return 0;
	n = strlen(d);
	if (n >= len)
		n = len - 1;
	memcpy(out, d, n);
	out[n] = '\0';
	free(d);
	if (suffix && n + suffix < len)
		memcpy(out + n, PLT_SUFFIX, suffix + 1);
	return 1;
}

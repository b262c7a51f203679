/*
 * demangle.h - C++ and Rust symbol names as people read them
 * (_ZN7EThread7executeEv: EThread::execute()), through libiberty's
 * demangler, as perf, pprof and c++filt show them.
 */
#ifndef LUAPROF_LIB_DEMANGLE_H
#define LUAPROF_LIB_DEMANGLE_H

#include <stddef.h>

/* The readable form of symbol sym in out (len bytes, cut to fit): 1 when
 * sym is a mangled name (Itanium C++ _Z..., Rust _R... or legacy), else 0
 * and out untouched.  A PLT stub's "@plt" stays at the end. */
int lp_demangle(const char *sym, char *out, size_t len);

#endif

/*
 * vdso.h - the kernel's vDSO, as this recorder maps it.  The vDSO is the
 * same image in every 64-bit process of one kernel, and has no file: the
 * native unwinder reads its CFI from our copy (unwind.c), and the trace
 * embeds its symbols from it (objects.c), so that a frame there is named
 * (__vdso_clock_gettime) rather than [vdso].
 */
#ifndef LUAPROF_RECORD_VDSO_H
#define LUAPROF_RECORD_VDSO_H

#include <stddef.h>

/* Whether a mapping named path is the vDSO. */
int vdso_mapping(const char *path);

/* A malloc'd copy of our vDSO's mapping (libelf must not be handed its
 * read-only pages), its headers and code: 0, -ENOENT or -ENOMEM. */
int vdso_image(void **copy, size_t *size);

/* The same bytes in a memory file, at offset 0, for what reads objects
 * from a descriptor: a descriptor (close-on-exec), or -errno. */
int vdso_fd(void);

#endif

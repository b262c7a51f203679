/*
 * escape.h - strings from a trace made safe for a terminal (escape.c).
 * A trace is untrusted: a process name, a path or a chunk name may hold
 * bytes that a terminal acts on (colours, cursor moves, a window title, a
 * hyperlink).  Every string from a trace goes through here before it is
 * printed.
 */
#ifndef LUAPROF_REPORT_ESCAPE_H
#define LUAPROF_REPORT_ESCAPE_H

#include <stddef.h>
#include <stdio.h>

/* The length of the control sequence that starts at p (n bytes left):
 * 1 for a C0 control (tab included) or DEL, 2 for a C1 control as UTF-8
 * (U+0080..U+009F, `c2 80` to `c2 9f`), 0 for anything else. */
size_t esc_control_len(const unsigned char *p, size_t n);

/* Replaces every byte of such a sequence with '?', in place: the length
 * does not change. */
void esc_clean(char *s);

/* A cleaned copy of s ("" for NULL), or NULL without memory. */
char *esc_dup(const char *s);

/* Writes s cleaned, without a copy. */
void esc_fputs(const char *s, FILE *out);

#endif

/*
 * escape.h - strings from a trace made safe wherever they are written
 * (escape.c).
 *
 * A trace is untrusted: a process name, a path, a chunk name or a
 * function name may hold bytes that a terminal acts on (colours, cursor
 * moves, a window title, a hyperlink), a function named
 * `</text><script>` must not script an SVG, one named `"}` must not end a
 * JSON string, and bytes that are not UTF-8 must not make a whole file
 * unreadable to a strict parser (XML parsers and Go's protobuf strings
 * reject them).  Every string from a trace goes through here before it
 * is printed:
 *
 *   text for a terminal   esc_fputs, esc_dup, esc_clean: each byte of a
 *                         control becomes '?' (lengths kept)
 *   XML, JSON, protobuf   xml_escape, json_string, utf8_clean: valid
 *                         UTF-8, controls as escapes, or U+FFFD where the
 *                         format has no escape
 *
 * A control is a C0 control (tab included), DEL, or a C1 control as
 * UTF-8 (U+0080..U+009F: U+009B is CSI to many terminals).
 */
#ifndef LUAPROF_LIB_ESCAPE_H
#define LUAPROF_LIB_ESCAPE_H

#include <stddef.h>
#include <stdio.h>

/* The length of the control sequence that starts at p (n bytes left):
 * 1 for a C0 control or DEL, 2 for a C1 control as UTF-8 (`c2 80` to
 * `c2 9f`), 0 for anything else. */
size_t esc_control_len(const unsigned char *p, size_t n);

/* Replaces every byte of such a sequence with '?', in place: the length
 * does not change. */
void esc_clean(char *s);

/* A cleaned copy of s ("" for NULL), or NULL without memory. */
char *esc_dup(const char *s);

/* Writes s cleaned, without a copy. */
void esc_fputs(const char *s, FILE *out);

/* The length (1..4) of the valid UTF-8 sequence at s, 0 when the bytes
 * there are none (stray, overlong, a surrogate, past U+10FFFF, cut). */
int utf8_seq(const unsigned char *s);

/* s as XML character data or attribute value (either quote). */
void xml_escape(FILE *out, const char *s);
/* s as a JSON string, quotes included. */
void json_string(FILE *out, const char *s);
/* s as valid UTF-8 with no control characters, into buf, which must
 * hold 3 * strlen(s) + 1 bytes; returns the length written. */
size_t utf8_clean(const char *s, char *buf);

#endif

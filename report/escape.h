/*
 * escape.h - writing names from a trace into structured output.
 *
 * Every name comes from a trace, and a trace is untrusted: a function
 * named `</text><script>` must not script an SVG, one named `"}` must not
 * end a JSON string, and bytes that are not UTF-8 must not make a whole
 * file unreadable to a strict parser (XML parsers and Go's protobuf
 * strings reject them).  Invalid UTF-8 is written as U+FFFD, control
 * characters as escapes or U+FFFD where the format has no escape.
 */
#ifndef LUAPROF_REPORT_ESCAPE_H
#define LUAPROF_REPORT_ESCAPE_H

#include <stddef.h>
#include <stdio.h>

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

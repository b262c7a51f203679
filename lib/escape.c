/*
 * escape.c - strings from a trace for a terminal, XML, JSON and clean
 * UTF-8 (see escape.h).
 *
 * For a terminal, each byte of a control becomes '?', so lengths (and the
 * column widths computed from them) stay what they were, and the rest of
 * the text, UTF-8 or not, prints as it is.  For the structured formats
 * UTF-8 is checked as RFC 3629 defines it: no overlong forms, no
 * surrogates, nothing past U+10FFFF; what is not valid becomes U+FFFD,
 * and so does a control where the format cannot escape it.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "lib/escape.h"

static const char replacement[] = "\xef\xbf\xbd"; /* U+FFFD */

size_t esc_control_len(const unsigned char *p, size_t n)
{
	if (!n)
		return 0;
	if (p[0] < 0x20 || p[0] == 0x7f)
		return 1;
	if (p[0] == 0xc2 && n > 1 && p[1] >= 0x80 && p[1] <= 0x9f)
		return 2;
	return 0;
}

void esc_clean(char *s)
{
	size_t n = s ? strlen(s) : 0;

	for (size_t i = 0; i < n;) {
		size_t k = esc_control_len((unsigned char *)s + i, n - i);

		if (!k) {
			i++;
			continue;
		}
		memset(s + i, '?', k);
		i += k;
	}
}

char *esc_dup(const char *s)
{
	char *d = strdup(s ? s : "");

	esc_clean(d);
	return d;
}

void esc_fputs(const char *s, FILE *out)
{
	size_t n = s ? strlen(s) : 0;

	for (size_t i = 0; i < n;) {
		size_t k = esc_control_len((const unsigned char *)s + i, n - i), run = 0;

		if (k) {
			for (; k; k--, i++)
				fputc('?', out);
			continue;
		}
		/* The run of safe bytes up to the next control, in one go. */
		while (i + run < n && !esc_control_len((const unsigned char *)s + i + run,
						       n - i - run))
			run++;
		fwrite(s + i, 1, run, out);
		i += run;
	}
}

int utf8_seq(const unsigned char *s)
{
	unsigned char c = s[0];

	if (c < 0x80)
		return 1;
	if (c >= 0xc2 && c <= 0xdf)
		return (s[1] & 0xc0) == 0x80 ? 2 : 0;
	if (c >= 0xe0 && c <= 0xef) {
		if ((s[1] & 0xc0) != 0x80 || (s[2] & 0xc0) != 0x80)
			return 0;
		if ((c == 0xe0 && s[1] < 0xa0) || (c == 0xed && s[1] > 0x9f))
			return 0; /* overlong; a surrogate */
		return 3;
	}
	if (c >= 0xf0 && c <= 0xf4) {
		if ((s[1] & 0xc0) != 0x80 || (s[2] & 0xc0) != 0x80 ||
		    (s[3] & 0xc0) != 0x80)
			return 0;
		if ((c == 0xf0 && s[1] < 0x90) || (c == 0xf4 && s[1] > 0x8f))
			return 0; /* overlong; past U+10FFFF */
		return 4;
	}
	return 0;
}

/* A valid sequence of n bytes at s that is a control (C0, DEL, C1). */
static int is_control(const unsigned char *s, int n)
{
	return esc_control_len(s, (size_t)n) != 0;
}

/* Writes the n bytes of a valid sequence. */
static void put_seq(FILE *out, const unsigned char *s, int n)
{
	for (int i = 0; i < n; i++)
		putc_unlocked(s[i], out);
}

void xml_escape(FILE *out, const char *str)
{
	const unsigned char *s = (const unsigned char *)str;

	while (*s) {
		int n = utf8_seq(s);

		switch (n ? *s : 0) {
		case '&':
			fputs("&amp;", out);
			break;
		case '<':
			fputs("&lt;", out);
			break;
		case '>':
			fputs("&gt;", out);
			break;
		case '"':
			fputs("&quot;", out);
			break;
		case '\'':
			fputs("&#39;", out);
			break;
		default:
			/* XML 1.0 has no way to write most control characters. */
			if (!n || is_control(s, n))
				fputs(replacement, out);
			else
				put_seq(out, s, n);
		}
		s += n ? n : 1;
	}
}

void json_string(FILE *out, const char *str)
{
	const unsigned char *s = (const unsigned char *)str;

	putc_unlocked('"', out);
	while (*s) {
		int n = utf8_seq(s);

		if (!n) {
			fputs("\\ufffd", out);
			s++;
			continue;
		}
		if (*s == '"' || *s == '\\') {
			putc_unlocked('\\', out);
			putc_unlocked(*s, out);
		} else if (is_control(s, n)) {
			/* U+0000..U+009F: the code point is the last byte's
			 * value for C0 and DEL, 0x80 | its low 6 bits for C1. */
			fprintf(out, "\\u%04x", n == 1 ? *s : 0x80 | (s[1] & 0x3f));
		} else {
			put_seq(out, s, n);
		}
		s += n;
	}
	putc_unlocked('"', out);
}

size_t utf8_clean(const char *str, char *buf)
{
	const unsigned char *s = (const unsigned char *)str;
	size_t k = 0;

	while (*s) {
		int n = utf8_seq(s);

		if (!n || is_control(s, n)) {
			for (int i = 0; i < 3; i++)
				buf[k++] = replacement[i];
			s += n ? n : 1;
			continue;
		}
		for (int i = 0; i < n; i++)
			buf[k++] = s[i];
		s += n;
	}
	buf[k] = '\0';
	return k;
}

/*
 * escape.c - names from a trace as XML, JSON and clean UTF-8 (see
 * escape.h).  UTF-8 is checked as RFC 3629 defines it: no overlong
 * forms, no surrogates, nothing past U+10FFFF.
 */
#include <stdint.h>

#include "report/escape.h"

static const char replacement[] = "\xef\xbf\xbd"; /* U+FFFD */

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
			if (!n || *s < 0x20 || *s == 0x7f)
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
		} else if (*s < 0x20 || *s == 0x7f) {
			fprintf(out, "\\u%04x", *s);
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

		if (!n || *s < 0x20 || *s == 0x7f) {
			for (int i = 0; i < 3; i++)
				buf[k++] = replacement[i];
			s++;
			continue;
		}
		for (int i = 0; i < n; i++)
			buf[k++] = s[i];
		s += n;
	}
	buf[k] = '\0';
	return k;
}

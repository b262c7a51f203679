/*
 * escape.c - makes strings from a trace safe for a terminal: see escape.h.
 * Each byte of a control sequence becomes '?', so lengths (and the column
 * widths computed from them) stay what they were, and the rest of the
 * text, UTF-8 included, prints as it is.  C1 controls matter as much as
 * C0 ones: U+009B is CSI to terminals that honour 8-bit controls.
 */
#include <stdlib.h>
#include <string.h>

#include "report/escape.h"

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

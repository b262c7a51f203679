/*
 * say.c - record's messages about its targets.  What they name comes from
 * the targets: a process's name (its comm, which it sets itself), the
 * paths of the files it mapped, a version string read from its memory.
 * A process named "\e]0;...\a" or a library at a path holding "\e[2J"
 * would otherwise act on the user's terminal; so a message is formatted
 * whole, every control byte in it (lib/escape.h: C0, DEL, C1 as UTF-8)
 * made '?', and only then written with the newline that ends it.  report/
 * does the same to what it prints from a trace.
 */
#include <stdarg.h>
#include <stdio.h>

#include "lib/escape.h"
#include "record/say.h"

void say(FILE *f, int fresh_line, const char *fmt, ...)
{
	char buf[4096];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	esc_clean(buf);
	fprintf(f, "%sluaprof record: %s\n", fresh_line ? "\n" : "", buf);
}

/*
 * say.h - record's messages that carry strings from its targets (say.c).
 */
#ifndef LUAPROF_RECORD_SAY_H
#define LUAPROF_RECORD_SAY_H

#include <stdio.h>

/* Writes "luaprof record: MESSAGE\n" to f, on a line of its own after a
 * status line (fresh_line), the message's control bytes as '?'. */
void say(FILE *f, int fresh_line, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

#endif

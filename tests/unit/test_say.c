/*
 * test_say.c - record's messages about its targets (record/say.c): what
 * a target controls (its name, the paths it mapped) reaches the terminal
 * with no control byte left, and the message ends its line.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "record/say.h"
#include "tests/unit/unit.h"

/* What say() wrote, as a string (free it). */
static char *said(int fresh_line, const char *comm, const char *path)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	if (!f)
		return NULL;
	say(f, fresh_line, "pid %d (%s): LuaJIT in %s", 42, comm, path);
	fclose(f);
	return buf;
}

TEST(say_escapes_target_strings)
{
	/* A name that sets the window title, a path that clears the screen
	 * and one with a C1 CSI (U+009B) and a DEL. */
	char *out = said(0, "\x1b]0;owned\x07", "/tmp/lib\x1b[2Jx\xc2\x9b" "1m\x7f.so");

	CHECK(out != NULL);
	CHECK(!strcmp(out, "luaprof record: pid 42 (?]0;owned?): LuaJIT in "
			   "/tmp/lib?[2Jx??1m?.so\n"));
	free(out);
}

TEST(say_fresh_line_and_plain_text)
{
	char *out = said(1, "nginx", "/usr/lib/x86_64-linux-gnu/libluajit-5.1.so.2");

	CHECK(out != NULL);
	CHECK(!strcmp(out, "\nluaprof record: pid 42 (nginx): LuaJIT in "
			   "/usr/lib/x86_64-linux-gnu/libluajit-5.1.so.2\n"));
	free(out);
}

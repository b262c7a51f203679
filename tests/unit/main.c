/*
 * main.c - runs every registered unit test.  A test fails at its first
 * failing CHECK; the others still run.  Prints one line per test and exits
 * 1 if any failed.  A test whose material is absent says so with SKIP()
 * ("skip NAME: why"), neither passed nor failed.  `build/unit_tests
 * NAME...` runs only those tests.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tests/unit/unit.h"

#define MAX_TESTS 512

static struct {
	const char *name;
	void (*fn)(void);
} tests[MAX_TESTS];
static int ntests, current_failed, current_skipped;
static const char *current_name;
static char tmpdir[64];

void unit_register(const char *name, void (*fn)(void))
{
	if (ntests < MAX_TESTS) {
		tests[ntests].name = name;
		tests[ntests].fn = fn;
		ntests++;
	}
}

void unit_fail(const char *file, int line, const char *expr)
{
	if (!current_failed)
		printf("FAIL %s: %s:%d: %s\n", current_name, file, line, expr);
	current_failed = 1;
}

void unit_skip(const char *why)
{
	if (!current_failed && !current_skipped)
		printf("skip %s: %s\n", current_name, why);
	current_skipped = 1;
}

const char *unit_tmpdir(void)
{
	if (!tmpdir[0]) {
		strcpy(tmpdir, "/tmp/luaprof-unit.XXXXXX");
		if (!mkdtemp(tmpdir)) {
			perror("mkdtemp");
			exit(1);
		}
	}
	return tmpdir;
}

static int selected(const char *name, int argc, char **argv)
{
	if (argc < 2)
		return 1;
	for (int i = 1; i < argc; i++)
		if (!strcmp(argv[i], name))
			return 1;
	return 0;
}

int main(int argc, char **argv)
{
	int passed = 0, failed = 0, skipped = 0;

	for (int i = 0; i < ntests; i++) {
		if (!selected(tests[i].name, argc, argv))
			continue;
		current_failed = current_skipped = 0;
		current_name = tests[i].name;
		fflush(stdout);
		tests[i].fn();
		if (current_failed) {
			failed++;
		} else if (current_skipped) {
			skipped++;
		} else {
			printf("ok %s\n", tests[i].name);
			passed++;
		}
	}
	if (tmpdir[0]) {
		char cmd[128];
		snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
		if (system(cmd) != 0)
			fprintf(stderr, "could not remove %s\n", tmpdir);
	}
	if (skipped)
		printf("unit: %d passed, %d failed, %d skipped\n", passed, failed, skipped);
	else
		printf("unit: %d passed, %d failed\n", passed, failed);
	return failed ? 1 : 0;
}

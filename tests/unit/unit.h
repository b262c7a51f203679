/*
 * unit.h - the smallest test harness that does the job: TEST() registers a
 * function at load time, CHECK() records a failure with its location and
 * leaves the test, SKIP() leaves it saying why it cannot run here.  tests/unit/main.c runs them all and prints one line per
 * test ("ok NAME" / "FAIL NAME: file:line: expr") for tests/run to count.
 */
#ifndef LUAPROF_TESTS_UNIT_H
#define LUAPROF_TESTS_UNIT_H

void unit_register(const char *name, void (*fn)(void));
void unit_fail(const char *file, int line, const char *expr);
/* The test cannot run here (its material is absent): says why. */
void unit_skip(const char *why);
/* A scratch directory, created once per run, removed at exit. */
const char *unit_tmpdir(void);

#define TEST(name)                                                         \
	static void name(void);                                            \
	__attribute__((constructor)) static void register_##name(void)     \
	{                                                                  \
		unit_register(#name, name);                                \
	}                                                                  \
	static void name(void)

#define CHECK(cond)                                                        \
	do {                                                               \
		if (!(cond)) {                                             \
			unit_fail(__FILE__, __LINE__, #cond);              \
			return;                                            \
		}                                                          \
	} while (0)

/* Leaves the test as skipped, saying why. */
#define SKIP(why)                                                          \
	do {                                                               \
		unit_skip(why);                                            \
		return;                                                    \
	} while (0)

#endif

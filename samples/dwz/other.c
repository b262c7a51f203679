/*
 * other.c - the second program of tests/e2e/dwz.sh's package: it includes
 * mix.h as prog.c does, so that `dwz -m` finds mix()'s declaration in two
 * files and moves it to the shared one.  Never run.
 */
#include <stdio.h>

#include "mix.h"

int main(int argc, char **argv)
{
	(void)argv;
	printf("%lu\n", mix((unsigned long)argc));
	return 0;
}

/*
 * luaprof.c - the program's entry: dispatches the subcommand from a table.
 * It is the one file that sees both record/ and report/; they never see
 * each other, and meet only in the trace format (format/).
 */
#include <stdio.h>
#include <string.h>

#include "record/record.h"
#include "report/report.h"

static const struct command {
	const char *name;
	int (*run)(int argc, char **argv);
	const char *summary;
} commands[] = {
	{ "record", cmd_record, "sample processes with BPF and write a trace" },
	{ "report", cmd_report, "symbolize traces: top, folded, call graph, flame graph, pprof, speedscope" },
	{ "diff", cmd_diff, "compare two traces: what grew, what shrank" },
	{ "info", cmd_info, "describe a trace: processes, samples, losses, chunks" },
	{ "heap", cmd_heap, "snapshot a running LuaJIT VM's heap: what stays alive, by path" },
	{ "check", cmd_check, "say whether luaprof will run on this kernel, and why not" },
};

#define NCOMMANDS (sizeof(commands) / sizeof(commands[0]))

static void usage(FILE *f)
{
	fprintf(f, "usage: luaprof COMMAND [OPTIONS] [ARGS]\n\n"
		"A sampling profiler for LuaJIT programs and the native code around them.\n\n"
		"Commands:\n");
	for (size_t i = 0; i < NCOMMANDS; i++)
		fprintf(f, "  %-8s %s\n", commands[i].name, commands[i].summary);
	fprintf(f, "\n`luaprof COMMAND --help` describes a command.\n"
		"`luaprof --version` prints the version.\n");
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		usage(stderr);
		return 2;
	}
	if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") ||
	    !strcmp(argv[1], "help")) {
		usage(stdout);
		return 0;
	}
	if (!strcmp(argv[1], "--version")) {
		printf("luaprof %s\n", LUAPROF_VERSION);
		return 0;
	}
	for (size_t i = 0; i < NCOMMANDS; i++)
		if (!strcmp(argv[1], commands[i].name))
			return commands[i].run(argc - 1, argv + 1);
	fprintf(stderr, "luaprof: unknown command '%s'\n", argv[1]);
	usage(stderr);
	return 2;
}

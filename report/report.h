/*
 * report.h - the two commands that read a trace: `luaprof report` prints
 * where the time went (top, folded, callgraph), `luaprof info` what the
 * trace holds and how healthy it is.  luaprof.c dispatches to them; each
 * returns the process exit code: 0 ok, 1 failure, 2 misuse.
 */
#ifndef LUAPROF_REPORT_REPORT_H
#define LUAPROF_REPORT_REPORT_H

int cmd_report(int argc, char **argv); /* argv[0] = "report" */
int cmd_info(int argc, char **argv);   /* argv[0] = "info" */

#endif

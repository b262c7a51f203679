/*
 * record.h - `luaprof record`: sample target processes with BPF and write a
 * trace; and `luaprof check`: will it run on this kernel?  The only entry
 * points record/ offers the rest of the program.
 */
#ifndef LUAPROF_RECORD_RECORD_H
#define LUAPROF_RECORD_RECORD_H

int cmd_record(int argc, char **argv);
int cmd_check(int argc, char **argv);
/* luaprof heap: a snapshot of a LuaJIT VM's heap (heap.c). */
int cmd_heap(int argc, char **argv);
/* check_luajit.c: `luaprof check --luajit FILE|PID`; the exit status. */
int check_luajit(const char *what, int verbose);

#endif

/*
 * record.h - `luaprof record`: sample target processes with BPF and write a
 * trace.  The only entry point record/ offers the rest of the program.
 */
#ifndef LUAPROF_RECORD_RECORD_H
#define LUAPROF_RECORD_RECORD_H

int cmd_record(int argc, char **argv);

#endif

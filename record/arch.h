/*
 * arch.h - the instruction set this recorder is built for, which is that
 * of the kernel it runs on and of every process it samples: what is about
 * them (the special mappings a kernel lists, a trace's machine code, read
 * from a process's memory) goes by LP_HOST_MACHINE.  What is about a file
 * (its CFI, the directories its libraries are looked up in, an
 * allocator's code read from it) goes by that file's e_machine instead,
 * so that a recorder reads any object alike and a test on one machine
 * can read another's.
 */
#ifndef LUAPROF_RECORD_ARCH_H
#define LUAPROF_RECORD_ARCH_H

#include <elf.h>

#if defined(__x86_64__)
#define LP_HOST_MACHINE EM_X86_64
#elif defined(__aarch64__)
#define LP_HOST_MACHINE EM_AARCH64
#else
#define LP_HOST_MACHINE EM_NONE
#endif

#endif

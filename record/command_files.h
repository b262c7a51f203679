/*
 * command_files.h - the files a command will map, found before it runs
 * as the dynamic loader would find them (command_files.c).
 */
#ifndef LUAPROF_RECORD_COMMAND_FILES_H
#define LUAPROF_RECORD_COMMAND_FILES_H

struct Elf; /* libelf's Elf */

/* Calls each(path, fd, elf, arg) once for each file found of the command
 * cmd (found as execvp() would), its interpreter and the libraries it
 * needs (elf NULL if it is not an ELF file; both closed after).  0 or
 * -errno. */
int command_files(const char *cmd,
		  void (*each)(const char *path, int fd, struct Elf *elf, void *arg),
		  void *arg);

#endif

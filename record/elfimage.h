/*
 * elfimage.h - an ELF object read for its code, as symexec.h walks it:
 * its executable segments in memory, its exported symbols by name, its
 * other loaded bytes by virtual address (tables and strings the code
 * points to), with the relative relocations a shared object's pointer
 * tables need applied, and where its PLT stubs lie.
 *
 * The object is a file some target process mapped: sizes are bounded,
 * the file is read (never mapped: a file truncated under the recorder
 * would be SIGBUS), and every address is checked against the segments.
 */
#ifndef LUAPROF_RECORD_ELFIMAGE_H
#define LUAPROF_RECORD_ELFIMAGE_H

#include <stddef.h>
#include <stdint.h>

#include "record/symexec.h"

#define ELFIMAGE_MAX_CODE (64u << 20) /* bytes of executable segments */

struct elf_image {
	struct sx_image code;  /* code.code is owned */
	/* The span of the executable sections, 0 without section headers:
	 * arm64's linker puts .rodata in the executable segment too. */
	uint64_t text_start, text_end;
	uint16_t machine;      /* EM_X86_64, EM_AARCH64 */
	int fd;
	struct elf_image_seg {
		uint64_t vaddr, filesz, offset;
	} seg[16];
	unsigned nseg;
	struct elf_image_sym {
		char *name;
		uint64_t addr;
	} *syms;               /* exported functions, sorted by name */
	size_t nsyms;
	uint64_t *rel;         /* R_*_RELATIVE targets and addends: pairs */
	size_t nrel;
};

/* Reads the object open at fd (the descriptor is kept until
 * elf_image_close(); im must stay where it is, code.obj points to it).  0, or -errno: -ENOEXEC when it is not a 64-bit
 * ELF object with code. */
int elf_image_open(struct elf_image *im, int fd);
void elf_image_close(struct elf_image *im);
/* Whether vaddr is code: in the executable sections where they are
 * known, else in the executable segments. */
int elf_image_is_text(const struct elf_image *im, uint64_t vaddr);
/* An exported symbol's address (the defined ones of .dynsym), 0 if none. */
uint64_t elf_image_sym(const struct elf_image *im, const char *name);
/* len bytes of the file at vaddr, through the PT_LOAD segments: 0, or
 * -EFAULT when any of them lies outside the file's part of a segment. */
int elf_image_read(const struct elf_image *im, uint64_t vaddr, void *buf, size_t len);
/* The 8-byte pointer at vaddr as the loader leaves it relative to the
 * load address: a relative relocation's addend where one applies there,
 * else the bytes of the file.  0 or -EFAULT. */
int elf_image_pointer(const struct elf_image *im, uint64_t vaddr, uint64_t *out);

#endif

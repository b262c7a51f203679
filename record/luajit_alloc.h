/*
 * luajit_alloc.h - where the recorder probes a LuaJIT VM's allocator
 * (g->allocf) for record -e alloc (bpf/alloc.bpf.h): the one instruction
 * every call passes with its arguments intact, and where the block an
 * allocation returns can be read.  Found in the allocator's machine code
 * (luajit_alloc_x86.c, luajit_alloc_arm64.c), so that stripped builds and
 * a host's own lua_Alloc are probed the same way.
 */
#ifndef LUAPROF_RECORD_LUAJIT_ALLOC_H
#define LUAPROF_RECORD_LUAJIT_ALLOC_H

#include <stddef.h>
#include <stdint.h>

#define LJ_ALLOC_MAX_RET 4
#define LJ_ALLOC_CODE 256 /* bytes of the allocator read */

struct lj_alloc_sites {
	uint64_t site;        /* on_alloc's instruction */
	int site_stepped;     /* not one the kernel emulates: the entry */
	/* The functions whose return gives the block (uretprobes): those
	 * the allocator tail-calls to allocate, or, ret_self, itself. */
	uint64_t ret[LJ_ALLOC_MAX_RET];
	int nret;
	int ret_self;
};

/* From len bytes of code at addr, the allocator's entry, per instruction
 * set (the allocator's file's e_machine): 0, or -errno (-ENOMEM). */
int lj_alloc_sites_x86(const uint8_t *code, size_t len, uint64_t addr,
		       struct lj_alloc_sites *out);
int lj_alloc_sites_arm64(const uint8_t *code, size_t len, uint64_t addr,
			 struct lj_alloc_sites *out);

#endif

/*
 * luajit_arch.h - what LuaJIT's interpreter fixes per instruction set, in
 * one place: which registers hold G, BASE and PC while it runs, how its
 * C frame and its CFI look, and the instruction-set backend that reads
 * its code (symexec.h).  LuaJIT keeps such facts in lj_arch.h, lj_frame.h
 * and each vm_*.dasc; luaprof's readers of a LuaJIT object take them from
 * here, chosen by the object's ELF e_machine, never by the architecture
 * luaprof was built for: a trace recorded on arm64 is read on x86-64.
 *
 * The C frame here is lj_frame.h's (CFRAME_OFS_*, CFRAME_SIZE) for LuaJIT
 * 2.1 since 2017 on x86-64 and since its 2020 frame on arm64: a build's
 * code says its own (luajit_code.c), these complete what it does not.
 */
#ifndef LUAPROF_RECORD_LUAJIT_ARCH_H
#define LUAPROF_RECORD_LUAJIT_ARCH_H

#include <stdint.h>

#include "bpf/luajit_layout.h"
#include "record/symexec.h"

/* A VM entry's C frame: offsets from the frame's lowest address (the
 * stack pointer while interpreting), for one reference width. */
struct lj_arch_cframe {
	uint16_t l, pc, prev, nres, size;
};

struct lj_arch {
	const char *name;
	uint16_t machine;           /* ELF e_machine */
	const struct sx_isa *isa;
	/*
	 * The interpreter's fixed registers (the isa's numbers), live
	 * wherever its code runs.  g_reg holds G + g2disp (the dispatch
	 * table, x86-64's r14) when g_reg_dispatch, else G itself (arm64's
	 * x22, which traces keep too): G is g_reg - lj_arch_g_bias().
	 */
	int g_reg, base_reg, pc_reg;
	uint8_t g_reg_dispatch;
	/* [1] with 64-bit references (GC64), [0] with 32-bit ones */
	struct lj_arch_cframe cframe[2];
	/*
	 * The interpreter's one CFI row: CFA = cfa_reg + cfa_off, or with
	 * cfa_off 0 the stack pointer + the C frame's size (x86-64's rsp +
	 * CFRAME_SIZE, with rbp saved just below the return address; arm64's
	 * x29 + 16, x29 and x30 saved at CFA - 16 and - 8).  DWARF numbers.
	 */
	int cfa_reg, cfa_off;
	/* While a trace runs: g->vmstate holds its number (x86-64) or 0
	 * (arm64's BC_JLOOP stores 0: the trace is found by its code), and
	 * the stack pointer is that many bytes below the C frame before the
	 * trace's own spadjust (arm64's SPS_FIXED 16, x86-64 none). */
	uint8_t vmstate_traceno;
	uint8_t trace_sp_below;
	/* The size of LuaJIT's MCode (lj_target_*.h), the unit of a
	 * snapshot's mcofs: x86-64's bytes, arm64's 4-byte words. */
	uint8_t mcode_unit;
};

/* The architecture of an ELF e_machine, or NULL when LuaJIT on it is not
 * one luaprof reads. */
const struct lj_arch *lj_arch_for(uint16_t machine);
/* What to subtract from g_reg's value for G, with layout lo. */
int64_t lj_arch_g_bias(const struct lj_arch *a, const struct lj_layout *lo);

#endif

/*
 * luajit_arch.c - the table of luajit_arch.h: LuaJIT's interpreter on
 * each instruction set luaprof reads, from its vm_*.dasc and lj_frame.h.
 *
 *   x86-64 (vm_x64.dasc): DISPATCH r14 (G + GG_G2DISP), BASE rdx, PC rbx;
 *     C frame 80 bytes above the return address into the caller; CFI:
 *     CFA = rsp + 80; BC_JLOOP stores the trace's number in vmstate.
 *   arm64 (vm_arm64.dasc): GL x22 (G itself), BASE x19, PC x21; C frame
 *     208 bytes, SAVE_CFRAME +0, SAVE_PC +8, SAVE_L +16, SAVE_NRES +40,
 *     x29/x30 at +192/+200 (as bookworm's, bookworm's luajit2 and
 *     trixie's sources have it; 2.1.0-beta3 of 2017 kept SAVE_L at +176:
 *     the code's derivation finds whichever a build has); CFI: CFA =
 *     x29 + 16; BC_JLOOP stores 0 in vmstate and enters the trace 16
 *     bytes below the C frame (SPS_FIXED).  LuaJIT on arm64 is GC64 only.
 */
#include <elf.h>

#include "record/luajit_arch.h"

static const struct lj_arch arches[] = {
	{
		.name = "x86_64", .machine = EM_X86_64, .isa = &sx_isa_x86_64,
		.g_reg = 14, .base_reg = 2, .pc_reg = 3, .g_reg_dispatch = 1,
		.cframe = { [0] = { .l = 24, .pc = 28, .prev = 32, .nres = 16, .size = 80 },
			    [1] = { .l = 16, .pc = 24, .prev = 32, .nres = 8, .size = 80 } },
		.cfa_reg = 7 /* rsp */, .cfa_off = 0,
		.vmstate_traceno = 1, .trace_sp_below = 0, .mcode_unit = 1,
	},
	{
		.name = "arm64", .machine = EM_AARCH64, .isa = &sx_isa_arm64,
		.g_reg = 22, .base_reg = 19, .pc_reg = 21, .g_reg_dispatch = 0,
		.cframe = { [1] = { .l = 16, .pc = 8, .prev = 0, .nres = 40, .size = 208 } },
		.cfa_reg = 29, .cfa_off = 16,
		.vmstate_traceno = 0, .trace_sp_below = 16, .mcode_unit = 4,
	},
};

const struct lj_arch *lj_arch_for(uint16_t machine)
{
	for (size_t i = 0; i < sizeof(arches) / sizeof(arches[0]); i++)
		if (arches[i].machine == machine)
			return &arches[i];
	return NULL;
}

int64_t lj_arch_g_bias(const struct lj_arch *a, const struct lj_layout *lo)
{
	return a->g_reg_dispatch ? lo->g2disp : 0;
}

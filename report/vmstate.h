/*
 * vmstate.h - `report --vmstate`: where the LuaJIT VM was at each sample
 * (compiled trace, interpreter, C function, GC, JIT compiler), overall and
 * per Lua function, as LuaJIT's own jit.p prints its `v` mode.
 */
#ifndef LUAPROF_REPORT_VMSTATE_H
#define LUAPROF_REPORT_VMSTATE_H

#include <stdint.h>
#include <stdio.h>

#include "format/trace.h"
#include "report/luajit_protos.h"
#include "report/profile.h"

enum vm_class {
	VMC_COMPILED,    /* N: a compiled trace */
	VMC_INTERPRETED, /* I */
	VMC_C,           /* C: a C function called from Lua */
	VMC_GC,          /* G */
	VMC_JIT,         /* J: trace exit, recorder, optimizer, assembler */
	VMC_HOST,        /* a VM exists but runs no Lua: host code */
	VMC_UNKNOWN,     /* a LuaJIT process whose VM state was unreadable */
	VMC_NATIVE,      /* no LuaJIT in the process */
	VMC_MAX
};

struct vmstate;

/* The class of a sample's VM state, and its name ("Interpreted"). */
enum vm_class vmstate_class(const struct lp_sample *smp);
const char *vmstate_class_name(enum vm_class c);

int vmstate_new(struct vmstate **out, struct lua *lua);
void vmstate_free(struct vmstate *v);
/* Counts one sample (after filters). */
int vmstate_add(struct vmstate *v, const struct lp_sample *smp, uint32_t lstack_idx);
int out_vmstate(FILE *out, const struct profile *p, const struct vmstate *v,
		unsigned rows);

#endif

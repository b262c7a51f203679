/* SPDX-License-Identifier: GPL-2.0 */
/*
 * regs.bpf.h - were saved registers user mode's?  The one pt_regs field
 * that differs between the kernels luaprof runs on.
 *
 * The low two bits of pt_regs.cs are the privilege level the registers
 * were saved at, 3 for user mode.  Up to 6.8 cs is an unsigned long; FRED
 * (6.9) made it a u16 in a union with a u64 csx:
 *
 *   6.1:   unsigned long ip;  unsigned long cs;             unsigned long flags;
 *   6.9+:  unsigned long ip;  union { u16 cs; u64 csx; };   unsigned long flags;
 *
 * A name only some kernels know makes the load fail on the others (libbpf
 * cannot resolve the relocation), so the reads go through flavors of
 * pt_regs (pt_regs___NAME: libbpf matches them to the running kernel's
 * pt_regs by field name) and bpf_core_field_exists/_size, which libbpf
 * turns into constants: the branch the kernel lacks is dead code that the
 * verifier never checks.
 */
#ifndef LUAPROF_BPF_REGS_BPF_H
#define LUAPROF_BPF_REGS_BPF_H

struct pt_regs___csx {
	__u64 csx;
} __attribute__((preserve_access_index));

struct pt_regs___cs {
	unsigned long cs;
} __attribute__((preserve_access_index));

/* The first two bytes of cs, whatever its width: x86 is little-endian. */
struct pt_regs___cs16 {
	__u16 cs;
} __attribute__((preserve_access_index));

/*
 * A perf_event context's registers: the verifier accepts only 8-byte
 * loads from them, so csx where the kernel has it, cs where cs is 8 bytes
 * wide.  On a kernel with neither, the instruction pointer tells: kernel
 * code runs in the upper half of the address space, user code never does.
 */
static __always_inline bool ctx_regs_user_mode(struct bpf_perf_event_data *ctx)
{
	if (bpf_core_field_exists(struct pt_regs___csx, csx))
		return (((struct pt_regs___csx *)&ctx->regs)->csx & 3) == 3;
	if (bpf_core_field_size(struct pt_regs___cs, cs) == 8)
		return (((struct pt_regs___cs *)&ctx->regs)->cs & 3) == 3;
	return (long)ctx->regs.ip >= 0;
}

/* Registers in kernel memory (bpf_task_pt_regs): a probe read of cs's
 * first two bytes fits every layout. */
static __always_inline bool task_regs_user_mode(struct pt_regs *regs)
{
	return (BPF_CORE_READ((struct pt_regs___cs16 *)regs, cs) & 3) == 3;
}

#endif

/* SPDX-License-Identifier: GPL-2.0 */
/*
 * arch_arm64.bpf.h - arm64's side of bpf/arch.bpf.h: which pt_regs field
 * holds each register the walkers read, the system call numbers they
 * know, and whether saved registers are user mode's.
 *
 * The interpreter keeps G itself in x22 (GLREG), BASE in x19 and PC in
 * x21 (vm_arm64.dasc), G in traces too.  A
 * call (bl, blr) leaves the return address in x30, the link register:
 * at a function's first instruction the stack pointer is the caller's.
 * DWARF numbers x0..x30 0..30 and sp 31.
 *
 *   struct pt_regs {                  6.1 .. 6.18
 *       union { struct user_pt_regs user_regs;
 *               struct { u64 regs[31]; u64 sp; u64 pc; u64 pstate; }; };
 *       u64 orig_x0; s32 syscallno; ...
 *
 * A perf_event's context holds the user_pt_regs part, which is where a
 * pt_regs starts.  The mode bits of pstate (M[4:0]) are 0 for EL0 in
 * AArch64 state: user mode.
 */
#ifndef LUAPROF_BPF_ARCH_ARM64_BPF_H
#define LUAPROF_BPF_ARCH_ARM64_BPF_H

#define LP_PT_IP(p) ((p)->pc)
#define LP_PT_SP(p) ((p)->sp)
#define LP_PT_FP(p) ((p)->regs[29])
#define LP_PT_LR(p) ((p)->regs[30])
#define LP_PT_VM_GD(p) ((p)->regs[22])   /* G itself */
#define LP_PT_VM_BASE(p) ((p)->regs[19])
#define LP_PT_VM_PC(p) ((p)->regs[21])
#define LP_VM_G(gd, g2disp) (gd)
/* lj_frame.h's arm64 C frame: PREV +0, PC +8, L +16, NRES +40, x29 and
 * x30 at +192 and +200 of its 208 bytes. */
#define LP_CF_NRES(cf_l) ((cf_l) + 24)
/* A running trace stores 0 in g->vmstate, not its number (BC_JLOOP:
 * "Traces on ARM64 don't store the trace #"). */
#define LP_TRACE_UNNUMBERED 1
#define LP_CORE_IP(p) BPF_CORE_READ(p, pc)
#define LP_CORE_SP(p) BPF_CORE_READ(p, sp)
#define LP_CORE_SYSCALL(p) BPF_CORE_READ(p, syscallno)

#define LP_NR_EXECVE 221
#define LP_NR_EXECVEAT 281
/* (No epoll_wait: libc's calls epoll_pwait.) */
#define LP_NR_EPOLL_PWAIT 22
#define LP_NR_EPOLL_PWAIT2 441

#define LP_ENTRY_SP_TO_RETURN 0

/* Calls leave the return address in x30.  With pointer authentication
 * (paciasp) a saved one carries a signature in the bits above the
 * address; user addresses fit in 48 bits. */
#define LP_LINK_REG 1
#define LP_RA_STRIP(ra) ((ra) & 0x0000ffffffffffffull)

/*
 * The signal trampoline (the vDSO's __kernel_rt_sigreturn, an
 * LP_CFA_SIGNAL row): sp points at the struct rt_sigframe the kernel
 * wrote, its sigcontext's x29, x30, sp and pc at +544 .. +568.
 *
 *   rt_sigframe: siginfo           +0    (128 bytes)
 *                ucontext          +128  uc_flags, uc_link, uc_stack,
 *                                        uc_sigmask, 120 bytes unused
 *                  uc_mcontext     +304  (16-aligned) fault_address,
 *                    regs[31]      +312  x29 +544, x30 +552
 *                    sp, pc        +560, +568
 *                    __reserved    +592  fpsimd_context first
 */
#define LP_SIGFRAME_FP 544
#define LP_SIGFRAME_LR 552
#define LP_SIGFRAME_SP 560
#define LP_SIGFRAME_PC 568
/* The first record of the sigcontext's __reserved area (+592), which the
 * kernel always writes: the FP/SIMD context's magic.  A stack pointer that
 * no longer points at the frame reads something else: a tick while
 * rt_sigreturn restores the registers, sp already the interrupted code's,
 * pc still the trampoline's. */
#define LP_SIGFRAME_MAGIC_AT 592
#define LP_SIGFRAME_MAGIC 0x46508001u /* FPSIMD_MAGIC */

/* 1 if the instruction before return address ra is a call: bl, blr, or
 * the authenticating blraa/blrab/blraaz/blrabz. */
static __always_inline int arch_is_call_site(__u64 ra)
{
	__u32 insn;

	if (ra < 4 || bpf_probe_read_user(&insn, sizeof(insn), (const void *)(ra - 4)))
		return 0;
	return (insn & 0xfc000000) == 0x94000000 || (insn & 0xfffffc1f) == 0xd63f0000 ||
	       (insn & 0xfefff800) == 0xd63f0800;
}

#define LP_DWARF_GPRS 32

#define LP_PT_GPRS(p, gpr) do {						\
	_Pragma("unroll") for (int i_ = 0; i_ < 31; i_++)		\
		(gpr)[i_] = (p)->regs[i_];				\
	(gpr)[31] = (p)->sp;						\
} while (0)

/* A register the kernel saved at entry, by DWARF number: 0, or -1 for sp
 * (which the caller has) and numbers beyond it. */
static __noinline int arch_saved_reg(__u32 dwarf, __u64 *v)
{
	struct pt_regs *regs = (struct pt_regs *)bpf_task_pt_regs(bpf_get_current_task_btf());

	if (!regs || dwarf >= 31)
		return -1;
	return bpf_probe_read_kernel(v, sizeof(*v), &regs->regs[dwarf & 31]) ? -1 : 0;
}

#define LP_PSTATE_MODE 0x1f /* M[4:0]: 0 is EL0t, AArch64 user mode */

static __always_inline bool ctx_regs_user_mode(struct bpf_perf_event_data *ctx)
{
	return (((struct pt_regs *)&ctx->regs)->pstate & LP_PSTATE_MODE) == 0;
}

static __always_inline bool task_regs_user_mode(struct pt_regs *regs)
{
	return (BPF_CORE_READ(regs, pstate) & LP_PSTATE_MODE) == 0;
}

#endif

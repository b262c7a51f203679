/* SPDX-License-Identifier: GPL-2.0 */
/*
 * arch_x86.bpf.h - x86_64's side of bpf/arch.bpf.h: which pt_regs field
 * holds each register the walkers read, the system call numbers they
 * know, and whether saved registers are user mode's.
 *
 * The interpreter keeps DISPATCH (G + g2disp) in r14, BASE in rdx and PC
 * in rbx (vm_x64.dasc).  A call pushes the return address: at a
 * function's first instruction it is at [rsp], and the caller's rsp is 8
 * bytes above.  DWARF numbers the sixteen general registers rax rdx rcx
 * rbx rsi rdi rbp rsp r8..r15.
 *
 * Were the saved registers user mode's?  The one pt_regs field that
 * differs between the kernels luaprof runs on.
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
#ifndef LUAPROF_BPF_ARCH_X86_BPF_H
#define LUAPROF_BPF_ARCH_X86_BPF_H

/* A struct pt_regs's registers, by their role (p: a pointer to one). */
#define LP_PT_IP(p) ((p)->ip)
#define LP_PT_SP(p) ((p)->sp)
#define LP_PT_FP(p) ((p)->bp)
#define LP_PT_LR(p) 0ull            /* no link register */
#define LP_PT_VM_GD(p) ((p)->r14)   /* G + layout.g2disp */
#define LP_PT_VM_BASE(p) ((p)->dx)
#define LP_PT_VM_PC(p) ((p)->bx)
/* The candidate G the interpreter's register gives (user_regs.vm_gd). */
#define LP_VM_G(gd, g2disp) ((gd) - (__s64)(g2disp))
/* A VM C frame's nres (CFRAME_OFS_NRES) by where it saves L
 * (CFRAME_OFS_L): 8 bytes below, GC64 or not. */
#define LP_CF_NRES(cf_l) ((cf_l) - 8)
/* A running trace stores its number in g->vmstate. */
#define LP_TRACE_UNNUMBERED 0
/* The same, read from kernel memory (bpf_task_pt_regs). */
#define LP_CORE_IP(p) BPF_CORE_READ(p, ip)
#define LP_CORE_SP(p) BPF_CORE_READ(p, sp)
#define LP_CORE_SYSCALL(p) BPF_CORE_READ(p, orig_ax)

#define LP_NR_EXECVE 59
#define LP_NR_EXECVEAT 322
#define LP_NR_EPOLL_WAIT 232
#define LP_NR_EPOLL_PWAIT 281
#define LP_NR_EPOLL_PWAIT2 441

/* Bytes between the stack pointer at a function's first instruction and
 * at its return: the return address the call pushed. */
#define LP_ENTRY_SP_TO_RETURN 8

/* Calls push the return address (no link register); return addresses
 * carry no signature bits. */
#define LP_LINK_REG 0
#define LP_RA_STRIP(ra) (ra)

/* The signal trampoline (__restore_rt, an LP_CFA_SIGNAL row): rsp points
 * at a ucontext_t, uc_mcontext.gregs[] at +40, REG_RBP, REG_RSP and
 * REG_RIP of the interrupted code at +120, +160, +168. */
#define LP_SIGFRAME_FP 120
#define LP_SIGFRAME_SP 160
#define LP_SIGFRAME_PC 168

/*
 * Is ra a return address: does a call instruction end right before it?
 * E8 rel32 (5 bytes), or FF /2, an indirect call through a register
 * (2 bytes, 3 with a REX prefix), through memory with a disp8 (3) or
 * RIP-relative or disp32 (6).  Code that stack data points into rarely
 * passes.
 */
static __always_inline int arch_is_call_site(__u64 ra)
{
	__u8 b[7];

	if (ra < 7 || bpf_probe_read_user(b, sizeof(b), (const void *)(ra - 7)))
		return 0;
	return b[2] == 0xe8 || (b[5] == 0xff && (b[6] & 0xf8) == 0xd0) ||
	       (b[4] == 0xff && (b[5] & 0x38) == 0x10) ||
	       (b[1] == 0xff && (b[2] & 0x38) == 0x10);
}

/* General registers by DWARF number that user_regs.gpr[] holds. */
#define LP_DWARF_GPRS 16

/* Fills gpr[] from p (a perf_event's or uprobe's context). */
#define LP_PT_GPRS(p, gpr) do {						\
	(gpr)[0] = (p)->ax;  (gpr)[1] = (p)->dx;  (gpr)[2] = (p)->cx;	\
	(gpr)[3] = (p)->bx;  (gpr)[4] = (p)->si;  (gpr)[5] = (p)->di;	\
	(gpr)[6] = (p)->bp;  (gpr)[7] = (p)->sp;  (gpr)[8] = (p)->r8;	\
	(gpr)[9] = (p)->r9;  (gpr)[10] = (p)->r10; (gpr)[11] = (p)->r11; \
	(gpr)[12] = (p)->r12; (gpr)[13] = (p)->r13; (gpr)[14] = (p)->r14; \
	(gpr)[15] = (p)->r15;						\
} while (0)

/*
 * A register the kernel saved at entry, by DWARF number: 0, or -1 for
 * rsp and rbp (which the caller has) and numbers beyond r15.
 */
static __noinline int arch_saved_reg(__u32 dwarf, __u64 *v)
{
	struct pt_regs *regs = (struct pt_regs *)bpf_task_pt_regs(bpf_get_current_task_btf());

	if (!regs)
		return -1;
	switch (dwarf) {
	case 0: *v = BPF_CORE_READ(regs, ax); return 0;
	case 1: *v = BPF_CORE_READ(regs, dx); return 0;
	case 2: *v = BPF_CORE_READ(regs, cx); return 0;
	case 3: *v = BPF_CORE_READ(regs, bx); return 0;
	case 4: *v = BPF_CORE_READ(regs, si); return 0;
	case 5: *v = BPF_CORE_READ(regs, di); return 0;
	case 8: *v = BPF_CORE_READ(regs, r8); return 0;
	case 9: *v = BPF_CORE_READ(regs, r9); return 0;
	case 10: *v = BPF_CORE_READ(regs, r10); return 0;
	case 11: *v = BPF_CORE_READ(regs, r11); return 0;
	case 12: *v = BPF_CORE_READ(regs, r12); return 0;
	case 13: *v = BPF_CORE_READ(regs, r13); return 0;
	case 14: *v = BPF_CORE_READ(regs, r14); return 0;
	case 15: *v = BPF_CORE_READ(regs, r15); return 0;
	}
	return -1;
}

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

/* SPDX-License-Identifier: GPL-2.0 */
/*
 * arch.bpf.h - the instruction set the BPF programs are built for: one
 * header per architecture says which register plays each role, so that
 * the walkers are written once.  clang's -D__TARGET_ARCH_* (the
 * Makefile's ARCH) chooses, as it does for libbpf's bpf_tracing.h.
 *
 *   LP_PT_IP/SP/FP/LR(p)    pc, stack pointer, frame pointer, link register
 *                           (0 where calls push the return address)
 *   LP_PT_VM_GD/BASE/PC(p)  the interpreter's G or DISPATCH, BASE, PC
 *   LP_VM_G(gd, g2disp)     the candidate G that register gives
 *   LP_CF_NRES(cf_l)        where a VM C frame keeps nres
 *   LP_TRACE_UNNUMBERED     a running trace leaves g->vmstate 0
 *   LP_CORE_*(p)            the same read from kernel memory
 *   LP_ENTRY_SP_TO_RETURN   sp at a function's return - sp at its entry
 *   LP_LINK_REG             calls leave the return address in a register
 *   LP_RA_STRIP(ra)         a saved return address without signature bits
 *   arch_is_call_site(ra)   the instruction before ra is a call
 *   LP_DWARF_GPRS           registers, by DWARF number, that a capture keeps
 *   arch_saved_reg()        one the kernel saved, by DWARF number
 *   ctx_regs_user_mode(), task_regs_user_mode()
 */
#ifndef LUAPROF_BPF_ARCH_BPF_H
#define LUAPROF_BPF_ARCH_BPF_H

#if defined(__TARGET_ARCH_x86)
#include "bpf/arch_x86.bpf.h"
#elif defined(__TARGET_ARCH_arm64)
#include "bpf/arch_arm64.bpf.h"
#else
#error "luaprof's BPF programs are built for x86 or arm64 (-D__TARGET_ARCH_...)"
#endif

#endif

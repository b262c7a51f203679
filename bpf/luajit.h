/*
 * luajit.h - how to read a LuaJIT VM from outside: the struct offsets of
 * one LuaJIT build (struct lj_layout) and what the recorder tells the BPF
 * walker about each target process (struct lj_proc).  Shared by
 * bpf/walk_lua.bpf.h and record/; fixed-width fields, size-asserted.
 *
 * Offsets differ between upstream LuaJIT 2.1 and OpenResty's luajit2
 * (which adds exdata, exdata2 and saved_jit_base), between GC64 and 32-bit
 * references, and between releases (sizeof(jit_State) moves the dispatch
 * table).  record/luajit_*.c selects or derives a layout for the build it
 * finds in a target and validates it on the live process.
 *
 *   GG_State (one per VM)                         x86_64 registers
 *   +---------------------+ <- &GG->L = main L    while interpreting:
 *   | lua_State L         |                          r14 = DISPATCH
 *   +---------------------+ <- G = &GG->g  (gg_g)    rdx = BASE
 *   | global_State g      |   .vmstate .cur_L        rbx = PC (next ins)
 *   |                     |   .mainthref == &GG->L
 *   | jit_State J ...     |
 *   +---------------------+ <- DISPATCH = G + g2disp
 *   | dispatch[] ...      |
 *   +---------------------+
 *
 *   Lua stack, LJ_FR2 (GC64): two slots per frame header
 *      ... [func][link] | [slot0 = base][slot1] ...
 *     link: return PC (Lua frame) or delta|type (C, CONT, VARG, CP, PCALL)
 *
 *   C frame of a VM entry (cframe; rsp while interpreting), GC64:
 *     +0 tmp +16 SAVE_L +24 SAVE_PC +32 SAVE_CFRAME (prev) ... +72 return
 *     address into lua_pcall/lua_call/lua_resume; CFA = cframe + cf_size.
 */
#ifndef LUAPROF_BPF_LUAJIT_H
#define LUAPROF_BPF_LUAJIT_H

#ifndef __VMLINUX_H__
#include <linux/types.h>
#endif

#define LJ_LAYOUT_GC64 0x1u      /* 64-bit GCRef/MRef, two-slot frames */
#define LJ_LAYOUT_OPENRESTY 0x2u /* OpenResty's luajit2 */

/* g->vmstate holds ~state while not running a trace, else a trace no. */
enum lj_vmstate {
	LJ_VMST_INTERP = 0,
	LJ_VMST_C = 1,
	LJ_VMST_GC = 2,
	LJ_VMST_EXIT = 3,
	LJ_VMST_RECORD = 4,
	LJ_VMST_OPT = 5,
	LJ_VMST_ASM = 6,
};

/* Frame link types (low 3 bits of a frame's link slot). */
enum lj_frame_type {
	LJ_FRAME_LUA = 0,
	LJ_FRAME_C = 1,
	LJ_FRAME_CONT = 2,
	LJ_FRAME_VARG = 3,
	LJ_FRAME_LUAP = 4,
	LJ_FRAME_CP = 5,
	LJ_FRAME_PCALL = 6,
	LJ_FRAME_PCALLH = 7,
};

/* Fast function ids at and below which a GCfunc is not a builtin. */
#define LJ_FF_LUA 0
#define LJ_FF_C 1

struct lj_layout {
	__u32 flags;   /* LJ_LAYOUT_* */
	__s32 g2disp;  /* DISPATCH - G */
	__u32 gg_g;    /* G - &GG->L */
	__u16 ref_size; /* 8 with GC64, else 4 */
	/* global_State */
	__u16 g_vmstate, g_mainthref, g_cur_L, g_jit_base;
	/* lua_State */
	__u16 l_glref, l_base, l_top, l_stack, l_maxstack, l_cframe;
	/* GCfunc (GCfuncL / GCfuncC) */
	__u16 fn_ffid, fn_pc, fn_f, fn_upvalue;
	/* GCproto: pt_size is sizeof(GCproto), where the bytecode starts */
	__u16 pt_size, pt_sizebc, pt_k, pt_sizekgc, pt_sizekn, pt_sizept;
	__u16 pt_numparams, pt_framesize, pt_sizeuv, pt_flags;
	__u16 pt_chunkname, pt_firstline, pt_numline, pt_lineinfo;
	__u16 pt_uvinfo, pt_varinfo;
	/* GCstr: the characters follow the header */
	__u16 str_len, str_size;
	/* C frame of a VM entry */
	__u16 cf_l, cf_pc, cf_prev, cf_size;
	/* fast function ids the walker follows into another coroutine */
	__u8 ffid_coroutine_resume, ffid_coroutine_wrap_aux;
	__u8 pad[2];
	/* Compiled traces: J = G + g2j; J->trace is an 8-byte pointer to
	 * sizetrace GCRefs; a GCtrace's fields.  g2j 0: not known, traces
	 * are then recorded by number only. */
	__u16 g2j, j_trace, j_sizetrace;
	__u16 tr_startpt, tr_startpc, tr_mcode, tr_szmcode, tr_root, tr_traceno;
	/* A trace's snapshots, read by the recorder only: GCtrace's counts
	 * (nsnap u16, nsnapmap u32, nk u32) and pointers (snap, snapmap,
	 * ir), and SnapShot's size and fields (mapofs u32, mcofs u16, nent
	 * u8).  sn_size 0: not known, traces are recorded without them. */
	__u16 tr_nsnap, tr_nsnapmap, tr_nk, tr_snap, tr_snapmap, tr_ir;
	__u16 sn_size, sn_mapofs, sn_mcofs, sn_nent;
};

/* Per target process, in the BPF map lj_procs, keyed by tgid. */
struct lj_proc {
	struct lj_layout layout;
	__u64 vm_start, vm_end; /* the interpreter's code: BASE/PC are live */
	__u64 g_hint;           /* a G the recorder knows, 0 if none */
};

/* A LuaJIT executable whose VM the recorder validated in one process, key
 * of the BPF map lj_images: a process that execs it gets its layout from
 * its first tick, before the recorder hears of it.  The file as the
 * kernel names it (dev: MAJOR << 20 | MINOR), and its size, against an
 * inode number that another file took.  The value is a struct lj_proc
 * whose interpreter range is relative to mm->start_code. */
struct lj_image_key {
	__u64 dev;
	__u64 ino;
	__u64 size;
};

/* 16 bits that change when a proto address is reused by another proto:
 * from its chunk name reference, first line and line count.  Computed by
 * the walker at each sample and by the recorder when it reads the proto,
 * so a proto read after its address was reused is not believed. */
static inline __u16 lj_proto_fingerprint(__u64 chunkname, __u32 firstline,
					 __u32 numline)
{
	__u64 h = chunkname * 0x9e3779b97f4a7c15ull ^
		  ((__u64)firstline << 32 | numline);

	h ^= h >> 29;
	h *= 0xbf58476d1ce4e5b9ull;
	h ^= h >> 32;
	return (__u16)(h ^ (h >> 16)) | 1; /* never 0: 0 means "none" */
}

_Static_assert(sizeof(struct lj_layout) == 128, "lj_layout layout");
_Static_assert(sizeof(struct lj_proc) == 152, "lj_proc layout");
_Static_assert(sizeof(struct lj_image_key) == 24, "lj_image_key layout");

#endif

/*
 * luajit_layout.h - how to read a LuaJIT VM from outside: the struct offsets of
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
#ifndef LUAPROF_BPF_LUAJIT_LAYOUT_H
#define LUAPROF_BPF_LUAJIT_LAYOUT_H

#ifndef __VMLINUX_H__
#include <linux/types.h>
#endif
#include "bpf/file_id.h"

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

/*
 * A frame's link slot (lj_frame.h's frame_pc/frame_ftsz) says how to reach
 * the frame below it, in its low bits:
 *
 *      link             type    the frame below, and its pc
 *   return PC   ..00     LUA     A + 1 + LJ_FR2 slots below, A the slot of
 *                                the CALL before the return PC; pc = link
 *   delta       ..001    C       delta bytes below; the VM was entered
 *               ..101    CP      from C here: the pc is in the older cframe
 *               ..010    CONT    delta bytes below; pc in the slot below
 *                                (GC64: two slots down)
 *               ..011    VARG    delta bytes below, the vararg function's
 *                                own frame, skipped; pc unchanged
 *               ..110    PCALL   delta bytes below (pcall, xpcall)
 *               ..111    PCALLH
 *
 * A PC is 4-byte aligned; a delta, a multiple of 8 bytes, is 32 bits wide
 * without GC64.  frame_type() tells LUA, C, CONT and VARG apart (PCALL
 * reads as CONT, PCALLH as VARG); frame_typep() all eight.
 */
#define lj_frame_type(link) ((__u32)(link) & 3)  /* LUA, C, CONT, VARG */
#define lj_frame_typep(link) ((__u32)(link) & 7) /* ... and LUAP, CP, PCALL, PCALLH */
#define lj_frame_islua(link) (lj_frame_type(link) == LJ_FRAME_LUA)
#define lj_frame_delta(link, gc64) \
	((gc64) ? (__u64)(link) & ~7ull : (__u64)((__u32)(link) & ~7u))
/* A cframe pointer (L->cframe, a cframe's saved previous one) without
 * its two flag bits (lj_frame.h's cframe_raw). */
#define lj_cframe_raw(cf) ((__u64)(cf) & ~3ull)
/* A bytecode instruction's A operand (lj_bc.h's bc_a): a CALL's slot. */
#define lj_bc_a(ins) (((__u32)(ins) >> 8) & 0xff)

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

/*
 * The fields of struct lj_layout, written once (as LuaJIT writes its
 * bytecodes in BCDEF) and expanded into the struct below and, in record/,
 * into the offsets file's names (luajit_detect.c), the DWARF reader's
 * members (luajit_dwarf.c) and the values shared by the built-in rows of
 * one reference width (luajit_layouts.c, which says where they come from).
 * A new field is one line here.  Columns:
 *
 *   type    of the field (fixed width: __u16 for u16)
 *   name    of the field, and of its line in an offsets file
 *   group   VM: needed to walk Lua frames, an offsets file must give it;
 *           FF, JIT, SNAP: optional (without them no coroutine crossing,
 *           traces by number only, no snapshots); JIT and SNAP are read
 *           from DWARF all or none; PAD: padding, in the struct only
 *   from    where DWARF has it: M: a member's offset in struct `struct`;
 *           SIZE: sizeof(struct); GG: from GG_State's layout; FLAGS: from
 *           the types found; FRAME: a macro of lj_frame.h, not in DWARF;
 *           FF: lj_ff.h's enum; NONE
 *   struct  LuaJIT's type (T_* in luajit_dwarf.c), member its member
 *   width   the member's size the recorder reads it at (SNAP), 0 unchecked
 *   gc64, nogc64  the value in the built-in builds with 64-bit and with
 *           32-bit references, "-" where each build has its own (GG, FLAGS)
 *
 * The BPF walker reads the struct only; the other columns are record/'s.
 */
#define LJ_LAYOUTDEF(_) \
	_(u32, flags,        VM,   FLAGS, L,     exdata,     0, -,   -  )   /* LJ_LAYOUT_* */ \
	_(s32, g2disp,       VM,   GG,    GG,    dispatch,   0, -,   -  )   /* DISPATCH - G */ \
	_(u32, gg_g,         VM,   GG,    GG,    g,          0, -,   -  )   /* G - &GG->L */ \
	_(u16, ref_size,     VM,   SIZE,  GCREF, -,          0, 8,   4  )   /* 8 with GC64 */ \
	/* global_State */ \
	_(u16, g_vmstate,    VM,   M,     G,     vmstate,    0, 184, 136) \
	_(u16, g_mainthref,  VM,   M,     G,     mainthref,  0, 192, 140) \
	_(u16, g_cur_L,      VM,   M,     G,     cur_L,      0, 368, 288) \
	_(u16, g_jit_base,   VM,   M,     G,     jit_base,   0, 376, 292) \
	/* lua_State: base and top are pointers (8 bytes) either way */ \
	_(u16, l_glref,      VM,   M,     L,     glref,      0, 16,  8  ) \
	_(u16, l_base,       VM,   M,     L,     base,       0, 32,  16 ) \
	_(u16, l_top,        VM,   M,     L,     top,        0, 40,  24 ) \
	_(u16, l_stack,      VM,   M,     L,     stack,      0, 56,  36 ) \
	_(u16, l_maxstack,   VM,   M,     L,     maxstack,   0, 48,  32 )   /* before stack */ \
	_(u16, l_cframe,     VM,   M,     L,     cframe,     0, 80,  48 ) \
	/* GCfunc: the header is shared; the walker reads ffid and pc of Lua \
	 * functions (GCfuncL), f and upvalue of C ones (GCfuncC) */ \
	_(u16, fn_ffid,      VM,   M,     FUNCL, ffid,       0, 10,  6  ) \
	_(u16, fn_pc,        VM,   M,     FUNCL, pc,         0, 32,  16 ) \
	_(u16, fn_f,         VM,   M,     FUNCC, f,          0, 40,  24 ) \
	_(u16, fn_upvalue,   VM,   M,     FUNCC, upvalue,    0, 48,  32 ) \
	/* GCproto: pt_size is sizeof(GCproto), where the bytecode starts */ \
	_(u16, pt_size,      VM,   SIZE,  PROTO, -,          0, 104, 64 ) \
	_(u16, pt_sizebc,    VM,   M,     PROTO, sizebc,     0, 12,  8  ) \
	_(u16, pt_k,         VM,   M,     PROTO, k,          0, 32,  16 ) \
	_(u16, pt_sizekgc,   VM,   M,     PROTO, sizekgc,    0, 48,  24 ) \
	_(u16, pt_sizekn,    VM,   M,     PROTO, sizekn,     0, 52,  28 ) \
	_(u16, pt_sizept,    VM,   M,     PROTO, sizept,     0, 56,  32 ) \
	_(u16, pt_numparams, VM,   M,     PROTO, numparams,  0, 10,  6  ) \
	_(u16, pt_framesize, VM,   M,     PROTO, framesize,  0, 11,  7  ) \
	_(u16, pt_sizeuv,    VM,   M,     PROTO, sizeuv,     0, 60,  36 ) \
	_(u16, pt_flags,     VM,   M,     PROTO, flags,      0, 61,  37 ) \
	_(u16, pt_chunkname, VM,   M,     PROTO, chunkname,  0, 64,  40 ) \
	_(u16, pt_firstline, VM,   M,     PROTO, firstline,  0, 72,  44 ) \
	_(u16, pt_numline,   VM,   M,     PROTO, numline,    0, 76,  48 ) \
	_(u16, pt_lineinfo,  VM,   M,     PROTO, lineinfo,   0, 80,  52 ) \
	_(u16, pt_uvinfo,    VM,   M,     PROTO, uvinfo,     0, 88,  56 ) \
	_(u16, pt_varinfo,   VM,   M,     PROTO, varinfo,    0, 96,  60 ) \
	/* GCstr: the characters follow the header */ \
	_(u16, str_len,      VM,   M,     STR,   len,        0, 20,  16 )   /* after sid, hash */ \
	_(u16, str_size,     VM,   SIZE,  STR,   -,          0, 24,  20 ) \
	/* C frame of a VM entry: 4-byte slots without GC64; cf_size is 96 \
	 * with LUAJIT_NO_UNWIND, which Debian does not set */ \
	_(u16, cf_l,         VM,   FRAME, -,     -,          0, 16,  24 ) \
	_(u16, cf_pc,        VM,   FRAME, -,     -,          0, 24,  28 ) \
	_(u16, cf_prev,      VM,   FRAME, -,     -,          0, 32,  32 ) \
	_(u16, cf_size,      VM,   FRAME, -,     -,          0, 80,  80 ) \
	/* fast function ids the walker follows into another coroutine */ \
	_(u8,  ffid_coroutine_resume,   FF, FF, -, coroutine_resume,   0, 35, 35) \
	_(u8,  ffid_coroutine_wrap_aux, FF, FF, -, coroutine_wrap_aux, 0, 36, 36) \
	_(u16, pad,          PAD,  NONE,  -,     -,          0, 0,   0  ) \
	/* Compiled traces: J = G + g2j; J->trace is an 8-byte pointer to \
	 * sizetrace GCRefs; a GCtrace's fields.  g2j 0: not known, traces \
	 * are then recorded by number only. */ \
	_(u16, g2j,          JIT,  GG,    GG,    J,          0, -,   -  ) \
	_(u16, j_trace,      JIT,  M,     JIT,   trace,      0, 384, 360) \
	_(u16, j_sizetrace,  JIT,  M,     JIT,   sizetrace,  0, 396, 372) \
	_(u16, tr_startpt,   JIT,  M,     TRACE, startpt,    0, 64,  48 ) \
	_(u16, tr_startpc,   JIT,  M,     TRACE, startpc,    0, 72,  52 ) \
	_(u16, tr_mcode,     JIT,  M,     TRACE, mcode,      0, 88,  64 ) \
	_(u16, tr_szmcode,   JIT,  M,     TRACE, szmcode,    0, 84,  60 ) \
	_(u16, tr_root,      JIT,  M,     TRACE, root,       0, 108, 84 ) \
	_(u16, tr_traceno,   JIT,  M,     TRACE, traceno,    0, 104, 80 ) \
	/* A trace's snapshots, read by the recorder only: GCtrace's counts \
	 * and pointers, and SnapShot's size and fields.  sn_size 0: not \
	 * known, traces are recorded without them. */ \
	_(u16, tr_nsnap,     SNAP, M,     TRACE, nsnap,      2, 10,  6  ) \
	_(u16, tr_nsnapmap,  SNAP, M,     TRACE, nsnapmap,   4, 44,  28 ) \
	_(u16, tr_nk,        SNAP, M,     TRACE, nk,         4, 40,  24 ) \
	_(u16, tr_snap,      SNAP, M,     TRACE, snap,       8, 48,  32 ) \
	_(u16, tr_snapmap,   SNAP, M,     TRACE, snapmap,    8, 56,  40 ) \
	_(u16, tr_ir,        SNAP, M,     TRACE, ir,         8, 32,  16 ) \
	_(u16, tr_nins,      SNAP, M,     TRACE, nins,       4, 12,  8  ) \
	_(u16, sn_size,      SNAP, SIZE,  SNAP,  -,          0, 12,  12 ) \
	_(u16, sn_mapofs,    SNAP, M,     SNAP,  mapofs,     4, 0,   0  ) \
	_(u16, sn_mcofs,     SNAP, M,     SNAP,  mcofs,      2, 6,   6  ) \
	_(u16, sn_nent,      SNAP, M,     SNAP,  nent,       1, 10,  10 ) \
	_(u16, sn_ref,       SNAP, M,     SNAP,  ref,        2, 4,   4  ) \
	_(u32, pad_end,      PAD,  NONE,  -,     -,          0, 0,   0  )

#define LJ_LAYOUT_MEMBER(type, name, ...) __##type name;
struct lj_layout {
	LJ_LAYOUTDEF(LJ_LAYOUT_MEMBER)
};
#undef LJ_LAYOUT_MEMBER

/* Per target process, in the BPF map lj_procs, keyed by tgid. */
struct lj_proc {
	struct lj_layout layout;
	__u64 vm_start, vm_end; /* the interpreter's code: BASE/PC are live */
	__u64 g_hint;           /* a G the recorder knows, 0 if none */
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

_Static_assert(sizeof(struct lj_layout) == 136, "lj_layout layout");
_Static_assert(sizeof(struct lj_proc) == 160, "lj_proc layout");

#endif

/* SPDX-License-Identifier: GPL-2.0 */
/*
 * walk_lua.bpf.h - finds the running LuaJIT coroutine at a sample and walks
 * its Lua frames, leaf first, into the event.  Included by
 * bpf/capture.bpf.h; the layouts it reads are in bpf/luajit_layout.h.
 *
 * Which global_State: the interpreter keeps DISPATCH (= G + g2disp) in r14,
 * so r14 - g2disp is a candidate G (on arm64 x22 holds G itself:
 * bpf/arch.bpf.h's LP_VM_G), trusted only if it validates: the
 * GG_State's main thread must be where G says (G->mainthref == G - gg_g)
 * and the running coroutine must point back (G->cur_L->glref == G).  A
 * validated G is cached per thread, for samples taken where r14 is not
 * DISPATCH (inside C functions, GC, libc).  A thread that is seldom in the
 * interpreter (a long string.gsub, a host's C code called from Lua) may
 * show no such tick for long; but any sample whose native walk crossed the
 * VM's C frame has its lua_State there (SAVE_L), so the capture calls
 * walk_lua() again with that frame's CFA when r14 and the cache gave
 * nothing: G is L->glref, trusted if L's innermost C frame is that very
 * frame and G validates as above.  A G that has not run yet (vmstate 0: a
 * VM being born or closed by C code, valid_G()) is no tick's running VM:
 * it is neither walked nor cached, and the cache's G is taken instead.
 *
 * Which base: the BASE register (rdx) is the only fresh one while the
 * interpreter runs, because L->base is written back only at calls and
 * exits; but rdx means BASE only when the pc is inside the VM's own code.
 * Anywhere else (a C function, the GC, a C helper called by the VM), the
 * VM has stored L->base and the C frame's saved PC before leaving.
 *
 * The walk follows lj_debug_frame(): a Lua-called frame's link is the
 * return PC, whose CALL instruction's A operand gives the caller's frame;
 * other links are a delta and a type.  C and CP links mark a VM entry
 * from C (lua_call/lua_pcall), where native frames belong.  A coroutine's
 * stack ends at its first frame.  If Lua resumed it (coroutine.resume or
 * a wrap function), the resume ran in the resumer's own C frame and called
 * vm_resume, so the coroutine's outermost C frame lies exactly cf_size
 * below the resumer's, whose saved L is the resumer: the walk goes on
 * there if that L's C frame is indeed that one and its G is ours.  Resumed
 * from C (lua_resume, as nginx does), the check fails and native frames
 * follow instead.
 *
 * The native walk meets one VM frame per VM entry (a C frame in L's chain)
 * and report/stacks.c gives each, in order, the Lua frames up to the next
 * ENTRY (another lua_State's entry, a VM being born, it steps over and
 * leaves out: unwind_vm_other()).  Two kinds of VM frame run no Lua frame
 * of their own, and get an ENTRY with nothing before it, so that the Lua
 * frames stay with the entry that runs them: a C frame lj_vm_cpcall pushed
 * for C alone (the JIT compiler's trace_state, lua_load's parser; its nres
 * is then negative, minus the stack top at entry, and the Lua frames below
 * that top are older), and a helper the interpreter called (vm_mod,
 * vm_floor: frameless leaves in the VM's code, below the interpreter's own
 * frame: rsp is 8 below L's C frame and holds a return address into the
 * VM).  The native walk steps over such a helper as a leaf when the Lua
 * walk's first frame says so (an ENTRY at the sampled rsp), and over any
 * other VM code on the C frame: a JLOOP about to enter a trace (rsp 16
 * below it) is the interpreter's frame, not a helper's.
 *
 * Every read of target memory may fail (freed coroutine stack, garbage
 * pointer): the walk then ends with a TRUNC frame, and never emits a
 * frame it could not read.
 *
 * Each read of target memory costs 80 to 140 ns on this kind of virtual
 * machine even when warm, 700 to 900 ns when its page is cold in the
 * TLB, and 800 to 1500 ns when it fails (measured in a cpu-clock tick: a
 * BPF microbench), most of what the walk costs, so fields that
 * lie close together are read in one go: G's (struct lj_gfields) with,
 * when the main thread ran at the thread's last sample, the main
 * lua_State's below it in GG_State; a lua_State's (struct lj_state), a
 * C frame's, J's trace array and its size, a trace's start and code, a
 * function's header and pc, a prototype's chunk name and lines (and the
 * leaf's sizebc); and the frames' slots come from one read of the Lua
 * stack below them (LJ_STACK_WIN).  A Lua frame's CALL is read with the
 * bytecode below it (LJ_CALL_WIN), where a short caller's prototype
 * header lies: its fingerprint then costs no read (read_call()).  A
 * layout whose fields lie further apart than LJ_BLOCK bytes is read field
 * by field, as is a block whose one read fails across two pages (it may
 * run past the end of a mapping); within one page, no field can be read
 * either.  Nothing read is kept from one sample to the next.  Reads
 * that would fail are avoided where a cheaper check tells: a garbage r14
 * (plausible_G()), a coroutine resumed from C (find_resumer()).  `record
 * -v` counts the reads per sample (bpf/phases.h).
 *
 * A hash map lookup costs 200 ns to over 1 us at 99 Hz (its buckets and
 * elements lie in vmalloc'ed 4 KB pages, cold in the TLB), so a sample's
 * common path makes none: the process's lj_proc is a per-CPU copy
 * (procs_gen says when it is stale), the thread's cache is task
 * storage, and the stacks and traces seen are checked in a per-CPU set
 * before their LRU maps.
 */
#ifndef LUAPROF_BPF_WALK_LUA_BPF_H
#define LUAPROF_BPF_WALK_LUA_BPF_H

#include "bpf/luajit_layout.h"
#include "bpf/sampler.h"

#define LUA_WALK_STEPS (2 * LP_MAX_LUA) /* frames + skipped dummy/varg frames */
#define LUA_RESUMER_HOPS 16    /* Lua-resumed coroutines followed */
#define LUA_C_ONLY_MAX 4       /* C-only C frames passed at one place */
#define GC64_PTR_MASK ((1ull << 47) - 1)
#define LJ_BLOCK 512 /* bytes read at once; a power of two */
#define LJ_STACK_WIN 512 /* bytes of a Lua stack read at once; a power of two */
#define LJ_MAX_MCODE (64u << 20) /* bytes of one trace's code, at most */
#define LJ_CALL_WIN 256 /* bytes of bytecode read up to a return PC; ditto */

/* Each target's VM, once found; a change calls procs_changed() after it
 * (bpf/capture.bpf.h, procs_gen). */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16384);
	__type(key, __u32); /* tgid */
	__type(value, struct lj_proc);
} lj_procs SEC(".maps");

/* Per thread: the last G it validated, and the memory mapping that held
 * its stack pointer at a sample (see on_sampled_stack()).  Task storage,
 * not a hash by tid: it hangs off the task, in memory the kernel maps
 * with large pages, where a hash map's buckets and elements lie in
 * vmalloc'ed 4 KB pages, each a TLB miss of its own at 99 Hz. */
struct lj_thread {
	__u64 G;
	__u64 stack_lo, stack_hi; /* 0, 0: not known yet */
	__u32 on_main; /* the main thread ran at the last sample (read_G) */
	__u32 pad;
};

struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct lj_thread);
} lj_thread_G SEC(".maps");

/* Compiled traces a sample has shown, by process, GCtrace and number and
 * where the trace starts: the first sample of each wakes the recorder,
 * which reads the trace (its snapshots) from the process at once, before
 * a jit.flush() or the trace's own abort and recompilation replaces it. */
struct lj_trace_key {
	__u64 tr;
	__u32 tgid;
	__u32 id; /* trace number << 16 | the frame's fingerprint (start, code) */
};

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 4096);
	__type(key, struct lj_trace_key);
	__type(value, __u8);
} lj_traces_seen SEC(".maps");

/* Lua stacks samples have shown, by process and a hash of their frames'
 * functions: the first sample of each wakes the recorder, which reads
 * the prototypes it names while they live.  A function made by load()
 * and run once is garbage a moment later, and its memory reused: read
 * 100 ms late (the recorder's poll), it is unknown. */
struct lj_stack_key {
	__u64 hash;
	__u32 tgid;
	__u32 pad;
};

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 16384);
	__type(key, struct lj_stack_key);
	__type(value, __u8);
} lj_stacks_seen SEC(".maps");

/* Prototypes whose identity went to the recorder (lp_event_proto), by
 * process, address and fingerprint. */
struct lj_proto_key {
	__u64 pt;
	__u32 tgid;
	__u16 fingerprint;
	__u16 pad;
};

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 16384);
	__type(key, struct lj_proto_key);
	__type(value, __u8);
} lj_protos_seen SEC(".maps");

/* LuaJIT executables whose VM the recorder validated in one process, by
 * file (bpf/file_id.h): sampler.bpf.c gives a process that execs one an
 * entry in lj_procs at once, so that it has Lua frames from its first
 * tick, before the recorder hears of it.  The value's interpreter range
 * is relative to mm->start_code. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 64);
	__type(key, struct lp_file_id);
	__type(value, struct lj_proc);
} lj_images SEC(".maps");

/* The fields of a global_State the walk reads. */
struct lj_gfields {
	__u64 mainthref, cur_L, jit_base;
	__s32 vmstate;
	__u32 pad;
};

/* The fields of a lua_State the walk reads. */
struct lj_state {
	__u64 glref, base, stack, maxstack, cframe;
};

/* What a CPU found in lj_stacks_seen or lj_traces_seen (or put there):
 * a direct-mapped set of LJ_SEEN_SLOTS keys, so that a stack or trace
 * sampled again on this CPU costs no LRU lookup.  A slot holds its key
 * whole (no hash stands for it), so a hit is a key the LRU map had.
 * The two maps' keys are 16 bytes each, and never equal: a trace's
 * second word holds its id (never 0) above the tgid, a stack's zero. */
#define LJ_SEEN_SLOTS 16 /* a power of two */
struct lj_seen {
	__u64 a, b;
};

/* Kept in a map value (see lua_walk_scratch), which can hold no usable
 * pointer: the process's lj_proc is copied in, and the sample being
 * filled is the CPU's capture_event (bpf/capture.bpf.h), looked up where
 * needed. */
struct lua_walk {
	/* Kept across samples: this CPU's copy of lj_procs[proc_tgid] as of
	 * procs_gen == proc_gen (proc_tgid 0: none), and its seen sets. */
	struct lj_proc proc;
	__u64 proc_gen;
	__u32 proc_tgid;
	__u32 pad0;
	struct lj_seen seen[LJ_SEEN_SLOTS];
	/* Per sample, cleared (from G to block). */
	__u64 G, mainL;
	__u64 gen; /* procs_gen at the start of this sample */
	/* The running trace's code, [trace_lo, trace_hi) (T->mcode and
	 * T->szmcode; 0 unknown), for the native walk (unwind_jit_step()) */
	__u64 trace_lo, trace_hi;
	struct lj_thread no_thread; /* when task storage has none to give */
	__u64 L;     /* the lua_State being walked */
	__u64 first_L; /* ... the first, if lua_find_G() found it (else 0) */
	__u64 frame; /* address of the current frame's link slot */
	__u64 bot;   /* walk while frame > bot */
	__u64 pc;    /* the current frame's pc, 0 unknown */
	__u64 cf;    /* the innermost C frame of L not yet passed */
	__u64 outer_cf; /* the outermost C frame of L seen so far */
	__u64 stack; /* L->stack */
	__u64 last_entry; /* the C frame of the last ENTRY emitted */
	__u64 hash;  /* of the frames' kinds, functions and fingerprints */
	__u32 n;     /* frames emitted */
	__u32 hops;  /* coroutine boundaries crossed */
	__u8 last_kind;
	__u8 leaf;   /* the next frame is the innermost (not in a trace) */
	__u8 pc_reg; /* ... and pc is the PC register's */
	int skip_next; /* the next frame is a vararg function's own */
	int done;
	__u64 cf_read; /* the C frame whose fields follow, 0 none */
	__u64 cf_pc, cf_prev;
	__s32 cf_nres;
	__u32 call_ins; /* leaf_link()'s check of the PC register */
	__u64 next, next_pc; /* where a frame leads (lua_walk_link()) */
	__u64 cont_slots[2]; /* a CONT frame's PC, from read_slots() */
	__u64 win_lo; /* stack[] holds [win_lo, win_lo + win_len) */
	__u32 win_len;
	__u32 reads, read_fails; /* of target memory, when the clock runs */
	__u32 copy_reads, pad1; /* ... and those the stack copy served */
	__u64 cw_lo; /* call_win holds [cw_lo, cw_lo + cw_len) */
	__u32 cw_len;
	/* G's and the running lua_State's fields are here, not on the
	 * stack: 6.1's verifier counts the frames of the caller, walk_lua and
	 * its bpf_loop callback together against 512 bytes. */
	struct lj_gfields gf;
	struct lj_state st;
	/* Last, and not cleared per sample either: what is read is used. */
	__u8 block[2 * LJ_BLOCK]; /* the last block read (see read_block, block_u64) */
	__u8 stack_win[2 * LJ_STACK_WIN]; /* Lua stack below the last frame read */
	__u8 call_win[2 * LJ_CALL_WIN]; /* bytecode up to the last return PC */
};

/* The walk's state lives in a per-CPU map value, not on the stack: the
 * verifier tracks stack values exactly through every bpf_loop iteration,
 * and the combinations of frame count, kind and flags would exceed its
 * budget; map values it treats as unknown, which is what they are. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct lua_walk);
} lua_walk_scratch SEC(".maps");

static __always_inline struct lj_seen *seen_slot(struct lua_walk *w, __u64 a, __u64 b)
{
	__u64 h = (a ^ b) * 0x9e3779b97f4a7c15ull;

	return &w->seen[(h >> 59) & (LJ_SEEN_SLOTS - 1)];
}

/* Is key (a, b) in the LRU map `seen` (a key of 16 bytes, a then b)?
 * This CPU's set first; a key found or added goes into it.  1 if it was
 * there already, 0 if it was added now. */
static __always_inline int seen_before(struct lua_walk *w, void *seen, __u64 a, __u64 b)
{
	struct lj_seen *slot = seen_slot(w, a, b);
	__u64 key[2] = { a, b };
	__u8 one = 1;
	int had;

	if (slot->a == a && slot->b == b)
		return 1;
	had = bpf_map_lookup_elem(seen, key) != NULL;
	if (!had)
		bpf_map_update_elem(seen, key, &one, BPF_ANY);
	slot->a = a;
	slot->b = b;
	return had;
}

/* Every read of target memory the walk makes, counted for `record -v`
 * (bpf/phases.h) when the clock runs. */
static __always_inline long lj_read(struct lua_walk *w, void *dst, __u32 size,
				    const void *src)
{
	long err = bpf_probe_read_user(dst, size, src);

	if (time_phases) {
		w->reads++;
		w->read_fails += err != 0;
	}
	return err;
}

static __always_inline int read_u64(struct lua_walk *w, __u64 *v, __u64 addr)
{
	return lj_read(w, v, sizeof(*v), (const void *)addr);
}

/* A GCRef or MRef: 8 bytes with GC64, else 4, zero-extended. */
static __always_inline int read_ref(struct lua_walk *w, __u64 *v, __u64 addr)
{
	__u32 v32;

	if (w->proc.layout.ref_size == 8)
		return read_u64(w, v, addr);
	if (lj_read(w, &v32, sizeof(v32), (const void *)addr))
		return -1;
	*v = v32;
	return 0;
}

/* Reads span bytes at addr into w->block: 0; LJ_UNREADABLE if the read
 * failed within one page, where no field could be read either (a page is
 * readable whole or not at all); 1 if the fields are to be read one by
 * one (span is over LJ_BLOCK, or the read failed across two pages).  A
 * failing read costs ten times a good one: one is enough. */
#define LJ_UNREADABLE (-1)
static __always_inline int read_block(struct lua_walk *w, __u64 addr, __u32 span)
{
	if (span > LJ_BLOCK || !span)
		return 1;
	/* The mask, after the barrier, is for the verifier, which may lose
	 * the check's bound on a copy: the block has room for it. */
	barrier_var(span);
	if (!lj_read(w, w->block, span & (2 * LJ_BLOCK - 1), (const void *)addr))
		return 0;
	return (addr >> 12) == ((addr + span - 1) >> 12) ? LJ_UNREADABLE : 1;
}

/* The 8 (4) bytes at rel in the last block read: rel is masked into the
 * block, which has 8 bytes of slack, for the verifier; callers have
 * checked that rel + 8 is within what was read. */
static __always_inline __u64 block_u64(const struct lua_walk *w, __u32 rel)
{
	return *(const __u64 *)&w->block[rel & (LJ_BLOCK - 1)];
}

static __always_inline __u64 block_ref(const struct lua_walk *w, __u32 rel)
{
	if (w->proc.layout.ref_size == 8)
		return block_u64(w, rel);
	return *(const __u32 *)&w->block[rel & (LJ_BLOCK - 1)];
}

static __always_inline __u32 min_u32(__u32 a, __u32 b) { return a < b ? a : b; }
static __always_inline __u32 max_u32(__u32 a, __u32 b) { return a > b ? a : b; }

/* Where the fields of a lua_State the walk needs start and end (the
 * 8-byte ends of the refs cover the 4-byte ones). */
static __always_inline __u32 state_first(const struct lj_layout *lo)
{
	return min_u32(min_u32(min_u32(lo->l_glref, lo->l_base),
			       min_u32(lo->l_stack, lo->l_maxstack)), lo->l_cframe);
}

static __always_inline __u32 state_end(const struct lj_layout *lo)
{
	return max_u32(max_u32(max_u32(lo->l_glref, lo->l_base),
			       max_u32(lo->l_stack, lo->l_maxstack)), lo->l_cframe) + 8;
}

/* A lua_State's fields from the last block read, which holds them from
 * its start. */
static __always_inline void state_from_block(struct lua_walk *w, struct lj_state *st)
{
	const struct lj_layout *lo = &w->proc.layout;
	__u32 first = state_first(lo);

	st->glref = block_ref(w, lo->l_glref - first);
	st->base = block_u64(w, lo->l_base - first);
	st->stack = block_ref(w, lo->l_stack - first);
	st->maxstack = block_ref(w, lo->l_maxstack - first);
	st->cframe = block_u64(w, lo->l_cframe - first);
}

/* The fields of lua_State L the walk needs: one read when they lie within
 * LJ_BLOCK bytes. */
static __always_inline int read_state(struct lua_walk *w, __u64 L, struct lj_state *st)
{
	const struct lj_layout *lo = &w->proc.layout;
	__u32 first = state_first(lo);
	int r = read_block(w, L + first, state_end(lo) - first);

	if (!r) {
		state_from_block(w, st);
		return 0;
	}
	if (r == LJ_UNREADABLE ||
	    read_ref(w, &st->glref, L + lo->l_glref) ||
	    read_u64(w, &st->base, L + lo->l_base) ||
	    read_ref(w, &st->stack, L + lo->l_stack) ||
	    read_ref(w, &st->maxstack, L + lo->l_maxstack) ||
	    read_u64(w, &st->cframe, L + lo->l_cframe))
		return -1;
	return 0;
}

/* The fields of global_State G the walk needs: one read when they lie
 * within LJ_BLOCK bytes (vmstate to jit_base: 200 bytes with GC64).  With
 * with_main, the read starts at the main thread's fields instead, which
 * lie right below G in GG_State (under 500 bytes in all: one read where
 * there were two when the main thread runs).  0, 1 if the block read
 * holds the main thread's fields too (state_from_block), or -1. */
static __always_inline int read_G(struct lua_walk *w, __u64 G, struct lj_gfields *g,
				  int with_main)
{
	const struct lj_layout *lo = &w->proc.layout;
	__u32 first = min_u32(min_u32(lo->g_vmstate, lo->g_mainthref),
			      min_u32(lo->g_cur_L, lo->g_jit_base));
	__u32 end = max_u32(max_u32(lo->g_vmstate, lo->g_mainthref),
			    max_u32(lo->g_cur_L, lo->g_jit_base)) + 8;
	__u32 lfirst = state_first(lo), at = 0; /* where G + first lies in the block */
	int r = 1;

	if (with_main && state_end(lo) <= lo->gg_g + first &&
	    lo->gg_g + end - lfirst <= LJ_BLOCK) {
		at = lo->gg_g + first - lfirst;
		r = read_block(w, G - lo->gg_g + lfirst, lo->gg_g + end - lfirst);
	}
	if (r) {
		at = 0;
		r = read_block(w, G + first, end - first);
	}
	if (!r) {
		g->mainthref = block_ref(w, at + lo->g_mainthref - first);
		g->cur_L = block_ref(w, at + lo->g_cur_L - first);
		g->jit_base = block_ref(w, at + lo->g_jit_base - first);
		g->vmstate = (__s32)block_u64(w, at + lo->g_vmstate - first);
		return at != 0;
	}
	if (r == LJ_UNREADABLE ||
	    read_ref(w, &g->mainthref, G + lo->g_mainthref) ||
	    read_ref(w, &g->cur_L, G + lo->g_cur_L) ||
	    lj_read(w, &g->vmstate, sizeof(g->vmstate),
				(const void *)(G + lo->g_vmstate)))
		return -1;
	if (read_ref(w, &g->jit_base, G + lo->g_jit_base))
		g->jit_base = 0;
	return 0;
}

static __always_inline struct lp_lua_frame *next_slot(struct lua_walk *w)
{
	struct lp_event_sample *e;
	__u32 n = w->n, zero = 0;

	e = bpf_map_lookup_elem(&capture_event, &zero);
	if (!e || n >= LP_MAX_LUA)
		return NULL;
	/* 6.1's verifier loses the bound of a copy spilled before the check
	 * (clang does, with the walk's loop before): the mask bounds the
	 * register the address is made of, and the barrier keeps it. */
	barrier_var(n);
	return &e->lua[n & (LP_MAX_LUA - 1)];
}

static __always_inline void emit(struct lua_walk *w, __u8 kind, __u64 addr,
				 __u32 pc, __u8 link, __u16 fingerprint)
{
	struct lp_lua_frame *f = next_slot(w);

	if (!f)
		return;
	f->addr = addr;
	f->pc = pc;
	f->kind = kind;
	f->link = link;
	f->fingerprint = fingerprint;
	w->hash = (w->hash ^ addr ^ (__u64)fingerprint << 40 ^ (__u64)kind << 56) *
		  0x100000001b3ull;
	w->n++;
	w->last_kind = kind;
}

/* A VM entry from C: where the native frames of that entry belong.  Two
 * boundaries of one C frame with no Lua frame between (a coroutine's first
 * frame and its bottom) are one. */
static __always_inline void emit_entry(struct lua_walk *w, __u64 cf)
{
	if (w->last_kind == LP_LUA_FRAME_ENTRY && w->last_entry == cf)
		return;
	emit(w, LP_LUA_FRAME_ENTRY, cf, 0, 0, 0);
	w->last_entry = cf;
}

/* nres of a C frame (CFRAME_OFS_NRES), by where it saves L
 * (bpf/arch.bpf.h). */
#define LJ_CF_NRES(lo) LP_CF_NRES((lo)->cf_l)

/* The C stack: the VM's C frames and what lies at the sampled sp.  The
 * native unwinder copied the top of the sampled stack before this walk
 * (unwind_copy_stack(), bpf/unwind_native.bpf.h, which owns the copy and
 * defines these two below this file); a read the copy holds comes from
 * it, and costs no read of the target's memory (counted apart). */
struct unwind_window;
static __always_inline struct unwind_window *stack_copy_holding(__u64 addr, __u32 len);
static __always_inline __u64 stack_copy_u64(const struct unwind_window *win, __u64 addr);

/* The copy, if it holds the len bytes at addr (then counted). */
static __always_inline struct unwind_window *cstack_copy(struct lua_walk *w, __u64 addr,
							 __u32 len)
{
	struct unwind_window *win = stack_copy_holding(addr, len);

	if (win && time_phases)
		w->copy_reads++;
	return win;
}

/* A GCRef or MRef at addr in the copy (see read_ref()). */
static __always_inline __u64 cstack_ref(const struct lua_walk *w,
					const struct unwind_window *win, __u64 addr)
{
	__u64 v = stack_copy_u64(win, addr);

	return w->proc.layout.ref_size == 8 ? v : (__u32)v;
}

/* The 8 bytes at addr of the C stack: from the copy, or a read. */
static __always_inline int cstack_u64(struct lua_walk *w, __u64 *v, __u64 addr)
{
	struct unwind_window *win = cstack_copy(w, addr, 8);

	if (!win)
		return read_u64(w, v, addr);
	*v = stack_copy_u64(win, addr);
	return 0;
}

/* The fields of C frame cf the walk reads (nres, the saved PC and the
 * link to the older C frame: 32 bytes) into w->cf_*, from the stack copy
 * or in one read, kept for the next use of the same frame.  0, or -1 if
 * they cannot be read. */
static __always_inline int read_cframe(struct lua_walk *w, __u64 cf)
{
	const struct lj_layout *lo = &w->proc.layout;
	__u32 first = min_u32(LJ_CF_NRES(lo), min_u32(lo->cf_pc, lo->cf_prev));
	__u32 end = max_u32(LJ_CF_NRES(lo), max_u32(lo->cf_pc, lo->cf_prev)) + 8;
	struct unwind_window *win;
	int r;

	if (w->cf_read == cf)
		return 0;
	w->cf_read = 0;
	if ((win = cstack_copy(w, cf + first, end - first))) {
		w->cf_nres = (__s32)stack_copy_u64(win, cf + LJ_CF_NRES(lo));
		w->cf_pc = cstack_ref(w, win, cf + lo->cf_pc);
		w->cf_prev = stack_copy_u64(win, cf + lo->cf_prev);
		w->cf_read = cf;
		return 0;
	}
	r = read_block(w, cf + first, end - first);
	if (!r) {
		w->cf_nres = (__s32)block_u64(w, LJ_CF_NRES(lo) - first);
		w->cf_pc = block_ref(w, lo->cf_pc - first);
		w->cf_prev = block_u64(w, lo->cf_prev - first);
	} else if (r == LJ_UNREADABLE ||
		   lj_read(w, &w->cf_nres, sizeof(w->cf_nres),
				       (const void *)(cf + LJ_CF_NRES(lo))) ||
		   read_ref(w, &w->cf_pc, cf + lo->cf_pc) ||
		   read_u64(w, &w->cf_prev, cf + lo->cf_prev)) {
		return -1;
	}
	w->cf_read = cf;
	return 0;
}

/* Passes the C frames, from w->cf on, that lj_vm_cpcall pushed for C code
 * alone after the Lua frame at `frame` was made (see the top of the file),
 * with an ENTRY each. */
static __always_inline void pass_c_only(struct lua_walk *w, __u64 frame)
{
	for (int i = 0; i < LUA_C_ONLY_MAX; i++) {
		if (!w->cf || read_cframe(w, w->cf) || w->cf_nres >= 0 ||
		    frame >= w->stack - (__s64)w->cf_nres)
			return;
		emit_entry(w, w->cf);
		w->cf = lj_cframe_raw(w->cf_prev);
		if (w->cf)
			w->outer_cf = w->cf;
	}
}

static __always_inline void truncate_walk(struct lua_walk *w, __u32 why)
{
	/* The last slot is kept for this marker. */
	if (w->n >= LP_MAX_LUA)
		w->n = LP_MAX_LUA - 1;
	/* addr: the frame the walk stopped at, for whoever debugs it. */
	emit(w, LP_LUA_FRAME_TRUNC, w->frame, why, 0, 0);
	w->done = 1;
}

/* Can G be a global_State at all?  It lies in GG_State, which the
 * allocator gave (8-aligned or more, in user space above mmap_min_addr),
 * at an offset that is a multiple of 8 in every build; and so does
 * DISPATCH (G + g2disp).  A garbage r14 is seldom one: most are ruled out
 * without a read, which may fail at ten times the cost of a good one. */
static __always_inline int plausible_G(__u64 G)
{
	return G >= 65536 && !(G & 7) && G < (1ull << 56);
}

/* G validates if its GG_State's main thread is where G says and the
 * running coroutine belongs to it: 1.  Fills *g with G's fields, *curL and
 * st with the running coroutine's.  (A G known from before on this
 * thread needed only the second; both come in the one read of G.)  The
 * running coroutine is G->cur_L, the last to enter the VM, unless *curL
 * names another on the way in: the second try's, whose C frame the native
 * walk found on this stack, which its host may have switched in C while
 * cur_L runs on another (tarantool's fibers, ucontext: samples/fibers.c).
 *
 * LJ_UNBORN, not 1, for a G that validates but has not run yet: trace
 * numbers start at 1, and vmstate 0 is what lua_newstate's zeroing left.
 * Its lj_vm_cpcall of cpluaopen (which makes L's stack: L->base is still
 * 0) sets cur_L and DISPATCH (r14) but no state, and so does lua_close's
 * of cpfinalize for a VM that never ran.  Such a VM runs no Lua: if this
 * stack runs any, it is another VM's, whose code made or closes this one
 * (births.lua's FFI calls, a host's luaL_newstate from a Lua function),
 * and whose G the caller looks for instead.  A tick there once walked
 * the newborn from base 0 as "trace 0" and cut the stack at frame -8;
 * then it gave no Lua frames at all, the running VM's included. */
#define LJ_UNBORN 2
static __always_inline int valid_G(struct lua_walk *w, __u64 G, struct lj_gfields *g,
				   __u64 *curL, struct lj_state *st, struct lj_thread *t)
{
	const struct lj_layout *lo = &w->proc.layout;
	int main_read;
	__u64 L;

	if (!plausible_G(G) || (main_read = read_G(w, G, g, t->on_main)) < 0 ||
	    g->mainthref != G - lo->gg_g || !g->cur_L)
		return 0;
	L = *curL ? *curL : g->cur_L;
	if (main_read && L == g->mainthref)
		state_from_block(w, st);
	else if (read_state(w, L, st))
		return 0;
	if (st->glref != G)
		return 0;
	/* (A trace that does not store its number runs with vmstate 0
	 * too, on a jit_base that an unborn VM has not set.) */
	if (!g->vmstate && !(LP_TRACE_UNNUMBERED && g->jit_base))
		return LJ_UNBORN;
	/* Only a guess at where the next sample's read starts: what it
	 * reads is checked as ever. */
	if (t->on_main != (L == g->mainthref))
		t->on_main = L == g->mainthref;
	*curL = L;
	return 1;
}

/* The 8 bytes at addr from the call window when it holds them, for
 * proto_fingerprint(): 0, or -1 if it does not. */
static __always_inline int call_win_u64(const struct lua_walk *w, __u64 addr, __u64 *v)
{
	__u64 rel = addr - w->cw_lo;

	if (addr < w->cw_lo || rel + 8 > w->cw_len)
		return -1;
	*v = *(const __u64 *)&w->call_win[rel & (LJ_CALL_WIN - 1)];
	return 0;
}

/* The fingerprint of prototype pt, and its sizebc if asked (the leaf's
 * leaf_link() needs it): one read, or none when the call window holds
 * them (see read_call()). */
static __always_inline __u16 proto_fingerprint(struct lua_walk *w, __u64 pt, __u32 *sizebc)
{
	const struct lj_layout *lo = &w->proc.layout;
	__u32 first = min_u32(lo->pt_chunkname, lo->pt_firstline);
	__u32 end = max_u32(lo->pt_chunkname, max_u32(lo->pt_firstline, lo->pt_numline)) + 8;
	__u64 chunk = 0, l0 = 0, l1 = 0, sz = 0;
	__u32 lines[2] = { 0, 0 };
	int r;

	if (sizebc) {
		first = min_u32(first, lo->pt_sizebc);
		end = max_u32(end, lo->pt_sizebc + 8);
	}
	if (!call_win_u64(w, pt + lo->pt_chunkname, &chunk) &&
	    !call_win_u64(w, pt + lo->pt_firstline, &l0) &&
	    !call_win_u64(w, pt + lo->pt_numline, &l1) &&
	    (!sizebc || !call_win_u64(w, pt + lo->pt_sizebc, &sz))) {
		if (lo->ref_size != 8)
			chunk = (__u32)chunk;
		lines[0] = (__u32)l0;
		lines[1] = (__u32)l1;
	} else if (!(r = read_block(w, pt + first, end - first))) {
		chunk = block_ref(w, lo->pt_chunkname - first);
		lines[0] = (__u32)block_u64(w, lo->pt_firstline - first);
		lines[1] = (__u32)block_u64(w, lo->pt_numline - first);
		if (sizebc)
			sz = block_u64(w, lo->pt_sizebc - first);
	} else if (r != LJ_UNREADABLE) {
		read_ref(w, &chunk, pt + lo->pt_chunkname);
		lj_read(w, lines, sizeof(lines), (const void *)(pt + lo->pt_firstline));
		if (sizebc)
			lj_read(w, &sz, 4, (const void *)(pt + lo->pt_sizebc));
	}
	if (sizebc)
		*sizebc = (__u32)sz;
	return lj_proto_fingerprint(chunk, lines[0], lines[1]);
}

/* Starts walking lua_State L (its fields in st) from base.  The leaf pc
 * is the one of L's innermost C frame, unless the caller has better. */
static __always_inline void start_thread(struct lua_walk *w, __u64 L,
					 const struct lj_state *st, __u64 base, __u64 pc)
{
	const struct lj_layout *lo = &w->proc.layout;

	w->L = L;
	w->cf = lj_cframe_raw(st->cframe);
	w->outer_cf = w->cf;
	w->stack = st->stack;
	w->bot = st->stack + ((lo->flags & LJ_LAYOUT_GC64) ? 8 : 0);
	w->frame = base - 8;
	pass_c_only(w, w->frame);
	w->pc = pc;
	if (!pc && w->cf && !read_cframe(w, w->cf))
		w->pc = w->cf_pc;
	w->skip_next = 0;
}

/* The 16 bytes of Lua stack at addr, from the stack window: frames lie
 * a few slots apart, downward, so one read of LJ_STACK_WIN bytes below
 * a frame serves the next ones.  The window starts no lower than
 * L->stack (an object of its own: below it may be unmapped), and a
 * window that cannot be read is not used. */
static __always_inline int read_slots(struct lua_walk *w, __u64 addr, __u64 *slots)
{
	__u64 hi = addr + 16, lo, len;
	__u32 off;

	if (addr < w->win_lo || hi > w->win_lo + w->win_len) {
		lo = hi > LJ_STACK_WIN ? hi - LJ_STACK_WIN : 0;
		if (lo < w->stack)
			lo = w->stack;
		len = hi - lo;
		w->win_len = 0;
		if (addr < lo || len > LJ_STACK_WIN)
			return lj_read(w, slots, 16, (const void *)addr);
		/* The mask, after the barrier, is for the verifier: the
		 * window has room for it. */
		barrier_var(len);
		if (lj_read(w, w->stack_win, len & (2 * LJ_STACK_WIN - 1),
					(const void *)lo))
			return lj_read(w, slots, 16, (const void *)addr);
		w->win_lo = lo;
		w->win_len = len;
	}
	off = addr - w->win_lo;
	barrier_var(off);
	slots[0] = *(const __u64 *)&w->stack_win[off & (LJ_STACK_WIN - 1)];
	slots[1] = *(const __u64 *)&w->stack_win[(off & (LJ_STACK_WIN - 1)) + 8];
	return 0;
}

/* Reads the frame slot(s) at w->frame: the function and the link. */
static __always_inline int read_frame(struct lua_walk *w, __u64 *func, __u64 *link)
{
	const struct lj_layout *lo = &w->proc.layout;
	__u64 slots[2];

	if (lo->flags & LJ_LAYOUT_GC64) {
		if (read_slots(w, w->frame - 8, slots))
			return -1;
		*func = slots[0] & GC64_PTR_MASK;
		*link = slots[1];
	} else {
		if (read_u64(w, &slots[0], w->frame))
			return -1;
		*func = (__u32)slots[0];
		*link = slots[0] >> 32; /* a PC (MRef) or a delta|type */
	}
	return 0;
}

/* The lua_State that resumed L from Lua code, or 0: see the top of file.
 * Fills *st with its fields.  Lua resumed L if the return address below
 * the resumer's C frame is in the VM's code (coroutine.resume's handler
 * called vm_resume); lua_resume is C, and there the "saved L" is any
 * value of its caller's frame, whose read may fail, at ten times the cost
 * of a good one.  So the return address is checked first (in the same
 * read), once the VM is located. */
static __always_inline __u64 find_resumer(struct lua_walk *w, struct lj_state *st)
{
	const struct lj_layout *lo = &w->proc.layout;
	__u64 rcf = w->outer_cf + lo->cf_size, r = 0, ra = 0;
	struct unwind_window *win;
	int b;

	if (!w->outer_cf)
		return 0;
	if (w->proc.vm_end && (win = cstack_copy(w, rcf - 8, lo->cf_l + 16))) {
		ra = stack_copy_u64(win, rcf - 8);
		r = cstack_ref(w, win, rcf + lo->cf_l);
	} else if (!(b = w->proc.vm_end ? read_block(w, rcf - 8, lo->cf_l + 16) : 1)) {
		ra = block_u64(w, 0);
		r = block_ref(w, lo->cf_l + 8);
	} else if (b == LJ_UNREADABLE ||
		   (w->proc.vm_end && read_u64(w, &ra, rcf - 8)) ||
		   read_ref(w, &r, rcf + lo->cf_l)) {
		return 0;
	}
	if (w->proc.vm_end && (ra - 1 < w->proc.vm_start || ra - 1 >= w->proc.vm_end))
		return 0;
	if (!r || read_state(w, r, st) || lj_cframe_raw(st->cframe) != rcf || st->glref != w->G)
		return 0;
	return r;
}

#define LJ_GCT_FUNC 8 /* the gct byte of a function: ~LJ_TFUNC */

/* The frame type a link slot says, as lp_lua_frame.link records it. */
static __always_inline __u8 link_kind(__u64 link)
{
	return lj_frame_islua(link) ? LJ_FRAME_LUA : (__u8)lj_frame_typep(link);
}

/* A link by frame size (not a Lua return PC) leads into the stack. */
static __always_inline int delta_fits(const struct lua_walk *w, __u64 link)
{
	__u64 delta = lj_frame_delta(link, w->proc.layout.flags & LJ_LAYOUT_GC64);

	return delta && delta <= w->frame - w->bot;
}

/* The innermost frame's link when the interpreter was sampled calling it
 * or returning from it, else *link unchanged.  The pc came from the PC
 * register (rbx), which holds the frame's link while the interpreter
 * moves from one frame to another: every call stores the link into the
 * slot only after BASE has moved to the callee's frame, and every return
 * loads it from the slot before its results overwrite the slot.  So a PC
 * outside the function's own code (code_bytes from fnpc) is the link, and
 * the slot may not hold it yet, or any more. */
static __always_inline int leaf_link(struct lua_walk *w, __u64 fnpc,
				     __u64 code_bytes, __u64 *link)
{
	if (!w->leaf || !w->pc_reg || w->pc == *link)
		return 0;
	if (!lj_frame_islua(w->pc)) {
		/* A link by frame size (a continuation, a pcall, a vararg
		 * or C frame), as vm_call_dispatch_f holds it once BASE is
		 * the callee's and the slot still holds what the caller
		 * left there: nil, from a metamethod call's set-up.  The
		 * register's, then, if it fits and the slot's does not
		 * (before BASE moved, the slot is the caller's own). */
		if (lj_frame_islua(*link) || delta_fits(w, *link) || !delta_fits(w, w->pc))
			return 0;
		*link = w->pc;
		return 1;
	}
	if (w->pc >= fnpc && w->pc - fnpc <= code_bytes)
		return 0;
	/* A return PC follows a CALL the walk reads next.  As the VM is
	 * entered from C, the register may still hold the C caller's value:
	 * then the link slot is right, and the frame is not cut. */
	if (lj_read(w, &w->call_ins, sizeof(w->call_ins), (const void *)(w->pc - 4)))
		return 0;
	*link = w->pc;
	return 1;
}

/* Emits the frame of function func, whose link slot holds *link (which
 * leaf_link() may correct); returns 0, or -1 if func is not a function
 * (after truncating the walk if a read failed). */
static __always_inline int emit_function(struct lua_walk *w, __u64 func, __u64 *link)
{
	const struct lj_layout *lo = &w->proc.layout;
	/* gct and ffid are adjacent in every layout; pc (GCfuncL) and f
	 * (GCfuncC) follow within the function's 40-odd bytes. */
	__u32 first = lo->fn_ffid - 1;
	__u32 end = max_u32(lo->fn_pc, lo->fn_f) + 8;
	__u64 fnpc, f;
	__u8 hdr[2];
	int r = read_block(w, func + first, end - first), have = !r;

	if (have) {
		hdr[0] = w->block[0];
		hdr[1] = w->block[1];
	} else if (r == LJ_UNREADABLE ||
		   lj_read(w, hdr, sizeof(hdr), (const void *)(func + first))) {
		return -1;
	}
	if (hdr[0] != LJ_GCT_FUNC)
		return -1;
	if (hdr[1] == LJ_FF_LUA) {
		__u64 pos = 0, pt;
		__u32 sizebc = 0;
		int between = 0; /* called or returning: no position */
		__u16 fp;

		if (have) {
			fnpc = block_ref(w, lo->fn_pc - first);
		} else if (read_ref(w, &fnpc, func + lo->fn_pc)) {
			truncate_walk(w, LP_LUA_TRUNC_READ_FUNC);
			return 0;
		}
		pt = fnpc - lo->pt_size;
		if (w->leaf && w->pc_reg && w->pc != *link) {
			fp = proto_fingerprint(w, pt, &sizebc);
			between = leaf_link(w, fnpc, 4ull * sizebc, link);
		} else {
			fp = proto_fingerprint(w, pt, NULL);
		}
		/* pc of this frame as a bytecode position, when it lies
		 * inside the function's bytecode; else unknown (0). */
		if (!between && w->pc >= fnpc && w->pc - fnpc < (1ull << 26))
			pos = (w->pc - fnpc) >> 2;
		emit(w, LP_LUA_FRAME_LUA, pt, (__u32)pos, link_kind(*link), fp);
		return 0;
	}
	if (have) {
		f = block_u64(w, lo->fn_f - first);
		/* A builtin's or C function's pc is its one instruction. */
		leaf_link(w, block_ref(w, lo->fn_pc - first), 4, link);
	} else if (read_u64(w, &f, func + lo->fn_f)) {
		truncate_walk(w, LP_LUA_TRUNC_READ_FUNC);
		return 0;
	}
	if (hdr[1] == LJ_FF_C)
		emit(w, LP_LUA_FRAME_C, f, 0, link_kind(*link), 0);
	else
		emit(w, LP_LUA_FRAME_FF, f, hdr[1], link_kind(*link), 0);
	return 0;
}

/* The CALL instruction before return PC link, read with the bytecode
 * below it, up to LJ_CALL_WIN bytes, into the call window: the caller's
 * frame is the next one walked, and a short caller's GCproto header lies
 * right below its bytecode (fnpc = pt + sizeof(GCproto)), so that
 * proto_fingerprint() finds its fields there without a read of its own.
 * The window starts no lower than link - 4's own page: it fails only
 * where the 4-byte read would.  It holds memory read in this sample
 * only (cleared per sample), and the fields it serves never change in a
 * prototype's life: what it gives is what a read would have. */
static __always_inline int read_call(struct lua_walk *w, __u64 link, __u32 *ins)
{
	__u64 page = (link - 4) & ~4095ull, lo = link - LJ_CALL_WIN;
	__u32 len;

	w->cw_len = 0;
	if (link < LJ_CALL_WIN + 4096)
		return lj_read(w, ins, sizeof(*ins), (const void *)(link - 4));
	if (lo < page)
		lo = page;
	len = link - lo; /* 4 to LJ_CALL_WIN */
	/* The mask, after the barrier, is for the verifier: the window has
	 * room for it. */
	barrier_var(len);
	if (lj_read(w, w->call_win, len & (2 * LJ_CALL_WIN - 1), (const void *)lo))
		return -1;
	w->cw_lo = lo;
	w->cw_len = len;
	*ins = *(const __u32 *)&w->call_win[(len - 4) & (LJ_CALL_WIN - 1)];
	return 0;
}

/*
 * The step's work is in global functions, which the verifier checks once
 * each, on their own, with whatever arguments: inlined, they were checked
 * again for every state the loop reached them in, most of the sampler's
 * load time (docs/setup.md).  Each takes the walk's state from its
 * caller (a map value; maybe NULL, for the verifier).
 */

/* Where the frame whose link is link leads: w->next, its caller's frame,
 * and w->next_pc, the caller's pc (0 unknown); 1 if the walk ends here,
 * cut. */
__noinline int lua_walk_link(struct lua_walk *w, __u64 link)
{
	__u32 type = lj_frame_type(link), typep = lj_frame_typep(link), slot;
	__u64 next, prev_pc = 0;

	if (!w)
		return 1;
	slot = (w->proc.layout.flags & LJ_LAYOUT_GC64) ? 2 : 1;
	if (type == LJ_FRAME_LUA) {
		__u32 ins;

		/* link is the return PC; the CALL before it holds the callee's
		 * slot A, and the caller's frame is A + 1 + FR2 slots down. */
		if (read_call(w, link, &ins)) {
			truncate_walk(w, LP_LUA_TRUNC_READ_CALL);
			return 1;
		}
		next = w->frame - 8 * (slot + lj_bc_a(ins));
		prev_pc = link;
	} else {
		__u64 delta = lj_frame_delta(link, w->proc.layout.flags & LJ_LAYOUT_GC64);

		if (!delta || delta > w->frame) {
			truncate_walk(w, LP_LUA_TRUNC_BAD);
			return 1;
		}
		next = w->frame - delta;
		if (typep == LJ_FRAME_VARG) {
			w->skip_next = 1;
			prev_pc = w->pc;
		} else if (typep == LJ_FRAME_CONT) {
			/* The continuation's PC sits two slots below (one
			 * without GC64): with GC64, in the stack window
			 * read_frame() used, unless the frame lies at the
			 * window's very bottom. */
			if (slot == 2) {
				if (!read_slots(w, w->frame - 16, w->cont_slots))
					prev_pc = w->cont_slots[0];
			} else {
				read_ref(w, &prev_pc, w->frame - 4);
			}
		} else if (type == LJ_FRAME_C || typep == LJ_FRAME_CP) {
			/* Entered from C here: the older VM entry's C frame holds
			 * the pc of the Lua code that called out to C. */
			emit_entry(w, w->cf);
			if (w->cf) {
				__u64 prev = 0;

				if (!read_cframe(w, w->cf))
					prev = w->cf_prev;
				w->cf = lj_cframe_raw(prev);
				if (w->cf)
					w->outer_cf = w->cf;
				pass_c_only(w, next);
				if (w->cf && !read_cframe(w, w->cf))
					prev_pc = w->cf_pc;
			}
		}
	}
	w->next = next;
	w->next_pc = prev_pc;
	return 0;
}

/* The bottom of the coroutine walked: was it resumed from Lua?  0 if so,
 * its resumer's frames next; 1, the walk done. */
__noinline int lua_walk_resumer(struct lua_walk *w)
{
	struct lj_state st;
	__u64 r = 0;

	if (!w)
		return 1;
	if (w->L != w->mainL && w->hops++ < LUA_RESUMER_HOPS)
		r = find_resumer(w, &st);
	if (!r) {
		w->done = 1;
		return 1;
	}
	emit_entry(w, w->outer_cf);
	start_thread(w, r, &st, st.base, 0);
	return 0;
}

/* The frame whose function slot holds func and link slot link: emitted,
 * and the walk moved on to its caller's frame; 1 if the walk ends. */
__noinline int lua_walk_frame(struct lua_walk *w, __u64 func, __u64 link)
{
	if (!w)
		return 1;
	/* A dummy frame (the thread itself in the function slot) is skipped,
	 * and so is a vararg function's own frame below its vararg frame. */
	if (func != w->L && !w->skip_next && emit_function(w, func, &link)) {
		/* Not a function.  A function returning (a Lua function's
		 * RET, a builtin's or a C function's results) writes its
		 * results from its own function slot on, and so only the
		 * innermost frame may hold no function; the second result
		 * overwrites the link slot too.  The VM keeps the link
		 * elsewhere: in the VM's own code, the PC register (rbx),
		 * which every return path loads from the link slot before
		 * moving results; in a C handler, the C frame's saved PC.
		 * Both are w->pc here (see walk_lua()). */
		if (!w->leaf || !w->pc || !lj_frame_islua(w->pc)) {
			truncate_walk(w, LP_LUA_TRUNC_BAD);
			return 1;
		}
		emit(w, LP_LUA_FRAME_FF, 0, 0, LJ_FRAME_LUA, 0);
		link = w->pc;
	}
	w->leaf = 0;
	w->skip_next = 0;
	if (w->done || lua_walk_link(w, link))
		return 1;
	if (w->next >= w->frame) {
		truncate_walk(w, LP_LUA_TRUNC_BAD);
		return 1;
	}
	w->frame = w->next;
	w->pc = w->next_pc;
	return 0;
}

/* One bpf_loop step: one frame of the Lua stack. */
static long lua_walk_step(__u32 i, void *ctx)
{
	__u32 zero = 0;
	struct lua_walk *w = bpf_map_lookup_elem(&lua_walk_scratch, &zero);
	__u64 func, link;

	if (!w || w->done)
		return 1;
	if (w->n >= LP_MAX_LUA - 1) {
		truncate_walk(w, LP_LUA_TRUNC_DEPTH);
		return 1;
	}
	if (w->frame <= w->bot)
		return lua_walk_resumer(w) ? 1 : 0;
	if (read_frame(w, &func, &link)) {
		truncate_walk(w, LP_LUA_TRUNC_READ);
		return 1;
	}
	return lua_walk_frame(w, func, link) ? 1 : 0;
}

/* The frame of trace number vmstate, which runs: its GCtrace,
 * J->trace[N], goes with the frame, and the recorder reads where it
 * starts.  Where it starts and where its code is tell a trace from a
 * later one that reused the number and the GCtrace's memory after a
 * flush: the same loop compiled again starts where it did, but its code
 * is elsewhere (new machine-code areas).  Returns 1 if no sample showed
 * this trace before (lj_traces_seen): the recorder should read it now. */
static __always_inline int trace_frame(struct lua_walk *w, __u64 G, __s32 vmstate,
				       __u32 tgid)
{
	const struct lj_layout *lo = &w->proc.layout;
	__u64 J = G + lo->g2j, tr = 0, trarr = 0, startpc = 0, mcode = 0;
	__u32 sizetrace = 0, szmcode = 0, first, end;
	__u16 fp = 0;
	int r;

	/* J->trace (a pointer) and J->sizetrace lie side by side. */
	first = min_u32(lo->j_trace, lo->j_sizetrace);
	end = max_u32(lo->j_trace, lo->j_sizetrace) + 8;
	if (!lo->g2j) {
		/* The trace by number only. */
	} else if (!(r = read_block(w, J + first, end - first))) {
		trarr = block_u64(w, lo->j_trace - first);
		sizetrace = (__u32)block_u64(w, lo->j_sizetrace - first);
	} else if (r == LJ_UNREADABLE ||
		   read_u64(w, &trarr, J + lo->j_trace) ||
		   lj_read(w, &sizetrace, sizeof(sizetrace),
				       (const void *)(J + lo->j_sizetrace))) {
		sizetrace = 0;
	}
	if ((__u32)vmstate < sizetrace)
		read_ref(w, &tr, trarr + (__u64)vmstate * lo->ref_size);
	if (tr) {
		/* startpc, szmcode and mcode lie together (GCtrace). */
		first = min_u32(min_u32(lo->tr_startpc, lo->tr_mcode), lo->tr_szmcode);
		end = max_u32(max_u32(lo->tr_startpc, lo->tr_mcode), lo->tr_szmcode) + 8;
		if (!(r = read_block(w, tr + first, end - first))) {
			startpc = block_ref(w, lo->tr_startpc - first);
			mcode = block_u64(w, lo->tr_mcode - first);
			szmcode = (__u32)block_u64(w, lo->tr_szmcode - first);
		} else if (r != LJ_UNREADABLE) {
			read_ref(w, &startpc, tr + lo->tr_startpc);
			read_u64(w, &mcode, tr + lo->tr_mcode);
			lj_read(w, &szmcode, sizeof(szmcode), (const void *)(tr + lo->tr_szmcode));
		}
		fp = (__u16)((startpc >> 2) ^ (mcode >> 4) ^ (mcode >> 20)) | 1;
		/* (A trace's code is at most LuaJIT's maxmcode, in KB.) */
		if (mcode && szmcode && szmcode <= LJ_MAX_MCODE) {
			w->trace_lo = mcode;
			w->trace_hi = mcode + szmcode;
		}
	}
	emit(w, LP_LUA_FRAME_TRACE, tr, (__u32)vmstate, 0, fp);
	if (tr) {
		/* struct lj_trace_key, as two words. */
		__u64 id = (__u32)vmstate << 16 | fp;

		if (!seen_before(w, &lj_traces_seen, tr, tgid | id << 32))
			return 1;
	}
	return 0;
}

/* Does the memory mapping that holds the sampled stack pointer hold addr
 * too?  1 yes, 0 no, -1 unknown (the mappings are locked: the process
 * maps or faults at this moment).
 *
 * bpf_find_vma() answers, but costs 7 to 12 us a call here, more than the
 * rest of a sample: a tick comes with interrupts off, so it must release
 * the mappings' lock through an irq_work, a self-interrupt (a VM exit on
 * a virtual machine).  So the mapping it found is kept with the thread
 * (t) and answers while the stack pointer stays in it:
 * a thread runs on one stack for long, and one in use is not unmapped.
 * A "no" is asked again of the kernel, which refreshes what is kept: a
 * stack that moved (a host switching stacks, tarantool's fibers) or a
 * mapping that changed since is looked up anew, so a kept mapping can
 * only err by saying yes for a mapping that was since replaced by smaller
 * ones under the same stack pointer. */
struct stack_check {
	__u64 addr;
	__u64 lo, hi;
	int holds;
};

static long stack_check_cb(struct task_struct *task, struct vm_area_struct *vma,
			   void *data)
{
	struct stack_check *sc = data;

	sc->lo = vma->vm_start;
	sc->hi = vma->vm_end;
	sc->holds = sc->addr >= sc->lo && sc->addr < sc->hi;
	return 0;
}

static __always_inline int on_sampled_stack(struct lj_thread *t, __u64 sp, __u64 addr)
{
	struct stack_check sc = { .addr = addr, .holds = -1 };

	if (sp >= t->stack_lo && sp < t->stack_hi &&
	    addr >= t->stack_lo && addr < t->stack_hi)
		return 1;
	if (bpf_find_vma(bpf_get_current_task_btf(), sp, stack_check_cb, &sc, 0))
		return -1;
	if (sc.holds >= 0) {
		t->stack_lo = sc.lo;
		t->stack_hi = sc.hi;
	}
	return sc.holds;
}

/* Sends the identity of prototype pt (lp_event_proto): its lines, and
 * the start of its chunk name. */
static __always_inline void send_proto(struct lua_walk *w, __u32 tgid, __u64 pt,
				       __u16 fingerprint)
{
	const struct lj_layout *lo = &w->proc.layout;
	struct lp_event_proto *ev;
	__u64 chunk = 0;
	__u32 len = 0, n;

	ev = bpf_ringbuf_reserve(&events, sizeof(*ev), 0);
	if (!ev)
		return;
	ev->h.type = LP_EVENT_PROTO;
	ev->h.pid = tgid;
	ev->h.tid = 0;
	ev->h.cpu = 0;
	ev->h.time_ns = bpf_ktime_get_ns();
	ev->addr = pt;
	ev->fingerprint = fingerprint;
	ev->firstline = ev->numline = 0;
	lj_read(w, &ev->firstline, 4, (const void *)(pt + lo->pt_firstline));
	lj_read(w, &ev->numline, 4, (const void *)(pt + lo->pt_numline));
	read_ref(w, &chunk, pt + lo->pt_chunkname);
	if (chunk)
		lj_read(w, &len, 4, (const void *)(chunk + lo->str_len));
	/* At most LP_PROTO_NAME_MAX - 1 bytes: the mask is for the verifier. */
	n = len < LP_PROTO_NAME_MAX - 1 ? len : LP_PROTO_NAME_MAX - 1;
	n &= LP_PROTO_NAME_MAX - 1;
	ev->name_full = len;
	ev->name_len = 0;
	if (n && !lj_read(w, ev->name, n, (const void *)(chunk + lo->str_size)))
		ev->name_len = n;
	bpf_ringbuf_submit(ev, 0);
}

/* bpf_loop step over the sample's Lua frames: the identity of each
 * prototype not sent before. */
static long note_proto_step(__u32 i, void *ctx)
{
	__u32 zero = 0, *tgid = ctx;
	struct lp_event_sample *e = bpf_map_lookup_elem(&capture_event, &zero);
	struct lua_walk *w = bpf_map_lookup_elem(&lua_walk_scratch, &zero);
	struct lj_proto_key key = {};
	const struct lp_lua_frame *f;
	__u8 one = 1;

	if (!e || !w || i >= e->lua_depth)
		return 1;
	/* The mask, after the barrier, is for the verifier: the compiler
	 * would drop it after a bounds check on a copy of i. */
	barrier_var(i);
	f = &e->lua[i & (LP_MAX_LUA - 1)];
	if (f->kind != LP_LUA_FRAME_LUA || !f->addr)
		return 0;
	key.pt = f->addr;
	key.tgid = *tgid;
	key.fingerprint = f->fingerprint;
	if (bpf_map_lookup_elem(&lj_protos_seen, &key))
		return 0;
	bpf_map_update_elem(&lj_protos_seen, &key, &one, BPF_ANY);
	send_proto(w, key.tgid, key.pt, key.fingerprint);
	return 0;
}

/* The G of the lua_State saved in the VM's C frame whose CFA is cfa, if
 * that C frame is the lua_State's innermost (see the top of the file); 0
 * otherwise.  Not yet validated. */
static __always_inline __u64 G_from_vm_frame(struct lua_walk *w, __u64 cfa, __u64 *Lp)
{
	const struct lj_layout *lo = &w->proc.layout;
	__u64 cf = cfa - lo->cf_size, L = 0;
	struct lj_state st;

	if (cfa < lo->cf_size || read_ref(w, &L, cf + lo->cf_l) || !L ||
	    read_state(w, L, &st) || lj_cframe_raw(st.cframe) != cf)
		return 0;
	*Lp = L;
	return st.glref;
}

/* This CPU's copy of tgid's lj_procs entry, taken again if procs_gen
 * moved since (bpf/capture.bpf.h says why it is read first); NULL: no
 * VM. */
static __always_inline struct lj_proc *proc_of(struct lua_walk *wp, __u32 tgid)
{
	struct lj_proc *p;

	wp->gen = *(volatile __u64 *)&procs_gen;
	if (wp->proc_tgid != tgid || wp->proc_gen != wp->gen) {
		p = bpf_map_lookup_elem(&lj_procs, &tgid);
		if (!p)
			return NULL;
		__builtin_memcpy(&wp->proc, p, sizeof(wp->proc));
		wp->proc_tgid = tgid;
		wp->proc_gen = wp->gen;
	}
	return &wp->proc;
}

/* This thread's record of the G it runs (task storage), or the walk's
 * spare when there is none to give (out of memory, storage busy). */
static __always_inline struct lj_thread *thread_of(struct lua_walk *wp)
{
	struct lj_thread *t = bpf_task_storage_get(&lj_thread_G, bpf_get_current_task_btf(),
						   0, BPF_LOCAL_STORAGE_GET_F_CREATE);

	return t ? t : &wp->no_thread;
}

/* The running VM's G, with g's and the running lua_State's fields read
 * (wp->gf, wp->st, wp->first_L): from r14 - g2disp (or the VM frame's L,
 * on the second try), else the thread's last G, else the recorder's hint.
 * 0, with e->lua_state saying why, when none validates; a G with
 * e->lua_state IDLE or NO_G when its lua_State runs no Lua on this stack.
 * A global function, as lua_walk_frame() is. */
__noinline __u64 lua_find_G(struct lua_walk *wp, struct lp_event_sample *e,
			    const struct user_regs *regs, __u64 vm_frame_cfa)
{
	struct lj_thread *t;
	__u64 G, L = 0;
	int found;

	if (!wp || !e || !regs)
		return 0;
	/* A G this thread validated before is known good (its main thread
	 * need not be looked at, nor the cache written again). */
	t = thread_of(wp);
	G = vm_frame_cfa ? G_from_vm_frame(wp, vm_frame_cfa, &L) :
			   LP_VM_G(regs->vm_gd, wp->proc.layout.g2disp);
	found = valid_G(wp, G, &wp->gf, &L, &wp->st, t);
	if (found == 1) {
		t->G = G;
	} else {
		/* Neither a G that has not run (LJ_UNBORN) nor an invalid
		 * one is cached: the thread's last G is the running VM's
		 * still. */
		G = t->G ? t->G : wp->proc.g_hint;
		if (vm_frame_cfa || valid_G(wp, G, &wp->gf, &L, &wp->st, t) != 1) {
			/* No running VM: host code if the G found has not
			 * run (a VM being born or closed), else unknown. */
			e->lua_state = found == LJ_UNBORN ? LP_WALK_IDLE : LP_WALK_NO_G;
			return 0;
		}
	}
	wp->first_L = L;
	/* (vmstate is not 0: valid_G() says why.) */
	if (!wp->st.cframe) {
		/* No C frame: this coroutine is not running; neither is Lua. */
		e->lua_state = LP_WALK_IDLE;
	} else if (!vm_frame_cfa && on_sampled_stack(t, regs->sp, lj_cframe_raw(wp->st.cframe)) == 0) {
		/* G->cur_L is the coroutine that last entered the VM, which
		 * need not run on this stack: a host that switches stacks in
		 * C (tarantool's fibers) leaves the last fiber's L there
		 * until another one's code returns to the VM, and a G found
		 * from the cache or the recorder's hint may be another
		 * thread's VM (sysbench has one per thread).  Its C frame
		 * then lies on another stack: no G for this tick, and the
		 * native walk looks for this stack's own VM frame. */
		e->lua_state = LP_WALK_NO_G;
	}
	return G;
}

/* Where the walk starts: the base of the innermost frame, and *pc, the PC
 * register's value when BASE is in its register too (else 0); *in_trace
 * when a trace runs that vmstate does not name yet.  -1: BASE is in a
 * register the recorder has not located the VM to trust yet. */
static __always_inline __u64 start_base(struct lua_walk *wp, const struct user_regs *regs,
					__s32 vmstate, __u64 *pc, int *in_trace)
{
	const struct lj_proc *p = &wp->proc;
	const struct lj_gfields *g = &wp->gf;
	const struct lj_state *st = &wp->st;
	__u64 ip = regs->ip;

	if (vmstate >= 0) /* a trace runs on G->jit_base */
		return g->jit_base ? g->jit_base : st->base;
	if (~vmstate != LJ_VMST_INTERP)
		return st->base;
	if (!p->vm_end)
		return (__u64)-1;
	if (ip >= p->vm_start && ip < p->vm_end) {
		__u64 rdx = regs->vm_base;

		if (rdx > st->stack && rdx <= st->maxstack + 8 * 8) {
			*pc = regs->vm_pc;
			return rdx;
		}
		return st->base;
	}
	if (g->jit_base > st->stack && g->jit_base <= st->maxstack + 8 * 8) {
		/* Interpreting, yet outside the VM, with a trace's base set:
		 * a JLOOP has jumped into the trace, whose first instructions
		 * have not yet set vmstate (the exits clear jit_base before
		 * they set INTERP).  The trace runs on jit_base; L->base is
		 * older. */
		*in_trace = 1;
		return g->jit_base;
	}
	return st->base;
}

/* The tick hit VM code off L's C frame: a helper the interpreter called
 * (an ENTRY of its own: see the top of the file), a JLOOP entering a
 * trace, or the VM being entered or left (rbx may then be the C
 * caller's).  1 if so, after emitting the helper's ENTRY. */
static __always_inline int off_vm_frame(struct lua_walk *wp, const struct user_regs *regs,
					__s32 vmstate, __u64 cf)
{
	const struct lj_proc *p = &wp->proc;
	__u64 ra = 0;

	if (vmstate >= 0 || regs->ip < p->vm_start || regs->ip >= p->vm_end || regs->sp == cf)
		return 0;
	if (!LP_LINK_REG && regs->sp + 8 == cf && !cstack_u64(wp, &ra, regs->sp) &&
	    ra - 1 >= p->vm_start && ra - 1 < p->vm_end)
		emit_entry(wp, regs->sp);
	return 1;
}

/* Sets the walk up at the innermost frame of the running lua_State, its
 * C frame at cf: e->lua_state WALKED, or NO_VM when BASE is in a register
 * we cannot yet tell from garbage (the recorder locates the VM from this
 * sample's G).  1 if the recorder should hear of it at once (a trace no
 * sample showed).  A global function, as lua_walk_frame() is. */
__noinline int lua_walk_start(struct lua_walk *wp, struct lp_event_sample *e,
			      const struct user_regs *regs, __u64 cf)
{
	__s32 vmstate;
	__u64 base, pc = 0;
	int wake = 0, off_frame, in_trace = 0;

	if (!wp || !e || !regs)
		return 0;
	vmstate = wp->gf.vmstate;
	off_frame = off_vm_frame(wp, regs, vmstate, cf);
	if (vmstate >= 0)
		wake = trace_frame(wp, wp->G, vmstate, e->h.pid);
	base = start_base(wp, regs, vmstate, &pc, &in_trace);
	if (base == (__u64)-1) {
		e->lua_state = LP_WALK_NO_VM;
		return 1;
	}
	start_thread(wp, wp->first_L, &wp->st, base, pc);
	wp->leaf = vmstate < 0 && !in_trace;
	wp->pc_reg = pc && !off_frame;
	e->lua_state = LP_WALK_WALKED;
	return wake;
}

/* This CPU's walk state, cleared for a new walk into e (which says no
 * Lua frame yet). */
static __always_inline struct lua_walk *walk_begin(struct lp_event_sample *e)
{
	__u32 zero = 0;
	struct lua_walk *wp = bpf_map_lookup_elem(&lua_walk_scratch, &zero);

	if (!wp)
		return NULL;
	/* Not the block: 1 KB (16 cache lines, cold at 99 Hz) for nothing;
	 * nor what is kept across samples. */
	__builtin_memset(&wp->G, 0, __builtin_offsetof(struct lua_walk, block) -
				      __builtin_offsetof(struct lua_walk, G));
	e->lua_state = LP_WALK_NONE;
	e->lua_depth = 0;
	e->vmstate = 0;
	e->lua_G = 0;
	return wp;
}

/* The walk set up (start_thread()), its frames into e: 1 if the recorder
 * should hear of them at once (a new stack). */
static __always_inline int walk_lua_frames(struct lua_walk *wp, struct lp_event_sample *e)
{
	__u32 zero = 0, tgid = e->h.pid;

	phase_end(LP_PHASE_LUA_STATE);
	phase_count_lua_reads(LP_PHASE_LUA_STATE, &wp->reads, &wp->read_fails);
	/* bpf_loop wants a stack context; the step finds the state itself. */
	bpf_loop(LUA_WALK_STEPS, lua_walk_step, &zero, 0);
	if (!wp->done)
		truncate_walk(wp, LP_LUA_TRUNC_DEPTH);
	e->lua_depth = wp->n;
	/* A new stack (struct lj_stack_key, as two words): the identity of
	 * the prototypes it shows first, in case they are gone when the
	 * recorder reads them. */
	if (wp->n && !seen_before(wp, &lj_stacks_seen, wp->hash, tgid)) {
		bpf_loop(LP_MAX_LUA, note_proto_step, &tgid, 0);
		return 1;
	}
	return 0;
}

/* walk_lua() less the count of its reads. */
static __always_inline int walk_lua_sample(struct lp_event_sample *e,
					   struct capture *cap, __u64 vm_frame_cfa)
{
	const struct user_regs *regs = cap ? &cap->regs : NULL;
	struct lua_walk *wp;
	struct lj_proc *p;
	__u32 tgid;
	__u64 G, cf;
	int wake;

	if (!e || !cap)
		return 0;
	wp = walk_begin(e);
	if (!wp)
		return 0;
	tgid = e->h.pid;
	cap->vm_cfa = 0;
	p = proc_of(wp, tgid);
	if (!p)
		return 0;
	G = lua_find_G(wp, e, regs, vm_frame_cfa);
	if (!G)
		return 0;
	wp->G = G;
	wp->mainL = G - p->layout.gg_g;
	e->lua_G = G;
	wake = !p->g_hint;
	e->vmstate = wp->gf.vmstate;
	if (e->lua_state != LP_WALK_NONE) /* IDLE, NO_G */
		return wake;
	cf = lj_cframe_raw(wp->st.cframe);
	/* Machine code of traces (and their exit stubs, and a trace's first
	 * instructions before it sets vmstate) runs on the innermost VM
	 * entry's C frame, lowered by the trace's spadjust: the native
	 * walk resumes at that frame's CFA when it meets such code. */
	cap->vm_cfa = cf + p->layout.cf_size;
	wake |= lua_walk_start(wp, e, regs, cf);
	if (e->lua_state == LP_WALK_NO_VM)
		return 1;
	return wake | walk_lua_frames(wp, e);
}


/*
 * Fills e->lua[] for a sample of a LuaJIT process; regs are the user
 * registers at the sample.  vm_frame_cfa is 0 on the first try; on the
 * second, the CFA of the VM's C frame the native walk crossed, to find G
 * from when the first found none.  Returns 1 when the recorder should
 * hear of this sample at once: it shows a G in a process whose VM the
 * recorder has not located, which it must do while the process lives, or
 * a trace or a Lua stack no sample showed before (lj_traces_seen,
 * lj_stacks_seen).
 * A global function: the verifier checks it once, on its own, instead of
 * once per path through the native unwinder.
 */
__noinline int walk_lua(struct lp_event_sample *e, struct capture *cap, __u64 vm_frame_cfa)
{
	int wake = walk_lua_sample(e, cap, vm_frame_cfa);
	struct lua_walk *wp;
	__u32 zero = 0;

	/* The reads after the Lua state's (a second try's count as the
	 * walk's too). */
	if (time_phases && (wp = bpf_map_lookup_elem(&lua_walk_scratch, &zero))) {
		phase_count_lua_reads(LP_PHASE_LUA, &wp->reads, &wp->read_fails);
		phase_count_copy_reads(&wp->copy_reads);
	}
	return wake;
}

/*
 * Fills e->lua[] with the frames of coroutine L of the current process,
 * suspended at a yield, for a Lua-land wait (bpf/luawait.bpf.h).  A yield
 * (lua_yield() from a C function, the coroutine.yield builtin) leaves
 * L->base at the yielding function's frame, L->cframe NULL (no C frame:
 * it runs nowhere) and its frames as they were, until the next resume
 * starts from them: so they are walked as a stack is, from L->base, the
 * leaf a C function or builtin, whose pc is not needed.  L must belong to
 * a G that validates with L as its coroutine; one with a C frame is
 * running, not suspended, and is not walked (e->lua_state NO_G).
 * e->lua_state is SUSPENDED when walked: the frames go above the native
 * stack, which is the resumer's (report/stacks.c).
 */
__noinline int walk_lua_suspended(struct lp_event_sample *e, __u64 L)
{
	struct lua_walk *wp;
	struct lj_proc *p;
	__u64 G, curL = L;
	int wake;

	if (!e)
		return 0;
	wp = walk_begin(e);
	if (!wp)
		return 0;
	p = proc_of(wp, e->h.pid);
	if (!p)
		return 0;
	e->lua_state = LP_WALK_NO_G;
	if (read_state(wp, L, &wp->st))
		return 0;
	G = wp->st.glref;
	if (valid_G(wp, G, &wp->gf, &curL, &wp->st, thread_of(wp)) != 1 || wp->st.cframe)
		return 0;
	wp->G = G;
	wp->mainL = G - p->layout.gg_g;
	wp->first_L = L;
	e->lua_G = G;
	e->vmstate = ~LJ_VMST_C; /* the yield's: a C function's, or a builtin's */
	wake = !p->g_hint;
	start_thread(wp, L, &wp->st, wp->st.base, 0);
	wp->leaf = 1;
	wp->pc_reg = 0;
	e->lua_state = LP_WALK_SUSPENDED;
	return wake | walk_lua_frames(wp, e);
}

#endif

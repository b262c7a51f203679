/* SPDX-License-Identifier: GPL-2.0 */
/*
 * unwind_native.bpf.h - walks a sampled thread's native user stack with
 * the unwind tables record/unwind.c loads (layout in bpf/unwind_maps.h), for
 * code built without frame pointers: Debian's packages, and LuaJIT, whose
 * interpreter uses rbp as a general register.  Included by
 * bpf/capture.bpf.h, whose capture_stacks() calls unwind_native_user_stack().
 *
 * Each frame: find the executable mapping that holds pc (binary search of
 * the process's sorted list), then the row of that object that covers the
 * pc (binary search of the few rows its bucket index leaves) -- or both
 * at once from this CPU's caches of recent lookups (the last walk's
 * frames by depth, then one hashed by pc), which most frames hit
 * (bpf/unwind_maps.h) --, compute the CFA from the row's rule,
 * read the return address at CFA - 8 and, if the row says the caller's
 * rbp was saved, read it too; the caller's rsp is the CFA.  For every
 * frame but the first, pc is a return address, the instruction after the
 * call: the lookup uses pc - 1 so that a call that ends a function (a
 * noreturn callee) finds its own function's row, not the next one's.
 *
 *   higher addresses
 *   +-----------------+ <- CFA  (= caller's rsp after the return)
 *   | return address  |   CFA - 8
 *   | saved rbp?      |   CFA + 8 * rbp_off
 *   | ... locals ...  |
 *   +-----------------+ <- rsp of this frame
 *
 * LuaJIT's own code is stepped over with the VM's C frames, which the
 * Lua walk found (unwind_vm_step()), or which the walk finds at the first
 * VM frame it meets when the Lua walk found none (unwind_vm_find()): a
 * compiled trace has no CFI, and the interpreter's CFI does not hold
 * where its code runs on a trace's frame.  The entry of a VM that C code
 * called from Lua is making (luaL_newstate) is not the walked VM's, and
 * is stepped over by itself (unwind_vm_other()).
 *
 * Code in no mapping of the list may be a loaded object's the list was
 * read too early to hold (a library mapped since): the kernel says which
 * file is mapped there (unwind_vma_object()).
 *
 * The walk stops, and says why in the sample (enum lp_ustop), at the
 * outermost frame, at a pc no mapping or row covers, at anonymous code it
 * cannot step over, at a rule it cannot follow, at a stack read that
 * fails, or when the stack pointer stops moving towards the stack's base.  An object mapped
 * without usable CFI is walked with frame pointers for its frames only.
 * A process without a mapping list yet (just exec'd) gets its leaf only;
 * when the tables could not be set up at all, bpf_get_stack()'s
 * frame-pointer walk.
 *
 * The stack above the first frame's rsp is copied in one read before any
 * other read of the target's memory in a sample (LP_STACK_WINDOW bytes at
 * most, or to the end of the page near the top of the stack): the capture
 * calls unwind_copy_stack() before the Lua walk, whose reads of the VM's
 * C frames, which lie in it, it serves too (stack_copy_holding()).  The
 * frames' reads come from the copy while they fall in it, and a read
 * above it moves it there (unwind_read_n()).
 * A read of the target's memory costs 50 ns or more, and a walk makes one
 * or two per frame.  Each copy reaches only as far as the thread's last
 * walk on this CPU read from there (struct unwind_span): what a copy
 * costs is mostly its bytes.
 *
 * One repair: when the first frame's row leads to a return address in no
 * mapping, the frame is retried as a frameless leaf (return address at
 * [rsp]).  LuaJIT's math helpers need it: see unwind_frame().
 */
#ifndef LUAPROF_BPF_UNWIND_NATIVE_BPF_H
#define LUAPROF_BPF_UNWIND_NATIVE_BPF_H

#include "bpf/arch.bpf.h"
#include "bpf/unwind_maps.h"

#ifndef EFAULT
#define EFAULT 14 /* vmlinux.h has no errno values */
#endif

/* The rows of every loaded object; the recorder writes them through
 * mmap() rather than one system call per row. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_MMAPABLE);
	__uint(max_entries, LP_UNWIND_MAX_ROWS);
	__type(key, __u32);
	__type(value, struct lp_unwind_row);
} unwind_rows SEC(".maps");

/* The rows' bucket index (bpf/unwind_maps.h), written through mmap() too. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_MMAPABLE);
	__uint(max_entries, LP_UNWIND_MAX_BUCKETS);
	__type(key, __u32);
	__type(value, struct lp_unwind_bucket);
} unwind_buckets SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, LP_UNWIND_MAX_OBJS);
	__type(key, __u32);
	__type(value, struct lp_unwind_obj);
} unwind_objs SEC(".maps");

/* Loaded objects by file (bpf/unwind_maps.h), for code the list lacks. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, LP_UNWIND_MAX_OBJS);
	__type(key, struct lp_file_id);
	__type(value, struct lp_unwind_file);
} unwind_files SEC(".maps");

/* Preallocated: an update never allocates in the sampling path, and the
 * memory is known at load. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, LP_UNWIND_MAX_PROCS);
	__type(key, __u32); /* tgid */
	__type(value, struct lp_unwind_proc);
} unwind_procs SEC(".maps");

/* The running kernel's PAGE_SHIFT, which BTF does not carry: the unit of
 * a mapping's vm_pgoff.  The recorder sets it (4 KiB pages on x86_64;
 * arm64 kernels use 4, 16 or 64). */
const volatile __u32 page_shift = 12;

/* The copy of the stack the walk reads from (see the top of the file);
 * the slack after it lets a masked offset read 16 bytes. */
#define LP_STACK_WINDOW 4096
#define LP_STACK_REFILLS 4            /* windows copied after the first */
#define LP_STACK_SPAN (8 << 20)       /* how far above sp a refill may go */

#define LP_STACK_FILLS (1 + LP_STACK_REFILLS)
#define LP_STACK_SLACK 128            /* copied past what the last walk read */
#define LP_STACK_BELOW 128            /* copied below the read that refills */
#define LP_SPAN_SLOTS 16              /* threads remembered per CPU */

/*
 * What a thread's last walk on this CPU read of its stack: for each copy
 * it made, where the highest read from it ended.  A thread's older frames
 * lie at the same addresses sample after sample, so the next copy from
 * below such an end need only reach it (and LP_STACK_SLACK more), not a
 * whole window.
 * A walk that reads further moves the copy there as any walk does
 * (unwind_read_n()): the size changes what is copied, never what is read.
 */
struct unwind_span {
	__u32 tid;
	__u32 nfills;
	__u64 hi[LP_STACK_FILLS];
};

struct unwind_window {
	__u8 bytes[LP_STACK_WINDOW + 16];
	struct unwind_span spans[LP_SPAN_SLOTS]; /* by tid % LP_SPAN_SLOTS */
	/* The sample's first copy, taken before the Lua walk
	 * (unwind_copy_stack()): bytes holds [copy_lo, copy_lo + copy_len)
	 * until the native walk takes the window over (copy_len 0 then);
	 * copy_used is where the Lua walk's reads from it ended. */
	__u64 copy_lo, copy_used;
	__u32 copy_len, copy_pad;
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct unwind_window);
} unwind_windows SEC(".maps");

/* What the walk found at each pc lately, per CPU (bpf/unwind_maps.h). */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct lp_unwind_row_cache);
} unwind_row_caches SEC(".maps");

/* This CPU's cache, or NULL; *slot is where pc goes in e[]. */
static __always_inline struct lp_unwind_row_cache *
unwind_cache_slot(__u64 pc, struct lp_unwind_cached **slot)
{
	struct lp_unwind_row_cache *rc;
	__u32 zero = 0;

	rc = bpf_map_lookup_elem(&unwind_row_caches, &zero);
	if (!rc)
		return NULL;
	/* Else clang may add the offset before the test, which the
	 * verifiers of 6.1 and 6.12 refuse (arithmetic on a pointer that
	 * may be NULL; 6.18's takes it). */
	barrier_var(rc);
	*slot = &rc->e[((pc * 0x9e3779b97f4a7c15ull) >> (64 - LP_UNWIND_CACHE_BITS)) &
		       ((1 << LP_UNWIND_CACHE_BITS) - 1)];
	return rc;
}

/* Set by the recorder once the tables work: a process without a mapping
 * list then gets its leaf only, not a frame-pointer walk. */
__u32 unwind_tables_on;

/* Where the walk is: the registers of the frame about to be recorded. */
struct unwind_cursor {
	__u64 pc, sp, bp;
	__u64 lr;         /* frame intr_n's link register (arm64), else 0 */
	__u64 sp0, bp0;   /* frame 0's, for the leaf retry */
	__u64 rec_pc;     /* out: the pc recorded for this frame */
	__u32 n;          /* frames recorded before this one */
	__u32 pc_is_ra;   /* pc is a return address: look up pc - 1 */
	__u32 bp_known;   /* bp holds the frame's true rbp */
	__u32 leaf_retry; /* frame 0 may be retried as a frameless leaf */
	__u32 intr_n;     /* the frame whose registers were all saved when it
			     was interrupted: 0, or the one a signal frame
			     returns to.  Its pc is no return address and its
			     return address may still be in a register. */
	__u32 stop;       /* enum lp_ustop, once the walk ends */
	__u32 win_len;    /* bytes of the stack copied, from win_lo */
	__u64 win_lo;
	__u32 refills;    /* windows copied after the first */
	__u32 tid;        /* whose stack (struct unwind_span) */
	__u64 used_hi[LP_STACK_FILLS]; /* this walk's, by copy (unwind_span) */
	__u32 reads;      /* reads past the copy (record -v) */
	__u32 memo_rd;    /* the memo of the last walk (unwind_maps.h) */
	__s32 memo_off;   /* its frame n + memo_off is this walk's frame n */
	/* LuaJIT, while it runs Lua (see unwind_vm_step()): */
	__u64 cframe;     /* the innermost C frame of the VM not passed yet */
	__u64 vm_lo, vm_hi; /* the interpreter's code */
	__u16 cf_size, cf_prev; /* a C frame's size, where it links the next */
	__u16 cf_l, l_cframe;   /* where a C frame saves L, where L links it */
	__u16 ref_size;         /* of the saved L: 8 with GC64, else 4 */
	__u16 l_glref;          /* where L names its G */
	__u32 in_trace;   /* g->vmstate says a trace may run: code in no
			     known mapping is taken for a new trace's, and
			     anonymous code for a trace's only then */
	__u64 trace_lo, trace_hi; /* the running trace's code, if vmstate
			     names it (0: unknown): anonymous code
			     elsewhere is not a trace's */
	__u32 jit_frame;  /* out: 1 + the frame stepped over as a trace's */
	__u32 gap;        /* the frame just recorded was stepped over to the
			     VM's C frame past unseen ones: record a gap */
	__u32 vm_helper;  /* frame 0 is a helper the interpreter called */
	__u32 trace_runs; /* g->vmstate names a running trace (arm64: 0) */
	__u32 find_vm;    /* the Lua walk found no L: look for its C frame */
	__u32 vma_asked;  /* times unwind_vma_object() asked the kernel */
	__u32 vma_obj[2]; /* what it found, the last two: the object mapped */
	__u64 vma_lo[2], vma_hi[2], vma_bias[2]; /* at [lo, hi), its bias */
	__u64 vm_cfa;     /* out: the CFA of the C frame found so */
	__u64 walked_G;   /* the G of the L the Lua walk took, 0 none */
	__u32 relua;      /* out: that L does not run here; vm_cfa's does */
	__u32 pad_relua;
};

/*
 * The cursor lives in a map, not on the BPF stack: the verifier tracks
 * values on the stack exactly, so a frame count there would make each
 * bpf_loop iteration a new state to verify (and every way out of the loop
 * another); read from a map, it is just a bounded number.
 */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct unwind_cursor);
} unwind_cursors SEC(".maps");

/* The bpf_loop callback's context, on the stack: pointers only. */
struct unwind_walk {
	struct lp_event_sample *e;
	const struct lp_unwind_proc *proc;
	struct unwind_cursor *c;
};

/*
 * The mapping search, the frame step and the walk are global functions:
 * the verifier checks each once, on its own, instead of once per path
 * through every caller (the mapping search indexes an array, so each of
 * its 2^steps paths is a distinct state).  The row search needs no such
 * care: its indices reach the verifier only as map keys, which it does not
 * track.
 */

/* The index of the mapping that holds pc, or -1. */
__noinline int unwind_map_index(const struct lp_unwind_proc *proc, __u64 pc)
{
	__u32 lo = 0, hi;

	if (!proc)
		return -1;
	hi = proc->nmaps;
	if (hi > LP_UNWIND_MAX_MAPS)
		hi = LP_UNWIND_MAX_MAPS;
	for (int k = 0; k < LP_UNWIND_MAP_STEPS; k++) {
		const struct lp_unwind_map *m;
		__u32 mid;

		if (lo >= hi)
			break;
		mid = lo + (hi - lo) / 2;
		if (mid >= LP_UNWIND_MAX_MAPS)
			break;
		m = &proc->maps[mid];
		if (pc < m->start)
			hi = mid;
		else if (pc >= m->end)
			lo = mid + 1;
		else
			return (int)mid;
	}
	return -1;
}

/* The object's last row with row.pc <= vaddr; 0, or -1 if none.  The
 * bucket holding vaddr bounds the search to a few rows (bpf/unwind_maps.h);
 * the same search as record/unwind_buckets.c's, which is unit-tested. */
static __always_inline int unwind_find_row(__u32 objid, __u64 vaddr,
					   struct lp_unwind_row *out)
{
	const struct lp_unwind_obj *obj = bpf_map_lookup_elem(&unwind_objs, &objid);
	const struct lp_unwind_row *r;
	__u32 lo = 0, hi, idx;
	const struct lp_unwind_bucket *b;

	if (!obj || vaddr > 0xffffffffull)
		return -1;
	hi = obj->count;
	if (obj->nbuckets) {
		__u64 k;

		if (vaddr < obj->base)
			return -1;
		k = (vaddr - obj->base) >> (obj->shift & 31);
		if (k >= obj->nbuckets) {
			lo = hi; /* past the last row's bucket: the last row */
		} else {
			idx = obj->bucket + (__u32)k;
			b = bpf_map_lookup_elem(&unwind_buckets, &idx);
			if (!b)
				return -1;
			lo = b->lo;
			hi = b->hi;
		}
	}
	for (int k = 0; k < LP_UNWIND_ROW_STEPS; k++) {
		__u32 mid;

		if (lo >= hi)
			break;
		mid = lo + (hi - lo) / 2;
		idx = obj->first + mid;
		r = bpf_map_lookup_elem(&unwind_rows, &idx);
		if (!r)
			return -1;
		if (r->pc <= vaddr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (!lo)
		return -1;
	idx = obj->first + lo - 1;
	r = bpf_map_lookup_elem(&unwind_rows, &idx);
	if (!r)
		return -1;
	*out = *r;
	return 0;
}

/* How much to copy from lo: up to the furthest end of the thread's last
 * walk's copies (struct unwind_span) that one window reaches -- a few
 * bytes between two of them cost less than a second read --, or a whole
 * window if none. */
static __always_inline __u32 unwind_fill_len(const struct unwind_cursor *c,
					     const struct unwind_window *w, __u64 lo)
{
	const struct unwind_span *s = &w->spans[c->tid & (LP_SPAN_SLOTS - 1)];
	__u32 len = 0;

	if (s->tid != c->tid)
		return LP_STACK_WINDOW;
	for (int i = 0; i < LP_STACK_FILLS; i++) {
		__u64 need = s->hi[i] - lo + LP_STACK_SLACK;

		if (i >= s->nfills)
			break;
		if (lo >= s->hi[i])
			continue;
		if (need > LP_STACK_WINDOW)
			break;
		len = need;
	}
	return len ? len : LP_STACK_WINDOW;
}

/* Copies the stack from addr (rounded down to a cache line) into the
 * window: as much as unwind_fill_len() says, or to the end of addr's page
 * when that runs past the top of the stack.  0, or -1 if not even that
 * was read. */
static __always_inline int unwind_window_fill(struct unwind_cursor *c,
					      struct unwind_window *w, __u64 addr)
{
	__u64 lo = addr & ~63ull;
	__u32 len = unwind_fill_len(c, w, lo), k = c->refills;

	c->win_lo = lo;
	c->win_len = 0;
	if (k < LP_STACK_FILLS)
		c->used_hi[k] = lo;
	/* For the verifier: 1 to LP_STACK_WINDOW bytes. */
	barrier_var(len);
	if (len > LP_STACK_WINDOW || !len)
		len = LP_STACK_WINDOW;
	if (bpf_probe_read_user(w->bytes, len, (const void *)lo)) {
		__u32 page = 4096 - (lo & 4095);

		if (len > page)
			len = page;
		barrier_var(len);
		if (len > LP_STACK_WINDOW || !len)
			return -1;
		if (bpf_probe_read_user(w->bytes, len, (const void *)lo))
			return -1;
	}
	c->win_len = len;
	return 0;
}

/* This walk's reads, for the thread's next walk on this CPU. */
static __always_inline void unwind_span_save(const struct unwind_cursor *c,
					     struct unwind_window *w)
{
	struct unwind_span *s = &w->spans[c->tid & (LP_SPAN_SLOTS - 1)];

	s->tid = c->tid;
	s->nfills = c->refills + 1;
	for (int i = 0; i < LP_STACK_FILLS; i++)
		s->hi[i] = c->used_hi[i];
}

/* The first copy of a sample's stack, from the user registers' sp, taken
 * before the Lua walk so that its reads of the C stack come from it
 * (stack_copy_holding()); the native walk starts from it.  Only where the
 * unwind tables are on: else nothing walks the copy. */
static __always_inline void unwind_copy_stack(__u32 tid, const struct user_regs *regs)
{
	struct unwind_window *w;
	struct unwind_cursor *c;
	__u32 zero = 0;

	w = bpf_map_lookup_elem(&unwind_windows, &zero);
	c = bpf_map_lookup_elem(&unwind_cursors, &zero);
	if (!w || !c)
		return;
	w->copy_len = 0;
	if (!regs->user || !unwind_tables_on)
		return;
	c->tid = tid;
	c->refills = 0;
	if (unwind_window_fill(c, w, regs->sp))
		return;
	w->copy_lo = c->win_lo;
	w->copy_len = c->win_len;
	w->copy_used = c->win_lo;
}

/* The window, if the sample's first copy holds [addr, addr + len) (len
 * 256 at most), for stack_copy_u64(); else NULL, and the caller reads the
 * target.  Either way a read within a window's reach of the copy counts
 * in what the thread's next copy reaches (struct unwind_span). */
static __always_inline struct unwind_window *stack_copy_holding(__u64 addr, __u32 len)
{
	struct unwind_window *w;
	__u64 rel, end;
	__u32 zero = 0;

	w = bpf_map_lookup_elem(&unwind_windows, &zero);
	if (!w || !w->copy_len || addr < w->copy_lo || len > 256)
		return NULL;
	rel = addr - w->copy_lo;
	end = addr + len;
	if (rel < LP_STACK_WINDOW - len && end > w->copy_used)
		w->copy_used = end;
	return rel < w->copy_len && len <= w->copy_len - rel ? w : NULL;
}

/* The 8 bytes at addr of a copy stack_copy_holding() said holds them:
 * the mask is for the verifier (the window has 16 bytes of slack). */
static __always_inline __u64 stack_copy_u64(const struct unwind_window *w, __u64 addr)
{
	return *(const __u64 *)&w->bytes[(addr - w->copy_lo) & (LP_STACK_WINDOW - 1)];
}

/* Reads size (8 or 16) bytes of the stack at addr: from the copy when
 * they lie in it, else from the target.  The walk goes up the stack: a
 * read above the copy moves it there, as often as LP_STACK_REFILLS allows
 * (frames past a big buffer on the stack, as nginx's workers have, lie
 * all together 8 KiB up). */
static __always_inline int unwind_read_n(struct unwind_cursor *c, __u64 addr,
					 void *v, __u32 size)
{
	struct unwind_window *w;
	__u32 zero = 0;

	w = bpf_map_lookup_elem(&unwind_windows, &zero);
	if (w && !(addr >= c->win_lo && addr - c->win_lo + size <= c->win_len) &&
	    addr >= c->win_lo && addr - c->sp0 < LP_STACK_SPAN &&
	    c->refills < LP_STACK_REFILLS) {
		c->refills++;
		/* From a little below: a frame reads its return address
		 * first, then the registers it saved under it. */
		unwind_window_fill(c, w, addr - LP_STACK_BELOW > c->sp0 ? addr - LP_STACK_BELOW : addr);
	}
	if (w && addr >= c->win_lo && addr - c->win_lo + size <= c->win_len) {
		/* The offset is below LP_STACK_WINDOW: the mask is for the
		 * verifier. */
		__u32 off = (addr - c->win_lo) & (LP_STACK_WINDOW - 1), k = c->refills;

		if (k < LP_STACK_FILLS && addr + size > c->used_hi[k])
			c->used_hi[k] = addr + size;
		if (size == 16)
			__builtin_memcpy(v, &w->bytes[off], 16);
		else
			__builtin_memcpy(v, &w->bytes[off], 8);
		return 0;
	}
	c->reads++;
	return bpf_probe_read_user(v, size, (const void *)addr);
}

static __always_inline int unwind_read(struct unwind_cursor *c, __u64 addr,
				       __u64 *v)
{
	return unwind_read_n(c, addr, v, 8);
}

/* Moves the cursor to the caller's registers; its rbp is known. */
static __always_inline void unwind_move(struct unwind_cursor *c, __u64 pc, __u64 sp,
					__u64 bp, __u32 pc_is_ra)
{
	c->pc = pc;
	c->sp = sp;
	c->bp = bp;
	c->bp_known = 1;
	c->pc_is_ra = pc_is_ra;
}

/*
 * Steps over a frame of LuaJIT's own code with the VM's C frame.  Every
 * entry into the VM from C (lua_pcall, lua_call, lua_resume, lj_vm_cpcall
 * inside the VM itself) pushes one C frame, CFRAME_SIZE bytes, links it
 * to the previous one and makes it L->cframe; all of the VM's code runs
 * on the innermost one.  The interpreter does (rsp is the C frame while it
 * interprets), but so do a compiled trace, which has no CFI and lowers rsp
 * by its spadjust, the math helpers a trace calls (lj_vm_floor, ...), and
 * the trace exit handler, which pushes the trace's registers there and
 * calls lj_trace_exit: for those, the interpreter's CFI (CFA = rsp +
 * CFRAME_SIZE) is wrong, and the C frame is right.  The Lua walk found
 * L->cframe; each VM frame met takes the innermost C frame not passed yet
 * and moves to the one it links.  Return address just below the C frame's
 * CFA, rbp below that, as the VM's own CFI says.
 *
 * Returns 0 (stepped), or an enum lp_ustop; -1 when no C frame is left to
 * take, or the one left lies below the stack pointer (a coroutine resumed
 * from Lua links none): the VM's CFI is all there is then.
 */
static __always_inline int unwind_vm_step(struct unwind_cursor *c)
{
	__u64 cf = c->cframe, cfa = cf + c->cf_size, ra, bp, prev = 0;

	if (!cf || cfa <= c->sp)
		return -1;
	if (unwind_read(c, cfa - 8, &ra) || unwind_read(c, cfa - 16, &bp))
		return LP_USTOP_READ;
	unwind_read(c, cf + c->cf_prev, &prev);
	c->cframe = lj_cframe_raw(prev);
	unwind_move(c, ra, cfa, bp, 1);
	return 0;
}

/* Is the frame at cf a VM C frame?  It is if the lua_State it saved (at
 * cf_l) has it as its innermost C frame (L->cframe, whose low bits are
 * flags).  A saved L must be a user address, aligned, as any lua_State
 * is: most stack data that is none costs no read of the target (which
 * may fail, at ten times a good one's cost). */
static __always_inline int unwind_is_cframe(struct unwind_cursor *c, __u64 cf, __u64 *Lp)
{
	__u64 L = 0, lcf = 0;

	if (unwind_read(c, cf + c->cf_l, &L))
		return 0;
	if (c->ref_size != 8)
		L = (__u32)L;
	if (L < 65536 || (L & 7) || L >= (1ull << 47))
		return 0;
	c->reads++;
	*Lp = L;
	return !bpf_probe_read_user(&lcf, sizeof(lcf), (const void *)(L + c->l_cframe)) &&
	       lj_cframe_raw(lcf) == cf;
}

/*
 * The Lua walk found no L (no tick in the interpreter has shown this
 * thread's G yet, as in a program that lives in C functions called from
 * Lua), so the VM's C frames are unknown: the first VM frame met may
 * show one.  When the interpreter calls out to C, its stack pointer is
 * its C frame, so at a return address into the VM the walk's sp is that
 * C frame, if the frame is one: it is if the lua_State it saved has it
 * as its innermost C frame (L->cframe).  From there on the walk steps
 * over the VM's frames with the C frame chain, as if the Lua walk had
 * found L, and reports the frame's CFA: the capture walks Lua again
 * from it (bpf/walk_lua.bpf.h validates that L's G).
 */
static __always_inline void unwind_vm_find(struct unwind_cursor *c)
{
	__u64 cf = c->sp, L;

	if (!c->pc_is_ra || !unwind_is_cframe(c, cf, &L))
		return;
	c->cframe = cf;
	c->vm_cfa = cf + c->cf_size;
	c->find_vm = 0;
}

/*
 * A return address into the VM's code whose stack pointer is not the C
 * frame the walk would take next (c->cframe) may be another lua_State's
 * entry.  It is one if the frame at sp is a C frame (unwind_is_cframe(),
 * as unwind_vm_find() asks), and the L that saved it says whose:
 *   - a lua_State of another VM (another G): one being born (luaL_newstate
 *     through the FFI: lua_newstate's lj_vm_cpcall of cpluaopen) or
 *     closed, whose G the Lua walk passes over for the running VM's
 *     (bpf/walk_lua.bpf.h, valid_G()).  Stepped over by itself, not
 *     recorded, and c->cframe, further out, is kept for the walked VM's
 *     entry: report/stacks.c gives each VM frame of the native stack the
 *     Lua frames of the next VM entry of the Lua walk's, which this frame
 *     is not (taking the walked VM's C frame here instead cut lua_newstate
 *     and the frames below it from the stack).
 *   - a coroutine of the walked VM: then the L the Lua walk took (G->cur_L,
 *     the last to enter the VM) does not run on this stack, whose C code
 *     switched stacks with no word to the VM (tarantool's fibers,
 *     ucontext: samples/fibers.c), and this frame's L does.  Its C frames
 *     are the walk's from here on, this one recorded as the walked VM's,
 *     and c->relua has the sampler walk Lua again from this frame: the
 *     Lua frames it has are another stack's.  (Without it, the frame
 *     was stepped over unrecorded and the other stack's Lua frames stood
 *     on this stack's leaf alone; before, it stepped to that L's C frame
 *     on the other stack, stitching the other fiber's frames to this
 *     one's leaf.)
 * Returns 0 (stepped) or an enum lp_ustop; -1 if the frame at sp is no
 * other VM's entry, as below the trace exit handler's call of lj_trace_exit
 * (on the walked VM's C frame, lowered), or is now c->cframe.
 */
static __always_inline int unwind_vm_other(struct unwind_cursor *c)
{
	__u64 cf = c->sp, cfa = cf + c->cf_size, ra, bp, L = 0, G = 0;

	if (!c->pc_is_ra || !c->cframe || cf == c->cframe || !unwind_is_cframe(c, cf, &L))
		return -1;
	if (c->walked_G) {
		c->reads++;
		if (!bpf_probe_read_user(&G, sizeof(G), (const void *)(L + c->l_glref)) &&
		    (c->ref_size == 8 ? G : (__u32)G) == c->walked_G) {
			c->cframe = cf;
			c->vm_cfa = cfa;
			c->relua = 1;
			return -1;
		}
	}
	if (unwind_read(c, cfa - 8, &ra) || unwind_read(c, cfa - 16, &bp))
		return LP_USTOP_READ;
	unwind_move(c, ra, cfa, bp, 1);
	c->rec_pc = 0;
	return 0;
}

/*
 * Code without CFI in anonymous memory: a JIT's.  A LuaJIT trace's is
 * stepped over with the VM's C frame, but only while g->vmstate says a
 * trace may run (c->in_trace): in a C function called from Lua (vmstate
 * C) it is another JIT's code, as PCRE2's that rspamd's regexp:match()
 * reaches through its own native frames, and taking it for a trace's
 * dropped those frames from a stack that said it was whole (the match's
 * time went to the C function as its own).  Another JIT's code is
 * stepped over with the VM's C frame too, but with a gap recorded for
 * those frames (unwind_jit_step()).  A trace cannot lie under a C
 * function that entered the VM again: LuaJIT calls no finalizer and
 * allows no FFI callback while a trace runs.
 *
 * While a trace runs, vmstate names it, and the Lua walk read where its
 * code lies (T->mcode, T->szmcode): anonymous code elsewhere is another
 * JIT's, called from the trace through the FFI and its own native frames
 * (OpenResty's ngx.re.find(s, re, "jo"), compiled, calls
 * ngx_http_lua_ffi_exec_regex, pcre_exec and PCRE's JIT code).  Taken
 * for the trace, the match's time went to the Lua function as its own,
 * in a stack that said it was whole.  It gets a gap too.  Code
 * outside the running trace but in the same mapping is LuaJIT's still:
 * a trace's head, where another trace jumped before it sets its number
 * (each call of a recursive function that a trace links to itself), or
 * an exit stub before the handler sets EXIT.
 */
static __always_inline int unwind_may_be_trace(const struct lp_unwind_proc *proc,
					       const struct unwind_cursor *c, __u64 lookup)
{
	if (!c->in_trace)
		return 0;
	if (!c->trace_hi || (lookup >= c->trace_lo && lookup < c->trace_hi))
		return 1;
	/* Not the running trace's own code, yet maybe LuaJIT's: another
	 * trace's head, jumped to, or an exit stub.  Those lie in LuaJIT's
	 * code areas, as the running trace does, mapped apart from other
	 * JITs' memory (both in no known mapping: as before, a trace's). */
	return unwind_map_index(proc, lookup) == unwind_map_index(proc, c->trace_lo);
}

/*
 * Steps over JIT code to the VM's innermost C frame: a trace's, as
 * unwind_may_be_trace() took it (the frame noted in c->jit_frame), or,
 * `foreign`, another JIT's, with a gap recorded after it (LP_USTACK_GAP).
 * Lua reached another JIT's code through C functions: those called
 * through the FFI from a trace (ngx_http_lua_ffi_exec_regex, pcre_exec),
 * or the C function Lua called (rspamd's regexp:match(), pcre2_match),
 * all under the VM's C frame.  They cannot be seen: the JIT's code has no
 * CFI and keeps no frame pointer.  The gap says so, where the walk used
 * to stop (a cut: the root [truncated], a flame graph's tower apart from
 * the program's).
 */
static __always_inline int unwind_jit_step(struct unwind_cursor *c, int foreign)
{
	int stop = unwind_vm_step(c);

	if (stop < 0)
		return LP_USTOP_JIT;
	if (!stop && foreign)
		c->gap = 1;
	else if (!stop)
		c->jit_frame = c->n + 1;
	return stop;
}

/* unwind_vma_object()'s question and answer. */
struct unwind_vma {
	__u64 lo, hi, bias;
	__u32 obj;
	__u32 found;
};

/* The loaded object that is this inode's file, or NULL. */
static __always_inline const struct lp_unwind_file *unwind_file_of(struct inode *ino)
{
	struct lp_file_id key;

	lp_file_id_of(ino, &key);
	return bpf_map_lookup_elem(&unwind_files, &key);
}

static long unwind_vma_cb(struct task_struct *task, struct vm_area_struct *vma,
			  void *data)
{
	struct unwind_vma *v = data;
	const struct lp_unwind_file *f;
	__u64 off;

	if (!vma->vm_file || !(vma->vm_flags & 4 /* VM_EXEC */))
		return 0;
	f = unwind_file_of(vma->vm_file->f_inode);
	off = vma->vm_pgoff << page_shift;
	if (!f || off < f->off_lo || off >= f->off_hi)
		return 0;
	v->lo = vma->vm_start;
	v->hi = vma->vm_end;
	v->bias = vma->vm_start - off - f->delta;
	v->obj = f->obj;
	v->found = 1;
	return 0;
}

/* The same for the executable's code, which the process's mm_struct
 * places (start_code: where its executable segment starts): no lock. */
static __always_inline void unwind_exe_code(struct unwind_vma *v)
{
	struct mm_struct *mm = bpf_get_current_task_btf()->mm;
	const struct lp_unwind_file *f;

	if (!mm || !mm->exe_file)
		return;
	f = unwind_file_of(mm->exe_file->f_inode);
	if (!f)
		return;
	v->lo = mm->start_code;
	v->hi = mm->end_code;
	v->bias = v->lo - f->vaddr;
	v->obj = f->obj;
	v->found = 1;
}

/*
 * pc lies in no mapping of the process's list: if the kernel maps a
 * loaded object's code there (a library the dynamic loader mapped after
 * the list was read, bpf/unwind_maps.h), its object and bias.  0, or -1.
 * The executable's code is known without asking (unwind_exe_code());
 * the rest is bpf_find_vma()'s, which costs 7 to 12 us here
 * (bpf/walk_lua.bpf.h) and answers once a tick: it unlocks through an
 * irq_work that runs only after the tick.  The walk keeps the last two
 * mappings it found (a program's frames alternate between it and libc),
 * looks at most LP_VMA_ASKS times, and caches nothing it found so (see
 * unwind_frame()): the recorder, which meets the same frames, reads the
 * new mappings at once and publishes a list that has them.
 */
#define LP_VMA_ASKS 3

static __always_inline int unwind_vma_object(struct unwind_cursor *c, __u64 pc,
					     __u32 *obj, __u64 *bias)
{
	struct unwind_vma v = {};
	__u32 k;

	for (k = 0; k < 2; k++) {
		if (pc >= c->vma_lo[k] && pc < c->vma_hi[k]) {
			*obj = c->vma_obj[k];
			*bias = c->vma_bias[k];
			return 0;
		}
	}
	if (c->vma_asked >= LP_VMA_ASKS)
		return -1;
	k = c->vma_asked++ & 1;
	unwind_exe_code(&v);
	if (!v.found || pc < v.lo || pc >= v.hi) {
		v.found = 0;
		if (bpf_find_vma(bpf_get_current_task_btf(), pc, unwind_vma_cb, &v, 0) ||
		    !v.found)
			return -1;
	}
	c->vma_lo[k] = v.lo;
	c->vma_hi[k] = v.hi;
	c->vma_obj[k] = v.obj;
	c->vma_bias[k] = v.bias;
	*obj = v.obj;
	*bias = v.bias;
	return 0;
}

/*
 * Frame 0 (at sp) taken as a frameless leaf: its return address, and its
 * caller's stack pointer.  At [sp] where calls push it; in the link
 * register where they leave it there.  -1 if it cannot be read.
 */
static __always_inline int unwind_leaf_ra(struct unwind_cursor *c, __u64 sp, __u64 *ra,
					  __u64 *caller_sp)
{
	if (LP_LINK_REG) {
		*ra = LP_RA_STRIP(c->lr);
		*caller_sp = sp;
		return c->lr ? 0 : -1;
	}
	*caller_sp = sp + 8;
	return unwind_read(c, sp, ra);
}

/*
 * Frame 0's pc has no CFI row: a hand-written routine's instructions that
 * its author left out of the CFI, such as glibc's clone3 after its system
 * call (the parent's frame is still a plain leaf there, the child's ends
 * the stack).  Taken as a frameless leaf, return address at [rsp], if
 * that is a call site in known code; else the walk stops there.
 */
static __always_inline int unwind_leaf_no_row(const struct lp_unwind_proc *proc,
					      struct unwind_cursor *c)
{
	__u64 ra, bias, sp;
	__u32 obj;

	if (c->n != c->intr_n || c->pc_is_ra || unwind_leaf_ra(c, c->sp, &ra, &sp))
		return LP_USTOP_NO_ROW;
	if (!ra)
		return LP_USTOP_END;
	if ((unwind_map_index(proc, ra - 1) < 0 && unwind_vma_object(c, ra - 1, &obj, &bias)) ||
	    !arch_is_call_site(ra))
		return LP_USTOP_NO_ROW;
	unwind_move(c, ra, sp, c->bp, 1);
	return 0;
}

/* A register of the leaf frame by DWARF number, for an LP_CFA_REG row:
 * the capture's, when it read them all (the event came in user mode),
 * else the one the kernel saved.  Read where a row needs it, which few
 * do, rather than copied at every walk. */
static __always_inline int unwind_leaf_reg(__u32 dwarf, __u64 *v)
{
	struct capture *cap;
	__u32 zero = 0;

	cap = bpf_map_lookup_elem(&captures, &zero);
	if (cap && cap->regs.all) {
		if (dwarf >= LP_DWARF_GPRS)
			return -1;
		*v = cap->regs.gpr[dwarf & (LP_DWARF_GPRS - 1)];
		return 0;
	}
	return arch_saved_reg(dwarf, v);
}

#define LP_MEMO_AT(n) ((n) & (LP_UNWIND_MEMO - 1))

/* The last walk's entry for frame n (c->n) if it was at lookup, looked
 * for at the offset the walk keeps and one frame either side of it. */
static __always_inline const struct lp_unwind_cached *
unwind_memo_find(const struct lp_unwind_row_cache *rc, struct unwind_cursor *c,
		 __u64 lookup, __u32 gen)
{
	for (int d = 0; d < 3; d++) {
		__s32 off = c->memo_off + (d == 2 ? -1 : d);
		const struct lp_unwind_cached *m = &rc->memo[c->memo_rd & 1][LP_MEMO_AT(c->n + off)];

		if (m->pc == lookup && m->gen == gen) {
			c->memo_off = off;
			return m;
		}
	}
	return NULL;
}

/* The memo missed frame n and e[] found it (slot): if the memo holds its
 * pc where e[] last saw it, the walks align there; e[] sees it here now. */
static __always_inline void unwind_memo_realign(const struct lp_unwind_row_cache *rc,
						struct unwind_cursor *c,
						struct lp_unwind_cached *slot)
{
	const struct lp_unwind_cached *m = &rc->memo[c->memo_rd & 1][LP_MEMO_AT(slot->depth)];

	if (m->pc == slot->pc && m->gen == slot->gen)
		c->memo_off = (__s32)(slot->depth & (LP_UNWIND_MEMO - 1)) -
			      (__s32)LP_MEMO_AT(c->n);
	slot->depth = LP_MEMO_AT(c->n);
}

/*
 * Frame 0 in the VM's code while a trace runs: a helper the trace called
 * (lj_vm_modi for an integer %, lj_vm_floor, ...), a frameless leaf
 * whose return address is in the trace's code, in a mapping known as
 * JIT code.  The walk steps there and over the trace as from any callee
 * of it, noting the trace's frame: its pc places the sample in the
 * functions the trace inlined (and on arm64 says which trace runs).
 * Else, as the exit handler entered from a stub (x86-64: the exit
 * number where a return address would be), 0: the walk goes to the VM's
 * C frame at once, as before.
 */
static __always_inline int unwind_trace_helper(const struct lp_unwind_proc *proc,
					       struct unwind_cursor *c)
{
	__u64 ra, sp;
	int idx;

	if (c->n || !c->trace_runs || unwind_leaf_ra(c, c->sp, &ra, &sp) ||
	    !unwind_may_be_trace(proc, c, ra - 1))
		return 0;
	idx = unwind_map_index(proc, ra - 1);
	barrier_var(idx);
	if (idx < 0 || idx >= LP_UNWIND_MAX_MAPS) {
		/* A new code area the recorder has not read yet: the walk
		 * stepping over it as a trace's makes it read.  Only where
		 * the trace is known by this step alone (arm64: the link
		 * register, always a code address there). */
		if (!LP_TRACE_UNNUMBERED || ra < 65536)
			return 0;
	} else if (proc->maps[idx].kind != LP_UMAP_JIT) {
		return 0;
	}
	unwind_move(c, ra, sp, c->bp, 1);
	return 1;
}

/* A frame whose pc lies in the VM's code: its C frame (see
 * unwind_vm_step()), or a helper the interpreter or a trace called.  -1
 * if the frame is to be unwound as any other; else 0 (moved on) or a
 * stop. */
static __always_inline int unwind_in_vm(const struct lp_unwind_proc *proc,
					struct unwind_cursor *c, __u64 lookup)
{
	__u64 ra, sp;
	int stop;

	if (lookup < c->vm_lo || lookup >= c->vm_hi)
		return -1;
	if (c->find_vm)
		unwind_vm_find(c);
	/* A helper the interpreter called (the Lua walk gave it an ENTRY of
	 * its own, bpf/walk_lua.bpf.h): a frameless leaf, return address at
	 * [rsp], under the interpreter's frame. */
	if (!c->n && c->vm_helper) {
		if (unwind_leaf_ra(c, c->sp, &ra, &sp))
			return LP_USTOP_READ;
		unwind_move(c, ra, sp, c->bp, 1);
		return 0;
	}
	if (unwind_trace_helper(proc, c))
		return 0;
	stop = unwind_vm_other(c);
	if (stop < 0)
		stop = unwind_vm_step(c);
	return stop;
}

/*
 * Frame 0's row led nowhere: no mapping of the list holds its caller, and
 * no call comes right before it.  One CFI lie is common enough to undo:
 * LuaJIT's math helpers (vm_mod, vm_floor, ...) are frameless leaves
 * called from the interpreter, yet lie inside the interpreter's FDE,
 * whose CFA is rsp + 80.  Take frame 0 as a leaf instead, return address
 * at [rsp], if that is a call site in known code; else keep the pc that
 * led nowhere, which tells the recorder to look for new mappings.
 * A caller found by the row that follows a call is code mapped since the
 * list was read (a library the dynamic loader just mapped), not a lie;
 * and [rsp] of a leaf that keeps a frame is stack data, often an old
 * code pointer: libgcc's constructor, run by the dynamic loader, has the
 * program's entry point there.  The index of the caller's mapping, or
 * idx.
 */
static __always_inline int unwind_leaf_retry(const struct lp_unwind_proc *proc,
					     struct unwind_cursor *c, __u64 *lookup, int idx)
{
	__u64 ra, sp;
	int ridx;

	c->leaf_retry = 0;
	if (arch_is_call_site(c->pc) || unwind_leaf_ra(c, c->sp0, &ra, &sp))
		return idx;
	ridx = unwind_map_index(proc, ra - 1);
	if (ridx < 0 || !arch_is_call_site(ra))
		return idx;
	unwind_move(c, ra, sp, c->bp0, 1);
	c->rec_pc = ra;
	*lookup = ra - 1;
	return ridx;
}

/*
 * The kernel's uretprobe trampoline: a uretprobe pending in a frame
 * (luaprof's own on lua_resume for -e lua-wait, or any tool's, on any
 * function the process runs) replaced its return address, in the stack,
 * with the address of the [uprobes] page (xol_area), and keeps the
 * original in the task's return instances, the innermost first, each
 * with the address of the slot it replaced (`stack`).  The kernel's own
 * stack traces put the original back the same way.  1 if c->pc was
 * such a return address (a caller's frame), now the original; -1 if
 * c->pc is in the trampoline but no return instance stands for it: at
 * the leaf, a function returned into the trampoline, which pushes
 * registers of its own, and whose instance the kernel drops before its
 * last instructions pop the original from the stack; the walk ends
 * there, cut, rather than guess which.  Asked only of an address in no mapping or
 * in the [uprobes] one (LP_UMAP_URETPROBE): a walk pays nothing where no
 * uretprobe is pending.
 */
#define UNWIND_URETPROBES 8 /* pending uretprobes looked through */
static __always_inline int unwind_uretprobe_ra(struct unwind_cursor *c)
{
	struct task_struct *task = bpf_get_current_task_btf();
	struct return_instance *ri;
	struct xol_area *xol;
	struct uprobe_task *ut;
	/* The stack pointer the kernel noted at the function's entry. */
	__u64 slot = c->sp - LP_ENTRY_SP_TO_RETURN;

	if (!task->mm)
		return 0;
	xol = BPF_CORE_READ(task, mm, uprobes_state.xol_area);
	if (!xol || c->pc - BPF_CORE_READ(xol, vaddr) >= 4096)
		return 0; /* not the trampoline */
	ut = BPF_CORE_READ(task, utask);
	ri = ut ? BPF_CORE_READ(ut, return_instances) : NULL;
	for (int i = 0; c->pc_is_ra && i < UNWIND_URETPROBES && ri; i++) {
		if (BPF_CORE_READ(ri, stack) == slot) {
			c->pc = BPF_CORE_READ(ri, orig_ret_vaddr);
			return 1;
		}
		ri = BPF_CORE_READ(ri, next);
	}
	return -1;
}

/* The kind of mapping idx of proc (unwind_map_index()'s), 0 for none. */
static __always_inline __u32 unwind_map_kind(const struct lp_unwind_proc *proc, int idx)
{
	/* (The mask is for the verifier: the bound is a power of two.) */
	return idx >= 0 && idx < LP_UNWIND_MAX_MAPS ?
		proc->maps[idx & (LP_UNWIND_MAX_MAPS - 1)].kind : 0;
}

/* The rule that unwinds the frame at *lookup (which a leaf retry may
 * move): *kind (enum lp_umap_kind) and, for LP_UMAP_ROWS, *row; from this
 * CPU's row cache, else from the mapping's object, and cached.  -1 when
 * found; else the walk's end, or 0 after stepping over a trace's code. */
static __always_inline int unwind_rule(const struct lp_unwind_proc *proc,
				       struct unwind_cursor *c, __u64 *lookup,
				       __u32 *kind, struct lp_unwind_row *row)
{
	const struct lp_unwind_map *m;
	struct lp_unwind_cached *slot = NULL;
	struct lp_unwind_row_cache *rc = unwind_cache_slot(*lookup, &slot);
	__u64 bias;
	__u32 obj;
	int idx;

	if (rc) {
		const struct lp_unwind_cached *hit = unwind_memo_find(rc, c, *lookup, proc->gen);

		if (hit || (slot->pc == *lookup && slot->gen == proc->gen)) {
			if (hit) {
				rc->memo_hits++;
			} else {
				unwind_memo_realign(rc, c, slot);
				hit = slot;
			}
			*kind = hit->kind;
			*row = hit->row;
			rc->hits++;
			goto found;
		}
		rc->misses++;
	}
	idx = unwind_map_index(proc, *lookup);
	if (idx < 0 || unwind_map_kind(proc, idx) == LP_UMAP_URETPROBE) {
		int tramp = unwind_uretprobe_ra(c);

		if (tramp < 0)
			return LP_USTOP_BAD_FRAME;
		if (tramp) {
			c->rec_pc = c->pc;
			*lookup = c->pc - 1;
			idx = unwind_map_index(proc, *lookup);
		}
	}
	if (idx < 0 && c->n == 1 && c->leaf_retry)
		idx = unwind_leaf_retry(proc, c, lookup, idx);
	/* clang knows the range unwind_map_index() returns and would drop
	 * the upper check the verifier needs: hide it. */
	barrier_var(idx);
	if (idx < 0 || idx >= LP_UNWIND_MAX_MAPS) {
		/*
		 * pc 0: frame 0's row gave a return address of 0 and its
		 * retry found no caller at [rsp] either.  Not a frame, not
		 * a trace's code (below, it would be stepped as one and
		 * recorded), and not the stack's end, which the row would
		 * have said: a cut, and unwind_step() records no pc 0.  Seen
		 * with vmstate EXIT, frame 0 in the VM's code called from
		 * lj_trace_exit (python3-lupa).
		 */
		if (!c->pc)
			return LP_USTOP_BAD_FRAME;
		/*
		 * While a trace runs, code in no known mapping is most likely
		 * a trace's too: LuaJIT maps new machine code areas as it
		 * compiles, and makes its newest area writable, not
		 * executable, while it writes a trace there, so a read of the
		 * mappings at that moment leaves it out.
		 */
		if (c->cframe && unwind_may_be_trace(proc, c, *lookup))
			return unwind_jit_step(c, 0);
		if (unwind_vma_object(c, *lookup, &obj, &bias))
			return LP_USTOP_UNMAPPED;
		*kind = LP_UMAP_ROWS;
		/* Not cached: the entry would hold under the list's number,
		 * which a forked child shares while it maps other code where
		 * the list has none. */
		rc = NULL;
	} else {
		m = &proc->maps[idx];
		*kind = m->kind;
		obj = m->obj;
		bias = m->bias;
		if (*kind == LP_UMAP_URETPROBE)
			rc = NULL; /* (its return instance not found: never cached) */
	}
	if (*kind == LP_UMAP_ROWS && unwind_find_row(obj, *lookup - bias, row))
		return unwind_leaf_no_row(proc, c);
	if (rc) {
		slot->pc = *lookup;
		slot->gen = proc->gen;
		slot->kind = *kind;
		slot->depth = LP_MEMO_AT(c->n);
		slot->row = *row;
	}
found:
	if (rc) {
		/* This walk's frame n, for the next walk (unwind_maps.h). */
		struct lp_unwind_cached *mm = &rc->memo[(c->memo_rd ^ 1) & 1][LP_MEMO_AT(c->n)];

		mm->pc = *lookup;
		mm->gen = proc->gen;
		mm->kind = *kind;
		mm->row = *row;
	}
	return -1;
}

/* Moves c to the caller whose frame ends at cfa, its return address ra,
 * rbp bp; 0, or the stop that ends the walk there. */
static __always_inline int unwind_to_caller(struct unwind_cursor *c, __u64 cfa,
					    __u64 ra, __u64 bp)
{
	/* The stack grows down: a caller's frame is always above, but for
	 * a leaf that keeps its return address in the link register. */
	if (cfa < c->sp || (cfa == c->sp && (!LP_LINK_REG || c->n != c->intr_n)))
		return LP_USTOP_BAD_FRAME;
	/* A zero return address ends the stack, unless frame 0 may yet be
	 * retried (then the next step finds 0 unmapped and retries). */
	if (!ra && !c->leaf_retry)
		return LP_USTOP_END;
	c->pc = LP_RA_STRIP(ra);
	c->sp = cfa;
	c->bp = bp;
	c->pc_is_ra = 1;
	return 0;
}

/* A frame without CFI: trust rbp for it, [rbp] = caller's rbp, [rbp + 8]
 * = return address.  A zero rbp ends the chain: the ABI has _start and a
 * thread's start clear it. */
static __always_inline int unwind_by_rbp(struct unwind_cursor *c)
{
	__u64 bp, ra;

	if (c->bp_known && !c->bp)
		return LP_USTOP_END;
	if (!c->bp_known || c->bp < c->sp)
		return LP_USTOP_BAD_FRAME;
	if (unwind_read(c, c->bp, &bp) || unwind_read(c, c->bp + 8, &ra))
		return LP_USTOP_READ;
	return unwind_to_caller(c, c->bp + 16, ra, bp);
}

/* The frame's CFA by its row (*cfa); -1 when known, else 0 (a signal
 * frame, moved over already) or the stop that ends the walk. */
static __always_inline int unwind_cfa(const struct lp_unwind_proc *proc,
				      struct unwind_cursor *c,
				      const struct lp_unwind_row *row, __u64 *cfa)
{
	__u64 bp, sp, ra;

	switch (LP_CFA_KIND(row->cfa_type)) {
	case LP_CFA_RSP:
		*cfa = c->sp + row->cfa_off;
		c->leaf_retry = !c->n;
		return -1;
	case LP_CFA_RBP:
		if (!c->bp_known)
			return LP_USTOP_BAD_FRAME;
		*cfa = c->bp + row->cfa_off;
		c->leaf_retry = !c->n;
		return -1;
	case LP_CFA_DEREF_RSP:
	case LP_CFA_DEREF_RBP:
		/* A realigned frame: the stack pointer it saved (bpf/unwind_maps.h). */
		if (LP_CFA_KIND(row->cfa_type) == LP_CFA_DEREF_RBP && !c->bp_known)
			return LP_USTOP_BAD_FRAME;
		if (unwind_read(c, (LP_CFA_KIND(row->cfa_type) == LP_CFA_DEREF_RSP ?
				    c->sp : c->bp) + (__s16)row->cfa_off, cfa))
			return LP_USTOP_READ;
		*cfa += LP_CFA_AUX(row->cfa_type) * 8;
		return -1;
	case LP_CFA_REG:
		/* Only the interrupted frame's registers are known. */
		if (c->n)
			return LP_USTOP_UNSUPPORTED;
		if (unwind_leaf_reg(LP_CFA_AUX(row->cfa_type), cfa))
			return LP_USTOP_UNSUPPORTED;
		*cfa += row->cfa_off;
		return -1;
	case LP_CFA_PLT:
		/* The expression reads rip itself, not the lookup pc. */
		*cfa = c->sp + 8 + ((c->pc & 15) >= row->cfa_off ? 8 : 0);
		return -1;
	case LP_CFA_SIGNAL:
		/* The registers of the interrupted code, as the kernel saved
		 * them (bpf/arch_*.bpf.h's LP_SIGFRAME_*).  That pc was
		 * interrupted, not called from: look it up as is. */
#ifdef LP_SIGFRAME_MAGIC
		if (unwind_read(c, c->sp + LP_SIGFRAME_MAGIC_AT, &ra))
			return LP_USTOP_READ;
		if ((__u32)ra != LP_SIGFRAME_MAGIC)
			return LP_USTOP_BAD_FRAME;
#endif
		if (unwind_read(c, c->sp + LP_SIGFRAME_FP, &bp) ||
		    unwind_read(c, c->sp + LP_SIGFRAME_SP, &sp) ||
		    unwind_read(c, c->sp + LP_SIGFRAME_PC, &ra))
			return LP_USTOP_READ;
#ifdef LP_SIGFRAME_LR
		if (unwind_read(c, c->sp + LP_SIGFRAME_LR, &c->lr))
			return LP_USTOP_READ;
#endif
		if (!ra)
			return LP_USTOP_END;
		unwind_move(c, ra, sp, bp, 0);
		c->intr_n = c->n + 1;
		return 0;
	case LP_CFA_END:
		return LP_USTOP_END;
	case LP_CFA_GAP:
		return unwind_leaf_no_row(proc, c);
	default:
		return LP_USTOP_UNSUPPORTED;
	}
}

/*
 * unwind_by_row()'s second half where calls leave the return address in
 * a link register: the row's aux says where it is (bpf/unwind_maps.h's
 * LP_RA_*), and the frame pointer is saved beside it in the usual
 * prologue (stp x29, x30, [sp, #-N]!).
 */
static __always_inline int unwind_by_row_link(struct unwind_cursor *c,
					      const struct lp_unwind_row *row, __u64 cfa)
{
	__u32 aux = LP_CFA_AUX(row->cfa_type);
	__u64 ra, bp = c->bp;

	if (LP_CFA_KIND(row->cfa_type) != LP_CFA_RSP && LP_CFA_KIND(row->cfa_type) != LP_CFA_RBP)
		return LP_USTOP_UNSUPPORTED;
	/* Where the caller's frame pointer was saved: at the frame's base
	 * (sp) in a large frame, else by words from the CFA. */
	__u64 fp_at = row->rbp_off == LP_RBP_AT_SP ? c->sp : cfa + (__s64)row->rbp_off * 8;
	int fp_saved = row->rbp_off < 0 || row->rbp_off == LP_RBP_AT_SP;

	if (aux == LP_RA_FRAME_RECORD && fp_saved) {
		__u64 pair[2];

		if (unwind_read_n(c, fp_at, pair, sizeof(pair)))
			return LP_USTOP_READ;
		c->bp_known = 1;
		return unwind_to_caller(c, cfa, pair[1], pair[0]);
	}
	if (aux == LP_RA_LINK) {
		if (c->n != c->intr_n || !c->lr)
			return LP_USTOP_BAD_FRAME;
		ra = c->lr;
	} else if (aux < LP_RA_SP) {
		if (unwind_read(c, cfa - 8 * (__u64)(aux + 1), &ra))
			return LP_USTOP_READ;
	} else if (aux == LP_RA_SP && LP_CFA_KIND(row->cfa_type) == LP_CFA_RSP &&
		   row->rbp_off >= 0) {
		/* (x29 unchanged: rbp_off holds the words above sp.) */
		if (unwind_read(c, c->sp + 8 * (__u64)row->rbp_off, &ra))
			return LP_USTOP_READ;
		return unwind_to_caller(c, cfa, ra, bp);
	} else {
		return LP_USTOP_UNSUPPORTED;
	}
	if (row->rbp_off == LP_RBP_UNKNOWN) {
		c->bp_known = 0;
	} else if (fp_saved) {
		if (unwind_read(c, fp_at, &bp))
			return LP_USTOP_READ;
		c->bp_known = 1;
	}
	return unwind_to_caller(c, cfa, ra, bp);
}

/* A frame with CFI: its CFA and the caller's rbp by its row. */
static __always_inline int unwind_by_row(const struct lp_unwind_proc *proc,
					 struct unwind_cursor *c,
					 const struct lp_unwind_row *row)
{
	__u64 cfa = 0, ra, bp = c->bp;
	int stop = unwind_cfa(proc, c, row, &cfa);

	if (stop >= 0)
		return stop;
	if (LP_LINK_REG)
		return unwind_by_row_link(c, row, cfa);
	if (row->rbp_off == -2) {
		/* rbp pushed first, right under the return address (the
		 * usual prologue): one read for both. */
		__u64 pair[2];

		if (unwind_read_n(c, cfa - 16, pair, sizeof(pair)))
			return LP_USTOP_READ;
		c->bp_known = 1;
		return unwind_to_caller(c, cfa, pair[1], pair[0]);
	}
	if (unwind_read(c, cfa - 8, &ra))
		return LP_USTOP_READ;
	if (row->rbp_off == LP_RBP_AT_RBP) {
		/* rbp points into its own (DRAP) frame, below the CFA, until
		 * the epilogue pops it: the rule outlives the pop there. */
		if (c->bp_known && c->bp < cfa)
			c->bp_known = !unwind_read(c, c->bp, &bp);
	} else if (row->rbp_off == LP_RBP_UNKNOWN) {
		c->bp_known = 0;
	} else if (row->rbp_off < 0) {
		if (unwind_read(c, cfa + (__s64)row->rbp_off * 8, &bp))
			return LP_USTOP_READ;
		c->bp_known = 1;
	}
	return unwind_to_caller(c, cfa, ra, bp);
}

/*
 * One frame: sets c->rec_pc, the pc to record for it, and moves c to the
 * caller.  Returns 0 to go on, or the enum lp_ustop that ends the walk
 * (the frame is recorded either way).
 */
__noinline int unwind_frame(const struct lp_unwind_proc *proc,
			    struct unwind_cursor *c)
{
	struct lp_unwind_row row = {};
	__u64 lookup;
	__u32 kind = 0;
	int stop;

	if (!proc || !c)
		return LP_USTOP_BAD_FRAME;
	c->rec_pc = c->pc;
	lookup = c->pc - (c->pc_is_ra ? 1 : 0);
	stop = unwind_in_vm(proc, c, lookup);
	if (stop >= 0)
		return stop;
	stop = unwind_rule(proc, c, &lookup, &kind, &row);
	if (stop >= 0)
		return stop;
	if (kind == LP_UMAP_URETPROBE) /* no return instance for it */
		return LP_USTOP_BAD_FRAME;
	if (kind == LP_UMAP_JIT)
		return unwind_jit_step(c, !unwind_may_be_trace(proc, c, lookup));
	if (kind != LP_UMAP_ROWS)
		return unwind_by_rbp(c);
	return unwind_by_row(proc, c, &row);
}

/* bpf_loop callback: records one frame; 0 continues, 1 stops. */
static long unwind_step(__u32 i, void *arg)
{
	struct unwind_walk *w = arg;
	struct unwind_cursor *c = w->c;
	__u32 n = c->n;
	int stop;

	if (n >= LP_MAX_USTACK) {
		c->stop = LP_USTOP_DEPTH;
		return 1;
	}
	stop = unwind_frame(w->proc, c);
	if (!c->rec_pc) { /* pc 0 is no frame (unwind_frame()) */
		c->stop = stop;
		return stop != 0;
	}
	w->e->ustack[n] = c->rec_pc;
	c->n = n + 1;
	if (c->gap && !stop) {
		c->gap = 0;
		if (n + 1 >= LP_MAX_USTACK) {
			c->stop = LP_USTOP_DEPTH;
			return 1;
		}
		w->e->ustack[n + 1] = LP_USTACK_GAP;
		c->n = n + 2;
	}
	if (stop) {
		c->stop = stop;
		return 1;
	}
	return 0;
}

/*
 * The registers of user mode at the event, as the capture's caller read
 * them for both walks (bpf/capture.bpf.h): the interrupted ones if the
 * event came in user mode, else those saved on entry to the kernel (the
 * thread was in a system call or a fault).  0, or -1 when the thread has no user mode (a
 * kernel thread).
 */
static __always_inline int unwind_user_regs(const struct user_regs *regs,
					    struct unwind_cursor *c)
{
	if (!regs->user)
		return -1;
	c->pc = regs->ip;
	c->sp = regs->sp;
	c->bp = regs->bp;
	c->lr = regs->lr;
	return 0;
}

/* The running trace's code, as the Lua walk read it (trace_frame()). */
static __always_inline void unwind_trace_code(struct unwind_cursor *c)
{
	struct lua_walk *wp;
	__u32 zero = 0;

	wp = bpf_map_lookup_elem(&lua_walk_scratch, &zero);
	if (!wp)
		return;
	c->trace_lo = wp->trace_lo;
	c->trace_hi = wp->trace_hi;
}

/* The process's lj_proc: the Lua walk's per-CPU copy when it is this
 * process's and current (bpf/walk_lua.bpf.h), as it is whenever that walk
 * found a VM; else from lj_procs, a hash lookup (40 to 180 ns). */
static __always_inline const struct lj_proc *unwind_lj_proc(__u32 tgid)
{
	const struct lua_walk *wp;
	__u32 zero = 0;

	wp = bpf_map_lookup_elem(&lua_walk_scratch, &zero);
	if (wp && wp->proc_tgid == tgid &&
	    wp->proc_gen == *(volatile __u64 *)&procs_gen)
		return &wp->proc;
	return bpf_map_lookup_elem(&lj_procs, &tgid);
}

/*
 * Fills e->ustack, e->ustack_bytes and e->ustack_stop for a process whose
 * mappings the recorder loaded, from cap->regs, the user registers at the
 * event (read once for both walks); returns 0 then.  Returns -1, with
 * e->ustack_stop = LP_USTOP_FALLBACK and nothing else written, for any
 * other process: the caller takes the kernel's frame-pointer walk.
 *
 * cap->vm_cfa is the CFA of L's innermost C frame, if the Lua walk
 * found L; if it found no L (LP_WALK_NO_G), the walk sets cap->vm_cfa
 * to the CFA of the first of the VM's C frames it meets (unwind_vm_find()),
 * for the Lua walk to find L there.
 *
 * Global, so verified once on its own: each way the walk can end would
 * otherwise be a state from which the verifier re-checks all of the
 * caller's code that follows.
 */
__noinline int unwind_native_user_stack(struct lp_event_sample *e, struct capture *cap)
{
	const struct user_regs *regs = cap ? &cap->regs : NULL;
	const struct lj_proc *lj = NULL;
	struct unwind_walk w = { .e = e };
	struct unwind_cursor *c;
	struct lp_unwind_row_cache *rc;
	__u32 zero = 0, stop, n, tgid;

	if (!e || !cap)
		return -1;
	tgid = e->h.pid;
	e->ustack_stop = LP_USTOP_FALLBACK;
	e->ustack_jit = 0;
	w.proc = bpf_map_lookup_elem(&unwind_procs, &tgid);
	c = bpf_map_lookup_elem(&unwind_cursors, &zero);
	if (!c || (!w.proc && !unwind_tables_on))
		return -1;
	__builtin_memset(c, 0, sizeof(*c));
	c->bp_known = 1;
	/* A trace runs, or may: it sets vmstate only after its first
	 * instructions, its exit stubs run before the handler sets EXIT, and
	 * it calls the GC.  (In a C function or the compiler, code in no
	 * known mapping is more likely a library loaded a moment ago.) */
	c->trace_runs = e->lua_state == LP_WALK_WALKED && e->vmstate >= 0;
	c->in_trace = e->lua_state == LP_WALK_WALKED &&
		      (e->vmstate >= 0 || e->vmstate == ~LJ_VMST_INTERP ||
		       e->vmstate == ~LJ_VMST_EXIT || e->vmstate == ~LJ_VMST_GC);
	/* The VM's C frames: from L->cframe when the Lua walk found L, else
	 * from the first VM frame the walk meets (unwind_vm_find()). */
	if (cap->vm_cfa || e->lua_state == LP_WALK_NO_G)
		lj = unwind_lj_proc(tgid);
	if (lj) {
		c->cf_size = lj->layout.cf_size;
		c->cf_prev = lj->layout.cf_prev;
		c->vm_lo = lj->vm_start;
		c->vm_hi = lj->vm_end;
		c->cf_l = lj->layout.cf_l;
		c->l_cframe = lj->layout.l_cframe;
		c->ref_size = lj->layout.ref_size;
		c->l_glref = lj->layout.l_glref;
		if (e->lua_state == LP_WALK_WALKED) {
			c->walked_G = e->lua_G;
			if (e->vmstate >= 0)
				unwind_trace_code(c);
		}
		if (cap->vm_cfa > c->cf_size)
			c->cframe = cap->vm_cfa - c->cf_size;
		else if (!cap->vm_cfa)
			c->find_vm = 1;
	}
	w.c = c;
	if (unwind_user_regs(regs, c)) {
		c->stop = LP_USTOP_NO_REGS;
	} else if (!w.proc) {
		/* The tables are on but this process's mappings are not
		 * loaded yet (an exec a moment ago): a frame-pointer walk
		 * would take stack data for frames in code built without
		 * them.  Only the leaf is known.  (Not the frames
		 * unwind_vma_object() could find: the recorder has read none
		 * of this image's mappings to name them by, and a short-lived
		 * process is gone before it does.) */
		e->ustack[0] = c->pc;
		c->n = 1;
		c->stop = LP_USTOP_NO_TABLE;
	} else {
		struct unwind_window *win = bpf_map_lookup_elem(&unwind_windows, &zero);

		c->vm_helper = c->cframe && e->lua_depth &&
			       e->lua[0].kind == LP_LUA_FRAME_ENTRY && e->lua[0].addr == c->sp;
		c->sp0 = c->sp;
		c->bp0 = c->bp;
		c->tid = e->h.tid;
		/* The copy the capture took before the Lua walk, from this
		 * sp (unwind_copy_stack()), with the Lua walk's reads in
		 * it; the window is the walk's from here on. */
		if (win && win->copy_len && win->copy_lo == (c->sp & ~63ull)) {
			c->win_lo = win->copy_lo;
			c->win_len = win->copy_len;
			c->used_hi[0] = win->copy_used;
		} else if (win) {
			unwind_window_fill(c, win, c->sp);
		}
		if (win)
			win->copy_len = 0;
		rc = bpf_map_lookup_elem(&unwind_row_caches, &zero);
		if (rc)
			c->memo_rd = rc->memo_last & 1;
		bpf_loop(LP_MAX_USTACK + 1, unwind_step, &w, 0);
		/* This walk's frames are the memo the next one reads. */
		if (rc)
			rc->memo_last = (c->memo_rd ^ 1) & 1;
		if (win)
			unwind_span_save(c, win);
	}
	/* bpf_loop ran out of iterations only after LP_MAX_USTACK frames
	 * (less the VM entries stepped over unrecorded: unwind_vm_other()). */
	stop = c->stop ? c->stop : LP_USTOP_DEPTH;
	n = c->n;
	if (n > LP_MAX_USTACK)
		n = LP_MAX_USTACK;
	e->ustack_stop = stop;
	e->ustack_jit = c->jit_frame;
	e->ustack_bytes = n ? (__s32)(n * sizeof(__u64)) : -EFAULT;
	if (!cap->vm_cfa)
		cap->vm_cfa = c->vm_cfa;
	/* The Lua frames are another stack's (unwind_vm_other()): none,
	 * and the sampler walks Lua again from this stack's VM frame. */
	if (c->relua) {
		e->lua_depth = 0;
		e->lua_state = LP_WALK_NO_G;
		cap->vm_cfa = c->vm_cfa;
	}
	/* No running VM found, and the stack, walked whole, holds no VM
	 * entry of a VM located and validated (a G known good, g_hint):
	 * the thread runs host code (one that never ran Lua), not a VM
	 * whose state could not be read.  Before validation, VM entries are
	 * not told apart, and a wrong layout must stay unreadable. */
	else if (e->lua_state == LP_WALK_NO_G && !cap->vm_cfa && stop == LP_USTOP_END &&
		 c->vm_hi && lj && lj->g_hint)
		e->lua_state = LP_WALK_IDLE;
	rc = bpf_map_lookup_elem(&unwind_row_caches, &zero);
	if (rc) {
		if (stop < LP_USTOP_MAX)
			rc->stops[stop]++;
		rc->frames += n;
	}
	/* Frames in code the list lacks, found through the kernel's
	 * mappings: the recorder must read them before the process moves
	 * on (an exec, an exit) to name those frames at all. */
	cap->new_code = c->vma_hi[0] || c->vma_hi[1];
	phase_count_reads(c->reads);
	return 0;
}

/* A forked child maps what its parent did: it inherits the list, so it is
 * walked from its first tick, before the recorder hears of it. */
static __always_inline void unwind_fork_process(__u32 ptgid, __u32 ctgid)
{
	struct lp_unwind_proc *p = bpf_map_lookup_elem(&unwind_procs, &ptgid);

	if (p)
		bpf_map_update_elem(&unwind_procs, &ctgid, p, BPF_ANY);
}

/* After exec the old list describes nothing: frame pointers until the
 * recorder loads the new image's. */
static __always_inline void unwind_forget_process(__u32 tgid)
{
	bpf_map_delete_elem(&unwind_procs, &tgid);
}

#endif

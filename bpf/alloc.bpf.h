/* SPDX-License-Identifier: GPL-2.0 */
/*
 * alloc.bpf.h - a LuaJIT VM's allocations (LP_KIND_ALLOC), sampled by
 * bytes, and which of those are still alive (LP_KIND_INUSE).  Included by
 * sampler.bpf.c, whose is_target() and capture_in_task() it uses.
 *
 * Every allocation, resize and free of a VM goes through g->allocf
 * (lua_Alloc: ud, ptr, osize, nsize).  The recorder puts on_alloc on the
 * first instruction of that function which the kernel emulates (a branch:
 * one trap, where the entry's `test` would be single-stepped at ten times
 * the cost) and before which ptr (rsi) and nsize (rcx) are still the
 * arguments (record/luajit_alloc.c).  So it fires once per call:
 *
 *   nsize > 0   an allocation (ptr 0) or a resize of ptr: nsize bytes on
 *               this CPU's byte clock, which counts down exponential
 *               draws of mean alloc_every; each draw that runs out inside
 *               this allocation makes it a sample, worth alloc_every, so
 *               that the bytes sampled add up to the bytes allocated
 *               (N times a Poisson count of mean size / N).
 *   ptr != 0    a free or a resize: the block ends, and with it a sampled
 *               block's life (alloc_live), when inuse is recorded.
 *
 * For inuse, on_alloc_return runs where the allocation returns its block
 * (uretprobes on the functions the allocator tail-calls for it, or on the
 * allocator itself): the block of a sample taken on this thread goes into
 * alloc_live, keyed by process and address, with the sample's time,
 * which names its event.  At the end the recorder writes the events of
 * the blocks still there again as inuse.
 *
 * A VM's lua_close() frees every block it has: on_lua_close notes its
 * allocator's state (the ud allocf is called with, g->allocd), and from
 * then on that allocator's frees no longer end sampled blocks' lives:
 * inuse is what was alive when the recording ended or the VM closed.
 */
#ifndef LUAPROF_BPF_ALLOC_BPF_H
#define LUAPROF_BPF_ALLOC_BPF_H

/* Set by the recorder before load. */
const volatile __u64 alloc_every = 512 * 1024; /* mean bytes between samples */
const volatile bool alloc_inuse = false;

/* A block of ALLOC_BIG times alloc_every or more is always taken, worth
 * its size; a smaller one can span at most a few more draws than that. */
#define ALLOC_BIG 8
#define ALLOC_MAX_DRAWS 32

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __s64); /* bytes left until this CPU's next sample */
} alloc_clock SEC(".maps");

struct alloc_sampled {
	__u64 time;  /* the event's: names it for the recorder */
	__u32 tid, pad;
};

/* The sample this thread just took, until its block returns. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 4096);
	__type(key, __u32); /* tid */
	__type(value, struct alloc_sampled);
} alloc_pending SEC(".maps");

struct alloc_block {
	__u32 tgid, pad;
	__u64 ptr;
};

/* Sampled blocks not freed yet.  A hash, not an LRU: a block forgotten
 * would be counted freed; a full map counts the sample lost to inuse. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 65536);
	__type(key, struct alloc_block);
	__type(value, struct alloc_sampled);
} alloc_live SEC(".maps");

/* The allocators (their ud) of the VMs closed, and how many. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 256);
	__type(key, __u64);
	__type(value, __u8);
} alloc_closed SEC(".maps");

__u32 alloc_nclosed;

/* log2(1 + i/16) in 1/65536ths, i = 0..16. */
static const __u32 log2_frac[17] = {
	0, 5732, 11136, 16248, 21098, 25711, 30109, 34312, 38336,
	42196, 45904, 49472, 52911, 56229, 59434, 62534, 65536,
};

/* An exponential draw of mean alloc_every: -ln(u) for u uniform in
 * (0, 1), from the position of u's top bit and the next 16 bits
 * (interpolated in log2_frac: off by under 1e-4 of a unit of log2). */
static __always_inline __u64 alloc_draw(void)
{
	__u32 u = bpf_get_prandom_u32() | 1, e = 0, f, i;
	__u64 l2, nl;

	if (u & 0xffff0000u) e += 16;
	if ((u >> e) & 0xff00u) e += 8;
	if ((u >> e) & 0xf0u) e += 4;
	if ((u >> e) & 0xcu) e += 2;
	if ((u >> e) & 0x2u) e += 1;
	/* u = 2^e (1 + f/65536) */
	f = e >= 16 ? (u >> (e - 16)) & 0xffff : (u << (16 - e)) & 0xffff;
	i = f >> 12;
	if (i > 15)
		i = 15;
	l2 = ((__u64)e << 16) + log2_frac[i] +
	     (((__u64)(log2_frac[i + 1] - log2_frac[i]) * (f & 0xfff)) >> 12);
	nl = (((32ull << 16) - l2) * 45426) >> 16; /* -ln(u / 2^32), 1/65536ths */
	return (alloc_every * nl) >> 16;
}

struct alloc_draws {
	__s64 left;
	__u32 k;
};

/* bpf_loop's step: one more draw while the clock has run out (verified
 * once, not once per iteration). */
static long alloc_draw_cb(__u32 i, struct alloc_draws *d)
{
	if (d->left > 0)
		return 1;
	d->left += alloc_draw();
	d->k++;
	return 0;
}

/* Whether an allocation of nsize bytes is a sample, and *weight, *count
 * what it stands for (bytes, allocations). */
static __always_inline int alloc_taken(__u64 nsize, __u64 *weight, __u64 *count)
{
	struct alloc_draws d = { 0 };
	__u32 zero = 0;
	__s64 *left;

	if (nsize >= ALLOC_BIG * alloc_every) {
		*weight = nsize;
		*count = 1;
		return 1;
	}
	left = bpf_map_lookup_elem(&alloc_clock, &zero);
	if (!left)
		return 0;
	*left -= nsize;
	if (*left > 0)
		return 0;
	d.left = *left;
	bpf_loop(ALLOC_MAX_DRAWS, alloc_draw_cb, &d, 0);
	*weight = d.k * alloc_every;
	*left = d.left > 0 ? d.left : alloc_draw(); /* (a run of short draws: rarer than 1e-6) */
	*count = (*weight + nsize / 2) / nsize;
	if (!*count)
		*count = 1;
	return 1;
}

SEC("uprobe")
int on_alloc(struct pt_regs *ctx)
{
	__u64 id = bpf_get_current_pid_tgid(), nsize = PT_REGS_PARM4(ctx), ud = PT_REGS_PARM1(ctx), weight, count, now;
	struct alloc_block blk = { .tgid = id >> 32, .ptr = PT_REGS_PARM2(ctx) };
	struct alloc_sampled smp = { .tid = (__u32)id };
	struct capture *cap;
	__u32 zero = 0;

	cap = bpf_map_lookup_elem(&captures, &zero);
	if (!cap || !is_target(cap, blk.tgid))
		return 0;
	if (alloc_nclosed && bpf_map_lookup_elem(&alloc_closed, &ud))
		return 0; /* lua_close(): its blocks stay as they were */
	if (alloc_inuse && blk.ptr)
		bpf_map_delete_elem(&alloc_live, &blk);
	if (!nsize || !alloc_taken(nsize, &weight, &count))
		return 0;
	now = bpf_ktime_get_ns();
	if (!capture_in_task(ctx, id, LP_KIND_ALLOC, weight, count, now, ctx, 0, false))
		return 0;
	smp.time = now;
	if (alloc_inuse)
		bpf_map_update_elem(&alloc_pending, &smp.tid, &smp, BPF_ANY);
	return 0;
}

SEC("uretprobe")
int on_alloc_return(struct pt_regs *ctx)
{
	__u64 id = bpf_get_current_pid_tgid();
	struct alloc_block blk = { .tgid = id >> 32, .ptr = PT_REGS_RC(ctx) };
	struct alloc_sampled *smp;
	__u32 tid = (__u32)id;

	smp = bpf_map_lookup_elem(&alloc_pending, &tid);
	if (!smp)
		return 0;
	if (blk.ptr && bpf_map_update_elem(&alloc_live, &blk, smp, BPF_ANY))
		__sync_fetch_and_add(&counters.lost_inuse, 1);
	bpf_map_delete_elem(&alloc_pending, &tid);
	return 0;
}

/*
 * lua_close(L): L's VM, g = L->glref, allocates with g->allocd as ud.
 * The attach cookie says where those are in this build: bits 0-15 the
 * offset of glref in lua_State, 16-31 that of allocd in global_State,
 * bit 32 set for an 8-byte glref (GC64), else 4.
 */
SEC("uprobe")
int on_lua_close(struct pt_regs *ctx)
{
	__u64 cookie = bpf_get_attach_cookie(ctx), L = PT_REGS_PARM1(ctx), G = 0, ud;
	__u32 tgid = bpf_get_current_pid_tgid() >> 32, zero = 0;
	struct capture *cap;
	__u8 one = 1;

	cap = bpf_map_lookup_elem(&captures, &zero);
	if (!cap || !is_target(cap, tgid))
		return 0;
	if (bpf_probe_read_user(&G, cookie >> 32 & 1 ? 8 : 4, (void *)(L + (cookie & 0xffff))) ||
	    bpf_probe_read_user(&ud, 8, (void *)(G + (cookie >> 16 & 0xffff))))
		return 0;
	if (!bpf_map_update_elem(&alloc_closed, &ud, &one, BPF_NOEXIST))
		__sync_fetch_and_add(&alloc_nclosed, 1);
	return 0;
}

#endif

// SPDX-License-Identifier: GPL-2.0
/*
 * sampler.bpf.c - the in-kernel half of `luaprof record`.
 *
 * on_sample runs on every cpu-clock tick of every CPU (one perf_event per
 * CPU, opened by record/perf.c).  It keeps only ticks that land in a target
 * process, which the `targets` map names by thread group id, and sends the
 * kernel and user stacks through the `events` ring buffer.  The stacks are
 * copied whole rather than interned in a BPF stack map: a stack map's
 * hash collisions either drop stacks or silently overwrite them, and the
 * recorder interns stacks by content anyway.
 *
 * The three sched tracepoints keep the target set true while recording:
 * a fork from a target adds the child (so nginx workers started later are
 * sampled from their first tick, before user space hears of them), exec
 * tells the recorder to re-read the image's mappings, and the exit of a
 * process's last thread removes it.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>

#include "bpf/regs.bpf.h"
#include "bpf/sampler.h"
#include "bpf/phases.bpf.h" /* record -v: where the time goes */

char LICENSE[] SEC("license") = "GPL";

/* Set by the recorder before load. */
const volatile bool follow_children = true;
/* -v: the run-time histogram (runtime_hists), which only -v prints; off,
 * the verifier drops its clock read and its bucket's update as dead code. */
const volatile bool time_runs = false;

/* Wake the recorder only when this much is waiting, or for a sample it
 * must see at once (on_sample); it takes the rest every 100 ms. */
#define WAKEUP_BYTES (256 * 1024)
/* ... but at each sample with Lua frames of a process younger than this:
 * the recorder reads what those frames need (prototypes, traces) from the
 * process's memory, and a short-lived one is gone after a poll or two. */
#define YOUNG_NS 1000000000ull

#define LP_SIGSTOP 19 /* the same on every Linux architecture we build for */

/* The processes sampled; a change calls procs_changed() after it. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16384);
	__type(key, __u32);   /* tgid */
	__type(value, __u32); /* LP_TARGET_* */
} targets SEC(".maps");

/*
 * procs_gen counts the changes to the processes a sample looks up: to
 * targets (which processes are sampled) and to lj_procs (each one's Lua
 * VM, bpf/walk_lua.bpf.h).  Two per-CPU memos spare a sample those hash
 * lookups, and it says when they are stale:
 *   - is_target()'s verdict on the CPU's last tgid (user_regs.memo_*);
 *   - the Lua walk's copy of the CPU's last lj_procs entry
 *     (lua_walk.proc), which unwind_lj_proc() takes too.
 * Every writer of either map calls procs_changed() after the change: the
 * recorder (record/session_targets.c, session_lua.c) and fork, exec and
 * exit here.  A memo keeps the count it read BEFORE its lookup, so a
 * change that lands between the two leaves it stale at once, and it is
 * used only while the count is still the same.  One count for both maps:
 * a change to one also sends the other's memo back to its map, one hash
 * lookup more on the next sample of each CPU, after events as rare as a
 * target's fork, exec or exit, or its VM found or refused.
 */
__u64 procs_gen;

static __always_inline void procs_changed(void)
{
	__sync_fetch_and_add(&procs_gen, 1);
}

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 8 * 1024 * 1024);
} events SEC(".maps");

struct lp_bpf_counters counters;

/* This CPU's run times (bpf/sampler.h): the recorder sums the CPUs. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct lp_runtime_hist);
} runtime_hists SEC(".maps");

/* The sample under construction, one per CPU: too large for the BPF stack,
 * and sent with only the bytes in use. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct lp_event_sample);
} sample_scratch SEC(".maps");

/* The user registers at a sample: the interrupted ones if the tick hit
 * user mode, else the ones saved at kernel entry.  Read once, for both
 * walks. */
struct user_regs {
	__u64 ip, sp, bp, bx, dx, r14;
	__u32 user; /* they are user mode's: not a thread without one */
	__u32 sent; /* not a register: this CPU's samples (wakeup_flag) */
	/* Not registers either: this CPU's last targets verdict, for
	 * memo_tgid as of procs_gen == memo_gen (is_target). */
	__u64 memo_gen;
	__u32 memo_tgid;
	__u32 memo_hit;
};

/* ... kept per CPU, not on on_sample's stack: 6.1's verifier counts the
 * frames of on_sample, walk_lua and its bpf_loop callback together
 * against the 512-byte stack ("combined stack size of 3 calls"). */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct user_regs);
} regs_scratch SEC(".maps");

/* The user registers the kernel saved on entry, for a tick that hit the
 * kernel: loads through the task's BTF pointer, not a helper call each
 * (six calls were some 150 ns a kernel tick).  A function of its own:
 * inlined, clang merges this pointer with ctx, which the verifier
 * refuses. */
static __noinline int saved_user_regs(struct user_regs *r)
{
	struct pt_regs *regs;

	if (!r)
		return -1;
	regs = (struct pt_regs *)bpf_task_pt_regs(bpf_get_current_task_btf());
	if (!regs)
		return -1;
	r->user = task_regs_user_mode(regs);
	r->ip = regs->ip;
	r->sp = regs->sp;
	r->bp = regs->bp;
	r->bx = regs->bx;
	r->dx = regs->dx;
	r->r14 = regs->r14;
	return 0;
}

static __always_inline int get_user_regs(struct bpf_perf_event_data *ctx,
					 struct user_regs *r)
{
	r->user = 0;
	if (ctx_regs_user_mode(ctx)) {
		r->ip = ctx->regs.ip;
		r->sp = ctx->regs.sp;
		r->bp = ctx->regs.bp;
		r->bx = ctx->regs.bx;
		r->dx = ctx->regs.dx;
		r->r14 = ctx->regs.r14;
		r->user = 1;
		return 0;
	}
	return saved_user_regs(r);
}

#include "bpf/walk_lua.bpf.h"
#include "bpf/unwind_native.bpf.h" /* native unwinder: unwind_* maps */

/* Is tgid a target?  Asked on every tick of every CPU, targets or not.
 * The answer for the CPU's last tgid is kept beside its registers, which
 * a target's sample touches anyway, as it does procs_gen's page: a hash
 * lookup touches the map's bucket and element, vmalloc'ed pages nothing
 * else in a sample touches, each cold at a tick (the lookup took 0.4 to
 * 0.9 us on nginx at 999 Hz, under load), and a CPU mostly ticks in the
 * task it ticked in last.  Valid while procs_gen is unchanged (see there). */
static __always_inline int is_target(struct user_regs *m, __u32 tgid)
{
	__u64 gen = *(volatile __u64 *)&procs_gen;

	if (m->memo_tgid != tgid || m->memo_gen != gen) {
		m->memo_hit = bpf_map_lookup_elem(&targets, &tgid) != NULL;
		m->memo_tgid = tgid;
		m->memo_gen = gen;
	}
	return m->memo_hit;
}

/* Did the current process start less than YOUNG_NS before now? */
static __always_inline int young_process(__u64 now)
{
	/* Plain loads through the BTF pointers: no helper calls. */
	return now - bpf_get_current_task_btf()->group_leader->start_time < YOUNG_NS;
}

/* Asked only every WAKEUP_EVERY-th sample of a CPU: the query reads the
 * consumer's position, a line the recorder writes, and WAKEUP_BYTES is
 * a threshold, not a limit (samples are a few hundred bytes). */
#define WAKEUP_EVERY 8

static __always_inline long wakeup_flag(struct user_regs *r)
{
	if (r->sent++ % WAKEUP_EVERY)
		return BPF_RB_NO_WAKEUP;
	return bpf_ringbuf_query(&events, BPF_RB_AVAIL_DATA) >= WAKEUP_BYTES ?
		       BPF_RB_FORCE_WAKEUP : BPF_RB_NO_WAKEUP;
}

/* Sends e packed (bpf/sampler.h): its head, then only the kernel, user
 * and Lua frames present, each written where the one before ends, so
 * that a shallow sample takes a few hundred bytes of the ring, not 2 KiB
 * or more.  The lengths are clamped where the verifier can see it. */
static __noinline int send_sample(struct lp_event_sample *e, __u32 nlua, __u64 flags)
{
	__u32 kbytes = e->kstack_bytes > 0 ? e->kstack_bytes : 0;
	__u32 ubytes = e->ustack_bytes > 0 ? e->ustack_bytes : 0;
	__u32 lbytes, off = lp_event_sample_head_size;
	struct bpf_dynptr ptr;
	__u64 head;
	long err;

	if (kbytes > sizeof(e->kstack))
		kbytes = sizeof(e->kstack);
	if (ubytes > sizeof(e->ustack))
		ubytes = sizeof(e->ustack);
	if (nlua > LP_MAX_LUA)
		nlua = LP_MAX_LUA;
	lbytes = nlua * sizeof(struct lp_lua_frame);
	/* (The recorder sees the clamped counts.) */
	if (e->kstack_bytes > 0)
		e->kstack_bytes = kbytes;
	if (e->ustack_bytes > 0)
		e->ustack_bytes = ubytes;
	e->lua_depth = nlua;
	err = bpf_ringbuf_reserve_dynptr(&events, off + kbytes + ubytes + lbytes, 0, &ptr);
	if (err)
		goto discard;
	/* The head and the kernel frames lie together in e: one write
	 * (its length bounded again where the verifier sees it). */
	head = (__u64)off + kbytes;
	barrier_var(head);
	if (head > lp_event_sample_head_size + sizeof(e->kstack))
		goto discard;
	err = bpf_dynptr_write(&ptr, 0, e, head, 0);
	off += kbytes;
	if (!err && ubytes)
		err = bpf_dynptr_write(&ptr, off, e->ustack, ubytes, 0);
	off += ubytes;
	if (!err && lbytes)
		err = bpf_dynptr_write(&ptr, off, e->lua, lbytes, 0);
	if (err)
		goto discard;
	bpf_ringbuf_submit_dynptr(&ptr, flags);
	return 0;
discard:
	/* A failed reservation must be discarded too (the verifier insists). */
	bpf_ringbuf_discard_dynptr(&ptr, 0);
	return err;
}

SEC("perf_event")
int on_sample(struct bpf_perf_event_data *ctx)
{
	__u64 id = bpf_get_current_pid_tgid();
	__u32 tgid = id >> 32, zero = 0;
	struct lp_event_sample *e;
	struct user_regs *regs;
	struct lp_runtime_hist *hist;
	__u64 t0, bucket;
	__u32 nlua;
	int wake = 0, have_regs;
	long err;

	regs = bpf_map_lookup_elem(&regs_scratch, &zero);
	if (!regs || !is_target(regs, tgid))
		return 0;
	e = bpf_map_lookup_elem(&sample_scratch, &zero);
	if (!e)
		return 0;
	e->h.type = LP_EVENT_SAMPLE;
	e->h.pid = tgid;
	e->h.tid = (__u32)id;
	e->h.cpu = bpf_get_smp_processor_id();
	e->h.time_ns = t0 = bpf_ktime_get_ns();
	phase_start(t0);
	/* A tick in user mode has no kernel stack: skip the helper. */
	e->kstack_bytes = ctx_regs_user_mode(ctx) ? 0 :
		bpf_get_stack(ctx, e->kstack, sizeof(e->kstack), 0);
	phase_end(LP_PHASE_KSTACK);
	/* The top of the stack first, in one read: the Lua walk reads the
	 * VM's C frames, which lie in it, from the copy, and the native walk
	 * starts from it.  (Its extent depends on the thread's last walk,
	 * not on this one's.) */
	have_regs = get_user_regs(ctx, regs) == 0;
	unwind_copy_stack(e->h.tid, regs); /* (none without user registers) */
	phase_end(LP_PHASE_COPY);
	/* Lua before the native walk: a running trace's C frame is where
	 * the native walk resumes past the trace's code.  If the Lua walk
	 * found no G, the native walk may cross the VM's C frame, which
	 * holds the running lua_State: then Lua again, from there. */
	e->lua_depth = 0;
	e->lua_state = LP_WALK_NONE;
	e->vmstate = 0;
	e->lua_G = 0;
	e->lua_vm_cfa = 0;
	if (have_regs)
		wake = walk_lua(e, regs, 0);
	phase_end(LP_PHASE_LUA);
	if (unwind_native_user_stack(ctx, e, tgid, regs)) /* no tables: frame pointers */
		e->ustack_bytes = bpf_get_stack(ctx, e->ustack, sizeof(e->ustack),
						BPF_F_USER_STACK);
	/* (A second Lua walk, from the VM's C frame, counts as native.)  The
	 * first may have validated a G whose C frame is on another stack (a
	 * fiber's): it still locates the process's VM for the recorder, and
	 * what woke it still stands, whatever the second walk finds. */
	if (have_regs && e->lua_state == LP_WALK_NO_G && e->lua_vm_cfa) {
		__u64 G = e->lua_G;

		wake |= walk_lua(e, regs, e->lua_vm_cfa);
		if (!e->lua_G)
			e->lua_G = G;
	}
	if (!wake && e->lua_depth)
		wake = young_process(t0);
	phase_end(LP_PHASE_NATIVE);
	if (e->kstack_bytes < 0)
		__sync_fetch_and_add(&counters.kstack_failed, 1);
	if (e->ustack_bytes < 0)
		__sync_fetch_and_add(&counters.ustack_failed, 1);
	nlua = e->lua_depth;
	if (nlua > LP_MAX_LUA)
		nlua = LP_MAX_LUA;
	/* A sample that shows a VM the recorder has not located yet wakes
	 * it at once: until it answers, this process's samples lack Lua, and
	 * a short-lived process may be gone before the recorder can check
	 * its VM.  So does a young process's (YOUNG_NS), a new compiled trace or
	 * Lua stack (walk_lua: lj_traces_seen), and a native walk
	 * that left every known mapping (native unwinder): new code was
	 * mapped, and walks stop there until the recorder reads it. */
	err = send_sample(e, nlua, wake || e->ustack_stop == LP_USTOP_UNMAPPED ?
				   BPF_RB_FORCE_WAKEUP : wakeup_flag(regs));
	if (err)
		__sync_fetch_and_add(&counters.lost_ringbuf, 1);
	phase_done(nlua, e->ustack_bytes, e->kstack_bytes);
	if (!time_runs)
		return 0;
	bucket = (bpf_ktime_get_ns() - t0) / LP_RUNTIME_BUCKET_NS;
	if (bucket >= LP_RUNTIME_BUCKETS)
		bucket = LP_RUNTIME_BUCKETS - 1;
	hist = bpf_map_lookup_elem(&runtime_hists, &zero);
	if (hist)
		hist->n[bucket]++;
	return 0;
}

static __always_inline void send_task_event(__u32 type, __u32 pid, __u32 ppid,
					    struct task_struct *task, bool hold)
{
	struct lp_event_task *e;

	e = bpf_ringbuf_reserve(&events, sizeof(*e), 0);
	if (!e) {
		__sync_fetch_and_add(&counters.lost_task, 1);
		return;
	}
	e->h.type = type;
	e->h.pid = pid;
	e->h.tid = pid;
	e->h.cpu = bpf_get_smp_processor_id();
	e->h.time_ns = bpf_ktime_get_ns();
	e->ppid = ppid;
	e->flags = 0;
	/* Stopped only when the recorder hears of it, to continue it. */
	if (hold && !bpf_send_signal(LP_SIGSTOP))
		e->flags = LP_TASK_HELD;
	BPF_CORE_READ_STR_INTO(&e->comm, task, comm);
	/* Process events are rare and the recorder acts on them: wake it. */
	bpf_ringbuf_submit(e, BPF_RB_FORCE_WAKEUP);
}

SEC("tp_btf/sched_process_fork")
int BPF_PROG(on_fork, struct task_struct *parent, struct task_struct *child)
{
	__u32 ptgid = BPF_CORE_READ(parent, tgid);
	__u32 ctgid = BPF_CORE_READ(child, tgid);
	__u32 *flags;
	struct lj_proc *lj;

	/* A new thread shares its tgid and is sampled already. */
	if (!follow_children || ptgid == ctgid)
		return 0;
	flags = bpf_map_lookup_elem(&targets, &ptgid);
	if (!flags)
		return 0;
	bpf_map_update_elem(&targets, &ctgid, flags, BPF_ANY);
	unwind_fork_process(ptgid, ctgid); /* native unwinder: same mappings */
	/* A forked child has its parent's memory, so its parent's VM: Lua
	 * frames from its first tick, before the recorder hears of it. */
	lj = bpf_map_lookup_elem(&lj_procs, &ptgid);
	if (lj)
		bpf_map_update_elem(&lj_procs, &ctgid, lj, BPF_ANY);
	procs_changed(); /* after both maps' changes */
	send_task_event(LP_EVENT_FORK, ctgid, ptgid, child, false);
	return 0;
}

/* A process that execs a LuaJIT executable the recorder validated in
 * another (lj_images) gets its layout now: a short-lived one has Lua frames
 * before the recorder hears of it.  Its interpreter lies where it did in
 * the other process, relative to the start of the executable's code. */
static __always_inline void exec_known_luajit(struct task_struct *task, __u32 tgid)
{
	struct inode *ino = BPF_CORE_READ(task, mm, exe_file, f_inode);
	struct lp_file_id key;
	struct lj_proc *image, proc;
	__u64 code;

	lp_file_id_of(ino, &key);
	image = bpf_map_lookup_elem(&lj_images, &key);
	if (!image)
		return;
	__builtin_memcpy(&proc, image, sizeof(proc));
	code = BPF_CORE_READ(task, mm, start_code);
	proc.vm_start += code;
	proc.vm_end += code;
	bpf_map_update_elem(&lj_procs, &tgid, &proc, BPF_ANY);
}

SEC("tp_btf/sched_process_exec")
int BPF_PROG(on_exec, struct task_struct *task)
{
	__u32 tgid = BPF_CORE_READ(task, tgid);
	__u32 *flags = bpf_map_lookup_elem(&targets, &tgid);

	if (!flags)
		return 0;
	/* A new image: whatever VM it had is gone until re-detected, unless
	 * the image is one the recorder knows. */
	bpf_map_delete_elem(&lj_procs, &tgid);
	exec_known_luajit(task, tgid);
	procs_changed();
	unwind_forget_process(tgid); /* native unwinder: old mappings */
	send_task_event(LP_EVENT_EXEC, tgid, BPF_CORE_READ(task, real_parent, tgid),
			task, *flags & LP_TARGET_HOLD_EXEC);
	return 0;
}

SEC("tp_btf/sched_process_exit")
int BPF_PROG(on_exit, struct task_struct *task)
{
	__u32 tgid = BPF_CORE_READ(task, tgid);

	if (!bpf_map_lookup_elem(&targets, &tgid))
		return 0;
	/* do_exit() has already counted this thread out of signal->live;
	 * zero means it was the last one and the process is gone. */
	if (BPF_CORE_READ(task, signal, live.counter) != 0)
		return 0;
	bpf_map_delete_elem(&targets, &tgid);
	bpf_map_delete_elem(&lj_procs, &tgid);
	procs_changed(); /* after both maps' changes */
	send_task_event(LP_EVENT_EXIT, tgid, BPF_CORE_READ(task, real_parent, tgid),
			task, false);
	return 0;
}

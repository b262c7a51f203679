/*
 * sampler.h - the events the BPF sampler sends to the recorder through its
 * ring buffer, shared by bpf/sampler.bpf.c and record/.  Both sides see the
 * same bytes, so every field has a fixed width and every struct a size
 * assertion; nothing here is ever written to a trace as it lies in memory
 * (format/ encodes each field explicitly).
 *
 *   lp_event_sample (packed)                 lp_event_task (48 bytes)
 *   +0  type pid tid cpu                     +0  type pid tid cpu
 *   +16 time_ns                              +16 time_ns
 *   +24 kstack_bytes ustack_bytes            +24 ppid  pad
 *   +32 vmstate lua_state lua_depth lua_G    +32 comm[16]
 *   +48 ustack_stop wait_state ustack_jit kind weight
 *   +64 count
 *   +72 kernel frames, user frames, Lua frames: only those present
 *
 * The stack byte counts are bytes written, or a negative errno when the
 * stack could not be read.  The sampler builds the event in a per-CPU
 * buffer and sends only the bytes in use (see lp_event_sample_wire_size()).
 */
#ifndef LUAPROF_BPF_SAMPLER_H
#define LUAPROF_BPF_SAMPLER_H

#ifndef __VMLINUX_H__
#include <linux/types.h>
#endif
#include "format/kinds.h" /* enum lp_event_kind: the numbers a trace holds */

/* In ustack[], after another JIT's code (anonymous, no CFI: PCRE's)
 * that Lua reached through C functions, when the walk went on from the
 * VM's innermost C frame: the frames between, which the walk could not
 * see (bpf/unwind_native.bpf.h, unwind_jit_step()).  No frame is at 0. */
#define LP_USTACK_GAP 0ull

/* The kernel's default kernel.perf_event_max_stack. */
#define LP_MAX_STACK 127
/* Native user frames: our own unwinder goes deeper than the kernel's. */
#define LP_MAX_USTACK 127
#define LP_COMM_LEN 16

enum lp_event_type {
	LP_EVENT_SAMPLE = 1,
	LP_EVENT_FORK = 2, /* pid: the new process; ppid: its parent */
	LP_EVENT_EXEC = 3, /* pid replaced its image */
	LP_EVENT_EXIT = 4, /* the last thread of pid exited */
	LP_EVENT_PROTO = 5, /* a Lua prototype's identity: lp_event_proto */
};

struct lp_event_header {
	__u32 type;
	__u32 pid; /* thread group id: the process */
	__u32 tid;
	__u32 cpu;
	__u64 time_ns; /* bpf_ktime_get_ns(): CLOCK_MONOTONIC */
};

/* Lua frames, leaf first, as bpf/walk_lua.bpf.h finds them.
 *
 *   kind  LUA    addr = GCproto address, pc = bytecode position of the
 *                next instruction (the one after a call, as LuaJIT keeps
 *                it), info = fingerprint of the proto (see walk_lua)
 *         C      addr = the lua_CFunction
 *         FF     addr = the fast function's code, pc = ffid
 *         ENTRY  a VM entry from C (lua_call, lua_pcall, lua_resume) or a
 *                coroutine boundary: native frames go here; addr = the
 *                C frame (native stack address) of the entry
 *         TRACE  pc = number of the compiled trace running at the leaf,
 *                addr = its GCtrace (0 if unknown), info = fingerprint of
 *                its start and its machine code's address (see walk_lua)
 *         TRUNC  the walk stopped early; pc = enum lp_lua_trunc, addr =
 *                the frame it stopped at
 *   link  the frame type of this frame's link slot (enum lj_frame_type):
 *         LUA means the next frame is its Lua caller.
 */
#define LP_MAX_LUA 512

enum lp_lua_kind {
	LP_LUA_FRAME_LUA = 1,
	LP_LUA_FRAME_C = 2,
	LP_LUA_FRAME_FF = 3,
	LP_LUA_FRAME_ENTRY = 4,
	LP_LUA_FRAME_TRACE = 5,
	LP_LUA_FRAME_TRUNC = 6,
};

enum lp_lua_trunc {
	LP_LUA_TRUNC_READ = 1,      /* a frame's slots could not be read */
	LP_LUA_TRUNC_DEPTH = 2,     /* more than LP_MAX_LUA frames */
	LP_LUA_TRUNC_BAD = 3,       /* a frame did not make sense */
	LP_LUA_TRUNC_READ_FUNC = 4, /* its function object could not be read */
	LP_LUA_TRUNC_READ_CALL = 5, /* the caller's CALL instruction, likewise */
	/* (the recorder's) a C function in no mapping the trace holds */
	LP_LUA_TRUNC_UNMAPPED = 6,
};

struct lp_lua_frame {
	__u64 addr;
	__u32 pc;
	__u8 kind;
	__u8 link;
	__u16 fingerprint;
};

/* lp_event_sample.wait_state: how an off-CPU wait slept. */
enum lp_wait_state {
	LP_WAIT_SLEEPING = 1,        /* TASK_INTERRUPTIBLE: S in ps */
	LP_WAIT_UNINTERRUPTIBLE = 2, /* TASK_UNINTERRUPTIBLE: D (disk I/O, some locks) */
};

/* sample.lua_state: what the walk found, besides frames.  The values are
 * those of format/trace.h's enum lp_lua_state (record/ asserts it). */
enum lp_walk_state {
	LP_WALK_NONE = 0,   /* not a LuaJIT process, or no VM found */
	LP_WALK_IDLE = 1,   /* a VM exists but runs no Lua (host code) */
	LP_WALK_WALKED = 2, /* frames below */
	LP_WALK_NO_G = 3,   /* LuaJIT process, but no valid G at this tick */
	LP_WALK_BAD_L = 4,  /* not written: walk_lua reads cur_L with G (NO_G) */
	LP_WALK_NO_VM = 5,  /* interpreting, but the VM code is not located */
	/* frames below, of a coroutine suspended at a yield (a Lua-land
	 * wait): they go above the whole native stack, which is the
	 * resumer's, not at one of its VM entries */
	LP_WALK_SUSPENDED = 6,
};

/*
 * A sample as the sampler builds it (one per CPU).  The ring buffer carries
 * it packed, at its real size: the head (every field before kstack[], 64
 * bytes), then the kernel frames present, the user frames present and the
 * Lua frames, each right after the other:
 *
 *   +0  head                 lp_event_sample_head_size
 *   +64 kstack[kstack_bytes / 8]          (none if kstack_bytes < 0)
 *   ... ustack[ustack_bytes / 8]          (none if ustack_bytes < 0)
 *   ... lua[lua_depth]
 *
 * lp_event_sample_wire_size() is that size; the recorder checks each part
 * against the bytes received before it unpacks them into this struct.
 */
struct lp_event_sample {
	struct lp_event_header h;
	__s32 kstack_bytes;
	__s32 ustack_bytes;
	__s32 vmstate;    /* g->vmstate: ~LJ_VMST_* or a trace number */
	__u16 lua_state;  /* enum lp_walk_state */
	__u16 lua_depth;  /* frames used in lua[] */
	__u64 lua_G;      /* the global_State the frames belong to */
	/* Native unwinder (bpf/unwind_native.bpf.h): why the ustack walk
	 * stopped, enum lp_ustop in bpf/unwind_maps.h. */
	__u16 ustack_stop;
	/* An off-CPU wait's: LP_WAIT_* (the task's state as it left the
	 * CPU, of the stretch whose kernel stack the event holds); 0 for
	 * other events. */
	__u16 wait_state;
	/* 1 + the index in ustack[] of the frame the walk stepped over as
	 * compiled code without CFI (a LuaJIT trace), 0 if none. */
	__u16 ustack_jit;
	__u16 kind;   /* enum lp_event_kind (format/kinds.h) */
	__u64 weight; /* what the event is worth, in its kind's unit */
	__u64 count;  /* how many it stands for: an alloc's allocations, else 1 */
	__u64 kstack[LP_MAX_STACK];  /* leaf first */
	__u64 ustack[LP_MAX_USTACK]; /* leaf first */
	struct lp_lua_frame lua[LP_MAX_LUA];
};

#define lp_event_sample_head_size __builtin_offsetof(struct lp_event_sample, kstack)
/* The bytes a stack count stands for in the ring buffer: none if negative. */
#define lp_event_stack_wire(bytes) ((bytes) > 0 ? (__u32)(bytes) : 0u)
/* Bytes of a packed sample event: what the ring buffer carries. */
#define lp_event_sample_wire_size(kbytes, ubytes, nlua)                                     \
	(lp_event_sample_head_size + lp_event_stack_wire(kbytes) + lp_event_stack_wire(ubytes) + \
	 (nlua) * sizeof(struct lp_lua_frame))
/* Bytes of the unpacked struct up to n Lua frames (the recorder's view). */
#define lp_event_sample_size(n) \
	(__builtin_offsetof(struct lp_event_sample, lua) + (n) * sizeof(struct lp_lua_frame))

/* The targets map's value: what the sampler does for a target process.
 * A forked child inherits its parent's. */
#define LP_TARGET_HOLD_EXEC 1u /* stop it at its exec (SIGSTOP) for the recorder */

struct lp_event_task {
	struct lp_event_header h;
	__u32 ppid;
	__u32 flags; /* LP_TASK_*: */
	char comm[LP_COMM_LEN];
};
/* An EXEC whose process the sampler stopped (LP_TARGET_HOLD_EXEC): the
 * recorder continues it, once it has read the new image. */
#define LP_TASK_HELD 1u

/* A Lua prototype's identity, sent once per prototype (by address and
 * fingerprint) before the first sample that shows it: the recorder reads
 * prototypes some time after their samples, and a function run once may
 * be freed by then; this names it anyway.  name holds the first name_len
 * bytes of its chunk name, which has name_full bytes. */
#define LP_PROTO_NAME_MAX 256

struct lp_event_proto {
	struct lp_event_header h;
	__u64 addr;       /* the GCproto */
	__u32 firstline, numline;
	__u16 fingerprint;
	__u16 name_len;
	__u32 name_full;
	char name[LP_PROTO_NAME_MAX];
};

/*
 * The sampler's run time per target sample, by its own clock: bucket i
 * counts runs of [i, i + 1) * LP_RUNTIME_BUCKET_NS, the last bucket
 * everything longer.  The kernel's bpf_stats give only a mean over every
 * tick, targets or not; the distribution gives the median and the tail.
 * Kept only under record -v, which prints it (time_runs), per CPU (the
 * runtime_hists map), and summed by the recorder: an atomic add to a line both CPUs write moves the line between them,
 * some 70 ns a sample here.
 */
#define LP_RUNTIME_BUCKETS 256
#define LP_RUNTIME_BUCKET_NS 250

struct lp_runtime_hist {
	__u64 n[LP_RUNTIME_BUCKETS];
};

/* Counters the BPF side keeps for what it could not deliver: rare, so
 * shared and atomic. */
struct lp_bpf_counters {
	__u64 lost_ringbuf;  /* samples dropped: ring buffer full */
	__u64 lost_task;     /* fork/exec/exit events dropped */
	__u64 kstack_failed; /* bpf_get_stack() errors, kernel side */
	__u64 ustack_failed; /* bpf_get_stack() errors, user side */
	/* events dropped: they came while another was being taken on the
	 * same CPU (a tick in a uprobe's capture, bpf/capture.bpf.h) */
	__u64 lost_busy;
	/* off-CPU stretches not measured: their start could not be kept */
	__u64 lost_offcpu;
	/* Lua-land waits not measured: their yield could not be kept */
	__u64 lost_luawait;
	/* sampled allocations inuse cannot follow: alloc_live was full */
	__u64 lost_inuse;
};

_Static_assert(sizeof(struct lp_event_header) == 24, "lp_event_header layout");
_Static_assert(sizeof(struct lp_lua_frame) == 16, "lp_lua_frame layout");
_Static_assert((LP_MAX_LUA & (LP_MAX_LUA - 1)) == 0, "LP_MAX_LUA a power of 2");
_Static_assert(sizeof(struct lp_event_sample) ==
		       72 + 8 * (LP_MAX_STACK + LP_MAX_USTACK) + 16 * LP_MAX_LUA,
	       "lp_event_sample layout");
_Static_assert(lp_event_sample_head_size == 72, "lp_event_sample head");
_Static_assert(LP_MAX_USTACK < 0xffff, "ustack_jit fits 16 bits");
_Static_assert(sizeof(struct lp_event_task) == 48, "lp_event_task layout");
_Static_assert(sizeof(struct lp_event_proto) == 48 + LP_PROTO_NAME_MAX, "lp_event_proto layout");
_Static_assert(sizeof(struct lp_bpf_counters) == 64, "lp_bpf_counters layout");
_Static_assert(sizeof(struct lp_runtime_hist) == 8 * LP_RUNTIME_BUCKETS, "lp_runtime_hist layout");

#endif

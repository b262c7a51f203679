/*
 * session_priv.h - what the files of one recording share (session.c,
 * session_targets.c, session_lua.c, session_samples.c, session_summary.c):
 * the session and target structs and the functions one file calls in
 * another.  Private to those files; record.c sees only session.h.
 */
#ifndef LUAPROF_RECORD_SESSION_PRIV_H
#define LUAPROF_RECORD_SESSION_PRIV_H

#include <signal.h>
#include <stdint.h>
#include <sys/types.h>

#include "bpf/sampler.h"
#include "format/trace.h"
#include "record/clock.h"
#include "record/launch.h"
#include "record/sample_event.h"
#include "record/luajit.h"
#include "record/mapsize.h"
#include "record/perf.h"
#include "record/procmaps.h"
#include "record/session.h"

struct stack_table;
struct ksym_set;
struct object_set;
struct unwinder;
struct sidekick;
struct sampler;
struct ring_buffer;
struct proto_table;
struct jit_trace_table;
struct source_table;
struct lua_puc;

#define MAPS_REREAD_NS 100000000ull /* at most 10 maps re-reads/s per pid */
/* ... or 200/s when the pc a sample interrupted is in no known mapping:
 * that pc runs, so the mappings we have are stale (a JIT's new code), and
 * every sample until the next read loses its native frames. */
#define MAPS_REREAD_LEAF_NS 5000000ull
/* Flush once a second: a recorder killed at any instant loses at most
 * about a second of samples (docs/format.md's policy).  Twice a second
 * made chunks half as long, each starting its compressor cold: 12% more
 * bytes for an 8 s nginx trace at 99 Hz. */
#define FLUSH_NS 1000000000ull
#define STATUS_NS 500000000ull
#define ALIVE_CHECK_NS 1000000000ull
/* A process's exit event is sent by its last thread, while another of
 * its threads, still in do_exit() on another CPU, may have a sample under
 * way that reaches the ring buffer after it.  Its mappings are kept (and
 * its exit record held back) until the ring buffer has been read this
 * long past the exit: a sample is taken in microseconds. */
#define EXIT_SETTLE_NS 2000000ull
#define CUT_WALKS 12

/* The precision of sample times in the trace (docs/format.md §3.6). */
#define SAMPLE_TIME_NS 1000

/* Builtins whose names a LUAJIT record carries only once hit; one
 * past (no build has that many) makes the record name them all. */
#define FF_NAMED_MAX 1024

struct target {
	pid_t pid;
	int alive;
	/* Its exit event's time while the exit settles (EXIT_SETTLE_NS),
	 * else 0; alive until then. */
	uint64_t exit_ns;
	struct maps_table maps;
	uint64_t maps_read_ns;
	uint64_t maps_gen; /* which maps: new with each (session.maps_gens) */
	/* What the walker got when the fork was heard of, if not the
	 * parent's mappings: the image the child exec'd since (see
	 * inherit_maps()). */
	struct maps_table exec_maps;
	struct lj_target *lj; /* its LuaJIT VM, NULL if none */
	/* The builtins (fast functions) its samples ran, by id: its LUAJIT
	 * record names only these, and is written again when one is new. */
	uint8_t ff_named[FF_NAMED_MAX / 8];
	int puc_noted;        /* a PUC Lua VM was said (until an exec) */
	int lj_refused_said;  /* why its LuaJIT is not walked (until an exec) */
	int alloc_refused_said; /* why its allocator is not probed */
	/* Samples whose native stack crossed its VM's C frame (whose
	 * lua_State the BPF walker then tried) while its layout had not
	 * validated, for print_summary(). */
	uint64_t lj_unvalidated;
	/* It exited before its VM could be checked (lj_locate_vm). */
	int lj_gone;
};

/* The recorder's own CPU (self_cpu_ns(): every thread, from the
 * process's start), marked at the end of each step of its life and said
 * by record -v: what setup costs before the first sample, what sampling
 * costs while the target runs, and what finishing costs after it. */
#define SELF_CPU_DEF(_) \
	_(BPF, "BPF load and verification") \
	_(UNWINDER, "unwinder") \
	_(TARGETS, "targets") \
	_(KSYMS, "kernel symbols") \
	_(START, "the rest") \
	_(SAMPLING, "sampling") \
	_(FINISHING, "finishing")

enum self_cpu_mark {
#define SELF_CPU_ENUM(name, text) SELF_CPU_##name,
	SELF_CPU_DEF(SELF_CPU_ENUM)
#undef SELF_CPU_ENUM
	SELF_CPU_N
};

/* Why the recording loop ran, for the same account. */
struct loop_stats {
	uint64_t woken;    /* ring_buffer__poll() woke for events */
	uint64_t timeouts; /* ... or timed out */
	uint64_t flushes;
};

/*
 * The user stack a thread showed last, for the next sample of the same
 * thread, whose root-side frames are mostly the same (on nginx, 16 of 19):
 * those were found in the process's mappings of the same read and noted
 * for the object set then, and need neither again (session_samples.c).
 * A small table by tid; an entry names its thread and mappings.
 */
#define LAST_USTACKS 64

struct last_ustack {
	uint64_t maps_gen; /* the target's mappings it was checked in; 0 none */
	uint32_t pid, tid, n;
	uint64_t pc[LP_MAX_USTACK];
	const struct lp_mapping *map[LP_MAX_USTACK]; /* in those mappings */
};

/* A sample's user frames, each with its mapping (NULL: in none), looked
 * up once per sample (at sample_frame_addr()) in its target's mappings
 * of maps_gen: the trace's checks, its objects and its validation all
 * read them here. */
struct uframes {
	int n;
	uint64_t maps_gen;
	const struct lp_mapping *map[LP_MAX_USTACK];
};

/* What the Lua walk gave, for the summary. */
struct lua_stats {
	uint64_t samples_lua;   /* samples with Lua frames */
	uint64_t truncated;     /* ... ending in a TRUNC marker */
	uint64_t idle;          /* VM present, not running Lua */
	uint64_t no_g, bad_l, no_vm;
	uint64_t protos_unknown; /* frames whose proto could not be read */
	uint64_t foreign_code;  /* code stepped over as an unnumbered trace's
				   that no trace holds: another JIT's */
	/* LuaJIT processes that exited before their VM could be checked,
	 * and their samples whose Lua frames were dropped for it. */
	uint64_t procs_gone, gone_dropped;
};

#define LUA_PROBES 32 /* LuaJIT objects probed for Lua-land waits */

struct session {
	const struct record_opts *o;
	struct trace_writer *w;
	struct sampler *skel;
	struct ring_buffer *rb;
	struct perf_sampling perf;
	int stats_fd; /* -v: the kernel counts the sampler's runs while open */
	struct stack_table *stacks;
	struct ksym_set *ksyms;
	struct object_set *objs; /* ELF objects hit, embedded (objects.c) */
	struct unwinder *unw; /* native unwinder; NULL: frame pointers only */
	struct sidekick *side; /* keeps unw current during flushes */
	int side_polls;        /* the sidekick's thread polls rb (a flush) */
	struct map_plan maps_plan; /* the BPF maps' sizes (mapsize.c) */
	struct lp_event *held; /* samples and events not written yet (emit()) */
	size_t nheld, capheld;
	struct proto_table *protos;
	struct jit_trace_table *jit_traces;
	struct source_table *sources; /* Lua source files embedded */
	struct lua_stats lua;
	/* The Lua VMs said on stderr, as hashes of object and layout source:
	 * each process named on the command line is announced, the others
	 * (children, their execs) only with a VM not announced yet. */
	uint64_t vm_announced[64];
	int nvm_announced;
	struct target *targets;
	int ntargets, nalive;
	int exits_pending; /* targets whose exit_ns is set */
	uint64_t maps_gens; /* the last target.maps_gen given */
	struct last_ustack *last_ustacks; /* [LAST_USTACKS] */
	size_t captargets;
	struct launched launched;
	int launched_running;
	/* Followed processes the sampler stopped at their exec, continued
	 * once read (release_holds()); -v: how many, how long in all. */
	pid_t *holds;
	size_t nholds, capholds;
	uint64_t holds_done, holds_ns;
	uint64_t start_ns, lost_written, lost_busy_written, lost_offcpu_written;
	uint64_t lost_luawait_written;
	/* Lua-land waits: the LuaJIT objects whose lua_resume is probed
	 * (by device and inode: one probe serves every process mapping it),
	 * and the probes' links. */
	struct lua_probe {
		uint64_t dev, ino;
		struct bpf_link *entry, *ret;
	} lua_probes[LUA_PROBES];
	int nlua_probes;
	/* Allocations: the probes on VMs' allocators (session_alloc.c), by
	 * file and offset (a return probe's with bit 63), and for inuse,
	 * the allocation events written, until the end. */
	struct alloc_probe {
		uint64_t dev, ino, off;
		struct bpf_link *link;
	} alloc_probes[LUA_PROBES];
	int nalloc_probes;
	struct alloc_kept {
		uint64_t time; /* the BPF event's, which names it */
		uint32_t tid;
		struct lp_event ev;
	} *alloc_kept;
	size_t nalloc_kept, capalloc_kept;
	uint64_t inuse_unmatched; /* blocks alive whose event was lost */
	uint64_t lost_inuse_written;
	uint64_t events[LP_KIND_MAX]; /* taken, by kind */
	uint64_t begun_ns, setup_ns; /* when record began; its setup's length */
	uint64_t lost_dropped; /* events the flush sidekick could not keep */
	/* record -v: the first native walks cut short, said at the end. */
	char cut_walks[CUT_WALKS][160];
	int ncut_walks;
	/* Native stacks cut above the leaf at a frame in no mapping the
	 * trace holds (validated_ustack_bytes()), for record -v. */
	uint64_t ustacks_unnamed;
	uint64_t samples;     /* taken: every sample the ring buffer gave */
	uint64_t written;     /* of those, in the file (set by finish()) */
	uint64_t self_cpu[SELF_CPU_N]; /* self_cpu_ns() at the end of each step */
	uint64_t stop_ns;      /* when sampling ended */
	struct loop_stats loop;
	int write_err; /* first trace write error, negative errno */
	int status_shown;
};

/* ---- session.c ---- */
void emit(struct session *s, const struct lp_record *rec);
/* Events the sampler dropped (ring buffer full, CPU busy), so far. */
uint64_t session_bpf_lost(const struct session *s);

/* ---- session_targets.c ---- */
void procs_changed(struct session *s);
struct target *find_target(struct session *s, pid_t pid);
const struct maps_table *known_maps(void *ctx, pid_t pid);
struct target *add_target(struct session *s, pid_t pid, pid_t ppid,
				 uint64_t time_ns, uint32_t flags,
				 const char *comm);
void target_exited(struct session *s, struct target *t, uint64_t time_ns);
void target_exit_heard(struct session *s, struct target *t, uint64_t time_ns);
void settle_exits(struct session *s, uint64_t read_ns);
int check_mappings(struct session *s, struct target *t,
		   const struct lp_event_sample *e, const struct uframes *u);
void refresh_maps(struct session *s, pid_t pid);
void read_at_entry(struct session *s, struct launched *l);
void hold_exec(struct session *s, pid_t pid);
void release_holds(struct session *s);
int check_code_address(struct session *s, struct target *t, uint64_t time_ns,
		       uint64_t addr);
int add_initial_targets(struct session *s);

/* ---- session_lua.c ---- */
void attach_luajit(struct session *s, struct target *t, struct target *parent);
void locate_luajit(struct session *s, struct target *t, uint64_t G);
/* Takes the Lua-land waits probes off (session_close()). */
void unprobe_lua_resume(struct session *s);
/* session_alloc.c */
void probe_alloc(struct session *s, struct target *t);
void unprobe_alloc(struct session *s);
void alloc_note_event(struct session *s, const struct lp_event_sample *e,
		      const struct lp_event *ev);
void alloc_emit_inuse(struct session *s);
uint64_t intern_lua_stack(struct session *s, struct target *t,
				 const struct lp_event_sample *e, size_t size);
void place_unnumbered_trace(struct session *s, struct target *t, struct lp_event_sample *e);
void count_lua_state(struct session *s, uint32_t state, uint64_t lstack);

/* ---- session_samples.c ---- */
int handle_event(void *ctx, void *data, size_t size);
int ring_event(void *ctx, void *data, size_t size);

/* ---- session_summary.c ---- */
void print_summary(struct session *s, uint64_t end_ns);
static inline void mark_self_cpu(struct session *s, enum self_cpu_mark m)
{
	s->self_cpu[m] = self_cpu_ns();
}

#endif

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
#include "record/launch.h"
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
#define CUT_WALKS 12

/* The precision of sample times in the trace (docs/format.md §3.6). */
#define SAMPLE_TIME_NS 1000

/* Builtins whose names a LUAJIT record carries only once hit; one
 * past (no build has that many) makes the record name them all. */
#define FF_NAMED_MAX 1024

struct target {
	pid_t pid;
	int alive;
	struct maps_table maps;
	uint64_t maps_read_ns;
	/* What the walker got when the fork was heard of, if not the
	 * parent's mappings: the image the child exec'd since (see
	 * inherit_maps()). */
	struct maps_table exec_maps;
	struct lj_target *lj; /* its LuaJIT VM, NULL if none */
	/* The builtins (fast functions) its samples ran, by id: its LUAJIT
	 * record names only these, and is written again when one is new. */
	uint8_t ff_named[FF_NAMED_MAX / 8];
	int puc_noted;        /* a PUC Lua VM was said (until an exec) */
	/* Samples whose native stack crossed its VM's C frame (whose
	 * lua_State the BPF walker then tried) while its layout had not
	 * validated, for print_summary(). */
	uint64_t lj_unvalidated;
	/* It exited before its VM could be checked (lj_locate_vm). */
	int lj_gone;
};

/* What the Lua walk gave, for the summary. */
struct lua_stats {
	uint64_t samples_lua;   /* samples with Lua frames */
	uint64_t truncated;     /* ... ending in a TRUNC marker */
	uint64_t idle;          /* VM present, not running Lua */
	uint64_t no_g, bad_l, no_vm;
	uint64_t protos_unknown; /* frames whose proto could not be read */
	/* LuaJIT processes that exited before their VM could be checked,
	 * and their samples whose Lua frames were dropped for it. */
	uint64_t procs_gone, gone_dropped;
};

struct session {
	const struct record_opts *o;
	struct trace_writer *w;
	struct sampler *skel;
	struct ring_buffer *rb;
	struct perf_sampling perf;
	struct stack_table *stacks;
	struct ksym_set *ksyms;
	struct object_set *objs; /* ELF objects hit, embedded (objects.c) */
	struct unwinder *unw; /* native unwinder; NULL: frame pointers only */
	struct sidekick *side; /* keeps unw current during flushes */
	int side_polls;        /* the sidekick's thread polls rb (a flush) */
	struct map_plan maps_plan; /* the BPF maps' sizes (mapsize.c) */
	struct lp_sample *held; /* samples not written yet (emit()) */
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
	size_t captargets;
	struct launched launched;
	int launched_running;
	uint64_t start_ns, lost_written;
	uint64_t lost_dropped; /* events the flush sidekick could not keep */
	/* record -v: the first native walks cut short, said at the end. */
	char cut_walks[CUT_WALKS][160];
	int ncut_walks;
	/* Native stacks cut above the leaf at a frame in no mapping the
	 * trace holds (validated_ustack_bytes()), for record -v. */
	uint64_t ustacks_unnamed;
	uint64_t samples;     /* taken: every sample the ring buffer gave */
	uint64_t written;     /* of those, in the file (set by finish()) */
	int write_err; /* first trace write error, negative errno */
	int status_shown;
};

/* ---- session.c ---- */
void emit(struct session *s, const struct lp_record *rec);

/* ---- session_targets.c ---- */
struct target *find_target(struct session *s, pid_t pid);
const struct maps_table *known_maps(void *ctx, pid_t pid);
struct target *add_target(struct session *s, pid_t pid, pid_t ppid,
				 uint64_t time_ns, uint32_t flags,
				 const char *comm);
void target_exited(struct session *s, struct target *t, uint64_t time_ns);
void check_mappings(struct session *s, struct target *t,
			   const struct lp_event_sample *e);
void refresh_maps(struct session *s, pid_t pid);
int add_initial_targets(struct session *s);

/* ---- session_lua.c ---- */
void attach_luajit(struct session *s, struct target *t, struct target *parent);
void locate_luajit(struct session *s, struct target *t, uint64_t G);
uint64_t intern_lua_stack(struct session *s, struct target *t,
				 const struct lp_event_sample *e, size_t size);
void count_lua_state(struct session *s, uint32_t state, uint64_t lstack);

/* ---- session_samples.c ---- */
int handle_event(void *ctx, void *data, size_t size);
int ring_event(void *ctx, void *data, size_t size);

/* ---- session_summary.c ---- */
void print_summary(struct session *s, uint64_t end_ns);

#endif

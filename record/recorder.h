/*
 * recorder.h - what the files of record/ share: the process table, the
 * mappings reader, stack interning, kernel symbols, perf events and the
 * launcher.  Nothing outside record/ includes this; record/record.h is the
 * only public entry point (cmd_record).
 */
#ifndef LUAPROF_RECORD_RECORDER_H
#define LUAPROF_RECORD_RECORDER_H

#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include "format/trace.h"

struct bpf_program;
struct bpf_link;
struct Elf; /* libelf's Elf */

/* ---- sidekick.c: the unwinder kept current during a flush --------------- *
 * Between sidekick_begin() and sidekick_end() a thread consumes the ring
 * buffer: it publishes the mappings of processes that exec'd or whose
 * walks stopped outside known code, and queues every event; sidekick_end()
 * stops it and hands the queued events, in order, to handle.  It returns
 * how many events found no memory (lost). */
struct sidekick;
struct unwinder;
struct maps_table;
struct sidekick_stats {
	uint64_t published; /* process mappings published during flushes */
	uint64_t queued;    /* events read during flushes */
};

/* known(ctx, pid): the mappings the recorder last read of pid, or NULL;
 * a re-read keeps the code they held, as procmaps_read_code() does.  The
 * main thread leaves them alone during a flush. */
struct ring_buffer;
/* rb is the caller's, which it does not poll during a flush; its callback
 * hands events to sidekick_event() while the sidekick runs. */
int sidekick_new(struct sidekick **out, struct ring_buffer *rb, struct unwinder *unw,
		 const struct maps_table *(*known)(void *ctx, pid_t pid), void *ctx);
int sidekick_event(void *k, void *data, size_t size);
void sidekick_begin(struct sidekick *k);
uint64_t sidekick_end(struct sidekick *k, int (*handle)(void *ctx, void *data, size_t size),
		      void *ctx);
void sidekick_stats(const struct sidekick *k, struct sidekick_stats *st);
/* While sidekick_end() hands an event over: the mappings (taken: the
 * caller frees them) and the /proc facts of pid as the sidekick read them
 * and gave the walker at that event, if it did.  0, or -ENOENT. */
struct maps_table;
struct proc_info;
int sidekick_take_maps(struct sidekick *k, pid_t pid, struct maps_table *out);
int sidekick_info(struct sidekick *k, pid_t pid, struct proc_info *out);
/* A copy of the mappings the sidekick last published of pid during this
 * flush, whatever the event: for a process gone since.  0 or -errno. */
int sidekick_latest_maps(struct sidekick *k, pid_t pid, struct maps_table *out);
void sidekick_free(struct sidekick *k);

/* ---- procmaps.c: executable mappings of a process ---------------------- */
struct maps_table {
	struct lp_mapping *v; /* sorted by start; paths owned (strdup) */
	uint32_t n;
};

int procmaps_read(pid_t pid, struct maps_table *out);
/* The same, also keeping anonymous memory that held code though it is not
 * executable now: prev's anonymous code, and the mappings holding the
 * addresses in code[] (where the sampler saw code run). */
int procmaps_read_code(pid_t pid, const struct maps_table *prev,
		       const uint64_t *code, uint32_t ncode,
		       struct maps_table *out);
const struct lp_mapping *maps_table_find(const struct maps_table *t,
					 uint64_t addr);
/* An anonymous executable page at addr, where code was seen to run though
 * no mapping holds it: 1 added, 0 already held, -ENOMEM. */
int maps_table_add_code(struct maps_table *t, uint64_t addr);
int maps_table_copy(const struct maps_table *t, struct maps_table *out);
/* Mappings of `now` not present, identical, in `old`; borrowed pointers. */
uint32_t maps_table_added(const struct maps_table *old,
			  const struct maps_table *now,
			  const struct lp_mapping **added, uint32_t cap);
void maps_table_free(struct maps_table *t);

/* ---- procs.c: what /proc says about a process --------------------------- */
struct proc_info {
	pid_t pid, ppid;
	char comm[64];
	char exe[4096];
};

int proc_read_info(pid_t pid, struct proc_info *info);
/* When pid started, in CLOCK_REALTIME nanoseconds (to clock-tick
 * precision), or 0 if unknown. */
uint64_t proc_start_real_ns(pid_t pid);
/* All descendants of the given roots, alive now (roots excluded). */
int proc_descendants(const pid_t *roots, int nroots, pid_t **out, int *count);
int proc_exists(pid_t pid);
/* Whether pid is a kernel thread (PF_KTHREAD): no user stack to sample. */
int proc_is_kthread(pid_t pid);

/* ---- stacks.c: stacks interned by content, ids from 1 ------------------ */
struct stack_table;

struct stack_table *stack_table_new(void);
/* Returns the id; *is_new says the caller must emit its definition. */
uint64_t stack_table_intern(struct stack_table *t, uint32_t kind,
			    const uint64_t *addrs, uint32_t depth, int *is_new);
uint64_t stack_table_count(const struct stack_table *t);
uint64_t stack_table_bytes(const struct stack_table *t);
void stack_table_free(struct stack_table *t);

/* ---- kallsyms.c: the kernel symbols that stacks hit --------------------- */
struct ksym_set;

struct ksym_set *ksym_set_new(void);
void ksym_set_note(struct ksym_set *s, const uint64_t *addrs, uint32_t n);
/* Reads /proc/kallsyms, once: 0, or -errno (-ENOENT: it shows no
 * addresses), which ksym_set_write() returns again. */
int ksym_set_load(struct ksym_set *s);
/* Resolves the addresses noted since the last call against
 * /proc/kallsyms and writes one KSYMS record with the symbols they fall in
 * that no earlier record holds.  -ENOENT: kallsyms shows no addresses. */
int ksym_set_write(struct ksym_set *s, struct trace_writer *w);
void ksym_set_free(struct ksym_set *s);

/* ---- objects.c: the ELF objects hit, embedded for the report --------- */
struct object_set;

/* embed = 0: identities only (`record --no-embed`), no symbols. */
struct object_set *object_set_new(int embed);
/* Sets the object id of every file mapping of t (pid's), writing an
 * OBJECT record for each file new to the trace, before the caller's MAPS
 * record that names it. */
void object_set_assign(struct object_set *s, pid_t pid, struct maps_table *t,
		       struct trace_writer *w);
/* Notes the objects of t that addresses (or an object id) fall in, and
 * keeps the addresses, as they are (code addresses, such as the C
 * functions of Lua frames), for their source lines. */
void object_set_note(struct object_set *s, const struct maps_table *t,
		     const uint64_t *addrs, uint32_t n);
/* The same for a user stack, leaf first, whose addresses are also kept
 * for their source lines: the leaf as it is, every other one, a return
 * address, less one (the call, as the report looks it up). */
void object_set_note_stack(struct object_set *s, const struct maps_table *t,
			   const uint64_t *addrs, uint32_t n);
void object_set_note_id(struct object_set *s, uint64_t id);
/* Writes the SYMTAB and SRCLINES records the addresses noted since the
 * last call need (symtab.c, srclines.c); those of an object still being
 * read (objects_prep.c) wait for the next call, unless last (which waits
 * for them). */
int object_set_write(struct object_set *s, struct trace_writer *w, int last);
/* Objects mapped and embedded, and the symbols embedded of how many
 * their tables hold. */
void object_set_stats(const struct object_set *s, uint64_t *objects,
		      uint64_t *embedded, uint64_t *symbols, uint64_t *of);
/* For record's summary: the source lines embedded, the objects left out
 * in part over a bound, and with `verbose` each object's lines. */
void object_set_print_srclines(const struct object_set *s, int verbose);
void object_set_free(struct object_set *s);

/* ---- symtab.c: an object's symbols, and those the trace embeds -------- */
struct obj_symtab;

/* Reads the PT_LOAD headers and function symbols of elf: 0, 1 when it is
 * not an ELF file with program headers (nothing to embed), -ENOMEM. */
int obj_symtab_read(struct obj_symtab **out, struct Elf *elf);
/* The same from segments and symbols already read (elf_function_symbols()
 * order: ascending, one per address).  0 or -ENOMEM. */
struct elf_fsym;
int obj_symtab_new(struct obj_symtab **out, const struct lp_objseg *segs,
		   size_t nsegs, const struct elf_fsym *v, size_t n);
const struct lp_objseg *obj_symtab_segs(const struct obj_symtab *t, size_t *n);
/* Marks the symbols a report looks at to name the code at file offset
 * off; obj_symtab_need_all() marks them all. */
void obj_symtab_need(struct obj_symtab *t, uint64_t off);
void obj_symtab_need_all(struct obj_symtab *t);
/* Writes the symbols marked since the last call as SYMTAB records of
 * object `object`; the first call writes one even with none, so that
 * the object counts as embedded.  0 or -errno. */
int obj_symtab_write(struct obj_symtab *t, uint64_t object,
		     struct trace_writer *w);
/* Symbols written so far, and in the whole table. */
void obj_symtab_counts(const struct obj_symtab *t, uint64_t *written,
		       uint64_t *total);
void obj_symtab_free(struct obj_symtab *t);

/* ---- objects_prep.c: an object's symbols and DWARF, read aside ------- */
struct srclines_object;
/* One object's reading: the job, then what it read, owned by whoever
 * holds it (the worker builds the obj_symtab, the recorder marks and
 * writes it once taken). */
struct obj_prepared {
	uint64_t id;
	int fd;     /* the job's own; closed once read */
	char *path;
	int err;    /* -ENOMEM, or 0 */
	struct obj_symtab *syms;       /* NULL: gone or not ELF */
	struct srclines_object *dwarf; /* NULL: no lines */
	struct obj_prepared *next;
};
struct obj_prep;
/* Starts the worker (if no thread can start, a job is read when taken). */
struct obj_prep *obj_prep_new(void);
/* Queues the object id (fd, which the job owns, and path); 0 or -ENOMEM. */
int obj_prep_submit(struct obj_prep *p, uint64_t id, int fd, const char *path);
/* Object id once read, which the caller then owns; NULL while it is
 * being read, unless wait (id must have been queued). */
struct obj_prepared *obj_prep_take(struct obj_prep *p, uint64_t id, int wait);
void obj_prepared_free(struct obj_prepared *j);
/* Waits for the job being read, drops the others. */
void obj_prep_free(struct obj_prep *p);

/* ---- srclines.c: the source lines of the addresses hit, embedded ------ */
/* The most SRCLINES bytes (bodies, as lp_srclines_size() counts them)
 * one object and one recording embed: a trace is meant to be attached to
 * a bug report.  A chain costs a few dozen bytes with its names, and a
 * server's profile hits hundreds to thousands of addresses of libc, so
 * these bound what a recording hits, not the debug files. */
#define SRCLINES_MAX_OBJECT (4ull << 20)
#define SRCLINES_MAX_TRACE (32ull << 20)

/* What one object's lines cost so far, and the bound that cut them. */
struct srclines_count {
	uint64_t chains, bytes;
	uint32_t skipped; /* LP_SRCLINES_SKIPPED_*: nothing more is resolved */
};

/* One object's DWARF, open while samples may hit new addresses in it. */
struct srclines_object;

/* Opens the DWARF of object `id` (open on fd, mapped from `path`, with
 * PT_LOAD segments segs): its own, or its separate debug file.  Always 0;
 * *out is NULL when it has none (or memory is short): nothing to embed. */
int srclines_open(struct srclines_object **out, int fd, const char *path,
		  uint64_t id, const struct lp_objseg *segs, size_t nsegs);
/*
 * Resolves the code at the file offsets offs[0..n) of the object (the
 * array is reused in place) into chains, at the ELF virtual address the
 * report looks up, and writes those that name something as SRCLINES
 * records.  Past SRCLINES_MAX_OBJECT for the object (its count in *cnt)
 * or the *left bytes the trace may still embed, writes one note and
 * resolves nothing more for the object.  0, or the writer's -errno.
 */
int srclines_write(struct srclines_object *o, uint64_t *offs, size_t n,
		   struct srclines_count *cnt, uint64_t *left, struct trace_writer *w);
void srclines_free(struct srclines_object *o);

/* ---- addrset.c: the addresses samples hit, each once -------------------- */
struct addr_set {
	uint64_t *slot; /* open addressing; 0 = empty */
	size_t cap, n;
	uint64_t *fresh; /* added since the last drain, in order */
	size_t nfresh, freshcap;
	uint64_t dropped; /* not kept: the set was full */
};

#define ADDR_SET_MAX (1u << 19) /* keys: 8 MiB of table at most */
/* Adds key (non-zero): 1 if new (it is then in fresh), 0 if known,
 * -ENOMEM, or -ENOSPC past ADDR_SET_MAX keys (counted in dropped). */
int addr_set_add(struct addr_set *a, uint64_t key);
void addr_set_free(struct addr_set *a);
/* qsort's comparison of uint64_t, ascending: for the keys drained from
 * fresh (objects.c) and the addresses they become (srclines.c). */
int u64_cmp(const void *a, const void *b);

/* ---- mapsize.c: the BPF maps' sizes, chosen before loading ------------- */
struct sampler;

struct map_plan {
	uint32_t ring_bytes;       /* the ring buffer */
	uint32_t rows, buckets;    /* unwind rows and bucket index entries */
	uint64_t rows_need, buckets_need; /* the targets' objects, estimated */
	uint32_t objects;          /* objects estimated */
	int launched;              /* for a command not started yet */
};

/* Sizes the maps of skel (opened, not loaded) for recording pids (the
 * targets and their descendants) or, command not NULL, a command to
 * launch, at rate_hz; map_plan_apply() sets them (0 or -errno),
 * map_plan_print() says them. */
void map_plan_make(struct map_plan *p, struct sampler *skel, const pid_t *pids,
		   int npids, char **command, unsigned int rate_hz);
int map_plan_apply(const struct map_plan *p, struct sampler *skel);
void map_plan_print(const struct map_plan *p, FILE *f);

/* ---- perf.c: one cpu-clock perf_event per CPU --------------------------- */
struct perf_sampling {
	int ncpus;
	int *fds;
	struct bpf_link **links;
};

int perf_sampling_attach(struct perf_sampling *ps, struct bpf_program *prog,
			 unsigned int freq_hz);
void perf_sampling_detach(struct perf_sampling *ps);

/* ---- kernel.c: what the kernel offers; loading the BPF sampler --------- */
/* Something luaprof needs of the kernel, and the version that brought it. */
struct kernel_feature {
	const char *what;  /* "bpf_loop()" */
	const char *since; /* "5.17" */
	const char *use;   /* what luaprof needs it for */
	int (*probe)(int arg);
	int arg;
};

extern const struct kernel_feature kernel_features[];
extern const int kernel_nfeatures;

/* 1: the kernel has it; 0: it does not; -errno: cannot tell (no root). */
int kernel_feature_probe(const struct kernel_feature *f);
/* How many features the kernel lacks; their names and versions into out
 * ("bpf_loop() (Linux 5.17), ..."), *newest the index of the one of the
 * most recent Linux version (-1 if none). */
int kernel_missing_features(char *out, size_t cap, int *newest);

struct sampler;
/*
 * Opens and loads the BPF sampler (bpf/sampler.bpf.c) with follow_children
 * in its config; size (if not NULL) sizes its maps between open and load
 * (0 or -errno).  libbpf's messages go to stderr as they come if verbose.
 * On failure, with who ("luaprof record") as the prefix, says what the
 * kernel lacks, or which field or verifier check failed.  0 or -errno.
 */
int sampler_load(struct sampler **out, int follow_children,
		 int (*size)(struct sampler *skel, void *arg), void *arg,
		 int verbose, const char *who);

/* ---- launch.c: `record -- CMD ARGS` ------------------------------------ */
struct launched {
	pid_t pid;
	int go_fd;  /* write a byte: the child may exec */
	int err_fd; /* EOF: exec succeeded; 4 bytes: errno of a failed exec */
};

int launch_prepare(char **argv, struct launched *l);
/* Lets the child exec; returns 0 or the child's exec errno, negated. */
int launch_start(struct launched *l);

/* Stack kinds of record/ beyond the trace's: Lua frames are interned in
 * the same table, as (kind | link << 8, value, pc) triplets. */
#define STACK_KIND_LUA 3

/* time */
uint64_t mono_ns(void);
uint64_t real_ns(void);

#endif

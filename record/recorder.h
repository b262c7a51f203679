/*
 * recorder.h - what the files of record/ share: the process table, the
 * mappings reader, stack interning, kernel symbols, perf events and the
 * launcher.  Nothing outside record/ includes this; record/record.h is the
 * only public entry point (cmd_record).
 */
#ifndef LUAPROF_RECORD_RECORDER_H
#define LUAPROF_RECORD_RECORDER_H

#include <stdint.h>
#include <sys/types.h>

#include <elfutils/libdw.h>

#include "format/debuginfo.h"
#include "format/trace.h"

struct bpf_program;
struct bpf_link;

/* ---- procmaps.c: executable mappings of a process ---------------------- */
struct maps_table {
	struct lp_mapping *v; /* sorted by start; paths owned (strdup) */
	uint32_t n;
};

int procmaps_read(pid_t pid, struct maps_table *out);
const struct lp_mapping *maps_table_find(const struct maps_table *t,
					 uint64_t addr);
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
 * functions of Lua frames), for the DWARF units they fall in. */
void object_set_note(struct object_set *s, const struct maps_table *t,
		     const uint64_t *addrs, uint32_t n);
/* The same for a user stack, leaf first, whose addresses are also kept
 * for the DWARF units they fall in: the leaf as it is, every other one, a
 * return address, less one (the call, as the report looks it up). */
void object_set_note_stack(struct object_set *s, const struct maps_table *t,
			   const uint64_t *addrs, uint32_t n);
void object_set_note_id(struct object_set *s, uint64_t id);
/* Writes the SYMTAB and DEBUG records of the objects noted and not yet
 * embedded. */
int object_set_write(struct object_set *s, struct trace_writer *w);
void object_set_stats(const struct object_set *s, uint64_t *objects,
		      uint64_t *embedded, uint64_t *symbols);
/* The DWARF embedded and left out so far (debuginfo.c). */
const struct debug_budget *object_set_debug(const struct object_set *s);
/* Hit addresses not kept (the set was full): their DWARF units may be
 * missing from the trace. */
uint64_t object_set_addrs_dropped(const struct object_set *s);
void object_set_free(struct object_set *s);

/* ---- debuginfo.c, debug_units.c: the DWARF of an object hit, embedded -- */
#define DEBUG_SKIPS_KEPT 16 /* objects left out that -v names */
/* The most DWARF one recording embeds, all objects together, and one
 * object (the format allows up to LP_DEBUG_MAX_OBJECT): a trace is meant
 * to be attached to a bug report.  An object's DWARF goes in by
 * compilation unit, only the units samples hit, so these bound what a
 * recording hits, not the debug files: libc's whole DWARF (libc6-dbg) is
 * 8.6 MiB, the part a server's profile needs a small fraction of it. */
#define DEBUG_MAX_TRACE (256ull << 20)
#define DEBUG_MAX_EMBED_OBJECT (4ull << 20)

/* What a recording embedded and left out, and what it may still embed. */
struct debug_budget {
	uint64_t left;             /* bytes the trace may still embed */
	uint64_t objects, bytes;   /* embedded */
	uint64_t units;            /* compilation units embedded */
	uint64_t skipped;          /* left out (in part): over a bound */
	struct {
		char path[256];
		uint64_t bytes;
		uint32_t why;      /* LP_DEBUG_SKIPPED_* */
	} skips[DEBUG_SKIPS_KEPT];
	size_t nskip;
};

/* A set of offsets (of units, tables, programs) already written. */
struct offset_set {
	uint64_t *v; /* ascending */
	size_t n, cap;
};

/* One object's DWARF, kept open while samples may hit new units of it. */
struct debug_object {
	uint64_t id;
	char path[256];
	struct lp_debug_file obj, dbg; /* dbg: the separate debug file, if any */
	struct lp_debug_sections s;    /* into obj.elf or dbg.elf */
	Dwarf *dw;
	int be;                        /* the DWARF is big-endian */
	struct lp_objseg *segs;        /* the object's PT_LOAD segments */
	size_t nsegs;
	uint64_t bytes;                /* embedded for it so far */
	int full;                      /* over a bound: no more units */
	struct offset_set cus, abbrevs, lines;
};

void debug_budget_init(struct debug_budget *b);
/*
 * Opens the DWARF of object `id` (open on fd, mapped from `path`, with
 * PT_LOAD segments segs) and writes its first DEBUG records: the small
 * sections whole and the header of every compilation unit, or a note
 * that even they are over a bound.  *out is then the object's DWARF, kept
 * open for debug_object_add (NULL: none, or nothing more to add).  An
 * object without DWARF writes nothing.  0, or the writer's -errno.
 */
int debuginfo_embed(int fd, const char *path, uint64_t id,
		    const struct lp_objseg *segs, size_t nsegs,
		    struct debug_budget *b, struct trace_writer *w,
		    struct debug_object **out);
void debug_object_free(struct debug_object *d);
/* Writes one section's bytes [off, off + len) as DEBUG pieces. */
int debuginfo_write(struct trace_writer *w, const struct debug_object *d,
		    int sect, uint64_t off, uint64_t len);
/* Writes the note that d's DWARF (of `bytes` bytes) is over a bound,
 * and keeps it in b for -v. */
int debuginfo_skip(struct trace_writer *w, const struct debug_object *d,
		   struct debug_budget *b, uint32_t why, uint64_t bytes);
/*
 * Embeds the compilation unit that holds the code at file offset
 * `fileoff` of the object, if it is not embedded yet: its bytes in
 * .debug_info, its abbreviation table and its line program (each once,
 * however many units share it).  A unit that would take the object past
 * DEBUG_MAX_EMBED_OBJECT, or the trace past its budget, writes a note
 * instead, once, and no unit of the object is added after it.  0, or the
 * writer's -errno.
 */
int debug_object_add(struct debug_object *d, uint64_t fileoff,
		     struct debug_budget *b, struct trace_writer *w);

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

/* ---- perf.c: one cpu-clock perf_event per CPU --------------------------- */
struct perf_sampling {
	int ncpus;
	int *fds;
	struct bpf_link **links;
};

int perf_sampling_attach(struct perf_sampling *ps, struct bpf_program *prog,
			 unsigned int freq_hz);
void perf_sampling_detach(struct perf_sampling *ps);

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

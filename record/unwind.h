/*
 * unwind.h - loads native unwind tables into the BPF sampler's maps for
 * the processes being recorded (record/unwind.c; the walker is
 * bpf/unwind_native.bpf.h, the map layout bpf/unwind_maps.h).  The session
 * tells it about each target's executable mappings whenever it reads
 * them, and about each target's exit.  Every call accepts a NULL
 * unwinder and does nothing, so a session whose unwinder failed to start
 * records with frame pointers as before.
 */
#ifndef LUAPROF_RECORD_UNWIND_H
#define LUAPROF_RECORD_UNWIND_H

#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include "bpf/unwind_maps.h"

struct sampler;
struct maps_table;
struct unwinder;

struct unwind_stats {
	uint32_t objects;        /* objects whose rows are loaded */
	uint32_t objects_fp;     /* objects walked with frame pointers */
	uint32_t objects_full;   /* of those, refused for want of room */
	uint32_t objects_unindexed; /* loaded without a bucket index (full) */
	uint32_t processes;      /* mapping lists loaded now */
	uint32_t lists;          /* distinct mapping lists published */
	uint32_t maps_dropped;   /* mappings past LP_UNWIND_MAX_MAPS */
	uint64_t rows, rows_max;
	uint64_t rows_deref;     /* realigned frames' rows (DWARF expressions) */
	uint64_t rows_unsupported; /* rows whose rule the walker cannot run */
	uint64_t exprs_unsupported; /* expressions of no known form met */
	uint64_t map_bytes;      /* BPF map memory, fixed at load */
	uint64_t build_ns;       /* time spent computing tables */
	uint64_t stops[LP_USTOP_MAX]; /* walks by how they stopped */
	uint64_t frames;         /* frames walked */
	uint64_t cache_hits, cache_misses; /* the walker's row cache */
	uint64_t memo_hits;      /* of cache_hits, from the last walk's frames */
};

/* After the skeleton is loaded.  0 or -errno. */
int unwind_init(struct unwinder **out, struct sampler *skel);
/* Publishes the process's whole list of executable mappings, building
 * and loading the tables of objects not seen before.  0 or -errno. */
int unwind_add_process(struct unwinder *u, pid_t pid,
		       const struct maps_table *maps);
/* The same for a process whose mappings changed (dlopen, exec). */
int unwind_update_process(struct unwinder *u, pid_t pid,
			  const struct maps_table *maps);
void unwind_remove_process(struct unwinder *u, pid_t pid);
/* The start of the function (by its FDE) that holds addr in pid's code
 * as last published, into *start: 0, or -ENOENT when no table says. */
int unwind_function_start(const struct unwinder *u, pid_t pid, uint64_t addr,
			  uint64_t *start);
/* Builds the tables of the command cmd (found as execvp() would) and of
 * the libraries it needs, before it runs (command_files.c finds them),
 * so that its first samples find them ready.  also (may be NULL) is
 * called with each file's path too; u may be NULL. */
int unwind_preload(struct unwinder *u, const char *cmd,
		   void (*also)(const char *path, void *arg), void *arg);
void unwind_stats(const struct unwinder *u, struct unwind_stats *st);
/* How a walk stopped (enum lp_ustop), as record -v names it. */
const char *unwind_stop_name(uint32_t stop);
/* Two or three lines for `record -v`. */
void unwind_print_stats(const struct unwinder *u, FILE *f);
void unwind_free(struct unwinder *u);

#endif

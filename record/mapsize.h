/*
 * mapsize.h - the BPF maps' sizes, chosen before loading (mapsize.c).
 */
#ifndef LUAPROF_RECORD_MAPSIZE_H
#define LUAPROF_RECORD_MAPSIZE_H

#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

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

#endif

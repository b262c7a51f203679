/*
 * luajit_place.h - a compiled trace's machine code placed in the Lua
 * functions and bytecode that made it (luajit_place.c, with the bytecode
 * path of luajit_path.c, the IR matching of luajit_irmatch.c and the
 * machine code matching of luajit_mcmatch.c).
 *
 * luajit_snaps.c reads a trace's snapshots; between two of them LuaJIT
 * keeps nothing finer, and the code there may belong to several inlined
 * functions.  This reads what the trace was made from: the bytecode the
 * recorder ran from one snapshot to the next, the IR it emitted, and the
 * machine code each IR instruction became, and places every instruction
 * of machine code in the bytecode (and so the function and the line) that
 * made it.  What it cannot place for sure is marked as such, with the
 * functions it may belong to, never given to one of them.
 */
#ifndef LUAPROF_RECORD_LUAJIT_PLACE_H
#define LUAPROF_RECORD_LUAJIT_PLACE_H

#include <stdint.h>
#include <sys/types.h>

#include "bpf/luajit_layout.h"
#include "format/trace.h"

/* A frame of a snapshot, base first, as luajit_snaps.c decoded it. */
struct lj_tframe {
	uint64_t func;   /* its GCfunc, 0 when not known (the base frame's) */
	uint64_t proto;  /* its GCproto for a Lua function, 0 otherwise (a
			  * builtin: lf.kind FF, lf.value its id) */
	uint32_t pc;     /* the instruction it runs: for the innermost, the
			  * one the snapshot resumes at; for the others, the
			  * call */
	int32_t base;    /* the slot of its first local, as the trace's IR
			  * and snapshots number slots */
	uint32_t link;   /* LJ_FRAME_* it was called by (not the base's) */
	struct lp_lframe lf; /* as written in the trace file */
};

/* A snapshot: where its IR and machine code begin, and its frames. */
struct lj_tsnap {
	uint32_t ref, mcofs;
	uint32_t nframe;  /* 0: not decoded */
	uint8_t pathable; /* the base frame's function is known */
	const struct lj_tframe *frames;
};

/* Gives the trace file's id for the prototype at addr, writing its
 * record first if it is new; 0 if it cannot be read. */
typedef uint64_t (*lj_proto_id_fn)(void *ctx, uint64_t proto);

/* What placement needs of a trace, read by luajit_snaps.c. */
struct lj_trace_view {
	pid_t pid;
	const struct lj_layout *lo;
	int fr2;
	uint32_t nk, nins;
	const uint8_t *ir;     /* refs nk .. nins-1, LJ_IRINS_SIZE bytes each,
				* and the payload slot after the last */
	uint64_t mcode;
	uint32_t szmcode;
	const uint8_t *mc;     /* szmcode bytes */
	uint16_t machine;      /* its ELF machine, 0: the recorder's own */
	uint64_t startpt, startpc; /* the prototype and instruction it starts at */
	uint32_t nsnap;
	const struct lj_tsnap *snaps;
	const char *const *ffnames; /* builtin names by id, for pcall */
	uint32_t nff;
	lj_proto_id_fn proto_id;
	void *ctx;
};

/* What placement came to, for record's summary. */
struct lj_place_stats {
	uint64_t regions;   /* stretches between two snapshots */
	uint64_t exact;     /* ... placed instruction by instruction */
	uint64_t single;    /* ... in one function, placed whole */
	uint64_t marked;    /* ... not placed: several functions, marked */
};

struct lj_placer;
struct lj_placer *lj_placer_new(void);
void lj_placer_free(struct lj_placer *p);

/* Places the machine code of the trace tv describes: 0 with *snaps,
 * *nsnap set to the ranges (ascending mcofs, the first 0; each with its
 * frames base first, as a TRACE_SNAPS record holds them), owned by p
 * until its next call; -errno if nothing could be placed (the caller
 * then keeps the snapshots as they are). */
int lj_place_trace(struct lj_placer *p, const struct lj_trace_view *tv,
		   const struct lp_tsnap **snaps, uint32_t *nsnap);

void lj_placer_stats(const struct lj_placer *p, struct lj_place_stats *out);

#endif

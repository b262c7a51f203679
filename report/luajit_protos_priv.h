/*
 * luajit_protos_priv.h - the state behind luajit_protos.h, shared by
 * luajit_protos.c (the records, naming stacks) and lua_place.c (compiled
 * code placed in the functions a trace inlined).  Private to those two
 * files.  The dependency runs one way: lua_place.c uses the calls below,
 * luajit_protos.c calls nothing of lua_place.c (lua_free() frees the
 * whole struct lua, snapshots and placements included).
 */
#ifndef LUAPROF_REPORT_LUAJIT_PROTOS_PRIV_H
#define LUAPROF_REPORT_LUAJIT_PROTOS_PRIV_H

#include "lib/htab.h"
#include "report/luajit_protos.h"

struct vm_ent {
	uint32_t pid;
	uint64_t vm_start, vm_end;
	uint32_t flags;
	char **ffnames;
	uint32_t nff;
};

/* A trace's snapshots, as its TRACE_SNAPS record has them. */
struct snap_set {
	uint64_t bcbase;
	uint32_t bcofs, nsnap;
	struct lp_tsnap *snaps; /* frames point into frames */
	struct lp_lframe *frames;
};

struct trace_ent {
	uint64_t id, proto;
	uint32_t pid, startpc;
	uint64_t mcode, szmcode;
	struct snap_set *snaps; /* NULL: the trace has none */
};

/* A Lua stack: one a LUA_STACK record defined (id != 0), or one made of
 * such a stack with a trace's inlined frames put in (id 0). */
struct lstack_ent {
	uint64_t id;
	uint32_t depth;
	struct lp_lframe *frames;
	/* lua_leaf_function()'s answer, for VM record leaf_vm - 1 (0: not
	 * asked yet): asked once per sample by --vmstate. */
	uint32_t leaf, leaf_vm;
};

/* What names a Lua frame (luajit_protos.c, name_lua_frame()): its function, the
 * call site in its caller that names it, the pc and trace that give its
 * line, and whether the build is GC64 -> the name id.  A function appears
 * in many Lua stacks, called from the same few sites. */
struct fname_ent {
	const struct lp_proto *pt, *caller;
	uint32_t caller_pc, pc;
	uint64_t trace_proto; /* with trace_pc, the running trace's start */
	uint32_t trace_pc, gc64;
	uint32_t id;
};

/* The link of the TRACE frame of a stack lua_place.c made (a TRACE frame
 * read from a trace has link 0): its frames' pcs come from a snapshot. */
#define LUA_PLACED_MARK 1u

/* Which stack a (stack, trace, snapshot) placement made. */
struct place_ent {
	uint32_t idx, trace, snap, placed;
};

/* A name record, its text interned as a frame name (FRAME_OTHER). */
struct name_ent {
	uint64_t id;
	uint32_t frame;
};

struct lua {
	struct frames *fr;
	int current_lines;
	struct fname_ent *fnames;
	size_t nfnames, capfnames;
	struct htab fnames_h;
	struct vm_ent *vms;
	size_t nvms, capvms;
	struct lp_proto **protos;
	size_t nprotos, capprotos;
	struct htab protos_h;
	struct lstack_ent *stacks;
	size_t nstacks, capstacks;
	struct htab stacks_h;
	struct trace_ent *traces;
	size_t ntraces, captraces;
	struct htab traces_h;
	struct place_ent *places;
	size_t nplaces, capplaces;
	struct htab places_h;
	struct name_ent *names; /* name records: frame kind NAME's text */
	size_t nnames, capnames;
	struct htab names_h;
};

const struct lp_proto *lua_proto(const struct lua *l, uint64_t id);
/* The index of trace record id in l->traces, or -1. */
int64_t lua_trace_index(const struct lua *l, uint64_t id);
/* Appends a stack of depth frames (copied) with id 0; its index in *idx. */
int lua_push_stack(struct lua *l, const struct lp_lframe *frames, uint32_t depth,
		   uint32_t *idx);

#endif

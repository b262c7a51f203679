/*
 * luajit_protos.h - the Lua side of a trace, for the report, as
 * record/luajit_protos.c and its neighbours wrote it: each process's LuaJIT
 * VM (its interpreter's code range and fast-function names), the function
 * prototypes the recorder read, and the Lua stacks samples name.  Turns a
 * Lua stack into frame names: `NAME (CHUNK:LINE)` for Lua functions, with
 * NAME derived from the caller's call site as LuaJIT derives it
 * (lua_names.c), builtins by name, C functions by symbol.
 */
#ifndef LUAPROF_REPORT_LUAJIT_PROTOS_H
#define LUAPROF_REPORT_LUAJIT_PROTOS_H

#include <stdint.h>

#include "format/trace.h"
#include "report/frames.h"

/* In the name ids lua_stack_names() returns: where a VM entry from C was,
 * i.e. where that entry's native frames belong. */
#define LUA_ENTRY_MARK (UINT32_MAX - 3)

struct lua;

int lua_new(struct lua **out, struct frames *fr, int current_lines);
void lua_free(struct lua *l);

int lua_add_luajit(struct lua *l, const struct lp_luajit *rec);
int lua_add_proto(struct lua *l, const struct lp_proto *rec);
int lua_add_stack(struct lua *l, const struct lp_lua_stack *rec);
int lua_add_trace(struct lua *l, const struct lp_trace *rec);
int lua_add_trace_snaps(struct lua *l, const struct lp_trace_snaps *rec);
/* A name record: the text of the NAME frames that give its id (a heap
 * snapshot's path steps), escaped as every frame name is. */
int lua_add_name(struct lua *l, const struct lp_name *rec);

/* ---- lua_place.c: compiled code in the functions its trace inlined ---- */
/* How a sample's Lua stack was placed (lua_place()). */
enum lua_place {
	LUA_NOT_COMPILED,      /* not taken in a compiled trace */
	LUA_CALLED_OUT,        /* taken in a trace, in another JIT's code it
				  called (the walk stopped there, or left a
				  gap): not compiled code's time */
	LUA_PLACED,            /* in its snapshot's inlined frames and line */
	LUA_MARKED,            /* in inlined code the recorder could not tell
				  apart: the caller's frame, marked with the
				  functions it may be in */
	LUA_UNPLACED_NO_SNAPS, /* the trace file has no snapshots of it */
	LUA_UNPLACED_OUTSIDE,  /* no address in the trace's machine code */
	LUA_UNPLACED_SNAP,     /* its snapshot was not decoded by the recorder */
	LUA_UNPLACED_BASE,     /* the snapshot and the walked base frame differ */
	LUA_PLACE_MAX,
};
/* The Lua stack a sample ran: Lua stack idx itself, or, when it was
 * taken in a compiled trace, idx with the frames that trace inlined put
 * in at the snapshot the first of the sample's user stack addresses
 * (leaf first) that lies in the trace's code falls in.  *out gets the
 * stack's index, *how what happened.  0 or -ENOMEM. */
int lua_place(struct lua *l, uint32_t idx, const uint64_t *addrs, uint32_t naddrs,
	      uint32_t *out, enum lua_place *how);
/* The machine code of the trace Lua stack idx was taken in: 0, or
 * -ENOENT if it was not, or the trace is unknown. */
int lua_trace_code(const struct lua *l, uint32_t idx, uint64_t *start, uint64_t *end);

/* The trace of process pid whose machine code holds addr (the one read
 * last, as code is reused after a flush): its index, or -1. */
int64_t lua_trace_holding(const struct lua *l, uint32_t pid, uint64_t addr);
/* Index of Lua stack id, or UINT32_MAX when it was never defined. */
uint32_t lua_find_stack(const struct lua *l, uint64_t id);
/* Whether the Lua stack at idx was taken while a compiled trace ran. */
int lua_stack_in_trace(const struct lua *l, uint32_t idx);
/* Whether the leaf of the Lua stack at idx is a builtin or C function
 * whose code is the native frame just leafward of the VM's (FF or C,
 * pc 1): the same function twice, of which a stack keeps the Lua-level
 * frame. */
int lua_stack_builtin_code(const struct lua *l, uint32_t idx);
/* Whether the walk of the Lua stack at idx was cut ([truncated]). */
int lua_stack_cut(const struct lua *l, uint32_t idx);
/* Depth of the Lua stack at index idx. */
uint32_t lua_stack_depth(const struct lua *l, uint32_t idx);
/* Which LUAJIT record applies to pid now (a number that changes when a
 * later one does), UINT32_MAX for none: what names its builtins. */
uint32_t lua_vm_id(const struct lua *l, uint32_t pid);
/* The interpreter's code range of pid's VM; 0, or -ENOENT if unknown. */
int lua_vm_range(const struct lua *l, uint32_t pid, uint64_t *start,
		 uint64_t *end);
/* Names the frames of Lua stack idx for v's process into out[], leaf
 * first, LUA_ENTRY_MARK at VM entries; *n gets the count (at most the
 * depth). */
int lua_stack_names(struct lua *l, const struct maps_view *v, uint32_t idx, uint32_t *out,
		    uint32_t *n);

/* The name id of the innermost Lua function of Lua stack idx (as
 * lua_stack_names() names it), or UINT32_MAX when it has none. */
int lua_leaf_function(struct lua *l, uint32_t pid, uint32_t idx, uint32_t *id);

/* How a chunk is named in frames, as LuaJIT's lj_debug_shortname names it
 * in tracebacks: "abc.lua" for "@abc.lua" (the whole path: LuaJIT keeps
 * its last 56 bytes), "=stdin" as given, and for a chunk loaded from a
 * string, which LuaJIT names by its text, `[string "first line"]`, the
 * text cut at the first control character and to 45 bytes, "..." when
 * cut.  buf holds at least LUA_CHUNK_LABEL_MAX bytes; returns the label
 * (buf, or a pointer into chunkname). */
#define LUA_CHUNK_LABEL_MAX 64
const char *lua_chunk_label(const char *chunkname, char *buf, size_t len);

/* A Lua function frame of a Lua stack with the line it was running, for
 * line attribution (annotate.c).  Unknown functions and bytecode builtins
 * are left out. */
struct lua_line_frame {
	const struct lp_proto *pt;
	uint32_t line; /* the line running; 0 unknown */
	char name[128]; /* the function's name, as in stacks, without where */
};

/* The Lua function frames of Lua stack idx (sampled in pid), leaf first,
 * at most cap; returns how many. */
uint32_t lua_stack_lines(struct lua *l, uint32_t pid, uint32_t idx,
			 struct lua_line_frame *out, uint32_t cap);

/* ---- lua_names.c: LuaJIT's lj_debug_funcname(), offline --------------- */
/* The name of the function called at caller's instruction pc - 1 (pc as
 * the walker gives it: the position after the call): writes it to buf and
 * returns its kind ("global", "local", "field", "method", "upvalue",
 * "metamethod"), or NULL when it cannot be derived.  fr2: the VM uses
 * two-slot frames (GC64). */
const char *lua_call_name(const struct lp_proto *caller, uint32_t pc, int fr2,
			  char *buf, size_t len);

#endif

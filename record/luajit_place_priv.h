/*
 * luajit_place_priv.h - what the parts of compiled-code placement share:
 * the Lua functions a trace's code runs through, read from the target
 * (struct lj_pfn), the frames of a point on a path (struct lj_pnode, a
 * persistent stack: a call pushes a node, a return goes to its parent),
 * and the path itself: the instructions the recorder ran from one
 * snapshot to the next (struct lj_pel), each of which made some of the
 * IR between them.
 *
 *   snapshot i                                   snapshot i+1
 *   frames f|g, pc in g        path              frames f|h, pc in h
 *   [ g: ISGE .. MODVN RET1 ][ f: MOV .. CALL ][ h: FUNCF .. ISGE ]
 *      IR ref_i ..........................................  ref_i+1
 *      mcode mcofs_i .....................................  mcofs_i+1
 */
#ifndef LUAPROF_RECORD_LUAJIT_PLACE_PRIV_H
#define LUAPROF_RECORD_LUAJIT_PLACE_PRIV_H

#include <capstone/capstone.h>
#include <stdint.h>

#include "lib/lua_bc.h"
#include "record/luajit_ir.h"
#include "record/luajit_place.h"

#define LJ_PFN_MAX 64       /* functions one trace's paths may run through */
#define LJ_PFN_BC_MAX 65536 /* instructions of one function read */
#define LJ_PFN_K_MAX 4096   /* constants of one kind read */
#define LJ_PATH_STATES 4096 /* points a path search may visit */
#define LJ_PATH_MAX 1024    /* instructions in one path */

/* A Lua function read from the target, or a builtin a path passes
 * through (pcall: proto 0, no bytecode). */
struct lj_pfn {
	uint64_t proto, func; /* func 0 when not known */
	uint64_t id;          /* the trace file's proto id, 0 not asked yet */
	uint32_t nbc, nkn, nkgc;
	uint8_t framesize, idknown, ffid;
	uint32_t *bc;
	uint64_t *kn;         /* number constants, raw */
	uint64_t *kgc;        /* GC constants by index: LuaJIT's kgc[~i] */
};

/* A frame on a path: its function, its base slot, the frame it was
 * called from (-1 for the base frame) and where that one goes on. */
struct lj_pnode {
	int16_t fn;      /* index in the function table */
	int16_t parent;  /* node, -1 for the base frame */
	int32_t base;
	uint32_t retpc;  /* the parent's instruction after the call */
	uint8_t link;    /* LJ_FRAME_* it was called by: LUA, PCALL (by the
			  * builtin frame below), CONT (a metamethod), VARG
			  * (a vararg function's frame, moved up) */
	uint8_t nargs;   /* the arguments it was passed, 0xff not known */
};

/* One instruction of a path. */
struct lj_pel {
	int16_t node;
	uint8_t flags;
	uint32_t pc;
	uint32_t ins;
};
#define LJ_PEL_OPAQUE 0x1 /* a call into a function not known */
#define LJ_PEL_CALLEE 0x2 /* a call whose callee the path enters */
#define LJ_PEL_NOLUA  0x4 /* with OPAQUE: no Lua function the path does not
			   * know was inlined anywhere in the trace (its IR
			   * checks none), so a C call (CALLXS) matched to
			   * the call is the call's own: an FFI call */

/* The state placement keeps for a trace. */
struct lj_pstate {
	const struct lj_trace_view *tv;
	struct lj_pfn fns[LJ_PFN_MAX];
	uint32_t nfns;
	struct lj_pnode *nodes;
	size_t nnodes, capnodes;
	void *mcx; /* luajit_mcmatch.c's disassembler */
};

/* ---- luajit_path.c ------------------------------------------------------ */

/* The function table's entry for the prototype at proto (func, when not
 * 0, the closure), read now if new: its index, or -1. */
int lj_pfn_get(struct lj_pstate *ps, uint64_t proto, uint64_t func);
/* The same for builtin ffid at closure func. */
int lj_pfn_ff(struct lj_pstate *ps, uint64_t func, uint8_t ffid);

/* The chain of nodes for snapshot s's frames: the innermost's index, or
 * -1 if a frame is not a function the table can hold, or if the
 * innermost is a builtin and not ff_leaf. */
int lj_pnodes_of_snap(struct lj_pstate *ps, const struct lj_tsnap *s, int ff_leaf);

/* The instructions run from snapshot `from` to snapshot `to` (NULL: to
 * the end of the trace): 0 with *n elements in out (at most max), -1 if
 * no path joins them. */
int lj_path_find(struct lj_pstate *ps, const struct lj_tsnap *from,
		 const struct lj_tsnap *to, struct lj_pel *out, uint32_t max,
		 uint32_t *n);

/* ---- luajit_irmatch.c --------------------------------------------------- */

/* For each of the n IR instructions from ref first on, the index of the
 * path element that made it, in el_of (-1: no code, not matched); 0, or
 * -1 if the path cannot account for them. */
int lj_irmatch(struct lj_pstate *ps, uint32_t first, uint32_t n,
	       const struct lj_pel *path, uint32_t npath, int32_t *el_of);

/* ---- luajit_mcmatch.c, luajit_mcmatch_x86.c, luajit_mcmatch_arm64.c ---- */

/* One machine instruction of a trace: its offset and length. */
struct lj_mins {
	uint32_t ofs;
	uint16_t len;
	int32_t irx; /* index of the IR instruction that made it, -1 none */
};

/* Decodes the trace's code from ofs to end and matches each machine
 * instruction to one of the n IR instructions from ref first on (irx is
 * an index from 0): 0 with *nout instructions in out (grown), or -1 if
 * the code does not decode or too little of it matches. */
int lj_mcmatch(struct lj_pstate *ps, uint32_t ofs, uint32_t end, uint32_t first,
	       uint32_t n, struct lj_mins **out, size_t *cap, uint32_t *nout);
void lj_mcmatch_free(struct lj_pstate *ps);
/* Whether lj_mcmatch() reads code of this ELF machine (0: the host's). */
int lj_mcmatch_supports(unsigned machine);

/* One decoded machine instruction, what matching needs of it: LuaJIT's
 * register ids (IRIns.r: x86-64 GPRs 0-15 and XMMs 16-31; arm64 x0-x31
 * and d0-d31 as 32-63) it writes and reads, a bit each. */
struct lj_mc {
	uint64_t wr, rd;
	uint8_t exit;      /* a branch out of the trace */
	uint8_t cmp, call, store;
	char mn[16];
};

/* What one instruction set's code says of those ties. */
struct lj_mc_isa {
	cs_arch arch;
	cs_mode mode;
	int (*rid_of)(unsigned reg); /* a capstone register's LuaJIT id, -1 none */
	/* The rest of m (exit, cmp, call, store; wr as it must be), its
	 * mnemonic and registers set: in is decoded with detail. */
	void (*classify)(const cs_insn *in, const struct lj_trace_view *tv, struct lj_mc *m);
	int (*same_op)(const struct lj_mc *m, uint8_t o); /* m's operation is IR op o's */
};
extern const struct lj_mc_isa lj_mc_x86_64, lj_mc_arm64;
/* For the instruction sets' files: s starts with p. */
int lj_mc_starts(const char *s, const char *p);

/* ---- helpers ------------------------------------------------------------ */

/* The IR instruction at ref (nk <= ref < nins). */
static inline struct lj_irins lj_ir_at(const struct lj_trace_view *tv, uint32_t ref)
{
	return lj_ir_decode(tv->ir + (size_t)(ref - tv->nk) * LJ_IRINS_SIZE);
}

/* A 64-bit constant's payload, in the slot after it. */
static inline uint64_t lj_ir_k64(const struct lj_trace_view *tv, uint32_t ref)
{
	const uint8_t *p = tv->ir + (size_t)(ref + 1 - tv->nk) * LJ_IRINS_SIZE;
	uint64_t v;

	__builtin_memcpy(&v, p, 8);
	return v;
}

#endif

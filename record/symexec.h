/*
 * symexec.h - what a piece of machine code does with memory, read without
 * running it: the loads, stores, comparisons and calls it makes, each
 * address and value written as an expression of what the code was given
 * (its arguments, its stack pointer, what its calls returned, what it
 * loaded).  luajit_code.c reads a stripped LuaJIT's struct offsets from
 * such facts: "lua_pushthread compares its argument L with the load at
 * offset 192 of the load at offset 16 of L" is L->glref at 16 and
 * g->mainthref at 192, whatever registers and instructions a compiler
 * chose.
 *
 * A value is a term plus a scaled index plus a constant:
 *
 *   value = term + idx * scale + off        (term, idx: node ids, 0 = none)
 *
 *   node  ARG(n)          the n-th integer argument at entry
 *         SP              the stack pointer at entry
 *         RET(site)       what the call at `site` returned
 *         LOAD(addr, w)   w bytes loaded from the value addr
 *         INVAR(n)        a register the caller declares fixed (the
 *                         interpreter's DISPATCH, BASE, PC)
 *         ANY             an index whose value is not known: a table
 *                         read at an unknown index still has a known
 *                         base ("LOAD(G+4008 + ANY*8)", a dispatch)
 *
 * Nodes are interned, so equal expressions have equal ids.  A register
 * whose value is none of these (a product of two terms, a flag) is
 * unknown, and so is what is computed from it.  Widths are not tracked
 * on registers: a 32-bit move of a 64-bit term is the same term, which is
 * what LuaJIT's 32-bit references are.
 *
 * The walk (sx_run) follows every path from an entry point (each
 * instruction at most twice, in the state of the first paths to reach
 * it), direct jumps, switch tables and, to a depth, direct calls and
 * calls through a constant, inside one code image; it stops at returns,
 * other indirect jumps and after a budget of instructions.  Callees are
 * walked after their caller, shallow before deep (an error path deep in
 * the calls must not use up the budget before the caller's own code), in
 * frames of their own: every fact says which frame it is from.  The sweep (sx_sweep) reads a range linearly,
 * for the interpreter, whose code is not functions but handlers reached
 * through a table, with the registers the interpreter keeps fixed reset
 * at every instruction.  The instruction sets are backends
 * (symexec_x86.c, symexec_arm64.c), chosen by the ELF object's machine,
 * never by the one luaprof was built for; this file and the facts are
 * the same for all.
 */
#ifndef LUAPROF_RECORD_SYMEXEC_H
#define LUAPROF_RECORD_SYMEXEC_H

#include <stddef.h>
#include <stdint.h>

enum sx_node_kind {
	SXN_ARG = 1,
	SXN_SP,
	SXN_RET,
	SXN_LOAD,
	SXN_INVAR,
	SXN_ANY,
};

struct sx_val {
	uint32_t term;  /* node id, 0: none (the value is a constant) */
	uint32_t idx;   /* node id of a scaled index, 0: none */
	int64_t scale;  /* of idx */
	int64_t off;
	uint8_t known;  /* 0: unknown, the rest is meaningless */
};

struct sx_node {
	uint8_t kind;  /* enum sx_node_kind */
	uint8_t width; /* LOAD: bytes loaded */
	uint16_t n;    /* ARG, INVAR: which */
	uint64_t site; /* RET: the call's address */
	struct sx_val addr; /* LOAD */
};

enum sx_fact_kind {
	SXF_LOAD = 1, /* a = address, b = the value (a LOAD node) */
	SXF_STORE,    /* a = address, b = the value stored */
	SXF_CMP,      /* a and b compared (cmp, test of two values) */
	SXF_SUB,      /* a - b computed (the result is unknown) */
	SXF_CALL,     /* a = target, args[] the argument registers */
	SXF_CALLI,    /* an indirect call: a = the target's value, or for a
		       * call through memory b = the address; args[] */
	SXF_JMPI,     /* an indirect jump, as SXF_CALLI */
	SXF_RET,      /* a = the value returned */
	SXF_ENTER,    /* a followed call's callee is walked: a = its SP at
		       * entry, b = its address, pc = the call's */
	SXF_JMP,      /* a direct jump: a = target, args[] the argument
		       * registers (for a tail call) */
};

#define SX_NARGS 6

struct sx_fact {
	uint8_t kind;   /* enum sx_fact_kind */
	uint8_t width;  /* LOAD, STORE: bytes; CMP, SUB: operand bytes */
	uint8_t depth;  /* calls followed to get here, 0 at the entry */
	uint8_t mem;    /* CALLI, JMPI: through memory (b is the address) */
	uint16_t frame; /* the walk of one function: 0 the entry's; ENTER
			 * starts frame `frame`, called from `parent` */
	uint16_t parent;
	uint64_t pc;    /* ENTER: the call's address */
	struct sx_val a, b;
	struct sx_val args[SX_NARGS]; /* CALL, CALLI */
};

/* A code image: the bytes of an object's executable segments by virtual
 * address, and where the walk may go.  plt_start..plt_end: stubs that
 * lead out of the object, never followed. */
struct sx_image {
	const uint8_t *code;
	uint64_t start, end;      /* vaddrs of code[0] and past the last */
	uint64_t plt_start, plt_end;
	/* Reads the object's other bytes (switch tables): 0 or -errno;
	 * pointer() reads an 8-byte pointer with its relocation. */
	int (*read)(const void *obj, uint64_t vaddr, void *buf, size_t len);
	int (*pointer)(const void *obj, uint64_t vaddr, uint64_t *out);
	const void *obj;
};

struct sx_ctx;
struct sx_isa;

/* A context that collects facts over several walks of one image; nodes
 * are shared, so ids from one walk compare with another's. */
struct sx_ctx *sx_new(const struct sx_image *img, const struct sx_isa *isa);
void sx_free(struct sx_ctx *c);
/* Forgets the facts (not the nodes) before another walk. */
void sx_clear_facts(struct sx_ctx *c);

/*
 * Walks from `entry` with integer arguments args[0..nargs) (unknown for
 * the rest: NULL args means ARG(i) for each).  Direct calls and calls
 * through a constant are followed `depth` levels deep, in the callee's own
 * frame, with the arguments the caller set; their facts carry their depth.
 * At most `budget` instructions in all.  0, or -EINVAL if the entry is
 * outside the image, -ENOMEM.
 */
int sx_run(struct sx_ctx *c, uint64_t entry, const struct sx_val *args, int nargs,
	   unsigned depth, unsigned budget);
/* Reads [start, end) linearly, with register invar_regs[i] set to
 * invar_vals[i] before each instruction (ISA register numbers). */
int sx_sweep(struct sx_ctx *c, uint64_t start, uint64_t end, const int *invar_regs,
	     const struct sx_val *invar_vals, int ninvar);

const struct sx_fact *sx_facts(const struct sx_ctx *c, size_t *n);
const struct sx_node *sx_node(const struct sx_ctx *c, uint32_t id);
/* Instructions read, and whether a walk ran out of budget. */
unsigned sx_steps(const struct sx_ctx *c);

/* ---- values ---- */
struct sx_val sx_const(int64_t v);
struct sx_val sx_unknown(void);
/* term + off, for a node id */
struct sx_val sx_term(uint32_t term, int64_t off);
uint32_t sx_intern(struct sx_ctx *c, const struct sx_node *n);
uint32_t sx_arg(struct sx_ctx *c, unsigned n);
uint32_t sx_invar(struct sx_ctx *c, unsigned n);
uint32_t sx_any(struct sx_ctx *c);
int sx_val_eq(const struct sx_val *a, const struct sx_val *b);
/* Whether v is exactly term + off (no index); *off gets off. */
int sx_is_term(const struct sx_val *v, uint32_t term, int64_t *off);
/* Whether v is a constant; *k gets it. */
int sx_is_const(const struct sx_val *v, int64_t *k);
/* If v is LOAD(addr, w) (+ 0), the node; else NULL. */
const struct sx_node *sx_load_of(const struct sx_ctx *c, const struct sx_val *v);
/* Prints v for debugging ("LOAD(ARG0+16,8)+4008"). */
void sx_val_str(const struct sx_ctx *c, const struct sx_val *v, char *buf, size_t len);

/* ---- what a backend sees (symexec.c's services) ---- */
#define SX_MAX_REGS 40
#define SX_STACK_SLOTS 48

struct sx_state {
	struct sx_val reg[SX_MAX_REGS];
	struct {
		int64_t off; /* from SP at the walk's entry */
		uint8_t width;
		struct sx_val v;
	} slot[SX_STACK_SLOTS];
	unsigned nslots;
	uint32_t sp_term; /* SP node of this frame */
	uint8_t depth;
	uint16_t frame;
	int64_t bound;    /* the last constant compared with: a switch's */
};

/* How an instruction continues. */
struct sx_next {
	uint8_t fall;      /* to the next instruction */
	uint8_t jump;      /* to target (as well, for a conditional one) */
	uint8_t call;      /* a direct call to target: follow it maybe */
	uint8_t stop;      /* ret, indirect jump, undecodable */
	uint8_t indirect;  /* an indirect jump to ind: maybe a switch */
	uint64_t target;
	uint64_t next_pc;
	struct sx_val ind;
};

struct sx_isa {
	const char *name;
	uint16_t machine;           /* the ELF e_machine it reads */
	int sp_reg;                 /* the stack pointer's register number */
	int call_push;              /* bytes a call pushes below the caller's
				     * SP: the return address on x86-64, none
				     * where it goes to a link register */
	int insn_align;             /* instructions start at multiples of it:
				     * where a sweep resumes after bytes it
				     * cannot decode */
	/* Reads the instruction at pc, updates s, records facts and says
	 * where to go.  0, or -EINVAL for bytes it cannot decode. */
	int (*step)(struct sx_ctx *c, struct sx_state *s, uint64_t pc,
		    struct sx_next *next);
	/* After a call returns: clobbers what the ABI lets a callee clobber
	 * and sets the return register to ret. */
	void (*after_call)(struct sx_state *s, struct sx_val ret);
	/* The argument registers of the ABI, in order. */
	int arg_regs[SX_NARGS];
	void *(*open)(void);        /* the decoder's handle */
	void (*close)(void *h);
};

extern const struct sx_isa sx_isa_x86_64;
extern const struct sx_isa sx_isa_arm64;

/* The backend for an ELF e_machine (EM_X86_64, EM_AARCH64), or NULL. */
const struct sx_isa *sx_isa_for(uint16_t machine);

/* Backend services. */
void *sx_isa_handle(struct sx_ctx *c);
const struct sx_image *sx_img(const struct sx_ctx *c);
void sx_fact_add(struct sx_ctx *c, const struct sx_state *s, uint8_t kind, uint64_t pc,
		 uint8_t width, const struct sx_val *a, const struct sx_val *b);
/* A CALL/CALLI/JMPI fact with the argument registers of s. */
void sx_fact_call(struct sx_ctx *c, const struct sx_state *s, uint8_t kind, uint64_t pc,
		  uint8_t mem, const struct sx_val *a, const struct sx_val *b);
/* The value loaded from addr: a stack slot written earlier in this frame,
 * else LOAD(addr, width); records the LOAD fact. */
struct sx_val sx_do_load(struct sx_ctx *c, struct sx_state *s, uint64_t pc,
			 const struct sx_val *addr, uint8_t width);
/* A store: records the fact and, for the frame's own stack, the slot. */
void sx_do_store(struct sx_ctx *c, struct sx_state *s, uint64_t pc,
		 const struct sx_val *addr, uint8_t width, const struct sx_val *v);
/* Sums and scales of values; unknown when the result is not a value. */
struct sx_val sx_add(const struct sx_val *a, const struct sx_val *b);
struct sx_val sx_neg(const struct sx_val *a);
struct sx_val sx_mul(const struct sx_val *a, int64_t k);
/* The image's bytes at pc, and how many remain. */
const uint8_t *sx_code_at(const struct sx_ctx *c, uint64_t pc, size_t *left);

#endif

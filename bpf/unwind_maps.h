/*
 * unwind_maps.h - the unwind tables the recorder computes from each object's
 * call frame information (.eh_frame, else .debug_frame) and the BPF maps
 * they are loaded into, shared by bpf/unwind_native.bpf.h (the walker),
 * record/unwind_table.c (the builder) and record/unwind.c (the loader).
 * Fixed-width fields, size-asserted: both sides read the same bytes.
 *
 * Four maps hold everything, and bound its memory up front:
 *
 *   unwind_procs (hash, tgid ->)      unwind_objs (array)   unwind_rows (array, mmap)
 *   +--------------------------+      +---------------+     +-----------------------+
 *   | nmaps                    |      | first  count  | --> | pc cfa_off type rbp   |
 *   | maps[i]: start end bias  | ---> | base shift    |     | pc cfa_off type rbp   |
 *   |          obj kind        | obj  | bucket nbucket|     | ... (sorted by pc     |
 *   +--------------------------+      +---------------+     |  within an object)    |
 *     sorted by start, one per            |                 +-----------------------+
 *     executable mapping                  v                        ^
 *                                 unwind_buckets (array, mmap)     |
 *                                 +--------------------------+     |
 *                                 | bucket k: lo hi          | ----+
 *                                 | bucket k + 1: lo hi      |  narrows the search
 *                                 +--------------------------+
 *
 * The bucket index exists for speed: a row search over a whole object
 * touches ~16 cold cache lines per frame, and a sample walks ~20 frames.
 * Bucket k covers vaddrs [base + (k << shift), base + ((k + 1) << shift));
 * its lo counts the object's rows whose pc is at or below the bucket's
 * start and its hi those at or below the next bucket's start, so the row
 * covering any vaddr in bucket k lies among rows [lo - 1, hi): a handful,
 * found in two or three steps.  (Both bounds in one entry: an array map's
 * values are 8-byte aligned anyway, and one lookup is one cache line.)
 * An object without buckets (nbuckets 0, the index was full) is searched
 * whole.
 *
 * An object (an ELF file, identified by device and inode, or the vDSO) has
 * its rows loaded once into the shared row array however many processes
 * map it: the nginx master and its workers share every object.  A process
 * owns only its list of executable mappings, each pointing at an object.
 *
 * A fifth map, unwind_files (hash), names each loaded object by its file
 * (device as the kernel numbers it, inode, size: bpf/file_id.h) with the
 * file offsets of its executable segment: a walk that meets code in no
 * mapping of its process's list asks the kernel which file holds it (the
 * executable's code from mm->start_code, else bpf_find_vma()), and walks
 * on with that object's rows.  The list is read when the recorder hears
 * of an exec, before the dynamic loader maps the libraries, and a
 * launched program runs in them within the millisecond; until the
 * recorder reads the mappings again, their frames would end the walk.
 *
 * A row covers the object's addresses (ELF virtual addresses, "vaddr")
 * from its pc up to the next row's pc.  For a pc inside a mapping,
 * vaddr = pc - bias.  cfa_type packs the rule's kind (low 4 bits) and an
 * operand, aux (high 4 bits: LP_CFA_KIND, LP_CFA_AUX).  In each row:
 *
 *   CFA  = rsp + cfa_off   (LP_CFA_RSP)          the caller's rsp: the
 *        = rbp + cfa_off   (LP_CFA_RBP)          return address is at
 *        = rsp + 8 + (((pc & 15) >= cfa_off) ? 8 : 0)   CFA - 8
 *                          (LP_CFA_PLT: the expression every lazy-binding
 *                           .plt section shares)
 *        = *(rsp + (s16)cfa_off) + 8 * aux   (LP_CFA_DEREF_RSP)
 *        = *(rbp + (s16)cfa_off) + 8 * aux   (LP_CFA_DEREF_RBP)
 *                          (a realigned frame that saved the old stack
 *                           pointer: GCC's DRAP, OpenSSL's assembly)
 *        = reg[aux] + cfa_off   (LP_CFA_REG: aux a DWARF register
 *                           number; only the interrupted frame has its
 *                           registers, as in a DRAP prologue, CFA = r10)
 *   rbp  = *(CFA + 8 * rbp_off) if rbp_off < 0; unchanged if 0;
 *          *rbp if LP_RBP_AT_RBP (DRAP: "rbp saved at rbp + 0");
 *          *rsp if LP_RBP_AT_SP (arm64's large frames);
 *          unknown if LP_RBP_UNKNOWN.
 *
 * GCC's DRAP frame, for example, as its prologue leaves it:
 *
 *   lea 0x8(%rsp),%r10      CFA = r10           +----------------+ <- CFA
 *   and $-64,%rsp                               | return address |
 *   push -0x8(%r10)                             +~~~~~~~~~~~~~~~~+ (align)
 *   push %rbp                                   | return address | copy
 *   mov %rsp,%rbp           rbp at [rbp]        | caller's rbp   | <- rbp
 *   push %r15 ... %r12                          | r15 .. r12      |
 *   push %r10               CFA = *(rbp - 40)   | r10 = CFA       | rbp-40
 *
 * LP_CFA_SIGNAL marks a signal trampoline (glibc's __restore_rt, arm64's
 * vDSO __kernel_rt_sigreturn): the stack pointer points at what the
 * kernel saved, whose registers give the interrupted pc, stack pointer
 * and frame pointer (bpf/arch_*.bpf.h's LP_SIGFRAME_*).  LP_CFA_END marks the outermost frame (_start, a thread's
 * clone): the return address is undefined.  LP_CFA_GAP covers addresses no
 * FDE describes and LP_CFA_UNSUPPORTED a rule the walker cannot follow
 * (an expression of another form, a register that is not saved in
 * memory): the walk stops at both.
 *
 * On arm64 rsp and rbp are sp and x29, and the return address is where
 * an LP_CFA_RSP or LP_CFA_RBP row's aux says (LP_RA_* below):
 *
 *   stp x29, x30, [sp, #-32]!   CFA = sp + 32       +----------------+ <- CFA
 *   mov x29, sp                 CFA = x29 + 32      | ...            |
 *                               x29 at CFA - 32     | x30 (ra)       | aux 14:
 *                               x30 at CFA - 24     | x29 (caller's) | rbp_off + 1
 *                                                   +----------------+ <- sp, x29
 */
#ifndef LUAPROF_BPF_UNWIND_MAPS_H
#define LUAPROF_BPF_UNWIND_MAPS_H

#ifndef __VMLINUX_H__
#include <linux/types.h>
#endif
#include "bpf/file_id.h"

/* Map sizes: the memory the unwinder may ever use is fixed at load. */
#define LP_UNWIND_MAX_ROWS (1u << 20)  /* 8 MiB of rows */
#define LP_UNWIND_MAX_OBJS 4096        /* 96 KiB of object descriptors */
#define LP_UNWIND_MAX_PROCS 1024       /* 1024 x 8 KiB of mapping lists */
#define LP_UNWIND_MAX_MAPS 256         /* executable mappings per process */
#define LP_UNWIND_MAX_BUCKETS (1u << 18) /* 2 MiB of bucket index */
#define LP_UNWIND_BUCKET_SHIFT 8       /* 256-byte buckets, or wider for an
					  object of more than MAX_OBJ_BUCKETS */
#define LP_UNWIND_MAX_OBJ_BUCKETS (1u << 16)
/* Binary search steps that cover the largest map and object. */
#define LP_UNWIND_MAP_STEPS 9          /* 2^9 > LP_UNWIND_MAX_MAPS */
#define LP_UNWIND_ROW_STEPS 21         /* 2^21 > LP_UNWIND_MAX_ROWS */

enum lp_cfa_type {
	LP_CFA_GAP = 0,         /* no FDE covers this address */
	LP_CFA_RSP = 1,
	LP_CFA_RBP = 2,
	LP_CFA_PLT = 3,         /* cfa_off holds the threshold (11 or 10) */
	LP_CFA_SIGNAL = 4,      /* a signal trampoline: registers the kernel saved */
	LP_CFA_END = 5,         /* outermost frame: return address undefined */
	LP_CFA_UNSUPPORTED = 6, /* a DWARF expression, or an odd rule */
	LP_CFA_DEREF_RSP = 7,   /* *(rsp + (s16)cfa_off) + 8 * aux */
	LP_CFA_DEREF_RBP = 8,   /* *(rbp + (s16)cfa_off) + 8 * aux */
	LP_CFA_REG = 9,         /* DWARF register aux + cfa_off, frame 0 only */
};

#define LP_CFA_KIND(t) ((t) & 15)
#define LP_CFA_AUX(t) (((t) >> 4) & 15)
#define LP_CFA_TYPE(kind, aux) ((kind) | (aux) << 4)

/*
 * Where the return address is, as the aux of an LP_CFA_RSP or LP_CFA_RBP
 * row of an instruction set whose calls leave it in a link register
 * (arm64's x30).  x86 rows have aux 0: at CFA - 8.
 */
#define LP_RA_CFA_M8 0        /* at CFA - 8 */
			      /* 1..12: at CFA - 8 * (aux + 1) */
#define LP_RA_SP 13           /* at [sp + 8 * rbp_off] of an LP_CFA_RSP
				 row whose frame pointer is unchanged: x30
				 above the registers saved at the frame's
				 base, or at it (str x30, [sp, #-N]!) */
#define LP_RA_FRAME_RECORD 14 /* beside the saved frame pointer: at
				 CFA + 8 * (rbp_off + 1), or [sp + 8]
				 with LP_RBP_AT_SP */
#define LP_RA_LINK 15         /* in the link register: frame 0 only */

#define LP_RBP_UNKNOWN 127 /* rbp_off: rbp cannot be recovered */
#define LP_RBP_AT_RBP 126  /* rbp_off: the caller's rbp is at [rbp] */
#define LP_RBP_AT_SP 125   /* rbp_off: at the base of an LP_CFA_RSP row's
			      frame, [sp], too far from the CFA for words
			      (arm64's sub sp, sp, #N; stp x29, x30, [sp]) */

struct lp_unwind_row {
	__u32 pc;      /* first vaddr covered (objects above 4 GiB are refused) */
	__u16 cfa_off; /* bytes */
	__u8 cfa_type; /* enum lp_cfa_type | aux << 4 */
	__s8 rbp_off;  /* in 8-byte words from the CFA; 0: unchanged */
};

/* Rows [first, first + count) of unwind_rows belong to one object, and
 * entries [bucket, bucket + nbuckets) of unwind_buckets index them. */
struct lp_unwind_obj {
	__u32 first;
	__u32 count;
	__u32 base;     /* vaddr where bucket 0 starts */
	__u32 shift;    /* log2 of a bucket's size in bytes */
	__u32 bucket;   /* first entry in unwind_buckets */
	__u32 nbuckets; /* 0: no index, search all rows */
};

/* Bucket k of an object: its rows [lo, hi) hold the search's answer. */
struct lp_unwind_bucket {
	__u32 lo; /* rows whose pc <= the bucket's start */
	__u32 hi; /* rows whose pc <= the next bucket's start */
};

enum lp_unwind_map_kind {
	LP_UMAP_ROWS = 1, /* obj names a loaded table */
	LP_UMAP_FP = 2,   /* a file without usable CFI: follow rbp instead */
	LP_UMAP_JIT = 3,  /* anonymous executable memory (JIT code): stop */
	/* [uprobes]: the kernel's uretprobe trampoline, which stands for a
	 * return address the task's return instances keep */
	LP_UMAP_URETPROBE = 4,
};

/* One executable mapping: for start <= pc < end, vaddr = pc - bias. */
struct lp_unwind_map {
	__u64 start;
	__u64 end;
	__u64 bias;
	__u32 obj;  /* index into unwind_objs when kind is LP_UMAP_ROWS */
	__u32 kind; /* enum lp_unwind_map_kind */
};

/* unwind_files, by struct lp_file_id (bpf/file_id.h): a loaded object's
 * executable segment: file offsets [off_lo, off_hi) (off_lo a page),
 * at vaddr = offset + delta; the segment starts at vaddr. */
struct lp_unwind_file {
	__u32 obj;
	__u32 pad;
	__u64 off_lo, off_hi;
	__s64 delta;
	__u64 vaddr;
};

/* gen names the list's contents: the recorder numbers each list it
 * publishes, never twice in a session, and a forked child's copy keeps
 * its parent's number, as it keeps its contents.  The walker's cache of
 * what it found at each pc (unwind_native.bpf.h) trusts an entry only
 * under the same number. */
struct lp_unwind_proc {
	__u32 nmaps;
	__u32 gen;
	struct lp_unwind_map maps[LP_UNWIND_MAX_MAPS]; /* sorted by start */
};

/*
 * Why a native walk stopped, in lp_event_sample.ustack_stop.  Only
 * LP_USTOP_END is a complete stack; the others say where a stack was cut.
 */
enum lp_ustop {
	LP_USTOP_FALLBACK = 0,  /* not ours: bpf_get_stack() frame pointers */
	LP_USTOP_END = 1,       /* reached the outermost frame */
	LP_USTOP_DEPTH = 2,     /* LP_MAX_USTACK frames */
	LP_USTOP_UNMAPPED = 3,  /* pc in no known executable mapping */
	LP_USTOP_JIT = 4,       /* pc in anonymous code (a JIT trace) */
	LP_USTOP_NO_ROW = 5,    /* pc in a gap of the object's CFI */
	LP_USTOP_UNSUPPORTED = 6, /* a CFA rule we do not evaluate */
	LP_USTOP_READ = 7,      /* reading the target's stack failed */
	LP_USTOP_BAD_FRAME = 8, /* the stack pointer did not move up */
	LP_USTOP_NO_REGS = 9,   /* no user registers to start from */
	LP_USTOP_NO_TABLE = 10, /* the process's mappings are not loaded yet:
				   the leaf only */
	LP_USTOP_MAX = 11,
};

/*
 * What the walker found at a pc, cached per CPU (unwind_row_caches): the
 * mapping's kind and, for a table's, the row.  A sample's ~20 frames are
 * mostly return addresses the last samples passed too (the same call
 * sites, again and again), and a hit costs one cache line instead of the
 * mapping search, the object, its bucket and two or three rows: some ten
 * lines scattered over megabytes of maps.  An entry holds only for the
 * mapping list it was found in (lp_unwind_proc.gen): an object's rows
 * never change once published, a process's list does, and then gets a
 * new number.
 *
 * Two caches of the same entries, asked in this order:
 *
 *   memo[last]   the last walk's frames, by depth   memo[last ^ 1]: this
 *   +----+----+----+----+----+--                   walk's, written as it
 *   | f0 | f1 | f2 | f3 | f4 |  ...                 goes; last flips at
 *   +----+----+----+----+----+--                   the end of the walk
 *   e[]          direct-mapped by the looked-up pc (a hash of it)
 *
 * (Frame n is at n % 64: deeper frames wrap.)
 *
 * The memo is for the lines a walk touches: consecutive samples share
 * most of their frames (the root side of the stack), so frame n is most
 * often the last walk's frame n + off, where off is what the leaf gained
 * or lost.  The walk keeps the off it found (and looks one frame either
 * side of it); an entry of e[] keeps the depth its pc was last seen at,
 * so a frame the memo missed but e[] found re-aligns off when the memo
 * holds that pc there.  The memo's frames lie in a few consecutive lines,
 * where e[]'s lie one per line across 24 KiB: at 99 Hz a CPU runs 10 ms
 * of other code between two samples and each of those lines is a cache
 * miss, 0.15 us a frame here (nginx, 18.6 frames a sample).  Whatever
 * entry either holds is true for its pc under its gen, however old.
 */
#define LP_UNWIND_CACHE_BITS 10 /* 1024 entries, 24 KiB per CPU */
#define LP_UNWIND_MEMO 64       /* frames of a walk kept (deeper ones wrap) */

struct lp_unwind_cached {
	__u64 pc;   /* the address looked up (pc, or pc - 1 after a call) */
	__u32 gen;  /* lp_unwind_proc.gen of the list it was found in; 0 none */
	__u8 kind;  /* enum lp_unwind_map_kind */
	__u8 depth; /* in e[]: the frame (% LP_UNWIND_MEMO) it was last found for */
	__u16 pad;
	struct lp_unwind_row row; /* for LP_UMAP_ROWS */
};

struct lp_unwind_row_cache {
	/* For record -v, per CPU: an atomic add to a counter both CPUs
	 * write moves its line between them, 40 ns a sample here. */
	__u64 stops[LP_USTOP_MAX]; /* walks by how they stopped */
	__u64 frames;       /* frames walked */
	__u64 hits, misses; /* lookups */
	__u64 memo_hits;    /* those of hits the memo answered */
	__u32 memo_last;    /* the memo the last walk wrote: 0 or 1 */
	__u32 pad;
	struct lp_unwind_cached memo[2][LP_UNWIND_MEMO];
	struct lp_unwind_cached e[1 << LP_UNWIND_CACHE_BITS];
};

_Static_assert(sizeof(struct lp_unwind_row) == 8, "lp_unwind_row layout");
_Static_assert(sizeof(struct lp_unwind_obj) == 24, "lp_unwind_obj layout");
_Static_assert(sizeof(struct lp_unwind_bucket) == 8, "lp_unwind_bucket layout");
_Static_assert(sizeof(struct lp_unwind_map) == 32, "lp_unwind_map layout");
_Static_assert(sizeof(struct lp_unwind_file) == 40, "lp_unwind_file layout");
_Static_assert((LP_UNWIND_MAX_MAPS & (LP_UNWIND_MAX_MAPS - 1)) == 0,
	       "LP_UNWIND_MAX_MAPS a power of two (unwind_map_kind()'s mask)");
_Static_assert(sizeof(struct lp_unwind_proc) == 8 + 32 * LP_UNWIND_MAX_MAPS,
	       "lp_unwind_proc layout");
_Static_assert(sizeof(struct lp_unwind_cached) == 24, "lp_unwind_cached layout");
_Static_assert((LP_UNWIND_MEMO & (LP_UNWIND_MEMO - 1)) == 0, "LP_UNWIND_MEMO a power of 2");
_Static_assert(sizeof(struct lp_unwind_row_cache) ==
		       8 * (LP_USTOP_MAX + 1) + 32 + 24 * 2 * LP_UNWIND_MEMO +
			       (24 << LP_UNWIND_CACHE_BITS),
	       "lp_unwind_row_cache layout");

#endif

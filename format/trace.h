/*
 * trace.h - the luaprof trace format, version 1, and the one public header
 * of format/: the grammar, its constants, the list of record types
 * (LP_RECDEF), the decoded (in-memory) form of every record, and the
 * library's calls: the writer (writer.c), the reader (reader.c, decode.c),
 * the names of codecs and record types (names.c), the identity of an ELF
 * file as an object record states it (objid.c) and the private files
 * traces and reports are written to (private.c).  format/ is the trace
 * format and nothing else: what record/ and report/ share besides it
 * (growable arrays, the hash table, ELF symbols, DWARF lines) is in lib/,
 * which may use these types; format/ never includes lib/.
 *
 * A trace is what `luaprof record` leaves behind and all `luaprof report`
 * ever reads, so it must survive a recorder killed at any instant and be
 * readable on another machine.  It is therefore a header written once,
 * followed by a stream of self-contained, checksummed chunks; nothing is
 * ever back-patched.  A footer record closes a complete trace; its absence
 * tells the reader the trace was cut short, not that it is unreadable.
 * docs/format.md is the normative specification; this grammar is its summary.
 *
 *   trace      := header chunk*
 *   header     := magic[8] "LUAPROF\0"
 *                 version:u16le         (= 1)
 *                 header_size:u16le     (= 24; bytes from magic to crc)
 *                 incompat:u32le        (feature bits a reader must know:
 *                                        0x1 STACK_BRANCH, stacks may be
 *                                        stack_branch records; 0x2
 *                                        SAMPLE_US, samples may be
 *                                        sample_us records)
 *                 compat:u32le          (feature bits a reader may ignore:
 *                                        0x1 CHUNK_SEQ, every records chunk
 *                                        starts with a chunk record)
 *                 crc:u32le             (CRC-32 of the 20 bytes before it)
 *   chunk      := magic[4] "LPCK"
 *                 type:u8               (1 = records; others are skipped)
 *                 codec:u8              (0 none, 1 lz4 block, 2 zlib)
 *                 flags:u16le           (0)
 *                 raw_size:u32le        (payload size once decompressed)
 *                 stored_size:u32le     (payload size in the file)
 *                 crc:u32le             (CRC-32 of type..stored_size and
 *                                        the stored payload)
 *                 payload[stored_size]
 *   payload    := chunk_rec? record*    (after decompression; chunk_rec
 *                                        when the header has CHUNK_SEQ)
 *   record     := type:uv length:uv body[length]
 *
 *   uv = unsigned LEB128 varint (at most 10 bytes), sv = zigzag then uv,
 *   str = length:uv bytes[length] (UTF-8 or raw bytes, not terminated).
 *
 *   meta       := version:str cmdline:str target:str hostname:str kernel:str
 *                 clock:str rate_hz:uv start_mono_ns:uv start_real_ns:uv
 *                 flags:uv
 *   process    := pid:uv ppid:uv time_ns:uv flags:uv comm:str exe:str
 *   exit       := pid:uv time_ns:uv
 *   maps       := pid:uv time_ns:uv flags:uv count:uv mapping[count]
 *                 object:uv[count]     (appended: each mapping's object id,
 *                                       0 none; absent in older traces)
 *   mapping    := start:uv size:uv pgoff:uv prot:uv inode:uv path:str
 *   stack      := id:uv kind:uv depth:uv addr[depth]   (leaf first)
 *   addr       := first: value:uv; then: (value - previous):sv
 *   stack_branch := id:uv kind:uv (id - base):uv keep:uv nnew:uv
 *                 (addr - previous):sv[nnew]
 *                 (incompat STACK_BRANCH: the stack is the keep root-side
 *                  frames of stack base, then the nnew frames, written
 *                  from the branch point toward the leaf; previous starts
 *                  at the base's frame at the first new frame's depth,
 *                  else the last kept frame, else 0.  Read as a stack.)
 *   sample     := dtime:sv pid:uv tid:uv cpu:uv kstack:uv ustack:uv flags:uv
 *                 lstack:uv vmstate:sv lua_state:uv ustop:uv
 *   sample_us  := as sample, but dtime counts microseconds (incompat
 *                 SAMPLE_US; read as a sample)
 *   event      := kind:uv weight:uv, then the fields of a sample
 *                 (an event of a kind other than CPU, or a CPU one worth
 *                  other than one tick: format/kinds.h; dtime counts ns,
 *                  on the time base samples share)
 *                 count:uv        (appended: how many things it stands
 *                                  for, alloc's objects; absent: 1)
 *   lost       := time_ns:uv count:uv reason:uv
 *   ksyms      := count:uv ksym[count]  (ascending addresses)
 *   ksym       := (addr - previous addr):uv name:str  (previous = 0 first)
 *   footer     := samples:uv lost:uv chunks:uv end_mono_ns:uv
 *                 events:uv        (appended: event records written;
 *                                   absent in older traces: none)
 *   luajit     := pid:uv G:uv vm_start:uv vm_end:uv flags:uv name:str
 *                 source:str nff:uv ffname:str[nff]
 *                 build:str        (appended: the build whose offsets were
 *                                   used; absent in older traces)
 *   puc_lua    := pid:uv version:str object:str
 *   proto      := id:uv addr:uv chunkname:str firstline:uv numline:uv
 *                 numparams:uv flags:uv nbc:uv bc:u32le[nbc]
 *                 line:sv[nbc]     (first minus firstline, then deltas)
 *                 nkstr:uv kstr[nkstr] nuv:uv uvname:str[nuv] varinfo:str
 *                 source:uv        (appended: the lua_source record of its
 *                                   chunk, 0 none; absent in older traces)
 *   kstr       := index:uv str     (the string constant at ~index)
 *   trace      := id:uv pid:uv traceno:uv proto:uv startpc:uv root:uv
 *                 mcode:uv szmcode:uv
 *   lua_stack  := id:uv depth:uv lframe[depth]        (leaf first)
 *   lframe     := kind:uv value:uv pc:uv link:uv
 *   object     := id:uv path:str id_kind:uv ident:str size:uv
 *                 (an ELF file the mappings name; ident = its GNU build-id,
 *                  or a content hash, see id_kind)
 *   symtab     := object:uv nseg:uv seg[nseg] nsym:uv sym[nsym]
 *   seg        := offset:uv filesz:uv vaddr:uv    (a PT_LOAD header)
 *   sym        := (addr - previous addr):uv size:uv name:str (ascending)
 *   debug      := retired: pieces of DWARF, which older recorders embedded;
 *                 a reader skips them (counted in retired_records)
 *   lua_source := id:uv chunkname:str path:str status:uv size:uv mtime_ns:uv
 *                 text:str         (the source file of Lua chunks, or why not)
 *   srclines   := object:uv flags:uv nstr:uv str[nstr] nchain:uv chain[nchain]
 *                 (the source lines of addresses of an object, resolved by
 *                  the recorder; flags SKIPPED_*: a note that addresses
 *                  past a bound were not resolved)
 *   chain      := (vaddr - previous vaddr):uv nframe:uv srcframe[nframe]
 *                 (ascending vaddr, previous = 0 first; leaf first)
 *   srcframe   := func:uv file:uv line:uv   (func, file: 1 + an index
 *                                            into str, 0 none)
 *   trace_snaps := trace:uv bcofs:uv bcbase:uv nsnap:uv snap[nsnap]
 *                 (a trace's snapshots: the Lua frames its machine code
 *                  stands for, by offset; trace = the trace record's id)
 *   snap       := (mcofs - previous mcofs):uv keep:uv nframe:uv
 *                 lframe[nframe]   (frames base first: the previous
 *                                   snapshot's first keep, then these;
 *                                   keep = nframe = 0: code not placed)
 *   name       := id:uv text:str  (the text of lframe kind NAME frames,
 *                                   a heap snapshot's path steps)
 *   chunk_rec  := type 21, body seq:uv (the chunk's number in the trace,
 *                 from 0; consumed by the reader, never returned)
 *
 * A sample's time is dtime added to the time of the previous sample or
 * event in the same chunk (0 at a chunk's start), so each chunk decodes
 * on its own.
 * Stack ids are unique for the whole trace and 0 means "no stack"; a stack
 * record precedes, in stream order, every sample that names it.  Fields may
 * be appended to a record body in a later version: a reader decodes the
 * fields it knows and skips to the record's end by its length.
 */
#ifndef LUAPROF_FORMAT_TRACE_H
#define LUAPROF_FORMAT_TRACE_H

#include <stddef.h>
#include <stdint.h>

#include "format/kinds.h"

#define LP_MAGIC "LUAPROF"          /* 8 bytes with its NUL */
#define LP_MAGIC_SIZE 8
#define LP_VERSION 1
#define LP_HEADER_SIZE 24
#define LP_CHUNK_MAGIC "LPCK"
#define LP_CHUNK_HEADER_SIZE 20

/* Feature bits.  A reader refuses a trace with an incompat bit it does
 * not know, and ignores unknown compat bits. */
/* Stacks may be stack_branch records, which name an earlier stack: a
 * reader that skipped them would lose the samples naming them. */
#define LP_INCOMPAT_STACK_BRANCH 0x1u
/* Samples may be sample_us records, whose dtime counts microseconds. */
#define LP_INCOMPAT_SAMPLE_US 0x2u
#define LP_INCOMPAT_KNOWN (LP_INCOMPAT_STACK_BRANCH | LP_INCOMPAT_SAMPLE_US)
/* Every records chunk starts with a chunk record numbering it, so that a
 * reader tells a missing, repeated or reordered chunk (format.md §2.3). */
#define LP_COMPAT_CHUNK_SEQ 0x1u
#define LP_COMPAT_KNOWN LP_COMPAT_CHUNK_SEQ

/* Sizes a reader accepts: anything larger is corruption, not data. */
#define LP_CHUNK_MAX_RAW (16u << 20)
#define LP_CHUNK_TARGET_RAW (256u << 10) /* writer flushes at this size */
#define LP_STACK_MAX_DEPTH 4096

enum lp_chunk_type { LP_CHUNK_RECORDS = 1 };

enum lp_codec { LP_CODEC_NONE = 0, LP_CODEC_LZ4 = 1, LP_CODEC_ZLIB = 2 };

/*
 * The record types, written once (as LuaJIT's BCDEF): LP_RECDEF(_) calls
 * _(TYPE, name, number, kind) for each, and every per-type list expands
 * it: enum lp_record_type (LP_REC_TYPE = number), the union in struct
 * lp_record (struct lp_name name), names.c (lp_record_name() = "name"),
 * the writer's and the decoder's dispatch, the tests' round trip.  kind
 * is BODY for a record the reader returns, RETIRED for one an older
 * writer wrote and a reader skips (counted in retired_records), FRAMING
 * for one the writer and the reader keep to themselves, WIRE for another
 * type's shorter form, which the writer picks for a record of that type
 * when it applies and the reader returns as that type.  A new record
 * type is a line here, its struct lp_name above struct lp_record, its
 * put_name() in writer.c and decode_name() in decode.c, the grammar above
 * and docs/format.md.  Numbers are the format: never reuse one.
 */
#define LP_RECDEF(_) \
	_(META, meta, 1, BODY) \
	_(PROCESS, process, 2, BODY) \
	_(EXIT, exit, 3, BODY) \
	_(MAPS, maps, 4, BODY) \
	_(STACK, stack, 5, BODY) \
	_(SAMPLE, sample, 6, BODY) \
	_(LOST, lost, 7, BODY) \
	_(KSYMS, ksyms, 8, BODY) \
	_(FOOTER, footer, 9, BODY) \
	_(LUAJIT, luajit, 10, BODY) \
	_(PROTO, proto, 11, BODY) \
	_(LUA_STACK, lua_stack, 12, BODY) \
	_(OBJECT, object, 13, BODY) \
	_(SYMTAB, symtab, 14, BODY) \
	_(TRACE, trace, 15, BODY) \
	_(DEBUG_RETIRED, debug, 16, RETIRED) /* DWARF pieces; see SRCLINES */ \
	_(LUA_SOURCE, lua_source, 17, BODY) \
	_(SRCLINES, srclines, 18, BODY) \
	_(PUC_LUA, puc_lua, 19, BODY) \
	_(TRACE_SNAPS, trace_snaps, 20, BODY) \
	_(CHUNK, chunk, 21, FRAMING) /* a chunk's number, see reader.c */ \
	_(STACK_BRANCH, stack_branch, 22, WIRE) /* a STACK on an earlier one */ \
	_(SAMPLE_US, sample_us, 23, WIRE) /* a SAMPLE, its dtime in µs */ \
	_(EVENT, event, 24, BODY) /* a sample of a kind and a weight */ \
	_(NAME, name, 25, BODY) /* a frame's text: a heap path's step */

/* LP_REC_IF_BODY(kind, ...): the tokens after kind for a BODY type,
 * nothing for the others; an expansion of LP_RECDEF that concerns
 * decoded records only goes through it. */
#define LP_REC_IF_BODY(kind, ...) LP_REC_IF_BODY_##kind(__VA_ARGS__)
#define LP_REC_IF_BODY_BODY(...) __VA_ARGS__
#define LP_REC_IF_BODY_RETIRED(...)
#define LP_REC_IF_BODY_FRAMING(...)
#define LP_REC_IF_BODY_WIRE(...)

enum lp_record_type {
#define LP_REC_ENUM(T, n, num, kind) LP_REC_##T = num,
	LP_RECDEF(LP_REC_ENUM)
#undef LP_REC_ENUM
};

/* meta.flags */
#define LP_META_FOLLOW_CHILDREN 0x1u
/* process.flags: why the process entered the trace. */
#define LP_PROC_EXISTING 0x1u /* already running when recording began */
#define LP_PROC_FORKED 0x2u   /* forked from a target while recording */
#define LP_PROC_EXEC 0x4u     /* replaced its image (execve) */
#define LP_PROC_LAUNCHED 0x8u /* started by `record -- CMD` */
/* maps.flags */
#define LP_MAPS_REPLACE 0x1u /* a full snapshot: forget older mappings */
/* mapping.prot */
#define LP_PROT_READ 0x1u
#define LP_PROT_WRITE 0x2u
#define LP_PROT_EXEC 0x4u
/* stack.kind */
enum lp_stack_kind { LP_STACK_KERNEL = 1, LP_STACK_USER = 2 };
/* A user stack's address 0, after its leaf or another frame: the frames
 * between it and the next, which the walk could not see (another JIT's
 * code, without CFI, that Lua reached through C functions: the walk went
 * on from the VM's innermost C frame).  No frame lies at 0. */
#define LP_ADDR_GAP 0ull
/* sample.flags */
#define LP_SAMPLE_KSTACK_FAILED 0x1u /* kernel stack could not be read */
#define LP_SAMPLE_USTACK_FAILED 0x2u /* user stack could not be read */
/* An off-CPU wait's state as it slept (none said: an older trace's). */
#define LP_SAMPLE_WAIT_SLEEPING 0x4u        /* interruptible: S */
#define LP_SAMPLE_WAIT_UNINTERRUPTIBLE 0x8u /* uninterruptible: D */
/* sample.ustop: how the native walk of the user stack ended (as
 * bpf/unwind_maps.h's enum lp_ustop).  Only COMPLETE is a whole stack; UNKNOWN
 * is a frame-pointer walk or an older trace, which did not say. */
enum lp_ustop_reason {
	LP_USTOP_R_UNKNOWN = 0,
	LP_USTOP_R_COMPLETE = 1,   /* reached the outermost frame */
	LP_USTOP_R_DEPTH = 2,      /* too many frames */
	LP_USTOP_R_UNMAPPED = 3,   /* a return address in no known code */
	LP_USTOP_R_JIT = 4,        /* compiled code it could not step over */
	LP_USTOP_R_NO_CFI = 5,     /* code its object's CFI does not cover */
	LP_USTOP_R_UNSUPPORTED = 6, /* a CFI rule the walker cannot run */
	LP_USTOP_R_READ = 7,       /* the stack could not be read */
	LP_USTOP_R_BAD_FRAME = 8,  /* a frame that did not make sense */
	LP_USTOP_R_NO_REGS = 9,    /* no user registers */
	LP_USTOP_R_NO_TABLE = 10,  /* the process's tables were not loaded yet */
	LP_USTOP_R_MAX = 11,
};
/* A user stack that was cut: a report ends it with [truncated].  Without
 * user registers there is no user stack to cut. */
static inline int lp_ustop_cut(uint32_t ustop)
{
	return ustop >= LP_USTOP_R_DEPTH && ustop != LP_USTOP_R_NO_REGS;
}
/* sample.lua_state: as bpf/sampler.h's enum lp_lua_state */
enum lp_lua_state {
	LP_LUA_NONE = 0,   /* no LuaJIT VM known in the process */
	LP_LUA_IDLE = 1,   /* a VM exists but was not running Lua */
	LP_LUA_WALKED = 2, /* lstack holds the Lua frames */
	LP_LUA_NO_G = 3,   /* no valid global_State found at this tick */
	LP_LUA_BAD_L = 4,  /* the running lua_State did not validate */
	LP_LUA_NO_VM = 5,  /* the interpreter's code was not located yet */
	/* lstack holds the frames of a coroutine suspended at a yield (a
	 * Lua-land wait): above the native stack, which is its resumer's */
	LP_LUA_SUSPENDED = 6,
};
/* lframe.kind */
enum lp_lframe_kind {
	LP_LFRAME_LUA = 1,   /* value = proto id (0: unreadable), pc = bytecode
			      * position after the current instruction */
	LP_LFRAME_C = 2,     /* value = lua_CFunction address */
	LP_LFRAME_FF = 3,    /* value = fast function id (see luajit ffname) */
	LP_LFRAME_ENTRY = 4, /* a VM entry from C: native frames belong here */
	LP_LFRAME_TRACE = 5, /* value = compiled trace number (leaf), pc =
			      * its trace record's id (0: none) */
	LP_LFRAME_TRUNC = 6, /* the walk stopped; value = reason */
	LP_LFRAME_BASE = 7,  /* only as a trace_snaps snapshot's first frame:
			      * the function the walk finds at the trace's
			      * base; value = zigzag((address of its bytecode
			      * position after the current instruction -
			      * bcbase) / 4), pc = 0 */
	LP_LFRAME_INLINED = 8, /* only in a trace_snaps snapshot, after the
				* frame of the function that inlined it: a
				* function whose code may run here, which the
				* recorder could not tell from the others so
				* marked; value = proto id (0: not known), pc = 0 */
	LP_LFRAME_NAME = 9,  /* a frame that is a name, not code: value = the
			      * id of a name record (a heap path's step,
			      * such as "_G" or "[table]"), pc = 0 */
};
/* lframe.link: the frame type of the frame's link (LuaJIT's FRAME_*);
 * LUA means the next frame is its Lua caller, whose call site names it. */
#define LP_LFRAME_LINK_LUA 0
/* VARG: a vararg function's frame, moved up past its arguments above the
 * frame its call made (which walks and snapshots skip). */
#define LP_LFRAME_LINK_VARG 3
/* luajit.flags */
#define LP_LUAJIT_GC64 0x1u
#define LP_LUAJIT_OPENRESTY 0x2u
/* object.id_kind: what object.ident is */
enum lp_objid_kind {
	LP_OBJID_BUILD_ID = 1, /* the descriptor of the NT_GNU_BUILD_ID note */
	LP_OBJID_CONTENT = 2,  /* lp_objid_content_hash(): no build-id */
};
#define LP_OBJID_MAX 64 /* longest ident a reader accepts */
/* lua_source.status: whether text holds the file, and if not, why */
enum lp_luasrc_status {
	LP_LUASRC_WHOLE = 1,      /* text is the whole file */
	LP_LUASRC_CUT = 2,        /* text is the file's first lines only */
	LP_LUASRC_CHANGED = 3,    /* the file changed since it was loaded */
	LP_LUASRC_UNREADABLE = 4, /* the file could not be opened or read */
	LP_LUASRC_BUDGET = 5,     /* the trace's bound for sources was spent */
};
/* srclines.flags: why addresses of the object hit have no chain (a note) */
#define LP_SRCLINES_SKIPPED_SIZE 0x1u   /* the writer's bound for one object */
#define LP_SRCLINES_SKIPPED_BUDGET 0x2u /* the writer's bound for the trace */
/* The most frames one chain may have; a deeper one is a bad record. */
#define LP_SRCLINES_MAX_FRAMES 16
/* trace_snaps bounds: deeper snapshots or more frames in all are a bad
 * record (LuaJIT's frames are slots of a u8, at most 250 deep). */
#define LP_TSNAP_MAX_FRAMES 256
#define LP_TSNAP_MAX_TOTAL (1u << 18)
/* lost.reason */
enum lp_lost_reason {
	LP_LOST_RINGBUF = 1, /* BPF ring buffer was full */
	LP_LOST_WRITE = 2,   /* the recorder could not keep the sample */
	LP_LOST_BUSY = 3,    /* it came while another was taken on its CPU */
	LP_LOST_UNTRACKED = 4, /* an off-CPU stretch whose start was not kept */
};

/* Decoded records.  Strings and arrays returned by the reader point into
 * its buffers and stay valid until the next trace_reader_next() call. */
struct lp_meta {
	const char *version, *cmdline, *target, *hostname, *kernel, *clock;
	uint32_t rate_hz;
	uint64_t start_mono_ns, start_real_ns;
	uint32_t flags;
};

struct lp_process {
	uint32_t pid, ppid;
	uint64_t time_ns;
	uint32_t flags;
	const char *comm, *exe;
};

struct lp_exit {
	uint32_t pid;
	uint64_t time_ns;
};

struct lp_mapping {
	uint64_t start, end, pgoff;
	uint32_t prot;
	uint64_t inode;
	const char *path; /* "" for anonymous memory */
	uint64_t object;  /* the object record naming the file, 0 = none */
};

struct lp_maps {
	uint32_t pid;
	uint64_t time_ns;
	uint32_t flags;
	uint32_t count;
	const struct lp_mapping *mappings;
};

struct lp_stack {
	uint64_t id;
	uint32_t kind;
	uint32_t depth;
	const uint64_t *addrs; /* leaf first */
};

/* Whether s is a user stack with a gap (LP_ADDR_GAP) after its leaf. */
static inline int lp_stack_has_gap(const struct lp_stack *s)
{
	for (uint32_t i = 1; i < s->depth && s->kind == LP_STACK_USER; i++)
		if (s->addrs[i] == LP_ADDR_GAP)
			return 1;
	return 0;
}

struct lp_sample {
	uint64_t time_ns; /* absolute CLOCK_MONOTONIC; delta-coded on disk */
	uint32_t pid, tid, cpu;
	uint64_t kstack, ustack; /* stack ids, 0 = none */
	uint32_t flags;
	uint64_t lstack;  /* Lua stack id, 0 = none */
	int32_t vmstate;  /* g->vmstate: ~LJ_VMST_* or a trace number */
	uint32_t lua_state; /* enum lp_lua_state */
	uint32_t ustop;   /* enum lp_ustop_reason */
};

/* An event: a sample of another kind than CPU (format/kinds.h), or worth
 * another weight than one tick.  A sample record is kind CPU, weight 1:
 * a reader that knows no events still counts CPU time right. */
struct lp_event {
	uint32_t kind;   /* enum lp_event_kind */
	uint64_t weight; /* in the kind's unit */
	struct lp_sample s;
	uint64_t count;  /* how many it stands for: alloc's objects; 1 if not said */
};

struct lp_lost {
	uint64_t time_ns;
	uint64_t count;
	uint32_t reason;
};

struct lp_ksym {
	uint64_t addr;
	const char *name;
};

struct lp_ksyms {
	uint32_t count;
	const struct lp_ksym *syms; /* ascending addr */
};

struct lp_footer {
	uint64_t samples, lost, chunks, end_mono_ns;
	uint64_t events; /* event records */
};

/* One LuaJIT VM in a process: the report names fast functions with it. */
struct lp_luajit {
	uint32_t pid;
	uint64_t G, vm_start, vm_end;
	uint32_t flags;
	const char *name;   /* e.g. "LuaJIT 2.1 (OpenResty luajit2, GC64)" */
	const char *source; /* where the offsets came from */
	uint32_t nff;
	const char *const *ffnames; /* by fast function id */
	const char *build;  /* e.g. "openresty-gc64", "dwarf"; "" unknown */
};

/* A PUC Lua VM (5.1 to 5.4) seen in a process: luaprof does not walk its
 * frames, and says so. */
struct lp_puc_lua {
	uint32_t pid;
	const char *version; /* e.g. "Lua 5.3.6" */
	const char *object;  /* the ELF file holding it */
};

struct lp_proto_kstr {
	uint32_t index;
	const char *str;
};

/* A Lua function prototype as the recorder read it from the target: what
 * naming and line numbers need, in LuaJIT's own encodings where stable
 * (bytecode, varinfo). */
struct lp_proto {
	uint64_t id, addr;
	const char *chunkname;
	uint32_t firstline, numline, numparams, flags;
	uint32_t nbc;
	const uint32_t *bc;    /* LuaJIT bytecode instructions */
	const uint32_t *lines; /* source line of each instruction */
	uint32_t nkstr;
	const struct lp_proto_kstr *kstr;
	uint32_t nuv;
	const char *const *uvnames;
	const uint8_t *varinfo;
	uint32_t varinfo_len;
	uint64_t source; /* lua_source id of its chunk's file, 0 = none */
};

/* A compiled trace as the recorder read it: where it starts (the proto
 * and bytecode position of its first instruction), its root trace (0 for
 * a root trace) and its machine code. */
struct lp_trace {
	uint64_t id;
	uint32_t pid, traceno;
	uint64_t proto; /* proto id, 0 unknown */
	uint32_t startpc, root;
	uint64_t mcode, szmcode;
};

/* One snapshot of a trace: from mcofs (bytes from the trace's mcode) to
 * the next snapshot's, its machine code stands for these Lua frames, base
 * first: the first is the trace's base frame (LP_LFRAME_BASE, or the
 * function that replaced it), the last runs the code.  nframe 0: the
 * recorder could not read the snapshot, its code is not placed. */
struct lp_tsnap {
	uint32_t mcofs;
	uint32_t nframe;
	const struct lp_lframe *frames;
};

/* The snapshots of a compiled trace (docs/format.md, trace_snaps): what
 * a report needs to place a sample's address in the trace's machine
 * code among the functions the trace inlined, and at their lines. */
struct lp_trace_snaps {
	uint64_t trace;  /* the trace record's id, never 0 */
	uint32_t bcofs;  /* bytes from a proto's address to its bytecode */
	uint64_t bcbase; /* the address LP_LFRAME_BASE positions count from */
	uint32_t nsnap;
	const struct lp_tsnap *snaps; /* ascending mcofs, the first 0 */
};

/* The source text of a Lua chunk loaded from a file (chunkname "@path"),
 * read by the recorder so that a report can show it anywhere; or, with
 * empty text, why it could not be embedded.  Protos name it by id. */
struct lp_lua_source {
	uint64_t id; /* never 0 */
	const char *chunkname; /* as LuaJIT has it, e.g. "@app.lua" */
	const char *path;      /* the file the recorder read, as the target
				* sees it, e.g. "/srv/app.lua" */
	uint32_t status;       /* enum lp_luasrc_status */
	uint64_t size;         /* the file's size in bytes, 0 unknown */
	uint64_t mtime_ns;     /* its mtime, ns since the epoch, 0 unknown */
	uint32_t text_len;
	const char *text;      /* text_len bytes (may hold NULs), then a NUL */
};

/* A frame's text, for lframe kind NAME: what `luaprof heap` names the
 * steps of a path to an object by (a table key, "[metatable]"). */
struct lp_name {
	uint64_t id; /* never 0 */
	const char *text;
};

struct lp_lframe {
	uint32_t kind, link;
	uint64_t value;
	uint32_t pc;
};

struct lp_lua_stack {
	uint64_t id;
	uint32_t depth;
	const struct lp_lframe *frames; /* leaf first */
};

/* An ELF file that mappings name, identified by content: a report uses
 * a file on its machine only if the identity matches. */
struct lp_object {
	uint64_t id; /* never 0 */
	const char *path;
	uint32_t id_kind; /* enum lp_objid_kind */
	uint32_t ident_len;
	const uint8_t *ident;
	uint64_t size; /* the file's size in bytes */
};

struct lp_objseg {
	uint64_t offset, filesz, vaddr;
};

struct lp_objsym {
	uint64_t addr, size;
	const char *name;
};

/* What symbolizing an object's addresses needs, embedded in the trace. */
struct lp_symtab {
	uint64_t object;
	uint32_t nseg;
	const struct lp_objseg *segs;
	uint32_t nsym;
	const struct lp_objsym *syms; /* ascending addr */
};

/* One source-level frame at an address: the function DWARF names there
 * and the file and line it runs at; func and file are 1 + an index into
 * the record's strings, 0 when DWARF names none. */
struct lp_srcframe {
	uint32_t func, file, line;
};

/* The frames at one ELF virtual address of the object, leaf first: the
 * functions inlined there, innermost first, then the function whose
 * code it is (lib/srcline.h explains the chain). */
struct lp_srcchain {
	uint64_t vaddr;
	uint32_t nframe; /* 1 .. LP_SRCLINES_MAX_FRAMES */
	const struct lp_srcframe *frames;
};

/* Source lines of addresses samples hit in an object, resolved from its
 * DWARF by the recorder, so that a report needs neither the DWARF nor a
 * DWARF reader; or, with flags set, a note that some were left out. */
struct lp_srclines {
	uint64_t object; /* never 0 */
	uint32_t flags;  /* LP_SRCLINES_SKIPPED_* */
	uint32_t nstr;
	const char *const *strs; /* the names and files the frames use */
	uint32_t nchain;
	const struct lp_srcchain *chains; /* ascending vaddr, each once */
};

struct lp_record {
	enum lp_record_type type;
	union {
#define LP_REC_MEMBER(T, n, num, kind) LP_REC_IF_BODY(kind, struct lp_##n n;)
		LP_RECDEF(LP_REC_MEMBER)
#undef LP_REC_MEMBER
	} u;
};

/* A sample or event record as an event: a sample is CPU time worth one
 * tick (the caller has checked rec's type is one of the two). */
static inline struct lp_event lp_record_event(const struct lp_record *rec)
{
	if (rec->type == LP_REC_EVENT)
		return rec->u.event;
	return (struct lp_event){ LP_KIND_CPU, 1, rec->u.sample, 1 };
}

const char *lp_codec_name(enum lp_codec codec);
int lp_codec_parse(const char *name, enum lp_codec *codec); /* 0 / -EINVAL */
const char *lp_record_name(enum lp_record_type type);
/* An event kind's names and units (format/kinds.h's columns), NULL for a
 * kind this reader does not know; the kind named name: 0 or -EINVAL. */
struct lp_kind_info {
	const char *name, *unit, *pp_count, *pp_value, *pp_unit, *shown;
	uint64_t div;
	const char *help;
};
const struct lp_kind_info *lp_kind_info(uint32_t kind);
int lp_kind_parse(const char *name, uint32_t *kind);

/* ---- objid.c ----------------------------------------------------------
 * The identity of an ELF file, as the recorder writes it in an object
 * record and a report checks it against a file on its own machine: the
 * GNU build-id when the file has one, otherwise LP_OBJID_CONTENT, a hash
 * of its size and of its first and last MiB (docs/format.md §3.13).
 * ident must hold LP_OBJID_MAX bytes.  0 or -errno. */
int lp_objid_read(int fd, uint32_t *kind, uint8_t *ident, uint32_t *len,
		  uint64_t *size);

/* ---- private.c ---------------------------------------------------------
 * Opens path for writing as a private file: 0600 whatever the umask,
 * never through a symbolic link (-ELOOP).  LP_PRIVATE_NEW: a new file
 * only (-EEXIST otherwise); without it an existing regular file is made
 * private and emptied.  A file descriptor, or -errno;
 * lp_private_strerror() says why in words (a link is named as such). */
#define LP_PRIVATE_NEW 0x1
int lp_open_private(const char *path, int flags);
const char *lp_private_strerror(int err);

/* ---- writer.c ----------------------------------------------------------
 * The writer owns its file descriptor and one chunk buffer.  Records are
 * encoded into the buffer; a chunk is compressed and written when the
 * buffer reaches LP_CHUNK_TARGET_RAW or on trace_writer_flush(), which the
 * recorder calls at least once a second.  Every call returns 0 or -errno;
 * after a write error the writer refuses further records (-EIO or the
 * first error) but what was already written stays a valid trace. */
struct trace_writer;

struct trace_writer_stats {
	uint64_t chunks;       /* chunks written */
	uint64_t samples;      /* sample records in them: after a write
				* error, those the file keeps */
	uint64_t events;       /* event records, likewise */
	uint64_t raw_bytes;    /* payload bytes before compression */
	uint64_t file_bytes;   /* bytes written to the file, header included */
	uint64_t records;
};

int trace_writer_open(struct trace_writer **out, const char *path,
		      enum lp_codec codec);
int trace_write(struct trace_writer *w, const struct lp_record *rec);
int trace_writer_flush(struct trace_writer *w);
/* Writes the footer record, flushes and closes; frees w even on error.
 * The writer fills in footer->chunks itself; a NULL footer takes the
 * samples, events and lost counts from the records written. */
int trace_writer_close(struct trace_writer *w, const struct lp_footer *footer);
void trace_writer_get_stats(const struct trace_writer *w,
			    struct trace_writer_stats *stats);
/* The size in bytes of a SRCLINES record's body as the writer encodes it
 * (0 for one it would refuse), so that a recorder can bound what it
 * embeds before it writes. */
size_t lp_srclines_size(const struct lp_srclines *sl);
/* Likewise for a TRACE_SNAPS record (0 for one the writer would refuse). */
size_t lp_trace_snaps_size(const struct lp_trace_snaps *ts);

/* ---- reader.c ----------------------------------------------------------
 * The reader treats the file as untrusted.  Opening fails with a message
 * (in errbuf) for a file that is empty, not a trace, or of a newer
 * version.  After that, damage never stops it: a chunk whose CRC or codec
 * does not check out is counted and skipped, and the reader scans forward
 * for the next chunk magic; a record that does not decode is counted and
 * skipped on its own.  A chunk whose number is not above the last one
 * read is counted and skipped, so a repeated chunk never counts twice.  trace_reader_next() returns 1 with a
 * record, 0 at the end of the file, -errno on an I/O error. */
struct trace_reader;

struct trace_reader_stats {
	uint32_t version, incompat, compat;
	uint64_t file_bytes;
	uint64_t chunks;          /* good chunks decoded */
	uint64_t bad_chunks;      /* chunks skipped for damage */
	uint64_t skipped_chunks;  /* chunks of unknown type, skipped */
	uint64_t bad_records;     /* records that did not decode */
	uint64_t unknown_records; /* records of unknown type, skipped */
	uint64_t retired_records; /* records of a retired type, skipped */
	uint64_t raw_bytes;       /* decompressed payload bytes */
	uint64_t stored_bytes;    /* payload bytes in the file */
	uint64_t garbage_bytes;   /* bytes skipped while resynchronizing */
	/* Chunk numbers (compat CHUNK_SEQ): chunks the sequence skipped
	 * over, and chunks whose number was not above the last one read,
	 * skipped (a repeat, or one out of its place). */
	uint64_t missing_chunks;
	uint64_t disordered_chunks;
	uint64_t samples;         /* sample records returned */
	uint64_t events;          /* event records returned */
	/* Chunks whose CRC checked out, by the codec their header names:
	 * none, lz4, zlib, then any other (a bad chunk, counted above). */
	uint64_t codec_chunks[LP_CODEC_ZLIB + 2];
	int truncated;            /* the file ends inside a chunk */
	int footer_seen;          /* a footer record was read */
	struct lp_footer footer;  /* the first footer read, if footer_seen */
};

int trace_reader_open(struct trace_reader **out, const char *path,
		      char *errbuf, size_t errlen);
int trace_reader_next(struct trace_reader *r, struct lp_record *rec);
/* Records of the types in `types` (bit t for type t) are skipped by their
 * length, not decoded nor counted: for a pass that wants a few kinds of
 * records out of a long trace.  Skipping samples leaves the time base of
 * later samples wrong: a pass that skips them must not read them. */
void trace_reader_skip(struct trace_reader *r, uint64_t types);
/* The size in bytes of the body of the record trace_reader_next() last
 * returned, as the trace stores it (decompressed): what `info` says an
 * embedded table costs. */
uint64_t trace_reader_record_bytes(const struct trace_reader *r);
void trace_reader_get_stats(const struct trace_reader *r,
			    struct trace_reader_stats *stats);
void trace_reader_close(struct trace_reader *r);

#endif

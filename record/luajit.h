/*
 * luajit.h - what record/ knows about the LuaJIT VM in a target process:
 * which object holds LuaJIT, which build it is and with which struct
 * offsets (luajit_detect.c), where its global_State and interpreter code
 * are once a sample has shown them (luajit_vm.c), and what is read from
 * it: the Lua function prototypes (luajit_protos.c), the source files of
 * their chunks (luajit_sources.c), and the compiled traces
 * (luajit_jit_traces.c) with their snapshots (luajit_snaps.c).
 */
#ifndef LUAPROF_RECORD_LUAJIT_H
#define LUAPROF_RECORD_LUAJIT_H

#include <limits.h>
#include <stdint.h>
#include <sys/types.h>

#include "bpf/luajit_layout.h"
#include "format/trace.h"
#include "record/luajit_layouts.h"

struct maps_table;

enum lj_target_state {
	LJ_WAITING_G = 1, /* layout known; no sample has shown a valid G yet */
	LJ_READY = 2,     /* G and the interpreter's code located */
	LJ_REFUSED = 3,   /* validation failed: no Lua frames for this pid */
};

struct lj_target {
	pid_t pid;
	enum lj_target_state state;
	const struct lj_build_desc *build; /* names and fast functions */
	struct lj_layout layout;           /* what the walker uses */
	char object[PATH_MAX];             /* the ELF file holding LuaJIT */
	char source[512];                  /* how the layout was chosen */
	const char *build_used; /* "code", "dwarf" or "file" */
	int64_t bias;       /* runtime address = ELF vaddr + bias */
	uint64_t G, vm_start, vm_end;
	/* the interpreter's code as the derivation found it (ELF vaddrs),
	 * for an entry frame of cf_size_code bytes; 0 when not */
	uint64_t vm_start_code, vm_end_code;
	uint16_t cf_size_code;
};

/* A PUC Lua VM seen in a process: luaprof does not walk it, and says so. */
struct lua_puc {
	char version[32];      /* "Lua 5.3.6"; "" when none was seen */
	char object[PATH_MAX]; /* the ELF file exporting its API */
};

/* ---- luajit_detect.c ---------------------------------------------------
 * Looks for LuaJIT among pid's executable mappings: an ELF object that
 * exports luaJIT_setmode, and takes the layout from offsets_file (NULL:
 * none), else from the object's DWARF (its own or a separate debug file),
 * else from its code (luajit_code.c).
 * Returns 0 with *out allocated, -ENOENT if there is no LuaJIT, or another
 * -errno with a reason in msg.  puc (may be NULL) gets the first PUC Lua
 * (5.1 to 5.4: lua_newstate without luaJIT_setmode, the version from
 * lua_ident or which API it exports) of the objects looked at before
 * LuaJIT was found. */
int lj_detect(pid_t pid, const struct maps_table *maps, const char *offsets_file,
	      struct lj_target **out, struct lua_puc *puc, char *msg, size_t msglen);
/* Reads, before a launched command runs, what lj_detect() will need of
 * the file at path if it holds LuaJIT and the command maps it: its DWARF
 * layout (tarantool's takes 100 ms, during which the command's first Lua
 * would run with no Lua walk).  arg is unused (unwind_preload's `also`). */
void lj_preload(const char *path, void *arg);
/* The layout derived from the code of the LuaJIT object open at fd, as
 * the recorder would use it (read once per file and kept): 0 with *r,
 * or -errno with what failed in *msg (also set on success: where the
 * fields came from).  For `luaprof check --luajit`. */
struct lj_code_result;
int lj_layout_of(int fd, const struct lj_code_result **r, const char **msg);
/* Reads a layout from a file of "field = value" lines, the names of
 * bpf/luajit_layout.h's LJ_LAYOUTDEF. */
int lj_layout_from_file(const char *path, struct lj_layout *lo, char *msg,
			size_t msglen);
/* A copy of t for a forked child with the same memory. */
struct lj_target *lj_target_fork(const struct lj_target *t, pid_t child);

/* ---- luajit_dwarf.c -----------------------------------------------------
 * Reads a layout from the DWARF of object (an ELF file holding LuaJIT) or
 * of its separate debug file (by build-id, then .gnu_debuglink).  0 with
 * the path of the file that held the DWARF in msg; -ENOENT if there is no
 * debug info for LuaJIT; -EINVAL with the missing type or member in msg.
 * The C frame's slots are not in DWARF: they come from the built-in row
 * with the same reference width.  ff (may be NULL) gets the names of the
 * build's fast functions by id from lj_ff.h's enum (n = 0 without it);
 * free them with lj_ffnames_free(). */
struct lj_ffnames {
	char **names; /* "string.format" by fast function id; "" unnamed */
	uint32_t n;
};
int lj_layout_from_dwarf(const char *object, struct lj_layout *lo,
			 struct lj_ffnames *ff, char *msg, size_t msglen);
void lj_ffnames_free(struct lj_ffnames *ff);

/* ---- luajit_vm.c ---------------------------------------------------------
 * Given a G that the BPF walker validated (G->mainthref and cur_L->glref),
 * reads the dispatch table behind it, checks that it points into LuaJIT's
 * object, and finds the interpreter's code range from that object's
 * .eh_frame.  0 and t->state = LJ_READY, or -errno with the failed check
 * in msg and t->state = LJ_REFUSED. */
int lj_locate_vm(struct lj_target *t, uint64_t G, char *msg, size_t msglen);
/* The interpreter's code range in the object at path (ELF vaddrs), from
 * its CFI alone: 0 or -ENOENT. */
int lj_vm_from_cfi(const char *path, uint16_t cf_size, uint64_t *start,
		   uint64_t *end);
/* The same from an object open at fd (not closed). */
int lj_vm_from_cfi_fd(int fd, uint16_t cf_size, uint64_t *start, uint64_t *end);
/* For an object whose interpreter has no CFI: the gap in its CFI that
 * holds the interpreter's instruction at vaddr inside.  0 or -ENOENT. */
int lj_vm_from_gap_fd(int fd, uint64_t inside, uint64_t *start, uint64_t *end);
/* Where the interpreter's CFA is a register + an offset (arm64: x29 +
 * 16, luajit_arch.h): the CFI row that holds vaddr inside, if that rule
 * is its CFA's and it spans 4 KiB to 4 MiB.  0, -ENOENT, or -ENOTSUP for
 * an architecture whose rule is the stack pointer + the frame's size. */
struct lj_arch;
int lj_vm_from_row_fd(int fd, const struct lj_arch *a, uint64_t inside, uint64_t *start,
		      uint64_t *end);
/* The BPF map value for t. */
void lj_target_proc(const struct lj_target *t, struct lj_proc *p);
/* When t's LuaJIT, validated, is its executable: the BPF lj_images entry
 * for the file (bpf/luajit_layout.h), 0; else -ENOENT. */
int lj_target_image(const struct lj_target *t, struct lp_file_id *key,
		    struct lj_proc *proc);
/* A LUAJIT record for t; ffnames borrowed from the build. */
void lj_target_record(const struct lj_target *t, struct lp_luajit *rec);

/* ---- luajit_protos.c -----------------------------------------------------
 * Prototypes by (pid, address, fingerprint), each read once from the
 * target and given a trace-wide id.  A proto whose address was reused
 * (another fingerprint) is read again under a new id; one that cannot be
 * read, or no longer matches, maps to id 0 ("unknown") and is counted. */
struct proto_table;

struct proto_table *proto_table_new(void);
/* The id for a proto seen by the walker; *rec is set (and owned by the
 * table until the next call) when a PROTO record must be written first. */
uint64_t proto_table_get(struct proto_table *pt, const struct lj_target *t,
			 uint64_t addr, uint16_t fingerprint,
			 const struct lp_proto **rec);
/* The same for the proto at addr that no sample showed (a compiled
 * trace's): its fingerprint read from its header, and its bytecode's
 * length in *sizebc; 0 if it cannot be read. */
uint64_t proto_table_at(struct proto_table *pt, const struct lj_target *t,
			uint64_t addr, uint32_t *sizebc, const struct lp_proto **rec);
/* What the walker saw of a prototype before its first sample (chunk
 * name: len of its full bytes): names it if it is gone when read. */
void proto_table_note(struct proto_table *pt, uint32_t pid, uint64_t addr,
		      uint16_t fingerprint, uint32_t firstline, uint32_t numline,
		      const char *name, size_t len, size_t full);
/* Prototypes gone when read, written from what the walker saw. */
uint64_t proto_table_from_ident(const struct proto_table *pt);
uint64_t proto_table_count(const struct proto_table *pt);
uint64_t proto_table_failed(const struct proto_table *pt);
/* Protos not read, or not remembered, for want of memory (not counted by
 * proto_table_failed or proto_table_from_ident). */
uint64_t proto_table_nomem(const struct proto_table *pt);
void proto_table_free(struct proto_table *pt);

/* ---- luajit_sources.c ---------------------------------------------------
 * The source files of Lua chunks loaded from files ("@path"), read once
 * per trace each and embedded as LUA_SOURCE records, bounded in size; a
 * file that changed since it was loaded, or could not be read, is
 * recorded as such, without text. */
struct source_table;

#define SOURCE_FILE_MAX (512u << 10)  /* bytes of one file embedded */
#define SOURCE_TRACE_MAX (8u << 20)   /* bytes of all files in a trace */

struct source_stats {
	uint64_t whole, cut, changed, unreadable, budget; /* records by status */
	uint64_t bytes; /* of text embedded */
};

struct source_table *source_table_new(void);
/* The lua_source id for proto pt of process pid, 0 when its chunk is not
 * a file.  *rec is set (and owned by the table until the next call) when
 * a LUA_SOURCE record must be written before the proto. */
uint64_t source_table_get(struct source_table *st, pid_t pid,
			  const struct lp_proto *pt, const struct lp_lua_source **rec);
void source_table_stats(const struct source_table *st, struct source_stats *out);
void source_table_free(struct source_table *st);

/* ---- luajit_snaps.c -----------------------------------------------------
 * A compiled trace's snapshots, read from the target and decoded into the
 * frames its machine code stands for (see the file).  hdr holds the
 * GCtrace's first LJ_GCTRACE_HDR bytes.  0 with *out set (owned by sr
 * until its next call); -ENOTSUP if the layout has no snapshot offsets;
 * -ESTALE if the trace is gone or changed; another -errno if it could not
 * be read.  The protos the frames name are handed to emit first. */
struct snap_reader;

typedef void (*snap_emit_proto_fn)(void *ctx, const struct lp_proto *rec);

/* What was read, for record's summary. */
struct snap_stats {
	uint64_t traces;     /* traces whose snapshots were written */
	uint64_t stale;      /* ... gone or changed before they were read */
	uint64_t unreadable; /* ... that could not be read or made no sense */
	uint64_t snaps;      /* snapshots written: the ranges of code placed */
	uint64_t unplaced;   /* ... of them not decoded: code not placed */
	uint64_t marked;     /* ... of them marked as not told apart */
	uint64_t exact;      /* stretches between two snapshots placed by
			      * instruction (luajit_place.c) */
	uint64_t whole;      /* ... placed whole, in one function */
	uint64_t rechecks;   /* known traces looked at again (luajit_jit_traces.c) */
};

#define LJ_GCTRACE_HDR 256 /* bytes of a GCtrace read: every field used */

struct snap_reader *snap_reader_new(void);
int snap_reader_read(struct snap_reader *sr, struct proto_table *pt,
		     const struct lj_target *t, uint64_t addr, uint32_t traceno,
		     const uint8_t *hdr, uint64_t trace_id, snap_emit_proto_fn emit,
		     void *ctx, const struct lp_trace_snaps **out);
void snap_reader_stats(const struct snap_reader *sr, struct snap_stats *out);
void snap_reader_free(struct snap_reader *sr);

/* ---- luajit_jit_traces.c ------------------------------------------------
 * LuaJIT's compiled traces ("jit traces", not the trace file) by (pid,
 * number, GCtrace address, fingerprint), read once each: a number reused
 * after a flush gets a new id, and so does a trace found changed when it
 * is looked at again (at most every 100 ms).  *rec is set when a TRACE
 * record must be written, *snaps when a TRACE_SNAPS record must follow
 * it; the protos either names are handed to emit_proto first, in the
 * order they must be written.  0 for a trace not known. */
struct jit_trace_table;

struct jit_trace_table *jit_trace_table_new(void);
uint64_t jit_trace_table_get(struct jit_trace_table *tt, struct proto_table *pt,
			     const struct lj_target *t, uint64_t addr, uint32_t traceno,
			     uint16_t fingerprint, const struct lp_trace **rec,
			     const struct lp_trace_snaps **snaps,
			     snap_emit_proto_fn emit_proto, void *ctx);
/* A trace that does not store its number (arm64's: the walk sends it as
 * number 0, as LP_TRACE_UNNUMBERED says) found by the address pc of its
 * code that the native walk stepped over: the traces met first, then the
 * process's J->trace[] as last read (again every JIT_TRACE_SCAN_NS at
 * most, per process).  0 with *traceno, *addr and *fingerprint as the
 * walk gives a numbered trace's (bpf/walk_lua.bpf.h, trace_frame());
 * -ESRCH when no trace held pc when J->trace[] was read, so it is
 * another JIT's code (or a trace compiled since, for JIT_TRACE_SCAN_NS
 * at most); -ENOENT when J->trace[] could not be read. */
#define JIT_TRACE_SCAN_NS 100000000ull
int jit_trace_at(struct jit_trace_table *tt, const struct lj_target *t, uint64_t pc,
		 uint32_t *traceno, uint64_t *addr, uint16_t *fingerprint);
/* The jit traces met; what their snapshots' reading came to. */
uint64_t jit_trace_table_count(const struct jit_trace_table *tt);
void jit_trace_table_stats(const struct jit_trace_table *tt, struct snap_stats *out);
void jit_trace_table_free(struct jit_trace_table *tt);

/* A GCRef or MRef copied out of target memory: ref_size bytes,
 * zero-extended (the target's byte order is the recorder's: x86_64 and
 * arm64 Linux are both little-endian). */
static inline uint64_t lj_get_ref(const struct lj_layout *lo, const uint8_t *p)
{
	uint64_t v = 0;

	__builtin_memcpy(&v, p, lo->ref_size);
	return v;
}

/* Reads len bytes of pid's memory at addr: 0 or -errno (-EFAULT when
 * only part could be read). */
int target_read(pid_t pid, uint64_t addr, void *buf, size_t len);
/* The extent [start, end) of the function at vaddr of the ELF file at
 * path, from its CFI (its FDE): 0, or -errno (-ENOENT: no CFI there). */
int lj_cfi_row(const char *path, uint64_t vaddr, uint64_t *start, uint64_t *end);

#endif

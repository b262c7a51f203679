/*
 * session.c - one recording, from loading the BPF sampler to the last byte
 * of the trace.
 *
 * The session owns everything a recording holds: the trace writer, the BPF
 * skeleton and its ring buffer, the perf events, the stack table and the
 * table of target processes with their last-read mappings.  It is single
 * threaded: one loop polls the ring buffer and turns each event into trace
 * records, so records reach the writer in the order the kernel produced
 * them, and a stack or mapping is always written before the first sample
 * that needs it.
 *
 * Order of start-up matters.  The fork tracepoint is attached before the
 * target pids go into the BPF map, and /proc is scanned for descendants
 * after, so a child forked at any moment is either seen by BPF or found by
 * the scan.  A launched command waits on a pipe until sampling runs.
 */
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "bpf/phases.h"
#include "bpf/sampler.h"
#include "format/trace.h"
#include "lib/grow.h"
#include "record/clock.h"
#include "record/kallsyms.h"
#include "record/kernel.h"
#include "record/launch.h"
#include "record/luajit.h"
#include "record/mapsize.h"
#include "record/objects.h"
#include "record/perf.h"
#include "record/procmaps.h"
#include "record/procs.h"
#include "record/session.h"
#include "record/sidekick.h"
#include "record/stacks.h"
#include "record/unwind.h"
#include "sampler.skel.h"

#define MAPS_REREAD_NS 100000000ull /* at most 10 maps re-reads/s per pid */
/* ... or 200/s when the pc a sample interrupted is in no known mapping:
 * that pc runs, so the mappings we have are stale (a JIT's new code), and
 * every sample until the next read loses its native frames. */
#define MAPS_REREAD_LEAF_NS 5000000ull
/* Flush once a second: a recorder killed at any instant loses at most
 * about a second of samples (docs/format.md's policy).  Twice a second
 * made chunks half as long, each starting its compressor cold: 12% more
 * bytes for an 8 s nginx trace at 99 Hz. */
#define FLUSH_NS 1000000000ull
#define STATUS_NS 500000000ull
#define ALIVE_CHECK_NS 1000000000ull
#define CUT_WALKS 12

_Static_assert((int)LP_WALK_WALKED == (int)LP_LUA_WALKED &&
		       (int)LP_WALK_NO_VM == (int)LP_LUA_NO_VM &&
		       (int)LP_WALK_IDLE == (int)LP_LUA_IDLE &&
		       (int)LP_WALK_NO_G == (int)LP_LUA_NO_G &&
		       (int)LP_WALK_BAD_L == (int)LP_LUA_BAD_L,
	       "BPF walk states and trace lua states agree");
_Static_assert((int)LP_USTOP_FALLBACK == (int)LP_USTOP_R_UNKNOWN &&
		       (int)LP_USTOP_END == (int)LP_USTOP_R_COMPLETE &&
		       (int)LP_USTOP_DEPTH == (int)LP_USTOP_R_DEPTH &&
		       (int)LP_USTOP_UNMAPPED == (int)LP_USTOP_R_UNMAPPED &&
		       (int)LP_USTOP_JIT == (int)LP_USTOP_R_JIT &&
		       (int)LP_USTOP_NO_ROW == (int)LP_USTOP_R_NO_CFI &&
		       (int)LP_USTOP_UNSUPPORTED == (int)LP_USTOP_R_UNSUPPORTED &&
		       (int)LP_USTOP_READ == (int)LP_USTOP_R_READ &&
		       (int)LP_USTOP_BAD_FRAME == (int)LP_USTOP_R_BAD_FRAME &&
		       (int)LP_USTOP_NO_REGS == (int)LP_USTOP_R_NO_REGS &&
		       (int)LP_USTOP_NO_TABLE == (int)LP_USTOP_R_NO_TABLE &&
		       (int)LP_USTOP_MAX == (int)LP_USTOP_R_MAX,
	       "BPF walk stops and trace stop reasons agree");
_Static_assert((int)LP_LUA_FRAME_LUA == (int)LP_LFRAME_LUA &&
		       (int)LP_LUA_FRAME_C == (int)LP_LFRAME_C &&
		       (int)LP_LUA_FRAME_FF == (int)LP_LFRAME_FF &&
		       (int)LP_LUA_FRAME_ENTRY == (int)LP_LFRAME_ENTRY &&
		       (int)LP_LUA_FRAME_TRACE == (int)LP_LFRAME_TRACE &&
		       (int)LP_LUA_FRAME_TRUNC == (int)LP_LFRAME_TRUNC,
	       "BPF frame kinds and trace frame kinds agree");

/* The precision of sample times in the trace (docs/format.md §3.6). */
#define SAMPLE_TIME_NS 1000

/* Builtins whose names a LUAJIT record carries only once hit; one
 * past (no build has that many) makes the record name them all. */
#define FF_NAMED_MAX 1024

struct target {
	pid_t pid;
	int alive;
	struct maps_table maps;
	uint64_t maps_read_ns;
	/* What the walker got when the fork was heard of, if not the
	 * parent's mappings: the image the child exec'd since (see
	 * inherit_maps()). */
	struct maps_table exec_maps;
	struct lj_target *lj; /* its LuaJIT VM, NULL if none */
	/* The builtins (fast functions) its samples ran, by id: its LUAJIT
	 * record names only these, and is written again when one is new. */
	uint8_t ff_named[FF_NAMED_MAX / 8];
	int puc_noted;        /* a PUC Lua VM was said (until an exec) */
	/* Samples whose native stack crossed its VM's C frame (whose
	 * lua_State the BPF walker then tried) while its layout had not
	 * validated, for print_summary(). */
	uint64_t lj_unvalidated;
	/* It exited before its VM could be checked (lj_locate_vm). */
	int lj_gone;
};

/* What the Lua walk gave, for the summary. */
struct lua_stats {
	uint64_t samples_lua;   /* samples with Lua frames */
	uint64_t truncated;     /* ... ending in a TRUNC marker */
	uint64_t idle;          /* VM present, not running Lua */
	uint64_t no_g, bad_l, no_vm;
	uint64_t protos_unknown; /* frames whose proto could not be read */
	/* LuaJIT processes that exited before their VM could be checked,
	 * and their samples whose Lua frames were dropped for it. */
	uint64_t procs_gone, gone_dropped;
};

struct session {
	const struct record_opts *o;
	struct trace_writer *w;
	struct sampler *skel;
	struct ring_buffer *rb;
	struct perf_sampling perf;
	struct stack_table *stacks;
	struct ksym_set *ksyms;
	struct object_set *objs; /* ELF objects hit, embedded (objects.c) */
	struct unwinder *unw; /* native unwinder; NULL: frame pointers only */
	struct sidekick *side; /* keeps unw current during flushes */
	int side_polls;        /* the sidekick's thread polls rb (a flush) */
	struct map_plan maps_plan; /* the BPF maps' sizes (mapsize.c) */
	struct lp_sample *held; /* samples not written yet (emit()) */
	size_t nheld, capheld;
	struct proto_table *protos;
	struct jit_trace_table *jit_traces;
	struct source_table *sources; /* Lua source files embedded */
	struct lua_stats lua;
	/* The Lua VMs said on stderr, as hashes of object and layout source:
	 * each process named on the command line is announced, the others
	 * (children, their execs) only with a VM not announced yet. */
	uint64_t vm_announced[64];
	int nvm_announced;
	struct target *targets;
	int ntargets, captargets, nalive;
	struct launched launched;
	int launched_running;
	uint64_t start_ns, lost_written;
	uint64_t lost_dropped; /* events the flush sidekick could not keep */
	/* record -v: the first native walks cut short, said at the end. */
	char cut_walks[CUT_WALKS][160];
	int ncut_walks;
	uint64_t samples;     /* taken: every sample the ring buffer gave */
	uint64_t written;     /* of those, in the file (set by finish()) */
	int write_err; /* first trace write error, negative errno */
	int status_shown;
};

static volatile sig_atomic_t stop_requested;

static void attach_luajit(struct session *s, struct target *t, struct target *parent);

static void on_stop_signal(int sig)
{
	(void)sig;
	stop_requested = 1;
}

/* How much survives the summary says (print_summary()): the samples the
 * file holds, and those taken after the error, lost. */
static void write_failed(struct session *s, int err)
{
	if (s->write_err)
		return;
	s->write_err = err;
	fprintf(stderr, "%sluaprof record: writing %s: %s; stopping (the trace keeps "
		"what was written before)\n", s->status_shown ? "\n" : "",
		s->o->output, strerror(-err));
}

/* Records that only define what later records name (stacks, functions,
 * symbols...): the trace may hold them earlier than they came. */
static int is_definition(enum lp_record_type type)
{
	switch (type) {
	case LP_REC_STACK: case LP_REC_LUA_STACK: case LP_REC_PROTO:
	case LP_REC_TRACE: case LP_REC_LUA_SOURCE: case LP_REC_KSYMS:
	case LP_REC_OBJECT: case LP_REC_SYMTAB: case LP_REC_SRCLINES:
		return 1;
	default:
		return 0;
	}
}

/* Writes the samples held since the last flush, in the order they came. */
static void release_samples(struct session *s)
{
	struct lp_record rec = { .type = LP_REC_SAMPLE };
	int err = 0;

	for (size_t i = 0; i < s->nheld && !s->write_err && !err; i++) {
		rec.u.sample = s->held[i];
		err = trace_write(s->w, &rec);
	}
	s->nheld = 0;
	if (err)
		write_failed(s, err);
}

/*
 * Samples are held until the next flush or the next record that is not a
 * definition (a process, its mappings, its VM...: what a sample is read
 * against), and the definitions go out as they come, before them: a
 * chunk then holds its stacks together and its samples together, which
 * compress better than interleaved (3% of an 8 s nginx trace).  Every
 * definition still precedes the samples that name it.
 */
static void emit(struct session *s, const struct lp_record *rec)
{
	int err;

	if (s->write_err)
		return;
	if (rec->type == LP_REC_SAMPLE &&
	    !GROW(s->held, s->capheld, s->nheld + 1)) {
		s->held[s->nheld++] = rec->u.sample;
		return;
	}
	if (!is_definition(rec->type))
		release_samples(s);
	err = s->write_err ? 0 : trace_write(s->w, rec);
	if (err)
		write_failed(s, err);
}

/*
 * Makes way for a new trace at path: a symbolic link there is refused,
 * never followed; an existing trace is kept as PATH.old, as perf keeps
 * perf.data.old, so a recording never destroys the last one.  (The writer
 * then creates the file with O_EXCL: anything that appears meanwhile is
 * refused too.)  *old is set to the PATH.old name when a file was moved.
 * Returns 0 or 1 after saying why not.
 */
static int make_way(const char *path, char *old, size_t oldlen)
{
	struct stat st;

	old[0] = '\0';
	if (lstat(path, &st) < 0) {
		if (errno == ENOENT)
			return 0;
		fprintf(stderr, "luaprof record: cannot create %s: %s\n", path,
			strerror(errno));
		return 1;
	}
	if (S_ISLNK(st.st_mode)) {
		fprintf(stderr, "luaprof record: %s is a symbolic link; refusing to "
			"write a trace through it (remove it, or give another -o)\n",
			path);
		return 1;
	}
	if (!S_ISREG(st.st_mode)) {
		fprintf(stderr, "luaprof record: %s exists and is not a regular file; "
			"give another -o\n", path);
		return 1;
	}
	if ((size_t)snprintf(old, oldlen, "%s.old", path) >= oldlen ||
	    rename(path, old) < 0) {
		fprintf(stderr, "luaprof record: cannot keep the existing %s as %s.old: "
			"%s\n", path, path, strerror(errno ? errno : ENAMETOOLONG));
		old[0] = '\0';
		return 1;
	}
	return 0;
}

static struct target *find_target(struct session *s, pid_t pid)
{
	for (int i = 0; i < s->ntargets; i++)
		if (s->targets[i].pid == pid)
			return &s->targets[i];
	return NULL;
}

/* For the flush sidekick: the mappings last read of pid (sidekick.c). */
static const struct maps_table *known_maps(void *ctx, pid_t pid)
{
	const struct target *t = find_target(ctx, pid);

	return t && t->maps.n ? &t->maps : NULL;
}

/* code[]: addresses the sampler saw code run at (see procmaps.c). */
static void emit_maps_code(struct session *s, struct target *t, uint64_t time_ns,
			   int replace, const uint64_t *code, uint32_t ncode)
{
	struct maps_table now;
	const struct lp_mapping **added = NULL;
	struct lp_mapping *list = NULL;
	struct lp_record rec;
	uint32_t n;
	int gone, walker_has = 0;

	t->maps_read_ns = mono_ns();
	/* An event the flush sidekick published at: the mappings it gave the
	 * walker then, not those of now, maybe of a later exec (sidekick.c). */
	if (!sidekick_take_maps(s->side, t->pid, &now)) {
		walker_has = 1;
		gone = 0;
	} else {
		gone = procmaps_read_code(t->pid, replace ? NULL : &t->maps, code, ncode, &now);
		if (!gone && !now.n) {
			/* A zombie's mappings: none. */
			maps_table_free(&now);
			gone = 1;
		}
	}
	/* Gone already: as the flush sidekick last published it, if it did. */
	if (gone && !sidekick_latest_maps(s->side, t->pid, &now))
		gone = 0;
	if (gone) {
		/* Gone already: its samples print as [unmapped], but for code
		 * the sampler saw run (below), and for an exec'd image whose
		 * mappings the walker got at the fork (inherit_maps()). */
		if (replace && t->exec_maps.n) {
			now = t->exec_maps;
			t->exec_maps = (struct maps_table){ 0 };
		} else if (!ncode || replace || maps_table_copy(&t->maps, &now)) {
			return;
		}
	}
	if (replace)
		maps_table_free(&t->exec_maps);
	for (uint32_t i = 0; i < ncode; i++)
		maps_table_add_code(&now, code[i]);
	added = calloc(now.n ? now.n : 1, sizeof(*added));
	list = calloc(now.n ? now.n : 1, sizeof(*list));
	if (!added || !list)
		goto cleanup;
	n = replace ? now.n : maps_table_added(&t->maps, &now, added, now.n);
	/* native unwinder first: until it has the list, walks of the
	 * process stop at their leaf (bpf/unwind_native.bpf.h). */
	if (walker_has)
		;
	else if (replace)
		unwind_add_process(s->unw, t->pid, &now);
	else if (n)
		unwind_update_process(s->unw, t->pid, &now);
	if (!s->write_err)
		object_set_assign(s->objs, t->pid, &now, s->w);
	/* After the assignment: the records name each mapping's object. */
	for (uint32_t i = 0; i < n; i++)
		list[i] = replace ? now.v[i] : *added[i];
	if (replace || n) {
		memset(&rec, 0, sizeof(rec));
		rec.type = LP_REC_MAPS;
		rec.u.maps.pid = t->pid;
		rec.u.maps.time_ns = time_ns;
		rec.u.maps.flags = replace ? LP_MAPS_REPLACE : 0;
		rec.u.maps.count = n;
		rec.u.maps.mappings = list;
		emit(s, &rec);
	}
	maps_table_free(&t->maps);
	t->maps = now;
	/* A full read is often taken before the dynamic loader has mapped
	 * the libraries (exec), and one that found new code may be followed
	 * by more (dlopen): then the next address outside them re-reads at
	 * once rather than after MAPS_REREAD_NS, since walks stop there.
	 * Only a read that found nothing new waits. */
	if (replace || n)
		t->maps_read_ns = 0;
	/* A LuaJIT loaded with dlopen (a host program, a C module) shows up
	 * as new mappings: look again. */
	if (!replace && n && !t->lj)
		attach_luajit(s, t, NULL);
	now.v = NULL;
	now.n = 0;
cleanup:
	maps_table_free(&now);
	free(added);
	free(list);
}

static void emit_process(struct session *s, pid_t pid, pid_t ppid,
			 uint64_t time_ns, uint32_t flags, const char *comm)
{
	struct proc_info info;
	struct lp_record rec;
	/* An event the flush sidekick published at: as it read the process
	 * then (its exe, before another exec or its exit); else now. */
	int err = sidekick_info(s->side, pid, &info) ? proc_read_info(pid, &info) : 0;

	if (err) {
		info.ppid = ppid;
		info.exe[0] = '\0';
		snprintf(info.comm, sizeof(info.comm), "%s", comm ? comm : "");
	}
	memset(&rec, 0, sizeof(rec));
	rec.type = LP_REC_PROCESS;
	rec.u.process.pid = pid;
	rec.u.process.ppid = ppid ? (uint32_t)ppid : (uint32_t)info.ppid;
	rec.u.process.time_ns = time_ns;
	rec.u.process.flags = flags;
	rec.u.process.comm = comm && comm[0] ? comm : info.comm;
	rec.u.process.exe = info.exe;
	emit(s, &rec);
}

/* The LUAJIT record of t's VM.  Of its builtins' names (some 180, 3 KB)
 * it carries those t's samples ran so far, "" for the others: a report
 * names a sample's builtins from the latest record before it, so a
 * builtin run for the first time writes the record again first
 * (note_builtins()). */
static void emit_luajit(struct session *s, struct target *t)
{
	static const char *names[FF_NAMED_MAX];
	struct lp_record rec;

	memset(&rec, 0, sizeof(rec));
	rec.type = LP_REC_LUAJIT;
	lj_target_record(t->lj, &rec.u.luajit);
	if (rec.u.luajit.nff <= FF_NAMED_MAX) {
		uint32_t n = 0;

		for (uint32_t i = 0; i < rec.u.luajit.nff; i++) {
			names[i] = "";
			if (t->ff_named[i / 8] & (1u << i % 8)) {
				names[i] = rec.u.luajit.ffnames[i];
				n = i + 1; /* the ids past the last named: none */
			}
		}
		rec.u.luajit.nff = n;
		rec.u.luajit.ffnames = names;
	}
	emit(s, &rec);
}

/* Notes the builtins of a Lua stack, and writes t's LUAJIT record again
 * when one was not named yet: before the stack and the sample. */
static void note_builtins(struct session *s, struct target *t,
			  const struct lp_lframe *frames, uint32_t n)
{
	int fresh = 0;

	for (uint32_t i = 0; i < n; i++) {
		uint64_t id = frames[i].value;

		if (frames[i].kind != LP_LFRAME_FF || id >= FF_NAMED_MAX)
			continue;
		if (!(t->ff_named[id / 8] & (1u << id % 8))) {
			t->ff_named[id / 8] |= (uint8_t)(1u << id % 8);
			fresh = 1;
		}
	}
	if (fresh)
		emit_luajit(s, t);
}

static void publish_luajit(struct session *s, struct target *t)
{
	struct lj_proc proc;
	uint32_t key = (uint32_t)t->pid;

	lj_target_proc(t->lj, &proc);
	bpf_map_update_elem(bpf_map__fd(s->skel->maps.lj_procs), &key, &proc, BPF_ANY);
	if (t->lj->state == LJ_READY)
		emit_luajit(s, t);
}

/* Whether a line about pid's VM is worth printing: always for a process
 * the command line named (-p, or the launched command), once per
 * distinct VM (what) for the processes that follow it, so that a script
 * starting 200 luajit children says it once; every time with -v. */
static int announce_vm(struct session *s, pid_t pid, const char *what)
{
	uint64_t h = 1469598103934665603ull;
	int root = s->o->command ? pid == s->launched.pid : 0, seen = 0;

	if (s->o->quiet)
		return 0;
	for (int i = 0; !s->o->command && i < s->o->npids; i++)
		root |= s->o->pids[i] == pid;
	for (const char *p = what; *p; p++)
		h = (h ^ (uint8_t)*p) * 1099511628211ull;
	for (int i = 0; i < s->nvm_announced; i++)
		seen |= s->vm_announced[i] == h;
	if (!seen && s->nvm_announced < (int)(sizeof(s->vm_announced) /
					       sizeof(s->vm_announced[0])))
		s->vm_announced[s->nvm_announced++] = h;
	return s->o->verbose || root || !seen;
}

/* A PUC Lua VM: its frames are not walked; said once per process, and
 * written in the trace for info. */
static void note_puc_lua(struct session *s, struct target *t, const struct lua_puc *puc)
{
	struct lp_record rec = { .type = LP_REC_PUC_LUA };
	char what[PATH_MAX + 64];

	snprintf(what, sizeof(what), "%s in %s", puc->version, puc->object);
	if (announce_vm(s, t->pid, what))
		fprintf(stderr, "luaprof record: pid %d: PUC %s: not supported (luaprof "
			"walks LuaJIT 2.1 only); recording native frames only\n",
			(int)t->pid, what);
	rec.u.puc_lua = (struct lp_puc_lua){ .pid = (uint32_t)t->pid,
					     .version = puc->version,
					     .object = puc->object };
	emit(s, &rec);
}

/* Finds the LuaJIT VM of a new target (or inherits its parent's, for a
 * forked child) and tells the BPF walker about it. */
static void emit_maps(struct session *s, struct target *t, uint64_t time_ns,
		      int replace)
{
	emit_maps_code(s, t, time_ns, replace, NULL, 0);
}

static void attach_luajit(struct session *s, struct target *t, struct target *parent)
{
	char msg[512], what[PATH_MAX + 400];
	struct lua_puc puc;
	int err;

	free(t->lj);
	t->lj = NULL;
	memset(t->ff_named, 0, sizeof(t->ff_named)); /* a new VM */
	if (parent && parent->lj && parent->lj->state != LJ_REFUSED) {
		t->lj = lj_target_fork(parent->lj, t->pid);
	} else {
		err = lj_detect(t->pid, &t->maps, s->o->luajit_offsets, &t->lj,
				&puc, msg, sizeof(msg));
		if (err && err != -ENOENT)
			fprintf(stderr, "luaprof record: pid %d: %s; recording native "
				"frames only\n", (int)t->pid, msg);
		if (!t->lj && puc.version[0] && !t->puc_noted) {
			note_puc_lua(s, t, &puc);
			t->puc_noted = 1;
		}
		if (!t->lj)
			return;
		snprintf(what, sizeof(what), "%s; %s", t->lj->object, t->lj->source);
		if (announce_vm(s, t->pid, what))
			fprintf(stderr, "luaprof record: pid %d: LuaJIT in %s\n",
				(int)t->pid, what);
	}
	if (t->lj)
		publish_luajit(s, t);
}

/* The first sample showing a valid G locates the VM; a failed check stops
 * the Lua walk for that process, saying why. */
static void locate_luajit(struct session *s, struct target *t, uint64_t G)
{
	uint32_t pid = (uint32_t)t->pid;
	struct lj_image_key key;
	struct lj_proc proc;
	char msg[512];

	int err = lj_locate_vm(t->lj, G, msg, sizeof(msg));

	if (err == -ESRCH) {
		/* Gone before we could look: nothing was wrong with the
		 * layout, and nothing can be read any more (protos). */
		t->lj_gone = 1;
		s->lua.procs_gone++;
		if (s->o->verbose)
			fprintf(stderr, "%sluaprof record: pid %d exited before its LuaJIT "
				"VM could be checked; its samples keep native frames "
				"only\n", s->status_shown ? "\n" : "", (int)t->pid);
		return;
	}
	if (err) {
		fprintf(stderr, "%sluaprof record: pid %d: LuaJIT layout did not validate: "
			"%s; recording native frames only\n", s->status_shown ? "\n" : "",
			(int)t->pid, msg);
		bpf_map_delete_elem(bpf_map__fd(s->skel->maps.lj_procs), &pid);
		return;
	}
	if (s->o->verbose)
		fprintf(stderr, "luaprof record: pid %d: LuaJIT VM at G=0x%llx, "
			"interpreter 0x%llx-0x%llx\n", (int)t->pid,
			(unsigned long long)G, (unsigned long long)t->lj->vm_start,
			(unsigned long long)t->lj->vm_end);
	publish_luajit(s, t);
	/* A LuaJIT executable: the next process to exec it has its layout
	 * from its first tick (the map holds 64; past that, from attach). */
	if (!lj_target_image(t->lj, &key, &proc))
		bpf_map_update_elem(bpf_map__fd(s->skel->maps.lj_images), &key, &proc,
				    BPF_ANY);
}

/* Adds pid to the table (if new) and writes what the trace needs to know
 * about it: its PROCESS record and a full mappings snapshot. */
/*
 * A child just forked maps what its parent did at the fork: it takes the
 * parent's mappings, as the report does (a forked process record) and as
 * the BPF walker did in the kernel, rather than a read of /proc, which by
 * now may show an image the child exec'd since: its exec event, and the
 * samples it took before, come later, and the old image's addresses would
 * print as [unmapped].  1 if it did; the first address outside them has
 * the mappings read as for any process.
 */
static int inherit_maps(struct session *s, struct target *t,
			const struct target *parent)
{
	struct maps_table copy, now;

	if (!parent || !parent->alive || !parent->maps.n ||
	    maps_table_copy(&parent->maps, &copy))
		return 0;
	maps_table_free(&t->maps);
	t->maps = copy;
	t->maps_read_ns = 0;
	/* The walker got the parent's list at the fork, if the parent had
	 * one yet.  Its own is what the child maps now: the parent's
	 * layout would be wrong for an image exec'd since, whose samples
	 * the walker takes before its exec event reaches us. */
	if (!procmaps_read(t->pid, &now)) {
		const struct lp_mapping *added[1];

		unwind_add_process(s->unw, t->pid, &now);
		/* Mappings the parent has not: the child exec'd, and the
		 * exec event may find it gone; its samples were walked with
		 * these, and are named with them then. */
		maps_table_free(&t->exec_maps);
		if (maps_table_added(&copy, &now, added, 1))
			t->exec_maps = now;
		else
			maps_table_free(&now);
	}
	return 1;
}

static struct target *add_target(struct session *s, pid_t pid, pid_t ppid,
				 uint64_t time_ns, uint32_t flags,
				 const char *comm)
{
	struct target *t = find_target(s, pid);

	if (!t) {
		if (s->ntargets == s->captargets) {
			int ncap = s->captargets ? s->captargets * 2 : 16;
			struct target *v = realloc(s->targets, ncap * sizeof(*v));

			if (!v)
				return NULL;
			s->targets = v;
			s->captargets = ncap;
		}
		t = &s->targets[s->ntargets++];
		memset(t, 0, sizeof(*t));
		t->pid = pid;
	}
	if (!t->alive) {
		t->alive = 1;
		s->nalive++;
	}
	if (flags & LP_PROC_EXEC)
		t->puc_noted = 0; /* a new image */
	emit_process(s, pid, ppid, time_ns, flags, comm);
	if (!inherit_maps(s, t, flags == LP_PROC_FORKED ? find_target(s, ppid) : NULL))
		emit_maps(s, t, time_ns, 1);
	attach_luajit(s, t, flags & LP_PROC_FORKED ? find_target(s, ppid) : NULL);
	return t;
}

static void target_exited(struct session *s, struct target *t, uint64_t time_ns)
{
	struct lp_record rec;

	if (!t->alive)
		return;
	t->alive = 0;
	s->nalive--;
	unwind_remove_process(s->unw, t->pid); /* native unwinder */
	maps_table_free(&t->maps);
	maps_table_free(&t->exec_maps);
	/* A layout that never validated is kept for the summary's warning. */
	if (!t->lj || t->lj->state != LJ_WAITING_G || !t->lj_unvalidated) {
		free(t->lj);
		t->lj = NULL;
	}
	memset(&rec, 0, sizeof(rec));
	rec.type = LP_REC_EXIT;
	rec.u.exit.pid = t->pid;
	rec.u.exit.time_ns = time_ns;
	emit(s, &rec);
}

static uint64_t intern_stack(struct session *s, uint32_t kind,
			     const uint64_t *addrs, int bytes)
{
	struct lp_record rec;
	uint32_t depth;
	uint64_t id;
	int is_new;

	if (bytes <= 0)
		return 0;
	depth = bytes / sizeof(uint64_t);
	if (depth > LP_MAX_STACK)
		depth = LP_MAX_STACK;
	id = stack_table_intern(s->stacks, kind, addrs, depth, &is_new);
	if (!is_new)
		return id;
	if (kind == LP_STACK_KERNEL)
		ksym_set_note(s->ksyms, addrs, depth);
	memset(&rec, 0, sizeof(rec));
	rec.type = LP_REC_STACK;
	rec.u.stack.id = id;
	rec.u.stack.kind = kind;
	rec.u.stack.depth = depth;
	rec.u.stack.addrs = addrs;
	emit(s, &rec);
	return id;
}

/* Writes a PROTO record for a prototype the table just read, if any,
 * preceded by the LUA_SOURCE record of its chunk's file when that is new
 * to the trace. */
static void emit_proto(struct session *s, pid_t pid, const struct lp_proto *pr)
{
	const struct lp_lua_source *src;
	struct lp_record rec;

	if (!pr)
		return;
	memset(&rec, 0, sizeof(rec));
	rec.type = LP_REC_PROTO;
	rec.u.proto = *pr;
	rec.u.proto.source = source_table_get(s->sources, pid, pr, &src);
	if (src) {
		struct lp_record srec = { .type = LP_REC_LUA_SOURCE };

		srec.u.lua_source = *src;
		emit(s, &srec);
	}
	emit(s, &rec);
}

struct proto_emit {
	struct session *s;
	pid_t pid;
};

/* emit_proto() for what luajit_jit_traces.c reads. */
static void emit_proto_cb(void *ctx, const struct lp_proto *pr)
{
	const struct proto_emit *pe = ctx;

	emit_proto(pe->s, pe->pid, pr);
}

/* Why the BPF walk truncated a Lua stack (enum lp_lua_trunc), in words. */
static const char *trunc_reason(uint32_t why)
{
	switch (why) {
	case LP_LUA_TRUNC_READ: return "a frame's slots could not be read";
	case LP_LUA_TRUNC_DEPTH: return "too deep";
	case LP_LUA_TRUNC_BAD: return "a frame made no sense";
	case LP_LUA_TRUNC_READ_FUNC: return "a function could not be read";
	case LP_LUA_TRUNC_READ_CALL: return "a caller's CALL instruction could not be read";
	}
	return "unknown reason";
}

/* Interns the Lua frames of a sample (reading new protos on the way) and
 * returns the Lua stack id, 0 if none. */
static uint64_t intern_lua_stack(struct session *s, struct target *t,
				 const struct lp_event_sample *e, size_t size)
{
	static uint64_t triplets[3 * LP_MAX_LUA];
	static struct lp_lframe frames[LP_MAX_LUA];
	uint32_t n = e->lua_depth;
	struct lp_record rec;
	uint64_t id;
	int is_new;

	if (n > LP_MAX_LUA || size < lp_event_sample_size(n))
		n = 0;
	/* Only a located, validated VM's stacks: its LUAJIT record, which
	 * names their builtins, precedes them in the trace. */
	if (!n || !t || !t->lj || t->lj->state != LJ_READY)
		return 0;
	for (uint32_t i = 0; i < n; i++) {
		const struct lp_lua_frame *f = &e->lua[i];
		uint64_t value = f->addr;
		uint32_t pc = f->kind == LP_LUA_FRAME_LUA ? f->pc : 0;

		if (f->kind == LP_LUA_FRAME_TRACE) {
			const struct lp_trace *tr;

			const struct lp_trace_snaps *snaps;
			struct proto_emit pe = { s, t->pid };

			/* value: the trace's number; pc: its record's id. */
			pc = (uint32_t)jit_trace_table_get(s->jit_traces, s->protos, t->lj, f->addr,
						           f->pc, f->fingerprint, &tr, &snaps,
						           emit_proto_cb, &pe);
			if (tr) {
				memset(&rec, 0, sizeof(rec));
				rec.type = LP_REC_TRACE;
				rec.u.trace = *tr;
				emit(s, &rec);
			}
			if (snaps) {
				memset(&rec, 0, sizeof(rec));
				rec.type = LP_REC_TRACE_SNAPS;
				rec.u.trace_snaps = *snaps;
				emit(s, &rec);
			}
			value = f->pc;
		} else if (f->kind == LP_LUA_FRAME_LUA) {
			const struct lp_proto *pr;

			value = proto_table_get(s->protos, t->lj, f->addr, f->fingerprint, &pr);
			emit_proto(s, t->pid, pr);
			if (!value)
				s->lua.protos_unknown++;
		} else if (f->kind == LP_LUA_FRAME_FF || f->kind == LP_LUA_FRAME_TRUNC) {
			value = f->pc;
		} else if (f->kind == LP_LUA_FRAME_ENTRY) {
			value = 0; /* a stack address: only its place matters */
		}
		if (f->kind == LP_LUA_FRAME_C)
			object_set_note(s->objs, &t->maps, (const uint64_t *)&f->addr, 1);
		frames[i].kind = f->kind;
		frames[i].link = f->link;
		frames[i].value = value;
		frames[i].pc = pc;
		triplets[3 * i] = f->kind | (uint64_t)f->link << 8;
		triplets[3 * i + 1] = value;
		triplets[3 * i + 2] = frames[i].pc;
	}
	if (frames[n - 1].kind == LP_LFRAME_TRUNC) {
		/* The first few, in detail, for whoever debugs a walk. */
		if (s->o->verbose && s->lua.truncated < 5)
			fprintf(stderr, "luaprof record: pid %d: Lua stack truncated "
				"(%s) at frame 0x%llx after %u frames, vmstate %d\n",
				(int)t->pid, trunc_reason(e->lua[n - 1].pc),
				(unsigned long long)e->lua[n - 1].addr, n - 1, e->vmstate);
		s->lua.truncated++;
	}
	note_builtins(s, t, frames, n);
	id = stack_table_intern(s->stacks, STACK_KIND_LUA, triplets, 3 * n, &is_new);
	if (is_new) {
		memset(&rec, 0, sizeof(rec));
		rec.type = LP_REC_LUA_STACK;
		rec.u.lua_stack.id = id;
		rec.u.lua_stack.depth = n;
		rec.u.lua_stack.frames = frames;
		emit(s, &rec);
	}
	return id;
}

static void count_lua_state(struct session *s, uint32_t state, uint64_t lstack)
{
	switch (state) {
	case LP_LUA_IDLE: s->lua.idle++; break;
	case LP_LUA_NO_G: s->lua.no_g++; break;
	case LP_LUA_BAD_L: s->lua.bad_l++; break;
	case LP_LUA_NO_VM: s->lua.no_vm++; break;
	}
	if (lstack)
		s->lua.samples_lua++;
}

/* A user address outside every known mapping means the process mapped
 * something new (dlopen, a JIT area) since we last looked, or the stack
 * holds a garbage frame.  Re-read, at most every MAPS_REREAD_NS, and write
 * what was added. */
static void check_mappings(struct session *s, struct target *t,
			   const struct lp_event_sample *e)
{
	int n = e->ustack_bytes > 0 ? e->ustack_bytes / 8 : 0;
	int unknown = e->ustack_stop == LP_USTOP_UNMAPPED;
	uint64_t code[1];
	uint32_t ncode = 0;
	int leaf = n > 0 && !maps_table_find(&t->maps, e->ustack[0]);

	if (n > LP_MAX_USTACK)
		n = LP_MAX_USTACK;
	/* The native unwinder stops, frameless, at a pc in a mapping it does
	 * not know yet: that too means new mappings.  The frame it stepped
	 * over as a trace's was code (bpf/unwind_native.bpf.h), whatever the
	 * mappings say now, and the re-read keeps it. */
	for (int i = 0; i < n; i++) {
		if (maps_table_find(&t->maps, e->ustack[i]))
			continue;
		unknown = 1;
		if ((uint32_t)i + 1 == e->ustack_jit)
			code[ncode++] = e->ustack[i];
	}
	/* Code that ran is worth a read at once: the read keeps it (or a
	 * page of it), so its next samples do not ask again.  The rest waits
	 * its turn. */
	if (ncode || (unknown && mono_ns() - t->maps_read_ns >=
			      (leaf ? MAPS_REREAD_LEAF_NS : MAPS_REREAD_NS)))
		emit_maps_code(s, t, e->h.time_ns, 0, code, ncode);
}

/*
 * The bytes of the user stack worth keeping.  A walk that stopped at a
 * return address in no known code recorded it: new code (dlopen), which
 * the re-read of the mappings found, or stack data taken for a return
 * address, which it did not.  The latter is no frame: the stack ends
 * before it, cut (the sample's ustop says so).  The leaf is never data.
 */
static int validated_ustack_bytes(const struct target *t,
				  const struct lp_event_sample *e)
{
	int n = e->ustack_bytes / 8;
	const struct lp_mapping *m;

	if (!t || n < 2 || n > LP_MAX_USTACK)
		return e->ustack_bytes;
	m = maps_table_find(&t->maps, e->ustack[n - 1]);
	if (e->ustack_stop == LP_USTOP_UNMAPPED && !m)
		return (n - 1) * 8;
	/* A walk that stopped at a return address into anonymous code (a
	 * trace, for LuaJIT) with no Lua frames to stand for it: nothing
	 * says what ran there, nor that it is code at all. */
	if ((e->ustack_stop == LP_USTOP_UNMAPPED || e->ustack_stop == LP_USTOP_JIT) &&
	    m && !m->path[0] && !e->lua_depth)
		return (n - 1) * 8;
	return e->ustack_bytes;
}

/* record -v: when, where and why a native walk stopped short of the
 * stack's outermost frame, for the first few, so that a stack that does
 * not reach main explains itself (tests/e2e/native_unwind.sh prints them
 * when a share falls short). */
static void note_cut_walk(struct session *s, const struct target *t,
			  const struct lp_event_sample *e)
{
	int n = e->ustack_bytes > 0 ? e->ustack_bytes / 8 : 0;
	const struct lp_mapping *m;
	uint64_t pc;
	char where[96] = "no frame";

	if (s->ncut_walks >= CUT_WALKS || e->ustack_stop == LP_USTOP_END ||
	    e->ustack_stop == LP_USTOP_DEPTH)
		return;
	if (n > LP_MAX_USTACK)
		n = LP_MAX_USTACK;
	if (n) {
		pc = e->ustack[n - 1];
		m = t ? maps_table_find(&t->maps, pc) : NULL;
		if (m)
			snprintf(where, sizeof(where), "at %s+0x%llx",
				 strrchr(m->path, '/') ? strrchr(m->path, '/') + 1 : m->path,
				 (unsigned long long)(pc - m->start + m->pgoff));
		else
			snprintf(where, sizeof(where), "at 0x%llx, in no mapping known",
				 (unsigned long long)pc);
	}
	snprintf(s->cut_walks[s->ncut_walks++], sizeof(s->cut_walks[0]),
		 "%+.3f s, pid %d: %s after %d frame%s, %s",
		 ((double)e->h.time_ns - (double)s->start_ns) / 1e9, (int)e->h.pid,
		 unwind_stop_name(e->ustack_stop), n, n == 1 ? "" : "s", where);
}

/* Does the sample's native stack hold a return address into t's
 * interpreter (the VM called out to C from there)? */
static int crosses_vm(const struct lj_target *t, const struct lp_event_sample *e)
{
	int n = e->ustack_bytes > 0 ? e->ustack_bytes / 8 : 0;

	for (int i = 1; i < n && i < LP_MAX_USTACK; i++)
		if (e->ustack[i] - 1 >= t->vm_start && e->ustack[i] - 1 < t->vm_end)
			return 1;
	return 0;
}

static void handle_sample(struct session *s, const struct lp_event_sample *e,
			  size_t size)
{
	struct target *t = find_target(s, e->h.pid);
	struct lp_record rec;

	if (!t || !t->alive) /* a sample racing its fork event */
		t = add_target(s, e->h.pid, 0, e->h.time_ns, LP_PROC_FORKED, NULL);
	if (s->o->verbose)
		note_cut_walk(s, t, e);
	if (t)
		check_mappings(s, t, e);
	if (t && e->ustack_bytes > 0)
		object_set_note_stack(s->objs, &t->maps, (const uint64_t *)e->ustack,
				e->ustack_bytes / 8 < LP_MAX_USTACK ?
				e->ustack_bytes / 8 : LP_MAX_USTACK);
	if (t && t->lj && t->lj->state == LJ_WAITING_G && e->lua_G && !t->lj_gone)
		locate_luajit(s, t, e->lua_G);
	/* Still no valid G, though the native stack crossed the VM's C frame,
	 * whose lua_State the BPF walker read: the layout does not fit. */
	if (t && t->lj && t->lj->state == LJ_WAITING_G &&
	    e->lua_state == LP_WALK_NO_G && crosses_vm(t->lj, e))
		t->lj_unvalidated++;
	memset(&rec, 0, sizeof(rec));
	rec.type = LP_REC_SAMPLE;
	/* To the microsecond, down: the tick comes with tens of them of
	 * jitter, and the nanoseconds would cost 2 bytes a sample. */
	rec.u.sample.time_ns = e->h.time_ns / SAMPLE_TIME_NS * SAMPLE_TIME_NS;
	rec.u.sample.pid = e->h.pid;
	rec.u.sample.tid = e->h.tid;
	rec.u.sample.cpu = e->h.cpu;
	rec.u.sample.kstack = intern_stack(s, LP_STACK_KERNEL, (const uint64_t *)e->kstack,
						 e->kstack_bytes);
	rec.u.sample.ustack = intern_stack(s, LP_STACK_USER, (const uint64_t *)e->ustack,
					   validated_ustack_bytes(t, e));
	rec.u.sample.ustop = e->ustack_stop;
	if (e->kstack_bytes < 0)
		rec.u.sample.flags |= LP_SAMPLE_KSTACK_FAILED;
	if (e->ustack_bytes < 0)
		rec.u.sample.flags |= LP_SAMPLE_USTACK_FAILED;
	rec.u.sample.lstack = e->lua_state == LP_WALK_WALKED ?
		intern_lua_stack(s, t, e, size) : 0;
	if (t && t->lj_gone && e->lua_state == LP_WALK_WALKED)
		s->lua.gone_dropped++;
	rec.u.sample.vmstate = e->vmstate;
	rec.u.sample.lua_state = e->lua_state;
	count_lua_state(s, e->lua_state, rec.u.sample.lstack);
	emit(s, &rec);
	s->samples++;
}

static int handle_event(void *ctx, void *data, size_t size)
{
	struct session *s = ctx;
	const struct lp_event_header *h = data;
	const struct lp_event_task *te = data;
	struct target *t;
	char comm[LP_COMM_LEN + 1];

	if (size < sizeof(*h))
		return 0;
	if (h->type == LP_EVENT_SAMPLE) {
		if (size >= lp_event_sample_size(0))
			handle_sample(s, data, size);
		return 0;
	}
	if (h->type == LP_EVENT_PROTO) {
		const struct lp_event_proto *pe = data;

		if (size >= sizeof(*pe))
			proto_table_note(s->protos, pe->h.pid, pe->addr, pe->fingerprint,
					 pe->firstline, pe->numline, pe->name,
					 pe->name_len < LP_PROTO_NAME_MAX ? pe->name_len : 0,
					 pe->name_full);
		return 0;
	}
	if (size < sizeof(*te))
		return 0;
	memcpy(comm, te->comm, LP_COMM_LEN);
	comm[LP_COMM_LEN] = '\0';
	switch (h->type) {
	case LP_EVENT_FORK:
		add_target(s, h->pid, te->ppid, h->time_ns, LP_PROC_FORKED, comm);
		break;
	case LP_EVENT_EXEC:
		add_target(s, h->pid, te->ppid, h->time_ns, LP_PROC_EXEC, comm);
		break;
	case LP_EVENT_EXIT:
		t = find_target(s, h->pid);
		if (t)
			target_exited(s, t, h->time_ns);
		break;
	}
	return 0;
}

/* The ring buffer's callback: during a flush the sidekick's thread polls
 * it, and its events are the sidekick's to queue (sidekick.c); the flag
 * changes only around sidekick_begin() and sidekick_end(), whose thread
 * start and join order it with the sidekick's reads. */
static int ring_event(void *ctx, void *data, size_t size)
{
	struct session *s = ctx;

	if (s->side_polls && s->side)
		return sidekick_event(s->side, data, size);
	return handle_event(s, data, size);
}

/* Kernel symbols are a courtesy to the report: failing to read them is
 * said once, and only a trace write error stops the recording. */
static int write_ksyms(struct session *s)
{
	static int warned;
	int err;

	if (s->write_err)
		return 0;
	err = ksym_set_write(s->ksyms, s->w);
	if (err == -ENOENT || err == -ENOMEM || err == -EACCES || err == -EPERM) {
		if (!warned++)
			fprintf(stderr, "luaprof record: kernel symbols unavailable (%s); "
				"kernel frames will print as [kernel]\n", strerror(-err));
		return 0;
	}
	return err;
}

/* The symbols of the objects hit so far, at every flush like the kernel
 * symbols, so that a trace cut short still symbolizes; at the end (last)
 * of those still being read too. */
static int write_objects(struct session *s, int last)
{
	if (s->write_err)
		return 0;
	return object_set_write(s->objs, s->w, last);
}

static void emit_lost(struct session *s)
{
	uint64_t lost = s->skel->bss->counters.lost_ringbuf;
	struct lp_record rec;

	if (lost <= s->lost_written)
		return;
	memset(&rec, 0, sizeof(rec));
	rec.type = LP_REC_LOST;
	rec.u.lost.time_ns = mono_ns();
	rec.u.lost.count = lost - s->lost_written;
	rec.u.lost.reason = LP_LOST_RINGBUF;
	emit(s, &rec);
	s->lost_written = lost;
}

/* Events the flush sidekick read but had no memory to keep. */
static void emit_dropped(struct session *s, uint64_t n)
{
	struct lp_record rec;

	if (!n)
		return;
	memset(&rec, 0, sizeof(rec));
	rec.type = LP_REC_LOST;
	rec.u.lost.time_ns = mono_ns();
	rec.u.lost.count = n;
	rec.u.lost.reason = LP_LOST_WRITE;
	emit(s, &rec);
	s->lost_dropped += n;
}

static void emit_meta(struct session *s)
{
	char host[256] = "", target[512] = "";
	struct utsname un;
	struct lp_record rec;
	int off = 0;

	gethostname(host, sizeof(host) - 1);
	uname(&un);
	if (s->o->command) {
		off = snprintf(target, sizeof(target), "command:");
		for (char **a = s->o->command; *a && off < (int)sizeof(target); a++)
			off += snprintf(target + off, sizeof(target) - off, " %s", *a);
	} else {
		off = snprintf(target, sizeof(target), "pid:");
		for (int i = 0; i < s->o->npids && off < (int)sizeof(target); i++)
			off += snprintf(target + off, sizeof(target) - off, "%s%d",
					i ? "," : " ", (int)s->o->pids[i]);
	}
	memset(&rec, 0, sizeof(rec));
	rec.type = LP_REC_META;
	rec.u.meta.version = LUAPROF_VERSION;
	rec.u.meta.cmdline = s->o->self_cmdline;
	rec.u.meta.target = target;
	rec.u.meta.hostname = host;
	rec.u.meta.kernel = un.release;
	rec.u.meta.clock = "monotonic";
	rec.u.meta.rate_hz = s->o->freq_hz;
	rec.u.meta.start_mono_ns = s->start_ns;
	rec.u.meta.start_real_ns = real_ns();
	rec.u.meta.flags = s->o->follow_children ? LP_META_FOLLOW_CHILDREN : 0;
	emit(s, &rec);
}

static int libbpf_quiet(enum libbpf_print_level level, const char *fmt,
			va_list args)
{
	(void)level;
	(void)fmt;
	(void)args;
	return 0;
}

static int libbpf_stderr(enum libbpf_print_level level, const char *fmt,
			 va_list args)
{
	(void)level;
	return vfprintf(stderr, fmt, args);
}

/* The maps sized to the targets as they are now (mapsize.c). */
static int size_maps(struct sampler *skel, void *arg)
{
	struct session *s = arg;
	pid_t *desc = NULL, *pids = NULL;
	int ndesc = 0, err;

	if (!s->o->command && s->o->follow_children)
		proc_descendants(s->o->pids, s->o->npids, &desc, &ndesc);
	pids = calloc(s->o->npids + ndesc + 1, sizeof(*pids));
	if (pids) {
		memcpy(pids, s->o->pids, s->o->npids * sizeof(*pids));
		if (ndesc)
			memcpy(pids + s->o->npids, desc, ndesc * sizeof(*pids));
	}
	map_plan_make(&s->maps_plan, skel, pids, pids ? s->o->npids + ndesc : 0,
		      s->o->command, s->o->freq_hz);
	free(desc);
	free(pids);
	err = map_plan_apply(&s->maps_plan, skel);
	if (!err && s->o->verbose)
		map_plan_print(&s->maps_plan, stderr);
	return err;
}

/* sampler_load() says why the sampler did not load (kernel.c). */
static int load_sampler(struct session *s)
{
	int err = sampler_load(&s->skel, s->o->follow_children, size_maps, s,
			       s->o->verbose, "luaprof record");

	if (err)
		return err;
	err = sampler__attach(s->skel);
	if (err)
		fprintf(stderr, "luaprof record: cannot attach the BPF sampler: %s%s\n",
			strerror(-err), err == -EPERM ? " (recording needs root, or "
			"CAP_BPF, CAP_PERFMON and CAP_SYS_RESOURCE)" : "");
	return err;
}

/* Kernel threads among the targets have no user stack: said once, with
 * the first one named. */
static void warn_kthreads(struct session *s)
{
	int n = 0, first = -1;

	for (int i = 0; i < s->ntargets; i++) {
		if (proc_is_kthread(s->targets[i].pid)) {
			if (!n++)
				first = i;
		}
	}
	if (!n || s->o->quiet)
		return;
	{
		struct proc_info info;

		if (proc_read_info(s->targets[first].pid, &info))
			snprintf(info.comm, sizeof(info.comm), "?");
		for (char *c = info.comm; *c; c++) /* a name from the kernel */
			if ((unsigned char)*c < 0x20 || *c == 0x7f)
				*c = '?';
		if (n == 1)
			fprintf(stderr, "luaprof record: pid %d (%s) is a kernel thread: it has "
				"no user stack; only its kernel stacks are recorded\n",
				(int)s->targets[first].pid, info.comm);
		else
			fprintf(stderr, "luaprof record: %d targets are kernel threads (pid %d "
				"(%s) and %d more): they have no user stack; only their "
				"kernel stacks are recorded\n", n, (int)s->targets[first].pid,
				info.comm, n - 1);
	}
}

/* Puts the initial targets in the BPF map and the trace.  The recorder
 * never profiles itself: `-p 1` makes it a descendant of a target. */
static int add_initial_targets(struct session *s)
{
	int fd = bpf_map__fd(s->skel->maps.targets);
	pid_t *roots = s->o->command ? &s->launched.pid : s->o->pids;
	int nroots = s->o->command ? 1 : s->o->npids;
	pid_t *desc = NULL, self = getpid();
	int ndesc = 0, err, skipped_self = 0;
	uint32_t zero = 0;

	for (int i = 0; i < nroots; i++) {
		uint32_t key = roots[i];

		if (roots[i] == self) {
			skipped_self = 1;
			continue;
		}
		if (bpf_map_update_elem(fd, &key, &zero, BPF_ANY))
			return -errno;
		add_target(s, roots[i], 0, s->start_ns,
			   s->o->command ? LP_PROC_LAUNCHED : LP_PROC_EXISTING, NULL);
	}
	if (s->o->follow_children) {
		err = proc_descendants(roots, nroots, &desc, &ndesc);
		if (err)
			return err;
	}
	for (int i = 0; i < ndesc; i++) {
		uint32_t key = desc[i];

		if (desc[i] == self) {
			skipped_self = 1;
			continue;
		}
		if (bpf_map_update_elem(fd, &key, &zero, BPF_ANY))
			continue; /* exited meanwhile */
		add_target(s, desc[i], 0, s->start_ns, LP_PROC_EXISTING, NULL);
	}
	free(desc);
	if (skipped_self && !s->o->quiet)
		fprintf(stderr, "luaprof record: not recording pid %d, this recorder "
			"itself\n", (int)self);
	warn_kthreads(s);
	return 0;
}

static void show_status(struct session *s, uint64_t now)
{
	struct trace_writer_stats ws;

	trace_writer_get_stats(s->w, &ws);
	fprintf(stderr, "\rluaprof: recording %.1f s, %llu samples, %llu lost, "
		"%d process%s, %.1f KiB written ", (now - s->start_ns) / 1e9,
		(unsigned long long)s->samples,
		(unsigned long long)s->skel->bss->counters.lost_ringbuf, s->nalive,
		s->nalive == 1 ? "" : "es", ws.file_bytes / 1024.0);
	s->status_shown = 1;
}

/* Did the launched command exit?  Reaps it if so. */
static int launched_exited(struct session *s)
{
	int status;

	if (!s->launched_running)
		return 0;
	if (waitpid(s->launched.pid, &status, WNOHANG) != s->launched.pid)
		return 0;
	s->launched_running = 0;
	return 1;
}

static void check_alive(struct session *s)
{
	for (int i = 0; i < s->ntargets; i++)
		if (s->targets[i].alive && !proc_exists(s->targets[i].pid))
			target_exited(s, &s->targets[i], mono_ns());
}

static void record_loop(struct session *s)
{
	uint64_t deadline = s->o->duration_s > 0 ?
		s->start_ns + (uint64_t)(s->o->duration_s * 1e9) : UINT64_MAX;
	/* Chunks every FLUSH_NS of sampling, not counting the setup. */
	uint64_t last_flush = mono_ns(), last_status = 0, last_alive = s->start_ns;
	int tty = isatty(STDERR_FILENO) && !s->o->quiet;

	while (!stop_requested && !s->write_err) {
		uint64_t now;
		int n = ring_buffer__poll(s->rb, 100);

		/* The sampler wakes us only for what cannot wait (see
		 * WAKEUP_BYTES in bpf/sampler.bpf.c): what waits is taken
		 * here, so that a flush below writes every sample taken
		 * until 100 ms ago, however slowly they come. */
		if (n >= 0)
			n = ring_buffer__consume(s->rb);
		if (n < 0 && n != -EINTR) {
			fprintf(stderr, "luaprof record: ring buffer: %s\n", strerror(-n));
			break;
		}
		now = mono_ns();
		emit_lost(s);
		if (now - last_flush >= FLUSH_NS) {
			/* The symbols and lines of what the second's samples
			 * hit go in the same chunk: they are small (only
			 * what was hit), and a chunk of their own would cost
			 * its header and its compressor's start each time. */
			int err;

			release_samples(s);
			/* Embedding may still resolve source lines from DWARF
			 * for long on a cold page cache: the sidekick keeps
			 * walks whole meanwhile (sidekick.c). */
			s->side_polls = 1;
			sidekick_begin(s->side);
			err = write_ksyms(s) ?: write_objects(s, 0) ?:
			      trace_writer_flush(s->w);
			emit_dropped(s, sidekick_end(s->side, handle_event, s));
			s->side_polls = 0;

			if (err)
				write_failed(s, err);
			last_flush = now;
		}
		if (tty && now - last_status >= STATUS_NS) {
			show_status(s, now);
			last_status = now;
		}
		if (now >= deadline)
			break;
		if (s->o->command && launched_exited(s))
			break;
		if (now - last_alive >= ALIVE_CHECK_NS) {
			check_alive(s);
			last_alive = now;
		}
		if (!s->o->command && s->nalive == 0)
			break;
	}
}

/* The run time below which a share q of the sampler's runs finished, in
 * ns: the upper edge of the bucket that holds it (the last bucket is open
 * ended, so a tail beyond it reads as its lower edge, marked ">"). */
static uint64_t runtime_quantile(const __u64 *hist, uint64_t total, double q,
				 int *open_ended)
{
	uint64_t want = (uint64_t)(q * total + 0.5), seen = 0;

	if (want < 1)
		want = 1;
	*open_ended = 0;
	for (int i = 0; i < LP_RUNTIME_BUCKETS; i++) {
		seen += hist[i];
		if (seen >= want) {
			if (i == LP_RUNTIME_BUCKETS - 1) {
				*open_ended = 1;
				return (uint64_t)i * LP_RUNTIME_BUCKET_NS;
			}
			return (uint64_t)(i + 1) * LP_RUNTIME_BUCKET_NS;
		}
	}
	return 0;
}

/* The sampler's own cost: the distribution it measures itself, per target
 * sample, and the kernel's mean over every tick, which is counted only
 * while kernel.bpf_stats_enabled is 1. */
static void print_bpf_stats(struct session *s)
{
	const __u64 *hist = s->skel->bss->runtime_hist;
	struct bpf_prog_info info;
	__u32 len = sizeof(info);
	int fd = bpf_program__fd(s->skel->progs.on_sample);
	uint64_t total = 0;

	for (int i = 0; i < LP_RUNTIME_BUCKETS; i++)
		total += hist[i];
	if (total) {
		static const double qs[] = { 0.5, 0.9, 0.99 };
		static const char *const names[] = { "median", "p90", "p99" };

		fprintf(stderr, "luaprof record: BPF sampler time per sample:");
		for (int i = 0; i < 3; i++) {
			int open_ended;
			uint64_t ns = runtime_quantile(hist, total, qs[i], &open_ended);

			fprintf(stderr, "%s %s %s%.2f us", i ? "," : "", names[i],
				open_ended ? ">" : "", ns / 1e3);
		}
		fprintf(stderr, " (%llu samples)\n", (unsigned long long)total);
	}
	memset(&info, 0, sizeof(info));
	if (bpf_obj_get_info_by_fd(fd, &info, &len) || !info.run_cnt) {
		fprintf(stderr, "luaprof record: BPF sampler mean run time unknown "
			"(sysctl kernel.bpf_stats_enabled=1 to measure it)\n");
		return;
	}
	fprintf(stderr, "luaprof record: BPF sampler: %llu runs, %.0f ns per run\n",
		(unsigned long long)info.run_cnt,
		(double)info.run_time_ns / info.run_cnt);
}

/* The sampler's time by phase (bpf/phases.h), summed over the CPUs: the
 * mean per sample of each, and the frames the walks produced. */
static void print_bpf_phases(struct session *s)
{
	static const char *const names[LP_PHASES] = {
#define LP_PHASE_NAME(name, what) what,
		LP_PHASE_LIST(LP_PHASE_NAME)
#undef LP_PHASE_NAME
	};
	int ncpus = libbpf_num_possible_cpus(), fd = bpf_map__fd(s->skel->maps.phase_times);
	struct lp_phase_times *v, sum = { 0 };
	__u32 zero = 0;
	double n;

	if (ncpus <= 0 || !(v = calloc(ncpus, sizeof(*v))))
		return;
	if (!bpf_map_lookup_elem(fd, &zero, v)) {
		for (int c = 0; c < ncpus; c++) {
			for (int i = 0; i < LP_PHASES; i++)
				sum.ns[i] += v[c].ns[i];
			sum.samples += v[c].samples;
			sum.lua_frames += v[c].lua_frames;
			sum.native_frames += v[c].native_frames;
			sum.native_reads += v[c].native_reads;
		}
	}
	free(v);
	if (!sum.samples)
		return;
	n = sum.samples;
	fprintf(stderr, "luaprof record: BPF sampler phases, mean per sample:");
	for (int i = 0; i < LP_PHASES; i++)
		fprintf(stderr, "%s %s %.2f us", i ? "," : "", names[i], sum.ns[i] / n / 1e3);
	fprintf(stderr, "; %.1f Lua and %.1f native frames, %.1f reads past the "
		"stack copy\n", sum.lua_frames / n, sum.native_frames / n,
		sum.native_reads / n);
}

static void print_summary(struct session *s, uint64_t end_ns)
{
	const struct lp_bpf_counters *c = &s->skel->bss->counters;
	double secs = (end_ns - s->start_ns) / 1e9;
	uint64_t unwritten = s->samples - s->written;
	struct stat st;
	unsigned long long bytes = 0;

	/* The file's own size: the footer is written after the last stats. */
	if (!stat(s->o->output, &st))
		bytes = st.st_size;
	if (s->status_shown)
		fprintf(stderr, "\r\033[K");
	/* Samples are what the file holds: those taken but not written
	 * after a write error are lost, and said to be. */
	fprintf(stderr, "luaprof record: %llu samples, %llu lost, %.2f s, %d process%s\n",
		(unsigned long long)s->written,
		(unsigned long long)(c->lost_ringbuf + s->lost_dropped + unwritten),
		secs, s->ntargets, s->ntargets == 1 ? "" : "es");
	if (s->write_err)
		fprintf(stderr, "luaprof record: after the write error, %llu of the %llu "
			"samples taken were not written: they are lost\n",
			(unsigned long long)unwritten, (unsigned long long)s->samples);
	fprintf(stderr, "luaprof record: wrote %s: %llu bytes, %.1f bytes/sample, "
		"%llu stacks\n", s->o->output, bytes,
		s->written ? (double)bytes / s->written : 0.0,
		(unsigned long long)stack_table_count(s->stacks));
	{
		uint64_t nobj, nemb, nsym, of;

		object_set_stats(s->objs, &nobj, &nemb, &nsym, &of);
		if (nobj)
			fprintf(stderr, "luaprof record: %llu objects mapped, symbols of "
				"%llu embedded (%llu symbols of %llu: those samples "
				"hit)%s\n", (unsigned long long)nobj,
				(unsigned long long)nemb, (unsigned long long)nsym,
				(unsigned long long)of,
				s->o->no_embed ? " (--no-embed)" : "");
		if (!s->o->no_embed)
			object_set_print_srclines(s->objs, s->o->verbose);
	}
	if (c->lost_task)
		fprintf(stderr, "luaprof record: %llu process events lost\n",
			(unsigned long long)c->lost_task);
	if (s->lua.samples_lua || s->lua.no_g || s->lua.bad_l || s->lua.no_vm)
		fprintf(stderr, "luaprof record: Lua: %llu samples with Lua frames "
			"(%.1f%%), %llu truncated, %llu in host code; no VM state in "
			"%llu; %llu protos (%llu unreadable, %llu gone before they were "
			"read, named from their first sample)\n",
			(unsigned long long)s->lua.samples_lua,
			s->samples ? 100.0 * s->lua.samples_lua / s->samples : 0.0,
			(unsigned long long)s->lua.truncated,
			(unsigned long long)s->lua.idle,
			(unsigned long long)(s->lua.no_g + s->lua.bad_l + s->lua.no_vm),
			(unsigned long long)proto_table_count(s->protos),
			(unsigned long long)proto_table_failed(s->protos),
			(unsigned long long)proto_table_from_ident(s->protos));
	if (proto_table_nomem(s->protos))
		fprintf(stderr, "luaprof record: Lua: out of memory %llu times reading "
			"protos (their frames unknown, or named from their first "
			"sample)\n",
			(unsigned long long)proto_table_nomem(s->protos));
	if (jit_trace_table_count(s->jit_traces)) {
		struct snap_stats ts;

		jit_trace_table_stats(s->jit_traces, &ts);
		fprintf(stderr, "luaprof record: compiled traces: %llu met, read %llu "
			"times: with their snapshots %llu (%llu snapshots, %llu not "
			"decoded), gone or changed %llu, unreadable %llu\n",
			(unsigned long long)jit_trace_table_count(s->jit_traces),
			(unsigned long long)(ts.traces + ts.stale + ts.unreadable),
			(unsigned long long)ts.traces, (unsigned long long)ts.snaps,
			(unsigned long long)ts.unplaced, (unsigned long long)ts.stale,
			(unsigned long long)ts.unreadable);
	}
	{
		struct source_stats ss;

		source_table_stats(s->sources, &ss);
		if (ss.whole + ss.cut + ss.changed + ss.unreadable + ss.budget)
			fprintf(stderr, "luaprof record: Lua sources: %llu files embedded "
				"(%llu bytes), %llu cut to their first %u KiB; not "
				"embedded: %llu changed since loaded, %llu unreadable, "
				"%llu over the trace's %u MiB\n",
				(unsigned long long)(ss.whole + ss.cut),
				(unsigned long long)ss.bytes, (unsigned long long)ss.cut,
				SOURCE_FILE_MAX >> 10, (unsigned long long)ss.changed,
				(unsigned long long)ss.unreadable,
				(unsigned long long)ss.budget, SOURCE_TRACE_MAX >> 20);
	}
	if (s->lua.procs_gone)
		fprintf(stderr, "luaprof record: %llu LuaJIT process%s exited before "
			"%s VM could be checked: %llu of %s samples without Lua "
			"frames\n", (unsigned long long)s->lua.procs_gone,
			s->lua.procs_gone == 1 ? "" : "es",
			s->lua.procs_gone == 1 ? "its" : "their",
			(unsigned long long)s->lua.gone_dropped,
			s->lua.procs_gone == 1 ? "its" : "their");
	for (int i = 0; i < s->ntargets; i++) {
		const struct target *t = &s->targets[i];

		if (t->lj && t->lj->state == LJ_WAITING_G && t->lj_unvalidated)
			fprintf(stderr, "luaprof record: pid %d: LuaJIT found in %s but "
				"no sample showed a global_State that validates with "
				"the layout (%s): no Lua frames recorded; the offsets "
				"are probably wrong for this build\n", (int)t->pid,
				t->lj->object, t->lj->source);
	}
	if (s->unw) {
		struct unwind_stats us;

		/* The unwind maps are sized at the start (mapsize.c): what
		 * came later and did not fit is said, -v or not. */
		unwind_stats(s->unw, &us);
		if (us.objects_full || us.objects_unindexed)
			fprintf(stderr, "luaprof record: native unwind: %u objects did not "
				"fit the unwind tables and were walked with frame "
				"pointers, %u without an index (slower); sized at the "
				"start for %u rows and %u buckets\n", us.objects_full,
				us.objects_unindexed, s->maps_plan.rows, s->maps_plan.buckets);
	}
	if (s->o->verbose) {
		struct sidekick_stats ks;

		print_bpf_stats(s);
		print_bpf_phases(s);
		unwind_print_stats(s->unw, stderr); /* native unwinder */
		for (int i = 0; i < s->ncut_walks; i++)
			fprintf(stderr, "luaprof record: native unwind: walk cut short at %s\n",
				s->cut_walks[i]);
		sidekick_stats(s->side, &ks);
		fprintf(stderr, "luaprof record: during flushes: %llu events read, %llu "
			"process mappings published for the unwinder\n",
			(unsigned long long)ks.queued, (unsigned long long)ks.published);
	}
}

static int finish(struct session *s)
{
	struct trace_writer_stats ws;
	struct lp_footer footer;
	uint64_t end_ns = mono_ns();
	int err;

	perf_sampling_detach(&s->perf);
	/* What is still in the ring buffer was sampled: keep it. */
	ring_buffer__consume(s->rb);
	emit_lost(s);
	release_samples(s);
	/* The last samples in a chunk of their own, before the symbol
	 * tables: a disk that fills on the tables keeps them, and the
	 * footer's count is then what the file holds. */
	err = trace_writer_flush(s->w) ?: write_ksyms(s) ?: write_objects(s, 1);
	if (err)
		write_failed(s, err);
	/* Every sample is flushed by now, or lost with a write error: what
	 * the file holds is final.  (What follows is symbol tables.) */
	trace_writer_get_stats(s->w, &ws);
	s->written = ws.samples;
	footer.samples = s->written;
	footer.lost = s->skel->bss->counters.lost_ringbuf + s->lost_dropped;
	footer.chunks = 0; /* the writer fills in its own count */
	footer.end_mono_ns = end_ns;
	err = trace_writer_close(s->w, &footer);
	s->w = NULL;
	if (err && !s->write_err)
		write_failed(s, err);
	if (!s->o->quiet)
		print_summary(s, end_ns);
	return s->write_err ? 1 : 0;
}

static void stop_launched(struct session *s)
{
	if (!s->launched_running)
		return;
	kill(s->launched.pid, SIGTERM);
	waitpid(s->launched.pid, NULL, 0);
	s->launched_running = 0;
}

int record_session_run(const struct record_opts *o)
{
	struct session s = { .o = o, .launched = { .pid = -1, .go_fd = -1, .err_fd = -1 } };
	struct sigaction sa;
	char old[PATH_MAX + 8] = "";
	int err, ret = 1, recording = 0;

	for (int i = 0; i < o->npids; i++) {
		if (!proc_exists(o->pids[i])) {
			fprintf(stderr, "luaprof record: no process with pid %d\n",
				(int)o->pids[i]);
			return 1;
		}
	}
	for (int i = 0, others = 0; i < o->npids && !others; i++) {
		others = o->pids[i] != getpid();
		if (!others && i == o->npids - 1) {
			fprintf(stderr, "luaprof record: pid %d is this recorder itself: "
				"nothing to record\n", (int)getpid());
			return 1;
		}
	}
	libbpf_set_print(o->verbose ? libbpf_stderr : libbpf_quiet);
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_stop_signal;
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	/* Past a file size limit (ulimit -f), write() fails with EFBIG and
	 * the recording stops as on a full disk, rather than being killed. */
	signal(SIGXFSZ, SIG_IGN);

	s.stacks = stack_table_new();
	s.ksyms = ksym_set_new();
	s.protos = proto_table_new();
	s.jit_traces = jit_trace_table_new();
	s.sources = source_table_new();
	s.objs = object_set_new(!o->no_embed);
	if (!s.stacks || !s.ksyms || !s.protos || !s.jit_traces || !s.sources || !s.objs) {
		fprintf(stderr, "luaprof record: out of memory\n");
		goto cleanup;
	}
	if (make_way(o->output, old, sizeof(old)))
		goto cleanup;
	err = trace_writer_open(&s.w, o->output, o->codec);
	if (err) {
		fprintf(stderr, "luaprof record: cannot create %s: %s\n", o->output,
			strerror(-err));
		goto cleanup;
	}
	if (load_sampler(&s))
		goto cleanup;
	err = unwind_init(&s.unw, s.skel); /* native unwinder */
	if (err && !o->quiet)
		fprintf(stderr, "luaprof record: native unwinding off (%s); user "
			"stacks follow frame pointers\n", strerror(-err));
	if (o->command) {
		err = launch_prepare(o->command, &s.launched);
		if (err) {
			fprintf(stderr, "luaprof record: cannot start %s: %s\n",
				o->command[0], strerror(-err));
			goto cleanup;
		}
		s.launched_running = 1;
		/* native unwinder: its tables ready before it runs; and
		 * what finding its LuaJIT takes */
		unwind_preload(s.unw, o->command[0], lj_preload, NULL);
	}
	s.start_ns = mono_ns();
	emit_meta(&s);
	err = add_initial_targets(&s);
	if (err) {
		fprintf(stderr, "luaprof record: cannot add targets: %s\n", strerror(-err));
		goto cleanup;
	}
	/* Setup that costs the machine, done before sampling starts; a
	 * failure is said at the first write. */
	ksym_set_load(s.ksyms);
	s.rb = ring_buffer__new(bpf_map__fd(s.skel->maps.events), ring_event, &s, NULL);
	if (!s.rb) {
		fprintf(stderr, "luaprof record: ring buffer: %s\n", strerror(errno));
		goto cleanup;
	}
	err = sidekick_new(&s.side, s.rb, s.unw, known_maps, &s);
	if (err && !o->quiet)
		fprintf(stderr, "luaprof record: no flush sidekick (%s): walks of processes "
			"started during a flush may be cut short\n", strerror(-err));
	err = perf_sampling_attach(&s.perf, s.skel->progs.on_sample, o->freq_hz);
	if (err) {
		fprintf(stderr, "luaprof record: cannot open cpu-clock perf events: %s\n",
			strerror(-err));
		goto cleanup;
	}
	if (o->command) {
		err = launch_start(&s.launched);
		if (err) {
			fprintf(stderr, "luaprof record: cannot execute %s: %s\n",
				o->command[0], strerror(-err));
			waitpid(s.launched.pid, NULL, 0);
			s.launched_running = 0;
			goto cleanup;
		}
	}
	recording = 1;
	if (!o->quiet && old[0])
		fprintf(stderr, "luaprof record: the existing %s is kept as %s\n",
			o->output, old);
	if (!o->quiet)
		fprintf(stderr, "luaprof record: recording %d process%s at %u Hz into %s "
			"(Ctrl-C to stop)\n", s.nalive, s.nalive == 1 ? "" : "es",
			o->freq_hz, o->output);
	record_loop(&s);
	stop_launched(&s);
	ret = finish(&s);
cleanup:
	if (s.launched.go_fd >= 0) { /* never started: let it go */
		close(s.launched.go_fd);
		waitpid(s.launched.pid, NULL, 0);
	}
	if (s.launched.err_fd >= 0)
		close(s.launched.err_fd);
	perf_sampling_detach(&s.perf);
	sidekick_free(s.side);
	ring_buffer__free(s.rb);
	unwind_free(s.unw); /* native unwinder */
	sampler__destroy(s.skel);
	if (s.w) {
		trace_writer_close(s.w, NULL);
		if (!recording) {
			/* Nothing was recorded: leave nothing, and the old
			 * trace where it was. */
			unlink(o->output);
			if (old[0])
				rename(old, o->output);
		}
	}
	stack_table_free(s.stacks);
	ksym_set_free(s.ksyms);
	object_set_free(s.objs);
	proto_table_free(s.protos);
	jit_trace_table_free(s.jit_traces);
	source_table_free(s.sources);
	for (int i = 0; i < s.ntargets; i++) {
		maps_table_free(&s.targets[i].maps);
		maps_table_free(&s.targets[i].exec_maps);
		free(s.targets[i].lj);
	}
	free(s.targets);
	free(s.held);
	return ret;
}

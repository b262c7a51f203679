/*
 * session_lua.c - the Lua side of a recording: finding and checking each
 * target's LuaJIT VM (or saying a PUC Lua one), the LUAJIT record with the
 * builtins its samples ran, prototypes written as the walk meets them,
 * and the Lua stacks a sample's walk produced, interned for the trace.
 */

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <sys/stat.h>

#include "bpf/sampler.h"
#include "record/events.h"
#include "record/heap.h"
#include "record/objects.h"
#include "record/say.h"
#include "record/stacks.h"
#include "sampler.skel.h"
#include "record/unwind.h"
#include "record/session_priv.h"

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
	procs_changed(s);
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
		say(stderr, 0, "pid %d: PUC %s: not supported (luaprof walks LuaJIT "
		    "2.1 only); recording native frames only", (int)t->pid, what);
	rec.u.puc_lua = (struct lp_puc_lua){ .pid = (uint32_t)t->pid,
					     .version = puc->version,
					     .object = puc->object };
	emit(s, &rec);
}

static void probe_lua_resume(struct session *s, struct target *t);
static int locate_early(struct session *s, struct target *t, uint64_t was);

void attach_luajit(struct session *s, struct target *t, struct target *parent)
{
	char msg[1024], what[PATH_MAX + 1024];
	struct lua_puc puc;
	uint64_t was = t->lj && t->lj->state == LJ_READY ? t->lj->G : 0;
	int err;

	free(t->lj);
	t->lj = NULL;
	memset(t->ff_named, 0, sizeof(t->ff_named)); /* a new VM */
	if (parent && parent->lj && parent->lj->state != LJ_REFUSED) {
		t->lj = lj_target_fork(parent->lj, t->pid);
	} else {
		err = lj_detect(t->pid, &t->maps, s->o->luajit_offsets, &t->lj,
				&puc, msg, sizeof(msg));
		/* Once: a process is attached again when its mappings
		 * change (its entry point, a library loaded). */
		if (err && err != -ENOENT && !t->lj_refused_said) {
			say(stderr, 0, "pid %d: %s; recording native frames only",
			    (int)t->pid, msg);
			t->lj_refused_said = 1;
		}
		if (!t->lj && puc.version[0] && !t->puc_noted) {
			note_puc_lua(s, t, &puc);
			t->puc_noted = 1;
		}
		if (!t->lj)
			return;
		snprintf(what, sizeof(what), "%s; %s", t->lj->object, t->lj->source);
		if (announce_vm(s, t->pid, what))
			say(stderr, 0, "pid %d: LuaJIT in %s", (int)t->pid, what);
	}
	if (t->lj) {
		if (!locate_early(s, t, was))
			publish_luajit(s, t);
		probe_lua_resume(s, t);
	}
}

/* A VM that runs already is located before its first sample, from its
 * memory: the walk has its G from the first tick, though that tick be in
 * code where DISPATCH is not in its register.  The G it had before this
 * attach (was: its mappings changed) or another target's of the same
 * image (a fork's) is tried first, with a few reads; else the process's
 * memory is searched (heap_find_G()).  A G found so is checked as a
 * sample's is, on a copy: a wrong one is only not taken.  1 if located
 * (and published). */
static int locate_early(struct session *s, struct target *t, uint64_t was)
{
	struct lj_target probe = *t->lj;
	char msg[256];
	uint64_t G = 0;

	if (t->lj->state != LJ_WAITING_G)
		return 0;
	if (was && heap_is_G(t->pid, &t->lj->layout, was))
		G = was;
	for (int i = 0; i < s->ntargets && !G; i++) {
		const struct lj_target *o = s->targets[i].lj;

		if (o && o->state == LJ_READY && o->bias == t->lj->bias &&
		    !strcmp(o->object, t->lj->object) && heap_is_G(t->pid, &t->lj->layout, o->G))
			G = o->G;
	}
	if ((!G && heap_find_G(t->pid, &t->lj->layout, &G)) ||
	    lj_locate_vm(&probe, G, msg, sizeof(msg)))
		return 0;
	locate_luajit(s, t, G);
	return t->lj->state == LJ_READY;
}

/*
 * Lua-land waits (bpf/luawait.bpf.h): probes on the exported lua_resume
 * of t's LuaJIT object, entry and return, once per object file: a probe
 * on a file fires in every process that maps it, and the programs keep
 * the targets' hits only.  The file is opened through t's root, as the
 * process sees it (a container's).  Said once per object when it fails:
 * that VM's waits are not recorded; nothing else is lost.
 */
static void probe_lua_resume(struct session *s, struct target *t)
{
	LIBBPF_OPTS(bpf_uprobe_opts, opts, .func_name = "lua_resume");
	char path[PATH_MAX + 32];
	struct lua_probe *p;
	struct stat st;
	int err;

	if (!(s->o->kinds & EVENTS_BIT(LP_KIND_LUA_WAIT)))
		return;
	snprintf(path, sizeof(path), "/proc/%d/root%s", (int)t->pid, t->lj->object);
	if (stat(path, &st))
		return; /* gone: its samples say so */
	for (int i = 0; i < s->nlua_probes; i++)
		if (s->lua_probes[i].dev == st.st_dev && s->lua_probes[i].ino == st.st_ino)
			return;
	if (s->nlua_probes == LUA_PROBES) {
		say(stderr, s->status_shown, "pid %d: %d LuaJIT objects probed already; "
		    "no Lua-land waits from %s", (int)t->pid, LUA_PROBES, t->lj->object);
		return;
	}
	p = &s->lua_probes[s->nlua_probes++];
	*p = (struct lua_probe){ .dev = st.st_dev, .ino = st.st_ino };
	p->entry = bpf_program__attach_uprobe_opts(s->skel->progs.on_resume, -1, path, 0, &opts);
	opts.retprobe = true;
	p->ret = p->entry ? bpf_program__attach_uprobe_opts(s->skel->progs.on_resume_return,
							     -1, path, 0, &opts) : NULL;
	if (p->entry && p->ret)
		return;
	err = -errno;
	say(stderr, s->status_shown, "pid %d: cannot probe lua_resume in %s: %s; no "
	    "Lua-land waits from it", (int)t->pid, t->lj->object, strerror(-err));
	bpf_link__destroy(p->entry);
	p->entry = NULL;
}

void unprobe_lua_resume(struct session *s)
{
	for (int i = 0; i < s->nlua_probes; i++) {
		bpf_link__destroy(s->lua_probes[i].entry);
		bpf_link__destroy(s->lua_probes[i].ret);
	}
	s->nlua_probes = 0;
}

/* The first sample showing a valid G locates the VM; a failed check stops
 * the Lua walk for that process, saying why. */
void locate_luajit(struct session *s, struct target *t, uint64_t G)
{
	uint32_t pid = (uint32_t)t->pid;
	struct lp_file_id key;
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
		say(stderr, s->status_shown, "pid %d: LuaJIT layout did not validate: "
		    "%s; recording native frames only", (int)t->pid, msg);
		bpf_map_delete_elem(bpf_map__fd(s->skel->maps.lj_procs), &pid);
		procs_changed(s);
		return;
	}
	if (s->o->verbose)
		fprintf(stderr, "luaprof record: pid %d: LuaJIT VM at G=0x%llx, "
			"interpreter 0x%llx-0x%llx\n", (int)t->pid,
			(unsigned long long)G, (unsigned long long)t->lj->vm_start,
			(unsigned long long)t->lj->vm_end);
	publish_luajit(s, t);
	probe_alloc(s, t);
	/* A LuaJIT executable: the next process to exec it has its layout
	 * from its first tick (the map holds 64; past that, from attach). */
	if (!lj_target_image(t->lj, &key, &proc))
		bpf_map_update_elem(bpf_map__fd(s->skel->maps.lj_images), &key, &proc,
				    BPF_ANY);
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
	case LP_LUA_TRUNC_UNMAPPED: return "a C function in no known mapping";
	}
	return "unknown reason";
}

/*
 * A builtin written in C (os.clock, lj_cf_os_clock) runs as a native
 * frame of its own, leafward of the VM's, which in a stripped LuaJIT
 * reads LIB+0x... beside the builtin's name: os.clock;LIB+0x13448;clock.
 * So does a C function (a host's, a C module's), named by its entry
 * address where its return address names another place in it:
 * tslua.so+0x10550;tslua.so+0x1056f.  When the function that holds that
 * native frame (by its FDE) starts at the builtin's or C function's
 * entry, the leaf frame says so (pc 1) and the report leaves the native
 * frame out.  An ASM builtin runs in the VM's own code, which no native
 * frame shows apart.
 */
static void mark_builtin_code(struct session *s, const struct target *t,
			      const struct lp_event_sample *e, struct lp_lframe *frames,
			      uint64_t *triplets)
{
	uint64_t f = e->lua[0].addr, lo = t->lj->vm_start, hi = t->lj->vm_end, a, start;
	uint32_t nu = (uint32_t)sample_ustack_frames(e), j;

	if ((frames[0].kind != LP_LFRAME_FF && frames[0].kind != LP_LFRAME_C) || !f ||
	    (f >= lo && f < hi) || !nu ||
	    (e->ustack[0] >= lo && e->ustack[0] < hi))
		return;
	/* The VM's frame: the first return address in its code. */
	for (j = 1; j < nu && !(e->ustack[j] - 1 >= lo && e->ustack[j] - 1 < hi); j++)
		;
	if (j >= nu)
		return;
	a = j == 1 ? e->ustack[0] : e->ustack[j - 1] - 1;
	if (unwind_function_start(s->unw, t->pid, a, &start) || start != f)
		return;
	frames[0].pc = 1;
	triplets[2] = 1;
}

/*
 * A trace that runs without its number (arm64's): the one whose code
 * holds the address the native walk stepped over as a trace's, a return
 * address when it is not the leaf (looked up a byte before it, inside the
 * call), fills in the sample's trace frame.  Code that no trace of the
 * process holds is another JIT's, called from the trace through the FFI
 * (PCRE's): the walk stepped over it to the VM's C frame as over a
 * foreign JIT's, which it tells by the running trace's bounds where
 * traces carry their number (bpf/unwind_native.bpf.h, unwind_jit_step()),
 * and the stack gets the gap that walk leaves after it.  Nothing changes
 * when the traces cannot be read.
 */
void place_unnumbered_trace(struct session *s, struct target *t, struct lp_event_sample *e)
{
	uint32_t i = e->ustack_jit, n = sample_ustack_frames(e), k, no;
	uint64_t addr;
	uint16_t fp;
	int err;

	if (!i || i > n || !t || !t->lj || t->lj->state != LJ_READY)
		return;
	for (k = 0; k < e->lua_depth && k < LP_MAX_LUA; k++)
		if (e->lua[k].kind == LP_LUA_FRAME_TRACE)
			break;
	if (k >= e->lua_depth || k >= LP_MAX_LUA || e->lua[k].addr || e->lua[k].pc)
		return;
	err = jit_trace_at(s->jit_traces, t->lj, e->ustack[i - 1] - (i > 1), &no, &addr, &fp);
	if (!err) {
		e->lua[k].pc = no;
		e->lua[k].addr = addr;
		e->lua[k].fingerprint = fp;
		return;
	}
	if (err != -ESRCH)
		return;
	e->ustack_jit = 0;
	s->lua.foreign_code++;
	if (i == n) /* the walk stopped there: nothing after it */
		return;
	if (n == LP_MAX_USTACK) { /* the root goes: the stack is cut there */
		n--;
		e->ustack_stop = LP_USTOP_DEPTH;
	}
	memmove(&e->ustack[i + 1], &e->ustack[i], (n - i) * sizeof(e->ustack[0]));
	e->ustack[i] = LP_USTACK_GAP;
	e->ustack_bytes = (int32_t)((n + 1) * sizeof(e->ustack[0]));
}

/* Interns the Lua frames of a sample (reading new protos on the way) and
 * returns the Lua stack id, 0 if none. */
uint64_t intern_lua_stack(struct session *s, struct target *t,
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

		/* A C function no mapping names would print as [unmapped], a
		 * frame nobody can check: the stack ends there, cut. */
		if (f->kind == LP_LUA_FRAME_C &&
		    !check_code_address(s, t, e->h.time_ns, f->addr)) {
			frames[i] = (struct lp_lframe){ .kind = LP_LFRAME_TRUNC,
							.value = LP_LUA_TRUNC_UNMAPPED };
			triplets[3 * i] = LP_LFRAME_TRUNC;
			triplets[3 * i + 1] = LP_LUA_TRUNC_UNMAPPED;
			triplets[3 * i + 2] = 0;
			n = i + 1;
			break;
		}
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
	mark_builtin_code(s, t, e, frames, triplets);
	if (frames[n - 1].kind == LP_LFRAME_TRUNC) {
		/* The first few, in detail, for whoever debugs a walk. */
		if (s->o->verbose && s->lua.truncated < 5)
			fprintf(stderr, "luaprof record: pid %d: Lua stack truncated "
				"(%s) at frame 0x%llx after %u frames, vmstate %d, pc 0x%llx\n",
				(int)t->pid, trunc_reason(frames[n - 1].value),
				(unsigned long long)e->lua[n - 1].addr, n - 1, e->vmstate,
				(unsigned long long)(e->ustack_bytes >= 8 ? e->ustack[0] : 0));
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

void count_lua_state(struct session *s, uint32_t state, uint64_t lstack)
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

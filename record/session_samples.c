/*
 * session_samples.c - from a ring-buffer event to trace records: a sample's
 * kernel, native and Lua stacks interned, its mappings checked, its cut
 * walks noted for -v; process events (fork, exec, exit) handed to the
 * targets.  The BPF side's enums are the trace's, checked here where one
 * becomes the other.
 */

#include <stdio.h>
#include <string.h>

#include "record/kallsyms.h"
#include "record/sample_event.h"
#include "record/objects.h"
#include "record/sidekick.h"
#include "record/stacks.h"
#include "record/unwind.h"
#include "record/session_priv.h"

_Static_assert((int)LP_WALK_WALKED == (int)LP_LUA_WALKED &&
		       (int)LP_WALK_NO_VM == (int)LP_LUA_NO_VM &&
		       (int)LP_WALK_IDLE == (int)LP_LUA_IDLE &&
		       (int)LP_WALK_NO_G == (int)LP_LUA_NO_G &&
		       (int)LP_WALK_BAD_L == (int)LP_LUA_BAD_L &&
		       (int)LP_WALK_SUSPENDED == (int)LP_LUA_SUSPENDED,
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
_Static_assert(LP_USTACK_GAP == LP_ADDR_GAP, "a gap in a user stack is the trace's");
_Static_assert((int)LP_LUA_FRAME_LUA == (int)LP_LFRAME_LUA &&
		       (int)LP_LUA_FRAME_C == (int)LP_LFRAME_C &&
		       (int)LP_LUA_FRAME_FF == (int)LP_LFRAME_FF &&
		       (int)LP_LUA_FRAME_ENTRY == (int)LP_LFRAME_ENTRY &&
		       (int)LP_LUA_FRAME_TRACE == (int)LP_LFRAME_TRACE &&
		       (int)LP_LUA_FRAME_TRUNC == (int)LP_LFRAME_TRUNC,
	       "BPF frame kinds and trace frame kinds agree");

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

/*
 * The bytes of the user stack worth keeping.  A walk that stopped at a
 * return address in no known code recorded it: new code (dlopen), which
 * the re-read of the mappings found, or stack data taken for a return
 * address, which it did not.  The latter is no frame: the stack ends
 * before it, cut (the sample's ustop says so).  The leaf is never data.
 *
 * Nor does the trace keep a frame above the leaf that no mapping it holds
 * names, however the walk got there: the report would print it as
 * [unmapped], a frame nobody can check.  The stack ends before it, cut,
 * and *unnamed says so (a walk whole to its end included: the walker had
 * tables for code the trace has no mapping for).
 */
static int validated_ustack_bytes(const struct target *t,
				  const struct lp_event_sample *e, const struct uframes *u,
				  int all_mapped, int *unnamed)
{
	int n = sample_ustack_frames(e);
	const struct lp_mapping *m;

	*unnamed = 0;
	/* The kernel's frame-pointer walk (a process without tables) stores
	 * a return address of 0 as it found it: the stack's end, where a 0
	 * from our walker is a gap (LP_USTACK_GAP), and the trace says so. */
	for (int i = 1; e->ustack_stop == LP_USTOP_FALLBACK && i < n; i++)
		if (e->ustack[i] == LP_USTACK_GAP)
			return i * 8;
	if (!t || n < 2)
		return e->ustack_bytes;
	/* (note_user_frames() found every frame in t's mappings already.) */
	for (int i = 1; i < n - 1 && !all_mapped; i++) {
		if (e->ustack[i] == LP_USTACK_GAP)
			continue; /* frames the walk could not see: a mark */
		if (!u->map[i]) {
			*unnamed = 1;
			return i * 8;
		}
	}
	m = u->map[n - 1];
	if (e->ustack_stop == LP_USTOP_UNMAPPED && !m)
		return (n - 1) * 8;
	if (!m) {
		*unnamed = 1;
		return (n - 1) * 8;
	}
	/* A walk that stopped at a return address into anonymous code (a
	 * trace, for LuaJIT) with no Lua frames to stand for it: nothing
	 * says what ran there, nor that it is code at all. */
	if ((e->ustack_stop == LP_USTOP_UNMAPPED || e->ustack_stop == LP_USTOP_JIT) &&
	    !m->path[0] && !e->lua_depth)
		return (n - 1) * 8;
	return e->ustack_bytes;
}

/* record -v: when, where and why a native walk stopped short of the
 * stack's outermost frame, for the first few, so that a stack that does
 * not reach main explains itself (tests/e2e/native_unwind.sh prints them
 * when a share falls short). */
static void note_cut_walk(struct session *s, const struct lp_event_sample *e,
			  const struct uframes *u)
{
	int n = sample_ustack_frames(e);
	const struct lp_mapping *m;
	uint64_t pc;
	char where[96] = "no frame";

	if (s->ncut_walks >= CUT_WALKS || e->ustack_stop == LP_USTOP_END ||
	    e->ustack_stop == LP_USTOP_DEPTH)
		return;
	if (n) {
		pc = e->ustack[n - 1];
		m = u->n == n ? u->map[n - 1] : NULL;
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

/* How many of e's n root-side user frames its thread's last sample had
 * too, when that one's were all in t's mappings as they are now: never
 * the leaf of either (the object set notes a leaf's address, a caller's
 * less one). */
static int frames_as_last(const struct session *s, const struct target *t,
			  const struct lp_event_sample *e, int n)
{
	const struct last_ustack *l = &s->last_ustacks[e->h.tid % LAST_USTACKS];
	int k = 0, max = n < (int)l->n ? n : (int)l->n;

	if (!l->maps_gen || l->maps_gen != t->maps_gen || l->pid != e->h.pid ||
	    l->tid != e->h.tid)
		return 0;
	while (k < max - 1 && l->pc[l->n - 1 - k] == e->ustack[n - 1 - k])
		k++;
	return k;
}

/* Looks up e's user frames in t's mappings, but for the root-side `same`
 * ones, whose mappings its thread's last sample found (l). */
static void resolve_frames(const struct target *t, const struct lp_event_sample *e,
			   const struct last_ustack *l, int same, struct uframes *u)
{
	u->n = sample_ustack_frames(e);
	u->maps_gen = t->maps_gen;
	for (int i = 0; i < u->n - same; i++)
		u->map[i] = maps_table_find(&t->maps, sample_frame_addr(e->ustack[i], i));
	for (int k = 0; k < same; k++)
		u->map[u->n - 1 - k] = l->map[l->n - 1 - k];
}

/* Resolves e's user frames (u), checks them against t's mappings (re-read
 * if some are not there, and resolved again) and notes them for the
 * object set, but for those its thread's last sample had; keeps them for
 * its next, and returns 1, if all were there. */
static int note_user_frames(struct session *s, struct target *t,
			    const struct lp_event_sample *e, struct uframes *u)
{
	struct last_ustack *l = &s->last_ustacks[e->h.tid % LAST_USTACKS];
	int n = sample_ustack_frames(e);
	int same = frames_as_last(s, t, e, n), in_maps;

	resolve_frames(t, e, l, same, u);
	in_maps = check_mappings(s, t, e, u);
	if (t->maps_gen != u->maps_gen) {
		same = 0; /* re-read: the frames are noted in the new ones */
		resolve_frames(t, e, l, 0, u);
	}
	if (n > 0)
		object_set_note_frames(s->objs, u->map, (const uint64_t *)e->ustack, n - same);
	l->maps_gen = in_maps ? t->maps_gen : 0;
	l->pid = e->h.pid;
	l->tid = e->h.tid;
	l->n = in_maps ? n : 0;
	if (in_maps) {
		memcpy(l->pc, e->ustack, n * sizeof(l->pc[0]));
		memcpy(l->map, u->map, n * sizeof(l->map[0]));
	}
	return in_maps;
}

/* Does the sample's native stack hold a return address into t's
 * interpreter (the VM called out to C from there)? */
static int crosses_vm(const struct lj_target *t, const struct lp_event_sample *e)
{
	int n = sample_ustack_frames(e);

	for (int i = 1; i < n; i++)
		if (e->ustack[i] - 1 >= t->vm_start && e->ustack[i] - 1 < t->vm_end)
			return 1;
	return 0;
}

static void handle_sample(struct session *s, struct lp_event_sample *e, size_t size)
{
	struct target *t = find_target(s, e->h.pid);
	static struct uframes u; /* (2 KiB: off the stack) */
	struct lp_record rec;
	struct lp_sample *sample = &rec.u.event.s;
	int unnamed, all_mapped = 0, walked;

	if (!t || !t->alive) /* a sample racing its fork event */
		t = add_target(s, e->h.pid, 0, e->h.time_ns, LP_PROC_FORKED, NULL);
	u.n = 0;
	if (e->ustack_jit && e->lua_state == LP_WALK_WALKED)
		place_unnumbered_trace(s, t, e);
	if (t)
		all_mapped = note_user_frames(s, t, e, &u);
	if (s->o->verbose)
		note_cut_walk(s, e, &u);
	if (t && t->lj && t->lj->state == LJ_WAITING_G && e->lua_G && !t->lj_gone)
		locate_luajit(s, t, e->lua_G);
	/* Still no valid G, though the native stack crossed the VM's C frame,
	 * whose lua_State the BPF walker read: the layout does not fit. */
	if (t && t->lj && t->lj->state == LJ_WAITING_G &&
	    e->lua_state == LP_WALK_NO_G && crosses_vm(t->lj, e))
		t->lj_unvalidated++;
	memset(&rec, 0, sizeof(rec));
	rec.type = LP_REC_EVENT;
	rec.u.event.kind = e->kind;
	rec.u.event.weight = e->weight;
	rec.u.event.count = e->count;
	/* To the microsecond, down: the tick comes with tens of them of
	 * jitter, and the nanoseconds would cost 2 bytes a sample. */
	sample->time_ns = e->h.time_ns / SAMPLE_TIME_NS * SAMPLE_TIME_NS;
	sample->pid = e->h.pid;
	sample->tid = e->h.tid;
	sample->cpu = e->h.cpu;
	sample->kstack = intern_stack(s, LP_STACK_KERNEL, (const uint64_t *)e->kstack,
						 e->kstack_bytes);
	sample->ustack = intern_stack(s, LP_STACK_USER, (const uint64_t *)e->ustack,
					   validated_ustack_bytes(t, e, &u, all_mapped, &unnamed));
	sample->ustop = e->ustack_stop;
	if (unnamed) {
		/* Cut where the trace could not name a frame: as a walk that
		 * met a return address in no known code. */
		sample->ustop = LP_USTOP_UNMAPPED;
		s->ustacks_unnamed++;
	}
	if (e->kstack_bytes < 0)
		sample->flags |= LP_SAMPLE_KSTACK_FAILED;
	if (e->ustack_bytes < 0)
		sample->flags |= LP_SAMPLE_USTACK_FAILED;
	if (e->wait_state == LP_WAIT_SLEEPING)
		sample->flags |= LP_SAMPLE_WAIT_SLEEPING;
	else if (e->wait_state == LP_WAIT_UNINTERRUPTIBLE)
		sample->flags |= LP_SAMPLE_WAIT_UNINTERRUPTIBLE;
	walked = e->lua_state == LP_WALK_WALKED || e->lua_state == LP_WALK_SUSPENDED;
	sample->lstack = walked ? intern_lua_stack(s, t, e, size) : 0;
	if (t && t->lj_gone && walked)
		s->lua.gone_dropped++;
	sample->vmstate = e->vmstate;
	sample->lua_state = e->lua_state;
	count_lua_state(s, e->lua_state, sample->lstack);
	emit(s, &rec);
	alloc_note_event(s, e, &rec.u.event);
	s->samples++;
	s->events[e->kind < LP_KIND_MAX ? e->kind : 0]++;
}

/* A sample event that did not parse: a sample lost, in the trace as such
 * (the recorder could not keep it) and in the summary's count. */
static void lost_malformed(struct session *s, uint64_t time_ns)
{
	struct lp_record rec;

	memset(&rec, 0, sizeof(rec));
	rec.type = LP_REC_LOST;
	rec.u.lost.time_ns = time_ns;
	rec.u.lost.count = 1;
	rec.u.lost.reason = LP_LOST_WRITE;
	emit(s, &rec);
	s->lost_dropped++;
}

int handle_event(void *ctx, void *data, size_t size)
{
	struct session *s = ctx;
	const struct lp_event_header *h = data;
	const struct lp_event_task *te = data;
	struct target *t;
	char comm[LP_COMM_LEN + 1];

	if (size < sizeof(*h))
		return 0;
	if (h->type == LP_EVENT_SAMPLE) {
		/* Unpacked whole (bpf/sampler.h), checked on the way; one
		 * that does not parse is a sample lost, and counted so. */
		static struct lp_event_sample e;

		if (sample_event_unpack(data, size, &e) == 0)
			handle_sample(s, &e, lp_event_sample_size(e.lua_depth));
		else
			lost_malformed(s, h->time_ns);
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
		if (te->flags & LP_TASK_HELD)
			hold_exec(s, h->pid);
		break;
	case LP_EVENT_EXIT:
		t = find_target(s, h->pid);
		if (t)
			target_exit_heard(s, t, h->time_ns);
		break;
	}
	return 0;
}

/* The ring buffer's callback: during a flush the sidekick's thread polls
 * it, and its events are the sidekick's to queue (sidekick.c); the flag
 * changes only around sidekick_begin() and sidekick_end(), whose thread
 * start and join order it with the sidekick's reads. */
int ring_event(void *ctx, void *data, size_t size)
{
	struct session *s = ctx;

	if (s->side_polls && s->side)
		return sidekick_event(s->side, data, size);
	return handle_event(s, data, size);
}

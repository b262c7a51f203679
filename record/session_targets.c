/*
 * session_targets.c - the processes a recording follows: the table of
 * targets, their mappings as last read (and re-read when a sample says
 * they are stale), what a fork inherits, and the PROCESS and MAPS records
 * that say so in the trace.
 */

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "bpf/sampler.h"
#include "lib/grow.h"
#include "record/clock.h"
#include "record/objects.h"
#include "record/procs.h"
#include "record/say.h"
#include "record/sidekick.h"
#include "record/unwind.h"
#include "sampler.skel.h"
#include "record/session_priv.h"

/* After a change to the sampler's targets or lj_procs map: its per-CPU
 * memos of their entries are stale (bpf/sampler.bpf.c, procs_gen). */
void procs_changed(struct session *s)
{
	__atomic_add_fetch(&s->skel->bss->procs_gen, 1, __ATOMIC_SEQ_CST);
}

struct target *find_target(struct session *s, pid_t pid)
{
	for (int i = 0; i < s->ntargets; i++)
		if (s->targets[i].pid == pid)
			return &s->targets[i];
	return NULL;
}

/* For the flush sidekick: the mappings last read of pid (sidekick.c). */
const struct maps_table *known_maps(void *ctx, pid_t pid)
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
		 * mappings the walker got at the fork (inherit_maps()).  A
		 * snapshot with nothing known is still written, empty: after
		 * an exec, the image before it (a fork's inheritance) must not
		 * name the new image's samples. */
		if (replace && t->exec_maps.n) {
			now = t->exec_maps;
			t->exec_maps = (struct maps_table){ 0 };
		} else if (!replace && (!ncode || maps_table_copy(&t->maps, &now))) {
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
	t->maps_gen = ++s->maps_gens;
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

/* Finds the LuaJIT VM of a new target (or inherits its parent's, for a
 * forked child) and tells the BPF walker about it. */
static void emit_maps(struct session *s, struct target *t, uint64_t time_ns,
		      int replace)
{
	emit_maps_code(s, t, time_ns, replace, NULL, 0);
}

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
	t->maps_gen = ++s->maps_gens;
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

/* Adds pid to the table (if new) and writes what the trace needs to know
 * about it: its PROCESS record and a full mappings snapshot. */
struct target *add_target(struct session *s, pid_t pid, pid_t ppid,
				 uint64_t time_ns, uint32_t flags,
				 const char *comm)
{
	struct target *t = find_target(s, pid);

	if (t && t->exit_ns) /* its pid taken again: the old one is gone */
		target_exited(s, t, t->exit_ns);
	if (!t) {
		if (GROW(s->targets, s->captargets, (size_t)s->ntargets + 1))
			return NULL;
		t = &s->targets[s->ntargets++];
		memset(t, 0, sizeof(*t));
		t->pid = pid;
	}
	if (!t->alive) {
		t->alive = 1;
		s->nalive++;
	}
	if (flags & LP_PROC_EXEC) { /* a new image */
		t->puc_noted = 0;
		t->lj_refused_said = 0;
	}
	emit_process(s, pid, ppid, time_ns, flags, comm);
	if (!inherit_maps(s, t, flags == LP_PROC_FORKED ? find_target(s, ppid) : NULL))
		emit_maps(s, t, time_ns, 1);
	attach_luajit(s, t, flags & LP_PROC_FORKED ? find_target(s, ppid) : NULL);
	return t;
}

void target_exited(struct session *s, struct target *t, uint64_t time_ns)
{
	struct lp_record rec;

	if (!t->alive)
		return;
	if (t->exit_ns) { /* its exit event's time, not ours */
		time_ns = t->exit_ns;
		t->exit_ns = 0;
		s->exits_pending--;
	}
	t->alive = 0;
	s->nalive--;
	unwind_remove_process(s->unw, t->pid); /* native unwinder */
	maps_table_free(&t->maps);
	t->maps_gen = ++s->maps_gens;
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

/* The exit event of t: settles once the ring buffer has been read past
 * time_ns + EXIT_SETTLE_NS (settle_exits()). */
void target_exit_heard(struct session *s, struct target *t, uint64_t time_ns)
{
	if (!t->alive || t->exit_ns)
		return;
	t->exit_ns = time_ns ? time_ns : 1;
	s->exits_pending++;
}

/* Ends the exits heard EXIT_SETTLE_NS before read_ns, when the ring
 * buffer was last read whole; UINT64_MAX ends them all. */
void settle_exits(struct session *s, uint64_t read_ns)
{
	for (int i = 0; i < s->ntargets && s->exits_pending; i++) {
		struct target *t = &s->targets[i];

		if (t->alive && t->exit_ns && (read_ns == UINT64_MAX ||
					       t->exit_ns + EXIT_SETTLE_NS <= read_ns))
			target_exited(s, t, t->exit_ns);
	}
}

/* Is a re-read of t's mappings due?  For code known to run (a leaf, a
 * Lua stack's C function) every MAPS_REREAD_LEAF_NS; for other frames,
 * which may be stack data taken for return addresses, every
 * MAPS_REREAD_NS. */
static int maps_reread_due(const struct target *t, int runs)
{
	return mono_ns() - t->maps_read_ns >= (runs ? MAPS_REREAD_LEAF_NS : MAPS_REREAD_NS);
}

/* A user address outside every known mapping means the process mapped
 * something new (dlopen, a JIT area) since we last looked, or the stack
 * holds a garbage frame.  Re-read, at most every MAPS_REREAD_NS, and write
 * what was added.  u holds the frames' mappings, looked up once for the
 * sample (struct uframes).  1 when every frame is in them and they were
 * not re-read. */
int check_mappings(struct session *s, struct target *t,
		   const struct lp_event_sample *e, const struct uframes *u)
{
	int unknown = e->ustack_stop == LP_USTOP_UNMAPPED, missing = 0;
	uint64_t code[1];
	uint32_t ncode = 0;

	/* The native unwinder stops, frameless, at a pc in a mapping it does
	 * not know yet: that too means new mappings.  The frame it stepped
	 * over as a trace's was code (bpf/unwind_native.bpf.h), whatever the
	 * mappings say now, and the re-read keeps it. */
	for (int i = 0; i < u->n; i++) {
		if (u->map[i] || (i && e->ustack[i] == LP_USTACK_GAP))
			continue; /* (a gap: frames the walk could not see) */
		unknown = missing = 1;
		if ((uint32_t)i + 1 == e->ustack_jit)
			code[ncode++] = e->ustack[i];
	}
	/* Code that ran is worth a read at once: the read keeps it (or a
	 * page of it), so its next samples do not ask again.  So is a walk
	 * that reached the stack's end: its frames were code, not stack
	 * data, found in the kernel's mappings where its list had none (a
	 * library just mapped), and a read now lists them; one that waited
	 * its turn after a read a moment too early (a dlopen half done) left
	 * them unnamed.  The rest waits its turn. */
	if (ncode || (unknown && (e->ustack_stop == LP_USTOP_END ||
				  maps_reread_due(t, u->n > 0 && !u->map[0])))) {
		emit_maps_code(s, t, e->h.time_ns, 0, code, ncode);
		return 0;
	}
	return !missing;
}

/* A C function a Lua stack shows (the Lua walk's C frame) is code that
 * runs, like a native walk's leaf: at an address in no known mapping
 * (a library just dlopen'ed, as kresd's require of its ahocorasick
 * module, whose std::map the tick was in) the mappings are re-read as soon
 * as for a leaf.  The native walk stopped at that library's code, but its
 * re-read may have waited its turn (check_mappings()), and the C frame
 * printed as [unmapped].  1 if t's mappings now hold addr. */
int check_code_address(struct session *s, struct target *t, uint64_t time_ns,
		       uint64_t addr)
{
	if (maps_table_find(&t->maps, addr))
		return 1;
	if (!maps_reread_due(t, 1))
		return 0;
	emit_maps_code(s, t, time_ns, 0, NULL, 0);
	return maps_table_find(&t->maps, addr) != NULL;
}

/* Reads pid's mappings again and writes what is new: a launched command
 * held at its entry point (session_start()), its libraries mapped. */
void refresh_maps(struct session *s, pid_t pid)
{
	struct target *t = find_target(s, pid);

	if (t && t->alive)
		emit_maps_code(s, t, mono_ns(), 0, NULL, 0);
}

/* A process held at its exec (l, launch.h): run on to its program's
 * entry point, where its mappings are read again, then let go.  One not
 * held (never traced, or gone) is only let go. */
void read_at_entry(struct session *s, struct launched *l)
{
	int held = l->held, err = launch_run_to_entry(l);

	if (!err) {
		ring_buffer__consume(s->rb);
		refresh_maps(s, l->pid);
	}
	if (held && s->o->verbose)
		fprintf(stderr, "luaprof record: pid %d: %s%s\n", (int)l->pid,
			err ? "not held at its entry point: " : "held at its entry point, "
			"its mappings read there", err ? strerror(-err) : "");
	launch_release(l);
}

/* A followed process the sampler stopped at its exec (LP_TASK_HELD), its
 * new image read already (add_target()): continued by release_holds(),
 * outside the ring buffer's callback, as the callback must not consume. */
void hold_exec(struct session *s, pid_t pid)
{
	if (!GROW(s->holds, s->capholds, s->nholds + 1))
		s->holds[s->nholds++] = pid;
	else
		kill(pid, SIGCONT); /* not held, then */
}

/*
 * What a launched command gets at its first exec (session_start()), for
 * every process it starts: run on to its program's entry point, where the
 * dynamic loader has mapped its libraries (a LuaJIT in one of them), read
 * there again, then let go.  Without it the first milliseconds of each
 * such process, until the recorder had read it, had no Lua frames and
 * leaf-only native stacks; under load, tens of milliseconds.  A process
 * that cannot be traced is merely continued where it stopped.
 */
void release_holds(struct session *s)
{
	for (size_t i = 0; i < s->nholds; i++) { /* the consume may add some */
		uint64_t t0 = mono_ns();
		pid_t pid = s->holds[i];
		struct launched l;

		if (!launch_seize_stopped(&l, pid))
			read_at_entry(s, &l);
		launch_release(&l);
		/* The launched command itself, exec'ing again, and killed
		 * while held: its exit was waited for here, not by
		 * launched_exited(). */
		if (l.reaped && pid == s->launched.pid)
			s->launched.reaped = 1;
		s->holds_done++;
		s->holds_ns += mono_ns() - t0;
	}
	s->nholds = 0;
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
		if (n == 1)
			say(stderr, 0, "pid %d (%s) is a kernel thread: it has no user "
			    "stack; only its kernel stacks are recorded",
			    (int)s->targets[first].pid, info.comm);
		else
			say(stderr, 0, "%d targets are kernel threads (pid %d (%s) and %d "
			    "more): they have no user stack; only their kernel stacks "
			    "are recorded", n, (int)s->targets[first].pid, info.comm,
			    n - 1);
	}
}

/* Puts the initial targets in the BPF map and the trace.  The recorder
 * never profiles itself: `-p 1` makes it a descendant of a target. */
int add_initial_targets(struct session *s)
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
	procs_changed(s);
	if (skipped_self && !s->o->quiet)
		fprintf(stderr, "luaprof record: not recording pid %d, this recorder "
			"itself\n", (int)self);
	warn_kthreads(s);
	return 0;
}

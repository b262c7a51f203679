/*
 * session.c - one recording, from loading the BPF sampler to the last byte
 * of the trace.
 *
 * The session owns everything a recording holds: the trace writer, the BPF
 * skeleton and its ring buffer, the perf events, the stack table and the
 * table of target processes with their last-read mappings.  One thread
 * writes the trace: one loop polls the ring buffer and turns each event
 * into trace records, so records reach the writer in the order the kernel
 * produced them, and a stack or mapping is always written before the
 * first sample that needs it.  Two helpers work beside it and write
 * nothing: during a flush the sidekick (sidekick.c) reads the ring buffer
 * for it, keeping the unwinder current, and queues the events for this
 * loop; and objects_prep.c reads the symbols and DWARF of the objects hit.
 *
 * Order of start-up matters.  The fork tracepoint is attached before the
 * target pids go into the BPF map, and /proc is scanned for descendants
 * after, so a child forked at any moment is either seen by BPF or found by
 * the scan.  A launched command waits on a pipe until sampling runs.
 *
 * This file holds the session's life: opening, the loop, flushing and
 * finishing.  What it does with each event is split by concept, sharing
 * session_priv.h: session_samples.c turns events into records,
 * session_targets.c keeps the processes and their mappings,
 * session_lua.c their Lua VMs, prototypes and Lua stacks, and
 * session_summary.c says what was recorded.
 */

#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "bpf/sampler.h"
#include "lib/grow.h"
#include "record/clock.h"
#include "record/events.h"
#include "record/kallsyms.h"
#include "record/kernel.h"
#include "record/objects.h"
#include "record/procs.h"
#include "record/sidekick.h"
#include "record/stacks.h"
#include "record/unwind.h"
#include "sampler.skel.h"
#include "record/session_priv.h"

static volatile sig_atomic_t stop_requested;

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

/* An event as its record: a CPU sample worth one tick is a sample, as
 * every reader knows it; anything else an event (format/kinds.h). */
static void event_record(const struct lp_event *ev, struct lp_record *rec)
{
	if (ev->kind == LP_KIND_CPU && ev->weight == 1) {
		rec->type = LP_REC_SAMPLE;
		rec->u.sample = ev->s;
	} else {
		rec->type = LP_REC_EVENT;
		rec->u.event = *ev;
	}
}

/* Writes the samples held since the last flush, in the order they came. */
static void release_samples(struct session *s)
{
	struct lp_record rec;
	int err = 0;

	for (size_t i = 0; i < s->nheld && !s->write_err && !err; i++) {
		event_record(&s->held[i], &rec);
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
void emit(struct session *s, const struct lp_record *rec)
{
	int err;

	if (s->write_err)
		return;
	if ((rec->type == LP_REC_SAMPLE || rec->type == LP_REC_EVENT) &&
	    !GROW(s->held, s->capheld, s->nheld + 1)) {
		s->held[s->nheld++] = lp_record_event(rec);
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

/* The sampler's losses since the last LOST record of reason. */
static void emit_lost_reason(struct session *s, uint64_t lost, uint64_t *written,
			     uint32_t reason)
{
	struct lp_record rec;

	if (lost <= *written)
		return;
	memset(&rec, 0, sizeof(rec));
	rec.type = LP_REC_LOST;
	rec.u.lost.time_ns = mono_ns();
	rec.u.lost.count = lost - *written;
	rec.u.lost.reason = reason;
	emit(s, &rec);
	*written = lost;
}

static void emit_lost(struct session *s)
{
	const struct lp_bpf_counters *c = &s->skel->bss->counters;

	emit_lost_reason(s, c->lost_ringbuf, &s->lost_written, LP_LOST_RINGBUF);
	emit_lost_reason(s, c->lost_busy, &s->lost_busy_written, LP_LOST_BUSY);
	emit_lost_reason(s, c->lost_offcpu, &s->lost_offcpu_written, LP_LOST_UNTRACKED);
	emit_lost_reason(s, c->lost_luawait, &s->lost_luawait_written, LP_LOST_UNTRACKED);
	emit_lost_reason(s, c->lost_inuse, &s->lost_inuse_written, LP_LOST_UNTRACKED);
}

uint64_t session_bpf_lost(const struct session *s)
{
	const struct lp_bpf_counters *c = &s->skel->bss->counters;

	return c->lost_ringbuf + c->lost_busy + c->lost_offcpu + c->lost_luawait +
	       c->lost_inuse;
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

	/* (Not a size, but what loads: only the kinds of event taken.) */
	events_prepare(skel, s->o->kinds, s->o->freq_hz, s->o->stall_ns, s->o->alloc_every);
	if (!s->o->command && s->o->follow_children)
		proc_descendants(s->o->pids, s->o->npids, &desc, &ndesc);
	pids = calloc(s->o->npids + ndesc + 1, sizeof(*pids));
	if (pids) {
		/* (Recording a command, there are no pids: o->pids is NULL,
		 * which memcpy may not be given even for 0 bytes.) */
		if (s->o->npids)
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

/*
 * The kernel's verifier is most of the setup: 1 to 3 s of this thread's
 * CPU (docs/setup.md), before which no sample can be taken.  On a busy
 * machine that CPU came slowly (sampling began 7 to 13 s after record
 * started at a load of 5 on 2 cores), so the load runs at nice
 * SETUP_NICE where allowed, then at the thread's own again, before the
 * command is forked (it inherits the thread's niceness).  A terminal is
 * told what the wait is: a line the next message overwrites (every one
 * starts with the same prefix and is longer).
 */
#define SETUP_NICE (-10)

static int load_sampler(struct session *s)
{
	int nice, boost, err;

	errno = 0;
	nice = getpriority(PRIO_PROCESS, 0);
	boost = !errno && nice > SETUP_NICE && !setpriority(PRIO_PROCESS, 0, SETUP_NICE);
	if (isatty(STDERR_FILENO) && !s->o->quiet)
		fprintf(stderr, "luaprof record: setting up: loading the sampler...\r");
	/* sampler_load() says why the sampler did not load (kernel.c). */
	err = sampler_load(&s->skel, s->o->follow_children, size_maps, s, s->o->verbose,
			   "luaprof record");
	if (boost)
		setpriority(PRIO_PROCESS, 0, nice);
	if (err)
		return err;
	err = sampler__attach(s->skel);
	if (err)
		fprintf(stderr, "luaprof record: cannot attach the BPF sampler: %s%s\n",
			strerror(-err), err == -EPERM ? " (recording needs root, or "
			"CAP_BPF, CAP_PERFMON and CAP_SYS_RESOURCE)" : "");
	return err;
}

static void show_status(struct session *s, uint64_t now)
{
	struct trace_writer_stats ws;

	trace_writer_get_stats(s->w, &ws);
	fprintf(stderr, "\rluaprof: recording %.1f s, %llu samples, %llu lost, "
		"%d process%s, %.1f KiB written ", (now - s->start_ns) / 1e9,
		(unsigned long long)s->samples,
		(unsigned long long)session_bpf_lost(s), s->nalive,
		s->nalive == 1 ? "" : "es", ws.file_bytes / 1024.0);
	s->status_shown = 1;
}

/* Did the launched command exit?  Reaps it if so. */
static int launched_exited(struct session *s)
{
	int status;

	if (!s->launched_running)
		return 0;
	if (!s->launched.reaped &&
	    waitpid(s->launched.pid, &status, WNOHANG) != s->launched.pid)
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

/* The launched command's later execs, and its descendants', are stopped
 * by the sampler for release_holds() (LP_TARGET_HOLD_EXEC, inherited at
 * fork).  Set while the command is held at its entry, before it forks. */
static void hold_later_execs(struct session *s)
{
	uint32_t key = (uint32_t)s->launched.pid, flags = LP_TARGET_HOLD_EXEC;

	bpf_map_update_elem(bpf_map__fd(s->skel->maps.targets), &key, &flags, BPF_EXIST);
}

static void record_loop(struct session *s)
{
	/* -d is that long of sampling, which runs from here: not counting
	 * the setup (the targets' mappings, unwind tables and VMs, the
	 * kernel's symbols), which took 0.2 to 0.7 s of `-d 1` on a busy
	 * machine, and once all of it, so that a VM no sample showed was
	 * missing from the trace (tests/e2e/lua_vms.sh). */
	uint64_t deadline = s->o->duration_s > 0 ?
		mono_ns() + (uint64_t)(s->o->duration_s * 1e9) : UINT64_MAX;
	/* Chunks every FLUSH_NS of sampling, not counting the setup. */
	uint64_t last_flush = mono_ns(), last_status = 0, last_alive = s->start_ns;
	int tty = isatty(STDERR_FILENO) && !s->o->quiet;

	while (!stop_requested && !s->write_err) {
		uint64_t now, read_ns;
		/* (An exit settles within milliseconds: looked at soon.) */
		int n = ring_buffer__poll(s->rb, s->exits_pending ? 3 : 100);

		if (n > 0)
			s->loop.woken++;
		else if (n == 0)
			s->loop.timeouts++;

		/* The sampler wakes us only for what cannot wait (see
		 * WAKEUP_BYTES in bpf/sampler.bpf.c): what waits is taken
		 * here, so that a flush below writes every sample taken
		 * until 100 ms ago, however slowly they come. */
		read_ns = mono_ns();
		if (n >= 0)
			n = ring_buffer__consume(s->rb);
		if (n >= 0 && s->exits_pending)
			settle_exits(s, read_ns);
		release_holds(s);
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
			s->loop.flushes++;
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

static int finish(struct session *s)
{
	struct trace_writer_stats ws;
	struct lp_footer footer;
	uint64_t end_ns = mono_ns();
	int err;

	s->stop_ns = end_ns;
	mark_self_cpu(s, SELF_CPU_SAMPLING);
	perf_sampling_detach(&s->perf);
	unprobe_alloc(s); /* the blocks alive now are those alive at the end */
	/* What is still in the ring buffer was sampled: keep it. */
	ring_buffer__consume(s->rb);
	settle_exits(s, UINT64_MAX);
	alloc_emit_inuse(s);
	release_holds(s);
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
	s->written = ws.samples + ws.events;
	footer.samples = ws.samples;
	footer.events = ws.events;
	footer.lost = session_bpf_lost(s) + s->lost_dropped;
	footer.chunks = 0; /* the writer fills in its own count */
	footer.end_mono_ns = end_ns;
	err = trace_writer_close(s->w, &footer);
	s->w = NULL;
	if (err && !s->write_err)
		write_failed(s, err);
	mark_self_cpu(s, SELF_CPU_FINISHING);
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

/* The pids of -p: each alive, and not all this recorder.  0, or -1 said. */
static int check_pids(const struct record_opts *o)
{
	for (int i = 0; i < o->npids; i++) {
		if (!proc_exists(o->pids[i])) {
			fprintf(stderr, "luaprof record: no process with pid %d\n",
				(int)o->pids[i]);
			return -1;
		}
	}
	for (int i = 0, others = 0; i < o->npids && !others; i++) {
		others = o->pids[i] != getpid();
		if (!others && i == o->npids - 1) {
			fprintf(stderr, "luaprof record: pid %d is this recorder itself: "
				"nothing to record\n", (int)getpid());
			return -1;
		}
	}
	return 0;
}

static void catch_signals(void)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_stop_signal;
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	/* Past a file size limit (ulimit -f), write() fails with EFBIG and
	 * the recording stops as on a full disk, rather than being killed. */
	signal(SIGXFSZ, SIG_IGN);
}

/* Everything that does not sample yet: the tables, the trace (an existing
 * one moved to `old`), the sampler loaded, the unwinder, and the command
 * forked, its tables built, waiting for its exec.  0, or -1 said. */
static int session_open(struct session *s, char *old, size_t oldlen)
{
	const struct record_opts *o = s->o;
	int err;

	s->stacks = stack_table_new();
	s->ksyms = ksym_set_new();
	s->protos = proto_table_new();
	s->jit_traces = jit_trace_table_new();
	s->sources = source_table_new();
	s->objs = object_set_new(!o->no_embed);
	s->last_ustacks = calloc(LAST_USTACKS, sizeof(*s->last_ustacks));
	if (!s->stacks || !s->ksyms || !s->protos || !s->jit_traces || !s->sources || !s->objs ||
	    !s->last_ustacks) {
		fprintf(stderr, "luaprof record: out of memory\n");
		return -1;
	}
	if (make_way(o->output, old, oldlen))
		return -1;
	err = trace_writer_open(&s->w, o->output, o->codec);
	if (err) {
		fprintf(stderr, "luaprof record: cannot create %s: %s\n", o->output,
			strerror(-err));
		return -1;
	}
	if (load_sampler(s))
		return -1;
	/* -v's "BPF sampler: N runs", ticks of targets or not, without
	 * kernel.bpf_stats_enabled: counted while this fd is open. */
	if (o->verbose)
		s->stats_fd = bpf_enable_stats(BPF_STATS_RUN_TIME);
	mark_self_cpu(s, SELF_CPU_BPF);
	err = unwind_init(&s->unw, s->skel); /* native unwinder */
	if (err && !o->quiet)
		fprintf(stderr, "luaprof record: native unwinding off (%s); user "
			"stacks follow frame pointers\n", strerror(-err));
	if (o->command) {
		err = launch_prepare(o->command, &s->launched);
		if (err) {
			fprintf(stderr, "luaprof record: cannot start %s: %s\n",
				o->command[0], strerror(-err));
			return -1;
		}
		s->launched_running = 1;
		/* native unwinder: its tables ready before it runs; and
		 * what finding its LuaJIT takes */
		unwind_preload(s->unw, o->command[0], lj_preload, NULL);
	}
	mark_self_cpu(s, SELF_CPU_UNWINDER);
	return 0;
}

/* Starts the recording: the META record and the targets, the ring
 * buffer's readers, the perf events, and the command's exec.  0, or -1
 * said. */
static int session_start(struct session *s)
{
	const struct record_opts *o = s->o;
	int err;

	s->start_ns = mono_ns();
	emit_meta(s);
	err = add_initial_targets(s);
	if (err) {
		fprintf(stderr, "luaprof record: cannot add targets: %s\n", strerror(-err));
		return -1;
	}
	mark_self_cpu(s, SELF_CPU_TARGETS);
	/* Setup that costs the machine, done before sampling starts; a
	 * failure is said at the first write. */
	ksym_set_load(s->ksyms);
	mark_self_cpu(s, SELF_CPU_KSYMS);
	s->rb = ring_buffer__new(bpf_map__fd(s->skel->maps.events), ring_event, s, NULL);
	if (!s->rb) {
		fprintf(stderr, "luaprof record: ring buffer: %s\n", strerror(errno));
		return -1;
	}
	err = sidekick_new(&s->side, s->rb, s->unw, known_maps, s);
	if (err && !o->quiet)
		fprintf(stderr, "luaprof record: no flush sidekick (%s): walks of processes "
			"started during a flush may be cut short\n", strerror(-err));
	if (!(o->kinds & EVENTS_BIT(LP_KIND_CPU)))
		err = 0; /* no CPU samples: no ticks */
	else if (o->task_events) /* the held child: it has not run yet */
		err = perf_sampling_attach_task(&s->perf, s->skel->progs.on_sample,
						o->freq_hz, s->launched.pid,
						!o->follow_children);
	else
		err = perf_sampling_attach(&s->perf, s->skel->progs.on_sample, o->freq_hz);
	if (err) {
		fprintf(stderr, "luaprof record: cannot open cpu-clock perf events: %s\n",
			strerror(-err));
		return -1;
	}
	if (o->command) {
		err = launch_start(&s->launched);
		if (err) {
			fprintf(stderr, "luaprof record: cannot execute %s: %s\n",
				o->command[0], strerror(-err));
			waitpid(s->launched.pid, NULL, 0);
			s->launched_running = 0;
			return -1;
		}
		/* Held at its exec (launch.c): the EXEC event is in the ring
		 * buffer, and handling it reads the new image's mappings and
		 * gives the unwinder their tables before it runs. */
		if (s->launched.held)
			ring_buffer__consume(s->rb);
		/* Every later exec in the command's tree is held too
		 * (release_holds()), from before it can fork. */
		if (o->follow_children)
			hold_later_execs(s);
		/* ... and read again where the program starts, for the
		 * libraries the dynamic loader mapped meanwhile. */
		read_at_entry(s, &s->launched);
		release_holds(s);
	}
	return 0;
}

/* Frees what session_open() and session_start() made.  A session that
 * never recorded leaves no trace, and the old one (`old`) where it was. */
static void session_close(struct session *s, int recording, const char *old)
{
	if (s->launched.go_fd >= 0) { /* never started: let it go */
		close(s->launched.go_fd);
		waitpid(s->launched.pid, NULL, 0);
	}
	if (s->launched.err_fd >= 0)
		close(s->launched.err_fd);
	perf_sampling_detach(&s->perf);
	for (size_t i = 0; i < s->nholds; i++) /* never left stopped */
		kill(s->holds[i], SIGCONT);
	free(s->holds);
	if (s->stats_fd >= 0)
		close(s->stats_fd);
	sidekick_free(s->side);
	ring_buffer__free(s->rb);
	unwind_free(s->unw); /* native unwinder */
	unprobe_lua_resume(s);
	unprobe_alloc(s);
	sampler__destroy(s->skel);
	if (s->w) {
		trace_writer_close(s->w, NULL);
		if (!recording) {
			unlink(s->o->output);
			if (old[0])
				rename(old, s->o->output);
		}
	}
	stack_table_free(s->stacks);
	ksym_set_free(s->ksyms);
	object_set_free(s->objs);
	proto_table_free(s->protos);
	jit_trace_table_free(s->jit_traces);
	source_table_free(s->sources);
	for (int i = 0; i < s->ntargets; i++) {
		maps_table_free(&s->targets[i].maps);
		maps_table_free(&s->targets[i].exec_maps);
		free(s->targets[i].lj);
	}
	free(s->targets);
	free(s->held);
	free(s->last_ustacks);
}

int record_session_run(const struct record_opts *o)
{
	struct session s = { .o = o, .stats_fd = -1, .begun_ns = mono_ns(),
				 .launched = { .pid = -1, .go_fd = -1, .err_fd = -1 } };
	char old[PATH_MAX + 8] = "";
	int ret = 1, recording = 0;

	if (check_pids(o))
		return 1;
	libbpf_set_print(o->verbose ? libbpf_stderr : libbpf_quiet);
	catch_signals();
	if (!session_open(&s, old, sizeof(old)) && !session_start(&s)) {
		mark_self_cpu(&s, SELF_CPU_START);
		s.setup_ns = mono_ns() - s.begun_ns;
		recording = 1;
		if (!o->quiet && old[0])
			fprintf(stderr, "luaprof record: the existing %s is kept as %s\n",
				o->output, old);
		if (!o->quiet)
			fprintf(stderr, "luaprof record: recording %d process%s at %u Hz "
				"into %s (Ctrl-C to stop)\n", s.nalive,
				s.nalive == 1 ? "" : "es", o->freq_hz, o->output);
		record_loop(&s);
		stop_launched(&s);
		ret = finish(&s);
	}
	session_close(&s, recording, old);
	return ret;
}

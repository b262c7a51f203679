/*
 * report.c - reading traces into a profile: the streaming pass over each
 * trace (report_load(), for `report` and `diff`), the options that steer
 * it, the warnings about the traces' health, and the header block the
 * text formats open with.  cmd_report.c is `luaprof report`'s command
 * line.
 *
 * A pass replays a trace in stream order because that is the only order
 * in which it is true: a sample's user addresses mean what the mappings
 * recorded *before* it say, and stack ids are defined before use.  Samples
 * are counted into stacks.c's tables as they come, so a trace of any
 * length reports in bounded memory; only the formats that show every
 * sample (time order, labels: formats.h's OUT_SAMPLES) keep one small
 * record per sample.  Several traces are replayed one after the other,
 * each with its own mappings, symbols and Lua records (their ids mean
 * nothing across traces), into one profile: names, stacks and counts
 * are merged.
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "format/trace.h"
#include "report/annotate.h"
#include "report/count.h"
#include "report/frames.h"
#include "report/health.h"
#include "report/maps.h"
#include "report/objects.h"
#include "report/profile.h"
#include "report/report.h"
#include "report/luajit_protos.h"
#include "report/luajit_sources.h"
#include "report/stacks.h"
#include "report/stalls.h"
#include "report/symbolize.h"
#include "report/vmstate.h"

/* What reading all the traces builds. */
struct run {
	const struct load_opts *o;
	struct profile *prof;
	struct procs *procs;
	uint32_t *roots; /* --comm root name per procs entry */
	size_t nroots, caproots;
	/* --vmstate, --annotate, --by line, --stalls: counted over the
	 * (single) trace's pass, which is kept for them. */
	struct report_pass *keep;
};

/* One trace's replay: its records mean something only inside it. */
struct report_pass {
	const char *path;
	uint32_t index; /* in prof->traces */
	struct maps *maps;
	struct symbolizer *sym;
	struct objects *objs;
	struct frames *fr;
	struct stacks *st;
	struct lua *lua;
	struct vmstate *vms;
	struct luasrc *src;   /* --annotate, --by line: the Lua sources */
	struct annotate *ann;
	struct stalls *stl;   /* --stalls: stalls, and what ran in them */
	uint64_t samples, lost, missing;
	uint64_t lost_waits; /* of lost, LP_LOST_UNTRACKED's */
	uint64_t place[LUA_PLACE_MAX]; /* compiled samples, by how placed */
	uint64_t origin;      /* the first sample's time: --from, --to */
	uint64_t win_first, win_last; /* samples in the window */
	uint64_t in_window;
	size_t first_kept;    /* its first sample in prof->samples_v */
	struct lp_footer footer;
	int footer_seen;
};

int report_misuse(const char *who, void (*usage)(FILE *), const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "%s: ", who);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	usage(stderr);
	return 2;
}

static int id_cmp(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return x < y ? -1 : x > y;
}

/* Appends a comma-separated list of ids to a sorted one; 0, -EINVAL or
 * -ENOMEM. */
static int parse_ids(const char *arg, uint32_t **v, size_t *n, size_t *cap)
{
	const char *p = arg;

	for (;;) {
		unsigned long long x;
		char *end;

		if (*p < '0' || *p > '9')
			return -EINVAL;
		errno = 0;
		x = strtoull(p, &end, 10);
		if (errno || x > UINT32_MAX)
			return -EINVAL;
		if (GROW(*v, *cap, *n + 1))
			return -ENOMEM;
		(*v)[(*n)++] = x;
		if (!*end)
			break;
		if (*end != ',')
			return -EINVAL;
		p = end + 1;
	}
	qsort(*v, *n, sizeof(**v), id_cmp);
	return 0;
}

int report_parse_rows(const char *arg, unsigned *rows)
{
	unsigned long long x;
	char *end;

	if (*arg < '0' || *arg > '9')
		return -EINVAL;
	errno = 0;
	x = strtoull(arg, &end, 10);
	if (errno || *end || x > 1000000000)
		return -EINVAL;
	*rows = x;
	return 0;
}

/* Seconds >= 0 as nanoseconds; 0 or -EINVAL. */
static int parse_seconds(const char *arg, int64_t *ns)
{
	char *end;
	double x;

	errno = 0;
	x = strtod(arg, &end);
	if (errno || end == arg || *end || isnan(x) || x < 0 || x > 1e9)
		return -EINVAL;
	*ns = (int64_t)(x * 1e9 + 0.5);
	return 0;
}

int report_load_opt(struct load_opts *lo, int c, const char *arg, const char **why)
{
	int err = 0;

	*why = "bad id list";
	switch (c) {
	case LOAD_OPT_PID:
		return parse_ids(arg, &lo->pids, &lo->npids, &lo->cappids);
	case LOAD_OPT_TID:
		return parse_ids(arg, &lo->tids, &lo->ntids, &lo->captids);
	case LOAD_OPT_FROM:
	case LOAD_OPT_TO:
		*why = "bad number of seconds";
		return parse_seconds(arg, c == LOAD_OPT_FROM ? &lo->from_ns : &lo->to_ns);
	case LOAD_OPT_LINES:
		lo->lines = 1;
		break;
	case LOAD_OPT_NO_DEMANGLE:
		lo->raw_names = 1;
		break;
	case LOAD_OPT_SYMFS:
		lo->symfs = arg;
		break;
	case LOAD_OPT_KIND:
		*why = "unknown event kind";
		return lp_kind_parse(arg, &lo->kind);
	default:
		*why = "unknown option";
		err = -EINVAL;
	}
	return err;
}

int report_load_check(const struct load_opts *lo, const char **why)
{
	*why = "--to must be later than --from";
	return lo->from_ns >= 0 && lo->to_ns >= 0 && lo->to_ns <= lo->from_ns ? -EINVAL : 0;
}

static int has_id(const uint32_t *v, size_t n, uint32_t id)
{
	return bsearch(&id, v, n, sizeof(id), id_cmp) != NULL;
}

/* The --comm root frame of a process entry, interned once. */
static int comm_root(struct run *r, struct report_pass *ps, const struct proc *p, uint32_t *id)
{
	size_t idx = p - r->procs->v;
	char buf[64];
	int err;

	err = GROW(r->roots, r->caproots, r->procs->len);
	if (err)
		return err;
	while (r->nroots < r->procs->len)
		r->roots[r->nroots++] = STACKS_NO_ROOT;
	if (r->roots[idx] == STACKS_NO_ROOT) {
		const char *name = p->comm;

		if (!name || !name[0]) {
			snprintf(buf, sizeof(buf), "[pid %" PRIu32 "]", p->pid);
			name = buf;
		}
		err = frames_name(ps->fr, name, &r->roots[idx]);
		if (err)
			return err;
	}
	*id = r->roots[idx];
	return 0;
}

/* Whether a sample is in the --from/--to window, which starts at the
 * trace's first sample or event of any kind in stream order (ps->origin;
 * one read later but timed earlier, as per-CPU buffers may interleave,
 * counts as at 0). */
static int in_window(const struct load_opts *o, struct report_pass *ps, uint64_t t)
{
	uint64_t rel;

	rel = t > ps->origin ? t - ps->origin : 0;
	if ((o->from_ns >= 0 && rel < (uint64_t)o->from_ns) ||
	    (o->to_ns >= 0 && rel >= (uint64_t)o->to_ns))
		return 0;
	if (!ps->in_window++ || t < ps->win_first)
		ps->win_first = t;
	if (t > ps->win_last)
		ps->win_last = t;
	return 1;
}

static int keep_sample(struct run *r, struct report_pass *ps, const struct lp_event *ev,
		       uint64_t weight, const struct proc *p)
{
	const struct lp_sample *smp = &ev->s;
	struct profile *prof = r->prof;
	struct profile_sample *k;
	int err;

	err = GROW(prof->samples_v, prof->capsamples, prof->nsamples + 1);
	if (err)
		return err;
	k = &prof->samples_v[prof->nsamples++];
	k->time_ns = smp->time_ns;
	k->stack = stacks_last_entry(ps->st); /* an entry until the pass ends */
	k->tid = smp->tid;
	k->proc = p - r->procs->v;
	k->vmclass = vmstate_class(smp);
	k->trace = ps->index;
	k->weight = weight;
	k->count = ev->count;
	return 0;
}

/* An event of a kind other than the one shown: counted for the header
 * (a kind this luaprof does not know among them, as 0). */
static void other_kind(struct profile *prof, uint32_t kind)
{
	kind = lp_kind_info(kind) ? kind : 0;
	prof->other_kinds[kind]++;
}

/* --stalls: a CPU sample or off-CPU wait, which may lie inside a stall
 * of its thread: its stack composed (counted as nothing) and kept. */
static int stall_context(struct run *r, struct report_pass *ps, const struct lp_event *ev)
{
	uint32_t lidx;
	struct proc *p;
	int missing, err;

	if (!stalls_wants(ev->kind))
		return 0;
	err = procs_get(r->procs, ev->s.pid, &p) ?:
	      stacks_add_sample(ps->st, &ev->s, 0, STACKS_NO_ROOT, &lidx, &missing);
	return err ?: stalls_add(ps->stl, ev, stacks_last_entry(ps->st), p - r->procs->v);
}

/* The wall view's root frame of a sample: its thread, "comm tid N". */
static int thread_root(struct report_pass *ps, const struct proc *p, uint32_t tid,
		       uint32_t *id)
{
	char buf[64];

	snprintf(buf, sizeof(buf), "%s tid %" PRIu32, p->comm && p->comm[0] ? p->comm : "[?]",
		 tid);
	return frames_name(ps->fr, buf, id);
}

/* Whether ev is of the kind shown, and *w what it weighs there: the
 * wall view's events are the CPU samples, each worth the sampling period
 * in nanoseconds, and the waits off the CPU. */
static int shown_weight(const struct run *r, const struct report_pass *ps,
			const struct lp_event *ev, uint64_t *w)
{
	*w = ev->weight;
	if (ev->kind == r->o->kind)
		return 1;
	if (r->o->kind != LP_KIND_WALL)
		return 0;
	if (ev->kind == LP_KIND_CPU)
		*w = count_mul(ev->weight, profile_sample_ns(r->prof, ps->index));
	return ev->kind == LP_KIND_CPU || ev->kind == LP_KIND_OFF_CPU;
}

static int on_sample(struct run *r, struct report_pass *ps, const struct lp_event *ev)
{
	const struct lp_sample *smp = &ev->s;
	const struct load_opts *o = r->o;
	struct profile *prof = r->prof;
	uint32_t root = STACKS_NO_ROOT, lidx;
	uint64_t weight;
	struct proc *p;
	int err, missing = 0;

	/* Every kind's events set the window's origin, the same for all. */
	if (!ps->samples++)
		ps->origin = smp->time_ns;
	if (!shown_weight(r, ps, ev, &weight)) {
		other_kind(prof, ev->kind);
		return ps->stl ? stall_context(r, ps, ev) : 0;
	}
	if (!prof->samples++ || smp->time_ns < prof->first_ns)
		prof->first_ns = smp->time_ns;
	if (smp->time_ns > prof->last_ns)
		prof->last_ns = smp->time_ns;
	err = procs_get(r->procs, smp->pid, &p);
	if (err)
		return err;
	p->samples++;
	if (!in_window(o, ps, smp->time_ns) ||
	    (o->npids && !has_id(o->pids, o->npids, smp->pid)) ||
	    (o->ntids && !has_id(o->tids, o->ntids, smp->tid)))
		return 0;
	if (o->kind == LP_KIND_WALL)
		err = thread_root(ps, p, smp->tid, &root);
	else if (o->comm)
		err = comm_root(r, ps, p, &root);
	if (err)
		return err;
	err = stacks_add_sample(ps->st, smp, weight, root, &lidx, &missing);
	ps->missing += missing;
	prof->events++;
	if (smp->ustack && lp_ustop_cut(smp->ustop))
		prof->cut = count_add(prof->cut, weight);
	if (smp->lstack && lua_stack_cut(ps->lua, lua_find_stack(ps->lua, smp->lstack)))
		prof->lua_cut = count_add(prof->lua_cut, weight);
	if (!err && o->keep_samples)
		err = keep_sample(r, ps, ev, weight, p);
	/* --vmstate names the function a trace runs in, not those inlined. */
	if (!err && ps->vms)
		err = vmstate_add(ps->vms, smp, smp->lstack ?
				  lua_find_stack(ps->lua, smp->lstack) : UINT32_MAX);
	if (!err && ps->ann)
		err = annotate_add(ps->ann, smp, lidx);
	if (!err && ps->stl)
		err = stalls_add(ps->stl, ev, stacks_last_entry(ps->st), p - r->procs->v);
	return err;
}

/* Samples are counted in runs of consecutive SAMPLE records, in stream
 * order: a run is known before its first sample is counted, so the
 * memory each one's counting will read is fetched ahead
 * (stacks_prefetch()) and the reads of a run overlap instead of waiting
 * one after another.  Any other record ends a run first. */
#define SAMPLE_RUN STACKS_PREFETCH_MAX

static int on_samples(struct run *r, struct report_pass *ps, const struct lp_event *run,
		      unsigned *n)
{
	int err = 0;

	stacks_prefetch(ps->st, run, *n);
	for (unsigned i = 0; i < *n && !err; i++)
		err = on_sample(r, ps, &run[i]);
	*n = 0;
	return err;
}

static int on_meta(struct run *r, struct report_pass *ps, const struct lp_meta *m)
{
	struct profile_trace *t = &r->prof->traces[ps->index];

	if (t->cmdline) /* the first META record stands */
		return 0;
	t->cmdline = strdup(m->cmdline ? m->cmdline : "");
	if (!t->cmdline)
		return -ENOMEM;
	t->rate_hz = m->rate_hz;
	t->start_real_ns = m->start_real_ns;
	return 0;
}

static int on_record(struct run *r, struct report_pass *ps, const struct lp_record *rec)
{
	struct proc *p;
	int err;

	switch (rec->type) {
	case LP_REC_META:
		return on_meta(r, ps, &rec->u.meta);
	case LP_REC_PROCESS:
		err = procs_add(r->procs, &rec->u.process);
		if (err)
			return err;
		/* The entry may have been a placeholder named "[pid N]". */
		p = procs_find(r->procs, rec->u.process.pid);
		if (p && (size_t)(p - r->procs->v) < r->nroots)
			r->roots[p - r->procs->v] = STACKS_NO_ROOT;
		if (rec->u.process.flags & LP_PROC_FORKED)
			return maps_fork(ps->maps, rec->u.process.pid,
					 rec->u.process.ppid);
		return 0;
	case LP_REC_EXIT:
		maps_exit(ps->maps, rec->u.exit.pid);
		return procs_exit(r->procs, &rec->u.exit);
	case LP_REC_MAPS:
		return maps_apply(ps->maps, &rec->u.maps);
	case LP_REC_STACK:
		return stacks_define(ps->st, &rec->u.stack);
	case LP_REC_LUAJIT:
		return lua_add_luajit(ps->lua, &rec->u.luajit);
	case LP_REC_PROTO:
		return lua_add_proto(ps->lua, &rec->u.proto);
	case LP_REC_LUA_STACK:
		return lua_add_stack(ps->lua, &rec->u.lua_stack);
	case LP_REC_TRACE:
		return lua_add_trace(ps->lua, &rec->u.trace);
	case LP_REC_TRACE_SNAPS:
		return lua_add_trace_snaps(ps->lua, &rec->u.trace_snaps);
	case LP_REC_NAME:
		return lua_add_name(ps->lua, &rec->u.name);
	case LP_REC_LUA_SOURCE:
		return ps->src ? luasrc_add(ps->src, &rec->u.lua_source) : 0;
	case LP_REC_SAMPLE: /* (read in runs: load_one()) */
	case LP_REC_EVENT:
		return 0;
	case LP_REC_LOST:
		ps->lost = count_add(ps->lost, rec->u.lost.count);
		if (rec->u.lost.reason == LP_LOST_UNTRACKED)
			ps->lost_waits = count_add(ps->lost_waits, rec->u.lost.count);
		return 0;
	case LP_REC_KSYMS:
		return frames_add_ksyms(ps->fr, &rec->u.ksyms);
	case LP_REC_OBJECT:
	case LP_REC_SYMTAB:
		return 0; /* read by objects_preload() */
	case LP_REC_FOOTER:
		ps->footer = rec->u.footer;
		ps->footer_seen = 1;
		return 0;
	default:
		return 0; /* types a later version may add */
	}
}

/* The path to name ps by in a message: with several traces only. */
static const char *pass_path(const struct run *r, const struct report_pass *ps)
{
	return r->prof->ntraces > 1 ? ps->path : NULL;
}

/* Samples in compiled code that keep the function their trace runs in,
 * and not the ones it inlined, and why. */
static void warn_unplaced(struct run *r, struct report_pass *ps)
{
	const uint64_t *c = ps->place;
	uint64_t n = c[LUA_UNPLACED_OUTSIDE] + c[LUA_UNPLACED_SNAP] + c[LUA_UNPLACED_BASE];
	uint64_t compiled = 0;

	for (int i = LUA_PLACED; i < LUA_PLACE_MAX; i++)
		compiled += c[i];
	if (c[LUA_UNPLACED_NO_SNAPS])
		health_say(r->o->who, pass_path(r, ps), "note: %" PRIu64 " of %" PRIu64
			   " samples in compiled code are in traces recorded without their "
			   "snapshots (an older luaprof, a LuaJIT whose layout has none, a "
			   "trace gone before it was read): they show the function the trace "
			   "runs in, not those it inlined\n", c[LUA_UNPLACED_NO_SNAPS], compiled);
	if (n)
		health_say(r->o->who, pass_path(r, ps), "note: %" PRIu64 " of %" PRIu64
			   " samples in compiled code were not placed by their trace's "
			   "snapshots (%" PRIu64 " at no address in the trace's code, %" PRIu64
			   " in a snapshot the recorder could not read, %" PRIu64 " whose base "
			   "frame disagrees): they show the function the trace runs in\n",
			   n, compiled, c[LUA_UNPLACED_OUTSIDE], c[LUA_UNPLACED_SNAP],
			   c[LUA_UNPLACED_BASE]);
}

static void warn_health(struct run *r, struct report_pass *ps, const struct trace_reader_stats *st)
{
	uint64_t lost = ps->lost, waits = ps->lost_waits, taken;
	int kind_waits = r->prof->kind == LP_KIND_OFF_CPU || r->prof->kind == LP_KIND_LUA_WAIT ||
			 r->prof->kind == LP_KIND_WALL;

	/* The footer counts what the recorder knew it lost; LOST records
	 * may be missing from a damaged trace, the footer from a cut one. */
	if (ps->footer_seen && ps->footer.lost > lost)
		lost = ps->footer.lost;
	/* A wait not measured is an off-CPU or Lua-land one: not lost to
	 * another kind's view, which says it apart. */
	if (!kind_waits) {
		lost -= waits < lost ? waits : lost;
		r->prof->waits_unmeasured = count_add(r->prof->waits_unmeasured, waits);
	}
	r->prof->lost = count_add(r->prof->lost, lost);
	taken = count_add(ps->samples, lost);
	health_warn(r->o->who, pass_path(r, ps), st);
	health_warn_samples(r->o->who, pass_path(r, ps), lost, taken, ps->missing);
	warn_unplaced(r, ps);
}

void report_pass_free(struct report_pass *ps)
{
	if (!ps)
		return;
	stacks_free(ps->st);
	vmstate_free(ps->vms);
	annotate_free(ps->ann);
	stalls_free(ps->stl);
	luasrc_free(ps->src);
	lua_free(ps->lua);
	frames_free(ps->fr);
	objects_free(ps->objs);
	symbolizer_free(ps->sym);
	maps_free(ps->maps);
	free(ps);
}

static int pass_new(struct run *r, const char *path, uint32_t index, struct report_pass **out)
{
	const struct load_opts *o = r->o;
	struct report_pass *ps = calloc(1, sizeof(*ps));
	int err;

	*out = ps;
	if (!ps)
		return -ENOMEM;
	ps->path = path;
	ps->index = index;
	err = maps_new(&ps->maps);
	if (!err)
		err = symbolizer_new(&ps->sym, o->who);
	if (!err)
		err = objects_new(&ps->objs, ps->sym, o->symfs, o->who);
	/* Symbol tables come after the samples that hit them: read them
	 * first, in a pass of their own. */
	if (!err)
		err = objects_preload(ps->objs, path);
	if (!err)
		err = frames_new(&ps->fr, &r->prof->names, ps->sym);
	if (!err) {
		frames_set_objects(ps->fr, ps->objs);
		frames_set_lines(ps->fr, o->lines);
		frames_set_demangle(ps->fr, !o->raw_names);
		if (o->infos)
			frames_set_infos(ps->fr, &r->prof->infos);
	}
	if (!err)
		err = lua_new(&ps->lua, ps->fr, o->lines);
	if (!err && o->vmstate)
		err = vmstate_new(&ps->vms, ps->lua);
	if (!err && o->annotate)
		err = luasrc_new(&ps->src) ?: annotate_new(&ps->ann, ps->lua, ps->src);
	if (!err && o->stalls)
		err = stalls_new(&ps->stl);
	if (!err)
		err = stacks_new(&ps->st, ps->fr, ps->maps, ps->lua);
	return err;
}

/* Replays one trace into the profile.  0, 1 after a message. */
static int load_one(struct run *r, const char *path, uint32_t index)
{
	struct trace_reader_stats st;
	struct trace_reader *reader = NULL;
	struct profile *prof = r->prof;
	struct lp_record rec;
	struct lp_event run[SAMPLE_RUN];
	struct report_pass *ps = NULL;
	char errbuf[256] = "";
	unsigned nrun = 0;
	int err;

	prof->traces[index].path = path;
	err = trace_reader_open(&reader, path, errbuf, sizeof(errbuf));
	if (err) {
		fprintf(stderr, "%s: %s: %s\n", r->o->who, path,
			errbuf[0] ? errbuf : strerror(-err));
		return 1;
	}
	err = pass_new(r, path, index, &ps);
	if (ps)
		ps->first_kept = prof->nsamples;
	while (!err && (err = trace_reader_next(reader, &rec)) == 1) {
		/* A sample is CPU time worth one tick; an event says its
		 * kind and weight. */
		if (rec.type == LP_REC_SAMPLE || rec.type == LP_REC_EVENT) {
			run[nrun++] = lp_record_event(&rec);
			err = nrun == SAMPLE_RUN ? on_samples(r, ps, run, &nrun) : 0;
			continue;
		}
		err = on_samples(r, ps, run, &nrun) ?: on_record(r, ps, &rec);
	}
	if (!err)
		err = on_samples(r, ps, run, &nrun);
	if (err < 0) {
		fprintf(stderr, "%s: %s: %s\n", r->o->who, path, strerror(-err));
		goto fail;
	}
	trace_reader_get_stats(reader, &st);
	trace_reader_close(reader);
	reader = NULL;
	if (!st.footer_seen)
		prof->complete = 0;
	stacks_place_counts(ps->st, ps->place);
	for (int i = LUA_PLACED; i < LUA_PLACE_MAX; i++)
		prof->compiled += ps->place[i];
	prof->compiled_placed += ps->place[LUA_PLACED];
	prof->compiled_marked += ps->place[LUA_MARKED];
	prof->gaps += stacks_gap_count(ps->st);
	err = stacks_finish(ps->st, prof);
	if (err) {
		fprintf(stderr, "%s: %s\n", r->o->who, strerror(-err));
		goto fail;
	}
	for (size_t i = ps->first_kept; i < prof->nsamples; i++)
		prof->samples_v[i].stack = stacks_entry_stack(ps->st, prof->samples_v[i].stack);
	if (ps->stl)
		stalls_finish(ps->stl, ps->st, ps->origin);
	if (ps->in_window) {
		prof->traces[index].span_ns = ps->win_last - ps->win_first;
		prof->span_ns += ps->win_last - ps->win_first;
	}
	warn_health(r, ps, &st);
	if (r->keep) {
		report_pass_free(r->keep);
		r->keep = NULL;
	}
	if (r->o->vmstate || r->o->annotate || r->o->stalls)
		r->keep = ps;
	else
		report_pass_free(ps);
	return 0;
fail:
	if (reader)
		trace_reader_close(reader);
	report_pass_free(ps);
	return 1;
}

static int load_all(struct run *r, char *const *traces, size_t n)
{
	struct profile *prof = r->prof;

	prof->traces = calloc(n, sizeof(*prof->traces));
	if (!prof->traces) {
		fprintf(stderr, "%s: %s\n", r->o->who, strerror(ENOMEM));
		return 1;
	}
	prof->ntraces = n;
	prof->trace = traces[0];
	prof->procs = r->procs;
	prof->complete = 1;
	prof->kind = r->o->kind;
	if (r->o->infos)
		frameinfo_init(&prof->infos, &prof->names);
	for (size_t i = 0; i < n; i++)
		if (load_one(r, traces[i], i))
			return 1;
	profile_to_shown(prof);
	if (!prof->events && prof->kind != LP_KIND_CPU)
		fprintf(stderr, "%s: warning: no %s events to report%s\n", r->o->who,
			lp_kind_info(prof->kind)->name,
			prof->samples ? " (none matched --pid/--tid/--from/--to)" : "");
	else if (!prof->events)
		fprintf(stderr, "%s: warning: no samples to report%s\n", r->o->who,
			prof->samples ? " (none matched --pid/--tid/--from/--to)" : "");
	return 0;
}

static int only_heap(const char *path)
{
	struct trace_reader *r;
	struct lp_record rec;
	char why[256];
	int heap = 0, other = 0;

	if (trace_reader_open(&r, path, why, sizeof(why)))
		return 0;
	trace_reader_skip(r, ~(1ull << LP_REC_SAMPLE | 1ull << LP_REC_EVENT));
	while (!other && trace_reader_next(r, &rec) > 0) {
		other = rec.type == LP_REC_SAMPLE || rec.u.event.kind != LP_KIND_HEAP;
		heap |= !other;
	}
	trace_reader_close(r);
	return heap && !other;
}

int report_only_heap(char *const *traces, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (!only_heap(traces[i]))
			return 0;
	return n > 0;
}

int report_load(const struct load_opts *lo, char *const *traces, size_t n,
		struct profile *p, struct procs *procs, struct report_pass **keep)
{
	struct run r = { .o = lo, .prof = p, .procs = procs };
	int ret = load_all(&r, traces, n);

	free(r.roots);
	if (keep)
		*keep = r.keep;
	else
		report_pass_free(r.keep);
	return ret;
}

struct vmstate *report_pass_vmstate(const struct report_pass *ps)
{
	return ps ? ps->vms : NULL;
}

struct annotate *report_pass_annotate(const struct report_pass *ps)
{
	return ps ? ps->ann : NULL;
}

struct stalls *report_pass_stalls(const struct report_pass *ps)
{
	return ps ? ps->stl : NULL;
}

FILE *report_open_output(const char *path, const char *who)
{
	int fd = lp_open_private(path, 0);
	FILE *f;

	if (fd < 0) {
		fprintf(stderr, "%s: %s: %s\n", who, path, lp_private_strerror(fd));
		return NULL;
	}
	f = fdopen(fd, "w");
	if (!f) {
		fprintf(stderr, "%s: %s: %s\n", who, path, strerror(errno));
		close(fd);
	}
	return f;
}

int report_close_output(FILE *out, const char *path, const char *who, int err)
{
	if (err)
		fprintf(stderr, "%s: %s\n", who, strerror(-err));
	/* A full disk shows only here; a report silently cut is a lie. */
	if ((fflush(out) || ferror(out)) && !err) {
		fprintf(stderr, "%s: %s: write error: %s\n", who,
			path ? path : "standard output", strerror(errno));
		err = -EIO;
	}
	if (out != stdout && fclose(out) && !err) {
		fprintf(stderr, "%s: %s: write error: %s\n", who, path, strerror(errno));
		err = -EIO;
	}
	return err ? 1 : 0;
}

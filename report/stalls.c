/*
 * stalls.c - `report --stalls` (see stalls.h): what blocked an event
 * loop.  A stall event (bpf/stall.bpf.h) is one iteration of a thread's
 * loop, from epoll's return (its time) for its weight in ns, with the
 * stacks where the loop waited again: which loop.  What ran inside it is
 * in the same trace as other kinds: the thread's CPU samples whose time
 * falls in the iteration, each worth a tick (1 / rate s), and its
 * off-CPU waits, each from its time for its weight, worth the part that
 * overlaps.  Both are sampled, so a stall's shares are estimates: they
 * may add up to more or less than 100%, more so the shorter the stall
 * against the sampling period.
 *
 * Every event of the three kinds is kept, the context unfiltered (a
 * --tid or --from picks stalls, not what ran in them), and matched at
 * the end: the context sorted by thread and time, each stall's found by
 * a binary search from its start less the longest wait.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "lib/grow.h"
#include "report/count.h"
#include "report/formats.h"
#include "report/stalls.h"

/* Stacks shown under each stall. */
#define STALL_STACKS 5

struct stall_ev {
	uint64_t time_ns, weight; /* the kind's weight: ticks or ns */
	uint32_t tid, pid;
	uint32_t stack; /* a count entry of the pass, then a stack id */
	uint32_t proc;  /* index in the procs */
	uint32_t kind;
};

struct stalls {
	struct stall_ev *v;
	size_t n, cap;
	uint64_t origin;
	uint64_t max_wait; /* the longest off-CPU weight: how far back to look */
};

/* A stack's time inside one stall. */
struct share {
	uint32_t stack, kind;
	uint64_t ns;
};

int stalls_new(struct stalls **out)
{
	*out = calloc(1, sizeof(**out));
	return *out ? 0 : -ENOMEM;
}

void stalls_free(struct stalls *s)
{
	if (!s)
		return;
	free(s->v);
	free(s);
}

int stalls_wants(uint32_t kind)
{
	return kind == LP_KIND_STALL || kind == LP_KIND_CPU || kind == LP_KIND_OFF_CPU;
}

int stalls_add(struct stalls *s, const struct lp_event *ev, uint32_t entry, uint32_t proc)
{
	struct stall_ev *e;

	if (GROW(s->v, s->cap, s->n + 1))
		return -ENOMEM;
	e = &s->v[s->n++];
	*e = (struct stall_ev){ .time_ns = ev->s.time_ns, .weight = ev->weight,
				.tid = ev->s.tid, .pid = ev->s.pid, .stack = entry,
				.proc = proc, .kind = ev->kind };
	if (ev->kind == LP_KIND_OFF_CPU && ev->weight > s->max_wait)
		s->max_wait = ev->weight;
	return 0;
}

void stalls_finish(struct stalls *s, const struct stacks *st, uint64_t origin)
{
	for (size_t i = 0; i < s->n; i++)
		s->v[i].stack = stacks_entry_stack(st, s->v[i].stack);
	s->origin = origin;
}

/* Context by thread, then time. */
static int by_tid_time(const void *a, const void *b)
{
	const struct stall_ev *x = a, *y = b;

	if (x->tid != y->tid)
		return x->tid < y->tid ? -1 : 1;
	return x->time_ns < y->time_ns ? -1 : x->time_ns > y->time_ns;
}

/* Stalls longest first; the earlier first among equals. */
static int by_length(const void *a, const void *b)
{
	const struct stall_ev *x = a, *y = b;

	if (x->weight != y->weight)
		return x->weight < y->weight ? 1 : -1;
	return x->time_ns < y->time_ns ? -1 : x->time_ns > y->time_ns;
}

static int by_ns(const void *a, const void *b)
{
	const struct share *x = a, *y = b;

	if (x->ns != y->ns)
		return x->ns < y->ns ? 1 : -1;
	return x->stack < y->stack ? -1 : x->stack > y->stack;
}

/* The first of ctx[0..n) not before (tid, t). */
static size_t lower_bound(const struct stall_ev *ctx, size_t n, uint32_t tid, uint64_t t)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (ctx[mid].tid < tid || (ctx[mid].tid == tid && ctx[mid].time_ns < t))
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* Adds ns of stack (of kind) to the stall's shares. */
static int share_add(struct share **v, size_t *n, size_t *cap, uint32_t stack,
		     uint32_t kind, uint64_t ns)
{
	for (size_t i = 0; i < *n; i++)
		if ((*v)[i].stack == stack && (*v)[i].kind == kind) {
			(*v)[i].ns += ns;
			return 0;
		}
	if (GROW(*v, *cap, *n + 1))
		return -ENOMEM;
	(*v)[(*n)++] = (struct share){ stack, kind, ns };
	return 0;
}

/* What ran inside stall st, from ctx[0..n) (by thread and time), into
 * *v, the most first. */
static int stall_shares(const struct profile *p, const struct stalls *s,
			const struct stall_ev *st, const struct stall_ev *ctx, size_t n,
			struct share **v, size_t *nv, size_t *cap)
{
	uint64_t start = st->time_ns, end = count_add(start, st->weight);
	uint64_t tick = profile_sample_ns(p, 0);
	size_t i = lower_bound(ctx, n, st->tid, start > s->max_wait ? start - s->max_wait : 0);
	int err = 0;

	*nv = 0;
	for (; !err && i < n && ctx[i].tid == st->tid && ctx[i].time_ns <= end; i++) {
		const struct stall_ev *c = &ctx[i];
		uint64_t from = c->time_ns > start ? c->time_ns : start;
		uint64_t to = count_add(c->time_ns, c->weight);

		if (c->stack == UINT32_MAX)
			continue; /* (none: its pass failed) */
		if (c->kind == LP_KIND_CPU) {
			if (c->time_ns >= start)
				err = share_add(v, nv, cap, c->stack, c->kind, tick * c->weight);
			continue;
		}
		if (to > end)
			to = end;
		if (to > from)
			err = share_add(v, nv, cap, c->stack, c->kind, to - from);
	}
	if (!err && *nv)
		qsort(*v, *nv, sizeof(**v), by_ns);
	return err;
}

/* One stall: its line, the loop's stack, what ran inside it. */
static int print_stall(FILE *out, const struct profile *p, const struct stalls *s,
		       const struct stall_ev *st, const struct share *v, size_t nv)
{
	const struct proc *pr = st->proc < p->procs->len ? &p->procs->v[st->proc] : NULL;
	uint64_t rel = st->time_ns > s->origin ? st->time_ns - s->origin : 0, rest = 0;
	double len = st->weight ? (double)st->weight : 1;
	char *text;

	fprintf(out, "\n%10.3f ms  pid %" PRIu32 "/%" PRIu32 " %s  at %.3f s\n", st->weight / 1e6,
		st->pid, st->tid, pr && pr->comm && pr->comm[0] ? pr->comm : "?", rel / 1e9);
	text = st->stack == UINT32_MAX ? strdup("[no stack]") : folded_stack(p, st->stack);
	if (!text)
		return -ENOMEM;
	fprintf(out, "      loop  %s\n", text);
	free(text);
	for (size_t i = 0; i < nv; i++) {
		if (i >= STALL_STACKS) {
			rest += v[i].ns;
			continue;
		}
		text = folded_stack(p, v[i].stack);
		if (!text)
			return -ENOMEM;
		fprintf(out, "    %5.1f%%  %-8s %s\n", 100.0 * v[i].ns / len,
			lp_kind_info(v[i].kind)->name, text);
		free(text);
	}
	if (nv > STALL_STACKS)
		fprintf(out, "    %5.1f%%  (%zu more stacks)\n", 100.0 * rest / len,
			nv - STALL_STACKS);
	if (!nv)
		fprintf(out, "            (no CPU sample or off-CPU wait of its thread inside)\n");
	return 0;
}

/* s's events split: the stalls, longest first, and the rest by thread
 * and time.  0 or -ENOMEM. */
static int split(const struct stalls *s, struct stall_ev **stl, size_t *nstl,
		 struct stall_ev **ctx, size_t *nctx)
{
	*nstl = *nctx = 0;
	*stl = malloc((s->n ? s->n : 1) * sizeof(**stl));
	*ctx = malloc((s->n ? s->n : 1) * sizeof(**ctx));
	if (!*stl || !*ctx)
		return -ENOMEM;
	for (size_t i = 0; i < s->n; i++) {
		if (s->v[i].kind == LP_KIND_STALL)
			(*stl)[(*nstl)++] = s->v[i];
		else
			(*ctx)[(*nctx)++] = s->v[i];
	}
	qsort(*stl, *nstl, sizeof(**stl), by_length);
	qsort(*ctx, *nctx, sizeof(**ctx), by_tid_time);
	return 0;
}

int out_stalls(FILE *out, const struct profile *p, const struct stalls *s, unsigned rows)
{
	struct stall_ev *stl = NULL, *ctx = NULL;
	size_t nstl, nctx, nv = 0, cap = 0, shown = 0;
	struct share *v = NULL;
	uint64_t total = 0;
	int err;

	err = split(s, &stl, &nstl, &ctx, &nctx);
	profile_header(out, p, "stalls");
	fprintf(out, "# event-loop iterations over the threshold, longest first: length,\n"
		     "# thread, start (s from the trace's start), the loop's stack where it\n"
		     "# waited again, then what its thread ran inside: CPU samples (a tick\n"
		     "# each) and off-CPU waits (their time inside), as shares of its length\n");
	for (size_t i = 0; !err && i < nstl; i++) {
		total = count_add(total, stl[i].weight);
		if (rows && shown >= rows)
			continue;
		err = stall_shares(p, s, &stl[i], ctx, nctx, &v, &nv, &cap) ?:
		      print_stall(out, p, s, &stl[i], v, nv);
		shown++;
	}
	if (!err) {
		fprintf(out, "\n# %zu stalls, %.3f s in all", nstl, total / 1e9);
		if (shown < nstl)
			fprintf(out, " (the %zu longest shown: -n)", shown);
		fprintf(out, "\n");
	}
	free(v);
	free(stl);
	free(ctx);
	return err;
}

/*
 * out_speedscope.c - `--format speedscope`: speedscope's JSON file format
 * (https://www.speedscope.app/file-format-schema.json), one "sampled"
 * profile per thread, so that speedscope's Time Order view shows what
 * each thread ran when.
 *
 * A thread's samples are in time order, each weighing its trace's
 * sampling period (unit nanoseconds; an event of another kind, its
 * weight in the kind's unit: an off-CPU stretch its nanoseconds from the
 * time it began); where the thread was not sampled for longer than half
 * a period beyond that (it slept, or ran no target code), an empty stack
 * fills the gap, so positions on the time axis are
 * real times since the thread's first sample, which is at startValue
 * (nanoseconds after the profile's first sample).  Consecutive samples of
 * one stack are written as one, with their weights added: the same
 * picture, a file several times smaller.
 *
 * Frames are shared by all threads, numbered as first met: the name as
 * `report` prints it, with the file (Lua chunk, native source file) and
 * line (where a Lua function is defined; the line running with --lines)
 * when known.  Stacks are written root first, as the format wants.
 * "profiles" is written before "shared", so frames are numbered in one
 * pass.  The thread with the most samples is the one shown first.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "lib/escape.h"
#include "report/formats.h"

struct run;

struct ss {
	FILE *out;
	const struct profile *p;
	uint32_t *order;    /* sample indices: by thread, then time */
	uint32_t *frame_of; /* name id -> frame index + 1; 0 not yet */
	uint32_t *frames;   /* frame index -> name id */
	uint32_t nframes;
	uint64_t origin;    /* the profile's first sample time */
	struct run *runs;   /* scratch for one thread */
	/* Each stack's text ("[3,1,4]") once written, to copy when it comes
	 * again: frame numbers never change once given. */
	char *texts;
	size_t ltexts, captexts;
	size_t *text_at;    /* stack id -> offset + 1 in texts; 0 not yet */
	uint32_t *text_len;
	/* The output, gathered here and written in large pieces: the file
	 * is mostly short numbers, and stdio's per-call cost was most of it. */
	char buf[1 << 16];
	size_t lbuf;
	int err;
};

static void flush_buf(struct ss *s)
{
	if (s->lbuf)
		fwrite_unlocked(s->buf, 1, s->lbuf, s->out);
	s->lbuf = 0;
}

static void put(struct ss *s, const void *v, size_t n)
{
	if (n > sizeof(s->buf) - s->lbuf) {
		flush_buf(s);
		if (n > sizeof(s->buf)) {
			fwrite_unlocked(v, 1, n, s->out);
			return;
		}
	}
	memcpy(s->buf + s->lbuf, v, n);
	s->lbuf += n;
}

#define PUT_LIT(s, lit) put((s), (lit), sizeof(lit) - 1)

static void put_char(struct ss *s, char c)
{
	if (s->lbuf == sizeof(s->buf))
		flush_buf(s);
	s->buf[s->lbuf++] = c;
}

/* qsort has no context argument: the samples being sorted. */
static const struct profile_sample *sort_v;

static int thread_cmp(const struct profile_sample *a, const struct profile_sample *b)
{
	if (a->trace != b->trace)
		return a->trace < b->trace ? -1 : 1;
	if (a->proc != b->proc)
		return a->proc < b->proc ? -1 : 1;
	if (a->tid != b->tid)
		return a->tid < b->tid ? -1 : 1;
	return 0;
}

static int order_cmp(const void *x, const void *y)
{
	uint32_t i = *(const uint32_t *)x, j = *(const uint32_t *)y;
	const struct profile_sample *a = &sort_v[i], *b = &sort_v[j];
	int c = thread_cmp(a, b);

	if (c)
		return c;
	if (a->time_ns != b->time_ns)
		return a->time_ns < b->time_ns ? -1 : 1;
	return i < j ? -1 : i > j; /* stream order among equal times */
}

static int thread_sort_cmp(const void *x, const void *y)
{
	return thread_cmp(&sort_v[*(const uint32_t *)x], &sort_v[*(const uint32_t *)y]);
}

/* order[] = the samples by thread (trace, process, tid), then time, then
 * stream order: what sorting them all with order_cmp gives, but by
 * counting per thread (threads are few) and sorting only a thread whose
 * samples are out of time order (rarely any).  0 or -ENOMEM. */
static int sort_samples(const struct profile *p, uint32_t *order)
{
	const struct profile_sample *v = p->samples_v;
	uint32_t *first = NULL, *rank = NULL, *thr = NULL, nthr = 0;
	size_t *at = NULL, capfirst = 0;
	struct htab h = { 0 };
	int err = -ENOMEM;

	sort_v = v;
	thr = malloc((p->nsamples ? p->nsamples : 1) * sizeof(*thr));
	if (!thr)
		goto cleanup;
	/* Each sample's thread, numbered as met; first[t]: a sample of it. */
	for (size_t i = 0; i < p->nsamples; i++) {
		uint64_t hash = hash_mix(hash_mix(hash_u64(v[i].trace), v[i].proc), v[i].tid);
		struct htab_probe pr;
		int64_t k;

		htab_probe_start(&h, hash, &pr);
		while ((k = htab_probe_next(&h, &pr)) >= 0)
			if (!thread_cmp(&v[first[k]], &v[i]))
				break;
		if (k < 0) {
			if (GROW(first, capfirst, nthr + 1) || htab_insert(&h, hash, nthr))
				goto cleanup;
			first[nthr] = (uint32_t)i;
			k = nthr++;
		}
		thr[i] = (uint32_t)k;
	}
	/* Threads in thread_cmp order; then where each one's samples go. */
	rank = malloc((nthr ? nthr : 1) * sizeof(*rank));
	at = calloc(nthr + 1, sizeof(*at));
	if (!rank || !at)
		goto cleanup;
	if (nthr) /* not qsort(NULL, 0): no samples, no threads */
		qsort(first, nthr, sizeof(*first), thread_sort_cmp);
	for (uint32_t r = 0; r < nthr; r++) {
		/* first[r] is a sample of the thread ranked r. */
		rank[thr[first[r]]] = r;
	}
	for (size_t i = 0; i < p->nsamples; i++)
		at[rank[thr[i]] + 1]++;
	for (uint32_t r = 0; r < nthr; r++)
		at[r + 1] += at[r];
	for (size_t i = 0; i < p->nsamples; i++)
		order[at[rank[thr[i]]]++] = (uint32_t)i;
	/* at[r] is now the end of thread r's samples. */
	for (uint32_t r = 0, from = 0; r < nthr; from = (uint32_t)at[r++]) {
		for (size_t i = from + 1; i < at[r]; i++) {
			if (v[order[i]].time_ns < v[order[i - 1]].time_ns) {
				qsort(order + from, at[r] - from, sizeof(*order), order_cmp);
				break;
			}
		}
	}
	err = 0;
cleanup:
	free(thr);
	free(first);
	free(rank);
	free(at);
	htab_free(&h);
	return err;
}

/* "00" to "99": numbers are written two digits a division. */
static const char digit_pairs[] =
	"00010203040506070809101112131415161718192021222324252627282930313233343536373839"
	"40414243444546474849505152535455565758596061626364656667686970717273747576777879"
	"8081828384858687888990919293949596979899";

/* A number, with a separator before it unless it is the first; out has
 * room for FMT_ROOM bytes whatever the number's length: the text goes
 * out in one copy of that fixed size, which the compiler does inline. */
#define FMT_ROOM 24

static size_t fmt_uint(char *out, int comma, uint64_t x)
{
	char buf[2 * FMT_ROOM];
	int n = FMT_ROOM;

	memset(buf + FMT_ROOM, 0, FMT_ROOM);
	while (x >= 100) {
		n -= 2;
		memcpy(buf + n, digit_pairs + 2 * (x % 100), 2);
		x /= 100;
	}
	if (x >= 10) {
		n -= 2;
		memcpy(buf + n, digit_pairs + 2 * x, 2);
	} else {
		buf[--n] = (char)('0' + x);
	}
	if (comma)
		buf[--n] = ',';
	memcpy(out, buf + n, FMT_ROOM);
	return FMT_ROOM - n;
}

/* A stack's frame numbers, root first, in brackets; numbered as first met. */
static void write_stack(struct ss *s, uint32_t stack)
{
	const uint32_t *v;
	uint32_t n;
	size_t start;

	if (s->text_at[stack]) {
		put(s, s->texts + s->text_at[stack] - 1, s->text_len[stack]);
		return;
	}
	v = seqtab_get(&s->p->stacks, stack, &n);
	if (GROW(s->texts, s->captexts, s->ltexts + 2 + (size_t)n * 12 + FMT_ROOM)) {
		s->err = -ENOMEM;
		return;
	}
	start = s->ltexts;
	s->texts[s->ltexts++] = '[';
	for (uint32_t i = 0; i < n; i++) {
		if (!s->frame_of[v[i]]) {
			s->frames[s->nframes] = v[i];
			s->frame_of[v[i]] = ++s->nframes;
		}
		s->ltexts += fmt_uint(s->texts + s->ltexts, i != 0, s->frame_of[v[i]] - 1);
	}
	s->texts[s->ltexts++] = ']';
	s->text_at[stack] = start + 1;
	s->text_len[stack] = (uint32_t)(s->ltexts - start);
	put(s, s->texts + start, s->ltexts - start);
}

#define IDLE UINT32_MAX /* a run of no samples: an empty stack */

struct run {
	uint32_t stack; /* or IDLE */
	uint64_t weight;
};

/* The runs of samples order[from..to) in time: the same stack sampled
 * back to back is one run; a gap is an IDLE run.  `cursor` is where on
 * the time axis the runs so far end. */
static size_t thread_runs(const struct ss *s, size_t from, size_t to, uint64_t period,
			  struct run *r)
{
	const struct profile_sample *v = s->p->samples_v;
	uint64_t cursor = v[s->order[from]].time_ns;
	size_t n = 0;

	for (size_t i = from; i < to; i++) {
		const struct profile_sample *x = &v[s->order[i]];
		uint64_t w = s->p->kind == LP_KIND_CPU ? x->weight * period :
							 profile_sample_value(s->p, x);
		int gap = x->time_ns > cursor + period / 2;

		if (gap) {
			r[n++] = (struct run){ IDLE, x->time_ns - cursor };
			cursor = x->time_ns;
		}
		if (!gap && n && r[n - 1].stack == x->stack)
			r[n - 1].weight += w;
		else
			r[n++] = (struct run){ x->stack, w };
		cursor += w;
	}
	return n;
}

/* One thread's profile: samples order[from..to); r has room for
 * 2 * (to - from) runs. */
static void write_thread(struct ss *s, size_t from, size_t to, int first, struct run *r)
{
	const struct profile_sample *t0 = &s->p->samples_v[s->order[from]];
	const struct proc *pr = &s->p->procs->v[t0->proc];
	uint64_t period = profile_sample_ns(s->p, t0->trace);
	uint64_t start = t0->time_ns - s->origin, total = 0;
	size_t n = thread_runs(s, from, to, period, r), wlen = 0;
	char name[512], wtext[FMT_ROOM];
	uint64_t last = 0;

	snprintf(name, sizeof(name), "%s %" PRIu32 "/%" PRIu32 "%s%s",
		 pr->comm && pr->comm[0] ? pr->comm : "?", pr->pid, t0->tid,
		 s->p->ntraces > 1 ? " in " : "",
		 s->p->ntraces > 1 ? s->p->traces[t0->trace].path : "");
	flush_buf(s);
	fprintf(s->out, "%s\n{\"type\":\"sampled\",\"name\":", first ? "" : ",");
	json_string(s->out, name);
	fprintf(s->out, ",\"unit\":\"%s\",\"samples\":[",
		lp_kind_info(s->p->kind) ? lp_kind_info(s->p->kind)->pp_unit : "none");
	for (size_t i = 0; i < n; i++) {
		if (i)
			put_char(s, ',');
		if (r[i].stack == IDLE)
			PUT_LIT(s, "[]");
		else
			write_stack(s, r[i].stack);
	}
	PUT_LIT(s, "],\"weights\":[");
	for (size_t i = 0; i < n; i++) {
		/* Most runs weigh one period: its text is kept. */
		if (i && r[i].weight == last) {
			put(s, wtext, wlen);
		} else {
			wlen = fmt_uint(wtext, 1, r[i].weight);
			last = r[i].weight;
			put(s, wtext + !i, wlen - !i);
		}
		total += r[i].weight;
	}
	flush_buf(s);
	fprintf(s->out, "],\"startValue\":%" PRIu64 ",\"endValue\":%" PRIu64 "}",
		start, start + total);
}

static void write_frames(struct ss *s)
{
	for (uint32_t i = 0; i < s->nframes; i++) {
		struct frame_info fi = frameinfo_get(&s->p->infos, s->frames[i]);
		uint32_t line = fi.start_line ? fi.start_line : fi.line;

		fprintf(s->out, "%s\n{\"name\":", i ? "," : "");
		json_string(s->out, strtab_get(&s->p->names, s->frames[i]));
		if (fi.file != FRAMEINFO_NONE) {
			fputs(",\"file\":", s->out);
			json_string(s->out, strtab_get(&s->p->names, fi.file));
		}
		if (line)
			fprintf(s->out, ",\"line\":%" PRIu32, line);
		putc_unlocked('}', s->out);
	}
}

int out_speedscope(FILE *out, const struct profile *p, const struct out_opts *o)
{
	struct ss s = { .out = out, .p = p };
	size_t nn = p->names.len ? p->names.len : 1, best = 0, best_n = 0, nthreads = 0;
	int err = 0;

	(void)o;
	s.order = malloc((p->nsamples ? p->nsamples : 1) * sizeof(*s.order));
	s.frame_of = calloc(nn, sizeof(*s.frame_of));
	s.frames = malloc(nn * sizeof(*s.frames));
	s.runs = malloc(2 * (p->nsamples ? p->nsamples : 1) * sizeof(*s.runs));
	s.text_at = calloc(p->stacks.len ? p->stacks.len : 1, sizeof(*s.text_at));
	s.text_len = malloc((p->stacks.len ? p->stacks.len : 1) * sizeof(*s.text_len));
	if (!s.order || !s.frame_of || !s.frames || !s.runs || !s.text_at || !s.text_len) {
		err = -ENOMEM;
		goto cleanup;
	}
	for (size_t i = 0; i < p->nsamples; i++) {
		s.order[i] = i;
		if (!i || p->samples_v[i].time_ns < s.origin)
			s.origin = p->samples_v[i].time_ns;
	}
	err = sort_samples(p, s.order);
	if (err)
		goto cleanup;
	/* The busiest thread is shown first. */
	for (size_t i = 0, j; i < p->nsamples; i = j, nthreads++) {
		for (j = i + 1; j < p->nsamples &&
		     !thread_cmp(&p->samples_v[s.order[i]], &p->samples_v[s.order[j]]); j++)
			;
		if (j - i > best_n) {
			best_n = j - i;
			best = nthreads;
		}
	}
	fputs("{\"$schema\":\"https://www.speedscope.app/file-format-schema.json\",\n"
	      "\"exporter\":\"luaprof " LUAPROF_VERSION "\",\"name\":", out);
	json_string(out, p->ntraces && p->traces[0].cmdline && p->traces[0].cmdline[0] ?
			 p->traces[0].cmdline : p->trace ? p->trace : "luaprof");
	fprintf(out, ",\"activeProfileIndex\":%zu,\n\"profiles\":[", best);
	for (size_t i = 0, j; i < p->nsamples; i = j) {
		for (j = i + 1; j < p->nsamples &&
		     !thread_cmp(&p->samples_v[s.order[i]], &p->samples_v[s.order[j]]); j++)
			;
		write_thread(&s, i, j, i == 0, s.runs);
	}
	fputs("],\n\"shared\":{\"frames\":[", out);
	write_frames(&s);
	fputs("]}}\n", out);
	err = s.err;
cleanup:
	free(s.order);
	free(s.frame_of);
	free(s.frames);
	free(s.runs);
	free(s.texts);
	free(s.text_at);
	free(s.text_len);
	return err;
}

/*
 * sidekick.c - keeps the native unwinder current while the recorder's one
 * thread is busy with a flush.
 *
 * The BPF walker unwinds a sample at the tick, with the unwind tables the
 * recorder has published for the code the process runs.  A process that
 * has just exec'd has none until the recorder reads its mappings, and one
 * that has just mapped code (the dynamic loader's libraries, a dlopen)
 * has none for that code: its walks stop at the first frame they cannot
 * follow.  The recorder publishes within a millisecond when it is
 * listening, but a flush embeds symbol tables and source lines, and
 * resolving source lines reads an object's DWARF: on a cold page cache
 * (libc's debug file on a fresh machine) that is seconds, and every sample
 * of a process started meanwhile came out cut short (dd in
 * tests/e2e/native_unwind.sh: 20 to 40% of its stacks).
 *
 * So for the length of a flush a second thread takes over the ring
 * buffer: it publishes the mappings of a process that exec'd, or whose
 * walk stopped outside the code it knows, and queues every event for the
 * main thread, which handles them after the flush, in order, exactly as
 * if it had read them itself.  The unwinder is the sidekick's alone while
 * it runs: a flush does not touch it.  (The objects' reader,
 * objects_prep.c, is the other thread of record/: it reads files for the
 * flush and never touches the ring buffer or the unwinder.)
 *
 * What it published goes with the event that made it publish: when the
 * main thread handles that event it writes the trace's records from what
 * the walker was given then, not from a read of /proc seconds later, by
 * which time the process may have exec'd again (other mappings: the
 * samples walked meanwhile would have frames in none) or be gone.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <bpf/libbpf.h>

#include "bpf/sampler.h"
#include "record/clock.h"
#include "record/procmaps.h"
#include "record/procs.h"
#include "record/sidekick.h"
#include "record/unwind.h"

/* Past this much queued, the sidekick stops reading: the ring buffer
 * holds the rest, as it would without it. */
#define QUEUE_MAX_BYTES (64u << 20)
/* A process whose walks keep stopping is re-read at most this often, and
 * a flush re-reads at most PUBLISH_MAX times (a pc in no mapping may be
 * garbage, not new code). */
#define REPUBLISH_NS 2000000ull
#define PUBLISH_MAX 1000
#define RECENT 64

/* What a process looked like when the sidekick published it. */
struct snapshot {
	struct snapshot *next; /* in sidekick.latest */
	pid_t pid;
	struct maps_table maps;
	struct proc_info info;
	int have_maps, have_info;
};

struct queued {
	struct queued *next;
	struct snapshot *snap; /* published at this event, or NULL */
	size_t size;
	uint8_t data[];
};

struct sidekick {
	struct ring_buffer *rb;
	struct unwinder *unw;
	const struct maps_table *(*known)(void *ctx, pid_t pid);
	void *known_ctx;
	pthread_t thread;
	int running;
	atomic_int stop;
	struct queued *head, **tail;
	size_t bytes;
	uint64_t dropped; /* events that found no memory */
	struct snapshot *current; /* of the event being handed over */
	struct snapshot *latest;  /* copies of each pid's last one */
	struct { pid_t pid; uint64_t ns; } recent[RECENT];
	unsigned next_recent;
	unsigned flush_published; /* re-reads in this flush */
	struct sidekick_stats st;
};

static void snap_free(struct snapshot *p)
{
	if (!p)
		return;
	if (p->have_maps)
		maps_table_free(&p->maps);
	free(p);
}

int sidekick_take_maps(struct sidekick *k, pid_t pid, struct maps_table *out)
{
	struct snapshot *p = k ? k->current : NULL;

	if (!p || p->pid != pid || !p->have_maps)
		return -ENOENT;
	*out = p->maps;
	p->have_maps = 0;
	return 0;
}

int sidekick_latest_maps(struct sidekick *k, pid_t pid, struct maps_table *out)
{
	for (struct snapshot *p = k ? k->latest : NULL; p; p = p->next)
		if (p->pid == pid)
			return maps_table_copy(&p->maps, out);
	return -ENOENT;
}

/* Keeps a copy of p as pid's latest. */
static void keep_latest(struct sidekick *k, const struct snapshot *p)
{
	struct snapshot *l;

	for (l = k->latest; l && l->pid != p->pid; l = l->next)
		;
	if (!l) {
		l = calloc(1, sizeof(*l));
		if (!l)
			return;
		l->pid = p->pid;
		l->next = k->latest;
		k->latest = l;
	} else {
		maps_table_free(&l->maps);
		l->have_maps = 0;
	}
	l->have_maps = !maps_table_copy(&p->maps, &l->maps);
}

static void drop_latest(struct sidekick *k)
{
	while (k->latest) {
		struct snapshot *l = k->latest;

		k->latest = l->next;
		snap_free(l);
	}
}

int sidekick_info(struct sidekick *k, pid_t pid, struct proc_info *out)
{
	struct snapshot *p = k ? k->current : NULL;

	if (!p || p->pid != pid || !p->have_info)
		return -ENOENT;
	*out = p->info;
	return 0;
}

/* Publishes pid's mappings to the walker; what was published, or NULL. */
static struct snapshot *publish(struct sidekick *k, pid_t pid, int always)
{
	struct snapshot *p;
	struct maps_table m;
	uint64_t now = mono_ns();
	unsigned i;

	if (k->flush_published >= PUBLISH_MAX)
		return NULL;
	for (i = 0; i < RECENT; i++)
		if (k->recent[i].pid == pid)
			break;
	if (i < RECENT && !always && now - k->recent[i].ns < REPUBLISH_NS)
		return NULL;
	if (i == RECENT)
		i = k->next_recent++ % RECENT;
	k->recent[i].pid = pid;
	k->recent[i].ns = now;
	/* After an exec, the new image alone; else what the recorder knew,
	 * code the sampler saw run in anonymous memory (JIT) included, as the
	 * main thread's own re-read keeps it. */
	if (procmaps_read_code(pid, always ? NULL : k->known(k->known_ctx, pid), NULL, 0, &m))
		return NULL; /* gone already */
	if (!m.n) { /* a zombie */
		maps_table_free(&m);
		return NULL;
	}
	k->flush_published++;
	if (!unwind_add_process(k->unw, pid, &m))
		k->st.published++;
	p = calloc(1, sizeof(*p));
	if (!p) {
		maps_table_free(&m);
		return NULL;
	}
	p->pid = pid;
	p->maps = m;
	p->have_maps = 1;
	p->have_info = !proc_read_info(pid, &p->info);
	keep_latest(k, p);
	return p;
}

/* A process the sampler stopped at its exec (LP_TASK_HELD) would wait
 * for the main thread until the flush ends: continued now, its mappings
 * published, and its event queued as one that held nothing. */
static int continue_held(const void *data, size_t size)
{
	const struct lp_event_task *te = data;

	if (size < sizeof(*te) || te->h.type != LP_EVENT_EXEC || !(te->flags & LP_TASK_HELD))
		return 0;
	kill((pid_t)te->h.pid, SIGCONT);
	return 1;
}

/* The ring buffer's events while the sidekick polls it (the owner's
 * callback passes them on): the unwinder's part now, the rest later. */
int sidekick_event(void *ctx, void *data, size_t size)
{
	struct sidekick *k = ctx;
	const struct lp_event_header *h = data;
	struct snapshot *snap = NULL;
	struct queued *q;

	if (size >= sizeof(*h) && k->unw) {
		if (h->type == LP_EVENT_EXEC) {
			snap = publish(k, (pid_t)h->pid, 1);
		} else if (h->type == LP_EVENT_SAMPLE &&
			   size >= lp_event_sample_head_size) {
			/* (The head is all it reads: see bpf/sampler.h.) */
			const struct lp_event_sample *e = data;

			/* (A walk without tables at all is a process
			 * between its exec and the EXEC event: that event
			 * publishes it.) */
			if (e->ustack_stop == LP_USTOP_UNMAPPED)
				snap = publish(k, (pid_t)h->pid, 0);
		}
	}
	q = malloc(sizeof(*q) + size);
	if (!q) {
		continue_held(data, size);
		snap_free(snap);
		k->dropped++;
		return 0;
	}
	q->next = NULL;
	q->snap = snap;
	q->size = size;
	memcpy(q->data, data, size);
	if (continue_held(data, size))
		((struct lp_event_task *)q->data)->flags &= ~LP_TASK_HELD;
	*k->tail = q;
	k->tail = &q->next;
	k->bytes += size;
	k->st.queued++;
	return 0;
}

static void *run(void *arg)
{
	struct sidekick *k = arg;
	const struct timespec pause = { 0, 5000000 };

	while (!atomic_load(&k->stop)) {
		if (k->bytes >= QUEUE_MAX_BYTES) {
			nanosleep(&pause, NULL);
			continue;
		}
		/* A short timeout: the flush may end at any moment. */
		ring_buffer__poll(k->rb, 10);
	}
	return NULL;
}

int sidekick_new(struct sidekick **out, struct ring_buffer *rb, struct unwinder *unw,
		 const struct maps_table *(*known)(void *ctx, pid_t pid), void *ctx)
{
	struct sidekick *k = calloc(1, sizeof(*k));

	*out = NULL;
	if (!k)
		return -ENOMEM;
	/* The main thread's own ring buffer, polled by one thread at a time:
	 * a second ring_buffer would map the ring's data twice more (libbpf
	 * maps it twice per consumer), 16 MiB of resident memory at 999 Hz. */
	k->rb = rb;
	k->unw = unw;
	k->known = known;
	k->known_ctx = ctx;
	k->tail = &k->head;
	*out = k;
	return 0;
}

void sidekick_begin(struct sidekick *k)
{
	if (!k || k->running)
		return;
	atomic_store(&k->stop, 0);
	k->flush_published = 0;
	/* Without a thread the flush just runs as before. */
	k->running = !pthread_create(&k->thread, NULL, run, k);
}

uint64_t sidekick_end(struct sidekick *k, int (*handle)(void *ctx, void *data, size_t size),
		      void *ctx)
{
	uint64_t dropped;

	if (!k || !k->running)
		return 0;
	atomic_store(&k->stop, 1);
	pthread_join(k->thread, NULL);
	k->running = 0;
	while (k->head) {
		struct queued *q = k->head;

		k->head = q->next;
		k->current = q->snap; /* for sidekick_take_maps(), _info() */
		if (handle)
			handle(ctx, q->data, q->size);
		k->current = NULL;
		snap_free(q->snap);
		free(q);
	}
	k->tail = &k->head;
	k->bytes = 0;
	drop_latest(k);
	dropped = k->dropped;
	k->dropped = 0;
	return dropped;
}

void sidekick_stats(const struct sidekick *k, struct sidekick_stats *st)
{
	memset(st, 0, sizeof(*st));
	if (k)
		*st = k->st;
}

void sidekick_free(struct sidekick *k)
{
	if (!k)
		return;
	sidekick_end(k, NULL, NULL); /* only if something left it running */
	free(k);
}

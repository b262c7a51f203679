/*
 * luajit_jit_traces.c - LuaJIT's compiled traces ("jit traces": GCtrace,
 * lj_trace.c) that a trace file needs, read once each from the live
 * process.  Named so, and their table jit_trace_table, so that LuaJIT's
 * traces are never confused with the trace file the recorder writes.
 *
 * A sample taken while trace N runs carries the GCtrace's address and a
 * fingerprint of where it starts and where its machine code is.  Trace
 * numbers are reused after a flush (jit.flush, or the JIT running out of
 * memory), so the key is (pid, number, address, fingerprint): a later
 * trace under the same number is another trace with another id.  A trace
 * flushed and compiled again with all four the same (the same loop, its
 * GCtrace at the same address, its code in an area mapped where the old
 * one was, or a fingerprint collision) may have other code or snapshots:
 * a known trace is looked at again when it was last read more than
 * REVALIDATE_NS ago, and if its code or snapshots moved it is read again
 * under a new id.  What the file keeps is what a report needs to place
 * compiled time: the prototype and bytecode position where the trace
 * starts, its root trace (side traces hang off one), its machine code
 * range, and its snapshots (luajit_snaps.c), which place each stretch of
 * that code in the functions the trace inlined.
 *
 * The traces met are a dense array indexed through lib/htab.h, as
 * report/'s tables are.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "lib/grow.h"
#include "lib/htab.h"
#include "record/luajit.h"

#define REVALIDATE_NS 100000000ull
#define LJ_GCT_TRACE 9 /* a GCtrace's gct byte: ~LJ_TTRACE */

/* A compiled trace met: its key, its id, and what it was when it was
 * read, and when that was. */
struct jit_trace {
	uint64_t addr, id;
	uint32_t pid, traceno;
	uint16_t fingerprint;
	uint64_t mcode, snap, checked_ns;
	uint32_t szmcode, nsnapmap;
	uint16_t nsnap;
};

/* A process's J->trace[] as jit_trace_at() last read it: each trace's
 * code, which answers for the addresses met until the next read. */
#define SCANS 64
struct jit_trace_code {
	uint64_t mcode, addr;
	uint32_t szmcode, traceno;
	uint16_t fingerprint;
};

struct jit_trace_scan {
	uint32_t pid;
	int ok;      /* the last read succeeded: v[] is J->trace[]'s */
	uint64_t G, ns;
	struct jit_trace_code *v;
	size_t n, cap;
};

struct jit_trace_table {
	struct jit_trace *v; /* every trace met, in the order met */
	size_t n, cap;
	struct htab index;   /* key_hash() -> v[] */
	uint64_t next_id;
	uint64_t gone; /* read when no longer there */
	uint64_t rechecks; /* changed() read a known trace again */
	struct lp_trace rec;
	struct snap_reader *snaps;
	struct jit_trace_scan scans[SCANS]; /* jit_trace_at()'s */
};

struct jit_trace_table *jit_trace_table_new(void)
{
	struct jit_trace_table *tt = calloc(1, sizeof(*tt));

	if (!tt)
		return NULL;
	tt->next_id = 1;
	tt->snaps = snap_reader_new();
	if (!tt->snaps) {
		free(tt);
		return NULL;
	}
	return tt;
}

void jit_trace_table_free(struct jit_trace_table *tt)
{
	if (!tt)
		return;
	free(tt->v);
	for (int i = 0; i < SCANS; i++)
		free(tt->scans[i].v);
	htab_free(&tt->index);
	snap_reader_free(tt->snaps);
	free(tt);
}

static uint64_t key_hash(const struct jit_trace *k)
{
	return hash_u64(k->addr ^ (uint64_t)k->pid << 32 ^ k->traceno ^
			(uint64_t)k->fingerprint << 48);
}

/* The trace met with k's key, or NULL. */
static struct jit_trace *find(struct jit_trace_table *tt, const struct jit_trace *k,
			      uint64_t hash)
{
	struct htab_probe p;
	int64_t i;

	htab_probe_start(&tt->index, hash, &p);
	while ((i = htab_probe_next(&tt->index, &p)) >= 0) {
		struct jit_trace *e = &tt->v[i];

		if (e->addr == k->addr && e->pid == k->pid && e->traceno == k->traceno &&
		    e->fingerprint == k->fingerprint)
			return e;
	}
	return NULL;
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Notes in k what the trace whose header is hdr is now. */
static void note_shape(struct jit_trace *k, const struct lj_layout *lo, const uint8_t *hdr)
{
	memcpy(&k->mcode, hdr + lo->tr_mcode, 8);
	memcpy(&k->szmcode, hdr + lo->tr_szmcode, 4);
	k->snap = k->nsnapmap = 0;
	k->nsnap = 0;
	if (lo->sn_size) {
		memcpy(&k->snap, hdr + lo->tr_snap, 8);
		memcpy(&k->nsnapmap, hdr + lo->tr_nsnapmap, 4);
		memcpy(&k->nsnap, hdr + lo->tr_nsnap, 2);
	}
	k->checked_ns = now_ns();
}

/* Whether hdr is the header of a GCtrace numbered traceno: its gct
 * byte (at the same offset as a function's) and its number. */
static int is_trace(const struct lj_layout *lo, const uint8_t *hdr, uint32_t traceno)
{
	uint16_t no;

	memcpy(&no, hdr + lo->tr_traceno, 2);
	return lo->fn_ffid && hdr[lo->fn_ffid - 1] == LJ_GCT_TRACE && no == (uint16_t)traceno;
}

/* Whether the known trace k must be read again: it was last looked at a
 * while ago and its code or snapshots are not where they were.  A trace
 * that cannot be read now, or is no longer there, keeps its id: its
 * samples were taken before.  Looking counts as a check whatever it
 * finds, so a hot trace costs a read of the target at most every
 * REVALIDATE_NS, not one per sample (a third of the recorder's CPU on
 * nginx at 999 Hz, before). */
static int changed(struct jit_trace_table *tt, struct jit_trace *k,
		   const struct lj_target *t)
{
	const struct lj_layout *lo = &t->layout;
	uint64_t now_checked = now_ns();
	struct jit_trace now = *k;
	uint8_t hdr[LJ_GCTRACE_HDR];

	if (now_checked - k->checked_ns < REVALIDATE_NS)
		return 0;
	k->checked_ns = now_checked;
	tt->rechecks++;
	if (target_read(t->pid, k->addr, hdr, sizeof(hdr)) || !is_trace(lo, hdr, k->traceno))
		return 0;
	note_shape(&now, lo, hdr);
	return now.mcode != k->mcode || now.szmcode != k->szmcode || now.snap != k->snap ||
	       now.nsnapmap != k->nsnapmap || now.nsnap != k->nsnap;
}

/* Reads the trace k names into tt->rec (id already set), and notes its
 * shape in k; a trace no longer there is written as a trace not read. */
static void read_trace(struct jit_trace_table *tt, struct proto_table *pt,
		       const struct lj_target *t, struct jit_trace *k,
		       const struct lp_trace_snaps **snaps,
		       snap_emit_proto_fn emit_proto, void *ctx)
{
	const struct lj_layout *lo = &t->layout;
	uint8_t hdr[LJ_GCTRACE_HDR];
	uint64_t startpt, startpc, mcode;
	const struct lp_proto *prec;
	uint32_t sizebc, szmcode;
	uint16_t root;

	if (target_read(t->pid, k->addr, hdr, sizeof(hdr)) || !is_trace(lo, hdr, k->traceno)) {
		tt->gone++;
		return;
	}
	note_shape(k, lo, hdr);
	startpt = lj_get_ref(lo, hdr + lo->tr_startpt);
	startpc = lj_get_ref(lo, hdr + lo->tr_startpc);
	memcpy(&mcode, hdr + lo->tr_mcode, 8);
	memcpy(&szmcode, hdr + lo->tr_szmcode, 4);
	memcpy(&root, hdr + lo->tr_root, 2);
	tt->rec.proto = proto_table_at(pt, t, startpt, &sizebc, &prec);
	if (prec)
		emit_proto(ctx, prec);
	/* The start's bytecode position in its proto, if it lies in the
	 * bytecode that follows the proto's header. */
	if (startpt && startpc >= startpt + lo->pt_size &&
	    startpc - startpt - lo->pt_size < (1ull << 26))
		tt->rec.startpc = (uint32_t)((startpc - startpt - lo->pt_size) / 4);
	tt->rec.root = root;
	tt->rec.mcode = mcode;
	tt->rec.szmcode = szmcode;
	snap_reader_read(tt->snaps, pt, t, k->addr, k->traceno, hdr, tt->rec.id,
			 emit_proto, ctx, snaps);
}

uint64_t jit_trace_table_get(struct jit_trace_table *tt, struct proto_table *pt,
			     const struct lj_target *t, uint64_t addr, uint32_t traceno,
			     uint16_t fingerprint, const struct lp_trace **rec,
			     const struct lp_trace_snaps **snaps,
			     snap_emit_proto_fn emit_proto, void *ctx)
{
	struct jit_trace k = { .addr = addr, .pid = (uint32_t)t->pid,
			       .traceno = traceno, .fingerprint = fingerprint };
	uint64_t hash = key_hash(&k);
	struct jit_trace *e;

	*rec = NULL;
	*snaps = NULL;
	if (!addr || !t->layout.g2j)
		return 0;
	e = find(tt, &k, hash);
	if (e && !changed(tt, e, t))
		return e->id;
	/* Room to remember it first: a trace read but not remembered would
	 * be read and written again at its next sample. */
	if (!e && (GROW(tt->v, tt->cap, tt->n + 1) ||
		    htab_insert(&tt->index, hash, (uint32_t)tt->n)))
		return 0;
	if (!e)
		e = &tt->v[tt->n++];
	memset(&tt->rec, 0, sizeof(tt->rec));
	tt->rec.pid = (uint32_t)t->pid;
	tt->rec.traceno = traceno;
	tt->rec.id = tt->next_id++;
	k.checked_ns = now_ns();
	read_trace(tt, pt, t, &k, snaps, emit_proto, ctx);
	k.id = tt->rec.id;
	*e = k;
	*rec = &tt->rec;
	return tt->rec.id;
}

/* The fingerprint the walk gives the trace whose header is hdr. */
static uint16_t trace_fingerprint(const struct lj_layout *lo, const uint8_t *hdr)
{
	uint64_t startpc = lj_get_ref(lo, hdr + lo->tr_startpc), mcode;

	memcpy(&mcode, hdr + lo->tr_mcode, 8);
	return (uint16_t)((startpc >> 2) ^ (mcode >> 4) ^ (mcode >> 20)) | 1;
}

/* The scan slot of t's VM: its own, or the one read longest ago, then
 * emptied for it. */
static struct jit_trace_scan *scan_slot(struct jit_trace_table *tt, const struct lj_target *t)
{
	struct jit_trace_scan *oldest = &tt->scans[0];

	for (int i = 0; i < SCANS; i++) {
		struct jit_trace_scan *sc = &tt->scans[i];

		if (sc->pid == (uint32_t)t->pid && sc->G == t->G)
			return sc;
		if (sc->ns < oldest->ns)
			oldest = sc;
	}
	*oldest = (struct jit_trace_scan){ .pid = (uint32_t)t->pid, .G = t->G,
					   .v = oldest->v, .cap = oldest->cap };
	return oldest;
}

/* Reads the code of every trace in J->trace[] (sizetrace refs at trarr)
 * into sc; 0 or -ENOENT. */
static int scan_traces(const struct lj_target *t, uint64_t trarr, uint32_t sizetrace,
		       struct jit_trace_scan *sc)
{
	const struct lj_layout *lo = &t->layout;
	uint8_t *refs = malloc((size_t)sizetrace * lo->ref_size), hdr[LJ_GCTRACE_HDR];
	int err = 0;

	sc->n = 0;
	if (!refs || target_read(t->pid, trarr, refs, (size_t)sizetrace * lo->ref_size)) {
		free(refs);
		return -ENOENT;
	}
	for (uint32_t no = 1; no < sizetrace && !err; no++) {
		uint64_t tr = lj_get_ref(lo, refs + (size_t)no * lo->ref_size), mcode;
		uint32_t szmcode;

		if (!tr || target_read(t->pid, tr, hdr, sizeof(hdr)) || !is_trace(lo, hdr, no))
			continue;
		memcpy(&mcode, hdr + lo->tr_mcode, 8);
		memcpy(&szmcode, hdr + lo->tr_szmcode, 4);
		if (GROW(sc->v, sc->cap, sc->n + 1)) {
			err = -ENOENT;
			break;
		}
		sc->v[sc->n++] = (struct jit_trace_code){ mcode, tr, szmcode, no,
							  trace_fingerprint(lo, hdr) };
	}
	free(refs);
	return err;
}

/* The trace of t's J->trace[], as last read (again now if that was
 * JIT_TRACE_SCAN_NS ago), whose code holds pc; *err -ESRCH when none
 * does, -ENOENT when J->trace[] could not be read. */
static const struct jit_trace_code *scanned_at(struct jit_trace_table *tt,
					       const struct lj_target *t, uint64_t pc,
					       uint64_t now, int *err)
{
	const struct lj_layout *lo = &t->layout;
	uint64_t J = t->G + lo->g2j, trarr = 0;
	uint32_t sizetrace = 0;
	struct jit_trace_scan *sc = scan_slot(tt, t);

	if (!sc->ns || now - sc->ns >= JIT_TRACE_SCAN_NS) {
		sc->ns = now;
		sc->ok = !(target_read(t->pid, J + lo->j_trace, &trarr, 8) ||
			   target_read(t->pid, J + lo->j_sizetrace, &sizetrace, 4) ||
			   !sizetrace || sizetrace > 65536 ||
			   scan_traces(t, trarr, sizetrace, sc));
	}
	*err = sc->ok ? -ESRCH : -ENOENT;
	for (size_t i = 0; sc->ok && i < sc->n; i++)
		if (pc - sc->v[i].mcode < sc->v[i].szmcode)
			return &sc->v[i];
	return NULL;
}

int jit_trace_at(struct jit_trace_table *tt, const struct lj_target *t, uint64_t pc,
		 uint32_t *traceno, uint64_t *addr, uint16_t *fingerprint)
{
	const struct lj_layout *lo = &t->layout;
	uint64_t J = t->G + lo->g2j, trarr = 0, ref = 0, now = now_ns();
	const struct jit_trace_code *c;
	int err;

	if (!lo->g2j || !t->G || !lo->fn_ffid)
		return -ENOENT;
	/* A trace met before holds pc while J->trace[] has it under its
	 * number (code does not move while a trace lives): taken as it is
	 * for REVALIDATE_NS after it was last looked at, as
	 * jit_trace_table_get() takes it, then checked with a read. */
	for (size_t i = 0; i < tt->n; i++) {
		const struct jit_trace *e = &tt->v[i];

		if (e->pid != (uint32_t)t->pid || pc - e->mcode >= e->szmcode)
			continue;
		if (now - e->checked_ns >= REVALIDATE_NS &&
		    ((!trarr && target_read(t->pid, J + lo->j_trace, &trarr, 8)) ||
		     target_read(t->pid, trarr + (uint64_t)e->traceno * lo->ref_size, &ref,
				 lo->ref_size) || lj_get_ref(lo, (const uint8_t *)&ref) != e->addr))
			continue;
		*traceno = e->traceno;
		*addr = e->addr;
		*fingerprint = e->fingerprint;
		return 0;
	}
	c = scanned_at(tt, t, pc, now, &err);
	if (!c)
		return err;
	*traceno = c->traceno;
	*addr = c->addr;
	*fingerprint = c->fingerprint;
	return 0;
}

uint64_t jit_trace_table_count(const struct jit_trace_table *tt)
{
	return tt->n;
}

void jit_trace_table_stats(const struct jit_trace_table *tt, struct snap_stats *out)
{
	snap_reader_stats(tt->snaps, out);
	out->stale += tt->gone;
	out->rechecks = tt->rechecks;
}

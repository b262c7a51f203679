/*
 * luajit_traces.c - the compiled traces a trace file needs, read once each
 * from the live process.
 *
 * A sample taken while trace N runs carries the GCtrace's address and a
 * fingerprint of where it starts and where its machine code is.  Trace
 * numbers are reused after a flush (jit.flush, or the JIT running out of
 * memory), so the key is (pid, number, address, fingerprint): a later
 * trace under the same number is another trace with another id.  A trace
 * flushed and compiled again with all four the same (the same loop, its
 * GCtrace at the same address, its code in an area mapped where the old
 * one was, or a fingerprint collision) may have other code or snapshots:
 * a known trace is looked at again when it was last
 * read more than REVALIDATE_NS ago, and if its code or snapshots moved it
 * is read again under a new id.  What the file keeps is what a report
 * needs to place compiled time: the prototype and bytecode position where
 * the trace starts, its root trace (side traces hang off one), its
 * machine code range, and its snapshots (luajit_snaps.c), which place
 * each stretch of that code in the functions the trace inlined.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "record/luajit.h"

#define REVALIDATE_NS 100000000ull
#define LJ_GCT_TRACE 9 /* a GCtrace's gct byte: ~LJ_TTRACE */

struct trace_key {
	uint64_t addr, id;
	uint32_t pid, traceno;
	uint16_t fingerprint;
	/* What the trace was when it was read, and when that was. */
	uint64_t mcode, snap, checked_ns;
	uint32_t szmcode, nsnapmap;
	uint16_t nsnap;
};

struct trace_table {
	struct trace_key *slots; /* open addressing; id 0 = empty */
	uint64_t nslots, count, next_id;
	uint64_t gone; /* read when no longer there */
	struct lp_trace rec;
	struct snap_reader *snaps;
};

struct trace_table *trace_table_new(void)
{
	struct trace_table *tt = calloc(1, sizeof(*tt));

	if (!tt)
		return NULL;
	tt->nslots = 256;
	tt->slots = calloc(tt->nslots, sizeof(*tt->slots));
	if (!tt->slots) {
		free(tt);
		return NULL;
	}
	tt->next_id = 1;
	tt->snaps = snap_reader_new();
	if (!tt->snaps) {
		free(tt->slots);
		free(tt);
		return NULL;
	}
	return tt;
}

void trace_table_free(struct trace_table *tt)
{
	if (!tt)
		return;
	free(tt->slots);
	snap_reader_free(tt->snaps);
	free(tt);
}

static struct trace_key *find_slot(struct trace_key *slots, uint64_t n,
				   const struct trace_key *k)
{
	uint64_t h = (k->addr ^ ((uint64_t)k->pid << 32) ^ k->traceno ^
		      ((uint64_t)k->fingerprint << 48)) * 0x9e3779b97f4a7c15ull;
	uint64_t i = (h ^ (h >> 29)) & (n - 1);

	while (slots[i].id && !(slots[i].addr == k->addr && slots[i].pid == k->pid &&
				slots[i].traceno == k->traceno &&
				slots[i].fingerprint == k->fingerprint))
		i = (i + 1) & (n - 1);
	return &slots[i];
}

static int grow(struct trace_table *tt)
{
	uint64_t n = tt->nslots * 2;
	struct trace_key *s = calloc(n, sizeof(*s));

	if (!s)
		return -ENOMEM;
	for (uint64_t i = 0; i < tt->nslots; i++)
		if (tt->slots[i].id)
			*find_slot(s, n, &tt->slots[i]) = tt->slots[i];
	free(tt->slots);
	tt->slots = s;
	tt->nslots = n;
	return 0;
}

uint64_t lj_proto_get(struct proto_table *pt, const struct lj_target *t,
		      uint64_t addr, uint32_t *sizebc, const struct lp_proto **prec)
{
	const struct lj_layout *lo = &t->layout;
	uint8_t hdr[256];
	uint32_t firstline, numline;

	*prec = NULL;
	*sizebc = 0;
	if (!addr || lo->pt_size > sizeof(hdr) || target_read(t->pid, addr, hdr, lo->pt_size))
		return 0;
	memcpy(&firstline, hdr + lo->pt_firstline, 4);
	memcpy(&numline, hdr + lo->pt_numline, 4);
	memcpy(sizebc, hdr + lo->pt_sizebc, 4);
	return proto_table_get(pt, t, addr,
			       lj_proto_fingerprint(lj_get_ref(lo, hdr + lo->pt_chunkname),
						    firstline, numline), prec);
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Notes in k what the trace whose header is hdr is now. */
static void note_shape(struct trace_key *k, const struct lj_layout *lo, const uint8_t *hdr)
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
 * samples were taken before. */
static int changed(const struct trace_key *k, const struct lj_target *t)
{
	const struct lj_layout *lo = &t->layout;
	struct trace_key now = *k;
	uint8_t hdr[LJ_TRACE_HDR];

	if (now_ns() - k->checked_ns < REVALIDATE_NS)
		return 0;
	if (target_read(t->pid, k->addr, hdr, sizeof(hdr)) || !is_trace(lo, hdr, k->traceno))
		return 0;
	note_shape(&now, lo, hdr);
	return now.mcode != k->mcode || now.szmcode != k->szmcode || now.snap != k->snap ||
	       now.nsnapmap != k->nsnapmap || now.nsnap != k->nsnap;
}

uint64_t trace_table_get(struct trace_table *tt, struct proto_table *pt,
			 const struct lj_target *t, uint64_t addr, uint32_t traceno,
			 uint16_t fingerprint, const struct lp_trace **rec,
			 const struct lp_trace_snaps **snaps,
			 snap_emit_proto_fn emit_proto, void *ctx)
{
	const struct lj_layout *lo = &t->layout;
	struct trace_key k = { .addr = addr, .pid = (uint32_t)t->pid,
			       .traceno = traceno, .fingerprint = fingerprint };
	struct trace_key *slot;
	uint8_t hdr[LJ_TRACE_HDR];
	uint64_t startpt, startpc, mcode = 0;
	const struct lp_proto *prec;
	uint32_t szmcode = 0, sizebc;
	uint16_t root = 0;
	int is_new;

	*rec = NULL;
	*snaps = NULL;
	if (!addr || !lo->g2j)
		return 0;
	slot = find_slot(tt->slots, tt->nslots, &k);
	if (slot->id && !changed(slot, t))
		return slot->id;
	is_new = !slot->id;
	memset(&tt->rec, 0, sizeof(tt->rec));
	tt->rec.pid = (uint32_t)t->pid;
	tt->rec.traceno = traceno;
	k.checked_ns = now_ns();
	tt->rec.id = tt->next_id++;
	/* What is no longer this trace is written as a trace not read. */
	if (!target_read(t->pid, addr, hdr, sizeof(hdr)) && is_trace(lo, hdr, traceno)) {
		note_shape(&k, lo, hdr);
		startpt = lj_get_ref(lo, hdr + lo->tr_startpt);
		startpc = lj_get_ref(lo, hdr + lo->tr_startpc);
		memcpy(&mcode, hdr + lo->tr_mcode, 8);
		memcpy(&szmcode, hdr + lo->tr_szmcode, 4);
		memcpy(&root, hdr + lo->tr_root, 2);
		tt->rec.proto = lj_proto_get(pt, t, startpt, &sizebc, &prec);
		if (prec)
			emit_proto(ctx, prec);
		/* The start's bytecode position in its proto, if it lies in
		 * the bytecode that follows the proto's header. */
		if (startpt && startpc >= startpt + lo->pt_size &&
		    startpc - startpt - lo->pt_size < (1ull << 26))
			tt->rec.startpc = (uint32_t)((startpc - startpt - lo->pt_size) / 4);
		tt->rec.root = root;
		tt->rec.mcode = mcode;
		tt->rec.szmcode = szmcode;
		snap_reader_read(tt->snaps, pt, t, addr, traceno, hdr, tt->rec.id,
				 emit_proto, ctx, snaps);
	} else {
		tt->gone++;
	}
	*slot = k;
	slot->id = tt->rec.id;
	*rec = &tt->rec;
	if (is_new && ++tt->count * 2 > tt->nslots)
		grow(tt);
	return tt->rec.id;
}

uint64_t trace_table_count(const struct trace_table *tt)
{
	return tt->count;
}

void trace_table_stats(const struct trace_table *tt, struct snap_stats *out)
{
	snap_reader_stats(tt->snaps, out);
	out->stale += tt->gone;
}

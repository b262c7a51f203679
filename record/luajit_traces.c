/*
 * luajit_traces.c - the compiled traces a trace file needs, read once each
 * from the live process.
 *
 * A sample taken while trace N runs carries the GCtrace's address and a
 * fingerprint of where it starts.  Trace numbers are reused after a flush
 * (jit.flush, or the JIT running out of memory), so the key is (pid,
 * number, address, fingerprint): a later trace under the same number is
 * another trace with another id.  What the file keeps is what a report
 * needs to place compiled time: the prototype and bytecode position where
 * the trace starts, its root trace (side traces hang off one), and its
 * machine code range.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "record/luajit.h"

struct trace_key {
	uint64_t addr, id;
	uint32_t pid, traceno;
	uint16_t fingerprint;
};

struct trace_table {
	struct trace_key *slots; /* open addressing; id 0 = empty */
	uint64_t nslots, count, next_id;
	struct lp_trace rec;
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
	return tt;
}

void trace_table_free(struct trace_table *tt)
{
	if (!tt)
		return;
	free(tt->slots);
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

/* The proto id of the proto at addr, reading it if it is new. */
static uint64_t start_proto(struct proto_table *pt, const struct lj_target *t,
			    uint64_t addr, const struct lp_proto **prec)
{
	const struct lj_layout *lo = &t->layout;
	uint8_t hdr[256];
	uint32_t firstline, numline;

	if (!addr || lo->pt_size > sizeof(hdr) || target_read(t->pid, addr, hdr, lo->pt_size))
		return 0;
	memcpy(&firstline, hdr + lo->pt_firstline, 4);
	memcpy(&numline, hdr + lo->pt_numline, 4);
	return proto_table_get(pt, t, addr,
			       lj_proto_fingerprint(lj_get_ref(lo, hdr + lo->pt_chunkname),
						    firstline, numline), prec);
}

uint64_t trace_table_get(struct trace_table *tt, struct proto_table *pt,
			 const struct lj_target *t, uint64_t addr, uint32_t traceno,
			 uint16_t fingerprint, const struct lp_trace **rec,
			 const struct lp_proto **prec)
{
	const struct lj_layout *lo = &t->layout;
	struct trace_key k = { .addr = addr, .pid = (uint32_t)t->pid,
			       .traceno = traceno, .fingerprint = fingerprint };
	struct trace_key *slot;
	uint8_t hdr[256];
	uint64_t startpt, startpc, mcode = 0;
	uint32_t szmcode = 0;
	uint16_t root = 0;

	*rec = NULL;
	*prec = NULL;
	if (!addr || !lo->g2j)
		return 0;
	slot = find_slot(tt->slots, tt->nslots, &k);
	if (slot->id)
		return slot->id;
	memset(&tt->rec, 0, sizeof(tt->rec));
	tt->rec.pid = (uint32_t)t->pid;
	tt->rec.traceno = traceno;
	if (!target_read(t->pid, addr, hdr, sizeof(hdr))) {
		startpt = lj_get_ref(lo, hdr + lo->tr_startpt);
		startpc = lj_get_ref(lo, hdr + lo->tr_startpc);
		memcpy(&mcode, hdr + lo->tr_mcode, 8);
		memcpy(&szmcode, hdr + lo->tr_szmcode, 4);
		memcpy(&root, hdr + lo->tr_root, 2);
		tt->rec.proto = start_proto(pt, t, startpt, prec);
		/* The start's bytecode position in its proto, if it lies in
		 * the bytecode that follows the proto's header. */
		if (startpt && startpc >= startpt + lo->pt_size &&
		    startpc - startpt - lo->pt_size < (1ull << 26))
			tt->rec.startpc = (uint32_t)((startpc - startpt - lo->pt_size) / 4);
		tt->rec.root = root;
		tt->rec.mcode = mcode;
		tt->rec.szmcode = szmcode;
	}
	*slot = k;
	slot->id = tt->rec.id = tt->next_id++;
	*rec = &tt->rec;
	if (++tt->count * 2 > tt->nslots)
		grow(tt);
	return tt->rec.id;
}

uint64_t trace_table_count(const struct trace_table *tt)
{
	return tt->count;
}

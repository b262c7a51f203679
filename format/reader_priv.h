/*
 * reader_priv.h - the reader's state, shared by reader.c (file header,
 * chunk framing, resynchronization) and decode.c (record bodies).  The
 * split keeps the framing logic, which decides what bytes to trust, apart
 * from the grammar of the records inside a chunk that already checked out.
 * Private to format/: callers see only the opaque struct in trace.h.
 */
#ifndef LUAPROF_FORMAT_READER_PRIV_H
#define LUAPROF_FORMAT_READER_PRIV_H

#include <stdint.h>

#include "format/codec.h"
#include "format/stacktree.h"
#include "format/trace.h"

struct trace_reader {
	int fd;
	int eof;      /* read() has returned 0 */
	int finished; /* end-of-file accounting is done */

	/* Read window: file bytes [base + start, base + end) are in buf. */
	uint8_t *buf;
	size_t cap, start, end;
	uint64_t base;
	uint64_t size_hint; /* the file's size at open, 0 unknown */

	/* Records not yet returned from the current chunk, which is either
	 * in the window (codec none) or in raw (decompressed). */
	const uint8_t *rec, *rec_end;
	uint64_t prev_sample_time;
	struct lp_buf raw;

	/* The number of the last records chunk read (CHUNK_SEQ), if any. */
	uint64_t last_seq;
	int seq_seen;

	/* A damaged region being skipped (see reader.c). */
	int resyncing;
	uint64_t resync_start, trunc_at;

	/* What the last returned record points to: NUL-terminated copies of
	 * its strings, and its array of mappings, addresses or symbols. */
	struct lp_buf strings;
	struct lp_buf array;

	/* Stacks read so far, for stack_branch records to name (a trace
	 * with incompat STACK_BRANCH only; NULL otherwise). */
	struct lp_stacktree *stacks;

	struct trace_reader_stats stats;
	uint64_t skip; /* bit t: records of type t are skipped unread */
	uint64_t rec_bytes; /* the body size of the last record returned */
};

/*
 * Decodes the record at r->rec into rec and moves r->rec past it.
 * Returns 1 for a record, 0 for one that was skipped (unknown type or not
 * decodable, counted in stats), -ENOMEM.
 */
int lp_decode_record(struct trace_reader *r, struct lp_record *rec);

#endif

/*
 * reader.c - reads a trace file (format v1, see trace.h and
 * docs/format.md) back into decoded records, for `luaprof report`, `diff`
 * and `info`: the file header and the chunk framing here, the record
 * bodies in decode.c.
 *
 * The file is untrusted: it may be cut short by a killed recorder, damaged
 * on disk, hand-made, or written by a newer luaprof.  So the reader checks
 * every size before using it, allocates only in proportion to bytes it has
 * actually read, and treats damage as something to count and step over
 * rather than a reason to stop: a chunk that does not check out is skipped
 * and the reader scans forward for the next chunk that does.  Only the
 * file header is all-or-nothing, because without it nothing else can be
 * trusted.  The file is read through a window buffer, never slurped, so
 * traces of any size cost at most a few chunk sizes of memory.
 *
 * Messages for trace_reader_open() failures go to errbuf without the file
 * name, which the caller prefixes; the library itself never prints.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "format/codec.h"
#include "format/reader_priv.h"
#include "format/trace.h"

#define READ_BLOCK (1u << 20)
#define NO_OFFSET UINT64_MAX

/* The fuzzing build (make fuzz-build, tests/fuzz/) takes every CRC as
 * good, so that mutated bytes reach the chunks and records behind them.
 * Never defined in a build anyone runs. */
#ifdef FUZZING_BUILD_MODE_UNSAFE_FOR_PRODUCTION
#define CRC_MATCHES(computed, stored) ((void)(computed), (void)(stored), 1)
#else
#define CRC_MATCHES(computed, stored) ((computed) == (stored))
#endif

struct chunk_header {
	uint8_t type, codec;
	uint32_t raw_size, stored_size, crc;
};

/* Offset in the file of the next unconsumed byte. */
static uint64_t position(const struct trace_reader *r)
{
	return r->base + r->start;
}

/*
 * Makes at least need bytes available from r->start unless the file ends
 * first; returns how many are available, or -errno.  Returning fewer than
 * need therefore always means end of file.
 */
static ssize_t fill(struct trace_reader *r, size_t need)
{
	size_t avail = r->end - r->start;

	if (avail >= need || r->eof)
		return (ssize_t)avail;
	if (r->start) {
		memmove(r->buf, r->buf + r->start, avail);
		r->base += r->start;
		r->start = 0;
		r->end = avail;
	}
	if (need > r->cap) {
		/* A block at a time, but no more than a small file holds
		 * (it may still grow: need then wins). */
		size_t block = r->size_hint && r->size_hint < READ_BLOCK ?
			       (size_t)r->size_hint : READ_BLOCK;
		size_t cap = need < block ? block : need;
		uint8_t *buf = realloc(r->buf, cap);

		if (!buf)
			return -ENOMEM;
		r->buf = buf;
		r->cap = cap;
	}
	while (r->end < need) {
		ssize_t n = read(r->fd, r->buf + r->end, r->cap - r->end);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (n == 0) {
			r->eof = 1;
			break;
		}
		r->end += (size_t)n;
		r->stats.file_bytes += (uint64_t)n;
	}
	return (ssize_t)(r->end - r->start);
}

/*
 * Resynchronization bookkeeping.  Damage is counted once per damaged
 * region, from the first byte that failed to the next chunk that checks
 * out, however many false chunk magics the region happens to contain.
 * A region that ends the file and began with a chunk whose stated size
 * runs past the end is a trace cut short, not garbage.
 */
static void enter_resync(struct trace_reader *r, int incomplete)
{
	if (!r->resyncing) {
		r->resyncing = 1;
		r->resync_start = position(r);
		r->trunc_at = NO_OFFSET;
	}
	if (incomplete && r->trunc_at == NO_OFFSET)
		r->trunc_at = position(r);
}

static void leave_resync(struct trace_reader *r, uint64_t end)
{
	if (!r->resyncing)
		return;
	r->resyncing = 0;
	if (end > r->resync_start) {
		r->stats.bad_chunks++;
		r->stats.garbage_bytes += end - r->resync_start;
	}
}

static void finish(struct trace_reader *r)
{
	if (r->finished)
		return;
	r->finished = 1;
	if (r->resyncing && r->trunc_at != NO_OFFSET) {
		r->stats.truncated = 1;
		leave_resync(r, r->trunc_at);
	}
	leave_resync(r, position(r));
}

/* The candidate at r->start is not a good chunk: step past its magic. */
static void reject_candidate(struct trace_reader *r, int incomplete)
{
	enter_resync(r, incomplete);
	r->start++;
}

/* No chunk magic at r->start: jump to the next one in the window. */
static void skip_to_magic(struct trace_reader *r)
{
	size_t avail = r->end - r->start;
	const uint8_t *hit;

	enter_resync(r, 0);
	hit = memmem(r->buf + r->start + 1, avail - 1, LP_CHUNK_MAGIC, 4);
	if (hit)
		r->start = (size_t)(hit - r->buf);
	else if (avail > 4)
		r->start = r->end - 3; /* may hold the start of a magic */
	else
		r->start++;
}

static void parse_chunk_header(const uint8_t *p, struct chunk_header *h)
{
	struct lp_cursor c = { p + 4, p + LP_CHUNK_HEADER_SIZE };
	uint16_t flags;

	/* Cannot fail: the caller has LP_CHUNK_HEADER_SIZE bytes. */
	lp_get_u8(&c, &h->type);
	lp_get_u8(&c, &h->codec);
	lp_get_u16(&c, &flags); /* no flags in v1; ignored, see format.md */
	lp_get_u32(&c, &h->raw_size);
	lp_get_u32(&c, &h->stored_size);
	lp_get_u32(&c, &h->crc);
}

static uint64_t sat_add(uint64_t a, uint64_t b)
{
	return a + b < a ? UINT64_MAX : a + b;
}

/*
 * The chunk record that starts a records chunk of a CHUNK_SEQ trace:
 * moves *records past it.  Returns 1 to read the chunk, 0 to skip it
 * (counted), -EBADMSG for a chunk without one.  Chunks are read only in
 * rising order: a number above the one expected means chunks are missing
 * (counted, and the chunk is read); a number below it, a chunk that came
 * again or out of its place, which is skipped, so that no sample ever
 * counts twice and stream order (stacks before the samples that name
 * them, maps before their addresses) holds.
 */
static int take_seq(struct trace_reader *r, const uint8_t **records,
		    const uint8_t *end)
{
	struct lp_cursor c = { *records, end }, body;
	uint64_t type, len, seq;

	if (lp_get_uv(&c, &type) || type != LP_REC_CHUNK || lp_get_uv(&c, &len) ||
	    len > lp_cursor_left(&c))
		return -EBADMSG;
	body.p = c.p;
	body.end = c.p + len;
	if (lp_get_uv(&body, &seq))
		return -EBADMSG;
	if (r->seq_seen && seq <= r->last_seq) {
		r->stats.disordered_chunks++;
		return 0;
	}
	/* No overflow: seq is above last_seq, or the first one met. */
	r->stats.missing_chunks = sat_add(r->stats.missing_chunks,
					  r->seq_seen ? seq - r->last_seq - 1 : seq);
	r->last_seq = seq;
	r->seq_seen = 1;
	*records = c.p + len; /* later fields of the record are skipped */
	return 1;
}

/*
 * Sets up the records of a chunk whose CRC checked out.  Returns 1 if it
 * holds records to read, 0 if it was skipped, -ENOMEM.
 */
static int open_chunk(struct trace_reader *r, const struct chunk_header *h,
		      const uint8_t *payload)
{
	const uint8_t *records = payload;
	int err;

	if (h->type != LP_CHUNK_RECORDS) {
		r->stats.skipped_chunks++;
		return 0;
	}
	switch (h->codec) {
	case LP_CODEC_NONE:
		if (h->stored_size != h->raw_size)
			goto bad;
		break; /* read in place: nothing touches the window meanwhile */
	case LP_CODEC_LZ4:
	case LP_CODEC_ZLIB:
		r->raw.len = 0;
		err = lp_buf_reserve(&r->raw, (size_t)h->raw_size + 1);
		if (err)
			return err;
		err = lp_decompress(h->codec, payload, h->stored_size,
				    r->raw.data, h->raw_size);
		if (err == -ENOMEM)
			return err;
		if (err)
			goto bad;
		records = r->raw.data;
		break;
	default:
		goto bad;
	}
	if (r->stats.compat & LP_COMPAT_CHUNK_SEQ) {
		err = take_seq(r, &records, records + h->raw_size);
		if (err < 0)
			goto bad;
		if (!err)
			return 0;
	}
	r->stats.chunks++;
	r->stats.raw_bytes += h->raw_size;
	r->stats.stored_bytes += h->stored_size;
	r->rec = records;
	r->rec_end = (h->codec == LP_CODEC_NONE ? payload : r->raw.data) + h->raw_size;
	r->prev_sample_time = 0;
	return 1;

bad:
	/* The CRC vouches for the header, so the extent is known and the
	 * next chunk follows directly: no resynchronization needed. */
	r->stats.bad_chunks++;
	return 0;
}

/* Finds and opens the next good records chunk: 1, 0 at the end, -errno. */
static int next_chunk(struct trace_reader *r)
{
	for (;;) {
		struct chunk_header h;
		const uint8_t *p;
		size_t avail, total;
		ssize_t got;
		uint32_t crc;
		int ret;

		got = fill(r, LP_CHUNK_HEADER_SIZE);
		if (got < 0)
			return (int)got;
		avail = (size_t)got;
		if (!avail) {
			finish(r);
			return 0;
		}
		p = r->buf + r->start;
		if (memcmp(p, LP_CHUNK_MAGIC, avail < 4 ? avail : 4)) {
			skip_to_magic(r);
			continue;
		}
		if (avail < LP_CHUNK_HEADER_SIZE) {
			reject_candidate(r, 1); /* file ends in a header */
			continue;
		}
		parse_chunk_header(p, &h);
		if (h.raw_size > LP_CHUNK_MAX_RAW ||
		    h.stored_size > LP_CHUNK_MAX_STORED) {
			reject_candidate(r, 0);
			continue;
		}
		total = LP_CHUNK_HEADER_SIZE + (size_t)h.stored_size;
		got = fill(r, total);
		if (got < 0)
			return (int)got;
		if ((size_t)got < total) {
			reject_candidate(r, 1); /* file ends in a payload */
			continue;
		}
		p = r->buf + r->start; /* fill() may have moved the window */
		crc = lp_crc32(0, p + 4, 12);
		crc = lp_crc32(crc, p + LP_CHUNK_HEADER_SIZE, h.stored_size);
		if (!CRC_MATCHES(crc, h.crc)) {
			reject_candidate(r, 0);
			continue;
		}
		leave_resync(r, position(r));
		r->stats.codec_chunks[h.codec <= LP_CODEC_ZLIB ? h.codec : LP_CODEC_ZLIB + 1]++;
		r->start += total;
		ret = open_chunk(r, &h, p + LP_CHUNK_HEADER_SIZE);
		if (ret)
			return ret;
	}
}

void trace_reader_skip(struct trace_reader *r, uint64_t types)
{
	r->skip = types;
}

uint64_t trace_reader_record_bytes(const struct trace_reader *r)
{
	return r->rec_bytes;
}

int trace_reader_next(struct trace_reader *r, struct lp_record *rec)
{
	int ret;

	if (!r || !rec)
		return -EINVAL;
	for (;;) {
		/* Each pass consumes a record or a chunk, so this ends. */
		if (r->rec < r->rec_end) {
			ret = lp_decode_record(r, rec);
			if (ret)
				return ret;
			continue;
		}
		ret = next_chunk(r);
		if (ret <= 0)
			return ret;
	}
}

static void set_error(char *errbuf, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	if (!errbuf || !errlen)
		return;
	va_start(ap, fmt);
	vsnprintf(errbuf, errlen, fmt, ap);
	va_end(ap);
}

static int check_header(struct trace_reader *r, size_t avail, char *errbuf,
			size_t errlen)
{
	struct lp_cursor c = { r->buf + LP_MAGIC_SIZE, r->buf + avail };
	uint16_t version, header_size;
	uint32_t incompat, compat, crc;

	if (!avail) {
		set_error(errbuf, errlen, "empty file");
		return -EBADMSG;
	}
	if (memcmp(r->buf, LP_MAGIC, avail < LP_MAGIC_SIZE ? avail : LP_MAGIC_SIZE)) {
		set_error(errbuf, errlen, "not a luaprof trace");
		return -EBADMSG;
	}
	if (avail < LP_HEADER_SIZE) {
		set_error(errbuf, errlen,
			  "not a luaprof trace (file too short: %zu bytes)", avail);
		return -EBADMSG;
	}
	lp_get_u16(&c, &version);
	lp_get_u16(&c, &header_size);
	lp_get_u32(&c, &incompat);
	lp_get_u32(&c, &compat);
	lp_get_u32(&c, &crc);
	r->stats.version = version;
	r->stats.incompat = incompat;
	r->stats.compat = compat;
	/* The version comes before the checksum: a newer version may lay
	 * out the rest of its header differently. */
	if (version > LP_VERSION) {
		set_error(errbuf, errlen,
			  "trace format version %u is newer than this luaprof understands (%u); upgrade luaprof",
			  version, LP_VERSION);
		return -ENOTSUP;
	}
	if (version == 0 || header_size != LP_HEADER_SIZE ||
	    !CRC_MATCHES(lp_crc32(0, r->buf, LP_HEADER_SIZE - 4), crc)) {
		set_error(errbuf, errlen,
			  "trace header is damaged (checksum or size mismatch)");
		return -EBADMSG;
	}
	if (incompat & ~LP_INCOMPAT_KNOWN) {
		set_error(errbuf, errlen,
			  "trace uses features this luaprof does not understand (incompat bits 0x%x); upgrade luaprof",
			  incompat & ~LP_INCOMPAT_KNOWN);
		return -ENOTSUP;
	}
	return 0;
}

int trace_reader_open(struct trace_reader **out, const char *path,
		      char *errbuf, size_t errlen)
{
	struct trace_reader *r;
	struct stat st;
	ssize_t got;
	int err;

	*out = NULL;
	set_error(errbuf, errlen, "%s", "");
	r = calloc(1, sizeof(*r));
	if (!r) {
		set_error(errbuf, errlen, "out of memory");
		return -ENOMEM;
	}
	r->fd = open(path, O_RDONLY | O_CLOEXEC);
	if (r->fd < 0) {
		err = -errno;
		set_error(errbuf, errlen, "cannot open: %s", strerror(-err));
		goto cleanup;
	}
	if (!fstat(r->fd, &st) && S_ISREG(st.st_mode))
		r->size_hint = (uint64_t)st.st_size;
	got = fill(r, LP_HEADER_SIZE);
	if (got < 0) {
		err = (int)got;
		set_error(errbuf, errlen, "cannot read: %s", strerror(-err));
		goto cleanup;
	}
	err = check_header(r, (size_t)got, errbuf, errlen);
	if (err)
		goto cleanup;
	if (r->stats.incompat & LP_INCOMPAT_STACK_BRANCH) {
		r->stacks = lp_stacktree_new(SIZE_MAX);
		if (!r->stacks) {
			set_error(errbuf, errlen, "out of memory");
			err = -ENOMEM;
			goto cleanup;
		}
	}
	r->start = LP_HEADER_SIZE;
	*out = r;
	return 0;

cleanup:
	trace_reader_close(r);
	return err;
}

void trace_reader_get_stats(const struct trace_reader *r,
			    struct trace_reader_stats *stats)
{
	memset(stats, 0, sizeof(*stats));
	if (r)
		*stats = r->stats;
}

void trace_reader_close(struct trace_reader *r)
{
	if (!r)
		return;
	if (r->fd >= 0)
		close(r->fd);
	free(r->buf);
	lp_buf_free(&r->raw);
	lp_buf_free(&r->strings);
	lp_buf_free(&r->array);
	lp_stacktree_free(r->stacks);
	free(r);
}

/*
 * test_format_damage.c - unit tests of the trace reader on the files it
 * will meet in the wild besides clean ones: empty, foreign, newer, cut
 * short at any byte, damaged in the middle, or extended by a later
 * version.  Hand-made files are built with codec.h so that each test
 * states exactly the bytes it feeds the reader.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "format/codec.h"
#include "format/trace.h"
#include "tests/unit/format_util.h"
#include "tests/unit/unit.h"

static void open_fails(const char *path, const void *data, size_t n, int want_err,
		       const char *want_msg, int *ok)
{
	struct trace_reader *r = NULL;
	char msg[256];
	int err;

	*ok = 0;
	if (data && fmt_write_file(path, data, n))
		return;
	err = trace_reader_open(&r, path, msg, sizeof(msg));
	*ok = err == want_err && !r && strstr(msg, want_msg) != NULL;
	if (!*ok)
		printf("  open: %d (%s), want %d (%s)\n", err, msg, want_err, want_msg);
}

static void put_header(struct lp_buf *b, uint16_t version, uint32_t incompat, uint32_t compat)
{
	lp_put_bytes(b, LP_MAGIC, LP_MAGIC_SIZE);
	lp_put_u16(b, version);
	lp_put_u16(b, LP_HEADER_SIZE);
	lp_put_u32(b, incompat);
	lp_put_u32(b, compat);
	lp_put_u32(b, lp_crc32(0, b->data + b->len - 20, 20));
}

/* Recomputes the CRC of the chunk at c, after a test edited it. */
static void fix_crc(uint8_t *c)
{
	uint32_t stored = (uint32_t)c[12] | (uint32_t)c[13] << 8 |
			  (uint32_t)c[14] << 16 | (uint32_t)c[15] << 24;
	uint32_t crc = lp_crc32(lp_crc32(0, c + 4, 12), c + LP_CHUNK_HEADER_SIZE, stored);
	int i;

	for (i = 0; i < 4; i++)
		c[16 + i] = (uint8_t)(crc >> (8 * i));
}

static void put_chunk(struct lp_buf *b, uint8_t type, enum lp_codec codec,
		      const void *raw, size_t raw_size)
{
	size_t at = b->len, bound = lp_compress_bound(codec, raw_size), stored = 0;

	lp_buf_reserve(b, LP_CHUNK_HEADER_SIZE + bound);
	lp_compress(codec, raw, raw_size, b->data + at + LP_CHUNK_HEADER_SIZE, bound, &stored);
	lp_put_bytes(b, LP_CHUNK_MAGIC, 4);
	lp_put_bytes(b, (uint8_t[]){ type, (uint8_t)codec, 0, 0 }, 4);
	lp_put_u32(b, (uint32_t)raw_size);
	lp_put_u32(b, (uint32_t)stored);
	lp_put_u32(b, 0);
	b->len += stored;
	fix_crc(b->data + at);
}

static void put_record(struct lp_buf *b, uint64_t type, const struct lp_buf *body)
{
	lp_put_uv(b, type);
	lp_put_uv(b, body->len);
	lp_put_bytes(b, body->data, body->len);
}

/* An exit record: the smallest marker a hand-made chunk can carry. */
static void put_exit(struct lp_buf *b, uint32_t pid)
{
	struct lp_buf body = { 0 };

	lp_put_uv(&body, pid);
	lp_put_uv(&body, 1000 + pid);
	put_record(b, LP_REC_EXIT, &body);
	lp_buf_free(&body);
}

/* Reads every record; returns the exit pids seen, in order, as digits. */
static const char *read_exits(const char *path, struct trace_reader_stats *st, int *ret)
{
	static char seen[64];
	struct trace_reader *r;
	struct lp_record rec;
	size_t n = 0;
	char msg[256];

	seen[0] = '\0';
	*ret = trace_reader_open(&r, path, msg, sizeof(msg));
	if (*ret)
		return seen;
	while ((*ret = trace_reader_next(r, &rec)) == 1)
		if (rec.type == LP_REC_EXIT && n + 1 < sizeof(seen))
			seen[n++] = (char)('0' + rec.u.exit.pid % 10);
	seen[n] = '\0';
	trace_reader_get_stats(r, st);
	trace_reader_close(r);
	return seen;
}

TEST(open_refusals)
{
	struct lp_buf b = { 0 };
	const char *path = fmt_tmp_path("refused.lp");
	int ok;

	open_fails(path, "", 0, -EBADMSG, "empty file", &ok);
	CHECK(ok);
	open_fails(path, "\x7f" "ELF\x02\x01\x01\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0", 26,
		   -EBADMSG, "not a luaprof trace", &ok);
	CHECK(ok);
	open_fails(path, "LUAP", 4, -EBADMSG, "not a luaprof trace", &ok);
	CHECK(ok);
	open_fails(path, "LUAPROF\0\x01\0", 10, -EBADMSG, "not a luaprof trace", &ok);
	CHECK(ok);
	open_fails(fmt_tmp_path("missing.lp"), NULL, 0, -ENOENT, "cannot open", &ok);
	CHECK(ok);
	put_header(&b, 2, 0, 0);
	open_fails(path, b.data, b.len, -ENOTSUP, "version 2 is newer", &ok);
	CHECK(ok);
	b.len = 0;
	put_header(&b, 1, 0x4, 0);
	open_fails(path, b.data, b.len, -ENOTSUP, "incompat bits 0x4", &ok);
	CHECK(ok);
	b.len = 0;
	put_header(&b, 1, 0, 0);
	b.data[12] ^= 0x80; /* an incompat bit flipped on disk is damage */
	open_fails(path, b.data, b.len, -EBADMSG, "damaged", &ok);
	CHECK(ok);
	lp_buf_free(&b);
}

TEST(garbage_after_header_and_unknown_compat)
{
	struct trace_reader_stats st;
	struct lp_buf b = { 0 };
	const char *path = fmt_tmp_path("compat.lp");
	int ret, i;

	put_header(&b, 1, 0, 0x80000000u); /* unknown compat bits are fine */
	for (i = 0; i < 5000; i++)
		lp_put_bytes(&b, (uint8_t[]){ (uint8_t)(i * 131 + 7) }, 1);
	CHECK(fmt_write_file(path, b.data, b.len) == 0);
	CHECK(!strcmp(read_exits(path, &st, &ret), "") && ret == 0);
	CHECK(st.compat == 0x80000000u && st.garbage_bytes == 5000 && st.bad_chunks == 1 &&
	      !st.chunks && !st.truncated && st.file_bytes == b.len);
	lp_buf_free(&b);
}

TEST(unknown_chunk_type_and_records)
{
	struct trace_reader_stats st;
	struct lp_buf b = { 0 }, p = { 0 }, body = { 0 };
	const char *path = fmt_tmp_path("unknown.lp");
	int ret;

	put_header(&b, 1, 0, 0);
	put_exit(&p, 1);
	put_chunk(&b, 7, LP_CODEC_NONE, p.data, p.len); /* a future chunk type */
	p.len = 0;
	put_exit(&p, 2);
	lp_put_bytes(&body, "\x01\x02\x03", 3);
	put_record(&p, 300, &body);		/* a future record type */
	put_record(&p, 0, &body);
	put_exit(&p, 3);
	/* A sample with two fields a later version appended. */
	body.len = 0;
	lp_put_sv(&body, -5);
	lp_put_uv(&body, 10);
	lp_put_uv(&body, 11);
	lp_put_uv(&body, 2);
	lp_put_uv(&body, 0);
	lp_put_uv(&body, 7);
	lp_put_uv(&body, LP_SAMPLE_KSTACK_FAILED);
	lp_put_uv(&body, 99999);
	lp_put_str(&body, "future");
	put_record(&p, LP_REC_SAMPLE, &body);
	put_exit(&p, 4);
	put_chunk(&b, LP_CHUNK_RECORDS, LP_CODEC_LZ4, p.data, p.len);
	CHECK(fmt_write_file(path, b.data, b.len) == 0);
	CHECK(!strcmp(read_exits(path, &st, &ret), "234") && ret == 0);
	CHECK(st.skipped_chunks == 1 && st.chunks == 1 && st.unknown_records == 2 &&
	      !st.bad_records && !st.bad_chunks && !st.garbage_bytes);
	{
		struct trace_reader *r;
		struct lp_record rec;
		char msg[64];

		CHECK(trace_reader_open(&r, path, msg, sizeof(msg)) == 0);
		while (trace_reader_next(r, &rec) == 1 && rec.type != LP_REC_SAMPLE)
			;
		CHECK(rec.type == LP_REC_SAMPLE && rec.u.sample.time_ns == (uint64_t)-5 &&
		      rec.u.sample.pid == 10 && rec.u.sample.tid == 11 && rec.u.sample.cpu == 2 &&
		      rec.u.sample.kstack == 0 && rec.u.sample.ustack == 7 &&
		      rec.u.sample.flags == LP_SAMPLE_KSTACK_FAILED);
		trace_reader_close(r);
	}
	lp_buf_free(&b);
	lp_buf_free(&p);
	lp_buf_free(&body);
}

TEST(hostile_counts_and_lengths)
{
	static const uint64_t counts[] = { 1ull << 32, (1ull << 31) - 1, UINT64_MAX, 2 };
	struct trace_reader_stats st;
	struct lp_buf b = { 0 }, p = { 0 }, body = { 0 };
	const char *path = fmt_tmp_path("hostile.lp");
	size_t i;
	int ret;

	put_header(&b, 1, 0, 0);
	put_exit(&p, 1);
	for (i = 0; i < ARRAY_SIZE(counts); i++) {
		body.len = 0;
		lp_put_uv(&body, 1);
		lp_put_uv(&body, 2);
		lp_put_uv(&body, 0);
		lp_put_uv(&body, counts[i]); /* with no mappings behind it */
		lp_put_uv(&body, 0);
		put_record(&p, LP_REC_MAPS, &body);
	}
	body.len = 0;			/* stack deeper than allowed */
	lp_put_uv(&body, 5);
	lp_put_uv(&body, LP_STACK_USER);
	lp_put_uv(&body, LP_STACK_MAX_DEPTH + 1);
	for (i = 0; i <= LP_STACK_MAX_DEPTH; i++)
		lp_put_uv(&body, 1);
	put_record(&p, LP_REC_STACK, &body);
	body.len = 0;			/* ksyms whose addresses wrap */
	lp_put_uv(&body, 2);
	lp_put_uv(&body, UINT64_MAX);
	lp_put_str(&body, "a");
	lp_put_uv(&body, 1);
	lp_put_str(&body, "b");
	put_record(&p, LP_REC_KSYMS, &body);
	body.len = 0;			/* a pid beyond 32 bits */
	lp_put_uv(&body, 1ull << 32);
	lp_put_uv(&body, 0);
	put_record(&p, LP_REC_EXIT, &body);
	put_exit(&p, 2);
	lp_put_bytes(&p, "\x03\x64\x01", 3); /* runs past the chunk: rest lost */
	put_exit(&p, 9);
	put_chunk(&b, LP_CHUNK_RECORDS, LP_CODEC_NONE, p.data, p.len);
	p.len = 0;
	put_exit(&p, 3);
	lp_put_bytes(&p, "\x03\xff", 2);	/* a length cut short */
	put_chunk(&b, LP_CHUNK_RECORDS, LP_CODEC_ZLIB, p.data, p.len);
	CHECK(fmt_write_file(path, b.data, b.len) == 0);
	CHECK(!strcmp(read_exits(path, &st, &ret), "123") && ret == 0);
	CHECK(st.bad_records == 4 + 1 + 1 + 1 + 1 + 1 && st.chunks == 2 && !st.bad_chunks);
	lp_buf_free(&b);
	lp_buf_free(&p);
	lp_buf_free(&body);
}

TEST(bad_codec_data_with_good_crc)
{
	struct trace_reader_stats st;
	struct lp_buf b = { 0 }, p = { 0 };
	const char *path = fmt_tmp_path("badlz4.lp");
	size_t at;
	int ret;

	put_header(&b, 1, 0, 0);
	put_exit(&p, 1);
	put_chunk(&b, LP_CHUNK_RECORDS, LP_CODEC_NONE, p.data, p.len);
	/* Chunks that claim lz4 and an unknown codec but hold raw bytes.
	 * Their CRCs are right, so the reader trusts their lengths and
	 * moves straight on to the next chunk: no garbage, no scanning. */
	at = b.len;
	put_chunk(&b, LP_CHUNK_RECORDS, LP_CODEC_NONE, "\xf0\xf0\xf0\xf0\xf0\xf0", 6);
	b.data[at + 5] = LP_CODEC_LZ4;
	fix_crc(b.data + at);
	at = b.len;
	put_chunk(&b, LP_CHUNK_RECORDS, LP_CODEC_NONE, p.data, p.len);
	b.data[at + 5] = 9;
	fix_crc(b.data + at);
	p.len = 0;
	put_exit(&p, 2);
	put_chunk(&b, LP_CHUNK_RECORDS, LP_CODEC_LZ4, p.data, p.len);
	CHECK(fmt_write_file(path, b.data, b.len) == 0);
	CHECK(!strcmp(read_exits(path, &st, &ret), "12") && ret == 0);
	CHECK(st.bad_chunks == 2 && st.chunks == 2 && !st.garbage_bytes);
	lp_buf_free(&b);
	lp_buf_free(&p);
}

/* A small multi-chunk trace of distinct samples (tid = index). */
static size_t sample_trace(const char *path, enum lp_codec codec, struct lp_record *recs,
			   size_t n, size_t per_chunk, struct layout *l)
{
	size_t i;

	for (i = 0; i < n; i++)
		recs[i] = (struct lp_record){ .type = LP_REC_SAMPLE, .u.sample = {
			.time_ns = 5000000000ull + i * 1000000 - (i % 5) * 1700000,
			.pid = 77, .tid = (uint32_t)i, .cpu = (uint32_t)i % 8,
			.kstack = i % 2, .ustack = 1 + i % 9 } };
	return fmt_write_trace(path, codec, recs, n, per_chunk, NULL, l, NULL) ? 0 : n;
}

static int on_bound(const struct layout *l, uint64_t off)
{
	size_t i;

	for (i = 0; i < l->nbounds; i++)
		if (l->bounds[i] == off)
			return 1;
	return 0;
}

TEST(truncated_at_every_97th_byte)
{
	struct lp_record recs[600], rec;
	struct trace_reader_stats st;
	struct trace_reader *r;
	struct layout l;
	const char *full = fmt_tmp_path("whole.lp"), *cut = fmt_tmp_path("cut.lp");
	uint8_t *data = NULL;
	size_t size = 0, at, c, got;
	char msg[256];
	int ret, steps;

	for (c = 0; c < ARRAY_SIZE(fmt_codecs); c++) {
		CHECK(sample_trace(full, fmt_codecs[c], recs, 600, 100, &l) == 600);
		free(data);
		data = fmt_read_file(full, &size);
		CHECK(data && size == l.bounds[l.nbounds - 1] && l.nbounds == 8);
		for (at = 0; at < size; at += 97) {
			CHECK(fmt_write_file(cut, data, at) == 0);
			ret = trace_reader_open(&r, cut, msg, sizeof(msg));
			if (at < LP_HEADER_SIZE) {
				CHECK(ret == -EBADMSG);
				continue;
			}
			CHECK(ret == 0);
			got = 0;
			for (steps = 0; steps < 10000; steps++) {
				ret = trace_reader_next(r, &rec);
				if (ret != 1)
					break;
				/* Whatever comes out is intact and in order. */
				CHECK(rec.type == LP_REC_SAMPLE && got < 600 &&
				      fmt_record_equal(&recs[got], &rec));
				got++;
			}
			trace_reader_get_stats(r, &st);
			trace_reader_close(r);
			CHECK(ret == 0 && steps < 10000);
			CHECK(!st.footer_seen && !st.bad_chunks && !st.garbage_bytes);
			CHECK(st.truncated == !on_bound(&l, at));
			CHECK(got == 100 * st.chunks);
		}
	}
	free(data);
}

TEST(flipped_byte_in_middle_chunk)
{
	struct lp_record recs[500], rec;
	struct trace_reader_stats st;
	struct trace_reader *r;
	struct layout l;
	const char *path = fmt_tmp_path("flip.lp");
	uint8_t *data;
	size_t size, c, i, got;
	uint64_t lo, hi;
	char msg[256];

	for (c = 0; c < ARRAY_SIZE(fmt_codecs); c++) {
		CHECK(sample_trace(path, fmt_codecs[c], recs, 500, 100, &l) == 500);
		data = fmt_read_file(path, &size);
		CHECK(data);
		lo = l.bounds[2];	/* the third chunk: samples 200..299 */
		hi = l.bounds[3];
		data[lo + (hi - lo) / 2] ^= 0x10;
		CHECK(fmt_write_file(path, data, size) == 0);
		free(data);
		CHECK(trace_reader_open(&r, path, msg, sizeof(msg)) == 0);
		for (got = 0, i = 0; trace_reader_next(r, &rec) == 1; got++) {
			if (rec.type == LP_REC_FOOTER)
				break;
			if (i == 200)
				i = 300;
			CHECK(i < 500 && fmt_record_equal(&recs[i], &rec));
			i++;
		}
		trace_reader_get_stats(r, &st);
		trace_reader_close(r);
		CHECK(got == 400 && st.footer_seen);
		CHECK(st.bad_chunks == 1 && st.garbage_bytes == hi - lo && st.chunks == 5);
		CHECK(!st.truncated && !st.bad_records);
	}
}

TEST(resync_after_damaged_size_and_inserted_garbage)
{
	struct lp_record recs[300];
	struct trace_reader_stats st;
	struct lp_buf b = { 0 };
	struct lp_footer footer;
	struct layout l;
	const char *path = fmt_tmp_path("resync.lp");
	uint8_t *data;
	size_t size, n;

	CHECK(sample_trace(path, LP_CODEC_LZ4, recs, 300, 100, &l) == 300);
	data = fmt_read_file(path, &size);
	CHECK(data);
	/* Chunk 2 claims a 16 MiB payload: it must not swallow chunk 3. */
	data[l.bounds[1] + 14] = 0xff;
	/* And 1000 bytes of junk (with a false magic) before chunk 3. */
	lp_put_bytes(&b, data, l.bounds[2]);
	for (n = 0; n < 1000; n++)
		lp_put_bytes(&b, n == 500 ? "LPCK" : "x", n == 500 ? 4 : 1);
	lp_put_bytes(&b, data + l.bounds[2], size - l.bounds[2]);
	free(data);
	CHECK(fmt_write_file(path, b.data, b.len) == 0);
	memmove(recs + 100, recs + 200, 100 * sizeof(recs[0]));
	n = fmt_read_expect(path, recs, 200, &footer, &st);
	CHECK(n == 200 && st.bad_chunks == 1 && st.chunks == 3 && st.footer_seen);
	CHECK(st.garbage_bytes == l.bounds[2] - l.bounds[1] + 1003);
	lp_buf_free(&b);
}

/* A maps body of a trace written before object ids reads as mappings of
 * no object; one holding some but not all of the ids is a bad record;
 * object and symtab records with id 0 or an overlong ident are bad; the
 * retired DEBUG records are skipped, whatever they hold, and counted. */
TEST(maps_object_ids_and_bad_objects)
{
	struct lp_buf b = { 0 }, p = { 0 }, body = { 0 };
	const char *path = fmt_tmp_path("objids.lp");
	struct trace_reader *r;
	struct lp_record rec;
	struct trace_reader_stats st;
	uint64_t objects[4];
	size_t nmaps = 0, ndebug = 0;
	char msg[64];

	put_header(&b, 1, 0, 0);
	for (int ids = 0; ids <= 2; ids++) {
		body.len = 0;
		lp_put_uv(&body, 7);	/* pid, time, flags, count */
		lp_put_uv(&body, 1);
		lp_put_uv(&body, LP_MAPS_REPLACE);
		lp_put_uv(&body, 2);
		for (int i = 0; i < 2; i++) {
			lp_put_uv(&body, 0x400000 + i * 0x1000);
			lp_put_uv(&body, 0x1000);
			lp_put_uv(&body, 0);
			lp_put_uv(&body, LP_PROT_EXEC);
			lp_put_uv(&body, 9);
			lp_put_str(&body, "/bin/x");
		}
		for (int i = 0; i < ids; i++)
			lp_put_uv(&body, 300 + i);
		put_record(&p, LP_REC_MAPS, &body);
	}
	body.len = 0;			/* object id 0 */
	lp_put_uv(&body, 0);
	lp_put_str(&body, "/bin/x");
	lp_put_uv(&body, LP_OBJID_BUILD_ID);
	lp_put_str(&body, "\x01\x02");
	lp_put_uv(&body, 1);
	put_record(&p, LP_REC_OBJECT, &body);
	body.len = 0;			/* an ident of 65 bytes */
	lp_put_uv(&body, 1);
	lp_put_str(&body, "/bin/x");
	lp_put_uv(&body, LP_OBJID_BUILD_ID);
	lp_put_uv(&body, 65);
	for (int i = 0; i < 65; i++)
		lp_put_bytes(&body, "a", 1);
	lp_put_uv(&body, 1);
	put_record(&p, LP_REC_OBJECT, &body);
	body.len = 0;			/* symbols whose addresses wrap */
	lp_put_uv(&body, 1);
	lp_put_uv(&body, 0);
	lp_put_uv(&body, 2);
	lp_put_uv(&body, UINT64_MAX);
	lp_put_uv(&body, 0);
	lp_put_str(&body, "a");
	lp_put_uv(&body, 1);
	lp_put_uv(&body, 0);
	lp_put_str(&body, "b");
	put_record(&p, LP_REC_SYMTAB, &body);
	body.len = 0;			/* more symbols than bytes */
	lp_put_uv(&body, 1);
	lp_put_uv(&body, 0);
	lp_put_uv(&body, 1000);
	put_record(&p, LP_REC_SYMTAB, &body);
	/* DEBUG records, retired: one as older recorders wrote them, and one
	 * they would not have, are both skipped and counted as retired. */
	for (int i = 0; i < 2; i++) {
		body.len = 0;
		lp_put_uv(&body, i ? 0 : 1);	/* object, flags, identity */
		lp_put_uv(&body, 0);
		lp_put_uv(&body, 2);
		lp_put_uv(&body, 1);
		lp_put_uv(&body, 62);
		lp_put_str(&body, ".debug_line");
		lp_put_uv(&body, i ? 1ull << 40 : 4);
		lp_put_uv(&body, 0);
		lp_put_str(&body, "dwar");
		put_record(&p, LP_REC_DEBUG_RETIRED, &body);
	}
	put_chunk(&b, LP_CHUNK_RECORDS, LP_CODEC_NONE, p.data, p.len);
	CHECK(fmt_write_file(path, b.data, b.len) == 0);
	CHECK(trace_reader_open(&r, path, msg, sizeof(msg)) == 0);
	while (trace_reader_next(r, &rec) == 1) {
		ndebug += rec.type == LP_REC_DEBUG_RETIRED;
		if (rec.type == LP_REC_MAPS && nmaps < 2) {
			objects[2 * nmaps] = rec.u.maps.mappings[0].object;
			objects[2 * nmaps + 1] = rec.u.maps.mappings[1].object;
			nmaps++;
		}
	}
	trace_reader_get_stats(r, &st);
	trace_reader_close(r);
	CHECK(nmaps == 2);
	CHECK(objects[0] == 0 && objects[1] == 0);
	CHECK(objects[2] == 300 && objects[3] == 301);
	CHECK(ndebug == 0 && st.retired_records == 2);
	CHECK(st.bad_records == 5 && !st.unknown_records);
	lp_buf_free(&b);
	lp_buf_free(&p);
	lp_buf_free(&body);
}

/* A proto body written before the source field reads as source 0; a
 * lua_source with id 0, or whose text runs past its body, is a bad
 * record, and the records after it are still read. */
TEST(lua_source_and_older_protos)
{
	struct lp_buf b = { 0 }, p = { 0 }, body = { 0 };
	const char *path = fmt_tmp_path("luasrc.lp");
	struct trace_reader *r;
	struct lp_record rec;
	struct trace_reader_stats st;
	uint64_t proto_source = 99, text_len = 0;
	int nsrc = 0;
	char msg[64];

	put_header(&b, 1, 0, 0);
	body.len = 0;			/* an older proto: ends after varinfo */
	lp_put_uv(&body, 1);
	lp_put_uv(&body, 0x1000);
	lp_put_str(&body, "@a.lua");
	for (int i = 0; i < 5; i++)	/* firstline numline numparams flags nbc */
		lp_put_uv(&body, 0);
	lp_put_uv(&body, 0);		/* nkstr, nuv, varinfo */
	lp_put_uv(&body, 0);
	lp_put_uv(&body, 0);
	put_record(&p, LP_REC_PROTO, &body);
	for (int bad = 0; bad <= 2; bad++) {
		body.len = 0;
		lp_put_uv(&body, bad == 1 ? 0 : 3);
		lp_put_str(&body, "@a.lua");
		lp_put_str(&body, "/x/a.lua");
		lp_put_uv(&body, LP_LUASRC_WHOLE);
		lp_put_uv(&body, 4);
		lp_put_uv(&body, 1);
		lp_put_uv(&body, bad == 2 ? 5 : 4);
		lp_put_bytes(&body, "a\0\nb", 4);
		put_record(&p, LP_REC_LUA_SOURCE, &body);
	}
	put_chunk(&b, LP_CHUNK_RECORDS, LP_CODEC_NONE, p.data, p.len);
	CHECK(fmt_write_file(path, b.data, b.len) == 0);
	CHECK(trace_reader_open(&r, path, msg, sizeof(msg)) == 0);
	while (trace_reader_next(r, &rec) == 1) {
		if (rec.type == LP_REC_PROTO)
			proto_source = rec.u.proto.source;
		if (rec.type == LP_REC_LUA_SOURCE) {
			nsrc++;
			text_len = rec.u.lua_source.text_len;
			CHECK(!memcmp(rec.u.lua_source.text, "a\0\nb", 5));
		}
	}
	trace_reader_get_stats(r, &st);
	trace_reader_close(r);
	CHECK(proto_source == 0);
	CHECK(nsrc == 1 && text_len == 4);
	CHECK(st.bad_records == 2 && !st.unknown_records);
	lp_buf_free(&b);
	lp_buf_free(&p);
	lp_buf_free(&body);
}

/* One SRCLINES body, from its parts: object, flags, strings, then the
 * chains as (delta, nframe, then nframe (func, file, line) triplets). */
static void put_srclines_body(struct lp_buf *body, uint64_t object, uint64_t nstr,
			      const uint64_t *chains, size_t nvals)
{
	body->len = 0;
	lp_put_uv(body, object);
	lp_put_uv(body, 0);
	lp_put_uv(body, nstr);
	for (uint64_t i = 0; i < nstr && i < 2; i++)
		lp_put_str(body, i ? "a.c" : "f");
	for (size_t i = 0; i < nvals; i++)
		lp_put_uv(body, chains[i]);
}

/* A SRCLINES record decodes with its strings and chains, its size as the
 * writer counts it; damaged ones are bad records, and the reader goes on:
 * object 0, more strings or chains than bytes, a string index past the
 * table, chains of no frames or too many, addresses not ascending or
 * past 2^64, a line beyond 32 bits, a body cut short.  Bytes after the
 * chains are a later version's fields. */
TEST(srclines_records_good_and_bad)
{
	static const uint64_t good[] = { 2, 0x1000, 2, 1, 2, 10, 0, 0, 0, 0x10, 1, 1, 2, 12 };
	static const struct { uint64_t object, nstr; uint64_t v[8]; size_t n; } bad[] = {
		{ 0, 2, { 1, 0x1000, 1, 1, 2, 10 }, 6 },
		{ 1, 1ull << 40, { 0 }, 0 },
		{ 1, 2, { 1000, 0x1000, 1, 1, 2, 10 }, 6 },
		{ 1, 2, { 1, 0x1000, 1, 3, 2, 10 }, 6 },
		{ 1, 2, { 1, 0x1000, 1, 1, 3, 10 }, 6 },
		{ 1, 2, { 1, 0x1000, 0 }, 3 },
		{ 1, 2, { 1, 0x1000, LP_SRCLINES_MAX_FRAMES + 1, 1, 2, 10 }, 6 },
		{ 1, 2, { 2, 0x1000, 1, 1, 2, 10, 0, 1 }, 8 },
		{ 1, 2, { 2, UINT64_MAX, 1, 1, 2, 10, 1, 1 }, 8 },
		{ 1, 2, { 1, 0x1000, 1, 1, 2, 1ull << 32 }, 6 },
		{ 1, 2, { 1, 0x1000, 2, 1, 2, 10 }, 6 },
	};
	struct lp_buf b = { 0 }, p = { 0 }, body = { 0 };
	const char *path = fmt_tmp_path("srclines.lp");
	struct trace_reader_stats st;
	struct trace_reader *r;
	struct lp_record rec;
	size_t ngood = 0, good_len;
	char msg[64];
	int ret;

	put_header(&b, 1, 0, 0);
	put_exit(&p, 1);
	put_srclines_body(&body, 7, 2, good, ARRAY_SIZE(good));
	good_len = body.len;
	put_record(&p, LP_REC_SRCLINES, &body);
	for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
		put_srclines_body(&body, bad[i].object, bad[i].nstr, bad[i].v, bad[i].n);
		put_record(&p, LP_REC_SRCLINES, &body);
	}
	put_srclines_body(&body, 7, 2, good, ARRAY_SIZE(good));
	lp_put_str(&body, "a later field");
	put_record(&p, LP_REC_SRCLINES, &body);
	put_exit(&p, 2);
	put_chunk(&b, LP_CHUNK_RECORDS, LP_CODEC_ZLIB, p.data, p.len);
	CHECK(fmt_write_file(path, b.data, b.len) == 0);
	CHECK(!strcmp(read_exits(path, &st, &ret), "12") && ret == 0);
	CHECK(st.bad_records == ARRAY_SIZE(bad) && !st.unknown_records);
	CHECK(trace_reader_open(&r, path, msg, sizeof(msg)) == 0);
	while (trace_reader_next(r, &rec) == 1) {
		const struct lp_srclines *sl = &rec.u.srclines;

		if (rec.type != LP_REC_SRCLINES)
			continue;
		CHECK(sl->object == 7 && !sl->flags && sl->nstr == 2 && sl->nchain == 2);
		CHECK(!strcmp(sl->strs[0], "f") && !strcmp(sl->strs[1], "a.c"));
		CHECK(sl->chains[0].vaddr == 0x1000 && sl->chains[0].nframe == 2);
		CHECK(sl->chains[0].frames[0].func == 1 && sl->chains[0].frames[0].file == 2 &&
		      sl->chains[0].frames[0].line == 10 && !sl->chains[0].frames[1].func);
		CHECK(sl->chains[1].vaddr == 0x1010 && sl->chains[1].nframe == 1 &&
		      sl->chains[1].frames[0].line == 12);
		CHECK(lp_srclines_size(sl) == good_len);
		ngood++;
	}
	trace_reader_close(r);
	CHECK(ngood == 2);
	lp_buf_free(&b);
	lp_buf_free(&p);
	lp_buf_free(&body);
}

/*
 * The every-byte tests: a file of records of one type, each a copy of a
 * good body with one of its bytes overwritten by one of damage_vals
 * (values that end or continue a varint, or point far), for every byte
 * and value in turn, then an exit.  Each record must decode or be
 * counted bad, at least one of each, and the reader must read on to the
 * exit; check() asks of each record that decodes that it holds together.
 */
static const uint8_t damage_vals[] = { 0x00, 0x01, 0x10, 0x7f, 0x80, 0xff };

static void read_each_byte_damaged(const char *name, uint64_t type, struct lp_buf *body,
				   void (*check)(const struct lp_record *))
{
	struct lp_buf b = { 0 }, p = { 0 };
	const char *path = fmt_tmp_path(name);
	struct trace_reader_stats st;
	struct trace_reader *r;
	struct lp_record rec;
	size_t nrec = 0, nexit = 0;
	char msg[64];

	put_header(&b, 1, 0, 0);
	for (size_t at = 0; at < body->len; at++) {
		for (size_t v = 0; v < ARRAY_SIZE(damage_vals); v++) {
			uint8_t keep = body->data[at];

			body->data[at] = damage_vals[v];
			put_record(&p, type, body);
			body->data[at] = keep;
		}
	}
	put_exit(&p, 1);
	put_chunk(&b, LP_CHUNK_RECORDS, LP_CODEC_NONE, p.data, p.len);
	CHECK(fmt_write_file(path, b.data, b.len) == 0);
	CHECK(trace_reader_open(&r, path, msg, sizeof(msg)) == 0);
	while (trace_reader_next(r, &rec) == 1) {
		nexit += rec.type == LP_REC_EXIT;
		if (rec.type != type)
			continue;
		nrec++;
		check(&rec);
	}
	trace_reader_get_stats(r, &st);
	trace_reader_close(r);
	CHECK(nexit == 1 && nrec + st.bad_records == body->len * ARRAY_SIZE(damage_vals));
	CHECK(nrec > 0 && st.bad_records > 0);
	lp_buf_free(&b);
	lp_buf_free(&p);
}

/* String indexes within the table, addresses ascending, 1 to 16 frames. */
static void check_srclines(const struct lp_record *rec)
{
	const struct lp_srclines *sl = &rec->u.srclines;

	CHECK(sl->object && lp_srclines_size(sl) > 0);
	for (uint32_t i = 0; i < sl->nchain; i++) {
		const struct lp_srcchain *c = &sl->chains[i];

		CHECK(c->nframe >= 1 && c->nframe <= LP_SRCLINES_MAX_FRAMES);
		CHECK(!i || c->vaddr > sl->chains[i - 1].vaddr);
		for (uint32_t k = 0; k < c->nframe; k++)
			CHECK(c->frames[k].func <= sl->nstr && c->frames[k].file <= sl->nstr);
	}
}

/* Every byte of a good SRCLINES body overwritten, in turn
 * (read_each_byte_damaged()). */
TEST(srclines_every_byte_overwritten)
{
	static const uint64_t good[] = { 3, 0x1000, 2, 1, 2, 10, 0, 0, 0, 0x10, 1, 1, 2, 12,
					 0x7fff, 3, 2, 1, 5, 1, 0, 6, 0, 2, 7 };
	struct lp_buf body = { 0 };

	put_srclines_body(&body, 7, 2, good, ARRAY_SIZE(good));
	read_each_byte_damaged("srclines-bytes.lp", LP_REC_SRCLINES, &body, check_srclines);
	lp_buf_free(&body);
}

/* A luajit record as older recorders wrote it, without its build: read
 * with build "". */
TEST(older_luajit_without_build)
{
	struct lp_buf b = { 0 }, p = { 0 }, body = { 0 };
	const char *path = fmt_tmp_path("ljbuild.lp");
	struct trace_reader *r;
	struct lp_record rec;
	const char *build = NULL, *name = NULL;
	char msg[64];

	put_header(&b, 1, 0, 0);
	lp_put_uv(&body, 7);		/* pid G vm_start vm_end flags */
	for (int i = 0; i < 4; i++)
		lp_put_uv(&body, 0);
	lp_put_str(&body, "LuaJIT 2.1");
	lp_put_str(&body, "built-in");
	lp_put_uv(&body, 0);		/* nff */
	put_record(&p, LP_REC_LUAJIT, &body);
	put_chunk(&b, LP_CHUNK_RECORDS, LP_CODEC_NONE, p.data, p.len);
	CHECK(fmt_write_file(path, b.data, b.len) == 0);
	CHECK(trace_reader_open(&r, path, msg, sizeof(msg)) == 0);
	while (trace_reader_next(r, &rec) == 1) {
		if (rec.type == LP_REC_LUAJIT) {
			build = rec.u.luajit.build;
			name = rec.u.luajit.name;
			CHECK(build && !strcmp(build, "") && !strcmp(name, "LuaJIT 2.1"));
		}
	}
	trace_reader_close(r);
	CHECK(build && name);
	lp_buf_free(&b);
	lp_buf_free(&p);
	lp_buf_free(&body);
}

/* One TRACE_SNAPS body from its varints: trace, bcofs, bcbase, nsnap,
 * then the snapshots as they are on disk. */
static void put_uvs_body(struct lp_buf *body, const uint64_t *v, size_t n)
{
	body->len = 0;
	for (size_t i = 0; i < n; i++)
		lp_put_uv(body, v[i]);
}

/* A TRACE_SNAPS record decodes with its snapshots' frames (those kept
 * from the snapshot before included); damaged ones are bad records, the
 * reader going on: trace 0; more snapshots than bytes; offsets not
 * ascending or past 2^32; keep above the previous snapshot's frames, or
 * with no new frame; a snapshot deeper than allowed; a frame cut short;
 * a pc beyond 32 bits.  Bytes after the snapshots are a later version's. */
TEST(trace_snaps_records_good_and_bad)
{
	/* 3 snapshots: [BASE], [LUA f, LUA g] (keep 0), [f, LUA h] (keep 1) */
	static const uint64_t good[] = { 5, 104, 0x1000, 3,
					 0, 0, 1, 7, 13, 0, 0,
					 40, 0, 2, 1, 1, 10, 0, 1, 2, 5, 0,
					 16, 1, 1, 1, 3, 2, 2 };
	static const struct { uint64_t v[20]; size_t n; } bad[] = {
		{ { 0, 104, 0x1000, 1, 0, 0, 1, 7, 13, 0, 0 }, 11 },
		{ { 5, 104, 0x1000, 1ull << 40 }, 4 },
		{ { 5, 104, 0x1000, 2, 0, 0, 1, 7, 13, 0, 0, 0, 0, 1, 7, 13, 0, 0 }, 18 },
		{ { 5, 104, 0x1000, 2, 1ull << 32, 0, 1, 7, 13, 0, 0 }, 11 },
		{ { 5, 104, 0x1000, 2, 0, 0, 1, 7, 13, 0, 0, 4, 2, 1, 1, 1, 0, 0 }, 18 },
		{ { 5, 104, 0x1000, 2, 0, 0, 1, 7, 13, 0, 0, 4, 1, 0 }, 14 },
		{ { 5, 104, 0x1000, 1, 0, 0, LP_TSNAP_MAX_FRAMES + 1, 7, 13, 0, 0 }, 11 },
		{ { 5, 104, 0x1000, 1, 0, 0, 1, 7, 13, 0 }, 10 },
		{ { 5, 104, 0x1000, 1, 0, 0, 1, 1, 13, 1ull << 32, 0 }, 11 },
	};
	struct lp_buf b = { 0 }, p = { 0 }, body = { 0 };
	const char *path = fmt_tmp_path("trace-snaps.lp");
	struct trace_reader_stats st;
	struct trace_reader *r;
	struct lp_record rec;
	size_t ngood = 0, good_len;
	char msg[64];
	int ret;

	put_header(&b, 1, 0, 0);
	put_exit(&p, 1);
	put_uvs_body(&body, good, ARRAY_SIZE(good));
	good_len = body.len;
	put_record(&p, LP_REC_TRACE_SNAPS, &body);
	for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
		put_uvs_body(&body, bad[i].v, bad[i].n);
		put_record(&p, LP_REC_TRACE_SNAPS, &body);
	}
	put_uvs_body(&body, good, ARRAY_SIZE(good));
	lp_put_str(&body, "a later field");
	put_record(&p, LP_REC_TRACE_SNAPS, &body);
	put_exit(&p, 2);
	put_chunk(&b, LP_CHUNK_RECORDS, LP_CODEC_LZ4, p.data, p.len);
	CHECK(fmt_write_file(path, b.data, b.len) == 0);
	CHECK(!strcmp(read_exits(path, &st, &ret), "12") && ret == 0);
	CHECK(st.bad_records == ARRAY_SIZE(bad) && !st.unknown_records);
	CHECK(trace_reader_open(&r, path, msg, sizeof(msg)) == 0);
	while (trace_reader_next(r, &rec) == 1) {
		const struct lp_trace_snaps *ts = &rec.u.trace_snaps;

		if (rec.type != LP_REC_TRACE_SNAPS)
			continue;
		CHECK(ts->trace == 5 && ts->bcofs == 104 && ts->bcbase == 0x1000 && ts->nsnap == 3);
		CHECK(ts->snaps[0].mcofs == 0 && ts->snaps[0].nframe == 1 &&
		      ts->snaps[0].frames[0].kind == LP_LFRAME_BASE &&
		      ts->snaps[0].frames[0].value == 13);
		CHECK(ts->snaps[1].mcofs == 40 && ts->snaps[1].nframe == 2 &&
		      ts->snaps[1].frames[1].value == 2 && ts->snaps[1].frames[1].pc == 5);
		CHECK(ts->snaps[2].mcofs == 56 && ts->snaps[2].nframe == 2 &&
		      ts->snaps[2].frames[0].value == 1 && ts->snaps[2].frames[0].pc == 10 &&
		      ts->snaps[2].frames[1].value == 3 && ts->snaps[2].frames[1].link == 2);
		CHECK(lp_trace_snaps_size(ts) == good_len);
		ngood++;
	}
	trace_reader_close(r);
	CHECK(ngood == 2);
	lp_buf_free(&b);
	lp_buf_free(&p);
	lp_buf_free(&body);
}

/* Offsets ascending, frames within bounds. */
static void check_trace_snaps(const struct lp_record *rec)
{
	const struct lp_trace_snaps *ts = &rec->u.trace_snaps;

	CHECK(ts->trace != 0);
	for (uint32_t i = 0; i < ts->nsnap; i++) {
		CHECK(ts->snaps[i].nframe <= LP_TSNAP_MAX_FRAMES);
		CHECK(!i || ts->snaps[i].mcofs > ts->snaps[i - 1].mcofs);
	}
}

/* Every byte of a good TRACE_SNAPS body overwritten, in turn
 * (read_each_byte_damaged()). */
TEST(trace_snaps_every_byte_overwritten)
{
	static const uint64_t good[] = { 5, 104, 0x1000, 4,
					 0, 0, 1, 7, 13, 0, 0,
					 40, 0, 2, 1, 1, 10, 0, 1, 2, 5, 0,
					 16, 1, 1, 1, 3, 2, 2,
					 3, 0, 0 };
	struct lp_buf body = { 0 };

	put_uvs_body(&body, good, ARRAY_SIZE(good));
	read_each_byte_damaged("trace-snaps-bytes.lp", LP_REC_TRACE_SNAPS, &body, check_trace_snaps);
	lp_buf_free(&body);
}

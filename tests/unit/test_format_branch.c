/*
 * test_format_branch.c - stacks written as branches of earlier stacks
 * (stack_branch, incompat STACK_BRANCH, format.md §3.5.1): they read back
 * as the stacks written, they are what makes a trace of related stacks
 * small, a base that was lost costs the stacks built on it and nothing
 * else, and traces from before the feature read as before.  And samples
 * whose times are whole microseconds apart, written as sample_us (23).
 */
#include <stdlib.h>
#include <string.h>

#include "format/codec.h"
#include "format/trace.h"
#include "tests/unit/format_util.h"
#include "tests/unit/unit.h"

#define NSTACKS 3000
#define MAXD 48

/* A pseudo-random call tree: the frames of a stack are those of every
 * other stack as deep, but for the four nearest its leaf, so stacks share
 * root sides as a program's do;
 * addresses far apart, so that a stack written whole costs several bytes
 * a frame. */
static uint64_t rnd_state = 88172645463325252ull;

static uint64_t rnd(void)
{
	rnd_state ^= rnd_state << 13;
	rnd_state ^= rnd_state >> 7;
	rnd_state ^= rnd_state << 17;
	return rnd_state;
}

static size_t make_stacks(struct lp_record *r, uint64_t (*addrs)[MAXD])
{
	uint64_t id = 0;
	size_t n = 0, i;

	for (i = 0; i < NSTACKS; i++) {
		struct lp_stack *s = &r[n].u.stack;
		uint32_t depth = (uint32_t)(rnd() % MAXD), d;

		r[n].type = LP_REC_STACK;
		/* Ids rise with gaps; now and then one that does not rise
		 * (it cannot name a base with a larger id: written whole). */
		id += 1 + rnd() % 3;
		s->id = i % 97 == 50 ? id / 2 + 1000000 : id;
		s->kind = i % 11 == 0 ? LP_STACK_KERNEL : i % 53 == 0 ? 17 : LP_STACK_USER;
		s->depth = depth;
		s->addrs = addrs[n];
		for (d = 0; d < depth; d++) {
			/* Root side (the stack's end) from few choices. */
			uint32_t from_root = depth - 1 - d;
			uint64_t pick = d < 4 ? rnd() % 8 : 0;

			addrs[n][d] = 0x7f0000000000ull + (uint64_t)from_root * 0x1000000 +
				      pick * 0x10001;
		}
		if (i % 13 == 7 && n) {
			/* The same frames as the stack before, another id. */
			memcpy(addrs[n], addrs[n - 1], sizeof(addrs[n]));
			s->depth = r[n - 1].u.stack.depth;
		}
		n++;
	}
	return n;
}

TEST(stack_branch_roundtrip)
{
	static struct lp_record recs[NSTACKS];
	static uint64_t addrs[NSTACKS][MAXD];
	struct trace_reader_stats st;
	struct lp_footer got;
	const char *path = fmt_tmp_path("branch.lp");
	uint8_t *data;
	size_t size;
	uint64_t frames = 0;
	size_t n = make_stacks(recs, addrs), i, c;

	for (i = 0; i < n; i++)
		frames += recs[i].u.stack.depth;
	for (c = 0; c < ARRAY_SIZE(fmt_codecs); c++) {
		/* In one chunk, and flushed every 7 records: bases in
		 * earlier chunks. */
		CHECK(fmt_write_trace(path, fmt_codecs[c], recs, n, 0, NULL, NULL, NULL) == 0);
		CHECK(fmt_read_expect(path, recs, n, &got, &st) == n);
		CHECK(!st.bad_records && !st.unknown_records && (st.incompat & LP_INCOMPAT_STACK_BRANCH));
		/* Whole, a frame costs 4 bytes or more here; branched, the
		 * stacks share most of theirs. */
		data = fmt_read_file(path, &size);
		free(data);
		CHECK(fmt_codecs[c] != LP_CODEC_NONE || size < frames);
		CHECK(fmt_write_trace(path, fmt_codecs[c], recs, n, 7, NULL, NULL, NULL) == 0);
		CHECK(fmt_read_expect(path, recs, n, &got, &st) == n);
		CHECK(!st.bad_records && st.chunks > n / 7);
	}
}

/* Stacks 1 (chunk 0), 2 branching from 1 (chunk 1) and 3 (chunk 1, whole
 * or branching from 2): with chunk 0 damaged, stack 2 cannot be rebuilt,
 * and is a bad record, not a wrong stack. */
TEST(stack_branch_lost_base)
{
	static uint64_t a1[] = { 0x401010, 0x402020, 0x403030 };
	static uint64_t a2[] = { 0x404040, 0x402020, 0x403030 };
	static uint64_t a3[] = { 0x999999, 0x888888 };
	struct lp_record recs[3] = {
		{ .type = LP_REC_STACK, .u.stack = { 1, LP_STACK_USER, 3, a1 } },
		{ .type = LP_REC_STACK, .u.stack = { 2, LP_STACK_USER, 3, a2 } },
		{ .type = LP_REC_STACK, .u.stack = { 3, LP_STACK_KERNEL, 2, a3 } },
	};
	struct trace_reader_stats st;
	struct trace_reader *r;
	struct lp_record rec;
	struct layout l;
	const char *path = fmt_tmp_path("lostbase.lp");
	char err[256];
	uint8_t *data;
	size_t size;
	int got3 = 0, other = 0;

	CHECK(fmt_write_trace(path, LP_CODEC_NONE, recs, 1, 0, NULL, NULL, NULL) == 0);
	/* Written whole: the first stack has nothing to branch from. */
	data = fmt_read_file(path, &size);
	CHECK(data && size > 48 && data[LP_HEADER_SIZE + LP_CHUNK_HEADER_SIZE + 3] == LP_REC_STACK);
	free(data);
	CHECK(fmt_write_trace(path, LP_CODEC_NONE, recs, 3, 1, NULL, &l, NULL) == 0);
	data = fmt_read_file(path, &size);
	CHECK(data && l.nbounds >= 3);
	/* Chunk 1's first record after its chunk record is the branch. */
	CHECK(data[l.bounds[1] + LP_CHUNK_HEADER_SIZE + 3] == LP_REC_STACK_BRANCH);
	data[l.bounds[0] + LP_CHUNK_HEADER_SIZE + 5] ^= 0x40; /* a byte of stack 1 */
	CHECK(fmt_write_file(path, data, size) == 0);
	free(data);
	CHECK(trace_reader_open(&r, path, err, sizeof(err)) == 0);
	while (trace_reader_next(r, &rec) > 0) {
		if (rec.type == LP_REC_STACK && rec.u.stack.id == 3)
			got3 = rec.u.stack.depth == 2 && rec.u.stack.addrs[0] == 0x999999;
		else if (rec.type == LP_REC_STACK)
			other++;
	}
	trace_reader_get_stats(r, &st);
	trace_reader_close(r);
	CHECK(got3 && !other);
	CHECK(st.bad_chunks == 1 && st.bad_records == 1);
}

/* A trace from before the feature (incompat 0) reads as before; a
 * stack_branch record in it is a bad record, not a guess. */
TEST(stack_branch_needs_its_bit)
{
	static const uint8_t stack5[] = { 0x05, 0x06, 0x07, 0x02, 0x02, 0x90, 0x03, 0x02 };
	static const uint8_t branch[] = { 0x16, 0x06, 0x08, 0x02, 0x01, 0x01, 0x01, 0x02 };
	struct lp_buf b = { 0 }, p = { 0 };
	struct trace_reader_stats st;
	struct trace_reader *r;
	struct lp_record rec;
	const char *path = fmt_tmp_path("old.lp");
	char err[256];
	int stacks = 0, ok = 0;

	lp_put_bytes(&b, LP_MAGIC, LP_MAGIC_SIZE);
	lp_put_u16(&b, LP_VERSION);
	lp_put_u16(&b, LP_HEADER_SIZE);
	lp_put_u32(&b, 0);
	lp_put_u32(&b, 0);
	lp_put_u32(&b, lp_crc32(0, b.data, 20));
	lp_put_bytes(&p, stack5, sizeof(stack5));
	lp_put_bytes(&p, branch, sizeof(branch));
	/* A records chunk, stored: its CRC covers type..stored_size. */
	lp_put_bytes(&b, LP_CHUNK_MAGIC, 4);
	lp_put_bytes(&b, "\x01\x00\x00\x00", 4);
	lp_put_u32(&b, (uint32_t)p.len);
	lp_put_u32(&b, (uint32_t)p.len);
	lp_put_u32(&b, lp_crc32(lp_crc32(0, b.data + b.len - 12, 12), p.data, p.len));
	lp_put_bytes(&b, p.data, p.len);
	CHECK(fmt_write_file(path, b.data, b.len) == 0);
	lp_buf_free(&b);
	lp_buf_free(&p);
	CHECK(trace_reader_open(&r, path, err, sizeof(err)) == 0);
	while (trace_reader_next(r, &rec) > 0) {
		if (rec.type != LP_REC_STACK)
			continue;
		stacks++;
		ok = rec.u.stack.id == 7 && rec.u.stack.depth == 2 &&
		     rec.u.stack.addrs[0] == 0x190 && rec.u.stack.addrs[1] == 0x191;
	}
	trace_reader_get_stats(r, &st);
	trace_reader_close(r);
	CHECK(stacks == 1 && ok);
	CHECK(st.bad_records == 1 && st.incompat == 0);
}

/* Samples a whole number of µs apart go as sample_us, shorter; others
 * (a time in ns) as samples; both read back to the nanosecond. */
TEST(sample_us_roundtrip)
{
	static struct lp_record recs[200];
	struct trace_reader_stats st;
	struct lp_footer got;
	const char *path = fmt_tmp_path("us.lp");
	uint8_t *data;
	size_t size, us_size, i;

	for (i = 0; i < ARRAY_SIZE(recs); i++) {
		recs[i].type = LP_REC_SAMPLE;
		/* Out of order, as from several CPUs; the first at 0. */
		recs[i].u.sample = (struct lp_sample){
			.time_ns = i ? 5000000000000ull + i * 10101000 - (i % 2) * 4000000 : 0,
			.pid = 42, .tid = 43, .cpu = (uint32_t)i % 2, .ustack = i % 5 };
	}
	CHECK(fmt_write_trace(path, LP_CODEC_NONE, recs, ARRAY_SIZE(recs), 0, NULL, NULL, NULL) == 0);
	CHECK(fmt_read_expect(path, recs, ARRAY_SIZE(recs), &got, &st) == ARRAY_SIZE(recs));
	CHECK(!st.bad_records && st.samples == ARRAY_SIZE(recs) && (st.incompat & LP_INCOMPAT_SAMPLE_US));
	data = fmt_read_file(path, &size);
	CHECK(data && size > 48 && data[LP_HEADER_SIZE + LP_CHUNK_HEADER_SIZE + 3] == LP_REC_SAMPLE_US);
	free(data);
	us_size = size;
	/* Every other one a nanosecond off: those go as samples. */
	for (i = 1; i < ARRAY_SIZE(recs); i += 2)
		recs[i].u.sample.time_ns += 1;
	CHECK(fmt_write_trace(path, LP_CODEC_NONE, recs, ARRAY_SIZE(recs), 0, NULL, NULL, NULL) == 0);
	CHECK(fmt_read_expect(path, recs, ARRAY_SIZE(recs), &got, &st) == ARRAY_SIZE(recs));
	CHECK(!st.bad_records && st.samples == ARRAY_SIZE(recs));
	data = fmt_read_file(path, &size);
	free(data);
	/* 3 bytes of dtime instead of 4 for about 10 ms. */
	CHECK(us_size + ARRAY_SIZE(recs) / 2 <= size);
}

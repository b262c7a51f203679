/*
 * codec.h - the byte-level encodings shared by writer.c, reader.c and the
 * tests: a growable output buffer, unsigned LEB128 varints, zigzag signed
 * integers, length-prefixed strings, fixed little-endian integers, CRC-32
 * and the chunk compressors.  Keeping them in one place means the writer
 * and the reader cannot disagree about a single byte.
 *
 * Putters append to a struct lp_buf and return 0 or -errno.  Getters read
 * from a struct lp_cursor over untrusted input: on success they advance
 * the cursor and return 0; on short or malformed input they return
 * -EBADMSG and leave the cursor where it was.  None of them reads past
 * cursor->end.  This header is private to luaprof, not part of trace.h.
 */
#ifndef LUAPROF_FORMAT_CODEC_H
#define LUAPROF_FORMAT_CODEC_H

#include <stddef.h>
#include <stdint.h>

#include "format/trace.h"

/* An unsigned LEB128 varint of a 64-bit value takes at most 10 bytes. */
#define LP_UV_MAX 10

/*
 * The largest stored_size a reader accepts.  It is LP_CHUNK_MAX_RAW plus
 * room for the worst-case expansion of lz4 (n/255 + 16) and of zlib
 * (about n/3000 + 13), so no honest chunk is ever refused by it, while a
 * damaged size field cannot make the reader buffer an arbitrary amount.
 */
#define LP_CHUNK_MAX_STORED (LP_CHUNK_MAX_RAW + LP_CHUNK_MAX_RAW / 128 + 4096)

/*
 * A growable byte buffer.  A non-zero limit caps len: a reservation past
 * it fails with -E2BIG, which is how the writer refuses a record that
 * could never fit in a chunk before encoding all of it.
 */
struct lp_buf {
	uint8_t *data;
	size_t len, cap;
	size_t limit; /* 0 = unlimited */
};

int lp_buf_reserve(struct lp_buf *b, size_t extra);
void lp_buf_free(struct lp_buf *b);

int lp_put_bytes(struct lp_buf *b, const void *p, size_t n);
int lp_put_uv(struct lp_buf *b, uint64_t v);
int lp_put_sv(struct lp_buf *b, int64_t v);
int lp_put_str(struct lp_buf *b, const char *s); /* NULL is written as "" */
int lp_put_u16(struct lp_buf *b, uint16_t v);
int lp_put_u32(struct lp_buf *b, uint32_t v);

/* Encodes v into out and returns the number of bytes used (1..10). */
size_t lp_uv_encode(uint8_t out[LP_UV_MAX], uint64_t v);

struct lp_cursor {
	const uint8_t *p, *end;
};

/* lp_get_uv(), lp_get_uv32() and lp_get_sv() are below: a one- or
 * two-byte value (most of a trace's) takes no call; the rest go through
 * these. */
int lp_get_uv_slow(struct lp_cursor *c, uint64_t *v);
int lp_get_uv32_slow(struct lp_cursor *c, uint32_t *v); /* rejects > 2^32-1 */
int lp_get_sv_slow(struct lp_cursor *c, int64_t *v);
int lp_get_str(struct lp_cursor *c, const uint8_t **s, size_t *len);
int lp_get_u8(struct lp_cursor *c, uint8_t *v);
int lp_get_u16(struct lp_cursor *c, uint16_t *v);
int lp_get_u32(struct lp_cursor *c, uint32_t *v);

static inline size_t lp_cursor_left(const struct lp_cursor *c)
{
	return (size_t)(c->end - c->p);
}

/* Zigzag maps small magnitudes of either sign to small unsigned values:
 * 0, -1, 1, -2, 2 ... become 0, 1, 2, 3, 4 ... */
static inline uint64_t lp_zigzag(int64_t v)
{
	return ((uint64_t)v << 1) ^ (uint64_t)(v >> 63);
}

static inline int64_t lp_unzigzag(uint64_t v)
{
	return (int64_t)((v >> 1) ^ (~(v & 1) + 1));
}

/* A value of two bytes (the next most common: ids and time deltas under
 * 16384) is taken inline too; a final byte of 0 would spell it overlong,
 * and is left to the slow path to refuse.  n gets the value's bytes. */
static inline int lp_get_uv_fast(const struct lp_cursor *c, uint64_t *v, size_t *n)
{
	const uint8_t *p = c->p;

	if (p < c->end && p[0] < 0x80) {
		*v = p[0];
		*n = 1;
		return 1;
	}
	if (c->end - p >= 2 && (unsigned)p[1] - 1u < 0x7fu) {
		*v = (p[0] & 0x7fu) | (uint64_t)p[1] << 7;
		*n = 2;
		return 1;
	}
	return 0;
}

static inline int lp_get_uv(struct lp_cursor *c, uint64_t *v)
{
	size_t n;

	if (lp_get_uv_fast(c, v, &n)) {
		c->p += n;
		return 0;
	}
	return lp_get_uv_slow(c, v);
}

static inline int lp_get_uv32(struct lp_cursor *c, uint32_t *v)
{
	uint64_t x;
	size_t n;

	if (lp_get_uv_fast(c, &x, &n)) {
		c->p += n;
		*v = (uint32_t)x;
		return 0;
	}
	return lp_get_uv32_slow(c, v);
}

static inline int lp_get_sv(struct lp_cursor *c, int64_t *v)
{
	uint64_t x;
	size_t n;

	if (lp_get_uv_fast(c, &x, &n)) {
		c->p += n;
		*v = lp_unzigzag(x);
		return 0;
	}
	return lp_get_sv_slow(c, v);
}

/* CRC-32 (zlib's polynomial); start with crc = 0. */
uint32_t lp_crc32(uint32_t crc, const void *p, size_t n);

/*
 * Compression of one chunk payload.  lp_compress_bound() is the output
 * size lp_compress() needs (0 if the codec is unknown or n too large).
 * lp_decompress() succeeds only if src decodes, in full, to exactly
 * raw_size bytes: the chunk header states the size, so anything else is
 * damage.
 */
size_t lp_compress_bound(enum lp_codec codec, size_t n);
int lp_compress(enum lp_codec codec, const void *src, size_t n, void *dst,
		size_t cap, size_t *out_len);
int lp_decompress(enum lp_codec codec, const void *src, size_t stored_size,
		  void *dst, size_t raw_size);

#endif

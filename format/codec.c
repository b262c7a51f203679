/*
 * codec.c - the byte-level encodings every trace is made of (see codec.h):
 * the growable buffer the writer encodes into, varints, zigzag, strings,
 * little-endian integers, CRC-32 and the three chunk codecs.  The getters
 * are the reader's only way into untrusted bytes, so each one checks the
 * remaining length before touching memory and rejects encodings the
 * writer never produces (overlong or overflowing varints), which keeps
 * every value with exactly one spelling on disk.
 */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include <lz4.h>
#include <zlib.h>

#include "format/codec.h"

int lp_buf_reserve(struct lp_buf *b, size_t extra)
{
	size_t need, cap;
	uint8_t *data;

	if (extra > SIZE_MAX - b->len)
		return -E2BIG;
	need = b->len + extra;
	if (b->limit && need > b->limit)
		return -E2BIG;
	if (need <= b->cap)
		return 0;
	/* Doubling keeps appends amortized O(1); the limit caps the slack. */
	cap = b->cap ? b->cap : 256;
	while (cap < need)
		cap = cap > SIZE_MAX / 2 ? need : cap * 2;
	if (b->limit && cap > b->limit)
		cap = b->limit;
	data = realloc(b->data, cap);
	if (!data)
		return -ENOMEM;
	b->data = data;
	b->cap = cap;
	return 0;
}

void lp_buf_free(struct lp_buf *b)
{
	free(b->data);
	b->data = NULL;
	b->len = b->cap = 0;
}

int lp_put_bytes(struct lp_buf *b, const void *p, size_t n)
{
	int err;

	if (!n)
		return 0;
	err = lp_buf_reserve(b, n);
	if (err)
		return err;
	memcpy(b->data + b->len, p, n);
	b->len += n;
	return 0;
}

size_t lp_uv_encode(uint8_t out[LP_UV_MAX], uint64_t v)
{
	size_t n = 0;

	while (v >= 0x80) {
		out[n++] = (uint8_t)(v | 0x80);
		v >>= 7;
	}
	out[n++] = (uint8_t)v;
	return n;
}

int lp_put_uv(struct lp_buf *b, uint64_t v)
{
	uint8_t tmp[LP_UV_MAX];

	return lp_put_bytes(b, tmp, lp_uv_encode(tmp, v));
}

int lp_put_sv(struct lp_buf *b, int64_t v)
{
	return lp_put_uv(b, lp_zigzag(v));
}

int lp_put_str(struct lp_buf *b, const char *s)
{
	size_t n = s ? strlen(s) : 0;
	int err;

	err = lp_put_uv(b, n);
	if (err)
		return err;
	return lp_put_bytes(b, s, n);
}

int lp_put_u16(struct lp_buf *b, uint16_t v)
{
	uint8_t tmp[2] = { (uint8_t)v, (uint8_t)(v >> 8) };

	return lp_put_bytes(b, tmp, sizeof(tmp));
}

int lp_put_u32(struct lp_buf *b, uint32_t v)
{
	uint8_t tmp[4] = { (uint8_t)v, (uint8_t)(v >> 8), (uint8_t)(v >> 16),
			   (uint8_t)(v >> 24) };

	return lp_put_bytes(b, tmp, sizeof(tmp));
}

/* A varint at c->p: its value and length, or 0 when it runs past the end,
 * is longer than LP_UV_MAX bytes, overflows 64 bits (the tenth byte holds
 * bit 63 only) or is spelled overlong (a zero final byte after others). */
static size_t get_uv(const struct lp_cursor *c, uint64_t *out)
{
	const uint8_t *p = c->p;
	size_t left = lp_cursor_left(c), max = left < LP_UV_MAX ? left : LP_UV_MAX;
	uint64_t v = 0;

	for (size_t i = 0; i < max; i++) {
		uint8_t byte = p[i];

		v |= (uint64_t)(byte & 0x7f) << (7 * i);
		if (byte < 0x80) {
			if ((byte == 0 && i > 0) || (i == LP_UV_MAX - 1 && byte > 1))
				return 0;
			*out = v;
			return i + 1;
		}
	}
	return 0;
}

int lp_get_uv_slow(struct lp_cursor *c, uint64_t *out)
{
	size_t n = get_uv(c, out);

	if (!n)
		return -EBADMSG;
	c->p += n;
	return 0;
}

int lp_get_uv32_slow(struct lp_cursor *c, uint32_t *out)
{
	uint64_t v;
	size_t n = get_uv(c, &v);

	if (!n || v > UINT32_MAX)
		return -EBADMSG;
	c->p += n;
	*out = (uint32_t)v;
	return 0;
}

int lp_get_sv_slow(struct lp_cursor *c, int64_t *out)
{
	uint64_t v;
	size_t n = get_uv(c, &v);

	if (!n)
		return -EBADMSG;
	c->p += n;
	*out = lp_unzigzag(v);
	return 0;
}

int lp_get_str(struct lp_cursor *c, const uint8_t **s, size_t *len)
{
	struct lp_cursor save = *c;
	uint64_t n;

	if (lp_get_uv(c, &n))
		return -EBADMSG;
	if (n > lp_cursor_left(c)) {
		*c = save;
		return -EBADMSG;
	}
	*s = c->p;
	*len = (size_t)n;
	c->p += n;
	return 0;
}

int lp_get_u8(struct lp_cursor *c, uint8_t *v)
{
	if (lp_cursor_left(c) < 1)
		return -EBADMSG;
	*v = *c->p++;
	return 0;
}

int lp_get_u16(struct lp_cursor *c, uint16_t *v)
{
	if (lp_cursor_left(c) < 2)
		return -EBADMSG;
	*v = (uint16_t)(c->p[0] | c->p[1] << 8);
	c->p += 2;
	return 0;
}

int lp_get_u32(struct lp_cursor *c, uint32_t *v)
{
	if (lp_cursor_left(c) < 4)
		return -EBADMSG;
	*v = (uint32_t)c->p[0] | (uint32_t)c->p[1] << 8 |
	     (uint32_t)c->p[2] << 16 | (uint32_t)c->p[3] << 24;
	c->p += 4;
	return 0;
}

uint32_t lp_crc32(uint32_t crc, const void *p, size_t n)
{
	const uint8_t *bytes = p;

	/* zlib takes a uInt length; feed it in pieces to stay portable. */
	while (n) {
		uInt piece = n > UINT_MAX ? UINT_MAX : (uInt)n;

		crc = (uint32_t)crc32(crc, bytes, piece);
		bytes += piece;
		n -= piece;
	}
	return crc;
}

size_t lp_compress_bound(enum lp_codec codec, size_t n)
{
	switch (codec) {
	case LP_CODEC_NONE:
		return n;
	case LP_CODEC_LZ4:
		if (n > LZ4_MAX_INPUT_SIZE)
			return 0;
		return (size_t)LZ4_compressBound((int)n);
	case LP_CODEC_ZLIB:
		if (n > ULONG_MAX / 2)
			return 0;
		return compressBound((uLong)n);
	}
	return 0;
}

int lp_compress(enum lp_codec codec, const void *src, size_t n, void *dst,
		size_t cap, size_t *out_len)
{
	uLongf zlen;
	int ret;

	switch (codec) {
	case LP_CODEC_NONE:
		if (cap < n)
			return -ENOBUFS;
		memcpy(dst, src, n);
		*out_len = n;
		return 0;
	case LP_CODEC_LZ4:
		if (n > LZ4_MAX_INPUT_SIZE)
			return -E2BIG;
		ret = LZ4_compress_default(src, dst, (int)n,
					   cap > INT_MAX ? INT_MAX : (int)cap);
		if (ret <= 0)
			return -ENOBUFS;
		*out_len = (size_t)ret;
		return 0;
	case LP_CODEC_ZLIB:
		zlen = cap;
		ret = compress2(dst, &zlen, src, n, 6);
		if (ret == Z_MEM_ERROR)
			return -ENOMEM;
		if (ret != Z_OK)
			return -ENOBUFS;
		*out_len = zlen;
		return 0;
	}
	return -EINVAL;
}

int lp_decompress(enum lp_codec codec, const void *src, size_t stored_size,
		  void *dst, size_t raw_size)
{
	uLongf zdst;
	uLong zsrc;
	int ret;

	switch (codec) {
	case LP_CODEC_NONE:
		if (stored_size != raw_size)
			return -EBADMSG;
		if (raw_size)
			memcpy(dst, src, raw_size);
		return 0;
	case LP_CODEC_LZ4:
		if (stored_size > INT_MAX || raw_size > INT_MAX)
			return -EBADMSG;
		/* The block format has no end marker: srcSize is exact, and
		 * decompress_safe never writes past dstCapacity. */
		ret = LZ4_decompress_safe(src, dst, (int)stored_size,
					  (int)raw_size);
		if (ret < 0 || (size_t)ret != raw_size)
			return -EBADMSG;
		return 0;
	case LP_CODEC_ZLIB:
		zdst = raw_size;
		zsrc = stored_size;
		ret = uncompress2(dst, &zdst, src, &zsrc);
		if (ret == Z_MEM_ERROR)
			return -ENOMEM;
		/* Exactly raw_size out and all of the stored bytes consumed:
		 * trailing bytes after the zlib stream are damage too. */
		if (ret != Z_OK || zdst != raw_size || zsrc != stored_size)
			return -EBADMSG;
		return 0;
	}
	return -EBADMSG;
}

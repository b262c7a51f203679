/*
 * pbuf.c - the protocol buffers encoder (see pbuf.h).
 *
 * A nested message's length comes before its contents but is known only
 * after them: pb_begin() notes where the contents start, pb_end() then
 * moves them up by the size of the length's varint and writes it in
 * front.  Messages in profile.proto are small (a sample, a location),
 * so the move is cheap; the outer Profile is never nested.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "lib/grow.h"
#include "report/pbuf.h"

void pb_free(struct pbuf *b)
{
	free(b->v);
	memset(b, 0, sizeof(*b));
}

static int reserve(struct pbuf *b, size_t n)
{
	if (b->err)
		return b->err;
	if (n > SIZE_MAX - b->len)
		return b->err = -ENOMEM;
	return b->err = GROW(b->v, b->cap, b->len + n);
}

static size_t varint_len(uint64_t x)
{
	size_t n = 1;

	while (x >= 0x80) {
		x >>= 7;
		n++;
	}
	return n;
}

static void put_varint(uint8_t *p, uint64_t x)
{
	while (x >= 0x80) {
		*p++ = (uint8_t)x | 0x80;
		x >>= 7;
	}
	*p = (uint8_t)x;
}

void pb_varint_slow(struct pbuf *b, uint64_t x)
{
	size_t n = varint_len(x);

	if (reserve(b, n))
		return;
	put_varint(b->v + b->len, x);
	b->len += n;
}

static void key(struct pbuf *b, uint32_t field, uint32_t type)
{
	pb_varint(b, (uint64_t)field << 3 | type);
}

void pb_uint(struct pbuf *b, uint32_t field, uint64_t x)
{
	if (!x)
		return;
	key(b, field, PB_VARINT);
	pb_varint(b, x);
}

void pb_bytes(struct pbuf *b, uint32_t field, const void *p, size_t n)
{
	key(b, field, PB_LEN);
	pb_varint(b, n);
	if (reserve(b, n))
		return;
	if (n)
		memcpy(b->v + b->len, p, n);
	b->len += n;
}

/* A message's length goes before it, and is known only at its end: one
 * byte is kept for it, enough for a body under 128 bytes (most), and
 * only a longer body moves up to make room for more. */
size_t pb_begin(struct pbuf *b, uint32_t field)
{
	key(b, field, PB_LEN);
	if (reserve(b, 1))
		return b->len;
	b->v[b->len++] = 0;
	return b->len;
}

void pb_end(struct pbuf *b, size_t mark)
{
	size_t body, n;

	if (b->err)
		return;
	body = b->len - mark;
	n = varint_len(body);
	if (n > 1) {
		if (reserve(b, n - 1))
			return;
		memmove(b->v + mark + n - 1, b->v + mark, body);
		b->len += n - 1;
	}
	put_varint(b->v + mark - 1, body);
}

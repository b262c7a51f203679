/*
 * pbuf.h - a protocol buffers encoder, just what profile.proto needs:
 * varints, length-delimited fields and nested messages, into a growing
 * byte buffer.  Errors (no memory) stick: check b->err once at the end.
 *
 * Wire format, per field:  key = field << 3 | wire type, then
 *   PB_VARINT (0)  a varint: 7 bits a byte, low first, high bit = more
 *   PB_LEN    (2)  a varint length, then that many bytes
 * Zero scalars are left out (proto3's default), nested messages and
 * packed repeated varints are PB_LEN fields.
 */
#ifndef LUAPROF_REPORT_PBUF_H
#define LUAPROF_REPORT_PBUF_H

#include <stddef.h>
#include <stdint.h>

enum { PB_VARINT = 0, PB_LEN = 2 };

struct pbuf {
	uint8_t *v;
	size_t len, cap;
	int err; /* 0 or -ENOMEM, the first failure */
};

void pb_free(struct pbuf *b);
void pb_varint_slow(struct pbuf *b, uint64_t x);

/* A varint; most are written in place, without a call. */
static inline void pb_varint(struct pbuf *b, uint64_t x)
{
	uint8_t *p;

	if (b->err || b->cap - b->len < 10) {
		pb_varint_slow(b, x);
		return;
	}
	p = b->v + b->len;
	while (x >= 0x80) {
		*p++ = (uint8_t)x | 0x80;
		x >>= 7;
	}
	*p++ = (uint8_t)x;
	b->len = (size_t)(p - b->v);
}
/* A varint field; left out when x is 0. */
void pb_uint(struct pbuf *b, uint32_t field, uint64_t x);
void pb_bytes(struct pbuf *b, uint32_t field, const void *p, size_t n);

/* A nested message or packed field: pb_begin() before its contents,
 * pb_end() with what pb_begin() returned after them. */
size_t pb_begin(struct pbuf *b, uint32_t field);
void pb_end(struct pbuf *b, size_t mark);

#endif

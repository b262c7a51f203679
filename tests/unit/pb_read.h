/*
 * pb_read.h - reading a gzipped pprof profile back in the tests: gunzip
 * a file, then walk its protobuf fields (a decoder of the tests' own, so
 * that the writer, report/out_pprof.c, is not checked against itself).
 * Static inline, as report_test.h; a test helper, not part of luaprof.
 */
#ifndef LUAPROF_TESTS_PB_READ_H
#define LUAPROF_TESTS_PB_READ_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <zlib.h>

struct pbr {
	const uint8_t *p, *end;
};

static inline int pbr_varint(struct pbr *r, uint64_t *v)
{
	*v = 0;
	for (int shift = 0; shift < 64 && r->p < r->end; shift += 7) {
		uint8_t b = *r->p++;

		*v |= (uint64_t)(b & 0x7f) << shift;
		if (!(b & 0x80))
			return 0;
	}
	return -1;
}

/* The next field: varints in *v, length-delimited in *sub.  1, 0 at the
 * end, -1 when malformed. */
static inline int pbr_next(struct pbr *r, uint32_t *field, uint64_t *v, struct pbr *sub)
{
	uint64_t key, len;

	*v = 0;
	sub->p = sub->end = NULL;
	if (r->p >= r->end)
		return 0;
	if (pbr_varint(r, &key))
		return -1;
	*field = key >> 3;
	if ((key & 7) == 0)
		return pbr_varint(r, v) ? -1 : 1;
	if ((key & 7) != 2 || pbr_varint(r, &len) || len > (uint64_t)(r->end - r->p))
		return -1;
	sub->p = r->p;
	sub->end = r->p + len;
	r->p += len;
	return 1;
}

static inline uint8_t *gunzip_file(const char *path, size_t *n)
{
	char *in = NULL;
	size_t cap = 1 << 20;
	uint8_t *out = malloc(cap);
	z_stream z = { 0 };
	FILE *f = fopen(path, "rb");
	long len;

	if (!f || !out)
		goto fail;
	fseek(f, 0, SEEK_END);
	len = ftell(f);
	rewind(f);
	in = malloc(len);
	if (!in || fread(in, 1, len, f) != (size_t)len)
		goto fail;
	if (inflateInit2(&z, 15 + 16) != Z_OK)
		goto fail;
	z.next_in = (uint8_t *)in;
	z.avail_in = len;
	z.next_out = out;
	z.avail_out = cap;
	if (inflate(&z, Z_FINISH) != Z_STREAM_END) {
		inflateEnd(&z);
		goto fail;
	}
	*n = z.total_out;
	inflateEnd(&z);
	fclose(f);
	free(in);
	return out;
fail:
	if (f)
		fclose(f);
	free(in);
	free(out);
	return NULL;
}

#endif

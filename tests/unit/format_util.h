/*
 * format_util.h - helpers shared by the format tests (test_format.c,
 * test_format_damage.c): scratch files, deep comparison of decoded
 * records, and writing or reading back a whole trace in one call.
 */
#ifndef LUAPROF_TESTS_FORMAT_UTIL_H
#define LUAPROF_TESTS_FORMAT_UTIL_H

#include <stddef.h>
#include <stdint.h>

#include "format/trace.h"

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

extern const enum lp_codec fmt_codecs[3];

/* A path in the run's scratch directory; the last four stay valid. */
const char *fmt_tmp_path(const char *name);
int fmt_write_file(const char *path, const void *data, size_t n);
uint8_t *fmt_read_file(const char *path, size_t *n); /* malloc'd */

/* Whether b, as read back, is what a was when written ("" for NULL). */
int fmt_record_equal(const struct lp_record *a, const struct lp_record *b);

/* Chunk boundaries as file offsets, recorded while writing: the end of
 * the header, of every chunk, and finally the file size. */
struct layout {
	uint64_t bounds[64];
	size_t nbounds;
};

/* Writes recs, flushing after every flush_every records (0 = never), and
 * closes with footer (NULL = the writer's own counts).  l, stats: NULL or
 * filled in.  Returns 0 or the first error. */
int fmt_write_trace(const char *path, enum lp_codec codec,
		    const struct lp_record *recs, size_t n, size_t flush_every,
		    const struct lp_footer *footer, struct layout *l,
		    struct trace_writer_stats *stats);

/* Reads path back and returns how many records matched exp, in order,
 * stopping at the first that does not ((size_t)-1 if it does not open).
 * A footer is not compared but stored in *footer. */
size_t fmt_read_expect(const char *path, const struct lp_record *exp,
		       size_t n, struct lp_footer *footer,
		       struct trace_reader_stats *st);

#endif

/*
 * health.h - what `report` and `info` say on standard error about the
 * integrity of the trace they read and the samples it holds (health.c).
 */
#ifndef LUAPROF_REPORT_HEALTH_H
#define LUAPROF_REPORT_HEALTH_H

#include "format/trace.h"

#include <stdint.h>

/* Prints "WHO: " (or "WHO: PATH: ", one trace of several) and the
 * message, on standard error. */
void health_say(const char *who, const char *path, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* Prints one "WHO: warning: ..." line per thing wrong with the trace as
 * read (cut short, damaged or missing chunks, chunks repeated or out of
 * order or of an unknown type, records that did not decode, a footer
 * whose counts disagree with what was read), with the figures; "WHO:
 * PATH: warning: ..." when path is given (one trace of several). */
void health_warn(const char *who, const char *path, const struct trace_reader_stats *st);

/* The samples' shortfalls, a line each where not 0: lost while recording
 * (of taken, those read and lost), and naming a stack never defined. */
void health_warn_samples(const char *who, const char *path, uint64_t lost, uint64_t taken,
			 uint64_t undefined);

/* Whether the trace read is whole: a footer, and nothing above to say. */
int health_whole(const struct trace_reader_stats *st);

#endif

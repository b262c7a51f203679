/*
 * health.h - what `report` and `info` say on standard error about the
 * integrity of the trace they read (health.c).
 */
#ifndef LUAPROF_REPORT_HEALTH_H
#define LUAPROF_REPORT_HEALTH_H

#include "format/trace.h"

/* Prints one "WHO: warning: ..." line per thing wrong with the trace as
 * read (cut short, damaged or missing chunks, chunks repeated or out of
 * order or of an unknown type, records that did not decode, a footer
 * whose counts disagree with what was read), with the figures; "WHO:
 * PATH: warning: ..." when path is given (one trace of several). */
void health_warn(const char *who, const char *path, const struct trace_reader_stats *st);

/* Whether the trace read is whole: a footer, and nothing above to say. */
int health_whole(const struct trace_reader_stats *st);

#endif

/*
 * health.c - the integrity of a trace as the reader found it, said on
 * standard error with the figures, the same way by `report` and `info`.
 *
 * A report that silently counts what is left of a damaged trace is a lie
 * with a percentage attached, so every way a trace can fall short is said:
 * cut short (no footer), damaged regions, chunks missing from the chunk
 * sequence, chunks repeated or out of order (skipped: nothing counts
 * twice), chunks of a type this luaprof does not know, records that did
 * not decode, and a footer whose sample or chunk count is not what was
 * read.  The last one is all an older trace, without chunk numbers, can
 * be checked by.  And what the samples read lack: samples the recorder
 * lost, samples whose stack was never defined.  Every warning about a
 * trace, and report.c's notes about one, go out through health_say(), so
 * that they all name the trace the same way.
 */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>

#include "report/health.h"

static const char *plural(uint64_t n)
{
	return n == 1 ? "" : "s";
}

static int footer_agrees(const struct trace_reader_stats *st)
{
	return st->footer.samples == st->samples && st->footer.events == st->events &&
	       st->footer.chunks == st->chunks;
}

int health_whole(const struct trace_reader_stats *st)
{
	return st->footer_seen && footer_agrees(st) && !st->bad_chunks &&
	       !st->skipped_chunks && !st->missing_chunks && !st->disordered_chunks &&
	       !st->bad_records;
}

void health_say(const char *who, const char *path, const char *fmt, ...)
{
	va_list ap;

	if (path)
		fprintf(stderr, "%s: %s: ", who, path);
	else
		fprintf(stderr, "%s: ", who);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
}

void health_warn(const char *who, const char *path, const struct trace_reader_stats *st)
{
	if (!st->footer_seen)
		health_say(who, path, "warning: trace was cut short: %" PRIu64
			   " samples recovered from %" PRIu64 " chunks\n",
			   st->samples, st->chunks);
	if (st->bad_chunks)
		health_say(who, path, "warning: %" PRIu64 " damaged chunks skipped (%" PRIu64
			   " bytes); their samples are missing\n",
			   st->bad_chunks, st->garbage_bytes);
	if (st->missing_chunks)
		health_say(who, path, "warning: %" PRIu64 " chunk%s missing from the trace's "
			   "sequence (damaged, lost or removed); their samples are missing\n",
			   st->missing_chunks, plural(st->missing_chunks));
	if (st->disordered_chunks)
		health_say(who, path, "warning: %" PRIu64 " chunk%s repeated or out of order, "
			   "skipped: no sample is counted twice\n",
			   st->disordered_chunks, plural(st->disordered_chunks));
	if (st->skipped_chunks)
		health_say(who, path, "warning: %" PRIu64 " chunk%s of an unknown type skipped "
			   "(from a newer luaprof?); what they hold is missing\n",
			   st->skipped_chunks, plural(st->skipped_chunks));
	if (st->footer_seen && !footer_agrees(st) && !st->footer.events && !st->events)
		health_say(who, path, "warning: the footer counts %" PRIu64 " samples in %"
			   PRIu64 " chunks, but %" PRIu64 " samples in %" PRIu64
			   " chunks were read\n", st->footer.samples, st->footer.chunks,
			   st->samples, st->chunks);
	else if (st->footer_seen && !footer_agrees(st))
		health_say(who, path, "warning: the footer counts %" PRIu64 " samples and %"
			   PRIu64 " events in %" PRIu64 " chunks, but %" PRIu64 " samples and %"
			   PRIu64 " events in %" PRIu64 " chunks were read\n",
			   st->footer.samples, st->footer.events, st->footer.chunks,
			   st->samples, st->events, st->chunks);
	if (st->bad_records)
		health_say(who, path, "warning: %" PRIu64 " records did not decode and were "
			   "skipped\n", st->bad_records);
	if (st->retired_records)
		health_say(who, path, "warning: the trace embeds DWARF as an older luaprof "
			   "did, which is no longer read: native frames have no source lines\n");
}

void health_warn_samples(const char *who, const char *path, uint64_t lost, uint64_t taken,
			 uint64_t undefined)
{
	if (lost)
		health_say(who, path, "warning: %" PRIu64 " samples were lost while recording "
			   "(%.2f%% of %" PRIu64 ")\n", lost, 100.0 * lost / taken, taken);
	if (undefined)
		health_say(who, path, "warning: %" PRIu64 " samples name a stack that was never "
			   "defined; their frames print as [missing stack]\n", undefined);
}

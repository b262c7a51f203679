/*
 * profile.c - what every view of a profile shares (see profile.h): its
 * header block, the time a sample stands for, freeing it.  Apart from
 * report.c, which fills the profile, so that the views (out_*.c,
 * annotate.c, vmstate.c) depend on the profile and report.c on them,
 * never the other way round.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "report/count.h"
#include "report/profile.h"

void profile_free(struct profile *p)
{
	for (size_t i = 0; i < p->ntraces; i++)
		free(p->traces[i].cmdline);
	free(p->traces);
	free(p->samples_v);
	frameinfo_free(&p->infos);
	strtab_free(&p->names);
	seqtab_free(&p->stacks);
	free(p->counts);
	memset(p, 0, sizeof(*p));
}

uint64_t profile_sample_ns(const struct profile *p, uint32_t t)
{
	uint32_t hz = t < p->ntraces ? p->traces[t].rate_hz : 0;

	return hz ? 1000000000ull / hz : 10000000ull; /* 99 Hz, say, if unknown */
}

void profile_header(FILE *out, const struct profile *p, const char *title)
{
	const struct procs *t = p->procs;
	uint64_t taken = count_add(p->samples, p->lost);
	size_t listed = 0;

	fprintf(out, "# luaprof report: %s\n", title);
	if (p->ntraces > 1) {
		fprintf(out, "# traces (merged):");
		for (size_t i = 0; i < p->ntraces; i++)
			fprintf(out, "%s %s", i ? "," : "", p->traces[i].path);
		fprintf(out, "%s\n", p->complete ? "" : " (cut short: no footer)");
	} else {
		fprintf(out, "# trace: %s%s\n", p->trace,
			p->complete ? "" : " (cut short: no footer)");
	}
	fprintf(out, "# samples: %" PRIu64, p->shown);
	if (p->shown != p->samples)
		fprintf(out, " shown of %" PRIu64 " read", p->samples);
	fprintf(out, ", lost: %" PRIu64, p->lost);
	if (p->lost)
		fprintf(out, " (%.2f%%)", 100.0 * p->lost / taken);
	if (p->cut)
		fprintf(out, ", native stack cut: %" PRIu64 " (%.2f%%, [truncated])",
			p->cut, p->shown ? 100.0 * p->cut / p->shown : 0.0);
	if (p->lua_cut)
		fprintf(out, ", Lua stack cut: %" PRIu64 " (%.2f%%, [truncated])",
			p->lua_cut, p->shown ? 100.0 * p->lua_cut / p->shown : 0.0);
	if (p->gaps)
		fprintf(out, ", frames unseen: %" PRIu64 " (%.2f%%, [unknown frames])",
			p->gaps, p->shown ? 100.0 * p->gaps / p->shown : 0.0);
	fprintf(out, "\n# duration: %.3f s (first to last sample%s)\n", p->span_ns / 1e9,
		p->ntraces > 1 ? ", each trace's added up" : "");
	if (p->compiled) {
		fprintf(out, "# compiled code: %" PRIu64 " samples, %" PRIu64 " (%.1f%%) placed "
			"in the functions their traces inlined", p->compiled,
			p->compiled_placed, 100.0 * p->compiled_placed / p->compiled);
		if (p->compiled_marked)
			fprintf(out, ", %" PRIu64 " (%.1f%%) in inlined code the trace does "
				"not tell apart ([inlined: ...])", p->compiled_marked,
				100.0 * p->compiled_marked / p->compiled);
		fprintf(out, "\n");
	}
	fprintf(out, "# processes: %zu", t->len);
	for (size_t i = 0; i < t->len && listed < 8; i++, listed++)
		fprintf(out, "%s%" PRIu32 " %s", i ? ", " : " (",
			t->v[i].pid, t->v[i].comm && t->v[i].comm[0] ?
			t->v[i].comm : "?");
	if (t->len > listed)
		fprintf(out, ", %zu more", t->len - listed);
	fprintf(out, "%s\n#\n", t->len ? ")" : "");
}

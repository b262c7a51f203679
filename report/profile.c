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

uint64_t profile_sample_value(const struct profile *p, const struct profile_sample *s)
{
	if (p->kind == LP_KIND_CPU)
		return s->weight * profile_sample_ns(p, s->trace);
	return s->weight;
}

const char *profile_unit(const struct profile *p)
{
	const struct lp_kind_info *k = lp_kind_info(p->kind);

	return k ? k->shown : "samples";
}

static uint64_t to_shown(uint64_t v, uint64_t div)
{
	return v == UINT64_MAX ? v : (v + div / 2) / div;
}

void profile_to_shown(struct profile *p)
{
	const struct lp_kind_info *k = lp_kind_info(p->kind);
	uint64_t div = k && k->div > 1 ? k->div : 1;

	if (div == 1)
		return;
	p->shown = 0;
	for (size_t i = 0; i < p->stacks.len; i++) {
		p->counts[i] = to_shown(p->counts[i], div);
		p->shown = count_add(p->shown, p->counts[i]);
	}
	p->cut = to_shown(p->cut, div);
	p->lua_cut = to_shown(p->lua_cut, div);
	p->gaps = to_shown(p->gaps, div);
	p->compiled = to_shown(p->compiled, div);
	p->compiled_placed = to_shown(p->compiled_placed, div);
	p->compiled_marked = to_shown(p->compiled_marked, div);
}

uint64_t profile_sample_ns(const struct profile *p, uint32_t t)
{
	uint32_t hz = t < p->ntraces ? p->traces[t].rate_hz : 0;

	return hz ? 1000000000ull / hz : 10000000ull; /* 99 Hz, say, if unknown */
}

/* The events of kinds not shown: another report shows them. */
static void other_kinds(FILE *out, const struct profile *p)
{
	const char *sep = "# also in the trace:";

	for (uint32_t i = 1; i <= LP_KIND_MAX; i++) {
		uint32_t k = i % LP_KIND_MAX; /* the kinds not known (0) last */

		if (!p->other_kinds[k])
			continue;
		if (lp_kind_info(k))
			fprintf(out, "%s %" PRIu64 " %s events (--kind %s)", sep,
				p->other_kinds[k], lp_kind_info(k)->name, lp_kind_info(k)->name);
		else
			fprintf(out, "%s %" PRIu64 " events of kinds this luaprof does not know",
				sep, p->other_kinds[k]);
		sep = ",";
	}
	if (sep[0] == ',')
		fprintf(out, "\n");
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
	if (p->kind == LP_KIND_CPU) {
		fprintf(out, "# samples: %" PRIu64, p->shown);
		if (p->shown != p->samples)
			fprintf(out, " shown of %" PRIu64 " read", p->samples);
	} else {
		const struct lp_kind_info *k = lp_kind_info(p->kind);

		fprintf(out, "# kind: %s, %s\n", k->name, k->help);
		fprintf(out, "# %s: %" PRIu64 " %s in %" PRIu64 " events", k->name, p->shown,
			k->shown, p->events);
		if (p->events != p->samples)
			fprintf(out, " shown of %" PRIu64 " read", p->samples);
	}
	fprintf(out, ", lost: %" PRIu64, p->lost);
	if (p->lost)
		fprintf(out, " (%.2f%%)", 100.0 * p->lost / taken);
	if (p->waits_unmeasured)
		fprintf(out, ", waits not measured: %" PRIu64 " (off-cpu, lua-wait)",
			p->waits_unmeasured);
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
		fprintf(out, "# compiled code: %" PRIu64 " %s, %" PRIu64 " (%.1f%%) placed "
			"in the functions their traces inlined", p->compiled, profile_unit(p),
			p->compiled_placed, 100.0 * p->compiled_placed / p->compiled);
		if (p->compiled_marked)
			fprintf(out, ", %" PRIu64 " (%.1f%%) in inlined code the trace does "
				"not tell apart ([inlined: ...])", p->compiled_marked,
				100.0 * p->compiled_marked / p->compiled);
		fprintf(out, "\n");
	}
	other_kinds(out, p);
	fprintf(out, "# processes: %zu", t->len);
	for (size_t i = 0; i < t->len && listed < 8; i++, listed++)
		fprintf(out, "%s%" PRIu32 " %s", i ? ", " : " (",
			t->v[i].pid, t->v[i].comm && t->v[i].comm[0] ?
			t->v[i].comm : "?");
	if (t->len > listed)
		fprintf(out, ", %zu more", t->len - listed);
	fprintf(out, "%s\n#\n", t->len ? ")" : "");
}

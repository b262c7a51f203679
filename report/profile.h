/*
 * profile.h - what a report prints from: the distinct root-to-leaf stacks
 * of one or more traces with their sample counts, plus the facts its
 * header states.  report.c fills it while streaming; the out_*.c
 * formatters only read it.
 *
 * Formats that need more than counts ask for it (report/formats.h):
 * what each frame is (infos: kinds, files, lines, mappings), and every
 * sample kept in order (samples: times and labels), which costs memory
 * per sample and is therefore kept only for them.
 */
#ifndef LUAPROF_REPORT_PROFILE_H
#define LUAPROF_REPORT_PROFILE_H

#include <stdint.h>
#include <stdio.h>

#include "format/trace.h"
#include "report/frameinfo.h"
#include "report/intern.h"
#include "report/procs.h"

/* One sample as the formats that keep them see it. */
struct profile_sample {
	uint64_t time_ns;   /* CLOCK_MONOTONIC of the recording machine */
	uint32_t stack;     /* stack id in the profile's stacks */
	uint32_t tid;
	uint32_t proc;      /* index in procs (pid, comm) */
	uint16_t vmclass;   /* enum vm_class */
	uint16_t trace;     /* index in traces */
	uint64_t weight;    /* in the kind's unit (format/kinds.h) */
	uint64_t count;     /* what it stands for: 1, or alloc's objects */
};

/* A trace the profile was read from, for titles and rates. */
struct profile_trace {
	const char *path;
	char *cmdline;          /* the recorded command line, or NULL */
	uint32_t rate_hz;       /* sampling rate, 0 unknown */
	uint64_t start_real_ns; /* wall clock at the start, 0 unknown */
	uint64_t span_ns;       /* first to last sample in the window */
};

struct profile {
	struct strtab names;  /* frame names */
	struct seqtab stacks; /* distinct stacks: name ids, root first */
	/* Per stack id: the weight of its events, in the unit the views
	 * show (the kind's `shown`: samples for CPU); every count below
	 * but events and other_kinds is in that unit too. */
	uint64_t *counts;
	size_t counts_cap;
	uint64_t shown;       /* the counts added up: after filters */
	uint32_t kind;        /* enum lp_event_kind: the one kind shown */
	uint64_t events;      /* events counted, after filters */
	/* Events of the other kinds, by kind (0: kinds not known here). */
	uint64_t other_kinds[LP_KIND_MAX];
	struct frame_infos infos; /* by name id, when a format asked */

	struct profile_sample *samples_v; /* in stream order, when asked */
	size_t nsamples, capsamples;

	/* For headers. */
	const char *trace;        /* the first trace's path */
	struct profile_trace *traces;
	size_t ntraces;
	uint64_t samples;         /* samples read, before filters */
	uint64_t lost;            /* events the recorder lost, of any kind but */
	/* waits not measured (off-CPU or Lua-land: their start not kept),
	 * which count in lost for those kinds only, here for the others */
	uint64_t waits_unmeasured;
	uint64_t cut;             /* shown samples whose native stack was cut */
	uint64_t lua_cut;         /* ... whose Lua stack was cut */
	uint64_t gaps;            /* ... that has frames it could not see */
	uint64_t first_ns, last_ns; /* first and last sample time */
	uint64_t span_ns;         /* the traces' spans, added up */
	const struct procs *procs;
	int complete;             /* every trace had a footer */
	uint64_t compiled;        /* shown samples taken in compiled traces */
	uint64_t compiled_placed; /* ... placed in the functions they inlined */
	uint64_t compiled_marked; /* ... in inlined code not told apart */
};

/* The "# ..." block that opens top and callgraph output. */
void profile_header(FILE *out, const struct profile *p, const char *title);

/* Frees what the profile owns (not procs). */
void profile_free(struct profile *p);

/* Nanoseconds of CPU one sample of trace t stands for (1 s / rate). */
uint64_t profile_sample_ns(const struct profile *p, uint32_t t);
/* A kept sample's value in pprof's unit for its kind: a CPU sample's
 * nanoseconds (its ticks times the period), else its weight. */
uint64_t profile_sample_value(const struct profile *p, const struct profile_sample *s);
/* The shown kind's unit, as views word their counts ("samples"). */
const char *profile_unit(const struct profile *p);
/* Turns the weights counted into the unit the views show (the kind's
 * div): once, when every trace is read. */
void profile_to_shown(struct profile *p);

#endif

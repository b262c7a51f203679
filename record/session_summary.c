/*
 * session_summary.c - what `record` says when it stops: samples taken and
 * written, losses, the Lua walk's and the native unwinder's results, and
 * with -v the sampler's own cost from bpf_stats and its run-time
 * histogram, and with -vv its phase clock.
 */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "bpf/phases.h"
#include "bpf/sampler.h"
#include "record/objects.h"
#include "record/say.h"
#include "record/sidekick.h"
#include "record/stacks.h"
#include "record/unwind.h"
#include "sampler.skel.h"
#include "record/session_priv.h"

/* The run time below which a share q of the sampler's runs finished, in
 * ns: the upper edge of the bucket that holds it (the last bucket is open
 * ended, so a tail beyond it reads as its lower edge, marked ">"). */
static uint64_t runtime_quantile(const __u64 *hist, uint64_t total, double q,
				 int *open_ended)
{
	uint64_t want = (uint64_t)(q * total + 0.5), seen = 0;

	if (want < 1)
		want = 1;
	*open_ended = 0;
	for (int i = 0; i < LP_RUNTIME_BUCKETS; i++) {
		seen += hist[i];
		if (seen >= want) {
			if (i == LP_RUNTIME_BUCKETS - 1) {
				*open_ended = 1;
				return (uint64_t)i * LP_RUNTIME_BUCKET_NS;
			}
			return (uint64_t)(i + 1) * LP_RUNTIME_BUCKET_NS;
		}
	}
	return 0;
}

/* Adds up the first value of per-CPU array fd, read as words u64 counts,
 * over the CPUs into sum: runtime_hists' and phase_times' values are
 * nothing else (phase_times' mark is summed too, and not used). */
static void percpu_sum_u64(int fd, __u64 *sum, size_t words)
{
	int ncpus = libbpf_num_possible_cpus();
	__u64 *v;
	__u32 zero = 0;

	if (ncpus <= 0 || !(v = calloc((size_t)ncpus * words, sizeof(*v))))
		return;
	if (!bpf_map_lookup_elem(fd, &zero, v))
		for (int c = 0; c < ncpus; c++)
			for (size_t i = 0; i < words; i++)
				sum[i] += v[(size_t)c * words + i];
	free(v);
}

/* The sampler's own cost: the distribution it measures itself, per target
 * sample, and the kernel's mean over every tick, which is counted only
 * while kernel.bpf_stats_enabled is 1. */
static void print_bpf_stats(struct session *s)
{
	__u64 hist[LP_RUNTIME_BUCKETS] = { 0 };
	struct bpf_prog_info info;
	__u32 len = sizeof(info);
	int fd = bpf_program__fd(s->skel->progs.on_sample);
	uint64_t total = 0;

	percpu_sum_u64(bpf_map__fd(s->skel->maps.runtime_hists), hist, LP_RUNTIME_BUCKETS);
	for (int i = 0; i < LP_RUNTIME_BUCKETS; i++)
		total += hist[i];
	if (total) {
		static const double qs[] = { 0.5, 0.9, 0.99 };
		static const char *const names[] = { "median", "p90", "p99" };

		fprintf(stderr, "luaprof record: BPF sampler time per sample:");
		for (int i = 0; i < 3; i++) {
			int open_ended;
			uint64_t ns = runtime_quantile(hist, total, qs[i], &open_ended);

			fprintf(stderr, "%s %s %s%.2f us", i ? "," : "", names[i],
				open_ended ? ">" : "", ns / 1e3);
		}
		fprintf(stderr, " (%llu samples)\n", (unsigned long long)total);
	}
	memset(&info, 0, sizeof(info));
	if (bpf_obj_get_info_by_fd(fd, &info, &len) || !info.run_cnt) {
		fprintf(stderr, "luaprof record: BPF sampler mean run time unknown "
			"(sysctl kernel.bpf_stats_enabled=1 to measure it)\n");
		return;
	}
	fprintf(stderr, "luaprof record: BPF sampler: %llu runs, %.0f ns per run\n",
		(unsigned long long)info.run_cnt,
		(double)info.run_time_ns / info.run_cnt);
}

/* The sampler's time by phase (bpf/phases.h), summed over the CPUs: the
 * mean per sample of each, and the frames the walks produced. */
static void print_bpf_phases(struct session *s)
{
	static const char *const names[LP_PHASES] = {
#define LP_PHASE_NAME(name, what) what,
		LP_PHASE_LIST(LP_PHASE_NAME)
#undef LP_PHASE_NAME
	};
	struct lp_phase_times sum = { 0 };
	double n;

	percpu_sum_u64(bpf_map__fd(s->skel->maps.phase_times), (__u64 *)&sum,
		       sizeof(sum) / sizeof(__u64));
	if (!sum.samples)
		return;
	n = sum.samples;
	fprintf(stderr, "luaprof record: BPF sampler phases, mean per sample:");
	for (int i = 0; i < LP_PHASES; i++)
		fprintf(stderr, "%s %s %.2f us", i ? "," : "", names[i], sum.ns[i] / n / 1e3);
	fprintf(stderr, "; %.1f Lua and %.1f native frames, %.1f reads past the "
		"stack copy; Lua reads %.2f + %.2f (state + walk), %.2f failed, "
		"%.2f from the stack copy\n",
		sum.lua_frames / n, sum.native_frames / n, sum.native_reads / n,
		sum.lua_state_reads / n, sum.lua_walk_reads / n, sum.lua_read_fails / n,
		sum.lua_copy_reads / n);
	/* A tick in user mode skips the kernel stack's helper: its phase
	 * is nearly all the kernel ticks'. */
	if (sum.kernel_ticks)
		fprintf(stderr, "luaprof record: BPF sampler: %.1f%% of samples are kernel "
			"ticks, whose stack took %.2f us each\n",
			100.0 * sum.kernel_ticks / n,
			sum.ns[LP_PHASE_KSTACK] / (double)sum.kernel_ticks / 1e3);
}

/* The Lua half of the summary: samples with Lua frames, prototypes,
 * compiled traces, sources, and the processes whose VM was not found. */
static void print_lua_summary(const struct session *s)
{
	if (s->lua.samples_lua || s->lua.no_g || s->lua.bad_l || s->lua.no_vm)
		fprintf(stderr, "luaprof record: Lua: %llu samples with Lua frames "
			"(%.1f%%), %llu truncated, %llu in host code; no VM state in "
			"%llu; %llu protos (%llu unreadable, %llu gone before they were "
			"read, named from their first sample)\n",
			(unsigned long long)s->lua.samples_lua,
			s->samples ? 100.0 * s->lua.samples_lua / s->samples : 0.0,
			(unsigned long long)s->lua.truncated,
			(unsigned long long)s->lua.idle,
			(unsigned long long)(s->lua.no_g + s->lua.bad_l + s->lua.no_vm),
			(unsigned long long)proto_table_count(s->protos),
			(unsigned long long)proto_table_failed(s->protos),
			(unsigned long long)proto_table_from_ident(s->protos));
	if (proto_table_nomem(s->protos))
		fprintf(stderr, "luaprof record: Lua: out of memory %llu times reading "
			"protos (their frames unknown, or named from their first "
			"sample)\n",
			(unsigned long long)proto_table_nomem(s->protos));
	if (jit_trace_table_count(s->jit_traces)) {
		struct snap_stats ts;

		jit_trace_table_stats(s->jit_traces, &ts);
		fprintf(stderr, "luaprof record: compiled traces: %llu met, read %llu "
			"times: with their snapshots %llu (%llu ranges of code, %llu not "
			"decoded, %llu marked as inlined code not told apart; between "
			"snapshots, %llu stretches placed by instruction, %llu whole), "
			"gone or changed %llu, unreadable %llu; looked at again %llu "
			"times\n",
			(unsigned long long)jit_trace_table_count(s->jit_traces),
			(unsigned long long)(ts.traces + ts.stale + ts.unreadable),
			(unsigned long long)ts.traces, (unsigned long long)ts.snaps,
			(unsigned long long)ts.unplaced, (unsigned long long)ts.marked,
			(unsigned long long)ts.exact, (unsigned long long)ts.whole,
			(unsigned long long)ts.stale, (unsigned long long)ts.unreadable,
			(unsigned long long)ts.rechecks);
	}
	if (s->lua.foreign_code)
		fprintf(stderr, "luaprof record: compiled traces: %llu samples in code "
			"that no trace held, called from one (another JIT's), "
			"with [unknown frames] above it\n",
			(unsigned long long)s->lua.foreign_code);
	{
		struct source_stats ss;

		source_table_stats(s->sources, &ss);
		if (ss.whole + ss.cut + ss.changed + ss.unreadable + ss.budget)
			fprintf(stderr, "luaprof record: Lua sources: %llu files embedded "
				"(%llu bytes), %llu cut to their first %u KiB; not "
				"embedded: %llu changed since loaded, %llu unreadable, "
				"%llu over the trace's %u MiB\n",
				(unsigned long long)(ss.whole + ss.cut),
				(unsigned long long)ss.bytes, (unsigned long long)ss.cut,
				SOURCE_FILE_MAX >> 10, (unsigned long long)ss.changed,
				(unsigned long long)ss.unreadable,
				(unsigned long long)ss.budget, SOURCE_TRACE_MAX >> 20);
	}
	if (s->lua.procs_gone)
		fprintf(stderr, "luaprof record: %llu LuaJIT process%s exited before "
			"%s VM could be checked: %llu of %s samples without Lua "
			"frames\n", (unsigned long long)s->lua.procs_gone,
			s->lua.procs_gone == 1 ? "" : "es",
			s->lua.procs_gone == 1 ? "its" : "their",
			(unsigned long long)s->lua.gone_dropped,
			s->lua.procs_gone == 1 ? "its" : "their");
	for (int i = 0; i < s->ntargets; i++) {
		const struct target *t = &s->targets[i];

		if (t->lj && t->lj->state == LJ_WAITING_G && t->lj_unvalidated)
			say(stderr, 0, "pid %d: LuaJIT found in %s but no sample "
			    "showed a global_State that validates with the layout "
			    "(%s): no Lua frames recorded; the offsets are probably "
			    "wrong for this build", (int)t->pid, t->lj->object,
			    t->lj->source);
	}
}

/* -v: the recorder's own CPU (the sampler's runs in its targets'), step
 * by step: setup, before the first sample; sampling, while the targets
 * run, per sample and with the loop's wake-ups; finishing, after. */
static void print_self_cpu(struct session *s)
{
	static const char *const step[SELF_CPU_N] = {
#define SELF_CPU_TEXT(name, text) text,
		SELF_CPU_DEF(SELF_CPU_TEXT)
#undef SELF_CPU_TEXT
	};
	const uint64_t *c = s->self_cpu;
	double secs = (s->stop_ns - s->start_ns) / 1e9;
	double sampling = (c[SELF_CPU_SAMPLING] - c[SELF_CPU_START]) / 1e6;
	const struct loop_stats *l = &s->loop;

	fprintf(stderr, "luaprof record: recorder CPU: setup %.1f ms in %.1f ms of wall-clock time (",
		c[SELF_CPU_START] / 1e6, s->setup_ns / 1e6);
	for (int i = 0; i <= SELF_CPU_START; i++)
		fprintf(stderr, "%s%s %.1f", i ? ", " : "", step[i],
			(c[i] - (i ? c[i - 1] : 0)) / 1e6);
	fprintf(stderr, "); sampling %.1f ms in %.2f s (%.2f%% of a CPU, %.2f us per "
		"sample; wake-ups %.1f/s for events, %.1f/s at the poll's timeout; "
		"%.1f flushes/s); finishing %.1f ms\n", sampling, secs,
		secs > 0 ? sampling / 10 / secs : 0.0,
		s->samples ? sampling * 1e3 / s->samples : 0.0,
		secs > 0 ? l->woken / secs : 0.0, secs > 0 ? l->timeouts / secs : 0.0,
		secs > 0 ? l->flushes / secs : 0.0,
		(c[SELF_CPU_FINISHING] - c[SELF_CPU_SAMPLING]) / 1e6);
}

/* -v: how the BPF sampler, the native unwinder, the sidekick and the
 * recorder itself did. */
static void print_verbose(struct session *s)
{
	struct sidekick_stats ks;

	print_bpf_stats(s);
	print_bpf_phases(s);
	unwind_print_stats(s->unw, stderr); /* native unwinder */
	for (int i = 0; i < s->ncut_walks; i++)
		say(stderr, 0, "native unwind: walk cut short at %s", s->cut_walks[i]);
	if (s->ustacks_unnamed)
		fprintf(stderr, "luaprof record: native unwind: %llu stacks cut at a frame "
			"no mapping of the trace names\n",
			(unsigned long long)s->ustacks_unnamed);
	if (s->holds_done)
		fprintf(stderr, "luaprof record: held %llu processes at their exec until "
			"read, %.1f ms in all\n", (unsigned long long)s->holds_done,
			s->holds_ns / 1e6);
	sidekick_stats(s->side, &ks);
	fprintf(stderr, "luaprof record: during flushes: %llu events read, %llu "
		"process mappings published for the unwinder\n",
		(unsigned long long)ks.queued, (unsigned long long)ks.published);
	print_self_cpu(s);
}

/* What the native unwinder could not hold, and with -v how it and the
 * BPF sampler did. */
static void print_unwind_summary(struct session *s)
{
	if (s->unw) {
		struct unwind_stats us;

		/* The unwind maps are sized at the start (mapsize.c): what
		 * came later and did not fit is said, -v or not. */
		unwind_stats(s->unw, &us);
		if (us.objects_full || us.objects_unindexed)
			fprintf(stderr, "luaprof record: native unwind: %u objects did not "
				"fit the unwind tables and were walked with frame "
				"pointers, %u without an index (slower); sized at the "
				"start for %u rows and %u buckets\n", us.objects_full,
				us.objects_unindexed, s->maps_plan.rows, s->maps_plan.buckets);
	}
	if (s->o->verbose)
		print_verbose(s);
}

void print_summary(struct session *s, uint64_t end_ns)
{
	const struct lp_bpf_counters *c = &s->skel->bss->counters;
	double secs = (end_ns - s->start_ns) / 1e9;
	uint64_t unwritten = s->samples - s->written;
	struct stat st;
	unsigned long long bytes = 0;

	/* The file's own size: the footer is written after the last stats. */
	if (!stat(s->o->output, &st))
		bytes = st.st_size;
	if (s->status_shown)
		fprintf(stderr, "\r\033[K");
	/* Samples are what the file holds: those taken but not written
	 * after a write error are lost, and said to be. */
	fprintf(stderr, "luaprof record: %llu samples, %llu lost, %.2f s, %d process%s\n",
		(unsigned long long)s->written,
		(unsigned long long)(session_bpf_lost(s) + s->lost_dropped + unwritten),
		secs, s->ntargets, s->ntargets == 1 ? "" : "es");
	for (uint32_t k = 0; k < LP_KIND_MAX; k++)
		if (k != LP_KIND_CPU && s->events[k])
			fprintf(stderr, "luaprof record: of those, %llu %s events\n",
				(unsigned long long)s->events[k],
				lp_kind_info(k) ? lp_kind_info(k)->name : "unknown");
	if (s->inuse_unmatched)
		fprintf(stderr, "luaprof record: %llu sampled blocks alive at the end are not "
			"among the inuse events: their allocation events were lost\n",
			(unsigned long long)s->inuse_unmatched);
	if (s->write_err)
		fprintf(stderr, "luaprof record: after the write error, %llu of the %llu "
			"samples taken were not written: they are lost\n",
			(unsigned long long)unwritten, (unsigned long long)s->samples);
	fprintf(stderr, "luaprof record: wrote %s: %llu bytes, %.1f bytes/sample, "
		"%llu stacks\n", s->o->output, bytes,
		s->written ? (double)bytes / s->written : 0.0,
		(unsigned long long)stack_table_count(s->stacks));
	{
		uint64_t nobj, nemb, nsym, of;

		object_set_stats(s->objs, &nobj, &nemb, &nsym, &of);
		if (nobj)
			fprintf(stderr, "luaprof record: %llu objects mapped, symbols of "
				"%llu embedded (%llu symbols of %llu: those samples "
				"hit)%s\n", (unsigned long long)nobj,
				(unsigned long long)nemb, (unsigned long long)nsym,
				(unsigned long long)of,
				s->o->no_embed ? " (--no-embed)" : "");
		if (!s->o->no_embed)
			object_set_print_srclines(s->objs, s->o->verbose);
	}
	if (c->lost_task)
		fprintf(stderr, "luaprof record: %llu process events lost\n",
			(unsigned long long)c->lost_task);
	print_lua_summary(s);
	print_unwind_summary(s);

}

/*
 * info.c - `luaprof info TRACE`: what a trace holds and how healthy it is,
 * without symbolizing anything.  It answers the questions to ask before
 * trusting a report: who recorded what, on which machine, at what rate;
 * which processes took part and how they joined; how many samples were
 * taken, kept and lost; and whether the file is complete or damaged.
 */
#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "format/trace.h"
#include "report/count.h"
#include "lib/escape.h"
#include "lib/grow.h"
#include "lib/htab.h"
#include "report/health.h"
#include "report/procs.h"
#include "report/report.h"

#define PROG "luaprof info"

struct info {
	char *version, *cmdline, *target, *hostname, *kernel, *clock;
	int meta_seen;
	uint32_t rate_hz, meta_flags;
	uint64_t start_mono_ns, start_real_ns;

	struct procs procs;
	uint64_t samples, first_ns, last_ns;
	uint64_t kstack_failed, ustack_failed;
	/* EVENT records by kind (0: kinds not known here), and their weights */
	uint64_t events[LP_KIND_MAX], weights[LP_KIND_MAX];
	uint64_t ustop[LP_USTOP_R_MAX + 1]; /* by sample.ustop; [MAX]: others */
	uint64_t lost[5]; /* other reasons, then by enum lp_lost_reason */
	uint64_t stacks[3]; /* other kinds, kernel, user */
	uint64_t gap_stacks; /* user stacks with frames the walk could not see */
	/* Lua stacks whose walk was cut ([truncated] last), by id, and the
	 * samples that hold one. */
	uint64_t *lua_cut_ids;
	size_t nlua_cut_ids, caplua_cut_ids;
	struct htab lua_cut_h;
	uint64_t lua_cut;
	uint64_t maps_records, mappings, ksyms;
	struct info_obj *objs; /* OBJECT records, with their SYMTAB totals */
	uint64_t lua_src[6], lua_src_bytes; /* LUA_SOURCE records by status */
	/* TRACE records, and the TRACE_SNAPS records of some of them */
	uint64_t traces, traces_snapped, snaps, snaps_undecoded, snaps_marked, snap_bytes;
	size_t nobjs, capobjs;
	struct info_vm *vms; /* each process's Lua VM, as last described */
	size_t nvms, capvms;
	struct lp_footer footer;
	int footer_seen;
};

static const char usage_line[] = "usage: luaprof info TRACE\n";

/* How the native walks ended: whole, cut (and why), or not said. */
static void print_ustops(const struct info *in)
{
	static const char *const why[LP_USTOP_R_MAX + 1] = {
		[LP_USTOP_R_DEPTH] = "too deep", [LP_USTOP_R_UNMAPPED] = "unmapped",
		[LP_USTOP_R_JIT] = "jit code", [LP_USTOP_R_NO_CFI] = "no cfi",
		[LP_USTOP_R_UNSUPPORTED] = "unsupported cfi",
		[LP_USTOP_R_READ] = "stack unreadable",
		[LP_USTOP_R_BAD_FRAME] = "bad frame",
		[LP_USTOP_R_NO_TABLE] = "tables not loaded yet",
		[LP_USTOP_R_MAX] = "other",
	};
	uint64_t cut = 0;

	for (int i = 0; i <= LP_USTOP_R_MAX; i++)
		if (lp_ustop_cut((uint32_t)i))
			cut += in->ustop[i];
	if (!in->samples || in->ustop[LP_USTOP_R_UNKNOWN] == in->samples)
		return; /* frame pointers, or a trace from before ustop */
	printf("native stacks: %" PRIu64 " whole, %" PRIu64 " cut (%.2f%%)",
	       in->ustop[LP_USTOP_R_COMPLETE], cut, 100.0 * cut / in->samples);
	for (int i = 0, n = 0; i <= LP_USTOP_R_MAX; i++)
		if (lp_ustop_cut((uint32_t)i) && in->ustop[i])
			printf("%s%s %" PRIu64, n++ ? ", " : ": ", why[i], in->ustop[i]);
	if (in->ustop[LP_USTOP_R_NO_REGS])
		printf("; no user registers %" PRIu64, in->ustop[LP_USTOP_R_NO_REGS]);
	if (in->ustop[LP_USTOP_R_UNKNOWN])
		printf("; not said %" PRIu64, in->ustop[LP_USTOP_R_UNKNOWN]);
	printf("\n");
}

/* Samples whose Lua stack was cut, beside the native cuts. */
static void print_lua_cuts(const struct info *in)
{
	if (in->lua_cut)
		printf("Lua stacks: %" PRIu64 " cut (%.2f%%, [truncated])\n", in->lua_cut,
		       100.0 * in->lua_cut / in->samples);
}

static int is_lua_cut(const struct info *in, uint64_t id)
{
	struct htab_probe p;
	int64_t i;

	htab_probe_start(&in->lua_cut_h, hash_u64(id), &p);
	while ((i = htab_probe_next(&in->lua_cut_h, &p)) >= 0)
		if (in->lua_cut_ids[i] == id)
			return 1;
	return 0;
}

static int on_lua_stack(struct info *in, const struct lp_lua_stack *ls)
{
	int err;

	if (!ls->depth || ls->frames[ls->depth - 1].kind != LP_LFRAME_TRUNC ||
	    is_lua_cut(in, ls->id))
		return 0;
	err = GROW(in->lua_cut_ids, in->caplua_cut_ids, in->nlua_cut_ids + 1);
	if (err)
		return err;
	in->lua_cut_ids[in->nlua_cut_ids] = ls->id;
	return htab_insert(&in->lua_cut_h, hash_u64(ls->id), (uint32_t)in->nlua_cut_ids++);
}

/* An object of the trace, for the listing of what is embedded. */
struct info_obj {
	uint64_t id, size;
	char *path;
	char ident[2 * LP_OBJID_MAX + 1]; /* hex */
	uint32_t kind;
	uint64_t nsym, bytes; /* embedded symbols, their encoded size */
	uint64_t chains, line_bytes; /* SRCLINES records: addresses, bytes */
	uint32_t lines_skipped;      /* their notes' LP_SRCLINES_SKIPPED_* */
};

/* A process's Lua VM, from its latest LUAJIT or PUC_LUA record, said in
 * one line made safe for a terminal. */
struct info_vm {
	uint32_t pid;
	char *text;
};

static int on_object(struct info *in, const struct lp_object *o)
{
	struct info_obj *ob;

	for (size_t i = 0; i < in->nobjs; i++)
		if (in->objs[i].id == o->id)
			return 0;
	if (GROW(in->objs, in->capobjs, in->nobjs + 1))
		return -ENOMEM;
	ob = &in->objs[in->nobjs];
	memset(ob, 0, sizeof(*ob));
	ob->path = esc_dup(o->path); /* shown only */
	if (!ob->path)
		return -ENOMEM;
	ob->id = o->id;
	ob->size = o->size;
	ob->kind = o->id_kind;
	for (uint32_t i = 0; i < o->ident_len && i < LP_OBJID_MAX; i++)
		snprintf(ob->ident + 2 * i, 3, "%02x", o->ident[i]);
	in->nobjs++;
	return 0;
}

/* Adds a SYMTAB record's symbols and bytes (its body's) to its object. */
static void on_symtab(struct info *in, const struct lp_symtab *st, uint64_t bytes)
{
	for (size_t i = 0; i < in->nobjs; i++) {
		if (in->objs[i].id == st->object) {
			in->objs[i].nsym += st->nsym;
			in->objs[i].bytes += bytes;
			return;
		}
	}
}

/* Adds a SRCLINES record's addresses and bytes (its body's) to its
 * object, or its note's bound. */
static void on_srclines(struct info *in, const struct lp_srclines *sl, uint64_t bytes)
{
	for (size_t i = 0; i < in->nobjs; i++) {
		struct info_obj *ob = &in->objs[i];

		if (ob->id != sl->object)
			continue;
		ob->chains += sl->nchain;
		ob->line_bytes += bytes;
		ob->lines_skipped |= sl->flags;
		return;
	}
}

/* Replaces pid's VM line with a new one, control bytes as '?'. */
static int set_vm(struct info *in, uint32_t pid, const char *fmt, ...)
{
	struct info_vm *vm = NULL;
	va_list ap;
	char *text;
	int n;

	va_start(ap, fmt);
	n = vasprintf(&text, fmt, ap);
	va_end(ap);
	if (n < 0)
		return -ENOMEM;
	esc_clean(text); /* names and paths from the trace */
	for (size_t i = 0; i < in->nvms && !vm; i++)
		if (in->vms[i].pid == pid)
			vm = &in->vms[i];
	if (!vm) {
		if (GROW(in->vms, in->capvms, in->nvms + 1)) {
			free(text);
			return -ENOMEM;
		}
		vm = &in->vms[in->nvms++];
		vm->pid = pid;
		vm->text = NULL;
	}
	free(vm->text);
	vm->text = text;
	return 0;
}

static int on_luajit(struct info *in, const struct lp_luajit *lj)
{
	if (lj->build && lj->build[0])
		return set_vm(in, lj->pid, "%s; build %s, %s", lj->name, lj->build,
			      lj->source);
	return set_vm(in, lj->pid, "%s; %s", lj->name, lj->source);
}

static int keep(char **dst, const char *src)
{
	free(*dst);
	*dst = esc_dup(src); /* for the terminal */
	return *dst ? 0 : -ENOMEM;
}

static int on_meta(struct info *in, const struct lp_meta *m)
{
	int err;

	err = keep(&in->version, m->version);
	if (!err)
		err = keep(&in->cmdline, m->cmdline);
	if (!err)
		err = keep(&in->target, m->target);
	if (!err)
		err = keep(&in->hostname, m->hostname);
	if (!err)
		err = keep(&in->kernel, m->kernel);
	if (!err)
		err = keep(&in->clock, m->clock);
	in->meta_seen = 1;
	in->rate_hz = m->rate_hz;
	in->meta_flags = m->flags;
	in->start_mono_ns = m->start_mono_ns;
	in->start_real_ns = m->start_real_ns;
	return err;
}

/* rec, whose body takes bytes in the trace. */
static int on_record(struct info *in, const struct lp_record *rec, uint64_t bytes)
{
	const struct lp_sample *s = &rec->u.sample;
	struct proc *p;
	int err;

	switch (rec->type) {
	case LP_REC_META:
		return on_meta(in, &rec->u.meta);
	case LP_REC_PROCESS:
		return procs_add(&in->procs, &rec->u.process);
	case LP_REC_EXIT:
		return procs_exit(&in->procs, &rec->u.exit);
	case LP_REC_MAPS:
		in->maps_records++;
		in->mappings += rec->u.maps.count;
		return 0;
	case LP_REC_STACK:
		in->stacks[rec->u.stack.kind <= 2 ? rec->u.stack.kind : 0]++;
		in->gap_stacks += lp_stack_has_gap(&rec->u.stack);
		return 0;
	case LP_REC_SAMPLE:
		if (!in->samples++ || s->time_ns < in->first_ns)
			in->first_ns = s->time_ns;
		if (s->time_ns > in->last_ns)
			in->last_ns = s->time_ns;
		in->kstack_failed += !!(s->flags & LP_SAMPLE_KSTACK_FAILED);
		in->ustack_failed += !!(s->flags & LP_SAMPLE_USTACK_FAILED);
		in->ustop[s->ustop < LP_USTOP_R_MAX ? s->ustop : LP_USTOP_R_MAX]++;
		in->lua_cut += s->lstack && is_lua_cut(in, s->lstack);
		err = procs_get(&in->procs, s->pid, &p);
		if (!err)
			p->samples++;
		return err;
	case LP_REC_EVENT: {
		uint32_t k = lp_kind_info(rec->u.event.kind) ? rec->u.event.kind : 0;

		in->events[k] = count_add(in->events[k], 1);
		in->weights[k] = count_add(in->weights[k], rec->u.event.weight);
		return 0;
	}
	case LP_REC_LUA_STACK:
		return on_lua_stack(in, &rec->u.lua_stack);
	case LP_REC_LOST: {
		uint64_t *l = &in->lost[rec->u.lost.reason <= LP_LOST_UNTRACKED ? rec->u.lost.reason : 0];

		*l = count_add(*l, rec->u.lost.count);
		return 0;
	}
	case LP_REC_KSYMS:
		in->ksyms += rec->u.ksyms.count;
		return 0;
	case LP_REC_OBJECT:
		return on_object(in, &rec->u.object);
	case LP_REC_SYMTAB:
		on_symtab(in, &rec->u.symtab, bytes);
		return 0;
	case LP_REC_LUA_SOURCE:
		in->lua_src[rec->u.lua_source.status <= LP_LUASRC_BUDGET ?
			    rec->u.lua_source.status : 0]++;
		in->lua_src_bytes += rec->u.lua_source.text_len;
		return 0;
	case LP_REC_SRCLINES:
		on_srclines(in, &rec->u.srclines, bytes);
		return 0;
	case LP_REC_LUAJIT:
		return on_luajit(in, &rec->u.luajit);
	case LP_REC_PUC_LUA:
		return set_vm(in, rec->u.puc_lua.pid, "PUC %s in %s: not walked (luaprof "
			      "walks LuaJIT 2.1 only): native frames only",
			      rec->u.puc_lua.version, rec->u.puc_lua.object);
	case LP_REC_TRACE:
		in->traces++;
		return 0;
	case LP_REC_TRACE_SNAPS:
		in->traces_snapped++;
		in->snaps += rec->u.trace_snaps.nsnap;
		for (uint32_t i = 0; i < rec->u.trace_snaps.nsnap; i++) {
			const struct lp_tsnap *s = &rec->u.trace_snaps.snaps[i];

			in->snaps_undecoded += !s->nframe;
			in->snaps_marked += s->nframe &&
					    s->frames[s->nframe - 1].kind == LP_LFRAME_INLINED;
		}
		in->snap_bytes += bytes;
		return 0;
	case LP_REC_FOOTER:
		in->footer = rec->u.footer;
		in->footer_seen = 1;
		return 0;
	default:
		return 0;
	}
}

/* The Lua source files the trace embeds, and those it names without
 * text, by why: what --annotate will have to do without. */
static void print_lua_sources(const struct info *in)
{
	const uint64_t *c = in->lua_src;

	if (!(c[0] + c[1] + c[2] + c[3] + c[4] + c[5]))
		return;
	printf("Lua sources: %" PRIu64 " files embedded (%" PRIu64 " bytes), %"
	       PRIu64 " of them cut short; not embedded: %" PRIu64
	       " changed since loaded, %" PRIu64 " unreadable, %" PRIu64
	       " over the trace's bound", c[LP_LUASRC_WHOLE] + c[LP_LUASRC_CUT],
	       in->lua_src_bytes, c[LP_LUASRC_CUT], c[LP_LUASRC_CHANGED],
	       c[LP_LUASRC_UNREADABLE], c[LP_LUASRC_BUDGET]);
	if (c[0])
		printf(", %" PRIu64 " of an unknown status", c[0]);
	printf("\n");
}

/* An object's embedded source lines, and whether a bound cut them. */
static void print_lines(const struct info_obj *ob)
{
	if (ob->chains || ob->line_bytes)
		printf("    lines: %" PRIu64 " addresses, %" PRIu64 " bytes\n", ob->chains,
		       ob->line_bytes);
	if (ob->lines_skipped)
		printf("    lines: addresses hit past a bound not embedded: %s\n",
		       ob->lines_skipped & LP_SRCLINES_SKIPPED_SIZE ?
		       "over the recorder's bound for one object" :
		       "the recording's bound for lines was spent");
}

/* The objects whose symbols or lines the trace embeds, by build-id, with
 * what they cost, after a count of every object it names (record
 * --no-embed, or not hit, only names them). */
static void print_objects(const struct info *in)
{
	uint64_t emb = 0, bytes = 0, lobj = 0, lbytes = 0, chains = 0, lskip = 0;

	for (size_t i = 0; i < in->nobjs; i++) {
		emb += !!in->objs[i].bytes;
		bytes += in->objs[i].bytes;
		lobj += !!in->objs[i].chains;
		lbytes += in->objs[i].line_bytes;
		chains += in->objs[i].chains;
		lskip += !!in->objs[i].lines_skipped;
	}
	printf("objects: %zu mapped, symbols of %" PRIu64 " embedded (%" PRIu64
	       " bytes), lines from DWARF of %" PRIu64 " (%" PRIu64 " bytes) for %"
	       PRIu64 " addresses", in->nobjs, emb, bytes, lobj, lbytes, chains);
	if (lskip)
		printf(", lines of %" PRIu64 " left out in part (over a bound)", lskip);
	printf("\n");
	for (size_t i = 0; i < in->nobjs; i++) {
		const struct info_obj *ob = &in->objs[i];

		if (!ob->bytes && !ob->line_bytes)
			continue;
		printf("  %s %s %s: file %" PRIu64 " bytes, %" PRIu64 " symbols, %"
		       PRIu64 " bytes embedded\n",
		       ob->kind == LP_OBJID_BUILD_ID ? "build-id" : "content-hash",
		       ob->ident, ob->path, ob->size, ob->nsym, ob->bytes);
		print_lines(ob);
	}
}

static double rel_s(const struct info *in, uint64_t t)
{
	uint64_t start = in->meta_seen ? in->start_mono_ns : in->first_ns;

	return ((double)t - (double)start) / 1e9;
}

static void print_meta(const struct info *in)
{
	char date[64] = "?";
	time_t secs;
	struct tm tm;

	if (!in->meta_seen) {
		printf("meta: none (the trace lost its first records)\n");
		return;
	}
	secs = in->start_real_ns / 1000000000ull;
	if (gmtime_r(&secs, &tm))
		strftime(date, sizeof(date), "%Y-%m-%d %H:%M:%S UTC", &tm);
	printf("meta:\n"
	       "  luaprof version:  %s\n"
	       "  command line:     %s\n"
	       "  target:           %s\n"
	       "  host:             %s\n"
	       "  kernel:           %s\n"
	       "  rate:             %" PRIu32 " Hz\n"
	       "  clock:            %s\n"
	       "  started:          %s\n"
	       "  follow children:  %s\n",
	       in->version, in->cmdline, in->target, in->hostname, in->kernel,
	       in->rate_hz, in->clock, date,
	       in->meta_flags & LP_META_FOLLOW_CHILDREN ? "yes" : "no");
}

static void print_procs(const struct info *in)
{
	char joined[64], exit_at[32];

	printf("processes: %zu\n", in->procs.len);
	if (!in->procs.len)
		return;
	printf("  %7s %7s  %-16s %-15s %10s %9s  %s\n", "PID", "PPID", "COMM",
	       "JOINED", "EXIT", "SAMPLES", "EXE");
	for (size_t i = 0; i < in->procs.len; i++) {
		const struct proc *p = &in->procs.v[i];

		procs_joined(p, joined, sizeof(joined));
		if (p->exited)
			snprintf(exit_at, sizeof(exit_at), "%+.3f s",
				 rel_s(in, p->exit_ns));
		else
			snprintf(exit_at, sizeof(exit_at), "-");
		printf("  %7" PRIu32 " %7" PRIu32 "  %-16s %-15s %10s %9" PRIu64
		       "  %s\n",
		       p->pid, p->ppid, p->comm ? p->comm : "?", joined,
		       exit_at, p->samples, p->exe && p->exe[0] ? p->exe : "?");
	}
}

/* Each process's Lua VM: which, and where its offsets came from. */
static void print_vms(const struct info *in)
{
	if (!in->nvms)
		return;
	printf("Lua VMs: %zu\n", in->nvms);
	for (size_t i = 0; i < in->nvms; i++) {
		const struct proc *p = procs_find(&in->procs, in->vms[i].pid);
		const char *comm = p && p->comm ? p->comm : "?";

		printf("  pid %" PRIu32 " (", in->vms[i].pid);
		esc_fputs(comm, stdout);
		printf("): %s\n", in->vms[i].text);
	}
}

/* Events of kinds other than CPU samples, if any: what --kind shows. */
static void print_events(const struct info *in)
{
	const char *sep = "events:";

	for (uint32_t i = 1; i <= LP_KIND_MAX; i++) {
		uint32_t k = i % LP_KIND_MAX; /* the kinds not known (0) last */
		const struct lp_kind_info *ki = lp_kind_info(k);

		if (!in->events[k])
			continue;
		if (ki)
			printf("%s %" PRIu64 " %s (%" PRIu64 " %s)", sep, in->events[k], ki->name,
			       in->weights[k], ki->unit);
		else
			printf("%s %" PRIu64 " of kinds this luaprof does not know", sep,
			       in->events[k]);
		sep = ",";
	}
	if (sep[0] == ',')
		printf("\n");
}

static void print_info(const char *path, const struct info *in,
		       const struct trace_reader_stats *st)
{
	const uint64_t *codecs = st->codec_chunks;
	uint64_t checked = 0, lost, taken;

	lost = 0;
	for (size_t i = 0; i < sizeof(in->lost) / sizeof(in->lost[0]); i++)
		lost = count_add(lost, in->lost[i]);
	taken = count_add(lost, in->samples);
	printf("trace: %s\n", path);
	printf("format: version %" PRIu32 ", incompat features 0x%" PRIx32
	       ", compat features 0x%" PRIx32 "\n",
	       st->version, st->incompat, st->compat);
	printf("codecs:");
	for (int c = 0; c <= LP_CODEC_ZLIB; c++)
		if (codecs[c])
			printf(" %s (%" PRIu64 " chunks)", lp_codec_name(c), codecs[c]);
	if (codecs[LP_CODEC_ZLIB + 1])
		printf(" unknown (%" PRIu64 " chunks)", codecs[LP_CODEC_ZLIB + 1]);
	for (int c = 0; c <= LP_CODEC_ZLIB + 1; c++)
		checked += codecs[c];
	if (!checked)
		printf(" unknown");
	printf("\n");
	print_meta(in);
	print_procs(in);
	print_vms(in);
	if (in->samples)
		printf("time span: %+.3f .. %+.3f s from start (%.3f s)\n",
		       rel_s(in, in->first_ns), rel_s(in, in->last_ns),
		       (in->last_ns - in->first_ns) / 1e9);
	else
		printf("time span: no samples\n");
	printf("samples: %" PRIu64 " (kernel stack unreadable in %" PRIu64
	       ", user stack unreadable in %" PRIu64 ")\n",
	       in->samples, in->kstack_failed, in->ustack_failed);
	print_events(in);
	for (size_t i = 0; i < in->procs.len; i++)
		if (in->procs.v[i].samples)
			printf("  pid %" PRIu32 ": %" PRIu64 "\n",
			       in->procs.v[i].pid, in->procs.v[i].samples);
	print_ustops(in);
	print_lua_cuts(in);
	printf("lost: %" PRIu64, lost);
	if (lost)
		printf(" (%.2f%% of %" PRIu64 "; ring buffer full %" PRIu64
		       ", recorder could not keep %" PRIu64 ", other %" PRIu64 ")",
		       100.0 * lost / taken, taken,
		       in->lost[LP_LOST_RINGBUF], in->lost[LP_LOST_WRITE],
		       in->lost[0]);
	if (in->lost[LP_LOST_BUSY])
		printf(" (%" PRIu64 " came while another event was being taken: ticks in "
		       "luaprof's own probe, its cost)",
		       in->lost[LP_LOST_BUSY]);
	if (in->lost[LP_LOST_UNTRACKED])
		printf(" (%" PRIu64 " waits not measured: off-CPU or Lua-land, their start "
		       "not kept)", in->lost[LP_LOST_UNTRACKED]);
	printf("\nstacks defined: %" PRIu64 " (kernel %" PRIu64 ", user %" PRIu64,
	       in->stacks[0] + in->stacks[1] + in->stacks[2],
	       in->stacks[LP_STACK_KERNEL], in->stacks[LP_STACK_USER]);
	if (in->gap_stacks)
		printf(", %" PRIu64 " of them with frames unseen: [unknown frames]",
		       in->gap_stacks);
	printf(")\n");
	printf("mapping records: %" PRIu64 " (%" PRIu64 " mappings)\n",
	       in->maps_records, in->mappings);
	printf("kernel symbols: %" PRIu64 "\n", in->ksyms);
	print_objects(in);
	print_lua_sources(in);
	if (in->traces)
		printf("compiled traces: %" PRIu64 ", with snapshots %" PRIu64 " (%" PRIu64
		       " ranges of code, %" PRIu64 " not decoded, %" PRIu64 " marked as "
		       "inlined code not told apart, %" PRIu64 " bytes); without %" PRIu64
		       ": their samples show the function the trace runs in\n",
		       in->traces, in->traces_snapped, in->snaps, in->snaps_undecoded,
		       in->snaps_marked, in->snap_bytes, in->traces > in->traces_snapped ?
		       in->traces - in->traces_snapped : 0);
	printf("chunks: %" PRIu64 " good, %" PRIu64 " bad, %" PRIu64
	       " skipped (unknown type)", st->chunks, st->bad_chunks, st->skipped_chunks);
	if (st->compat & LP_COMPAT_CHUNK_SEQ)
		printf(", %" PRIu64 " missing from the sequence, %" PRIu64
		       " repeated or out of order (skipped)", st->missing_chunks,
		       st->disordered_chunks);
	else
		printf(" (not numbered: an older trace)");
	printf("\n");
	if (st->retired_records)
		printf("retired records: %" PRIu64 " (DWARF as an older luaprof embedded "
		       "it, no longer read: native frames get no source lines from it)\n",
		       st->retired_records);
	if (st->bad_records || st->unknown_records || st->garbage_bytes)
		printf("damage: %" PRIu64 " records undecodable, %" PRIu64
		       " of unknown type, %" PRIu64 " bytes skipped\n",
		       st->bad_records, st->unknown_records, st->garbage_bytes);
	printf("file bytes: %" PRIu64 "\n", st->file_bytes);
	printf("raw payload bytes: %" PRIu64 " (stored %" PRIu64 ")\n",
	       st->raw_bytes, st->stored_bytes);
	if (st->stored_bytes)
		printf("compression ratio: %.2f\n",
		       (double)st->raw_bytes / st->stored_bytes);
	else
		printf("compression ratio: n/a\n");
	if (!in->footer_seen) {
		printf("status: cut short (no footer%s): %" PRIu64
		       " samples recovered from %" PRIu64 " chunks\n",
		       st->truncated ? ", the file ends inside a chunk" : "",
		       in->samples, st->chunks);
	} else {
		/* The reader's footer is the first one: a repeated chunk may
		 * hold another. */
		printf("status: %s (footer: %" PRIu64 " samples, %" PRIu64
		       " lost, %" PRIu64 " chunks; read %" PRIu64 " samples in %"
		       PRIu64 " chunks)\n", health_whole(st) ? "complete" : "damaged",
		       st->footer.samples, st->footer.lost, st->footer.chunks,
		       st->samples, st->chunks);
	}
}

static void info_free(struct info *in)
{
	free(in->version);
	free(in->cmdline);
	free(in->target);
	free(in->hostname);
	free(in->kernel);
	free(in->clock);
	procs_free(&in->procs);
	for (size_t i = 0; i < in->nobjs; i++)
		free(in->objs[i].path);
	free(in->objs);
	free(in->lua_cut_ids);
	htab_free(&in->lua_cut_h);
	for (size_t i = 0; i < in->nvms; i++)
		free(in->vms[i].text);
	free(in->vms);
}

int cmd_info(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct trace_reader *reader = NULL;
	struct trace_reader_stats st;
	struct info in = { 0 };
	struct lp_record rec;
	char errbuf[256] = "";
	const char *path;
	int c, err, ret = 1;

	optind = 0; /* glibc: start over, as a command may run twice */
	opterr = 0;
	while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		if (c == 'h') {
			fputs(usage_line, stdout);
			fputs("\nPrints what a luaprof trace holds: format, recording "
			      "metadata, processes,\nsamples and losses, the symbols and "
			      "source lines embedded per object (and\nlines left out over "
			      "a bound), and whether the file is complete or damaged.\n\n"
			      "  -h, --help  print this help and exit\n",
			      stdout);
			return 0;
		}
		fprintf(stderr, PROG ": unknown option '%s'\n%s",
			argv[optind - 1], usage_line);
		return 2;
	}
	if (argc - optind != 1) {
		fprintf(stderr, PROG ": %s\n%s",
			argc - optind ? "expected one TRACE, got more" :
			"no TRACE given", usage_line);
		return 2;
	}
	path = argv[optind];
	err = trace_reader_open(&reader, path, errbuf, sizeof(errbuf));
	if (err) {
		fprintf(stderr, PROG ": %s: %s\n", path,
			errbuf[0] ? errbuf : strerror(-err));
		return 1;
	}
	while ((err = trace_reader_next(reader, &rec)) == 1) {
		err = on_record(&in, &rec, trace_reader_record_bytes(reader));
		if (err)
			break;
	}
	if (err < 0) {
		fprintf(stderr, PROG ": %s: %s\n", path, strerror(-err));
		goto cleanup;
	}
	trace_reader_get_stats(reader, &st);
	print_info(path, &in, &st);
	health_warn(PROG, NULL, &st);
	ret = fflush(stdout) || ferror(stdout) ? 1 : 0;
	if (ret)
		fprintf(stderr, PROG ": standard output: write error\n");
cleanup:
	trace_reader_close(reader);
	info_free(&in);
	return ret;
}

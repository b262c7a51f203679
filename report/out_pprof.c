/*
 * out_pprof.c - `--format pprof`: the profile as pprof's profile.proto,
 * gzipped, for `go tool pprof`, Grafana Pyroscope and Parca.
 *
 * What luaprof's frames become (profile.proto's names):
 *
 *   Function  one per function as `report` names it without --lines
 *             ("handle (app.lua:12)", "ngx_http_lua_run_thread"):
 *             filename the Lua chunk or the native source file,
 *             start_line where a Lua function is defined.  Naming
 *             functions as `report --format top` does makes pprof -top's
 *             shares the same as luaprof's.
 *   Location  one per frame split by the line it runs (formats.h's
 *             OUT_LINES): one Line of its function with that line, and
 *             for native code the Mapping of its object.
 *   Mapping   one per object (path, GNU build-id), and [kernel.kallsyms]
 *             for kernel frames; has_functions is set, as every frame is
 *             symbolized already, so pprof never looks for the binaries.
 *             The first is the executable of the process with the most
 *             samples, as pprof takes the first for the main binary
 *             (its "File:" line): nginx, not the first library named.
 *   Sample    one per (stack, thread, VM state, trace): location ids
 *             leaf first; two values, as the kind shown names them
 *             (format/kinds.h): for CPU samples/count and cpu/nanoseconds
 *             (the count times the sampling period), for another kind
 *             its events counted and their weight (off-CPU:
 *             waits/count, off_cpu/nanoseconds); labels pid, tid
 *             (numbers), process and vmstate (strings).
 *
 * The message is built in memory (pbuf.h) and deflated with zlib's gzip
 * wrapper, as `go tool pprof` reads it.
 *
 * profile.proto fields used (field numbers are the encoding):
 *   Profile   1 sample_type  2 sample  3 mapping  4 location  5 function
 *             6 string_table  9 time_nanos  10 duration_nanos
 *             11 period_type  12 period  13 comment  14 default_sample_type
 *   ValueType 1 type  2 unit                (string table indices)
 *   Sample    1 location_id (packed)  2 value (packed)  3 label
 *   Label     1 key  2 str  3 num
 *   Mapping   1 id  2 memory_start  3 memory_limit  4 file_offset
 *             5 filename  6 build_id  7 has_functions  8 has_filenames
 *             9 has_line_numbers
 *   Location  1 id  2 mapping_id  3 address  4 line
 *   Line      1 function_id  2 line
 *   Function  1 id  2 name  3 system_name  4 filename  5 start_line
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "lib/escape.h"
#include "report/formats.h"
#include "lib/htab.h"
#include "report/pbuf.h"
#include "report/vmstate.h"

#define NONE UINT32_MAX

struct skey {
	uint32_t stack, tid, proc, vmclass, trace;
	uint64_t count, ns;
};

struct pp {
	const struct profile *p;
	struct pbuf b;
	struct strtab strs;   /* the string table: id = index */
	uint32_t *fn_of_name; /* name id -> function id, 0 none yet */
	uint32_t *fn_frame;   /* name id -> the frame that made it a function:
			       * its file and start line are the function's */
	uint32_t *loc_of_name; /* name id -> location id, 0 none yet */
	uint32_t nfn, nloc;
	uint32_t kernel_map;   /* mapping id of [kernel.kallsyms], 0 none */
	uint32_t main_map;     /* index of the main binary's in infos, NONE */
	struct skey *keys;
	size_t nkeys, capkeys;
	struct htab keys_h;
	char *clean;           /* utf8_clean() scratch */
	size_t capclean;
	/* What every sample's labels repeat, interned once. */
	uint32_t s_pid, s_tid, s_process, s_vmstate;
	uint32_t *s_comm;      /* proc index -> its name's string + 1 */
	uint32_t s_class[VMC_MAX]; /* vm_class -> its name's string + 1 */
};

/* The string table index of s, interned. */
static uint32_t str(struct pp *x, const char *s)
{
	uint32_t id = 0;

	if (!x->b.err)
		x->b.err = strtab_intern(&x->strs, s, strlen(s), &id);
	return id;
}

static uint32_t name_str(struct pp *x, uint32_t name)
{
	return name == NONE ? 0 : str(x, strtab_get(&x->p->names, name));
}

/* ---- samples, aggregated ------------------------------------------------ */

static uint64_t key_hash(const struct profile_sample *s)
{
	return hash_fields((uint64_t)s->stack << 32 | s->tid,
			   (uint64_t)s->proc << 32 | s->vmclass, s->trace, 0);
}

static int add_key(struct pp *x, const struct profile_sample *s, uint64_t hash)
{
	uint64_t ns = profile_sample_value(x->p, s);
	/* ticks, or what an event stands for (alloc's objects; else 1) */
	uint64_t n = x->p->kind == LP_KIND_CPU ? s->weight : s->count;
	struct htab_probe pr;
	struct skey *k;
	int64_t i;
	int err;

	htab_probe_start(&x->keys_h, hash, &pr);
	while ((i = htab_probe_next(&x->keys_h, &pr)) >= 0) {
		k = &x->keys[i];
		if (k->stack == s->stack && k->tid == s->tid && k->proc == s->proc &&
		    k->vmclass == s->vmclass && k->trace == s->trace) {
			k->count += n;
			k->ns += ns;
			return 0;
		}
	}
	err = GROW(x->keys, x->capkeys, x->nkeys + 1);
	if (!err)
		err = htab_insert(&x->keys_h, hash, x->nkeys);
	if (err)
		return err;
	x->keys[x->nkeys++] = (struct skey){ .stack = s->stack, .tid = s->tid,
					     .proc = s->proc, .vmclass = s->vmclass,
					     .trace = s->trace, .count = n, .ns = ns };
	return 0;
}

/* Every sample into its key, in sample order (keys are numbered as first
 * met).  On a wide trace the keys outgrow the caches, so the table's
 * slot of the sample AHEAD on is fetched, and the key that slot names
 * when it is AHEAD / 2 on: a sample's lookup then finds both read. */
#define AHEAD 16

static int add_keys(struct pp *x)
{
	const struct profile_sample *v = x->p->samples_v;
	size_t n = x->p->nsamples;
	uint64_t ring[AHEAD]; /* ring[j % AHEAD]: sample j's hash, j in [i, i + AHEAD) */
	int err = 0;

	for (size_t j = 0; j < AHEAD && j < n; j++)
		ring[j] = key_hash(&v[j]);
	for (size_t i = 0; i < n && !err; i++) {
		uint64_t hash = ring[i % AHEAD];

		if (i + AHEAD < n) {
			ring[i % AHEAD] = key_hash(&v[i + AHEAD]);
			htab_prefetch(&x->keys_h, ring[i % AHEAD]);
		}
		if (i + AHEAD / 2 < n) {
			int64_t k = htab_peek(&x->keys_h, ring[(i + AHEAD / 2) % AHEAD]);

			if (k >= 0)
				__builtin_prefetch(&x->keys[k]);
		}
		err = add_key(x, &v[i], hash);
	}
	return err;
}

/* ---- functions and locations, numbered as samples first use them ------ */

static uint32_t location(struct pp *x, uint32_t name)
{
	if (!x->loc_of_name[name]) {
		struct frame_info fi = frameinfo_get(&x->p->infos, name);

		x->loc_of_name[name] = ++x->nloc;
		if (!x->fn_of_name[fi.func]) {
			x->fn_of_name[fi.func] = ++x->nfn;
			x->fn_frame[fi.func] = name;
		}
		if (fi.kind == FRAME_KERNEL && !x->kernel_map)
			x->kernel_map = x->p->infos.nmaps + 1;
	}
	return x->loc_of_name[name];
}

static void write_label_num(struct pp *x, uint32_t key, uint64_t num)
{
	size_t m = pb_begin(&x->b, 3);

	pb_uint(&x->b, 1, key);
	pb_uint(&x->b, 3, num);
	pb_end(&x->b, m);
}

static void write_label_str(struct pp *x, uint32_t key, uint32_t val)
{
	size_t m = pb_begin(&x->b, 3);

	pb_uint(&x->b, 1, key);
	pb_uint(&x->b, 2, val);
	pb_end(&x->b, m);
}

/* The strings of sample k's labels, interned the first time each is
 * needed (the order the string table then has is the same as when each
 * label interned its own). */
static void label_strings(struct pp *x, const struct skey *k, uint32_t *comm,
			  uint32_t *class)
{
	const struct proc *pr = &x->p->procs->v[k->proc];

	if (!x->s_pid) {
		x->s_pid = str(x, "pid");
		x->s_tid = str(x, "tid");
	}
	if (!x->s_process)
		x->s_process = str(x, "process");
	if (!x->s_comm[k->proc])
		x->s_comm[k->proc] = str(x, pr->comm && pr->comm[0] ? pr->comm : "?") + 1;
	if (!x->s_vmstate)
		x->s_vmstate = str(x, "vmstate");
	if (k->vmclass >= VMC_MAX) {
		*class = str(x, vmstate_class_name(k->vmclass));
	} else {
		if (!x->s_class[k->vmclass])
			x->s_class[k->vmclass] = str(x, vmstate_class_name(k->vmclass)) + 1;
		*class = x->s_class[k->vmclass] - 1;
	}
	*comm = x->s_comm[k->proc] - 1;
}

static void write_sample(struct pp *x, const struct skey *k)
{
	const struct proc *pr = &x->p->procs->v[k->proc];
	const uint32_t *v;
	uint32_t n, comm, class;
	size_t m, ids;

	v = seqtab_get(&x->p->stacks, k->stack, &n);
	m = pb_begin(&x->b, 2);
	ids = pb_begin(&x->b, 1);
	for (uint32_t i = n; i-- > 0;)
		pb_varint(&x->b, location(x, v[i]));
	pb_end(&x->b, ids);
	ids = pb_begin(&x->b, 2);
	pb_varint(&x->b, k->count);
	pb_varint(&x->b, k->ns);
	pb_end(&x->b, ids);
	label_strings(x, k, &comm, &class);
	write_label_num(x, x->s_pid, pr->pid);
	write_label_num(x, x->s_tid, k->tid);
	write_label_str(x, x->s_process, comm);
	write_label_str(x, x->s_vmstate, class);
	pb_end(&x->b, m);
}

/* The index in infos of the mapping of the executable of the process
 * with the most samples, or NONE. */
static uint32_t main_mapping(const struct profile *p)
{
	const struct proc *best = NULL;
	const char *path;

	for (size_t i = 0; i < p->procs->len; i++) {
		const struct proc *pr = &p->procs->v[i];

		if (pr->exe && (!best || pr->samples > best->samples))
			best = pr;
	}
	for (uint32_t i = 0; best && i < p->infos.nmaps; i++) {
		path = strtab_get(&p->names, p->infos.maps[i].path);
		if (path && !strcmp(path, best->exe))
			return i;
	}
	return NONE;
}

/* The mapping id of infos' mapping i: the main binary's is 1. */
static uint32_t mapping_id(const struct pp *x, uint32_t i)
{
	if (x->main_map == NONE || i > x->main_map)
		return i + 1;
	return i == x->main_map ? 1 : i + 2;
}

static void write_mapping(struct pp *x, uint32_t i)
{
	const struct frame_infos *fi = &x->p->infos;
	size_t m = pb_begin(&x->b, 3);

	pb_uint(&x->b, 1, mapping_id(x, i));
	pb_uint(&x->b, 5, name_str(x, fi->maps[i].path));
	pb_uint(&x->b, 6, name_str(x, fi->maps[i].build_id));
	pb_uint(&x->b, 7, 1);
	pb_end(&x->b, m);
}

static void write_mappings(struct pp *x)
{
	size_t m;

	/* The main binary's first, then the others in their order. */
	x->main_map = main_mapping(x->p);
	if (x->main_map != NONE)
		write_mapping(x, x->main_map);
	for (uint32_t i = 0; i < x->p->infos.nmaps; i++)
		if (i != x->main_map)
			write_mapping(x, i);
	if (x->kernel_map) {
		m = pb_begin(&x->b, 3);
		pb_uint(&x->b, 1, x->kernel_map);
		pb_uint(&x->b, 5, str(x, "[kernel.kallsyms]"));
		pb_uint(&x->b, 7, 1);
		pb_end(&x->b, m);
	}
}

static void write_locations(struct pp *x)
{
	for (uint32_t name = 0; name < x->p->names.len; name++) {
		struct frame_info fi;
		size_t m, l;

		if (!x->loc_of_name[name])
			continue;
		fi = frameinfo_get(&x->p->infos, name);
		m = pb_begin(&x->b, 4);
		pb_uint(&x->b, 1, x->loc_of_name[name]);
		if (fi.mapping != NONE)
			pb_uint(&x->b, 2, mapping_id(x, fi.mapping));
		else if (fi.kind == FRAME_KERNEL)
			pb_uint(&x->b, 2, x->kernel_map);
		l = pb_begin(&x->b, 4);
		pb_uint(&x->b, 1, x->fn_of_name[fi.func]);
		pb_uint(&x->b, 2, fi.line ? fi.line : fi.start_line);
		pb_end(&x->b, l);
		pb_end(&x->b, m);
	}
}

static void write_functions(struct pp *x)
{
	for (uint32_t name = 0; name < x->p->names.len; name++) {
		struct frame_info fi;
		uint32_t s;
		size_t m;

		if (!x->fn_of_name[name])
			continue;
		fi = frameinfo_get(&x->p->infos, x->fn_frame[name]);
		s = name_str(x, name);
		m = pb_begin(&x->b, 5);
		pb_uint(&x->b, 1, x->fn_of_name[name]);
		pb_uint(&x->b, 2, s);
		pb_uint(&x->b, 3, s);
		pb_uint(&x->b, 4, name_str(x, fi.file));
		pb_uint(&x->b, 5, fi.start_line);
		pb_end(&x->b, m);
	}
}

static void write_value_type(struct pp *x, uint32_t field, const char *type,
			     const char *unit)
{
	size_t m = pb_begin(&x->b, field);

	pb_uint(&x->b, 1, str(x, type));
	pb_uint(&x->b, 2, str(x, unit));
	pb_end(&x->b, m);
}

/* The string table goes last: every field before it interned its
 * strings.  Each is written as clean UTF-8 (Go checks protobuf strings). */
static void write_strings(struct pp *x)
{
	for (size_t i = 0; i < x->strs.len && !x->b.err; i++) {
		const char *s = strtab_get(&x->strs, i);
		size_t need = 3 * strlen(s) + 1, n;

		x->b.err = GROW(x->clean, x->capclean, need);
		if (x->b.err)
			break;
		n = utf8_clean(s, x->clean);
		pb_bytes(&x->b, 6, x->clean, n);
	}
}

static void write_profile(struct pp *x)
{
	const struct profile *p = x->p;
	const struct lp_kind_info *k = lp_kind_info(p->kind);
	char comment[512];

	str(x, ""); /* string 0 is always "" */
	write_value_type(x, 1, k->pp_count, "count");
	write_value_type(x, 1, k->pp_value, k->pp_unit);
	for (size_t i = 0; i < x->nkeys; i++)
		write_sample(x, &x->keys[i]);
	write_mappings(x);
	write_locations(x);
	write_functions(x);
	if (p->ntraces)
		pb_uint(&x->b, 9, p->traces[0].start_real_ns);
	pb_uint(&x->b, 10, p->span_ns);
	/* The period: CPU's sampling period; events have none. */
	if (p->kind == LP_KIND_CPU) {
		write_value_type(x, 11, "cpu", "nanoseconds");
		pb_uint(&x->b, 12, profile_sample_ns(p, 0));
	}
	for (size_t i = 0; i < p->ntraces; i++) {
		snprintf(comment, sizeof(comment), "luaprof trace %s: %s", p->traces[i].path,
			 p->traces[i].cmdline ? p->traces[i].cmdline : "");
		pb_uint(&x->b, 13, str(x, comment));
	}
	pb_uint(&x->b, 14, str(x, k->pp_value));
	write_strings(x);
}

static int gzip_out(FILE *out, const uint8_t *v, size_t len)
{
	uint8_t buf[65536];
	z_stream z = { 0 };
	int zr;

	/* 15 + 16: a gzip wrapper; speed over size, as Go's own profiles. */
	if (deflateInit2(&z, Z_BEST_SPEED, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK)
		return -ENOMEM;
	z.next_in = (uint8_t *)v;
	do {
		size_t chunk = len > (1u << 30) ? 1u << 30 : len;

		z.avail_in = chunk;
		len -= chunk;
		do {
			z.next_out = buf;
			z.avail_out = sizeof(buf);
			zr = deflate(&z, len ? Z_NO_FLUSH : Z_FINISH);
			fwrite(buf, 1, sizeof(buf) - z.avail_out, out);
		} while (z.avail_out == 0);
	} while (len);
	deflateEnd(&z);
	return zr == Z_STREAM_END ? 0 : -EIO;
}

int out_pprof(FILE *out, const struct profile *p, const struct out_opts *o)
{
	struct pp x = { .p = p };
	size_t nn = p->names.len ? p->names.len : 1;
	int err = 0;

	(void)o;
	x.fn_of_name = calloc(nn, sizeof(*x.fn_of_name));
	x.loc_of_name = calloc(nn, sizeof(*x.loc_of_name));
	x.fn_frame = calloc(nn, sizeof(*x.fn_frame));
	x.s_comm = calloc(p->procs->len ? p->procs->len : 1, sizeof(*x.s_comm));
	if (!x.fn_of_name || !x.loc_of_name || !x.fn_frame || !x.s_comm) {
		err = -ENOMEM;
		goto cleanup;
	}
	err = add_keys(&x);
	if (!err) {
		write_profile(&x);
		err = x.b.err;
	}
	if (!err)
		err = gzip_out(out, x.b.v, x.b.len);
cleanup:
	pb_free(&x.b);
	strtab_free(&x.strs);
	free(x.fn_of_name);
	free(x.loc_of_name);
	free(x.fn_frame);
	free(x.s_comm);
	free(x.keys);
	htab_free(&x.keys_h);
	free(x.clean);
	return err;
}

/*
 * synth.c - writes a synthetic trace of N samples with the format library,
 * for bench/views.sh: the report's formats are timed on a trace far longer
 * than a test records, shaped like a busy OpenResty worker pool.
 *
 *   build/bench/synth [-n SAMPLES] [-s SEED] [-k DIVISOR] OUT.lp
 *
 * Shape: one process ("synthd", pid 1000) of four threads at 999 Hz each,
 * so 1M samples span about 250 s.  Its executable is an embedded object
 * (OBJECT + SYMTAB: 600 native functions), so native frames have names
 * without the file; a LuaJIT VM of 400 Lua functions in 24 chunks, each
 * calling four others by global name, so Lua frames are named from their
 * call sites as in a real trace; kernel stacks named by KSYMS.  About 70%
 * of samples run Lua (3000 distinct Lua stacks, each nearly always under
 * the same two of 150 host stacks), 20%
 * native code only (2000 stacks), 10% add a kernel stack.  Stacks are
 * picked with a skew (u^3), so a few are hot and most are rare, as in
 * real profiles.  The same seed writes the same trace.  -k divides the
 * numbers of distinct stacks of each kind (a narrower program: -k 10
 * gives some 12,000 distinct stacks instead of 120,000).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "format/trace.h"
#include "lib/lua_bc.h"

#define PID 1000
#define NTHREADS 4
#define RATE 999
#define EXE "/opt/synth/bin/synthd"
#define MAP_START 0x400000ull
#define MAP_END 0x800000ull
#define NFUNC 600       /* native functions, 0x200 bytes each from FUNC0 */
#define FUNC0 0x401000ull
#define VM_START 0x700000ull /* the interpreter's code */
#define VM_END 0x710000ull
#define NPROTO 400
#define NCHUNK 24
#define NCALLEE 4       /* call sites per Lua function */
/* Distinct stacks of each kind, divided by -k. */
static uint32_t NLSTACK = 3000;
static uint32_t NHOST = 150;    /* native stacks that enter the VM */
static uint32_t NNATIVE = 2000;
static uint32_t NKSTACK = 300;
#define NKSYM 400
#define KBASE 0xffffffff81000000ull
#define NFF 8

static uint64_t rng = 88172645463325252ull;

static uint64_t next_rand(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

static double uniform(void)
{
	return (next_rand() >> 11) * (1.0 / 9007199254740992.0);
}

/* An index in [0, n), small ones far likelier: a few hot stacks. */
static uint32_t skewed(uint32_t n)
{
	double u = uniform();

	return (uint32_t)(u * u * u * n);
}

static uint32_t below(uint32_t n)
{
	return next_rand() % n;
}

static int put(struct trace_writer *w, const struct lp_record *r)
{
	int err = trace_write(w, r);

	if (err)
		fprintf(stderr, "synth: write: %s\n", strerror(-err));
	return err;
}

static int write_header(struct trace_writer *w)
{
	static const uint8_t build_id[20] = { 0x5e, 0x17, 0x4d, 0x00, 0xba, 0x5e };
	struct lp_record r = { .type = LP_REC_META };
	struct lp_mapping m = { .start = MAP_START, .end = MAP_END, .pgoff = 0,
				.prot = LP_PROT_READ | LP_PROT_EXEC, .path = EXE,
				.object = 1 };
	struct lp_objseg seg = { .offset = 0, .filesz = MAP_END - MAP_START,
				 .vaddr = MAP_START };
	static struct lp_objsym syms[NFUNC];
	static char names[NFUNC][32];
	int err;

	r.u.meta = (struct lp_meta){ .version = "synth", .cmdline = "synthd --workers 4",
				     .target = "pid 1000", .hostname = "synth",
				     .kernel = "6.1.0-synth", .clock = "CLOCK_MONOTONIC",
				     .rate_hz = RATE, .start_mono_ns = 1000000000ull,
				     .start_real_ns = 1700000000000000000ull };
	err = put(w, &r);
	r.type = LP_REC_PROCESS;
	r.u.process = (struct lp_process){ .pid = PID, .ppid = 1, .time_ns = 1000000000ull,
					   .flags = LP_PROC_EXISTING, .comm = "synthd",
					   .exe = EXE };
	err = err ?: put(w, &r);
	r.type = LP_REC_OBJECT;
	r.u.object = (struct lp_object){ .id = 1, .path = EXE, .id_kind = LP_OBJID_BUILD_ID,
					  .ident_len = sizeof(build_id), .ident = build_id,
					  .size = MAP_END - MAP_START };
	err = err ?: put(w, &r);
	for (uint32_t i = 0; i < NFUNC; i++) {
		snprintf(names[i], sizeof(names[i]), "synth_func_%u", i);
		syms[i] = (struct lp_objsym){ .addr = FUNC0 + i * 0x200ull, .size = 0x200,
					      .name = names[i] };
	}
	r.type = LP_REC_SYMTAB;
	r.u.symtab = (struct lp_symtab){ .object = 1, .nseg = 1, .segs = &seg,
					  .nsym = NFUNC, .syms = syms };
	err = err ?: put(w, &r);
	r.type = LP_REC_MAPS;
	r.u.maps = (struct lp_maps){ .pid = PID, .time_ns = 1000000000ull,
				     .flags = LP_MAPS_REPLACE, .count = 1, .mappings = &m };
	return err ?: put(w, &r);
}

static int write_lua(struct trace_writer *w)
{
	static const char *const ffnames[NFF] = { "Lua", "C", "string.format", "string.gsub",
						  "table.concat", "pairs", "ipairs", "tostring" };
	static uint32_t bc[NPROTO][2 + 2 * NCALLEE], lines[NPROTO][2 + 2 * NCALLEE];
	static struct lp_proto_kstr kstr[NPROTO][NCALLEE];
	static char fnames[NPROTO][32], chunks[NCHUNK][64];
	struct lp_record r = { .type = LP_REC_LUAJIT };
	int err;

	r.u.luajit = (struct lp_luajit){ .pid = PID, .G = 0x10000, .vm_start = VM_START,
					 .vm_end = VM_END, .flags = LP_LUAJIT_GC64,
					 .name = "LuaJIT 2.1 (synthetic)", .source = "synth",
					 .nff = NFF, .ffnames = ffnames };
	err = put(w, &r);
	for (uint32_t c = 0; c < NCHUNK; c++)
		snprintf(chunks[c], sizeof(chunks[c]), "@/srv/app/module%02u.lua", c);
	for (uint32_t i = 0; i < NPROTO; i++)
		snprintf(fnames[i], sizeof(fnames[i]), "handler_%u", i);
	/* Function i calls functions (i * 7 + k * 13 + 1) % NPROTO by global
	 * name: GGET then CALL per call site; call site k ends at pc 3 + 2k. */
	for (uint32_t i = 0; i < NPROTO && !err; i++) {
		uint32_t first = 10 + (i / NCHUNK) * 20, n = 0;

		bc[i][n] = LBC_AD(LBC_FUNCF, 4, 0);
		lines[i][n++] = first;
		for (uint32_t k = 0; k < NCALLEE; k++) {
			uint32_t callee = (i * 7 + k * 13 + 1) % NPROTO;

			kstr[i][k] = (struct lp_proto_kstr){ .index = k, .str = fnames[callee] };
			bc[i][n] = LBC_AD(LBC_GGET, 0, k);
			lines[i][n++] = first + 1 + k;
			bc[i][n] = LBC_ABC(LBC_CALL, 0, 1, 1);
			lines[i][n++] = first + 1 + k;
		}
		bc[i][n] = LBC_AD(LBC_RET0, 0, 1);
		lines[i][n++] = first + 6;
		r.type = LP_REC_PROTO;
		r.u.proto = (struct lp_proto){ .id = i + 1, .addr = 0x20000 + i * 0x100,
					       .chunkname = chunks[i % NCHUNK],
					       .firstline = i < NCHUNK ? 0 : first,
					       .numline = 8, .nbc = n, .bc = bc[i],
					       .lines = lines[i], .nkstr = NCALLEE,
					       .kstr = kstr[i] };
		err = put(w, &r);
	}
	return err;
}

/* Lua stacks: a walk down the call graph from one of the chunks' main
 * functions (protos 1..NCHUNK), leaf first when written; sometimes a
 * builtin on top. */
static int write_lua_stacks(struct trace_writer *w)
{
	struct lp_lframe f[40];
	struct lp_record r = { .type = LP_REC_LUA_STACK };
	int err = 0;

	for (uint32_t s = 0; s < NLSTACK && !err; s++) {
		uint32_t depth = 2 + below(14), proto = below(NCHUNK), n = 0;
		uint32_t chain[20], sites[20];

		for (uint32_t d = 0; d < depth; d++) {
			uint32_t k = below(NCALLEE);

			chain[d] = proto;
			sites[d] = k;
			proto = (proto * 7 + k * 13 + 1) % NPROTO;
		}
		if (below(3) == 0)
			f[n++] = (struct lp_lframe){ .kind = LP_LFRAME_FF, .value = 2 + below(NFF - 2) };
		/* Each frame runs its call to the frame below it: the pc after
		 * that call site's CALL, from which the callee is named. */
		for (uint32_t d = depth; d-- > 0;)
			f[n++] = (struct lp_lframe){ .kind = LP_LFRAME_LUA,
						     .link = LP_LFRAME_LINK_LUA,
						     .value = chain[d] + 1,
						     .pc = 3 + 2 * sites[d] };
		f[n++] = (struct lp_lframe){ .kind = LP_LFRAME_ENTRY };
		r.u.lua_stack = (struct lp_lua_stack){ .id = s + 1, .depth = n, .frames = f };
		err = put(w, &r);
	}
	return err;
}

static uint64_t func_addr(uint32_t fn, int leaf)
{
	return FUNC0 + fn * 0x200ull + (leaf ? 0x40 : 0x80) + below(0x40);
}

/* User stacks, leaf first: host stacks (ids 1..NHOST) end in the VM,
 * native ones (ids 10001..) do not; kernel stacks from id 20001. */
static int write_stacks(struct trace_writer *w)
{
	struct lp_record r = { .type = LP_REC_STACK };
	uint64_t a[40];
	int err = 0;

	for (uint32_t s = 0; s < NHOST + NNATIVE && !err; s++) {
		int host = s < NHOST;
		uint32_t depth = (host ? 4 : 5) + below(host ? 10 : 20), n = 0;

		if (host) {
			if (below(4) == 0)
				a[n++] = func_addr(500 + below(100), 1); /* C called from Lua */
			a[n++] = VM_START + 0x100 + below(0x8000);
		}
		while (n < depth)
			a[n] = func_addr(3 + below(host ? 60 : 497), n == 0), n++;
		a[n++] = func_addr(2, 0); /* main */
		a[n++] = func_addr(1, 0); /* __libc_start_main, as it were */
		a[n++] = func_addr(0, 0); /* _start */
		r.u.stack = (struct lp_stack){ .id = host ? s + 1 : 10001 + s - NHOST,
					       .kind = LP_STACK_USER, .depth = n, .addrs = a };
		err = put(w, &r);
	}
	for (uint32_t s = 0; s < NKSTACK && !err; s++) {
		uint32_t depth = 3 + below(10);

		for (uint32_t i = 0; i < depth; i++)
			a[i] = KBASE + below(NKSYM) * 0x1000ull + 0x10;
		r.u.stack = (struct lp_stack){ .id = 20001 + s, .kind = LP_STACK_KERNEL,
					       .depth = depth, .addrs = a };
		err = put(w, &r);
	}
	return err;
}

static int write_samples(struct trace_writer *w, uint64_t nsamples)
{
	static const int32_t states[] = { ~0, ~0, ~0, 3, 5, 7, ~1, ~2 };
	struct lp_record r = { .type = LP_REC_SAMPLE };
	uint64_t t[NTHREADS];
	int err = 0;

	for (int i = 0; i < NTHREADS; i++)
		t[i] = 1000000000ull + i * 250000;
	for (uint64_t n = 0; n < nsamples && !err; n++) {
		uint32_t th = 0, kind = below(10);
		struct lp_sample *s = &r.u.sample;

		for (int i = 1; i < NTHREADS; i++)
			if (t[i] < t[th])
				th = i;
		/* About 1 ms apart, jittered; now and then a thread idles. */
		t[th] += 1000000000ull / RATE - 50000 + below(100000) +
			 (below(200) == 0 ? 20000000ull : 0);
		memset(s, 0, sizeof(*s));
		s->time_ns = t[th];
		s->pid = PID;
		s->tid = PID + th;
		s->cpu = th % 2;
		if (kind < 7) {
			/* A Lua stack nearly always runs under the same few
			 * host stacks, as a handler under nginx's phases. */
			s->lstack = 1 + skewed(NLSTACK);
			s->ustack = 1 + (below(10) ? (s->lstack * 31 + below(2)) % 12 :
					 skewed(NHOST));
			s->lua_state = LP_LUA_WALKED;
			s->vmstate = states[below(sizeof(states) / sizeof(states[0]))];
		} else {
			s->ustack = 10001 + skewed(NNATIVE);
			s->lua_state = LP_LUA_IDLE;
			s->vmstate = ~1;
		}
		if (kind == 9)
			s->kstack = 20001 + skewed(NKSTACK);
		err = put(w, &r);
	}
	return err;
}

static int write_ksyms(struct trace_writer *w)
{
	static struct lp_ksym syms[NKSYM];
	static char names[NKSYM][32];
	struct lp_record r = { .type = LP_REC_KSYMS };

	for (uint32_t i = 0; i < NKSYM; i++) {
		snprintf(names[i], sizeof(names[i]), "ksyn_%u", i);
		syms[i] = (struct lp_ksym){ .addr = KBASE + i * 0x1000ull, .name = names[i] };
	}
	r.u.ksyms = (struct lp_ksyms){ .count = NKSYM, .syms = syms };
	return put(w, &r);
}

int main(int argc, char **argv)
{
	unsigned long long n = 1000000;
	unsigned long k;
	struct trace_writer *w = NULL;
	int c, err;

	while ((c = getopt(argc, argv, "n:s:k:")) != -1) {
		switch (c) {
		case 'n':
			n = strtoull(optarg, NULL, 10);
			break;
		case 's':
			rng = strtoull(optarg, NULL, 10) * 2654435761ull + 1;
			break;
		case 'k':
			k = strtoul(optarg, NULL, 10);
			if (k < 1 || k > 100)
				goto usage;
			NLSTACK /= k;
			NHOST = NHOST / k > 12 ? NHOST / k : 12;
			NNATIVE /= k;
			NKSTACK /= k;
			break;
		default:
			goto usage;
		}
	}
	if (optind != argc - 1)
		goto usage;
	err = trace_writer_open(&w, argv[optind], LP_CODEC_LZ4);
	if (err) {
		fprintf(stderr, "synth: %s: %s\n", argv[optind], strerror(-err));
		return 1;
	}
	err = write_header(w) ?: write_lua(w) ?: write_lua_stacks(w) ?: write_stacks(w) ?:
	      write_samples(w, n) ?: write_ksyms(w);
	err = trace_writer_close(w, NULL) ?: err;
	if (err) {
		fprintf(stderr, "synth: %s: %s\n", argv[optind], strerror(-err));
		return 1;
	}
	return 0;
usage:
	fprintf(stderr, "usage: synth [-n SAMPLES] [-s SEED] [-k DIVISOR] OUT.lp\n");
	return 2;
}

/*
 * kernel.c - what the running kernel offers luaprof, loading the BPF
 * sampler, and saying why a load failed.
 *
 * The sampler is one BPF object for every kernel (CO-RE: libbpf fits its
 * field offsets to the running kernel's BTF at load).  What a kernel may
 * lack is listed once, in KERNEL_FEATURES, with the Linux version that
 * brought it and what luaprof uses it for; each entry is probed the way
 * libbpf and bpftool do (a tiny program or map the kernel accepts or not,
 * a type in the kernel's BTF).  `luaprof check` prints the whole table;
 * when the sampler does not load, `record` runs the same probes and names
 * what is missing, or, when nothing is, the field or the verifier's words
 * from libbpf's log, which the load keeps instead of printing.
 */
#include <errno.h>
#include <linux/perf_event.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>

#include "bpf/sampler.h"
#include "lib/grow.h"
#include "record/kernel.h"
#include "sampler.skel.h"

/* The oldest kernel the tests boot (tests/kernels.sh): what we promise. */
#define KERNEL_TESTED_SINCE "6.1"

static int probe_btf(int arg);
static int probe_tp_btf(int arg);
static int probe_prog(int type);
static int probe_map(int type);
static int probe_helper(int id);
static int probe_cpu_clock(int arg);

/* _(name, what it is, the Linux version that brought it, what luaprof
 * uses it for, probe, probe's argument).  All are required. */
#define KERNEL_FEATURES(_)                                                                  \
	_(BTF, "kernel BTF (/sys/kernel/btf/vmlinux)", "5.4",                                \
	  "fitting the BPF code to this kernel (CO-RE)", probe_btf, 0)                        \
	_(PROG_PERF_EVENT, "perf_event BPF programs", "4.9", "the sampler, on each tick",    \
	  probe_prog, BPF_PROG_TYPE_PERF_EVENT)                                               \
	_(TP_BTF, "BTF tracepoints (tp_btf)", "5.5",                                         \
	  "following fork, exec and exit", probe_tp_btf, 0)                                   \
	_(RINGBUF, "BPF ring buffer", "5.8", "streaming samples to the recorder", probe_map, \
	  BPF_MAP_TYPE_RINGBUF)                                                               \
	_(LRU_HASH, "LRU hash maps", "4.10", "each thread's Lua VM", probe_map,              \
	  BPF_MAP_TYPE_LRU_HASH)                                                              \
	_(PERCPU_ARRAY, "per-CPU arrays", "4.6", "the sample being built", probe_map,        \
	  BPF_MAP_TYPE_PERCPU_ARRAY)                                                          \
	_(GET_STACK, "bpf_get_stack()", "4.18", "kernel stacks", probe_helper,               \
	  BPF_FUNC_get_stack)                                                                 \
	_(PROBE_READ_USER, "bpf_probe_read_user()", "5.5", "reading user stacks",            \
	  probe_helper, BPF_FUNC_probe_read_user)                                             \
	_(PROBE_READ_KERNEL, "bpf_probe_read_kernel()", "5.5",                               \
	  "reading task fields (not under lockdown=confidentiality)", probe_helper,          \
	  BPF_FUNC_probe_read_kernel)                                                         \
	_(CURRENT_TASK_BTF, "bpf_get_current_task_btf()", "5.11",                            \
	  "the current task, typed", probe_helper, BPF_FUNC_get_current_task_btf)            \
	_(TASK_PT_REGS, "bpf_task_pt_regs()", "5.15",                                        \
	  "user registers of a tick in the kernel", probe_helper, BPF_FUNC_task_pt_regs)     \
	_(LOOP, "bpf_loop()", "5.17", "walking Lua and native stacks", probe_helper,         \
	  BPF_FUNC_loop)                                                                      \
	_(RINGBUF_QUERY, "bpf_ringbuf_query()", "5.8", "waking the recorder in batches",    \
	  probe_helper, BPF_FUNC_ringbuf_query)                                               \
	_(RINGBUF_DYNPTR, "bpf_ringbuf_reserve_dynptr()", "5.19",                            \
	  "samples sent at their real size", probe_helper, BPF_FUNC_ringbuf_reserve_dynptr)  \
	_(CPU_CLOCK, "cpu-clock perf events", "2.6.31", "the sampling tick",                 \
	  probe_cpu_clock, 0)

enum kernel_feature_id {
#define FEATURE_ID(id, what, since, use, probe, arg) KF_##id,
	KERNEL_FEATURES(FEATURE_ID)
#undef FEATURE_ID
	KF__COUNT
};

const struct kernel_feature kernel_features[] = {
#define FEATURE_ENTRY(id, what_, since_, use_, probe_, arg_) \
	{ .what = what_, .since = since_, .use = use_, .probe = probe_, .arg = arg_ },
	KERNEL_FEATURES(FEATURE_ENTRY)
#undef FEATURE_ENTRY
};
const int kernel_nfeatures = KF__COUNT;

static int probe_btf(int arg)
{
	(void)arg;
	return access("/sys/kernel/btf/vmlinux", R_OK) == 0 ? 1 : errno == ENOENT ? 0 : -errno;
}

/* libbpf attaches tp_btf/NAME through the kernel's btf_trace_NAME type. */
static int probe_tp_btf(int arg)
{
	struct btf *btf = btf__load_vmlinux_btf();
	int found;

	(void)arg;
	if (!btf)
		return 0;
	found = btf__find_by_name_kind(btf, "btf_trace_sched_process_fork",
				       BTF_KIND_TYPEDEF) > 0;
	btf__free(btf);
	return found;
}

static int probe_prog(int type)
{
	return libbpf_probe_bpf_prog_type(type, NULL);
}

static int probe_map(int type)
{
	return libbpf_probe_bpf_map_type(type, NULL);
}

static int probe_helper(int id)
{
	return libbpf_probe_bpf_helper(BPF_PROG_TYPE_PERF_EVENT, id, NULL);
}

/* What record opens on every CPU, once, on CPU 0. */
static int probe_cpu_clock(int arg)
{
	struct perf_event_attr attr;
	int fd;

	(void)arg;
	memset(&attr, 0, sizeof(attr));
	attr.size = sizeof(attr);
	attr.type = PERF_TYPE_SOFTWARE;
	attr.config = PERF_COUNT_SW_CPU_CLOCK;
	attr.freq = 1;
	attr.sample_freq = 99;
	fd = syscall(SYS_perf_event_open, &attr, -1, 0, -1, PERF_FLAG_FD_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT || errno == EOPNOTSUPP ? 0 : -errno;
	close(fd);
	return 1;
}

int kernel_feature_probe(const struct kernel_feature *f)
{
	return f->probe(f->arg);
}

/* ---- loading the sampler, with libbpf's log kept ------------------------ */

/* libbpf's messages (not its debug chatter) while the sampler loads: shown
 * as they come with -v, and read back to explain a failure. */
static struct {
	char *buf;
	size_t len, cap;
	int echo;
} load_log;

/* libbpf hands one va_list per message: measure it on a copy. */
static int keep_libbpf_log(enum libbpf_print_level level, const char *fmt, va_list args)
{
	va_list copy;
	size_t need;
	int n;

	if (load_log.echo) {
		va_copy(copy, args);
		vfprintf(stderr, fmt, copy);
		va_end(copy);
	}
	if (level == LIBBPF_DEBUG)
		return 0;
	va_copy(copy, args);
	n = vsnprintf(NULL, 0, fmt, copy);
	va_end(copy);
	if (n <= 0)
		return 0;
	need = load_log.len + (size_t)n + 1;
	if (GROW(load_log.buf, load_log.cap, need))
		return 0;
	vsnprintf(load_log.buf + load_log.len, (size_t)n + 1, fmt, args);
	load_log.len += (size_t)n;
	return 0;
}

/* Copies the n bytes at p into out as a string, cut to cap; returns 1. */
static int copy_cut(char *out, size_t cap, const char *p, size_t n)
{
	if (n >= cap)
		n = cap - 1;
	memcpy(out, p, n);
	out[n] = 0;
	return 1;
}

/* Copies into out the rest of the first log line holding key, from just
 * after key; 0 when no line holds it. */
static int log_after(const char *key, char *out, size_t cap)
{
	const char *p, *end;

	if (!load_log.buf || !(p = strstr(load_log.buf, key)))
		return 0;
	p += strlen(key);
	end = strchr(p, '\n');
	return copy_cut(out, cap, p, end ? (size_t)(end - p) : strlen(p));
}

/* The verifier's verdict: the last line of its log (before libbpf's `--
 * END PROG LOAD LOG --`) that is not one of its statistics; 0 if none. */
static int log_verifier_verdict(char *out, size_t cap)
{
	const char *end, *start;

	if (!load_log.buf || !(end = strstr(load_log.buf, "-- END PROG LOAD LOG --")))
		return 0;
	for (;;) {
		while (end > load_log.buf && (end[-1] == '\n' || end[-1] == ' '))
			end--;
		start = end;
		while (start > load_log.buf && start[-1] != '\n')
			start--;
		if (start == end || !strncmp(start, "-- BEGIN PROG LOAD LOG --", 25))
			return 0;
		if (strncmp(start, "processed ", 10) && strncmp(start, "verification time", 17) &&
		    strncmp(start, "stack depth", 11))
			break;
		end = start;
	}
	return copy_cut(out, cap, start, (size_t)(end - start));
}

/* The name of the program libbpf says failed to load, into out. */
static int log_failed_program(char *out, size_t cap)
{
	const char *key = "': BPF program load failed", *p, *q;

	if (!load_log.buf || !(p = strstr(load_log.buf, key)))
		return 0;
	for (q = p; q > load_log.buf && q[-1] != '\''; q--)
		;
	return p > q && copy_cut(out, cap, q, (size_t)(p - q));
}

/* Terminal-safe: the log quotes the kernel and our own object only, but
 * says so cheaply. */
static void sanitize(char *s)
{
	for (; *s; s++)
		if ((unsigned char)*s < 0x20 || *s == 0x7f)
			*s = '?';
}

/* "5.17" as 5017, to compare. */
static int version_key(const char *v)
{
	int major = 0, minor = 0;

	sscanf(v, "%d.%d", &major, &minor);
	return major * 1000 + minor;
}

int kernel_missing_features(char *out, size_t cap, int *newest)
{
	size_t len = 0;
	int n = 0;

	out[0] = 0;
	*newest = -1;
	for (int i = 0; i < kernel_nfeatures; i++) {
		const struct kernel_feature *f = &kernel_features[i];

		if (kernel_feature_probe(f) != 0)
			continue;
		if (*newest < 0 || version_key(f->since) > version_key(kernel_features[*newest].since))
			*newest = i;
		len += snprintf(out + len, len < cap ? cap - len : 0, "%s%s (Linux %s)",
				n ? ", " : "", f->what, f->since);
		n++;
	}
	if (len >= cap && cap > 4)
		strcpy(out + cap - 4, "...");
	return n;
}

/* Says why the sampler did not load, each reason on its own line. */
static void explain_load_failure(int err, const char *who)
{
	char line[1024], prog[128];
	struct utsname u;
	int r;

	fprintf(stderr, "%s: cannot load the BPF sampler: %s\n", who, strerror(-err));
	/* The verifier refuses a program with EACCES too: that is no
	 * question of privileges, and its verdict below says what. */
	if ((err == -EPERM || err == -EACCES) && !log_verifier_verdict(line, sizeof(line))) {
		fprintf(stderr, "%s: loading BPF needs root, or CAP_BPF, CAP_PERFMON and "
			"CAP_SYS_RESOURCE\n", who);
		return;
	}
	if (uname(&u))
		strcpy(u.release, "?");
	if (kernel_missing_features(line, sizeof(line), &r)) {
		fprintf(stderr, "%s: this kernel (Linux %s) has no %s; Linux %s brings %s\n",
			who, u.release, line, kernel_features[r].since,
			strchr(line, ',') ? "them all" : "it");
		fprintf(stderr, "%s: luaprof is tested on Linux %s and later; "
			"`luaprof check` lists what this kernel offers\n", who,
			KERNEL_TESTED_SINCE);
		return;
	}
	if (log_after("failed to resolve CO-RE relocation ", line, sizeof(line))) {
		/* "<byte_off> [108] struct bpf_perf_event_data.regs.csx (0:0:17:1 @ offset 136)" */
		char *name = strstr(line, "] "), *tail;

		name = name ? name + 2 : line;
		if ((tail = strstr(name, " (")))
			*tail = 0;
		sanitize(name);
		fprintf(stderr, "%s: this kernel (Linux %s) has no %s, which the sampler "
			"reads without a fallback: a bug of luaprof; please report it with "
			"the output of `luaprof check`\n", who, u.release, name);
		return;
	}
	if (log_verifier_verdict(line, sizeof(line))) {
		if (!log_failed_program(prog, sizeof(prog)))
			strcpy(prog, "?");
		sanitize(line);
		sanitize(prog);
		fprintf(stderr, "%s: the verifier of this kernel (Linux %s) refused program "
			"%s: %s\n", who, u.release, prog, line);
		fprintf(stderr, "%s: `luaprof check -v` shows libbpf's whole log\n", who);
		return;
	}
	fprintf(stderr, "%s: `luaprof check -v` shows libbpf's whole log\n", who);
}

int sampler_load(struct sampler **out, int follow_children,
		 int (*size)(struct sampler *skel, void *arg), void *arg,
		 int verbose, const char *who)
{
	libbpf_print_fn_t old = libbpf_set_print(keep_libbpf_log);
	struct sampler *skel;
	int err;

	load_log.len = 0;
	load_log.echo = verbose;
	*out = NULL;
	skel = sampler__open();
	if (!skel) {
		err = -errno;
	} else {
		skel->rodata->follow_children = follow_children;
		/* -v prints the sampler's time per sample (its median);
		 * -vv also where it goes (bpf/phases.h), whose clock costs
		 * a sample up to 0.6 us: the median -v prints is without
		 * it. */
		skel->rodata->time_phases = verbose >= 2;
		skel->rodata->time_runs = verbose >= 1;
		err = size ? size(skel, arg) : 0;
		if (!err)
			err = sampler__load(skel);
	}
	libbpf_set_print(old);
	if (err) {
		char verdict[8];

		if (who)
			explain_load_failure(err, who);
		/* Refused by the verifier: not the EACCES of a missing
		 * privilege, which callers tell the user about. */
		if (err == -EACCES && log_verifier_verdict(verdict, sizeof(verdict)))
			err = -EINVAL;
		sampler__destroy(skel);
	} else {
		*out = skel;
	}
	free(load_log.buf);
	memset(&load_log, 0, sizeof(load_log));
	return err;
}

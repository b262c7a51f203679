/*
 * check.c - `luaprof check`: will luaprof run here?  For the user who asks
 * before a recording, and for a bug report: the kernel's version, each
 * feature luaprof needs with the Linux version that brought it (kernel.c's
 * table), the settings that bound a recording (perf_event_paranoid and
 * the highest sampling rate, BPF memory accounting, BPF stats, lockdown,
 * kernel symbols, capabilities), then a trial load of the real sampler,
 * which is what settles it.  Ends with one verdict line; exits 0 when
 * luaprof will run, 1 when not.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "bpf/sampler.h"
#include "record/events.h"
#include "record/kernel.h"
#include "record/record.h"
#include "sampler.skel.h"

static void usage(FILE *f)
{
	fprintf(f, "usage: luaprof check [-v]\n"
		"       luaprof check [-v] --luajit FILE|PID\n\n"
		"Says whether luaprof will run on this machine: the kernel's version, each\n"
		"kernel feature luaprof needs with the Linux version that brought it, the\n"
		"settings that bound a recording, and a trial load of the BPF sampler.\n"
		"Run it as the user who will record (root, or CAP_BPF + CAP_PERFMON +\n"
		"CAP_SYS_RESOURCE).  Exits 0 when luaprof will run here, 1 when not.\n\n"
		"With --luajit, says whether luaprof can walk the Lua frames of a LuaJIT\n"
		"build instead: the executable or libluajit-5.1.so at FILE, or the one\n"
		"process PID maps.  Prints every offset luaprof reads, where the build's\n"
		"code showed it or that LuaJIT 2.1's declaration gave it, DWARF's value\n"
		"beside it when the object has debug info, and its builtins' names.  Exits\n"
		"0 when luaprof walks the build, 1 when not.\n\n"
		"  --luajit WHAT  read the LuaJIT build WHAT (a file, or a process id)\n"
		"  -v, --verbose  show libbpf's messages during the trial load; with\n"
		"                 --luajit, every builtin's name by id\n"
		"  -h, --help     print this help and exit\n");
}

/* The first line of a file, without its newline; 0 if unreadable. */
static int read_line(const char *path, char *out, size_t cap)
{
	FILE *f = fopen(path, "re");
	int ok;

	if (!f)
		return 0;
	ok = fgets(out, (int)cap, f) != NULL;
	fclose(f);
	if (ok)
		out[strcspn(out, "\n")] = 0;
	return ok;
}

/* Probes need what loading needs: without it a kernel seems to lack all. */
static int may_load_bpf(void)
{
	int fd = bpf_map_create(BPF_MAP_TYPE_ARRAY, NULL, 4, 4, 1, NULL);

	if (fd < 0)
		return errno == EPERM || errno == EACCES ? 0 : 1;
	close(fd);
	return 1;
}

static void print_features(int privileged, int *missing, int *unknown)
{
	printf("%-38s %-7s %-5s %s\n", "kernel feature", "since", "here", "luaprof uses it for");
	for (int i = 0; i < kernel_nfeatures; i++) {
		const struct kernel_feature *f = &kernel_features[i];
		int r = privileged ? kernel_feature_probe(f) : -EPERM;
		char here[32];

		if (r > 0) {
			strcpy(here, "yes");
		} else if (r == 0) {
			strcpy(here, "NO");
			if (!*missing)
				*missing = i + 1;
		} else {
			strcpy(here, "?");
			if (!*unknown)
				*unknown = -r;
		}
		printf("%-38s %-7s %-5s %s\n", f->what, f->since, here, f->use);
	}
	if (*unknown)
		printf("(?: cannot tell: %s)\n", strerror(*unknown));
}

/* CapEff from /proc/self/status. */
static uint64_t effective_caps(void)
{
	FILE *f = fopen("/proc/self/status", "re");
	char line[256];
	uint64_t caps = 0;

	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "CapEff: %" SCNx64, &caps) == 1)
			break;
	fclose(f);
	return caps;
}

static void print_caps(void)
{
	static const struct {
		int bit;
		const char *name, *why;
	} caps[] = {
		{ 39, "CAP_BPF", "loading BPF" },
		{ 38, "CAP_PERFMON", "perf events on every CPU" },
		{ 24, "CAP_SYS_RESOURCE", "RLIMIT_MEMLOCK, where it applies" },
		{ 19, "CAP_SYS_PTRACE", "reading other users' processes" },
		{ 21, "CAP_SYS_ADMIN", "any of the above on kernels without CAP_BPF" },
	};
	uint64_t eff = effective_caps();

	printf("capabilities (uid %d):\n", (int)geteuid());
	for (size_t i = 0; i < sizeof(caps) / sizeof(caps[0]); i++)
		printf("  %-17s %-4s %s\n", caps[i].name,
		       eff >> caps[i].bit & 1 ? "yes" : "no", caps[i].why);
}

/* A text symbol's address all zero: kernel.kptr_restrict hides them from
 * this user (per-CPU symbols are at 0 either way). */
static void kallsyms_readable(void)
{
	FILE *f = fopen("/proc/kallsyms", "re");
	char line[512], type;
	unsigned long long addr;
	int found = -1;

	if (!f)
		return;
	while (found < 0 && fgets(line, sizeof(line), f))
		if (sscanf(line, "%llx %c", &addr, &type) == 2 && (type == 'T' || type == 't'))
			found = addr != 0;
	fclose(f);
	if (found >= 0)
		printf("kernel symbols: %s\n", found ? "readable: kernel frames are named" :
		       "addresses hidden (kernel.kptr_restrict): kernel frames stay unnamed");
}

static void print_settings(void)
{
	char v[256];
	struct rlimit rl;
	int memcg;

	if (read_line("/proc/sys/kernel/perf_event_paranoid", v, sizeof(v)))
		printf("perf_event_paranoid: %s (root and CAP_PERFMON are not bound by it)\n", v);
	if (read_line("/proc/sys/kernel/perf_event_max_sample_rate", v, sizeof(v)))
		printf("perf_event_max_sample_rate: %s Hz (the highest record -F; the kernel "
		       "lowers it when ticks take too long)\n", v);
	/* libbpf's own test: ktime_get_coarse_ns came with memcg accounting. */
	memcg = libbpf_probe_bpf_helper(BPF_PROG_TYPE_SOCKET_FILTER,
					BPF_FUNC_ktime_get_coarse_ns, NULL);
	if (memcg > 0) {
		printf("BPF memory: charged to the memory cgroup (5.11+); RLIMIT_MEMLOCK does "
		       "not apply\n");
	} else if (!getrlimit(RLIMIT_MEMLOCK, &rl)) {
		if (rl.rlim_cur == RLIM_INFINITY)
			printf("BPF memory: counted against RLIMIT_MEMLOCK (before 5.11), now "
			       "unlimited\n");
		else
			printf("BPF memory: counted against RLIMIT_MEMLOCK (before 5.11), now "
			       "%llu KiB; libbpf raises it with CAP_SYS_RESOURCE\n",
			       (unsigned long long)rl.rlim_cur / 1024);
	}
	if (read_line("/proc/sys/kernel/bpf_stats_enabled", v, sizeof(v)))
		printf("BPF stats: %s (kernel.bpf_stats_enabled=1 lets record -v show the "
		       "kernel's mean run time per tick)\n", strcmp(v, "0") ? "on" : "off");
	if (read_line("/sys/kernel/security/lockdown", v, sizeof(v)))
		printf("lockdown: %s (confidentiality forbids reading kernel memory from BPF)\n", v);
	else
		printf("lockdown: unknown (no /sys/kernel/security/lockdown)\n");
	kallsyms_readable();
}

/* The trial load: each program's size as the verifier left it. */
/* Every kind's programs, configured as record would: what each costs the
 * verifier is what record -e with it costs. */
static int prepare_all(struct sampler *skel, void *arg)
{
	(void)arg;
	events_prepare(skel, EVENTS_ALL, 99, EVENTS_STALL_DEFAULT_MS * 1000000ull,
		       EVENTS_ALLOC_DEFAULT_EVERY);
	return 0;
}

static int trial_load(int verbose)
{
	struct bpf_program *prog;
	struct sampler *skel;
	int err;

	printf("BPF sampler:\n");
	fflush(stdout);
	err = sampler_load(&skel, 1, prepare_all, NULL, verbose, "luaprof check");
	if (err)
		return err;
	bpf_object__for_each_program(prog, skel->obj) {
		struct bpf_prog_info info;
		__u32 len = sizeof(info);

		memset(&info, 0, sizeof(info));
		if (bpf_obj_get_info_by_fd(bpf_program__fd(prog), &info, &len))
			continue;
		printf("  %-16s loads: %u instructions verified, %u bytes translated, %u "
		       "bytes JIT-compiled\n", bpf_program__name(prog), info.verified_insns,
		       info.xlated_prog_len, info.jited_prog_len);
	}
	sampler__destroy(skel);
	return 0;
}

int cmd_check(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "verbose", no_argument, NULL, 'v' },
		{ "luajit", required_argument, NULL, 'L' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	int verbose = 0, missing = 0, unknown = 0, privileged, err = -EPERM, c;
	const char *luajit = NULL;
	struct utsname u;

	while ((c = getopt_long(argc, argv, "vh", longopts, NULL)) != -1) {
		switch (c) {
		case 'v':
			verbose = 1;
			break;
		case 'L':
			luajit = optarg;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind != argc) {
		usage(stderr);
		return 2;
	}
	if (luajit)
		return check_luajit(luajit, verbose);
	if (!uname(&u))
		printf("kernel: Linux %s %s (%s)\n", u.release, u.version, u.machine);
	libbpf_set_print(NULL);
	privileged = may_load_bpf();
	print_features(privileged, &missing, &unknown);
	print_settings();
	print_caps();
	/* With a feature missing it cannot load: the table said why. */
	if (privileged && !missing)
		err = trial_load(verbose);
	else if (privileged)
		printf("BPF sampler: not loaded: it needs what this kernel lacks\n");
	if (!privileged) {
		printf("luaprof will not run here as this user: it needs root, or CAP_BPF, "
		       "CAP_PERFMON and CAP_SYS_RESOURCE\n");
	} else if (missing) {
		char what[1024];
		int newest;

		kernel_missing_features(what, sizeof(what), &newest);
		printf("luaprof will not run here: this kernel has no %s\n", what);
	} else if (err == -EPERM || err == -EACCES || unknown == EPERM || unknown == EACCES) {
		/* Allowed to load BPF, not to open perf events on every CPU. */
		printf("luaprof will not run here as this user: it needs root, or CAP_BPF, "
		       "CAP_PERFMON and CAP_SYS_RESOURCE\n");
	} else if (err) {
		printf("luaprof will not run here: the BPF sampler does not load (%s)\n",
		       strerror(-err));
	} else if (unknown) {
		printf("luaprof will not run here: a kernel feature could not be probed (%s)\n",
		       strerror(unknown));
	} else {
		printf("luaprof will run here\n");
		return 0;
	}
	return 1;
}

/*
 * pertask.c - the probe behind the per-task question: can the
 * cpu-clock event luaprof samples on be opened per task (pid = the
 * target, cpu = -1, attr.inherit) instead of once per CPU, so that only
 * the CPUs running a target tick?  Two questions, one mode each:
 *
 *   pertask inherit [HZ]
 *     Does the kernel carry the BPF program to inherited events?  A child
 *     is forked and held; the event is opened on it and the program
 *     (pertask.bpf.c, a count per thread) attached; then it runs: its
 *     main thread spins, a thread it creates spins, a process it forks
 *     spins, that process's thread spins, and a process it forks execs
 *     this probe again to spin.  Beside them a process forked before the
 *     event (not a target) spins as long.  Each spinner prints its tid
 *     and CPU time; the probe prints each one's runs against its CPU time
 *     times HZ, and the runs of any other task (idle CPUs: tid 0).
 *     Lines "ok NAME ..." or "FAIL NAME ..." per spinner.
 *
 *   pertask pingpong MODE [SECONDS]
 *     What a per-task event costs a context switch: two threads pinned to
 *     one CPU hand a byte back and forth over two pipes (each round trip
 *     two switches) for SECONDS (default 2), with MODE none (no event),
 *     percpu (luaprof today: an event on every CPU, the program attached)
 *     or pertask (an event on the process, inherited by its threads), or
 *     pertask-one (an event on the pinging thread alone: every switch
 *     between a target and a task that is not one).  SPLIT=1 pins the
 *     second thread to CPU 1 instead: each switch is then to and from
 *     the idle task, as a server's worker waiting for its next request.
 *     Prints "pingpong MODE: N round trips/s, R runs".
 *
 *   pertask sleep MODE [SECONDS]
 *     What the events cost a machine whose target sleeps: the child
 *     sleeps SECONDS (whole, default 2) under MODE as above; prints the
 *     local timer interrupts (LOC in /proc/interrupts, all CPUs) a second
 *     meanwhile, and the program's runs.
 *
 * Needs root.  Figures are printed, never asserted (but inherit's lines
 * say whether each task got the ticks it should).
 */
#include <errno.h>
#include <linux/perf_event.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "pertask.skel.h"

#define SPIN_S 0.3
#define MAX_LINKS 256

static struct pertask *skel;
static struct bpf_link *links[MAX_LINKS];
static int fds[MAX_LINKS], nlinks;
static const char *self;

static double now(clockid_t clock)
{
	struct timespec ts;

	clock_gettime(clock, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Spins SPIN_S of this thread's CPU time, then says who it was. */
static void *spin(void *label)
{
	volatile unsigned long x = 0;

	while (now(CLOCK_THREAD_CPUTIME_ID) < SPIN_S)
		for (int i = 0; i < 100000; i++)
			x += i;
	printf("spun %s %ld %.4f\n", (char *)label, (long)syscall(SYS_gettid),
	       now(CLOCK_THREAD_CPUTIME_ID));
	fflush(stdout);
	return NULL;
}

static int open_event(pid_t pid, int cpu, int inherit, unsigned hz)
{
	struct perf_event_attr attr;
	int fd;

	if (nlinks == MAX_LINKS)
		return -E2BIG;
	memset(&attr, 0, sizeof(attr));
	attr.size = sizeof(attr);
	attr.type = PERF_TYPE_SOFTWARE;
	attr.config = PERF_COUNT_SW_CPU_CLOCK;
	attr.freq = 1;
	attr.sample_freq = hz;
	attr.inherit = inherit;
	fd = syscall(SYS_perf_event_open, &attr, pid, cpu, -1, PERF_FLAG_FD_CLOEXEC);
	if (fd < 0)
		return cpu >= 0 && errno == ENODEV ? 0 : -errno;
	links[nlinks] = bpf_program__attach_perf_event(skel->progs.on_tick, fd);
	if (!links[nlinks]) {
		close(fd);
		return -errno;
	}
	fds[nlinks++] = fd;
	return 0;
}

static void close_events(void)
{
	while (nlinks--) {
		bpf_link__destroy(links[nlinks]);
		close(fds[nlinks]);
	}
	nlinks = 0;
}

/* Forks FN(ARG) held on a pipe until release(); returns the pid. */
static pid_t fork_held(void (*fn)(void *), void *arg, int *go)
{
	int p[2];
	pid_t pid;
	char c;

	if (pipe(p))
		return -1;
	pid = fork();
	if (pid == 0) {
		close(p[1]);
		if (read(p[0], &c, 1) != 1)
			_exit(127);
		fn(arg);
		_exit(0);
	}
	close(p[0]);
	*go = p[1];
	return pid;
}

static void release(int go)
{
	if (write(go, "g", 1) != 1)
		perror("pertask: release");
	close(go);
}

static u_int64_t runs_of(unsigned tid)
{
	__u64 n = 0;

	bpf_map__lookup_elem(skel->maps.runs, &tid, sizeof(tid), &n, sizeof(n), 0);
	return n;
}

/* The runs of every thread the map holds. */
static __u64 all_runs(void)
{
	unsigned key, next;
	__u64 total = 0;
	int more = !bpf_map__get_next_key(skel->maps.runs, NULL, &key, sizeof(key));

	while (more) {
		total += runs_of(key);
		more = !bpf_map__get_next_key(skel->maps.runs, &key, &next, sizeof(next));
		key = next;
	}
	return total;
}

/* --- inherit ------------------------------------------------------------ */

static void grandchild(void *unused)
{
	pthread_t t;

	(void)unused;
	pthread_create(&t, NULL, spin, "forked-thread");
	spin("forked-main");
	pthread_join(t, NULL);
}

static void target(void *unused)
{
	pthread_t t;
	pid_t forked, execd;

	(void)unused;
	pthread_create(&t, NULL, spin, "thread");
	forked = fork();
	if (forked == 0) {
		grandchild(NULL);
		_exit(0);
	}
	execd = fork();
	if (execd == 0) {
		execl(self, self, "spin", "execd", (char *)NULL);
		_exit(127);
	}
	spin("main");
	pthread_join(t, NULL);
	waitpid(forked, NULL, 0);
	waitpid(execd, NULL, 0);
}

static void bystander(void *unused)
{
	(void)unused;
	spin("bystander");
}

static int inherit(unsigned hz)
{
	int go_t, go_b, err, fails = 0, p[2], out = dup(1);
	pid_t t, b;
	char line[256], label[64];
	long tid;
	double cpu;
	FILE *in;
	__u64 total, listed = 0;

	/* The spinners' lines come back on a pipe, their stdout. */
	if (pipe(p))
		return -errno;
	fflush(stdout);
	if (dup2(p[1], 1) < 0)
		return -errno;
	b = fork_held(bystander, NULL, &go_b);
	t = fork_held(target, NULL, &go_t);
	dup2(out, 1);
	close(out);
	close(p[1]);
	if (t < 0 || b < 0)
		return -errno;
	err = open_event(t, -1, 1, hz);
	if (err) {
		fprintf(stderr, "pertask: perf event on %d: %s\n", t, strerror(-err));
		kill(t, SIGKILL);
		kill(b, SIGKILL);
		return err;
	}
	release(go_b);
	release(go_t);
	in = fdopen(p[0], "r");
	while (fgets(line, sizeof(line), in)) {
		double want;
		__u64 n;

		if (sscanf(line, "spun %63s %ld %lf", label, &tid, &cpu) != 3)
			continue;
		n = runs_of(tid);
		listed += n;
		want = cpu * hz;
		/* A target's runs near its CPU time * HZ (freq mode settles in
		 * a few ticks); the bystander none.  Under qemu's TCG a 999 Hz
		 * event gets 55-80% of that, the opened one as the inherited
		 * (6.1, 6.12): "ok" asks only that each tick far more than
		 * none, the figures say the rest. */
		int ok = strcmp(label, "bystander") ? n > want / 3 && n < want * 1.5 : n == 0;
		fails += !ok;
		printf("%s %-14s tid %-7ld cpu %.3f s  runs %5llu  (cpu*HZ %5.0f)\n",
		       ok ? "ok  " : "FAIL", label, tid, cpu, (unsigned long long)n, want);
	}
	waitpid(t, NULL, 0);
	waitpid(b, NULL, 0);
	total = all_runs();
	/* Others: the targets' ticks after their lines (exit, waits), few;
	 * none on an idle CPU (tid 0), which only per-CPU events tick. */
	int ok = runs_of(0) == 0 && total - listed <= listed / 100;
	printf("%s others: %llu runs off the spinners' lines (idle, tid 0: %llu)\n",
	       ok ? "ok  " : "FAIL", (unsigned long long)(total - listed),
	       (unsigned long long)runs_of(0));
	fails += !ok;
	close_events();
	return fails ? 1 : 0;
}

/* --- pingpong ----------------------------------------------------------- */

struct pingpong {
	int ab[2], ba[2];
	volatile int stop;
	long trips;
};

static void pin(int cpu)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	sched_setaffinity(0, sizeof(set), &set);
}

static void *pong(void *arg)
{
	struct pingpong *pp = arg;
	char c;

	pin(getenv("SPLIT") ? 1 : 0);
	while (read(pp->ab[0], &c, 1) == 1 && c == 'p')
		if (write(pp->ba[1], &c, 1) != 1)
			break;
	return NULL;
}

static void pingpong_run(void *arg)
{
	double secs = *(double *)arg, t0;
	struct pingpong pp = { .trips = 0 };
	pthread_t t;
	char c = 'p';

	if (pipe(pp.ab) || pipe(pp.ba))
		_exit(1);
	pin(0);
	pthread_create(&t, NULL, pong, &pp);
	t0 = now(CLOCK_MONOTONIC);
	while (now(CLOCK_MONOTONIC) - t0 < secs) {
		for (int i = 0; i < 1000; i++) {
			if (write(pp.ab[1], &c, 1) != 1 || read(pp.ba[0], &c, 1) != 1)
				_exit(1);
		}
		pp.trips += 1000;
	}
	t0 = now(CLOCK_MONOTONIC) - t0;
	c = 'q';
	if (write(pp.ab[1], &c, 1) != 1)
		_exit(1);
	pthread_join(t, NULL);
	printf("%.0f\n", pp.trips / t0);
	fflush(stdout);
}

/* The local timer interrupts (LOC) all CPUs have taken. */
static unsigned long long timer_interrupts(void)
{
	char line[4096];
	unsigned long long sum = 0;
	FILE *f = fopen("/proc/interrupts", "r");

	while (f && fgets(line, sizeof(line), f)) {
		char *p = line, *end;

		while (*p == ' ')
			p++;
		if (strncmp(p, "LOC:", 4))
			continue;
		for (p += 4;; p = end) {
			unsigned long long n = strtoull(p, &end, 10);

			if (end == p)
				break;
			sum += n;
		}
	}
	if (f)
		fclose(f);
	return sum;
}

static void sleeper(void *arg)
{
	struct timespec ts = { .tv_sec = *(double *)arg };

	nanosleep(&ts, NULL);
	printf("0\n");
	fflush(stdout);
}

static int pingpong(const char *mode, double secs, unsigned hz, int sleep)
{
	unsigned long long loc0 = timer_interrupts();
	double t0 = now(CLOCK_MONOTONIC);
	int go, err = 0, p[2], ncpus = libbpf_num_possible_cpus(), out = dup(1);
	pid_t t;
	char line[64] = "";
	__u64 total;

	if (pipe(p))
		return -errno;
	fflush(stdout);
	dup2(p[1], 1);
	t = fork_held(sleep ? sleeper : pingpong_run, &secs, &go);
	dup2(out, 1);
	close(out);
	close(p[1]);
	if (!strcmp(mode, "percpu")) {
		for (int cpu = 0; cpu < ncpus && !err; cpu++)
			err = open_event(-1, cpu, 0, hz);
	} else if (!strcmp(mode, "pertask")) {
		err = open_event(t, -1, 1, hz);
	} else if (!strcmp(mode, "pertask-one")) {
		err = open_event(t, -1, 0, hz);
	} else if (strcmp(mode, "none")) {
		err = -EINVAL;
	}
	if (err) {
		fprintf(stderr, "pertask: %s: %s\n", mode, strerror(-err));
		kill(t, SIGKILL);
		return err;
	}
	release(go);
	if (read(p[0], line, sizeof(line) - 1) < 0)
		line[0] = 0;
	waitpid(t, NULL, 0);
	total = all_runs();
	if (sleep)
		printf("sleep %s: %.0f timer interrupts/s (all CPUs), %llu runs\n", mode,
		       (timer_interrupts() - loc0) / (now(CLOCK_MONOTONIC) - t0),
		       (unsigned long long)total);
	else
		printf("pingpong %s: %ld round trips/s, %llu runs\n", mode, atol(line),
		       (unsigned long long)total);
	close_events();
	return 0;
}

int main(int argc, char **argv)
{
	unsigned hz = getenv("HZ") ? atoi(getenv("HZ")) : 999;
	int err;

	self = argv[0];
	if (argc >= 3 && !strcmp(argv[1], "spin")) {
		spin(argv[2]);
		return 0;
	}
	if (argc < 2) {
		fprintf(stderr, "usage: pertask inherit | pingpong|sleep none|percpu|pertask|pertask-one [SECONDS]\n");
		return 2;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	skel = pertask__open_and_load();
	if (!skel) {
		fprintf(stderr, "pertask: cannot load the BPF program: %s\n", strerror(errno));
		return 1;
	}
	if (!strcmp(argv[1], "inherit"))
		err = inherit(hz);
	else if (!strcmp(argv[1], "pingpong") && argc >= 3)
		err = pingpong(argv[2], argc > 3 ? atof(argv[3]) : 2, hz, 0);
	else if (!strcmp(argv[1], "sleep") && argc >= 3)
		err = pingpong(argv[2], argc > 3 ? atof(argv[3]) : 2, hz, 1);
	else
		err = 2;
	pertask__destroy(skel);
	return err < 0 ? 1 : err;
}

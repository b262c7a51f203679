/*
 * record.c - the `luaprof record` command line: parses and checks options,
 * then hands them to session.c.  Misuse exits 2 with the usage line;
 * everything that fails once recording is under way exits 1.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "record/events.h"
#include "record/luajit.h"
#include "record/record.h"
#include "record/session.h"

static const char usage_line[] =
	"usage: luaprof record [OPTIONS] -p PID[,PID...]\n"
	"       luaprof record [OPTIONS] -- COMMAND [ARGS...]\n";

static void print_help(void)
{
	printf("%s\n"
	       "Sample the CPU stacks of running processes, or of a command it starts,\n"
	       "and write them to a trace file for `luaprof report`.  Needs root\n"
	       "(or CAP_BPF, CAP_PERFMON and CAP_SYS_RESOURCE).\n"
	       "\n"
	       "Targets:\n"
	       "  -p, --pid PID[,PID...]  attach to running processes; their\n"
	       "                          descendants are followed too (-p 1: all\n"
	       "                          but kernel threads); the recorder itself\n"
	       "                          is never recorded\n"
	       "  -- COMMAND [ARGS...]    start COMMAND and record it from its first\n"
	       "                          instruction; recording ends when it exits\n"
	       "      --no-children       do not follow descendants, existing or forked\n"
	       "      --task-events       with -- COMMAND: tick only where COMMAND and\n"
	       "                          its descendants run, not on every CPU (each\n"
	       "                          switch to or from them costs more instead;\n"
	       "                          see docs/recording.md)\n"
	       "\n"
	       "Sampling and output:\n"
	       "  -e, --event KIND[,KIND] what to take (default cpu):\n"
	       "                          cpu      a sample of the running stacks per\n"
	       "                                   tick of each CPU (-F)\n"
	       "                          off-cpu  the stacks of a thread that waits\n"
	       "                                   (sleeps, blocks on I/O or a lock),\n"
	       "                                   with the time until it runs again;\n"
	       "                                   about one per sampling period of\n"
	       "                                   waiting, shorter waits sampled\n"
	       "                          lua-wait the Lua stack of a coroutine that\n"
	       "                                   yields to its host's event loop\n"
	       "                                   (nginx: a cosocket, ngx.sleep), with\n"
	       "                                   the time until it is resumed; from\n"
	       "                                   probes on lua_resume, sampled so\n"
	       "                                   too\n"
	       "                          stall    an event loop's iteration (from the\n"
	       "                                   return of epoll_wait to the next\n"
	       "                                   call) of --stall-threshold or more,\n"
	       "                                   with the stacks of that call\n"
	       "                          alloc    a LuaJIT VM's allocations, one sample\n"
	       "                                   per --alloc-every bytes on average,\n"
	       "                                   with the allocating stacks; from a\n"
	       "                                   probe on the VM's allocator: about\n"
	       "                                   1 us per allocation (docs/memory.md);\n"
	       "                                   takes cpu too (it finds the VM)\n"
	       "                          inuse    alloc, and at the end the sampled\n"
	       "                                   blocks not freed; a return probe\n"
	       "                                   too: about twice alloc's cost\n"
	       "                          (`report --kind` shows one kind at a time,\n"
	       "                          `report --stalls` what ran in each stall)\n"
	       "      --stall-threshold MS  the shortest iteration -e stall takes\n"
	       "                          (default %d ms)\n"
	       "      --alloc-every BYTES the mean bytes between allocation samples\n"
	       "                          (default 512k; k, m, g suffixes)\n"
	       "  -F, --freq HZ           samples per second per CPU (default 99)\n"
	       "  -d, --duration SECONDS  stop after sampling this long (default: until\n"
	       "                          Ctrl-C or until every target has exited)\n"
	       "  -o, --output FILE       trace file to write (default trace.lp), created\n"
	       "                          0600; an existing FILE is kept as FILE.old, a\n"
	       "                          symbolic link at FILE is refused\n"
	       "      --compress CODEC    zlib, lz4 or none (default zlib, the smallest;\n"
	       "                          lz4 costs the recorder less CPU)\n"
	       "      --luajit-offsets FILE  struct offsets of a LuaJIT build luaprof\n"
	       "                          does not know (\"field = value\" lines, the\n"
	       "                          fields of struct lj_layout in bpf/luajit_layout.h);\n"
	       "                          without it, offsets come from the object's\n"
	       "                          DWARF if it has debug info, else from its\n"
	       "                          code (its exported functions and the\n"
	       "                          interpreter), stripped builds included\n"
	       "      --no-embed          do not embed the symbols of the addresses hit\n"
	       "                          (those that name them, of each object's\n"
	       "                          table), nor the source lines and inlined\n"
	       "                          functions of the addresses hit, which record\n"
	       "                          resolves from their DWARF (at most 4 MiB per\n"
	       "                          object, 32 MiB per trace): smaller traces, but\n"
	       "                          a report then needs the same binaries, or\n"
	       "                          --symfs\n"
	       "  -q, --quiet             no status line and no summary\n"
	       "  -v, --verbose           show libbpf's messages, the sizes of the BPF\n"
	       "                          maps (sized to the rate and to the targets'\n"
	       "                          objects), the BPF sampler's run time per\n"
	       "                          sample (and the kernel's count of its runs,\n"
	       "                          ticks of targets or not, with their mean\n"
	       "                          time), the unwinder's statistics and its\n"
	       "                          first walks cut short (when, where, why), the\n"
	       "                          first Lua stacks that were cut short, with\n"
	       "                          why, and the source lines embedded per object\n"
	       "                          (addresses, bytes, and whether a bound cut\n"
	       "                          them), and the Lua VM of every process (by\n"
	       "                          default: of the processes named, and of\n"
	       "                          others with a VM not said yet)\n"
	       "  -vv                     also time the BPF sampler's phases (kernel\n"
	       "                          stack, Lua state and walk, stack copy, native\n"
	       "                          walk, ring buffer), which costs it up to\n"
	       "                          0.6 us a sample\n"
	       "  -h, --help              show this help\n"
	       "\n"
	       "SIGINT or SIGTERM stop the recording and finish the file.  A launched\n"
	       "COMMAND still running when recording stops is sent SIGTERM.\n",
	       usage_line, EVENTS_STALL_DEFAULT_MS);
}

static int misuse(const char *fmt, const char *arg)
{
	fprintf(stderr, "luaprof record: ");
	fprintf(stderr, fmt, arg);
	fprintf(stderr, "\n%s", usage_line);
	return 2;
}

/* "512k", "1m", "4096": bytes, 64 to 1 GiB.  0 or -EINVAL. */
static int parse_bytes(const char *arg, unsigned long long *out)
{
	unsigned long long v, mul = 1;
	char *end;

	errno = 0;
	v = strtoull(arg, &end, 10);
	if (errno || end == arg || *arg == '-')
		return -EINVAL;
	if (*end == 'k' || *end == 'K')
		mul = 1ull << 10;
	else if (*end == 'm' || *end == 'M')
		mul = 1ull << 20;
	else if (*end == 'g' || *end == 'G')
		mul = 1ull << 30;
	if (mul > 1)
		end++;
	if (*end || v > (1ull << 30) / mul || v * mul < 64)
		return -EINVAL;
	*out = v * mul;
	return 0;
}

static int parse_pids(const char *s, struct record_opts *o)
{
	char *copy = strdup(s), *tok, *save = NULL, *end;

	if (!copy)
		return -ENOMEM;
	for (tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		long pid;
		pid_t *v;

		errno = 0;
		pid = strtol(tok, &end, 10);
		if (errno || *end || pid <= 0 || pid > 0x3fffffff) {
			free(copy);
			return -EINVAL;
		}
		v = realloc(o->pids, (o->npids + 1) * sizeof(*v));
		if (!v) {
			free(copy);
			return -ENOMEM;
		}
		o->pids = v;
		o->pids[o->npids++] = (pid_t)pid;
	}
	free(copy);
	return o->npids ? 0 : -EINVAL;
}

static char *join_args(int argc, char **argv)
{
	size_t len = 1;
	char *s;

	for (int i = 0; i < argc; i++)
		len += strlen(argv[i]) + 1;
	s = calloc(1, len);
	if (!s)
		return NULL;
	for (int i = 0; i < argc; i++) {
		if (i)
			strcat(s, " ");
		strcat(s, argv[i]);
	}
	return s;
}

int cmd_record(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "pid", required_argument, NULL, 'p' },
		{ "freq", required_argument, NULL, 'F' },
		{ "event", required_argument, NULL, 'e' },
		{ "duration", required_argument, NULL, 'd' },
		{ "output", required_argument, NULL, 'o' },
		{ "compress", required_argument, NULL, 'c' },
		{ "no-children", no_argument, NULL, 'N' },
		{ "task-events", no_argument, NULL, 'T' },
		{ "luajit-offsets", required_argument, NULL, 'L' },
		{ "no-embed", no_argument, NULL, 'E' },
		{ "stall-threshold", required_argument, NULL, 'S' },
		{ "alloc-every", required_argument, NULL, 'A' },
		{ "quiet", no_argument, NULL, 'q' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct record_opts o = {
		.freq_hz = 99,
		.output = "trace.lp",
		.codec = LP_CODEC_ZLIB,
		.follow_children = 1,
		.kinds = EVENTS_DEFAULT,
		.stall_ns = EVENTS_STALL_DEFAULT_MS * 1000000ull,
		.alloc_every = EVENTS_ALLOC_DEFAULT_EVERY,
	};
	char *self = join_args(argc, argv), *end;
	int c, ret = 2, stall_set = 0, every_set = 0;

	o.self_cmdline = self ? self : "luaprof record";
	optind = 1;
	/* "+": stop at the first non-option, so COMMAND's own options are
	 * never taken for ours. */
	while ((c = getopt_long(argc, argv, "+p:F:e:d:o:qvh", longopts, NULL)) != -1) {
		switch (c) {
		case 'p':
			if (parse_pids(optarg, &o)) {
				ret = misuse("bad pid list '%s'", optarg);
				goto out;
			}
			break;
		case 'e': {
			const char *bad;
			size_t badlen;

			if (events_parse(optarg, &o.kinds, &bad, &badlen)) {
				char names[128], why[256];

				events_names(names, sizeof(names));
				snprintf(why, sizeof(why), "unknown event kind '%.*s' (%s)",
					 (int)(badlen < 40 ? badlen : 40), bad, names);
				ret = misuse("%s", why);
				goto out;
			}
			break;
		}
		case 'F': {
			unsigned long hz;

			errno = 0;
			hz = strtoul(optarg, &end, 10);
			if (errno || *end || hz < 1 || hz > 10000) {
				ret = misuse("bad frequency '%s' (1 to 10000 Hz)", optarg);
				goto out;
			}
			o.freq_hz = hz;
			break;
		}
		case 'S': {
			double ms;

			errno = 0;
			ms = strtod(optarg, &end);
			if (errno || *end || end == optarg || !(ms > 0) || ms > 1e7) {
				ret = misuse("bad stall threshold '%s' (milliseconds > 0)", optarg);
				goto out;
			}
			o.stall_ns = (unsigned long long)(ms * 1e6 + 0.5);
			stall_set = 1;
			break;
		}
		case 'A':
			if (parse_bytes(optarg, &o.alloc_every)) {
				ret = misuse("bad --alloc-every '%s' (bytes, 64 to 1G; "
					     "k, m, g suffixes)", optarg);
				goto out;
			}
			every_set = 1;
			break;
		case 'd':
			errno = 0;
			o.duration_s = strtod(optarg, &end);
			if (errno || *end || !(o.duration_s > 0) || o.duration_s > 1e7) {
				ret = misuse("bad duration '%s' (seconds > 0)", optarg);
				goto out;
			}
			break;
		case 'o':
			o.output = optarg;
			break;
		case 'c':
			if (lp_codec_parse(optarg, &o.codec)) {
				ret = misuse("unknown codec '%s' (lz4, zlib or none)", optarg);
				goto out;
			}
			break;
		case 'N':
			o.follow_children = 0;
			break;
		case 'T':
			o.task_events = 1;
			break;
		case 'L':
			o.luajit_offsets = optarg;
			break;
		case 'E':
			o.no_embed = 1;
			break;
		case 'q':
			o.quiet = 1;
			break;
		case 'v':
			o.verbose++; /* -vv: the sampler's phases too */
			break;
		case 'h':
			print_help();
			ret = 0;
			goto out;
		default:
			fprintf(stderr, "%s", usage_line);
			goto out;
		}
	}
	if (optind < argc)
		o.command = argv + optind;
	if (!o.npids && !o.command) {
		ret = misuse("%s", "nothing to record: give -p PID or -- COMMAND");
		goto out;
	}
	if (o.npids && o.command) {
		ret = misuse("%s", "give either -p PID or -- COMMAND, not both");
		goto out;
	}
	if (every_set && !(o.kinds & (EVENTS_BIT(LP_KIND_ALLOC) | EVENTS_BIT(LP_KIND_INUSE)))) {
		ret = misuse("%s", "--alloc-every needs -e alloc or -e inuse");
		goto out;
	}
	/* inuse is alloc's events again: they are taken; and a VM's
	 * allocator is found once a CPU sample has shown the VM. */
	if (o.kinds & (EVENTS_BIT(LP_KIND_ALLOC) | EVENTS_BIT(LP_KIND_INUSE)))
		o.kinds |= EVENTS_BIT(LP_KIND_ALLOC) | EVENTS_BIT(LP_KIND_CPU);
	if (stall_set && !(o.kinds & EVENTS_BIT(LP_KIND_STALL))) {
		ret = misuse("%s", "--stall-threshold needs -e stall");
		goto out;
	}
	if (o.task_events && !o.command) {
		ret = misuse("%s", "--task-events needs -- COMMAND (a running process's "
			     "threads would each need an event)");
		goto out;
	}
	if (o.luajit_offsets) {
		struct lj_layout lo;
		char msg[512];

		/* A bad offsets file fails before anything is recorded. */
		if (lj_layout_from_file(o.luajit_offsets, &lo, msg, sizeof(msg))) {
			fprintf(stderr, "luaprof record: %s\n", msg);
			ret = 1;
			goto out;
		}
	}
	ret = record_session_run(&o);
out:
	free(o.pids);
	free(self);
	return ret;
}

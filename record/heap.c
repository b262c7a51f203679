/*
 * heap.c - `luaprof heap -p PID`: what stays alive in a running LuaJIT
 * VM, as a trace of heap events (format/kinds.h, LP_KIND_HEAP) that
 * every report view reads.  It finds LuaJIT in the process as the
 * recorder does (lj_detect), stops every thread (heap_stop.c), copies the
 * memory the VM's objects live in (heap_image.c), lets the process go,
 * and only then walks the copy (heap_walk.c): the pause is the copy's.
 * If the VM was running Lua, the GC or the JIT compiler when stopped, the
 * heap may be mid-change: the process runs on a few ms and is stopped
 * again, a bounded number of times, and the snapshot says if it never
 * came to rest.  Each distinct path from the roots is one event: its
 * stack the path's steps as NAME frames, its weight the bytes first
 * reached there, its count the objects.
 */
#include <dirent.h>
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include "format/trace.h"
#include "record/clock.h"
#include "record/heap.h"
#include "record/heap_stop.h"
#include "record/luajit.h"
#include "record/procmaps.h"
#include "record/procs.h"
#include "record/record.h"

#define DEFAULT_OUTPUT "heap.lp"
#define DEFAULT_DEPTH 16
#define MAX_DEPTH 256
#define MAX_COPY (8ull << 30) /* bytes of the target's memory copied at most */
#define RETRIES 20
#define RETRY_US 3000

struct heap_opts {
	pid_t pid;
	const char *output;
	uint32_t depth, vm;
	int quiet, verbose;
	char cmdline[1024];
};

/* What the stop and the copy came to. */
struct heap_take {
	struct heap_image im;
	struct heap_layout hl;
	uint64_t L, G;
	unsigned which, nvm, nthreads, tries; /* which: --vm */
	int32_t vmstate;
	int at_rest;
	double pause_ms, total_ms; /* the last stop; all stops together */
};

static void usage(FILE *f)
{
	fprintf(f,
		"usage: luaprof heap -p PID [-o FILE] [--depth N] [--vm N] [-q] [-v]\n\n"
		"Take a snapshot of the heap of the LuaJIT VM in a running process: every\n"
		"live object, its size as LuaJIT counts it, and the first path from the\n"
		"VM's roots that reaches it (_G;cache;users;[*];[table]).  The process is\n"
		"stopped while its memory is copied (ptrace), and then runs on; the pause\n"
		"is printed.  The trace holds one heap event per path (bytes, objects):\n"
		"`luaprof report --kind heap` shows it in any format, and `luaprof diff\n"
		"--kind heap OLD NEW` what grew between two snapshots.\n\n"
		"Options:\n"
		"  -p, --pid PID      the process holding the LuaJIT VM\n"
		"  -o, --output FILE  the trace to write (default %s; an existing one is\n"
		"                     kept as FILE.old; mode 0600, never through a link)\n"
		"      --depth N      steps of a path at most (default %d); deeper objects\n"
		"                     add up under a [deeper] step\n"
		"      --vm N         of several VMs in the process (one per thread, as\n"
		"                     sysbench has), the Nth by address (default 1)\n"
		"  -q, --quiet        print nothing but errors\n"
		"  -v, --verbose      also the layout the walk read the VM with (offsets\n"
		"                     in global_State, lua_State and the GC objects)\n"
		"  -h, --help         this text\n\n"
		"Paths: string keys by their text, integer keys as [*], other keys as\n"
		"[key]; [metatable], [env], [stack], upvalue NAME, [constants] (of a\n"
		"prototype); a closure as [function CHUNK:LINE].  Roots: _G, [registry]\n"
		"(package.loaded is [registry];_LOADED), [main thread], [ffi finalizers],\n"
		"[ffi miscmap], [jit traces], [type metatables], [metamethod names].\n"
		"Objects no path reaches, garbage not yet collected,\n"
		"are under [unreachable].  Weak tables are followed as strong ones; a table\n"
		"of more than 256 string keys is a map, its entries all [*].  Needs root or\n"
		"the right to ptrace the process.\n",
		DEFAULT_OUTPUT, DEFAULT_DEPTH);
}

static void join_argv(int argc, char **argv, char *buf, size_t len)
{
	size_t at = 0;

	buf[0] = '\0';
	for (int i = 0; i < argc && at < len; i++)
		at += (size_t)snprintf(buf + at, len - at, "%s%s", i ? " " : "", argv[i]);
}

/* 0, 1 to exit 0 (--help), 2 on misuse. */
static int parse(int argc, char **argv, struct heap_opts *o)
{
	static const struct option longopts[] = {
		{ "pid", required_argument, NULL, 'p' },
		{ "output", required_argument, NULL, 'o' },
		{ "depth", required_argument, NULL, 'd' },
		{ "vm", required_argument, NULL, 'V' },
		{ "quiet", no_argument, NULL, 'q' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	char *end;
	long v;
	int c;

	*o = (struct heap_opts){ .output = DEFAULT_OUTPUT, .depth = DEFAULT_DEPTH, .vm = 1 };
	join_argv(argc, argv, o->cmdline, sizeof(o->cmdline));
	while ((c = getopt_long(argc, argv, "p:o:qvh", longopts, NULL)) != -1) {
		switch (c) {
		case 'p':
		case 'd':
		case 'V':
			errno = 0;
			v = strtol(optarg, &end, 10);
			if (errno || *end || v <= 0 || v > (c == 'd' ? MAX_DEPTH : INT_MAX)) {
				fprintf(stderr, "luaprof heap: bad %s '%s'\n",
					c == 'p' ? "pid" : c == 'd' ? "depth" : "vm", optarg);
				return 2;
			}
			if (c == 'p')
				o->pid = (pid_t)v;
			else if (c == 'd')
				o->depth = (uint32_t)v;
			else
				o->vm = (uint32_t)v;
			break;
		case 'o':
			o->output = optarg;
			break;
		case 'q':
			o->quiet = 1;
			break;
		case 'v':
			o->verbose = 1;
			break;
		case 'h':
			usage(stdout);
			return 1;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind < argc || !o->pid) {
		fprintf(stderr, "luaprof heap: %s\n", o->pid ? "unexpected arguments" :
			"-p PID is required");
		usage(stderr);
		return 2;
	}
	return 0;
}

/* LuaJIT's build in pid and the walk's layout for it: 0, or 1 said. */
static int detect(pid_t pid, struct lj_target **t, struct heap_layout *hl)
{
	struct maps_table maps = { 0 };
	char msg[512] = "";
	int err = procmaps_read(pid, &maps);

	if (err) {
		fprintf(stderr, "luaprof heap: cannot read the mappings of pid %d: %s\n",
			(int)pid, strerror(-err));
		return 1;
	}
	err = lj_detect(pid, &maps, NULL, t, NULL, msg, sizeof(msg));
	maps_table_free(&maps);
	if (err) {
		fprintf(stderr, "luaprof heap: pid %d: %s\n", (int)pid,
			err == -ENOENT ? "no LuaJIT in this process" : msg);
		return 1;
	}
	if (heap_layout_from(&(*t)->layout, hl)) {
		fprintf(stderr, "luaprof heap: pid %d: a LuaJIT layout the heap walk cannot "
			"place (%s)\n", (int)pid, (*t)->source);
		return 1;
	}
	return 0;
}

/* Whether the VM is at rest: in C code, outside the interpreter, traces,
 * the GC and the JIT compiler, so its heap is between two changes. */
static int vm_at_rest(int32_t vmstate)
{
	return vmstate == ~(int32_t)LJ_VMST_C;
}

/* One stop: whether the VM is at rest (read from the process once G is
 * known, else from a copy); the copy of memory when it is, or when no
 * try is left.  0 with *done when the copy stands, or -errno. */
static int try_once(struct heap_take *tk, pid_t pid, int last, int *done)
{
	int err;

	*done = 0;
	if (tk->G && !target_read(pid, tk->G + tk->hl.g_vmstate, &tk->vmstate, 4) &&
	    !vm_at_rest(tk->vmstate) && !last)
		return 0;
	heap_image_free(&tk->im);
	err = heap_image_copy(&tk->im, pid, MAX_COPY);
	if (!err && !tk->G)
		err = heap_find_vm(&tk->im, &tk->hl, tk->which, &tk->L, &tk->G, &tk->nvm);
	if (!err)
		err = heap_vmstate(&tk->im, &tk->hl, tk->G, &tk->vmstate);
	tk->at_rest = !err && vm_at_rest(tk->vmstate);
	*done = !err && (tk->at_rest || last);
	return err;
}

/* Finds G before the process is stopped, in a copy taken while it runs:
 * G and its main thread stay where they are for the VM's life, and the
 * scan is then no part of the pause.  Failing that (the copy raced the
 * process), the copy taken while stopped is scanned instead. */
static void locate_early(struct heap_take *tk, pid_t pid)
{
	struct heap_image im = { 0 };

	if (!heap_image_copy(&im, pid, MAX_COPY) &&
	    heap_find_vm(&im, &tk->hl, tk->which, &tk->L, &tk->G, &tk->nvm))
		tk->G = tk->L = 0;
	heap_image_free(&im);
}

/* Stops pid, copies, and retries while the VM is busy; the process is
 * let go before it returns, whatever happened. */
static int take(struct heap_take *tk, pid_t pid)
{
	struct heap_stop hs = { 0 };
	uint64_t t1 = mono_ns();
	int err = heap_stop_all(&hs, pid), done = 0;

	for (tk->tries = 1; !err; tk->tries++) {
		err = try_once(tk, pid, tk->tries > RETRIES, &done);
		if (err || done)
			break;
		tk->total_ms += (double)(mono_ns() - t1) / 1e6;
		heap_stop_resume(&hs);
		usleep(RETRY_US);
		t1 = mono_ns();
		err = heap_stop_again(&hs);
	}
	tk->nthreads = (unsigned)hs.n;
	heap_stop_release(&hs);
	tk->pause_ms = (double)(mono_ns() - t1) / 1e6;
	tk->total_ms += tk->pause_ms;
	if (err == -ENOENT && tk->nvm)
		fprintf(stderr, "luaprof heap: pid %d: no VM %u: %u LuaJIT VMs in its memory\n",
			(int)pid, tk->which, tk->nvm);
	else if (err == -ENOENT)
		fprintf(stderr, "luaprof heap: pid %d: no LuaJIT VM (global_State) found in "
			"its memory\n", (int)pid);
	else if (err)
		fprintf(stderr, "luaprof heap: pid %d: cannot stop and copy it: %s\n", (int)pid,
			strerror(-err));
	return err ? 1 : 0;
}

/* Refuses a link or a non-file at path, and keeps an existing trace as
 * path.old, as record does: 0, or 1 said. */
static int make_way(const char *path)
{
	char old[PATH_MAX];
	struct stat st;

	if (lstat(path, &st) < 0)
		return errno == ENOENT ? 0 : (perror(path), 1);
	if (S_ISLNK(st.st_mode) || !S_ISREG(st.st_mode)) {
		fprintf(stderr, "luaprof heap: %s is %s; refusing to write a trace through it "
			"(give another -o)\n", path,
			S_ISLNK(st.st_mode) ? "a symbolic link" : "not a regular file");
		return 1;
	}
	if ((size_t)snprintf(old, sizeof(old), "%s.old", path) >= sizeof(old) ||
	    rename(path, old) < 0) {
		fprintf(stderr, "luaprof heap: cannot keep the existing %s as %s.old\n", path,
			path);
		return 1;
	}
	return 0;
}

static void read_small(pid_t pid, const char *what, char *buf, size_t len)
{
	char path[64];
	FILE *f;

	buf[0] = '\0';
	snprintf(path, sizeof(path), "/proc/%d/%s", (int)pid, what);
	f = fopen(path, "re");
	if (f && fgets(buf, (int)len, f))
		buf[strcspn(buf, "\n")] = '\0';
	if (f)
		fclose(f);
}

static int put_head(struct trace_writer *w, const struct heap_opts *o, struct lj_target *t,
		    uint64_t now)
{
	char target[96], host[256] = "";
	struct lp_record r = { .type = LP_REC_META };
	struct proc_info pi;
	struct utsname un;
	int err;

	uname(&un);
	gethostname(host, sizeof(host) - 1);
	proc_read_info(o->pid, &pi); /* gone meanwhile: no name, no exe */
	snprintf(target, sizeof(target), "heap of pid %d (%s)", (int)o->pid, pi.comm);
	r.u.meta = (struct lp_meta){ LUAPROF_VERSION, o->cmdline, target, host, un.release,
				     "monotonic", 0, now, real_ns(), 0 };
	err = trace_write(w, &r);
	r.type = LP_REC_PROCESS;
	r.u.process = (struct lp_process){ (uint32_t)o->pid, (uint32_t)pi.ppid, now,
					   LP_PROC_EXISTING, pi.comm, pi.exe };
	err = err ?: trace_write(w, &r);
	r.type = LP_REC_LUAJIT;
	lj_target_record(t, &r.u.luajit);
	return err ?: trace_write(w, &r);
}

/* One path's event: its steps as a Lua stack of NAME frames, leaf
 * first, then the event. */
static int put_entry(struct trace_writer *w, const struct heap_snapshot *s,
		     const struct heap_entry *e, uint64_t id, pid_t pid, uint64_t now)
{
	struct lp_lframe f[MAX_DEPTH + 4];
	struct lp_record r = { .type = LP_REC_LUA_STACK };
	uint32_t depth = 0;
	int err;

	f[depth++] = (struct lp_lframe){ .kind = LP_LFRAME_NAME, .value = e->leaf };
	for (uint32_t n = e->node; n != UINT32_MAX && depth < MAX_DEPTH + 4;
	     n = s->nodes[n].parent)
		f[depth++] = (struct lp_lframe){ .kind = LP_LFRAME_NAME,
						 .value = s->nodes[n].name };
	r.u.lua_stack = (struct lp_lua_stack){ id, depth, f };
	err = trace_write(w, &r);
	r.type = LP_REC_EVENT;
	r.u.event = (struct lp_event){
		.kind = LP_KIND_HEAP, .weight = e->bytes, .count = e->count,
		.s = { .time_ns = now, .pid = (uint32_t)pid, .tid = (uint32_t)pid, .lstack = id,
		       .vmstate = ~(int32_t)LJ_VMST_C, .lua_state = LP_LUA_WALKED },
	};
	return err ?: trace_write(w, &r);
}

static int write_trace(const struct heap_opts *o, struct lj_target *t,
		       const struct heap_snapshot *s, uint64_t now)
{
	struct trace_writer *w;
	struct lp_record r = { .type = LP_REC_NAME };
	int err;

	if (make_way(o->output))
		return 1;
	err = trace_writer_open(&w, o->output, LP_CODEC_LZ4);
	if (err) {
		fprintf(stderr, "luaprof heap: cannot create %s: %s\n", o->output,
			lp_private_strerror(err));
		return 1;
	}
	err = put_head(w, o, t, now);
	for (uint32_t i = 0; i < s->nnames && !err; i++) {
		r.u.name = (struct lp_name){ i + 1, s->names[i] };
		err = trace_write(w, &r);
	}
	for (size_t i = 0; i < s->nentries && !err; i++)
		err = put_entry(w, s, &s->entries[i], i + 1, o->pid, now);
	err = trace_writer_close(w, NULL) ?: err;
	if (err)
		fprintf(stderr, "luaprof heap: cannot write %s: %s\n", o->output, strerror(-err));
	return err ? 1 : 0;
}

static const char *const type_label[HT_MAX] = {
	[HT_STR] = "strings", [HT_UPVAL] = "upvalues", [HT_THREAD] = "threads",
	[HT_PROTO] = "protos", [HT_FUNC] = "functions", [HT_CDATA] = "cdata",
	[HT_TAB] = "tables", [HT_UDATA] = "userdata",
};

/* -v: the offsets the walk used, "name=value" (tests/e2e/heap_builds.sh
 * holds them to each build's DWARF). */
static void print_layout(const struct heap_layout *hl)
{
	printf("luaprof heap: layout: ref=%u g.gc.total=%u g.gc.state=%u g.gc.root=%u "
	       "g.strtab=%u g.strmask=%u g.vmstate=%u g.mainthref=%u g.registrytv=%u "
	       "g.gcroot=%u L.stack=%u L.env=%u L.stacksize=%u sizeof.lua_State=%u "
	       "tab.metatable=%u tab.node=%u tab.asize=%u tab.hmask=%u sizeof.GCtab=%u "
	       "udata.env=%u udata.len=%u udata.metatable=%u sizeof.GCudata=%u "
	       "fn.env=%u fn.pc=%u fn.uvptr=%u fn.upvalue=%u upval.v=%u sizeof.GCupval=%u "
	       "str.len=%u sizeof.GCstr=%u sizeof.GCcdata=%u g.ctype_state=%u "
	       "sizeof.CType=%u trace.nins=%u trace.nk=%u trace.nsnap=%u trace.nsnapmap=%u "
	       "trace.startpt=%u sizeof.GCtrace=%u sizeof.SnapShot=%u\n",
	       hl->ref, hl->g_total, hl->g_state, hl->g_root, hl->g_strtab, hl->g_strmask,
	       hl->g_vmstate, hl->g_mainth, hl->g_registry, hl->g_gcroot, hl->l_stack,
	       hl->l_env, hl->l_stacksize, hl->l_size, hl->t_meta, hl->t_node, hl->t_asize,
	       hl->t_hmask, hl->t_size, hl->u_env, hl->u_len, hl->u_meta, hl->u_size,
	       hl->f_env, hl->f_pc, hl->f_uvptr, hl->f_cupv, hl->uv_v, hl->uv_size,
	       hl->s_len, hl->s_size, hl->cd_size, hl->g_ctype_state, hl->ct_size, hl->tr_nins,
	       hl->tr_nk, hl->tr_nsnap, hl->tr_nsnapmap, hl->tr_startpt, hl->tr_size,
	       hl->sn_size);
}

/* When pid is an nginx master, its workers, whose VMs serve requests
 * (the master's ran init_by_lua only): said once, with their pids. */
static void nginx_master_note(pid_t pid)
{
	char cmd[64] = "", path[64], stat[512], more[256] = "";
	struct dirent *d;
	size_t at = 0;
	DIR *dir;
	FILE *f;

	read_small(pid, "cmdline", cmd, sizeof(cmd));
	if (strncmp(cmd, "nginx: master process", 21) || !(dir = opendir("/proc")))
		return;
	while ((d = readdir(dir)) && at + 16 < sizeof(more)) {
		int child = atoi(d->d_name), ppid = 0;

		snprintf(path, sizeof(path), "/proc/%d/stat", child);
		f = child > 0 ? fopen(path, "re") : NULL;
		if (f && fgets(stat, sizeof(stat), f) && strrchr(stat, ')') &&
		    sscanf(strrchr(stat, ')') + 1, " %*c %d", &ppid) == 1 && ppid == pid)
			at += (size_t)snprintf(more + at, sizeof(more) - at, " %d", child);
		if (f)
			fclose(f);
	}
	closedir(dir);
	printf("luaprof heap: note: pid %d is nginx's master; requests run in its workers' "
	       "VMs: give one of theirs (pids%s)\n", (int)pid, at ? more : " unknown");
}

static const char *vmstate_name(int32_t vmstate)
{
	static const char *const names[] = { "interpreting", "in C", "in the GC",
					     "exiting a trace", "recording a trace",
					     "optimizing a trace", "assembling a trace" };
	static char buf[48];

	if (vmstate < 0 && ~vmstate < (int32_t)(sizeof(names) / sizeof(names[0])))
		return names[~vmstate];
	snprintf(buf, sizeof(buf), "running compiled trace %d", (int)vmstate);
	return buf;
}

/* g->gc.state (lj_gc.h's GCS*): garbage is swept in the sweep phases,
 * so [unreachable] is largest before them. */
static const char *const gc_phases[6] = {
	"between cycles", "marking", "in its atomic phase", "sweeping strings", "sweeping",
	"finalizing",
};

static void summary(const struct heap_opts *o, const struct heap_take *tk,
		    const struct heap_snapshot *s)
{
	const struct heap_stats *st = &s->st;

	printf("luaprof heap: pid %d stopped %.1f ms (%u threads; %.1f MiB copied",
	       (int)o->pid, tk->pause_ms, tk->nthreads, (double)tk->im.bytes / 1048576.0);
	if (tk->tries > 1)
		printf("; %u tries, %.1f ms stopped in all", tk->tries, tk->total_ms);
	printf(")\n");
	if (!tk->at_rest)
		printf("luaprof heap: note: the VM was busy at every try (last: %s): the "
		       "snapshot may be inconsistent\n", vmstate_name(tk->vmstate));
	if (tk->nvm > 1)
		printf("luaprof heap: note: %u LuaJIT VMs in the process; this is VM %u's "
		       "(G 0x%llx; --vm N for another)\n", tk->nvm, tk->which,
		       (unsigned long long)tk->G);
	if (tk->im.skipped_bytes || tk->im.failed_bytes)
		printf("luaprof heap: note: %.1f MiB of memory left out past the bound, %.1f "
		       "MiB unreadable\n", (double)tk->im.skipped_bytes / 1048576.0,
		       (double)tk->im.failed_bytes / 1048576.0);
	printf("luaprof heap: %llu objects, %llu bytes (LuaJIT counts %llu in all); "
	       "%llu unreachable (%llu bytes); the GC %s\n", (unsigned long long)st->objects,
	       (unsigned long long)st->bytes, (unsigned long long)st->gc_total,
	       (unsigned long long)st->unreachable, (unsigned long long)st->unreachable_bytes,
	       st->gc_state < 6 ? gc_phases[st->gc_state] : "in an unknown phase");
	printf("luaprof heap:");
	for (int t = 0; t < HT_MAX; t++)
		if (type_label[t] && st->by_type[t])
			printf(" %llu %s (%llu bytes)", (unsigned long long)st->by_type[t],
			       type_label[t], (unsigned long long)st->bytes_by_type[t]);
	printf("\n");
	if (st->bad_refs || st->cut_chains || st->off_list)
		printf("luaprof heap: note: %llu references led to no object, %llu GC lists "
		       "were cut short, %llu objects were on no list\n",
		       (unsigned long long)st->bad_refs, (unsigned long long)st->cut_chains,
		       (unsigned long long)st->off_list);
	if (st->deeper)
		printf("luaprof heap: note: %llu objects deeper than --depth %u are under "
		       "[deeper]\n", (unsigned long long)st->deeper, o->depth);
	if (st->cdata)
		printf("luaprof heap: note: %llu cdata counted by their header only (their C "
		       "type was not found)\n",
		       (unsigned long long)st->cdata);
	printf("luaprof heap: wrote %s: %zu paths\n", o->output, s->nentries);
}

int cmd_heap(int argc, char **argv)
{
	struct heap_take tk = { 0 };
	struct heap_snapshot s = { 0 };
	struct lj_target *t = NULL;
	struct heap_opts o;
	uint64_t now;
	int rc = parse(argc, argv, &o), err;

	if (rc)
		return rc == 1 ? 0 : 2;
	if (detect(o.pid, &t, &tk.hl))
		return 1;
	tk.which = o.vm;
	locate_early(&tk, o.pid);
	now = mono_ns();
	rc = take(&tk, o.pid);
	if (!rc) {
		t->G = tk.G;
		err = heap_walk(&tk.im, &tk.hl, tk.L, tk.G, o.depth, &s);
		if (err)
			fprintf(stderr, "luaprof heap: the walk failed: %s\n", strerror(-err));
		rc = err ? 1 : write_trace(&o, t, &s, now);
	}
	if (!rc && !o.quiet) {
		summary(&o, &tk, &s);
		nginx_master_note(o.pid);
	}
	if (!rc && o.verbose)
		print_layout(&tk.hl);
	heap_snapshot_free(&s);
	heap_image_free(&tk.im);
	free(t);
	return rc;
}

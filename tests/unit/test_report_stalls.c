/*
 * test_report_stalls.c - `report --stalls` on a trace written with the
 * real writer: CPU samples, off-CPU waits and stalls of two threads,
 * some inside a stall of their thread and some just outside it (before,
 * after, on the other thread, a wait that ends before the stall starts),
 * so that a match by the wrong thread, the wrong end or the wrong
 * overlap shows.  Frames are kernel functions by name (rt_kfuncs()).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tests/unit/report_test.h"

#define MS 1000000ull
#define T0 1000000000ull

enum { SF_MAIN, SF_LOOP, SF_LOOP2, SF_HANDLER, SF_PARSE, SF_DISK, SF_IDLE, SF_OTHER, SF_SLOW,
       SF_JSON, SF_LOCK };

static int st_event(struct trace_writer *w, uint32_t kind, uint32_t tid, uint64_t at,
		    uint64_t weight, uint64_t kstack)
{
	struct lp_record r = { .type = LP_REC_EVENT };

	r.u.event = (struct lp_event){ .kind = kind, .weight = weight,
				       .s = { .time_ns = T0 + at, .pid = 50, .tid = tid,
					      .kstack = kstack, .lua_state = LP_LUA_NONE } };
	return trace_write(w, &r);
}

static int st_cpu(struct trace_writer *w, uint32_t tid, uint64_t at, uint64_t kstack)
{
	struct lp_record r = { .type = LP_REC_SAMPLE };

	r.u.sample = (struct lp_sample){ .time_ns = T0 + at, .pid = 50, .tid = tid,
					 .kstack = kstack, .lua_state = LP_LUA_NONE };
	return trace_write(w, &r);
}

/* pid 50 "srv", 99 Hz (a tick is 10.1 ms).  Thread 50 stalls twice in
 * its loop (main;epoll_loop): A from 100 ms for 50 ms, with two ticks in
 * parse (40.4%), a wait in disk_read from 140 ms for 20 ms (10 ms of it
 * inside: 20%) and one in lock from 95 ms for 10 ms (5 ms inside: 10%);
 * B from 300 ms for 20 ms, one tick in json (50.5%).  Thread 51 stalls
 * in main;loop2 from 500 ms for 12 ms, nothing inside.  Outside every
 * stall of their thread: idle (at 0 and 160 ms), other (thread 51, a
 * tick at 310 ms, inside B's time, and a wait of 200 ms from 600 ms, the longest, which
 * makes every wait before a stall a candidate), slow_wait (40 ms for 50
 * ms, ending at 90). */
static int write_stalls_trace(const char *path)
{
	static const char *const names[] = { "main", "epoll_loop", "loop2", "handler", "parse",
					     "disk_read", "idle", "other", "slow_wait", "json",
					     "lock" };
	static const int loop[] = { SF_MAIN, SF_LOOP }, loop2[] = { SF_MAIN, SF_LOOP2 },
			 parse[] = { SF_MAIN, SF_HANDLER, SF_PARSE },
			 disk[] = { SF_MAIN, SF_HANDLER, SF_DISK }, idle[] = { SF_MAIN, SF_IDLE },
			 other[] = { SF_MAIN, SF_OTHER }, slow[] = { SF_MAIN, SF_SLOW },
			 json[] = { SF_MAIN, SF_HANDLER, SF_JSON }, lock[] = { SF_MAIN, SF_LOCK };
	struct trace_writer *w = rt_open(path);
	int err;

	if (!w)
		return -1;
	err = rt_meta(w, T0 - 1000, 1700000000ull * 1000000000ull) ?:
	      rt_process(w, 50, 1, LP_PROC_EXISTING, "srv", "/x/srv", T0) ?:
	      rt_kstack(w, 1, loop, 2) ?: rt_kstack(w, 2, loop2, 2) ?:
	      rt_kstack(w, 3, parse, 3) ?: rt_kstack(w, 4, disk, 3) ?:
	      rt_kstack(w, 5, idle, 2) ?: rt_kstack(w, 6, other, 2) ?:
	      rt_kstack(w, 7, slow, 2) ?: rt_kstack(w, 8, json, 3) ?: rt_kstack(w, 9, lock, 2);
	err = err ?: st_cpu(w, 50, 0, 5) ?:
	      st_event(w, LP_KIND_OFF_CPU, 50, 40 * MS, 50 * MS, 7) ?:
	      st_event(w, LP_KIND_OFF_CPU, 50, 95 * MS, 10 * MS, 9) ?:
	      st_event(w, LP_KIND_STALL, 50, 100 * MS, 50 * MS, 1) ?:
	      st_cpu(w, 50, 110 * MS, 3) ?: st_cpu(w, 50, 120 * MS, 3) ?:
	      st_event(w, LP_KIND_OFF_CPU, 50, 140 * MS, 20 * MS, 4) ?:
	      st_cpu(w, 50, 160 * MS, 5) ?:
	      st_event(w, LP_KIND_STALL, 50, 300 * MS, 20 * MS, 1) ?:
	      st_cpu(w, 50, 305 * MS, 8) ?: st_cpu(w, 51, 310 * MS, 6) ?:
	      st_event(w, LP_KIND_STALL, 51, 500 * MS, 12 * MS, 2) ?:
	      st_event(w, LP_KIND_OFF_CPU, 51, 600 * MS, 200 * MS, 6);
	err = err ?: rt_kfuncs(w, names, sizeof(names) / sizeof(names[0]));
	return trace_writer_close(w, NULL) ?: err;
}

/* Each stall names what ran inside it, with its share, and nothing that
 * ran outside it. */
TEST(stalls_name_what_ran_inside)
{
	const char *path = rt_path("stalls.lp");
	char *out = NULL, *a, *b, *c;

	CHECK(write_stalls_trace(path) == 0);
	CHECK(rt_run(cmd_report, &out, NULL, "report", "--stalls", path, NULL) == 0);
	CHECK(out);
	a = strstr(out, "    50.000 ms  pid 50/50 srv  at 0.100 s\n"
			"      loop  main_[k];epoll_loop_[k]\n");
	b = strstr(out, "    20.000 ms  pid 50/50 srv  at 0.300 s\n");
	c = strstr(out, "    12.000 ms  pid 50/51 srv  at 0.500 s\n"
			"      loop  main_[k];loop2_[k]\n");
	CHECK(a && b && c && a < b && b < c); /* longest first */
	b[-1] = c[-1] = '\0'; /* (a, b and c: each stall's block) */
	CHECK(strstr(a, "     40.4%  cpu      main_[k];handler_[k];parse_[k]\n"));
	CHECK(strstr(a, "     20.0%  off-cpu  main_[k];handler_[k];disk_read_[k]\n"));
	CHECK(strstr(a, "     10.0%  off-cpu  main_[k];lock_[k]\n"));
	/* The most first. */
	CHECK(strstr(a, "parse_[k]") < strstr(a, "disk_read_[k]") &&
	      strstr(a, "disk_read_[k]") < strstr(a, "lock_[k]"));
	CHECK(!strstr(a, "idle") && !strstr(a, "other") && !strstr(a, "slow_wait") &&
	      !strstr(a, "json"));
	CHECK(strstr(b, "     50.5%  cpu      main_[k];handler_[k];json_[k]\n"));
	CHECK(!strstr(b, "parse") && !strstr(b, "disk_read") && !strstr(b, "idle") &&
	      !strstr(b, "other"));
	CHECK(strstr(c, "(no CPU sample or off-CPU wait of its thread inside)\n"));
	CHECK(!strstr(c, "other"));
	CHECK(strstr(c, "\n# 3 stalls, 0.082 s in all\n"));
	CHECK(strstr(out, "# stall: 82000 us in 3 events"));
	free(out);
}

/* -n and the filters pick stalls; what ran in them is matched all the
 * same. */
TEST(stalls_rows_and_filters)
{
	const char *path = rt_path("stalls.lp");
	char *out = NULL, *err = NULL;

	CHECK(write_stalls_trace(path) == 0);
	CHECK(rt_run(cmd_report, &out, NULL, "report", "--stalls", "-n", "1", path, NULL) == 0);
	CHECK(strstr(out, " 50.000 ms ") && !strstr(out, " 20.000 ms ") &&
	      strstr(out, "parse_[k]"));
	CHECK(strstr(out, "# 3 stalls, 0.082 s in all (the 1 longest shown: -n)\n"));
	free(out);
	CHECK(rt_run(cmd_report, &out, NULL, "report", "--stalls", "--from", "0.2", path,
		     NULL) == 0);
	CHECK(!strstr(out, " 50.000 ms ") && strstr(out, " 20.000 ms ") &&
	      strstr(out, "json_[k]") && strstr(out, "# 2 stalls, 0.032 s in all\n"));
	free(out);
	CHECK(rt_run(cmd_report, &out, NULL, "report", "--stalls", "--tid", "51", path,
		     NULL) == 0);
	CHECK(strstr(out, " 12.000 ms ") && strstr(out, "# 1 stalls, 0.012 s in all\n"));
	free(out);
	CHECK(rt_run(cmd_report, NULL, &err, "report", "--stalls", "--kind", "off-cpu", path,
		     NULL) == 2);
	CHECK(strstr(err, "--stalls counts stall events: not with --kind off-cpu"));
	free(err);
}

/* --kind stall weighs the loops' stacks by their stalls' time, in us. */
TEST(stalls_kind_in_the_stack_views)
{
	const char *path = rt_path("stalls.lp");
	char *out = NULL;

	CHECK(write_stalls_trace(path) == 0);
	CHECK(rt_run(cmd_report, &out, NULL, "report", "--kind", "stall", "--format", "folded",
		     path, NULL) == 0);
	CHECK(out && !strcmp(out, "main_[k];epoll_loop_[k] 70000\nmain_[k];loop2_[k] 12000\n"));
	free(out);
	CHECK(rt_run(cmd_report, &out, NULL, "report", "--kind", "stall", path, NULL) == 0);
	CHECK(strstr(out, "# kind: stall, ") && strstr(out, "85.37%  epoll_loop_[k]"));
	free(out);
}

/* A trace without stalls: the header and a count of none. */
TEST(stalls_none)
{
	const char *path = rt_path("nostalls.lp");
	struct trace_writer *w = rt_open(path);
	char *out = NULL, *err = NULL;

	CHECK(w && rt_meta(w, 1, 2) == 0 && trace_writer_close(w, NULL) == 0);
	CHECK(rt_run(cmd_report, &out, &err, "report", "--stalls", path, NULL) == 0);
	CHECK(strstr(out, "\n# 0 stalls, 0.000 s in all\n"));
	CHECK(strstr(err, "no stall events to report"));
	free(out);
	free(err);
}

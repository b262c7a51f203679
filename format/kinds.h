/*
 * kinds.h - the kinds of event a trace holds, listed once.  An event is a
 * mixed stack with a kind and a weight in the kind's unit: a CPU sample
 * is worth one tick of the sampling clock (1 / rate s), a stretch off
 * the CPU its nanoseconds.  The BPF programs name the kind in the event
 * they send (bpf/sampler.h), record/ writes it in the trace (a sample
 * record is CPU, an event record names its kind: docs/format.md), and
 * report/ shows one kind at a time, weighted, and names it in its views.
 *
 * LP_KINDDEF(_) calls _(NAME, number, name, unit, pp_count, pp_value,
 * pp_unit, shown, div, help) for each:
 *   number     in the trace: never reused
 *   name       for --kind and headers
 *   unit       of the weight in the trace
 *   pp_count   pprof's sample type counting the events (unit "count")
 *   pp_value   pprof's sample type of the weight, in pp_unit (CPU's: the
 *              samples times the sampling period; others: the weight)
 *   shown,div  what the text views count (folded's numbers, top's and
 *              callgraph's): the weight divided by div, in unit `shown`
 *   help       one line for --help
 * The names are those Go's pprof and Pyroscope give: a pprof of luaprof's
 * reads like theirs in `go tool pprof -sample_index=NAME`.
 *
 * pp_count counts events, except where an event says how many it
 * stands for (its count: alloc's objects, estimated from the bytes it
 * weighs and the size of the allocation sampled; a heap path's objects).
 *
 * WALL is never in a trace: it is report's view of a thread's time on
 * one axis, its CPU samples (each worth the sampling period) and its
 * waits off the CPU, rooted at the thread (async-profiler's wall clock).
 *
 * Only macros here: the BPF programs include it too.
 */
#ifndef LUAPROF_FORMAT_KINDS_H
#define LUAPROF_FORMAT_KINDS_H

#define LP_KINDDEF(_)                                                                  \
	_(CPU, 1, "cpu", "ticks", "samples", "cpu", "nanoseconds", "samples", 1,       \
	  "time on a CPU, a sample per cpu-clock tick")                                \
	_(OFF_CPU, 2, "off-cpu", "nanoseconds", "waits", "off_cpu", "nanoseconds", \
	  "us", 1000, "time off the CPU, waiting in system calls")                     \
	_(LUA_WAIT, 3, "lua-wait", "nanoseconds", "yields", "wait", "nanoseconds",   \
	  "us", 1000, "a coroutine's time yielded to its host (nginx)") \
	_(STALL, 4, "stall", "nanoseconds", "stalls", "stall", "nanoseconds", "us",  \
	  1000, "event-loop iterations over a threshold (epoll)")                      \
	_(WALL, 5, "wall", "nanoseconds", "events", "wall", "nanoseconds", "us", 1000, \
	  "cpu and off-cpu together, each stack under its thread")                    \
	_(ALLOC, 6, "alloc", "bytes", "alloc_objects", "alloc_space", "bytes",         \
	  "bytes", 1, "bytes a VM allocated, a sample per N bytes (--alloc-every)")     \
	_(INUSE, 7, "inuse", "bytes", "inuse_objects", "inuse_space", "bytes",         \
	  "bytes", 1, "sampled allocations still alive when recording ended")           \
	_(HEAP, 8, "heap", "bytes", "objects", "heap_space", "bytes", "bytes", 1,      \
	  "a heap snapshot's live objects by where they are reachable from")

enum lp_event_kind {
#define LP_KIND_ENUM(NAME, num, ...) LP_KIND_##NAME = num,
	LP_KINDDEF(LP_KIND_ENUM)
#undef LP_KIND_ENUM
	LP_KIND_MAX
};

#endif

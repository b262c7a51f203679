/*
 * events.h - the kinds of event a recording takes (format/kinds.h): which
 * of the sampler's programs load.  CPU samples are perf events, which
 * perf.c opens; off-CPU time is two tracepoints (the scheduler's switch
 * and the return of system calls), stalls two more (the entry and return
 * of system calls: epoll's), which the skeleton attaches.  Each
 * program left out costs neither the verifier's time at setup nor a run
 * at its event.
 */
#ifndef LUAPROF_RECORD_EVENTS_H
#define LUAPROF_RECORD_EVENTS_H

#include <stddef.h>

#include "format/kinds.h"

struct sampler;

#define EVENTS_BIT(kind) (1u << (kind))
#define EVENTS_DEFAULT EVENTS_BIT(LP_KIND_CPU)
/* The kinds this recorder can take. */
#define EVENTS_ALL                                                        \
	(EVENTS_BIT(LP_KIND_CPU) | EVENTS_BIT(LP_KIND_OFF_CPU) |          \
	 EVENTS_BIT(LP_KIND_LUA_WAIT) | EVENTS_BIT(LP_KIND_STALL) |       \
	 EVENTS_BIT(LP_KIND_ALLOC) | EVENTS_BIT(LP_KIND_INUSE))
/* record --alloc-every: the mean bytes between allocation samples. */
#define EVENTS_ALLOC_DEFAULT_EVERY (512u * 1024)
/* record --stall-threshold: an event loop's iteration this long or
 * longer is a stall. */
#define EVENTS_STALL_DEFAULT_MS 10

/* Parses "-e KIND[,KIND...]" into a set of EVENTS_BITs: 0, or -EINVAL
 * with [*bad, *bad + *badlen) the name not known. */
int events_parse(const char *arg, unsigned *kinds, const char **bad, size_t *badlen);

/* The kinds' names, "cpu, off-cpu", into buf, for a message. */
void events_names(char *buf, size_t len);

/* Before the sampler loads: only the programs of the kinds taken load,
 * configured for freq_hz and a stall threshold of stall_ns. */
void events_prepare(struct sampler *skel, unsigned kinds, unsigned freq_hz,
		    unsigned long long stall_ns, unsigned long long alloc_every);

#endif

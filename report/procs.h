/*
 * procs.h - the processes a trace names, as both `report` and `info` need
 * them: comm for --comm and headers, how each joined, when it exited and
 * how many samples it took.
 */
#ifndef LUAPROF_REPORT_PROCS_H
#define LUAPROF_REPORT_PROCS_H

#include <stddef.h>
#include <stdint.h>

#include "format/trace.h"
#include "lib/htab.h"

struct proc {
	uint32_t pid, ppid, flags;
	uint64_t time_ns;
	uint64_t exit_ns;
	int exited;
	char *comm, *exe; /* NULL when no PROCESS record described it */
	uint64_t samples; /* samples read for it, before any filter */
};

/* One entry per process, in stream order: PROCESS records for a pid that
 * has not exited (an exec) update its entry; a pid reused after an EXIT
 * record gets a new one.  A pid resolves to its latest entry. */
struct procs {
	struct proc *v;
	size_t len, cap;
	struct htab h; /* pid -> entries */
	size_t hot;    /* index + 1 of procs_get()'s last answer, 0 none:
			* every sample asks, mostly for the pid before */
};

int procs_add(struct procs *t, const struct lp_process *rec);
int procs_exit(struct procs *t, const struct lp_exit *rec);
/* The latest entry of pid, or NULL. */
struct proc *procs_find(const struct procs *t, uint32_t pid);
/* The latest entry of pid, created without a description if need be. */
int procs_get(struct procs *t, uint32_t pid, struct proc **out);
void procs_free(struct procs *t);

/* "existing", "forked", "exec", "launched" or a list of them; "unknown"
 * for an entry that no PROCESS record described. */
void procs_joined(const struct proc *p, char *buf, size_t len);

#endif

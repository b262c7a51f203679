/*
 * procs.c - the process table of a trace (see procs.h).  Small: one entry
 * per PROCESS record plus one per pid that only samples named.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/escape.h"
#include "report/procs.h"

static int64_t find_idx(const struct procs *t, uint32_t pid)
{
	struct htab_probe p;
	int64_t i, best = -1;

	/* Entries of one pid share its hash; the latest has the highest
	 * index, and reused pids are rare enough to walk them all. */
	htab_probe_start(&t->h, hash_u64(pid), &p);
	while ((i = htab_probe_next(&t->h, &p)) >= 0)
		if (t->v[i].pid == pid && i > best)
			best = i;
	return best;
}

static int new_entry(struct procs *t, uint32_t pid, struct proc **out)
{
	int err;

	err = GROW(t->v, t->cap, t->len + 1);
	if (err)
		return err;
	err = htab_insert(&t->h, hash_u64(pid), t->len);
	if (err)
		return err;
	t->hot = 0; /* it may have been pid's latest */
	*out = &t->v[t->len++];
	memset(*out, 0, sizeof(**out));
	(*out)->pid = pid;
	return 0;
}

/* *exe, empty, becomes a copy of ppid's, if known; -ENOMEM or 0. */
static int inherit_exe(const struct procs *t, uint32_t ppid, char **exe)
{
	const struct proc *parent = ppid ? procs_find(t, ppid) : NULL;
	char *copy;

	if (!parent || parent->exited || !parent->exe || !parent->exe[0])
		return 0;
	copy = strdup(parent->exe);
	if (!copy)
		return -ENOMEM;
	free(*exe);
	*exe = copy;
	return 0;
}

int procs_add(struct procs *t, const struct lp_process *rec)
{
	char *comm, *exe;
	struct proc *p;
	int err;

	/* Shown only, never matched: cleaned for the terminal once. */
	comm = esc_dup(rec->comm);
	exe = esc_dup(rec->exe);
	if (!comm || !exe) {
		err = -ENOMEM;
		goto fail;
	}
	/* A pid that has not exited is the same process, whether samples
	 * named it before its PROCESS record or it has just exec'd: describe
	 * that entry (its latest name, every way it joined) rather than start
	 * another.  Only a pid reused after an exit is a new process. */
	p = procs_find(t, rec->pid);
	if (!p || p->exited) {
		err = new_entry(t, rec->pid, &p);
		if (err)
			goto fail;
	}
	if (!p->comm)
		p->time_ns = rec->time_ns;
	/* A child the recorder could not read (gone by the time it heard of
	 * the fork) runs the image its parent ran then. */
	if (!exe[0] && (rec->flags & LP_PROC_FORKED) && !(rec->flags & LP_PROC_EXEC) &&
	    !(p->flags & LP_PROC_EXEC) && inherit_exe(t, rec->ppid, &exe)) {
		err = -ENOMEM;
		goto fail;
	}
	free(p->comm);
	free(p->exe);
	p->ppid = rec->ppid;
	p->flags |= rec->flags;
	p->comm = comm;
	p->exe = exe;
	return 0;
fail:
	free(comm);
	free(exe);
	return err;
}

int procs_exit(struct procs *t, const struct lp_exit *rec)
{
	struct proc *p;
	int err;

	err = procs_get(t, rec->pid, &p);
	if (err)
		return err;
	p->exited = 1;
	p->exit_ns = rec->time_ns;
	return 0;
}

struct proc *procs_find(const struct procs *t, uint32_t pid)
{
	int64_t i = find_idx(t, pid);

	return i < 0 ? NULL : &t->v[i];
}

int procs_get(struct procs *t, uint32_t pid, struct proc **out)
{
	int64_t i;

	if (t->hot && t->v[t->hot - 1].pid == pid) {
		*out = &t->v[t->hot - 1];
		return 0;
	}
	i = find_idx(t, pid);
	if (i >= 0) {
		*out = &t->v[i];
		t->hot = (size_t)i + 1;
		return 0;
	}
	return new_entry(t, pid, out);
}

void procs_free(struct procs *t)
{
	for (size_t i = 0; i < t->len; i++) {
		free(t->v[i].comm);
		free(t->v[i].exe);
	}
	free(t->v);
	htab_free(&t->h);
	memset(t, 0, sizeof(*t));
}

void procs_joined(const struct proc *p, char *buf, size_t len)
{
	static const struct {
		uint32_t bit;
		const char *name;
	} names[] = {
		{ LP_PROC_EXISTING, "existing" },
		{ LP_PROC_FORKED, "forked" },
		{ LP_PROC_EXEC, "exec" },
		{ LP_PROC_LAUNCHED, "launched" },
	};
	size_t used = 0;

	buf[0] = '\0';
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		if (!(p->flags & names[i].bit))
			continue;
		used += snprintf(buf + used, used < len ? len - used : 0, "%s%s",
				 used ? "," : "", names[i].name);
	}
	if (!used)
		snprintf(buf, len, "%s", p->comm ? "unknown" : "sampled only");
}

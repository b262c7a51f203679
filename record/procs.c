/*
 * procs.c - what the recorder learns about a process from /proc: its name,
 * parent and executable, and the tree of descendants below the processes
 * named with -p (an nginx master's workers), found by one scan of
 * /proc/[pid]/stat.
 */
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "record/clock.h"
#include "record/procs.h"

int proc_exists(pid_t pid)
{
	return kill(pid, 0) == 0 || errno == EPERM;
}

/* /proc/PID/stat: "pid (comm) state ppid ..."; comm may hold spaces and
 * parentheses, so the fields after it are found from the last ')'.
 * start_ticks (field 22, clock ticks after boot) is 0 if unreadable. */
static int read_stat(pid_t pid, char *comm, size_t commlen, pid_t *ppid,
		     unsigned long long *start_ticks)
{
	char fname[64], buf[1024], *open, *close;
	unsigned long long start = 0;
	FILE *f;
	size_t n;
	int parent;

	snprintf(fname, sizeof(fname), "/proc/%d/stat", (int)pid);
	f = fopen(fname, "re");
	if (!f)
		return -errno;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	open = strchr(buf, '(');
	close = strrchr(buf, ')');
	if (!open || !close || close < open)
		return -EINVAL;
	if (comm) {
		size_t len = close - open - 1;

		if (len >= commlen)
			len = commlen - 1;
		memcpy(comm, open + 1, len);
		comm[len] = '\0';
	}
	/* state, ppid, 17 fields, starttime */
	if (sscanf(close + 1, " %*c %d %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s "
		   "%*s %*s %*s %*s %*s %*s %llu", &parent, &start) < 1)
		return -EINVAL;
	*ppid = parent;
	if (start_ticks)
		*start_ticks = start;
	return 0;
}

int proc_is_kthread(pid_t pid)
{
	char fname[64], buf[1024], *close;
	unsigned int flags;
	FILE *f;
	size_t n;

	snprintf(fname, sizeof(fname), "/proc/%d/stat", (int)pid);
	f = fopen(fname, "re");
	if (!f)
		return 0;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	close = strrchr(buf, ')');
	/* state ppid pgrp session tty_nr tpgid flags; PF_KTHREAD */
	return close && sscanf(close + 1, " %*c %*d %*d %*d %*d %*d %u", &flags) == 1 &&
	       (flags & 0x00200000u);
}

uint64_t proc_start_real_ns(pid_t pid)
{
	unsigned long long ticks = 0;
	struct timespec boot;
	long hz = sysconf(_SC_CLK_TCK);
	pid_t ppid;

	if (read_stat(pid, NULL, 0, &ppid, &ticks) || !ticks || hz <= 0)
		return 0;
	/* Boot time in CLOCK_REALTIME, plus the start after boot. */
	clock_gettime(CLOCK_BOOTTIME, &boot);
	return real_ns() - ((uint64_t)boot.tv_sec * 1000000000ull + boot.tv_nsec) +
	       ticks * (1000000000ull / hz);
}

int proc_read_info(pid_t pid, struct proc_info *info)
{
	char fname[64];
	ssize_t n;
	int err;

	memset(info, 0, sizeof(*info));
	info->pid = pid;
	err = read_stat(pid, info->comm, sizeof(info->comm), &info->ppid, NULL);
	if (err)
		return err;
	snprintf(fname, sizeof(fname), "/proc/%d/exe", (int)pid);
	n = readlink(fname, info->exe, sizeof(info->exe) - 1);
	info->exe[n > 0 ? n : 0] = '\0';
	return 0;
}

struct pid_parent {
	pid_t pid, ppid;
};

int proc_descendants(const pid_t *roots, int nroots, pid_t **out, int *count)
{
	struct pid_parent *all = NULL;
	int nall = 0, cap = 0, nout = 0;
	pid_t *res = NULL;
	struct dirent *de;
	DIR *d;

	*out = NULL;
	*count = 0;
	d = opendir("/proc");
	if (!d)
		return -errno;
	while ((de = readdir(d))) {
		pid_t pid = atoi(de->d_name), ppid;

		if (pid <= 0 || read_stat(pid, NULL, 0, &ppid, NULL))
			continue;
		if (nall == cap) {
			int ncap = cap ? cap * 2 : 256;
			struct pid_parent *v = realloc(all, ncap * sizeof(*v));

			if (!v) {
				closedir(d);
				free(all);
				return -ENOMEM;
			}
			all = v;
			cap = ncap;
		}
		all[nall].pid = pid;
		all[nall].ppid = ppid;
		nall++;
	}
	closedir(d);

	/* Breadth first: res holds the found descendants; a process is its
	 * parent's child once, so each joins at most once.  The scan is
	 * bounded by nall passes. */
	res = malloc((nall + 1) * sizeof(*res));
	if (!res) {
		free(all);
		return -ENOMEM;
	}
	for (int head = -nroots; head < nout; head++) {
		pid_t parent = head < 0 ? roots[head + nroots] : res[head];

		for (int i = 0; i < nall; i++) {
			if (all[i].ppid != parent || all[i].pid == parent)
				continue;
			res[nout++] = all[i].pid;
			all[i].ppid = -1; /* taken */
		}
	}
	free(all);
	*out = res;
	*count = nout;
	return 0;
}

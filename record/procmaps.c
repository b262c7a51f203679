/*
 * procmaps.c - reads /proc/PID/maps into a sorted table of the executable
 * mappings, the only ones a native frame can be in.  Data mappings are
 * left out because they cost trace bytes and say nothing about code.
 *
 * The recorder keeps one table per target and compares a fresh read with
 * the last one, so a library loaded while recording (dlopen) is written to
 * the trace as an added mapping rather than as another full snapshot.
 *
 * Anonymous memory that held code keeps counting as code while it stays
 * mapped, whatever its permissions say at the moment of a read: LuaJIT
 * makes its newest machine-code area writable and not executable while it
 * writes a trace there, many times a second while it compiles, and a read
 * at such a moment would otherwise drop the traces already running there.
 * Which anonymous memory held code: what the last read said was
 * executable, and the addresses where the sampler saw code run.
 *
 * procmaps_open() opens the file behind a mapping, for everything that
 * reads a mapped object (its identity, its unwind table).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lib/grow.h"
#include "record/arch.h"
#include "record/procmaps.h"

static int mapping_cmp(const void *a, const void *b)
{
	const struct lp_mapping *x = a, *y = b;

	return x->start < y->start ? -1 : x->start > y->start;
}

/* A file unlinked since it was mapped is listed as "PATH (deleted)"
 * (ATS copies its plugins and unlinks the copies): its name is PATH, as
 * perf names it; the file is opened through map_files all the same. */
static void deleted(char *path, unsigned long long inode)
{
	static const char mark[] = " (deleted)";
	size_t n = strlen(path), k = sizeof(mark) - 1;

	if (inode && n > k && path[0] == '/' && !strcmp(path + n - k, mark))
		path[n - k] = '\0';
}

/* One line: "start-end perms offset dev inode   path".  Returns 1 for a
 * mapping that is not code, with *m's range and path filled in (path not
 * owned) so that the caller may keep it anyway. */
static int parse_line(char *line, struct lp_mapping *m)
{
	unsigned long long start, end, pgoff, inode;
	char perms[8];
	int pathpos = 0;
	char *path, *nl;

	if (sscanf(line, "%llx-%llx %7s %llx %*s %llu %n", &start, &end, perms,
		   &pgoff, &inode, &pathpos) < 5)
		return -EINVAL;
	path = pathpos ? line + pathpos : (char *)"";
	nl = strchr(path, '\n');
	if (nl)
		*nl = '\0';
	deleted(path, inode);
	m->start = start;
	m->end = end;
	m->pgoff = pgoff;
	m->inode = inode;
	m->path = path;
	if (perms[2] != 'x')
		return 1; /* not code: skip, unless it held code */
	m->prot = LP_PROT_EXEC | (perms[0] == 'r' ? LP_PROT_READ : 0) |
		  (perms[1] == 'w' ? LP_PROT_WRITE : 0);
	m->path = strdup(path);
	return m->path ? 0 : -ENOMEM;
}

/* Anonymous, as a JIT's code is: no file, no pseudo-file name. */
static int anonymous(const struct lp_mapping *m)
{
	return !m->inode && (!m->path[0] || !strncmp(m->path, "[anon", 5));
}

/*
 * For an anonymous mapping that is not executable now: the part of it that
 * held code, [*lo, *hi): all of it if one of the addresses code ran at
 * lies in it, else its overlap with anonymous code of the last read.  0
 * if none did.
 */
static int held_code(const struct lp_mapping *m, const struct maps_table *prev,
		     const uint64_t *code, uint32_t ncode, uint64_t *lo,
		     uint64_t *hi)
{
	*lo = m->end;
	*hi = m->start;
	for (uint32_t i = 0; i < ncode; i++) {
		if (code[i] >= m->start && code[i] < m->end) {
			*lo = m->start;
			*hi = m->end;
			return 1;
		}
	}
	for (uint32_t i = 0; prev && i < prev->n; i++) {
		const struct lp_mapping *p = &prev->v[i];

		uint64_t a, b;

		if (!anonymous(p) || p->end <= m->start || p->start >= m->end)
			continue;
		a = p->start > m->start ? p->start : m->start;
		b = p->end < m->end ? p->end : m->end;
		if (a < *lo)
			*lo = a;
		if (b > *hi)
			*hi = b;
	}
	return *lo < *hi;
}

/*
 * The text of /proc/PID/maps in one buffer (NUL-terminated), read with
 * reads as large as the kernel gives.  Each read() is one pass of the
 * kernel over the mappings, and a pass ends where the caller's buffer
 * does: stdio's 1 KiB reads made /bin/true's 2 KiB listing three passes,
 * each free to meet another address space (see procmaps_read_code()).
 */
static int read_text(void *ctx, char **out, size_t *len)
{
	pid_t pid = *(const pid_t *)ctx;
	char fname[64];
	size_t cap = 0;
	ssize_t r;
	int fd, err = 0;

	*out = NULL;
	*len = 0;
	snprintf(fname, sizeof(fname), "/proc/%d/maps", (int)pid);
	fd = open(fname, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	for (;;) {
		if (cap - *len < 16384 && GROW(*out, cap, *len + 16384)) {
			err = -ENOMEM;
			break;
		}
		r = read(fd, *out + *len, cap - *len - 1);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0) {
			err = r < 0 ? -errno : 0;
			break;
		}
		*len += (size_t)r;
	}
	close(fd);
	if (err) {
		free(*out);
		*out = NULL;
		*len = 0;
		return err;
	}
	if (*out)
		(*out)[*len] = '\0';
	return 0;
}

/*
 * The last line names what this kernel lists after every other mapping of
 * a 64-bit process: on x86-64 the gate page (unless booted with
 * vsyscall=none); arm64 has none, and the main thread's stack is the
 * highest mapping (mmap's area grows down from below it, the vDSO
 * included).
 */
int procmaps_text_whole(const char *text, size_t len)
{
	const char *last = LP_HOST_MACHINE == EM_AARCH64 ? "[stack]\n" : "[vsyscall]\n";
	size_t n = strlen(last);

	return len >= n && !memcmp(text + len - n, last, n);
}

/*
 * A listing is one pass of the kernel per read(), and each pass holds the
 * address space only as the file opened it: a process that exits or
 * execs between two passes leaves the later ones empty, and the listing
 * ends early with nothing to say so.  /bin/true read while it exits came
 * out as its own image and libc, without the dynamic loader and the vDSO
 * above them, and its samples in the loader printed as [unmapped] frames
 * (tests/e2e/native_unwind.sh, fork+exec).  So: a listing that does not
 * end with the last mapping above is read again.  The same text twice is
 * whole (a 32-bit process, no gate page on this system, something mapped
 * above arm64's stack); an empty one means the first was cut by the exit,
 * and the process counts as gone (-ESRCH); a different one (an exec, new
 * mappings) is checked the same way, three times at most.
 */
int procmaps_whole_text(procmaps_reader *reader, void *ctx, char **out, size_t *len)
{
	char *again;
	size_t againlen;
	int err = reader(ctx, out, len);

	for (int tries = 0; !err && *len && !procmaps_text_whole(*out, *len) &&
			    tries < 3; tries++) {
		err = reader(ctx, &again, &againlen);
		if (err || !againlen) {
			free(again);
			free(*out);
			*out = NULL;
			*len = 0;
			return -ESRCH;
		}
		if (againlen == *len && !memcmp(again, *out, *len)) {
			free(again);
			break;
		}
		free(*out);
		*out = again;
		*len = againlen;
	}
	return err;
}

int procmaps_read_code(pid_t pid, const struct maps_table *prev,
		       const uint64_t *code, uint32_t ncode,
		       struct maps_table *out)
{
	char *text, *line, *next;
	size_t len;
	size_t cap = 0;
	int err;

	out->v = NULL;
	out->n = 0;
	err = procmaps_whole_text(read_text, &pid, &text, &len);
	if (err)
		return err;
	for (line = text; line && line < text + len; line = next) {
		struct lp_mapping m;
		uint64_t lo, hi;
		int r;

		next = strchr(line, '\n');
		if (next)
			*next++ = '\0';
		r = parse_line(line, &m);
		if (r == -EINVAL)
			continue;
		if (r == 1) {
			if (!anonymous(&m) || !held_code(&m, prev, code, ncode, &lo, &hi))
				continue;
			/* As it was when it ran: readable, executable. */
			m.start = lo;
			m.end = hi;
			m.pgoff = 0;
			m.prot = LP_PROT_READ | LP_PROT_EXEC;
			m.path = strdup(m.path);
			r = m.path ? 0 : -ENOMEM;
		}
		if (r < 0) {
			err = r;
			break;
		}
		if (GROW(out->v, cap, out->n + 1)) {
			free((char *)m.path);
			err = -ENOMEM;
			break;
		}
		out->v[out->n++] = m;
	}
	free(text);
	if (err) {
		maps_table_free(out);
		return err;
	}
	if (out->n) /* (an exiting process lists none: no array to sort) */
		qsort(out->v, out->n, sizeof(*out->v), mapping_cmp);
	return 0;
}

int procmaps_read(pid_t pid, struct maps_table *out)
{
	return procmaps_read_code(pid, NULL, NULL, 0, out);
}

const struct lp_mapping *maps_table_find(const struct maps_table *t,
					 uint64_t addr)
{
	uint32_t lo = 0, hi = t->n;

	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;

		if (addr < t->v[mid].start)
			hi = mid;
		else if (addr >= t->v[mid].end)
			lo = mid + 1;
		else
			return &t->v[mid];
	}
	return NULL;
}

/*
 * Adds an anonymous, executable page for an address where the sampler saw
 * code run though no mapping of the last read holds it (the process is
 * gone, or unmapped the code since): that much is known to have been
 * there.  Clipped to its neighbours.  1 if added, 0 if already held.
 */
int maps_table_add_code(struct maps_table *t, uint64_t addr)
{
	struct lp_mapping m = { .start = addr & ~4095ull, .end = (addr & ~4095ull) + 4096,
				.prot = LP_PROT_READ | LP_PROT_EXEC };
	struct lp_mapping *v;
	uint32_t i = 0;

	if (maps_table_find(t, addr))
		return 0;
	while (i < t->n && t->v[i].start <= addr)
		i++;
	if (i > 0 && t->v[i - 1].end > m.start)
		m.start = t->v[i - 1].end;
	if (i < t->n && t->v[i].start < m.end)
		m.end = t->v[i].start;
	m.path = strdup("");
	v = m.path ? realloc(t->v, (t->n + 1) * sizeof(*v)) : NULL;
	if (!v) {
		free((char *)m.path);
		return -ENOMEM;
	}
	memmove(v + i + 1, v + i, (t->n - i) * sizeof(*v));
	v[i] = m;
	t->v = v;
	t->n++;
	return 1;
}

/* A copy of t, paths and all. */
int maps_table_copy(const struct maps_table *t, struct maps_table *out)
{
	out->n = 0;
	out->v = malloc((t->n ? t->n : 1) * sizeof(*out->v));
	if (!out->v)
		return -ENOMEM;
	for (uint32_t i = 0; i < t->n; i++) {
		out->v[i] = t->v[i];
		out->v[i].path = strdup(t->v[i].path);
		if (!out->v[i].path) {
			maps_table_free(out);
			return -ENOMEM;
		}
		out->n++;
	}
	return 0;
}

static int same_mapping(const struct lp_mapping *a, const struct lp_mapping *b)
{
	return a->start == b->start && a->end == b->end && a->pgoff == b->pgoff &&
	       a->inode == b->inode && a->prot == b->prot &&
	       !strcmp(a->path, b->path);
}

uint32_t maps_table_added(const struct maps_table *old,
			  const struct maps_table *now,
			  const struct lp_mapping **added, uint32_t cap)
{
	uint32_t n = 0;

	for (uint32_t i = 0; i < now->n && n < cap; i++) {
		const struct lp_mapping *o = maps_table_find(old, now->v[i].start);

		if (!o || !same_mapping(o, &now->v[i]))
			added[n++] = &now->v[i];
	}
	return n;
}

void maps_table_free(struct maps_table *t)
{
	for (uint32_t i = 0; i < t->n; i++)
		free((char *)t->v[i].path);
	free(t->v);
	t->v = NULL;
	t->n = 0;
}

int procmaps_open(pid_t pid, const struct lp_mapping *m)
{
	char path[4200];
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/map_files/%llx-%llx", (int)pid,
		 (unsigned long long)m->start, (unsigned long long)m->end);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd >= 0)
		return fd;
	if (m->path[0] != '/')
		return -ENOENT;
	if (snprintf(path, sizeof(path), "/proc/%d/root%s", (int)pid, m->path) <
	    (int)sizeof(path)) {
		fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd >= 0)
			return fd;
	}
	fd = open(m->path, O_RDONLY | O_CLOEXEC);
	return fd >= 0 ? fd : -errno;
}

/*
 * luajit_sources.c - the source files of the Lua chunks a trace's
 * prototypes come from, read once each and embedded in the trace, so that
 * `report --annotate` can show Lua source on a machine that has none of
 * it.
 *
 * A prototype whose chunk name is "@path" was loaded from a file.  The
 * path is the one the target gave LuaJIT, so it is resolved as the target
 * sees it: an absolute path under /proc/PID/root, a relative one under
 * /proc/PID/cwd.  The cwd is the process's cwd when the recorder first
 * meets one of the chunk's functions, not necessarily the one it had when
 * it loaded the chunk (it may have changed directory since); the checks
 * below catch most files that are not the one loaded.  Chunks not loaded
 * from a file ("=stdin", "=content_by_lua(nginx.conf:12)", source strings)
 * have nothing to embed: their prototypes name no source.
 *
 * A file may have changed since the process loaded it, and embedding the
 * new text would misplace every sample.  So a file is refused (its record
 * says CHANGED, with no text) when its mtime is later than the process's
 * start, or when a prototype of the chunk ends past the file's last line.
 * Files are read once per trace, keyed by identity (device, inode, size,
 * mtime), so the workers of one server share one copy; a file that could
 * not be opened is recorded once per chunk name.
 *
 * Bounds: at most SOURCE_FILE_MAX bytes of a file are embedded, cut at a
 * line end (the record says CUT; the lines after it are not in the trace),
 * and at most SOURCE_TRACE_MAX bytes in all; a file past that budget is
 * recorded as BUDGET, with no text.  Every refusal is a record, so `info`
 * counts them from the trace.  Files are small and read with one bounded
 * pread(), on the recorder's thread, never in the sampler's path.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lib/grow.h"
#include "record/luajit.h"
#include "record/procs.h"

struct src_ent {
	uint64_t id;
	uint32_t status;   /* enum lp_luasrc_status */
	uint64_t dev, ino, size, mtime_ns; /* identity; 0 when unreadable */
	char *chunkname;   /* for unreadable files, matched by name */
	uint64_t nlines;   /* lines of the text embedded */
};

struct source_table {
	struct src_ent *v;
	size_t n, cap;
	uint64_t next_id, bytes;
	struct source_stats stats;
	/* The record handed out by source_table_get(). */
	struct lp_lua_source rec;
	char *text;
	char path[4096 + 64];
};

struct source_table *source_table_new(void)
{
	struct source_table *st = calloc(1, sizeof(*st));

	if (st)
		st->next_id = 1;
	return st;
}

void source_table_free(struct source_table *st)
{
	if (!st)
		return;
	for (size_t i = 0; i < st->n; i++)
		free(st->v[i].chunkname);
	free(st->v);
	free(st->text);
	free(st);
}

void source_table_stats(const struct source_table *st, struct source_stats *out)
{
	*out = st->stats;
}

/* Whether every line of pt lies in a file of nlines lines.  LuaJIT counts
 * the end of a file that ends with a newline as one more line, which is
 * where a main chunk ends: so a file of k newlines has k + 1 lines. */
static int lines_fit(const struct lp_proto *pt, uint64_t nlines)
{
	return (uint64_t)pt->firstline + pt->numline <= nlines;
}

static uint64_t mtime_ns(const struct stat *sb)
{
	return (uint64_t)sb->st_mtim.tv_sec * 1000000000ull + sb->st_mtim.tv_nsec;
}

/* Whether e was made for the file of identity sb (unreadable entries
 * have none). */
static int same_file(const struct src_ent *e, const struct stat *sb)
{
	return e->status != LP_LUASRC_UNREADABLE && e->dev == (uint64_t)sb->st_dev &&
	       e->ino == (uint64_t)sb->st_ino && e->size == (uint64_t)sb->st_size &&
	       e->mtime_ns == mtime_ns(sb);
}

static struct src_ent *add_ent(struct source_table *st, uint32_t status)
{
	struct src_ent *e;

	if (GROW(st->v, st->cap, st->n + 1))
		return NULL;
	e = &st->v[st->n++];
	memset(e, 0, sizeof(*e));
	e->id = st->next_id++;
	e->status = status;
	switch (status) {
	case LP_LUASRC_WHOLE: st->stats.whole++; break;
	case LP_LUASRC_CUT: st->stats.cut++; break;
	case LP_LUASRC_CHANGED: st->stats.changed++; break;
	case LP_LUASRC_UNREADABLE: st->stats.unreadable++; break;
	case LP_LUASRC_BUDGET: st->stats.budget++; break;
	}
	return e;
}

/* Fills st->rec for entry e, to be written before the proto naming it. */
static void set_rec(struct source_table *st, const struct src_ent *e,
		    const char *chunkname, const char *path, const char *text,
		    size_t len)
{
	memset(&st->rec, 0, sizeof(st->rec));
	st->rec.id = e->id;
	st->rec.chunkname = chunkname;
	st->rec.path = path;
	st->rec.status = e->status;
	st->rec.size = e->size;
	st->rec.mtime_ns = e->mtime_ns;
	st->rec.text = text;
	st->rec.text_len = (uint32_t)len;
}

/* The path of name as pid sees it, for people: its cwd joined to a
 * relative name.  Best effort: the name alone if the cwd is unreadable. */
static void visible_path(pid_t pid, const char *name, char *buf, size_t len)
{
	char link[64], cwd[4096];
	ssize_t n;

	snprintf(link, sizeof(link), "/proc/%d/cwd", (int)pid);
	if (name[0] == '/' || (n = readlink(link, cwd, sizeof(cwd) - 1)) <= 0) {
		snprintf(buf, len, "%s", name);
		return;
	}
	cwd[n] = '\0';
	snprintf(buf, len, "%s%s%s", cwd, cwd[n - 1] == '/' ? "" : "/", name);
}

/* Reads up to want bytes of fd into st->text: the count read, or -errno. */
static ssize_t read_text(struct source_table *st, int fd, size_t want)
{
	size_t got = 0;
	char *t = realloc(st->text, want + 1);

	if (!t)
		return -ENOMEM;
	st->text = t;
	while (got < want) {
		ssize_t n = pread(fd, t + got, want - got, (off_t)got);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			break; /* shorter than fstat said: it is changing */
		got += (size_t)n;
	}
	return (ssize_t)got;
}

/* Reads the file open on fd, of identity sb, for a first proto pt. */
static uint64_t read_source(struct source_table *st, pid_t pid, int fd,
			    const struct stat *sb, const struct lp_proto *pt,
			    const char *path, const struct lp_lua_source **rec)
{
	uint64_t mtime = mtime_ns(sb);
	uint64_t start = proc_start_real_ns(pid), size = (uint64_t)sb->st_size;
	size_t want = size > SOURCE_FILE_MAX ? SOURCE_FILE_MAX : (size_t)size, len = 0;
	uint32_t status = size > SOURCE_FILE_MAX ? LP_LUASRC_CUT : LP_LUASRC_WHOLE;
	/* The start time is in clock ticks, rounded down: a tick of slack
	 * keeps a file written just before the exec. */
	uint64_t slack = 1000000000ull / (sysconf(_SC_CLK_TCK) > 0 ? sysconf(_SC_CLK_TCK) : 100);
	uint64_t nlines = 1;
	struct src_ent *e;
	ssize_t got = 0;

	if (start && mtime > start + slack)
		status = LP_LUASRC_CHANGED;
	else if (st->bytes + want > SOURCE_TRACE_MAX)
		status = LP_LUASRC_BUDGET;
	if (status == LP_LUASRC_WHOLE || status == LP_LUASRC_CUT) {
		got = read_text(st, fd, want);
		if (got < 0)
			status = LP_LUASRC_UNREADABLE;
		else if ((uint64_t)got < size && status == LP_LUASRC_WHOLE)
			status = LP_LUASRC_CHANGED; /* shrank under us */
	}
	if (status == LP_LUASRC_CUT) {
		/* Whole lines only: a line cut in the middle would show as
		 * if it were the whole line. */
		len = (size_t)got;
		while (len && st->text[len - 1] != '\n')
			len--;
	} else if (status == LP_LUASRC_WHOLE) {
		len = (size_t)got;
	}
	for (size_t i = 0; i < len; i++)
		nlines += st->text[i] == '\n';
	if (status == LP_LUASRC_WHOLE && !lines_fit(pt, nlines)) {
		status = LP_LUASRC_CHANGED;
		len = 0;
	}
	if (status != LP_LUASRC_WHOLE && status != LP_LUASRC_CUT)
		len = 0;
	e = add_ent(st, status);
	if (!e)
		return 0;
	e->dev = sb->st_dev;
	e->ino = sb->st_ino;
	e->size = size;
	e->mtime_ns = mtime;
	e->nlines = nlines;
	st->bytes += len;
	st->stats.bytes += len;
	set_rec(st, e, pt->chunkname, path, st->text, len);
	*rec = &st->rec;
	return e->id;
}

uint64_t source_table_get(struct source_table *st, pid_t pid,
			  const struct lp_proto *pt, const struct lp_lua_source **rec)
{
	const char *name = pt->chunkname + 1;
	char proc_path[4096 + 64];
	struct src_ent *e;
	struct stat sb;
	uint64_t id;
	int fd;

	*rec = NULL;
	if (!pt->chunkname || pt->chunkname[0] != '@' || !name[0] ||
	    pt->firstline == UINT32_MAX)
		return 0; /* not from a file, or a bytecode builtin */
	snprintf(proc_path, sizeof(proc_path), "/proc/%d/%s%s", (int)pid,
		 name[0] == '/' ? "root" : "cwd/", name);
	visible_path(pid, name, st->path, sizeof(st->path));
	/* O_NONBLOCK: a FIFO or device at that path must not hang us. */
	fd = open(proc_path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
	if (fd < 0 || fstat(fd, &sb) || !S_ISREG(sb.st_mode)) {
		if (fd >= 0)
			close(fd);
		for (size_t i = 0; i < st->n; i++)
			if (st->v[i].status == LP_LUASRC_UNREADABLE && st->v[i].chunkname &&
			    !strcmp(st->v[i].chunkname, pt->chunkname))
				return st->v[i].id;
		e = add_ent(st, LP_LUASRC_UNREADABLE);
		if (!e)
			return 0;
		e->chunkname = strdup(pt->chunkname);
		set_rec(st, e, pt->chunkname, st->path, NULL, 0);
		*rec = &st->rec;
		return e->id;
	}
	for (size_t i = 0; i < st->n; i++) {
		e = &st->v[i];
		if (!same_file(e, &sb))
			continue;
		/* Read already.  A proto past its end says the file is not
		 * what this chunk was loaded from (or no longer). */
		if (e->status != LP_LUASRC_WHOLE || lines_fit(pt, e->nlines)) {
			close(fd);
			return e->id;
		}
		for (size_t j = 0; j < st->n; j++)
			if (st->v[j].status == LP_LUASRC_CHANGED && same_file(&st->v[j], &sb)) {
				close(fd);
				return st->v[j].id;
			}
		close(fd);
		e = add_ent(st, LP_LUASRC_CHANGED); /* may move the table */
		if (!e)
			return 0;
		e->dev = sb.st_dev;
		e->ino = sb.st_ino;
		e->size = (uint64_t)sb.st_size;
		e->mtime_ns = mtime_ns(&sb);
		set_rec(st, e, pt->chunkname, st->path, NULL, 0);
		*rec = &st->rec;
		return e->id;
	}
	id = read_source(st, pid, fd, &sb, pt, st->path, rec);
	close(fd);
	return id;
}

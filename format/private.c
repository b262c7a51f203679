/*
 * private.c - the one way luaprof opens a file it writes from a trace or
 * for one: the trace `record` writes, and what `report` and `diff` write
 * with -o (a flame graph, a pprof profile, a folded stack list).
 *
 * They all say as much about a program as the trace does (command lines,
 * memory maps, Lua sources, function names), so they are private: 0600
 * whatever the umask, fixed with fchmod() after the open because the
 * umask may have taken bits from the mode.  And they are never written
 * through a symbolic link (O_NOFOLLOW): `-o /tmp/x` where someone else
 * put a link to /etc/passwd must not follow it.
 *
 * LP_PRIVATE_NEW (a trace) creates the file or fails with EEXIST: never
 * into a file someone else made and may hold open; the recorder moves an
 * old trace aside first.  Without it (a report's output) an existing
 * regular file is made private and emptied, as a user who gives the same
 * -o twice expects; a device or a pipe (-o /dev/null) is written as it
 * is.
 */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "format/trace.h"

int lp_open_private(const char *path, int flags)
{
	int oflags = O_WRONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC;
	struct stat st;
	int fd, err;

	if (flags & LP_PRIVATE_NEW)
		oflags |= O_EXCL;
	fd = open(path, oflags, 0600);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) < 0)
		goto fail;
	if (S_ISREG(st.st_mode) &&
	    (fchmod(fd, 0600) < 0 || ftruncate(fd, 0) < 0))
		goto fail;
	return fd;
fail:
	err = -errno;
	close(fd);
	return err;
}

const char *lp_private_strerror(int err)
{
	/* O_NOFOLLOW's error for a link at the last component. */
	if (err == -ELOOP)
		return "a symbolic link: refusing to write through it";
	return strerror(-err);
}

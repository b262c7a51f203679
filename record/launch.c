/*
 * launch.c - starts `record -- CMD ARGS` so that not one instruction of the
 * command runs unsampled.  The child is forked first and waits on a pipe;
 * the recorder puts its pid in the target set and starts sampling, then
 * lets it exec.  A second, close-on-exec pipe carries back the errno of a
 * failed exec, so "cannot execute" is reported by the recorder, in one
 * line, instead of by a child that merely exits 127.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "record/launch.h"

int launch_prepare(char **argv, struct launched *l)
{
	int go[2], err[2];
	pid_t pid;

	if (pipe2(go, O_CLOEXEC))
		return -errno;
	if (pipe2(err, O_CLOEXEC)) {
		int e = -errno;

		close(go[0]);
		close(go[1]);
		return e;
	}
	pid = fork();
	if (pid < 0) {
		int e = -errno;

		close(go[0]);
		close(go[1]);
		close(err[0]);
		close(err[1]);
		return e;
	}
	if (pid == 0) {
		char c;
		int e;

		close(go[1]);
		close(err[0]);
		signal(SIGINT, SIG_DFL);
		signal(SIGTERM, SIG_DFL);
		if (read(go[0], &c, 1) != 1)
			_exit(127); /* the recorder gave up */
		execvp(argv[0], argv);
		e = errno;
		if (write(err[1], &e, sizeof(e)) != sizeof(e))
			_exit(126);
		_exit(127);
	}
	close(go[0]);
	close(err[1]);
	l->pid = pid;
	l->go_fd = go[1];
	l->err_fd = err[0];
	return 0;
}

int launch_start(struct launched *l)
{
	int e = 0;
	ssize_t n;

	if (write(l->go_fd, "g", 1) != 1)
		e = errno ? errno : EIO;
	close(l->go_fd);
	l->go_fd = -1;
	if (!e) {
		do
			n = read(l->err_fd, &e, sizeof(e));
		while (n < 0 && errno == EINTR);
		if (n != sizeof(e))
			e = 0; /* EOF: exec succeeded */
	}
	close(l->err_fd);
	l->err_fd = -1;
	return -e;
}

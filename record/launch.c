/*
 * launch.c - starts `record -- CMD ARGS` so that not one instruction of the
 * command runs unsampled.  The child is forked first and waits on a pipe;
 * the recorder puts its pid in the target set and starts sampling, then
 * lets it exec.  A second, close-on-exec pipe carries back the errno of a
 * failed exec, so "cannot execute" is reported by the recorder, in one
 * line, instead of by a child that merely exits 127.
 *
 * Nor does one instruction run unwalked, where the kernel lets us: the
 * recorder traces the child (ptrace, PTRACE_O_TRACEEXEC) and holds it at
 * its exec, before the new image's first instruction, until it has read
 * the image's and the dynamic loader's mappings and given the native
 * unwinder their tables; then it lets go for good (launch_release()).
 * Without that the first milliseconds of every launched command, until
 * the recorder had heard of the exec, came out as leaf-only stacks,
 * "tables not loaded yet".  Where tracing is not allowed (Yama's
 * ptrace_scope 3, a seccomp policy) the command runs as before.
 */
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <stdint.h>
#include <sys/auxv.h>
#include <sys/ptrace.h>
#include <sys/uio.h>
#include <sys/user.h>
#include <sys/wait.h>

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
	/* Traced from now: it stops at a successful exec, and at signals
	 * on the way there (handed on by wait_exec()). */
	l->held = !ptrace(PTRACE_SEIZE, pid, NULL, (void *)(long)PTRACE_O_TRACEEXEC);
	return 0;
}

/* The child exec'd: waits until it stops there.  A signal on the way is
 * delivered as it would have been; anything else (a group stop, SIGKILL)
 * ends the hold, the child as it is. */
static void wait_exec(struct launched *l)
{
	int st;

	while (l->held) {
		pid_t r = waitpid(l->pid, &st, __WALL);

		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0 || !WIFSTOPPED(st)) {
			l->held = 0;
			l->reaped = r == l->pid; /* killed before it ran */
			return;
		}
		if (st >> 8 == (SIGTRAP | (PTRACE_EVENT_EXEC << 8)))
			return; /* held at its first instruction */
		if (st >> 16 == 0) { /* a signal for it: pass it on */
			ptrace(PTRACE_CONT, l->pid, NULL, (void *)(long)WSTOPSIG(st));
			continue;
		}
		launch_release(l);
	}
}

/* AT_ENTRY of pid, from /proc/PID/auxv; 0 if not found. */
static uint64_t auxv_entry(pid_t pid)
{
	char path[64];
	uint64_t av[2], entry = 0;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/auxv", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	while (read(fd, av, sizeof(av)) == (ssize_t)sizeof(av) && av[0] != AT_NULL) {
		if (av[0] == AT_ENTRY) {
			entry = av[1];
			break;
		}
	}
	close(fd);
	return entry;
}

/*
 * The breakpoint of the instruction set this recorder runs on, which is
 * its children's: break_word() puts it over the low bytes of word (the
 * entry's first instruction; little-endian), at_break() says whether the
 * child, stopped by a SIGTRAP, stopped on it: 1 with its pc set back to
 * the entry, 0 not there, -errno there but not set back.
 */
#if defined(__x86_64__)
/* int3, one byte; the trap reports the pc past it. */
static int break_word(long word, long *out)
{
	*out = (word & ~0xffL) | 0xcc;
	return 0;
}

static int at_break(pid_t pid, uint64_t entry)
{
	struct user_regs_struct regs;

	if (ptrace(PTRACE_GETREGS, pid, NULL, &regs) || regs.rip != entry + 1)
		return 0;
	regs.rip = entry;
	return ptrace(PTRACE_SETREGS, pid, NULL, &regs) ? -errno : 1;
}
#elif defined(__aarch64__)
/* BRK #0, one instruction word; the trap reports the pc at it, which
 * is where the child resumes: nothing to set back. */
static int break_word(long word, long *out)
{
	*out = (long)(((unsigned long)word & ~0xffffffffUL) | 0xd4200000UL);
	return 0;
}

static int at_break(pid_t pid, uint64_t entry)
{
	struct user_regs_struct regs; /* user_pt_regs: x0-x30, sp, pc, pstate */
	struct iovec iov = { &regs, sizeof(regs) };

	if (ptrace(PTRACE_GETREGSET, pid, (void *)NT_PRSTATUS, &iov))
		return 0;
	return regs.pc == entry;
}
#else
/* No breakpoint known: the child runs on from its exec. */
static int break_word(long word, long *out)
{
	(void)word;
	(void)out;
	return -ENOTSUP;
}

static int at_break(pid_t pid, uint64_t entry)
{
	(void)pid;
	(void)entry;
	return 0;
}
#endif

/*
 * A child held at its exec runs on until its program's entry point, where
 * the dynamic loader has mapped every library it needed and ran nothing
 * of the program yet: a breakpoint there, removed when hit, as a
 * debugger's `start` does.  0 with the child stopped at its entry (its
 * code as it was); else the child runs untraced, or is gone.
 */
int launch_run_to_entry(struct launched *l)
{
	uint64_t entry = l->held ? auxv_entry(l->pid) : 0;
	long word, brk;
	int st, hit, e;

	if (!entry)
		return -ENOENT;
	errno = 0;
	word = ptrace(PTRACE_PEEKTEXT, l->pid, (void *)entry, NULL);
	if (errno)
		return -errno;
	if ((e = break_word(word, &brk)))
		return e;
	if (ptrace(PTRACE_POKETEXT, l->pid, (void *)entry, (void *)brk))
		return -errno;
	if (ptrace(PTRACE_CONT, l->pid, NULL, NULL))
		goto restore;
	for (;;) {
		pid_t r = waitpid(l->pid, &st, __WALL);

		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0 || !WIFSTOPPED(st)) {
			l->held = 0;
			l->reaped = r == l->pid;
			return -ESRCH;
		}
		if (st >> 16)
			break; /* a group stop: let it be */
		hit = WSTOPSIG(st) == SIGTRAP ? at_break(l->pid, entry) : 0;
		if (hit < 0)
			break;
		if (hit) {
			ptrace(PTRACE_POKETEXT, l->pid, (void *)entry, (void *)word);
			return 0;
		}
		ptrace(PTRACE_CONT, l->pid, NULL, (void *)(long)WSTOPSIG(st));
	}
restore:
	ptrace(PTRACE_POKETEXT, l->pid, (void *)entry, (void *)word);
	launch_release(l);
	return -EINTR;
}

/*
 * The sampler stops a followed process as it execs (a SIGSTOP queued by
 * the exec's tracepoint, taken before the new image's first instruction):
 * seized then, it is where a launched child held at its exec is.  The
 * stop is either taken already (a group stop, which only a SIGCONT ends:
 * launch_release() sends it) or still pending (a signal-delivery stop,
 * then dropped: no stop at all, and its parent is told of none).
 */
int launch_seize_stopped(struct launched *l, pid_t pid)
{
	int st, e;

	memset(l, 0, sizeof(*l));
	l->pid = pid;
	l->go_fd = l->err_fd = -1;
	l->cont = 1;
	if (ptrace(PTRACE_SEIZE, pid, NULL, NULL)) {
		e = -errno;
		launch_release(l);
		return e;
	}
	l->held = 1;
	for (;;) {
		pid_t r = waitpid(pid, &st, __WALL);

		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0 || !WIFSTOPPED(st)) {
			l->held = l->cont = 0;
			l->reaped = r == pid; /* (only if it is the recorder's child) */
			return -ESRCH;
		}
		if (st >> 16)
			return 0; /* in the group stop */
		if (WSTOPSIG(st) == SIGSTOP) {
			l->cont = 0; /* not taken: dropped at the next resume */
			return 0;
		}
		/* Another signal came first: delivered, then the stop. */
		ptrace(PTRACE_CONT, pid, NULL, (void *)(long)WSTOPSIG(st));
	}
}

void launch_release(struct launched *l)
{
	/* Before the detach: a tracee detached in a group stop stays
	 * stopped. */
	if (l->cont)
		kill(l->pid, SIGCONT);
	l->cont = 0;
	if (!l->held)
		return;
	ptrace(PTRACE_DETACH, l->pid, NULL, NULL);
	l->held = 0;
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
	if (e)
		l->held = 0; /* it exits: no exec to stop at */
	else
		wait_exec(l);
	return -e;
}

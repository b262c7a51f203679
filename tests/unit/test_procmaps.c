/*
 * test_procmaps.c - reading /proc/PID/maps whole (record/procmaps.c): a
 * listing that a process's exit cut short is not taken for its mappings,
 * one read twice the same is, a whole one is read once, and this
 * process's own listing names its code.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include "record/procmaps.h"
#include "tests/unit/unit.h"

#define IMAGE "55d0c0de0000-55d0c0de1000 r-xp 00001000 08:01 42 /usr/bin/true\n"
#define LIBC "7f0000028000-7f00001bd000 r-xp 00028000 08:01 43 /usr/lib/libc.so.6\n"
#define LOADER "7f00001f0000-7f0000215000 r-xp 00001000 08:01 44 /usr/lib/ld-linux-x86-64.so.2\n"
#define GATE "ffffffffff600000-ffffffffff601000 --xp 00000000 00:00 0 [vsyscall]\n"

/* A fake /proc: hands out its listings in turn, counting the reads. */
struct fake {
	const char *const *texts;
	int n, reads;
};

static int fake_read(void *ctx, char **text, size_t *len)
{
	struct fake *f = ctx;
	const char *t = f->reads < f->n ? f->texts[f->reads] : "";

	f->reads++;
	*text = strdup(t);
	*len = strlen(t);
	return *text ? 0 : -ENOMEM;
}

static int whole(struct fake *f, char **text)
{
	size_t len;

	*text = NULL;
	return procmaps_whole_text(fake_read, f, text, &len);
}

TEST(procmaps_listing_cut_by_exit_is_no_listing)
{
	/* Read while /bin/true exited: the loader and the gate page missing,
	 * and the process's listing empty when read again. */
	static const char *const texts[] = { IMAGE LIBC, "" };
	struct fake f = { texts, 2, 0 };
	char *text;

	CHECK(procmaps_text_whole(IMAGE LIBC LOADER GATE, strlen(IMAGE LIBC LOADER GATE)));
	CHECK(!procmaps_text_whole(IMAGE LIBC, strlen(IMAGE LIBC)));
	CHECK(whole(&f, &text) == -ESRCH);
	CHECK(text == NULL);
	CHECK(f.reads == 2);
}

TEST(procmaps_listing_whole_or_confirmed)
{
	static const char *const gate[] = { IMAGE LIBC LOADER GATE };
	static const char *const twice[] = { IMAGE LIBC LOADER, IMAGE LIBC LOADER };
	/* Cut by an exec: read again, the new image's listing, whole. */
	static const char *const exec[] = { IMAGE, LIBC LOADER GATE };
	struct fake f1 = { gate, 1, 0 }, f2 = { twice, 2, 0 }, f3 = { exec, 2, 0 };
	char *text;

	CHECK(whole(&f1, &text) == 0 && f1.reads == 1 && !strcmp(text, gate[0]));
	free(text);
	/* No gate page (a 32-bit process, vsyscall=none): the same twice. */
	CHECK(whole(&f2, &text) == 0 && f2.reads == 2 && !strcmp(text, twice[0]));
	free(text);
	CHECK(whole(&f3, &text) == 0 && f3.reads == 2 && !strcmp(text, exec[1]));
	free(text);
}

TEST(procmaps_reads_own_code)
{
	struct maps_table t;
	const struct lp_mapping *m;

	CHECK(procmaps_read(getpid(), &t) == 0);
	m = maps_table_find(&t, (uint64_t)(uintptr_t)&fake_read);
	CHECK(m && (m->prot & LP_PROT_EXEC) && m->path[0] == '/');
	maps_table_free(&t);
}

TEST(procmaps_deleted_file_keeps_its_name)
{
	/* Code mapped from a file unlinked since: named by its path, not
	 * "PATH (deleted)". */
	static const char code[4096] = { (char)0xc3 };
	char path[64];
	struct maps_table t;
	const struct lp_mapping *m;
	void *p = MAP_FAILED;
	int fd;

	snprintf(path, sizeof(path), "/tmp/luaprof-procmaps-%d.bin", (int)getpid());
	fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);

	CHECK(fd >= 0 && write(fd, code, sizeof(code)) == (ssize_t)sizeof(code));
	if (fd >= 0)
		p = mmap(NULL, sizeof(code), PROT_READ | PROT_EXEC, MAP_PRIVATE, fd, 0);
	CHECK(p != MAP_FAILED);
	if (fd >= 0)
		close(fd);
	unlink(path);
	CHECK(procmaps_read(getpid(), &t) == 0);
	m = maps_table_find(&t, (uint64_t)(uintptr_t)p);
	CHECK(m && !strcmp(m->path, path));
	maps_table_free(&t);
	if (p != MAP_FAILED)
		munmap(p, sizeof(code));
}

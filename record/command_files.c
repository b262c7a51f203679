/*
 * command_files.c - the files a command will map before it runs: the
 * command as execvp() finds it (a script: its #! interpreter), its
 * PT_INTERP, and its DT_NEEDED libraries, recursively, looked up as the
 * dynamic loader looks them up, less its cache: DT_RPATH,
 * LD_LIBRARY_PATH, DT_RUNPATH (with $ORIGIN), then the system's
 * directories.
 *
 * `record -- CMD` knows what its command will load before it execs:
 * unwind.c builds their unwind tables then (unwind_preload()), LuaJIT's
 * detection reads the DWARF of the one that holds LuaJIT
 * (record/luajit_detect.c), and mapsize.c sizes the unwind maps from
 * them.  A library this does not find is handled when it is mapped, as
 * for any other process; a library it finds that is not the one loaded
 * costs only the time spent on it.
 */
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "record/command_files.h"

#define FILES_MAX 128 /* objects followed, the command included */

/* The system's directories after the multiarch ones of the needing
 * object's instruction set (multiarch(), first). */
static const char *const system_dirs[] = { "/lib64", "/usr/lib64", "/lib", "/usr/lib" };

/* The multiarch tuple of an object's e_machine, which names the
 * directories its libraries are installed in (Debian, Ubuntu); NULL for
 * an instruction set without one here. */
static const char *multiarch(unsigned machine)
{
	switch (machine) {
	case EM_X86_64: return "x86_64-linux-gnu";
	case EM_AARCH64: return "aarch64-linux-gnu";
	default: return NULL;
	}
}

struct walk {
	void (*each)(const char *path, int fd, struct Elf *elf, void *arg);
	void *arg;
	char *paths[FILES_MAX]; /* found, in the order they were queued */
	char *names[FILES_MAX]; /* DT_NEEDED names met, to look up once */
	int npaths, nnames;
};

static int seen_name(struct walk *p, const char *name)
{
	for (int i = 0; i < p->nnames; i++)
		if (!strcmp(p->names[i], name))
			return 1;
	if (p->nnames < FILES_MAX && (p->names[p->nnames] = strdup(name)))
		p->nnames++;
	return 0;
}

static void queue(struct walk *p, const char *path)
{
	for (int i = 0; i < p->npaths; i++)
		if (!strcmp(p->paths[i], path))
			return;
	if (p->npaths < FILES_MAX && (p->paths[p->npaths] = strdup(path)))
		p->npaths++;
}

/* dir/name, with $ORIGIN (or ${ORIGIN}) as the directory of `from`. */
static int join(char *out, size_t size, const char *dir, size_t dirlen,
		const char *name, const char *from)
{
	const char *slash = strrchr(from, '/');
	int n;

	if (dirlen >= 7 && !strncmp(dir, "$ORIGIN", 7)) {
		n = snprintf(out, size, "%.*s%.*s/%s", slash ? (int)(slash - from) : 1,
			     slash ? from : ".", (int)(dirlen - 7), dir + 7, name);
	} else if (dirlen >= 9 && !strncmp(dir, "${ORIGIN}", 9)) {
		n = snprintf(out, size, "%.*s%.*s/%s", slash ? (int)(slash - from) : 1,
			     slash ? from : ".", (int)(dirlen - 9), dir + 9, name);
	} else {
		n = snprintf(out, size, "%.*s/%s", (int)dirlen, dir, name);
	}
	return n > 0 && (size_t)n < size;
}

/* Looks name up in a colon-separated list of directories. */
static int find_in(char *out, size_t size, const char *list, const char *name,
		   const char *from)
{
	while (list && *list) {
		size_t len = strcspn(list, ":");

		if (len && join(out, size, list, len, name, from) && !access(out, R_OK))
			return 1;
		list += len + (list[len] == ':');
	}
	return 0;
}

static int find_library(char *out, size_t size, const char *name, const char *from,
			const char *rpath, const char *runpath, unsigned machine)
{
	const char *tuple = multiarch(machine);
	char dirs[64];

	if (strchr(name, '/'))
		return snprintf(out, size, "%s", name) < (int)size && !access(out, R_OK);
	if (!runpath && find_in(out, size, rpath, name, from))
		return 1;
	if (find_in(out, size, getenv("LD_LIBRARY_PATH"), name, from) ||
	    find_in(out, size, runpath, name, from))
		return 1;
	if (tuple && snprintf(dirs, sizeof(dirs), "/lib/%s:/usr/lib/%s", tuple, tuple) > 0 &&
	    find_in(out, size, dirs, name, from))
		return 1;
	for (size_t i = 0; i < sizeof(system_dirs) / sizeof(*system_dirs); i++)
		if (join(out, size, system_dirs[i], strlen(system_dirs[i]), name, from) &&
		    !access(out, R_OK))
			return 1;
	return 0;
}

/* A script's interpreter (#!/path), queued; 1 if path is a script. */
static int follow_script(struct walk *p, int fd)
{
	char head[256];
	ssize_t n = pread(fd, head, sizeof(head) - 1, 0);
	size_t at;

	if (n < 2 || head[0] != '#' || head[1] != '!')
		return 0;
	head[n] = '\0';
	head[strcspn(head, "\n")] = '\0';
	at = 2 + strspn(head + 2, " \t");
	head[at + strcspn(head + at, " \t")] = '\0';
	if (head[at] == '/')
		queue(p, head + at);
	return 1;
}

/* Hands one file to p->each and queues what it needs. */
static void follow(struct walk *p, const char *path)
{
	const char *needed[64], *rpath = NULL, *runpath = NULL;
	char found[4096];
	GElf_Ehdr eh;
	int fd = open(path, O_RDONLY | O_CLOEXEC), nneeded = 0;
	Elf_Scn *scn = NULL;
	size_t nph;
	Elf *elf;

	if (fd < 0)
		return;
	if (follow_script(p, fd)) {
		close(fd);
		return;
	}
	elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	if (elf && elf_kind(elf) != ELF_K_ELF) {
		elf_end(elf);
		elf = NULL;
	}
	p->each(path, fd, elf, p->arg);
	if (!elf || !gelf_getehdr(elf, &eh))
		eh.e_machine = EM_NONE;
	if (elf && !elf_getphdrnum(elf, &nph)) {
		for (size_t i = 0; i < nph; i++) {
			GElf_Phdr ph;
			size_t len;
			const char *img = elf_rawfile(elf, &len);

			if (gelf_getphdr(elf, (int)i, &ph) && ph.p_type == PT_INTERP && img &&
			    ph.p_offset < len && ph.p_filesz < sizeof(found) &&
			    ph.p_filesz <= len - ph.p_offset) {
				memcpy(found, img + ph.p_offset, ph.p_filesz);
				found[ph.p_filesz] = '\0';
				queue(p, found);
			}
		}
	}
	while (elf && (scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		Elf_Data *d;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_DYNAMIC ||
		    !(d = elf_getdata(scn, NULL)))
			continue;
		for (size_t i = 0; sh.sh_entsize && i < sh.sh_size / sh.sh_entsize; i++) {
			GElf_Dyn dyn;
			const char *s;

			if (!gelf_getdyn(d, (int)i, &dyn) || dyn.d_tag == DT_NULL)
				break;
			s = elf_strptr(elf, sh.sh_link, dyn.d_un.d_val);
			if (!s)
				continue;
			if (dyn.d_tag == DT_NEEDED && nneeded < 64)
				needed[nneeded++] = s;
			else if (dyn.d_tag == DT_RPATH)
				rpath = s;
			else if (dyn.d_tag == DT_RUNPATH)
				runpath = s;
		}
	}
	for (int i = 0; i < nneeded; i++)
		if (!seen_name(p, needed[i]) &&
		    find_library(found, sizeof(found), needed[i], path, rpath, runpath,
				 eh.e_machine))
			queue(p, found);
	if (elf)
		elf_end(elf);
	close(fd);
}

int command_files(const char *cmd,
		  void (*each)(const char *path, int fd, struct Elf *elf, void *arg),
		  void *arg)
{
	struct walk p = { .each = each, .arg = arg };
	char path[4096];

	if (!cmd || elf_version(EV_CURRENT) == EV_NONE)
		return 0;
	if (strchr(cmd, '/')) {
		if (snprintf(path, sizeof(path), "%s", cmd) >= (int)sizeof(path))
			return -ENAMETOOLONG;
	} else if (!find_in(path, sizeof(path), getenv("PATH") ?: "/usr/local/bin:/usr/bin:/bin",
			    cmd, "")) {
		return -ENOENT;
	}
	queue(&p, path);
	for (int i = 0; i < p.npaths; i++)
		follow(&p, p.paths[i]);
	for (int i = 0; i < p.npaths; i++)
		free(p.paths[i]);
	for (int i = 0; i < p.nnames; i++)
		free(p.names[i]);
	return 0;
}

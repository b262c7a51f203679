/*
 * luajit_vm.c - turns a G that the BPF walker found into a located VM.
 *
 * The walker trusts r14 - g2disp only when G->mainthref and
 * G->cur_L->glref agree; here the recorder checks the rest before Lua
 * frames are believed: the dispatch table at G + g2disp must be a table
 * of code pointers into LuaJIT's own object.  Those pointers also find the
 * interpreter: LuaJIT describes its whole assembler VM with one .eh_frame
 * entry (a constant CFA, the C frame), so the CFI row containing the first
 * handler spans exactly the code where rdx is BASE and rbx is PC.  Without
 * CFI, the span of the handlers themselves is used.
 *
 * That entry is distinctive enough to be found before any sample
 * (luajit_cfi.c), so the walker has the interpreter's range from the first
 * sample, and the dispatch table confirms it later.
 */
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <elfutils/libdw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/uio.h>
#include <unistd.h>

#include "record/luajit.h"
#include "record/unwind_table.h"

/* Bytecode handlers checked: the first instructions of the dispatch
 * table, all present in every 2.1 build. */
#define DISPATCH_CHECKED 64

int target_read(pid_t pid, uint64_t addr, void *buf, size_t len)
{
	struct iovec local = { buf, len }, remote = { (void *)addr, len };
	ssize_t n = process_vm_readv(pid, &local, 1, &remote, 1, 0);

	if (n < 0)
		return -errno;
	return (size_t)n == len ? 0 : -EFAULT;
}

/* The CFI row of the object at path containing vaddr: [start, end),
 * the function's extent by its FDE.  0 or -errno. */
int lj_cfi_row(const char *path, uint64_t vaddr, uint64_t *start, uint64_t *end)
{
	Dwarf_Addr s = 0, e = 0;
	Dwarf_Frame *frame = NULL;
	Dwarf_CFI *cfi;
	Elf *elf;
	bool signalp;
	int fd, err = -ENOENT;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	elf_version(EV_CURRENT);
	elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	cfi = elf ? dwarf_getcfi_elf(elf) : NULL;
	if (cfi && dwarf_cfi_addrframe(cfi, vaddr, &frame) == 0 &&
	    dwarf_frame_info(frame, &s, &e, &signalp) >= 0 && e > s) {
		*start = s;
		*end = e;
		err = 0;
	}
	free(frame);
	if (cfi)
		dwarf_cfi_end(cfi);
	if (elf)
		elf_end(elf);
	close(fd);
	return err;
}

int lj_locate_vm(struct lj_target *t, uint64_t G, char *msg, size_t msglen)
{
	const struct lj_layout *lo = &t->layout;
	uint64_t disp[DISPATCH_CHECKED], lo_addr = UINT64_MAX, hi_addr = 0;
	uint64_t start = 0, end = 0;
	int err;

	t->state = LJ_REFUSED;
	err = target_read(t->pid, G + (int64_t)lo->g2disp, disp, sizeof(disp));
	if (err) {
		snprintf(msg, msglen, "cannot read the dispatch table at G%+d: %s",
			 lo->g2disp, strerror(-err));
		return err;
	}
	for (int i = 0; i < DISPATCH_CHECKED; i++) {
		if (disp[i] < lo_addr)
			lo_addr = disp[i];
		if (disp[i] > hi_addr)
			hi_addr = disp[i];
	}
	if (t->vm_end) {
		start = t->vm_start; /* found from CFI at detection */
		end = t->vm_end;
	} else if (lj_cfi_row(t->object, disp[0] - t->bias, &start, &end) == 0) {
		start += t->bias;
		end += t->bias;
	} else {
		/* No CFI: the handlers' own span, with room for the last. */
		start = lo_addr;
		end = hi_addr + 4096;
	}
	if (lo_addr < start || hi_addr >= end || end - start > (64u << 20)) {
		snprintf(msg, msglen, "the dispatch table at G%+d does not point into "
			 "one code range of %s (0x%llx..0x%llx); the layout is wrong "
			 "for this build", lo->g2disp, t->object,
			 (unsigned long long)lo_addr, (unsigned long long)hi_addr);
		return -EINVAL;
	}
	t->G = G;
	t->vm_start = start;
	t->vm_end = end;
	t->state = LJ_READY;
	return 0;
}

void lj_target_proc(const struct lj_target *t, struct lj_proc *p)
{
	memset(p, 0, sizeof(*p));
	p->layout = t->layout;
	p->vm_start = t->vm_start;
	p->vm_end = t->vm_end;
	if (t->state == LJ_READY)
		p->g_hint = t->G;
}

/* mm->start_code of pid: field 26 of /proc/PID/stat, counted after the
 * last ')' (the command name may hold any character). */
static int start_code(pid_t pid, uint64_t *out)
{
	char path[64], buf[1024], *p;
	unsigned long long v = 0;
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return -EIO;
	buf[n] = '\0';
	p = strrchr(buf, ')');
	/* After ") ": field 3 (state) on; start_code is field 26. */
	for (int field = 2; p && field < 26; field++)
		p = strchr(p + 1, ' ');
	if (!p || sscanf(p + 1, "%llu", &v) != 1 || !v)
		return -EIO;
	*out = v;
	return 0;
}

int lj_target_image(const struct lj_target *t, struct lp_file_id *key,
		    struct lj_proc *proc)
{
	struct stat exe, obj;
	char path[64];
	uint64_t code = 0;

	snprintf(path, sizeof(path), "/proc/%d/exe", (int)t->pid);
	if (t->state != LJ_READY || stat(path, &exe) || stat(t->object, &obj) ||
	    exe.st_dev != obj.st_dev || exe.st_ino != obj.st_ino ||
	    start_code(t->pid, &code) || t->vm_start < code)
		return -ENOENT;
	memset(key, 0, sizeof(*key));
	key->dev = lp_kernel_dev(major(exe.st_dev), minor(exe.st_dev));
	key->ino = exe.st_ino;
	key->size = exe.st_size;
	lj_target_proc(t, proc);
	proc->vm_start = t->vm_start - code;
	proc->vm_end = t->vm_end - code;
	proc->g_hint = 0; /* another process's */
	return 0;
}

void lj_target_record(const struct lj_target *t, struct lp_luajit *rec)
{
	static char name[PATH_MAX + 64];

	memset(rec, 0, sizeof(*rec));
	snprintf(name, sizeof(name), "LuaJIT 2.1 (%s, %s) in %s",
		 (t->layout.flags & LJ_LAYOUT_OPENRESTY) ? "OpenResty luajit2" : "upstream",
		 (t->layout.flags & LJ_LAYOUT_GC64) ? "GC64" : "32-bit refs", t->object);
	rec->pid = (uint32_t)t->pid;
	rec->G = t->G;
	rec->vm_start = t->vm_start;
	rec->vm_end = t->vm_end;
	rec->flags = ((t->layout.flags & LJ_LAYOUT_GC64) ? LP_LUAJIT_GC64 : 0) |
		     ((t->layout.flags & LJ_LAYOUT_OPENRESTY) ? LP_LUAJIT_OPENRESTY : 0);
	rec->name = name;
	rec->source = t->source;
	rec->build = t->build_used;
	if (t->build) {
		rec->nff = t->build->nffnames;
		rec->ffnames = (const char *const *)t->build->ffnames;
	}
}

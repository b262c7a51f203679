/*
 * luajit_detect.c - finds LuaJIT in a target and chooses the struct
 * offsets (struct lj_layout) the walker reads its VM with.
 *
 * Production builds are stripped: what is left is the exported API
 * (lua_*, luaL_*, luaJIT_*) in .dynsym, which a static `luajit` keeps too
 * (it exports the API for C modules).  So an executable mapping whose ELF
 * exports luaJIT_setmode holds LuaJIT, wherever it was linked.  Two facts
 * choose a built-in layout: OpenResty's luajit2 exports lua_setexdata,
 * upstream does not; and lua_gettop, `return L->top - L->base`, compiles
 * to two loads whose displacements are the offsets of top and base in
 * lua_State, which differ between GC64 and 32-bit references.
 *
 * The built-in table only knows the builds it was derived from, so two
 * other sources come first.  An offsets file (--luajit-offsets FILE, the
 * fields of struct lj_layout as "field = value" lines) describes any
 * build, and is what the user asked for.  Otherwise the object's DWARF,
 * or that of its separate debug file (luajit_dwarf.c), gives the offsets
 * of the build actually running, and wins over the table when they
 * differ; the source string says which was used and whether the table
 * disagreed.  Only without either does the table decide, and a build it
 * cannot place is refused with what failed.  The table may know several
 * builds of one variant (upstream's 32-bit-reference build and
 * tarantool's fork look alike by their exports): the interpreter's code,
 * found from its CFI, says how far from G its dispatch table lies, and
 * that picks the row.
 *
 * PUC Lua exports lua_newstate as LuaJIT does, but not luaJIT_setmode:
 * such an object is noted (version from lua_ident) so that the recorder
 * can say that a Lua VM it does not walk was seen.
 *
 * Whatever the source, the layout is only a candidate: the BPF walker
 * validates G with it at every sample and luajit_vm.c checks the dispatch
 * table before Lua frames are trusted.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <gelf.h>
#include <libelf.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "record/luajit.h"
#include "record/procmaps.h"

struct elf_exports {
	uint64_t setmode, setexdata, gettop; /* vaddrs, 0 when absent */
	uint8_t gettop_code[16];
	size_t gettop_len;
	int64_t bias_off; /* p_vaddr - p_offset of the segment of gettop */
	/* PUC Lua: lua_newstate (LuaJIT has it too), its version string,
	 * and an export each of 5.4, 5.3, 5.2 and 5.1 has and the later
	 * ones have not (or not any more). */
	uint64_t newstate, ident, newuserdatauv, rotate, callk, setfenv;
	char version[32]; /* "Lua 5.3.6" from lua_ident, or "" */
};

static int file_offset(Elf *elf, uint64_t vaddr, uint64_t *off, int64_t *delta)
{
	size_t n;

	if (elf_getphdrnum(elf, &n))
		return -EINVAL;
	for (size_t i = 0; i < n; i++) {
		GElf_Phdr ph;

		if (!gelf_getphdr(elf, i, &ph) || ph.p_type != PT_LOAD)
			continue;
		if (vaddr >= ph.p_vaddr && vaddr < ph.p_vaddr + ph.p_filesz) {
			*off = vaddr - ph.p_vaddr + ph.p_offset;
			*delta = (int64_t)(ph.p_vaddr - ph.p_offset);
			return 0;
		}
	}
	return -ENOENT;
}

/*
 * PUC Lua's lua_ident is its version string, "$LuaVersion: Lua 5.3.6
 * Copyright ..." (5.1: "$Lua: Lua 5.1.5 ..."): the "Lua 5.x[.y]" in it,
 * read from the file, into ex->version; left empty if it is not there.
 */
static void puc_version(int fd, Elf *elf, struct elf_exports *ex)
{
	char buf[96];
	const char *v;
	uint64_t off;
	int64_t delta;
	ssize_t n;
	size_t len;

	if (file_offset(elf, ex->ident, &off, &delta))
		return;
	n = pread(fd, buf, sizeof(buf) - 1, (off_t)off);
	if (n <= 0)
		return;
	buf[n] = '\0';
	v = strstr(buf, "Lua 5.");
	if (!v || v[6] < '1' || v[6] > '4')
		return;
	len = 7 + strspn(v + 7, "0123456789.");
	if (len >= sizeof(ex->version))
		return;
	memcpy(ex->version, v, len);
	ex->version[len] = '\0';
}

/* The exports read_exports() looks for, and where it keeps them. */
#define EXPORT(sym, field) { sym, offsetof(struct elf_exports, field) }
static const struct {
	const char *name;
	size_t off; /* of a uint64_t vaddr in struct elf_exports */
} exports[] = {
	EXPORT("luaJIT_setmode", setmode),	 EXPORT("lua_setexdata", setexdata),
	EXPORT("lua_gettop", gettop),		 EXPORT("lua_newstate", newstate),
	EXPORT("lua_ident", ident),		 EXPORT("lua_newuserdatauv", newuserdatauv),
	EXPORT("lua_rotate", rotate),		 EXPORT("lua_callk", callk),
	EXPORT("lua_setfenv", setfenv),
};
#undef EXPORT
#define NEXPORTS (sizeof(exports) / sizeof(exports[0]))

static int read_exports(int fd, struct elf_exports *ex)
{
	Elf *elf;
	Elf_Scn *scn = NULL;
	int err = -ENOENT;

	memset(ex, 0, sizeof(*ex));
	elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	if (!elf)
		return -EINVAL;
	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		Elf_Data *data;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_DYNSYM || !sh.sh_entsize)
			continue;
		data = elf_getdata(scn, NULL);
		for (size_t i = 0; data && i < sh.sh_size / sh.sh_entsize; i++) {
			GElf_Sym sym;
			const char *name;

			if (!gelf_getsym(data, (int)i, &sym) || !sym.st_value ||
			    sym.st_shndx == SHN_UNDEF)
				continue;
			name = elf_strptr(elf, sh.sh_link, sym.st_name);
			if (!name || strncmp(name, "lua", 3))
				continue;
			for (size_t k = 0; k < NEXPORTS; k++)
				if (!strcmp(name, exports[k].name))
					memcpy((char *)ex + exports[k].off, &sym.st_value,
					       sizeof(uint64_t));
		}
	}
	if (!ex->setmode && ex->newstate && ex->ident)
		puc_version(fd, elf, ex);
	if (!ex->setmode && ex->newstate && !ex->version[0]) {
		const char *v = ex->newuserdatauv ? "Lua 5.4" : ex->rotate ? "Lua 5.3" :
				ex->callk ? "Lua 5.2" : ex->setfenv ? "Lua 5.1" : "";

		snprintf(ex->version, sizeof(ex->version), "%s", v);
	}
	if (ex->setmode && ex->gettop) {
		uint64_t off;
		ssize_t n;

		err = file_offset(elf, ex->gettop, &off, &ex->bias_off);
		if (!err) {
			n = pread(fd, ex->gettop_code, sizeof(ex->gettop_code), (off_t)off);
			ex->gettop_len = n > 0 ? (size_t)n : 0;
		}
	}
	elf_end(elf);
	return err;
}

/* The lj_layout fields, by the names a --luajit-offsets file uses
 * (bpf/luajit_layout.h's list).  A file may leave out the optional ones: without
 * them Lua frames are still walked (fast-function ids: no coroutine
 * crossing; traces: number only; snapshots: compiled code placed in the
 * trace's first function). */
#define FILE_FIELD(type, name, group, ...) FILE_FIELD_##group(name)
#define FILE_FIELD_VM(f) FILE_FIELD_ENTRY(f, 0)
#define FILE_FIELD_FF(f) FILE_FIELD_ENTRY(f, 1)
#define FILE_FIELD_JIT(f) FILE_FIELD_ENTRY(f, 1)
#define FILE_FIELD_SNAP(f) FILE_FIELD_ENTRY(f, 1)
#define FILE_FIELD_PAD(f)
#define FILE_FIELD_ENTRY(f, opt) \
	{ #f, offsetof(struct lj_layout, f), sizeof(((struct lj_layout *)0)->f), opt },
static const struct {
	const char *name;
	size_t off, size;
	int optional;
} layout_fields[] = {
	LJ_LAYOUTDEF(FILE_FIELD)
};
#undef FILE_FIELD
#undef FILE_FIELD_VM
#undef FILE_FIELD_FF
#undef FILE_FIELD_JIT
#undef FILE_FIELD_SNAP
#undef FILE_FIELD_PAD
#undef FILE_FIELD_ENTRY
#define NFIELDS (sizeof(layout_fields) / sizeof(layout_fields[0]))

/* A field's value; g2disp is the one signed field. */
static long long field_get(const struct lj_layout *lo, size_t i)
{
	const char *p = (const char *)lo + layout_fields[i].off;
	uint32_t u32;
	uint16_t u16;

	switch (layout_fields[i].size) {
	case 1:
		return *(const uint8_t *)p;
	case 2:
		memcpy(&u16, p, 2);
		return u16;
	default:
		memcpy(&u32, p, 4);
		return layout_fields[i].off == offsetof(struct lj_layout, g2disp) ?
			(long long)(int32_t)u32 : (long long)u32;
	}
}

/* Says where two layouts differ: the first field and how many. */
static void layout_diff(const struct lj_layout *a, const struct lj_layout *b,
			char *buf, size_t len)
{
	size_t first = NFIELDS, n = 0;

	for (size_t i = 0; i < NFIELDS; i++) {
		if (field_get(a, i) != field_get(b, i)) {
			if (first == NFIELDS)
				first = i;
			n++;
		}
	}
	if (!n)
		snprintf(buf, len, "same as");
	else
		snprintf(buf, len, "differs (%s %lld, not %lld%s) from",
			 layout_fields[first].name, field_get(a, first),
			 field_get(b, first), n > 1 ? ", and more" : "");
}


/* t->source, shortened with "..." rather than cut silently when a long
 * path does not fit. */
__attribute__((format(printf, 2, 3)))
static void set_source(struct lj_target *t, const char *fmt, ...)
{
	const size_t len = sizeof(t->source);
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(t->source, len, fmt, ap);
	va_end(ap);
	if (n >= 0 && (size_t)n >= len)
		memcpy(t->source + len - 4, "...", 4);
}

/*
 * The path to read m's DWARF from: libdw needs a path, not the mapping's
 * fd, to find separate debug files beside the object.  In another mount
 * namespace the target's path is resolved through /proc/PID/root.  The
 * file there must still be the one mapped (same inode): after an upgrade
 * or in another container the path names another build, whose DWARF
 * would describe the wrong offsets.  0, or -ENOENT.
 */
static int dwarf_object_path(pid_t pid, const struct lp_mapping *m, char *buf,
			     size_t len)
{
	struct stat ours, theirs, st;
	char root[64];
	int n;

	snprintf(root, sizeof(root), "/proc/%d/root", (int)pid);
	if (!stat(root, &theirs) && !stat("/", &ours) &&
	    (theirs.st_dev != ours.st_dev || theirs.st_ino != ours.st_ino))
		n = snprintf(buf, len, "%s%s", root, m->path);
	else
		n = snprintf(buf, len, "%s", m->path);
	if (n < 0 || (size_t)n >= len || stat(buf, &st) || st.st_ino != m->inode)
		return -ENOENT;
	return 0;
}

/*
 * A layout read from an object's DWARF, with the names of its builtins
 * from lj_ff.h's enum: one per object file (the same tarantool in 200
 * processes is read once), kept for the recorder's life since targets
 * point to its build description.  A file with no usable DWARF is kept
 * too, with its error, so that it is not read again.
 */
struct dwarf_build {
	dev_t dev;
	ino_t ino;
	off_t size;
	struct timespec mtime;
	int err;
	char msg[PATH_MAX + 128];
	struct lj_build_desc desc; /* name "dwarf", the layout, names */
	struct lj_ffnames ff;
	struct dwarf_build *next;
};

static struct dwarf_build *dwarf_builds;

static const struct dwarf_build *dwarf_build(const char *path)
{
	struct dwarf_build *d;
	struct stat st;

	if (stat(path, &st))
		return NULL;
	for (d = dwarf_builds; d; d = d->next)
		if (d->dev == st.st_dev && d->ino == st.st_ino && d->size == st.st_size &&
		    d->mtime.tv_sec == st.st_mtim.tv_sec &&
		    d->mtime.tv_nsec == st.st_mtim.tv_nsec)
			return d;
	d = calloc(1, sizeof(*d));
	if (!d)
		return NULL;
	d->dev = st.st_dev;
	d->ino = st.st_ino;
	d->size = st.st_size;
	d->mtime = st.st_mtim;
	d->err = lj_layout_from_dwarf(path, &d->desc.layout, &d->ff, d->msg,
				      sizeof(d->msg));
	if (!d->err) {
		const struct lj_build_desc *known = lj_known_build(d->desc.layout.flags);

		d->desc.name = "dwarf";
		d->desc.flags = d->desc.layout.flags;
		/* Without the enum, the names of the variant's first row. */
		d->desc.ffnames = d->ff.n ? (const char *const *)d->ff.names :
				  known ? known->ffnames : NULL;
		d->desc.nffnames = d->ff.n ? d->ff.n : known ? known->nffnames : 0;
	}
	d->next = dwarf_builds;
	dwarf_builds = d;
	return d;
}

/* What the code of the interpreter says about the build: the distance
 * from G to the dispatch table it uses (lj_g2disp_from_vm), read from
 * the file between the ELF vaddrs start and end.  0 or -errno. */
static int vm_g2disp(pid_t pid, const struct lp_mapping *m, uint64_t start,
		     uint64_t end, int gc64, int32_t *g2disp)
{
	uint8_t *code = NULL;
	uint64_t off;
	int64_t delta;
	Elf *elf = NULL;
	int fd, err = -ENOENT;

	if (end <= start || end - start > (4u << 20))
		return -ENOENT;
	fd = procmaps_open(pid, m);
	if (fd < 0)
		return fd;
	elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	code = malloc(end - start);
	if (elf && code && !file_offset(elf, start, &off, &delta) &&
	    pread(fd, code, end - start, (off_t)off) == (ssize_t)(end - start))
		err = lj_g2disp_from_vm(code, end - start, gc64, g2disp);
	free(code);
	if (elf)
		elf_end(elf);
	close(fd);
	return err;
}

/*
 * Fills t->layout, t->source, t->build and t->build_used for the LuaJIT
 * in t->object: from offsets_file if given, else from DWARF if there is
 * debug info for LuaJIT, else from the built-in row of the variant that
 * the exports (flags) and lua_gettop (gc64: lj_gc64_from_gettop()) chose,
 * among several of one variant the one whose g2disp the interpreter's
 * code shows (vm_g2disp, NULL when unknown).  0, or -errno with the
 * reason in msg.
 */
static int choose_layout(struct lj_target *t, const struct lp_mapping *m,
			 const struct elf_exports *ex, int gc64, uint32_t flags,
			 const int32_t *vm_g2disp, const char *offsets_file,
			 char *msg, size_t msglen)
{
	const struct lj_build_desc *table = NULL;
	const struct dwarf_build *d = NULL;
	char diff[96], path[PATH_MAX], code[96] = "";
	size_t nflags = 0;
	int err;

	if (gc64 >= 0)
		table = lj_known_build_for(flags, vm_g2disp, &nflags);
	if (offsets_file) {
		err = lj_layout_from_file(offsets_file, &t->layout, msg, msglen);
		if (err)
			return err;
		t->build = lj_known_build(t->layout.flags);
		set_source(t, "offsets from %s", offsets_file);
		t->build_used = "file";
		return 0;
	}
	err = dwarf_object_path(t->pid, m, path, sizeof(path));
	if (!err) {
		d = dwarf_build(path);
		err = d ? d->err : -ENOMEM;
	}
	if (!err) {
		t->layout = d->desc.layout;
		t->build = &d->desc;
		t->build_used = "dwarf";
		if (!table && gc64 >= 0)
			table = lj_known_build(flags);
		if (table) {
			layout_diff(&d->desc.layout, &table->layout, diff, sizeof(diff));
			set_source(t, "offsets from DWARF (%s), %s built-in '%s'",
				   d->msg, diff, table->name);
		} else {
			set_source(t, "offsets from DWARF (%s)", d->msg);
		}
		return 0;
	}
	/* -ENOENT: no debug info for LuaJIT, the common case.  Anything else
	 * is debug info that could not be used, which is worth a word. */
	const char *dmsg = err != -ENOENT && d ? d->msg : "";
	if (gc64 < 0) {
		snprintf(msg, msglen, "%s: LuaJIT, but lua_gettop's code is not "
			 "a pattern luaprof knows, so GC64 or not is unknown%s%s; "
			 "describe the build with --luajit-offsets", t->object,
			 dmsg[0] ? ", and DWARF did not help: " : "", dmsg);
		return -ENOTSUP;
	}
	if (vm_g2disp)
		snprintf(code, sizeof(code), "; the interpreter finds its dispatch "
			 "table at G%+d", *vm_g2disp);
	if (!table) {
		snprintf(msg, msglen, "%s: LuaJIT build with no known layout (%s "
			 "lua_setexdata; lua_gettop: %s%s%s)%s%s; describe it with "
			 "--luajit-offsets", t->object, ex->setexdata ? "exports" : "no",
			 gc64 ? "GC64" : "32-bit refs", code,
			 nflags ? ", which no built-in layout of this variant does" : "",
			 dmsg[0] ? "; DWARF did not help: " : "", dmsg);
		return -ENOTSUP;
	}
	t->layout = table->layout;
	t->build = table;
	t->build_used = table->name;
	if (nflags > 1)
		snprintf(diff, sizeof(diff), ", the one of %zu built-in layouts of "
			 "this variant that fits", nflags);
	else
		diff[0] = '\0';
	set_source(t, "built-in layout '%s' (%s lua_setexdata; lua_gettop: %s%s%s)%s%s",
		   table->name, ex->setexdata ? "exports" : "no",
		   gc64 ? "GC64" : "32-bit refs", code, diff,
		   dmsg[0] ? "; DWARF unusable: " : "", dmsg);
	return 0;
}

void lj_preload(const char *path, void *arg)
{
	struct elf_exports ex;
	int fd = open(path, O_RDONLY | O_CLOEXEC), err;

	(void)arg;
	if (fd < 0)
		return;
	elf_version(EV_CURRENT);
	err = read_exports(fd, &ex);
	close(fd);
	if (!err)
		dwarf_build(path);
}

/* Every LuaJIT 2.1 build's VM entry frame (CFRAME_SIZE) is 80 bytes
 * (96 with LUAJIT_NO_UNWIND, which only an offsets file can say). */
#define LJ_CFRAME_SIZE 80

int lj_detect(pid_t pid, const struct maps_table *maps, const char *offsets_file,
	      struct lj_target **out, struct lua_puc *puc, char *msg, size_t msglen)
{
	const char *seen = NULL;

	*out = NULL;
	msg[0] = '\0';
	if (puc)
		memset(puc, 0, sizeof(*puc));
	elf_version(EV_CURRENT);
	for (uint32_t i = 0; i < maps->n; i++) {
		const struct lp_mapping *m = &maps->v[i];
		struct elf_exports ex;
		struct lj_target *t;
		uint64_t vs = 0, ve = 0;
		uint32_t flags = 0;
		int32_t g2disp;
		int fd, gc64, err, have_vm, have_g2disp = 0;

		/* One look per file: a file maps several segments. */
		if (m->path[0] != '/' || (seen && !strcmp(seen, m->path)))
			continue;
		seen = m->path;
		fd = procmaps_open(pid, m);
		if (fd < 0)
			continue;
		err = read_exports(fd, &ex);
		close(fd);
		if (err) {
			/* Not LuaJIT.  PUC Lua exports lua_newstate too. */
			if (puc && !puc->version[0] && !ex.setmode && ex.version[0]) {
				snprintf(puc->version, sizeof(puc->version), "%s", ex.version);
				snprintf(puc->object, sizeof(puc->object), "%s", m->path);
			}
			continue;
		}

		gc64 = lj_gc64_from_gettop(ex.gettop_code, ex.gettop_len);
		if (ex.setexdata)
			flags |= LJ_LAYOUT_OPENRESTY;
		if (gc64 > 0)
			flags |= LJ_LAYOUT_GC64;
		t = calloc(1, sizeof(*t));
		if (!t)
			return -ENOMEM;
		t->pid = pid;
		t->state = LJ_WAITING_G;
		snprintf(t->object, sizeof(t->object), "%s", m->path);
		/* The mapping's start corresponds to file offset pgoff. */
		t->bias = (int64_t)(m->start - m->pgoff) - ex.bias_off;
		have_vm = !lj_vm_from_cfi(t->object, LJ_CFRAME_SIZE, &vs, &ve);
		if (have_vm && gc64 >= 0)
			have_g2disp = !vm_g2disp(pid, m, vs, ve, gc64, &g2disp);
		err = choose_layout(t, m, &ex, gc64, flags, have_g2disp ? &g2disp : NULL,
				    offsets_file, msg, msglen);
		if (err) {
			free(t);
			return err;
		}
		if (t->layout.cf_size != LJ_CFRAME_SIZE)
			have_vm = !lj_vm_from_cfi(t->object, t->layout.cf_size, &vs, &ve);
		if (have_vm) {
			t->vm_start = vs + t->bias;
			t->vm_end = ve + t->bias;
		}
		*out = t;
		return 0;
	}
	return -ENOENT;
}

struct lj_target *lj_target_fork(const struct lj_target *t, pid_t child)
{
	struct lj_target *c = malloc(sizeof(*c));

	if (!c)
		return NULL;
	*c = *t;
	c->pid = child;
	return c;
}


/* Whether value fits field i: g2disp is signed, the rest unsigned. */
static int field_fits(size_t i, long long value)
{
	if (layout_fields[i].off == offsetof(struct lj_layout, g2disp))
		return value >= INT32_MIN && value <= INT32_MAX;
	return value >= 0 && (unsigned long long)value <
		1ull << (8 * layout_fields[i].size);
}

int lj_layout_from_file(const char *path, struct lj_layout *lo, char *msg,
			size_t msglen)
{
	char line[256], name[64];
	uint8_t set[NFIELDS] = { 0 };
	long long value;
	int lineno = 0, end, err;
	FILE *f = fopen(path, "re");

	if (!f) {
		err = -errno;
		snprintf(msg, msglen, "cannot read %s: %s", path, strerror(-err));
		return err;
	}
	memset(lo, 0, sizeof(*lo));
	while (fgets(line, sizeof(line), f)) {
		size_t i;

		lineno++;
		if (line[0] == '#' || line[strspn(line, " \t\r\n")] == '\0')
			continue;
		/* Nothing but blanks or a comment may follow the number. */
		end = 0;
		if (sscanf(line, " %63[A-Za-z0-9_] = %lli%n", name, &value, &end) != 2 ||
		    (line[end + strspn(line + end, " \t\r\n")] != '\0' &&
		     line[end + strspn(line + end, " \t\r\n")] != '#'))
			goto bad;
		for (i = 0; i < NFIELDS && strcmp(layout_fields[i].name, name); i++)
			;
		if (i == NFIELDS) {
			snprintf(msg, msglen, "%s:%d: no field '%s' in struct lj_layout "
				 "(bpf/luajit_layout.h)", path, lineno, name);
			goto fail;
		}
		if (!field_fits(i, value)) {
			snprintf(msg, msglen, "%s:%d: %lld does not fit %s (%zu byte%s)",
				 path, lineno, value, name, layout_fields[i].size,
				 layout_fields[i].size > 1 ? "s" : "");
			goto fail;
		}
		memcpy((char *)lo + layout_fields[i].off, &value, layout_fields[i].size);
		set[i] = 1;
	}
	fclose(f);
	for (size_t i = 0; i < NFIELDS; i++) {
		if (!set[i] && !layout_fields[i].optional) {
			snprintf(msg, msglen, "%s: no value for %s", path,
				 layout_fields[i].name);
			return -EINVAL;
		}
	}
	/* The walker reads references by ref_size and frames by the GC64
	 * flag: the two must agree. */
	if ((lo->flags & ~(LJ_LAYOUT_GC64 | LJ_LAYOUT_OPENRESTY)) ||
	    (lo->ref_size != 4 && lo->ref_size != 8) ||
	    (lo->ref_size == 8) != !!(lo->flags & LJ_LAYOUT_GC64)) {
		snprintf(msg, msglen, "%s: flags = %u and ref_size = %u disagree "
			 "(flags: 1 for GC64, 2 for OpenResty; ref_size: 8 with GC64, "
			 "else 4)", path, lo->flags, lo->ref_size);
		return -EINVAL;
	}
	return 0;
bad:
	snprintf(msg, msglen, "%s:%d: expected 'field = number' with a field of "
		 "struct lj_layout (bpf/luajit_layout.h)", path, lineno);
fail:
	fclose(f);
	return -EINVAL;
}

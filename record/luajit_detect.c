/*
 * luajit_detect.c - finds LuaJIT in a target and chooses the struct
 * offsets (struct lj_layout) the walker reads its VM with.
 *
 * Production builds are stripped: what is left is the exported API
 * (lua_*, luaL_*, luaJIT_*) in .dynsym, which a static `luajit` keeps too
 * (it exports the API for C modules).  So an executable mapping whose ELF
 * exports luaJIT_setmode holds LuaJIT, wherever it was linked.
 *
 * Three sources, in this order.  An offsets file (--luajit-offsets FILE,
 * the fields of struct lj_layout as "field = value" lines) is what the
 * user asked for.  The object's DWARF, or that of its separate debug file
 * (luajit_dwarf.c), is the compiler's own account of the build.  Without
 * either, the object's code (luajit_code.c): the exported functions and
 * the interpreter say where each field is, and LuaJIT 2.1's declarations
 * complete what they do not show.  Where DWARF is there, the code is read
 * too and the source string says whether the two agree.  A build whose
 * code cannot be read is refused with what failed; luaprof keeps no table
 * of builds to guess from (luajit_layouts.c's rows are what the tests
 * hold the derivation to).  Each object is read once, whatever number of
 * processes map it.
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
#include "record/luajit_code.h"
#include "record/procmaps.h"

struct elf_exports {
	uint64_t setmode, setexdata; /* vaddrs, 0 when absent */
	int64_t bias_off; /* p_vaddr - p_offset of the segment of setmode */
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
	EXPORT("lua_newstate", newstate),
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
	if (ex->setmode) {
		uint64_t off;

		err = file_offset(elf, ex->setmode, &off, &ex->bias_off);
	}
	elf_end(elf);
	return err;
}

/* A --luajit-offsets file names the fields of bpf/luajit_layout.h's list
 * (lj_fields).  It may leave out the optional ones: without them Lua
 * frames are still walked (fast-function ids: no coroutine crossing;
 * traces: number only; snapshots: compiled code placed in the trace's
 * first function). */
static int field_optional(size_t i)
{
	return lj_fields[i].group != LJG_VM;
}

#define NFIELDS LJF__N
#define field_get(lo, i) lj_field_get(lo, (enum lj_field)(i))

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
			 lj_fields[first].name, field_get(a, first),
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

/*
 * A layout read from an object's code (luajit_code.c), one per object
 * file like DWARF's, kept for the recorder's life.  The file is the one
 * the process maps (procmaps_open: through /proc/PID/map_files, so a
 * container's build is read, never the host's file of the same path),
 * known by its device, inode, size and change time.
 */
struct code_build {
	dev_t dev;
	ino_t ino;
	off_t size;
	struct timespec mtime;
	int err;                   /* 0: a complete layout in r */
	char msg[600];             /* what failed, or where the fields came from */
	struct lj_build_desc desc; /* name "code", the layout, names */
	struct lj_code_result r;
	struct code_build *next;
};

static struct code_build *code_builds;

/* The functions a derivation read, in the order first used, for a
 * source string: "lua_pushthread, lua_call, ...". */
static void via_list(const struct lj_code_result *r, int from, char *buf, size_t len)
{
	size_t n = 0;

	buf[0] = '\0';
	for (int f = 0; f < LJF__N; f++) {
		int dup = 0;

		if (r->from[f] != from || !r->via[f])
			continue;
		for (int g = 0; g < f && !dup; g++)
			dup = r->from[g] == from && r->via[g] && !strcmp(r->via[g], r->via[f]);
		if (!dup && n < len)
			n += (size_t)snprintf(buf + n, len - n, "%s%s", n ? ", " : "", r->via[f]);
	}
}

/* What a derivation could not do: the first VM field it has no value
 * for, or the conflict. */
static void code_failure(const struct lj_code_result *r, char *buf, size_t len)
{
	if (r->conflict[0]) {
		snprintf(buf, len, "%s", r->conflict);
		return;
	}
	for (int f = 0; f < LJF__N; f++) {
		if (lj_fields[f].group == LJG_VM && r->from[f] == LJ_FROM_NONE) {
			snprintf(buf, len, "its code does not show %s", lj_fields[f].name);
			return;
		}
	}
	buf[0] = '\0';
}

static void code_derive(struct code_build *c, int fd)
{
	char code[256], decl[128];
	int ncode = 0, ndecl = 0, cached;

	cached = !lj_cache_load(fd, &c->r);
	if (cached) {
		code_failure(&c->r, c->msg, sizeof(c->msg));
		if (c->msg[0]) {
			lj_ffnames_free(&c->r.ff);
			cached = 0;
		}
	}
	c->err = cached ? 0 : lj_code_derive(fd, &c->r);
	if (c->err) {
		snprintf(c->msg, sizeof(c->msg), "its code could not be read: %s",
			 strerror(-c->err));
		return;
	}
	code_failure(&c->r, c->msg, sizeof(c->msg));
	if (c->msg[0]) {
		c->err = -ENOTSUP;
		return;
	}
	if (!cached)
		lj_cache_store(fd, &c->r);
	for (int f = 0; f < LJF__N; f++) {
		ncode += c->r.from[f] == LJ_FROM_CODE;
		ndecl += c->r.from[f] == LJ_FROM_STRUCT;
	}
	via_list(&c->r, LJ_FROM_CODE, code, sizeof(code));
	via_list(&c->r, LJ_FROM_STRUCT, decl, sizeof(decl));
	snprintf(c->msg, sizeof(c->msg), "%d from its code (%s), %d from LuaJIT 2.1's "
		 "declarations (%s); %u builtins named from its library tables%s", ncode,
		 code, ndecl, decl, c->r.ff.n, cached ? " (as read before: luaprof's cache)" : "");
	c->desc.name = "code";
	c->desc.flags = c->r.layout.flags;
	c->desc.layout = c->r.layout;
	c->desc.ffnames = (const char *const *)c->r.ff.names;
	c->desc.nffnames = c->r.ff.n;
}

static const struct code_build *code_build(int fd)
{
	struct code_build *c;
	struct stat st;

	if (fstat(fd, &st))
		return NULL;
	for (c = code_builds; c; c = c->next)
		if (c->dev == st.st_dev && c->ino == st.st_ino && c->size == st.st_size &&
		    c->mtime.tv_sec == st.st_mtim.tv_sec &&
		    c->mtime.tv_nsec == st.st_mtim.tv_nsec)
			return c;
	c = calloc(1, sizeof(*c));
	if (!c)
		return NULL;
	c->dev = st.st_dev;
	c->ino = st.st_ino;
	c->size = st.st_size;
	c->mtime = st.st_mtim;
	code_derive(c, fd);
	c->next = code_builds;
	code_builds = c;
	return c;
}

/* The names to give builtins: the code's when it found the libraries,
 * else those of the variant luaprof knows (an offsets file's build). */
static const struct lj_build_desc *names_for(const struct code_build *c, uint32_t flags)
{
	if (c && c->r.ff.n > 2)
		return &c->desc;
	return lj_known_build(flags);
}

/*
 * Fills t->layout, t->source, t->build and t->build_used for the LuaJIT
 * in t->object, mapped as m: from offsets_file if given, else from DWARF
 * if there is debug info for LuaJIT, else from the object's code.  0, or
 * -errno with the reason in msg.
 */
static int choose_layout(struct lj_target *t, const struct lp_mapping *m,
			 const char *offsets_file, char *msg, size_t msglen)
{
	const struct code_build *c = NULL;
	const struct dwarf_build *d = NULL;
	char diff[96], path[PATH_MAX];
	int fd, err;

	fd = procmaps_open(t->pid, m);
	if (fd >= 0) {
		c = code_build(fd);
		close(fd);
	}
	if (c && c->r.vm_end) {
		t->vm_start_code = c->r.vm_start;
		t->vm_end_code = c->r.vm_end;
		t->cf_size_code = c->r.layout.cf_size;
	}
	if (offsets_file) {
		err = lj_layout_from_file(offsets_file, &t->layout, msg, msglen);
		if (err)
			return err;
		t->build = names_for(c, t->layout.flags);
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
		if (c && !c->err) {
			/* DWARF has no macros: the C frame is the code's. */
			for (int f = 0; f < LJF__N; f++)
				if (!lj_fields[f].in_dwarf && lj_fields[f].group != LJG_PAD)
					lj_field_set(&t->layout, f,
						     lj_field_get(&c->desc.layout, f));
			layout_diff(&t->layout, &c->desc.layout, diff, sizeof(diff));
			set_source(t, "offsets from DWARF (%s) and, for its C frame, its "
				   "code; %s those its code shows", d->msg, diff);
		} else {
			set_source(t, "offsets from DWARF (%s)", d->msg);
		}
		return 0;
	}
	/* -ENOENT: no debug info for LuaJIT, the common case.  Anything else
	 * is debug info that could not be used, which is worth a word. */
	const char *dmsg = err != -ENOENT && d ? d->msg : "";
	if (!c || c->err) {
		snprintf(msg, msglen, "%s: LuaJIT, but %s%s%s; describe the build with "
			 "--luajit-offsets (luaprof check --luajit %s says what was read)",
			 t->object, c ? c->msg : "its file could not be opened",
			 dmsg[0] ? ", and DWARF did not help: " : "", dmsg, t->object);
		return -ENOTSUP;
	}
	t->layout = c->desc.layout;
	t->build = &c->desc;
	t->build_used = "code";
	set_source(t, "offsets derived: %s%s%s", c->msg,
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
	if (!err) {
		dwarf_build(path);
		code_build(fd);
	}
	close(fd);
}

int lj_layout_of(int fd, const struct lj_code_result **r, const char **msg)
{
	const struct code_build *c = code_build(fd);

	if (!c)
		return -ENOMEM;
	*r = &c->r;
	*msg = c->msg;
	return c->err;
}

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
		int fd, err;

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

		t = calloc(1, sizeof(*t));
		if (!t)
			return -ENOMEM;
		t->pid = pid;
		t->state = LJ_WAITING_G;
		snprintf(t->object, sizeof(t->object), "%s", m->path);
		/* The mapping's start corresponds to file offset pgoff. */
		t->bias = (int64_t)(m->start - m->pgoff) - ex.bias_off;
		err = choose_layout(t, m, offsets_file, msg, msglen);
		if (err) {
			free(t);
			return err;
		}
		/* The interpreter: the object's CFI row of the entry frame,
		 * which the code's derivation found already if it used the
		 * same frame size. */
		if (t->vm_end_code && t->layout.cf_size == t->cf_size_code) {
			vs = t->vm_start_code;
			ve = t->vm_end_code;
		} else if ((fd = procmaps_open(pid, m)) >= 0) {
			if (lj_vm_from_cfi_fd(fd, t->layout.cf_size, &vs, &ve))
				vs = ve = 0;
			close(fd);
		}
		if (ve) {
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
		for (i = 0; i < NFIELDS && (lj_fields[i].group == LJG_PAD ||
					    strcmp(lj_fields[i].name, name)); i++)
			;
		if (i == NFIELDS) {
			snprintf(msg, msglen, "%s:%d: no field '%s' in struct lj_layout "
				 "(bpf/luajit_layout.h)", path, lineno, name);
			goto fail;
		}
		if (!lj_field_fits((enum lj_field)i, value)) {
			snprintf(msg, msglen, "%s:%d: %lld does not fit %s (%u byte%s)",
				 path, lineno, value, name, lj_fields[i].size,
				 lj_fields[i].size > 1 ? "s" : "");
			goto fail;
		}
		lj_field_set(lo, (enum lj_field)i, value);
		set[i] = 1;
	}
	fclose(f);
	for (size_t i = 0; i < NFIELDS; i++) {
		if (!set[i] && !field_optional(i)) {
			snprintf(msg, msglen, "%s: no value for %s", path,
				 lj_fields[i].name);
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

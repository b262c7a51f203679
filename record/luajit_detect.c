/*
 * luajit_detect.c - finds LuaJIT in a target without debug info.
 *
 * Production builds are stripped: what is left is the exported API
 * (lua_*, luaL_*, luaJIT_*) in .dynsym, which a static `luajit` keeps too
 * (it exports the API for C modules).  So an executable mapping whose ELF
 * exports luaJIT_setmode holds LuaJIT, wherever it was linked.  Two facts
 * choose the layout: OpenResty's luajit2 exports lua_setexdata, upstream
 * does not; and lua_gettop, `return L->top - L->base`, compiles to two
 * loads whose displacements are the offsets of top and base in lua_State,
 * which differ between GC64 and 32-bit references.  The layout is then
 * only a candidate: the BPF walker validates G with it at every sample and
 * luajit_vm.c checks the dispatch table before Lua frames are trusted.
 *
 * A build we do not know can be described with --luajit-offsets FILE.
 */
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "record/luajit.h"
#include "record/recorder.h"

struct elf_exports {
	uint64_t setmode, setexdata, gettop; /* vaddrs, 0 when absent */
	uint8_t gettop_code[16];
	size_t gettop_len;
	int64_t bias_off; /* p_vaddr - p_offset of the segment of gettop */
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
			if (!strcmp(name, "luaJIT_setmode"))
				ex->setmode = sym.st_value;
			else if (!strcmp(name, "lua_setexdata"))
				ex->setexdata = sym.st_value;
			else if (!strcmp(name, "lua_gettop"))
				ex->gettop = sym.st_value;
		}
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

/* The file behind a mapping: through /proc/PID/map_files, which works in
 * other mount namespaces and for deleted files, else by its path. */
static int open_mapping(pid_t pid, const struct lp_mapping *m)
{
	char fname[128];
	int fd;

	snprintf(fname, sizeof(fname), "/proc/%d/map_files/%llx-%llx", (int)pid,
		 (unsigned long long)m->start, (unsigned long long)m->end);
	fd = open(fname, O_RDONLY | O_CLOEXEC);
	if (fd < 0 && m->path[0] == '/')
		fd = open(m->path, O_RDONLY | O_CLOEXEC);
	return fd;
}

int lj_detect(pid_t pid, const struct maps_table *maps, const char *offsets_file,
	      struct lj_target **out, char *msg, size_t msglen)
{
	const char *seen = NULL;

	*out = NULL;
	msg[0] = '\0';
	elf_version(EV_CURRENT);
	for (uint32_t i = 0; i < maps->n; i++) {
		const struct lp_mapping *m = &maps->v[i];
		struct elf_exports ex;
		struct lj_target *t;
		uint32_t flags = 0;
		int fd, gc64, err;

		/* One look per file: a file maps several segments. */
		if (m->path[0] != '/' || (seen && !strcmp(seen, m->path)))
			continue;
		seen = m->path;
		fd = open_mapping(pid, m);
		if (fd < 0)
			continue;
		err = read_exports(fd, &ex);
		close(fd);
		if (err)
			continue;

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
		t->build = lj_known_build(flags);
		if (offsets_file) {
			err = lj_layout_from_file(offsets_file, &t->layout, msg, msglen);
			if (err) {
				free(t);
				return err;
			}
			snprintf(t->source, sizeof(t->source), "offsets from %s",
				 offsets_file);
		} else if (gc64 < 0) {
			snprintf(msg, msglen, "%s: LuaJIT, but lua_gettop's code is not "
				 "a pattern luaprof knows, so GC64 or not is unknown; "
				 "describe the build with --luajit-offsets", m->path);
			free(t);
			return -ENOTSUP;
		} else if (!t->build) {
			snprintf(msg, msglen, "%s: LuaJIT build with no known layout; "
				 "describe it with --luajit-offsets", m->path);
			free(t);
			return -ENOTSUP;
		} else {
			t->layout = t->build->layout;
			snprintf(t->source, sizeof(t->source),
				 "built-in layout '%s' (%s lua_setexdata; lua_gettop: %s)",
				 t->build->name, ex.setexdata ? "exports" : "no",
				 gc64 ? "GC64" : "32-bit refs");
		}
		if (lj_vm_from_cfi(t->object, t->layout.cf_size, &t->vm_start,
				   &t->vm_end) == 0) {
			t->vm_start += t->bias;
			t->vm_end += t->bias;
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

/* The lj_layout fields a --luajit-offsets file may set. */
#define FIELD(f) { #f, offsetof(struct lj_layout, f), sizeof(((struct lj_layout *)0)->f) }
static const struct {
	const char *name;
	size_t off, size;
} layout_fields[] = {
	FIELD(flags), FIELD(g2disp), FIELD(gg_g), FIELD(ref_size),
	FIELD(g_vmstate), FIELD(g_mainthref), FIELD(g_cur_L), FIELD(g_jit_base),
	FIELD(l_glref), FIELD(l_base), FIELD(l_top), FIELD(l_stack),
	FIELD(l_maxstack), FIELD(l_cframe), FIELD(fn_ffid), FIELD(fn_pc),
	FIELD(fn_f), FIELD(fn_upvalue), FIELD(pt_size), FIELD(pt_sizebc),
	FIELD(pt_k), FIELD(pt_sizekgc), FIELD(pt_sizekn), FIELD(pt_sizept),
	FIELD(pt_numparams), FIELD(pt_framesize), FIELD(pt_sizeuv),
	FIELD(pt_flags), FIELD(pt_chunkname), FIELD(pt_firstline),
	FIELD(pt_numline), FIELD(pt_lineinfo), FIELD(pt_uvinfo),
	FIELD(pt_varinfo), FIELD(str_len), FIELD(str_size), FIELD(cf_l),
	FIELD(cf_pc), FIELD(cf_prev), FIELD(cf_size),
	FIELD(ffid_coroutine_resume), FIELD(ffid_coroutine_wrap_aux),
};
#undef FIELD

int lj_layout_from_file(const char *path, struct lj_layout *lo, char *msg,
			size_t msglen)
{
	const size_t nfields = sizeof(layout_fields) / sizeof(layout_fields[0]);
	char line[256], name[64];
	uint8_t set[64] = { 0 };
	long long value;
	int lineno = 0;
	FILE *f = fopen(path, "re");

	if (!f) {
		snprintf(msg, msglen, "cannot read %s: %s", path, strerror(errno));
		return -errno;
	}
	memset(lo, 0, sizeof(*lo));
	while (fgets(line, sizeof(line), f)) {
		size_t i;

		lineno++;
		if (line[0] == '#' || line[strspn(line, " \t\r\n")] == '\0')
			continue;
		if (sscanf(line, " %63[a-z0-9_] = %lli", name, &value) != 2)
			goto bad;
		for (i = 0; i < nfields && strcmp(layout_fields[i].name, name); i++)
			;
		if (i == nfields)
			goto bad;
		memcpy((char *)lo + layout_fields[i].off, &value, layout_fields[i].size);
		set[i] = 1;
	}
	fclose(f);
	for (size_t i = 0; i < nfields; i++) {
		if (!set[i] && strncmp(layout_fields[i].name, "ffid_", 5)) {
			snprintf(msg, msglen, "%s: no value for %s", path,
				 layout_fields[i].name);
			return -EINVAL;
		}
	}
	return 0;
bad:
	fclose(f);
	snprintf(msg, msglen, "%s:%d: expected 'field = number' with a field of "
		 "struct lj_layout (bpf/luajit.h)", path, lineno);
	return -EINVAL;
}

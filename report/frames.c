/*
 * frames.c - names of user and kernel frames (see frames.h).
 *
 * The naming rules, in order, for a user address:
 *   in no mapping            [unmapped]
 *   anonymous memory         [anon]           (with --lines, [anon]+0xOFF:
 *                                              OFF from the mapping's start)
 *   a special mapping        [vdso], [stack] etc. (likewise +0xOFF for
 *                                              code, with --lines)
 *   a file, symbol found     the function's name
 *   a file, no symbol        MODULE+0xOFF     (OFF an ELF virtual address,
 *                                              what addr2line -e takes, or
 *                                              the file offset when the file
 *                                              cannot be read)
 * and for a kernel address NAME_[k], or [kernel]_[k] without a symbol.
 *
 * Where the object's DWARF is known (objects.h), one address may be
 * several frames: each function inlined there, innermost first, as
 * "NAME [inlined]", then the function itself.  With --lines every one of
 * them adds " (FILE:LINE)", FILE without its directory, as perf shows it:
 * the line running in the innermost, the call site in the others.  The
 * function's own name still comes from the symbol table, so a report
 * without DWARF names the same functions, inline frames aside.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/demangle.h"
#include "lib/escape.h"
#include "report/frames.h"
#include "lib/htab.h"

struct ksym {
	uint64_t addr;
	char *name;
	uint32_t id; /* name id of "NAME_[k]", UINT32_MAX until needed */
};

/* A native address's frames as named once: (pid, layout generation,
 * address looked up) -> its name ids and function.  Stacks share most of
 * their addresses, and naming one (mapping, symbol, source lines,
 * strings) costs far more than finding it again. */
struct chain_ent {
	uint64_t gen, at;
	uint32_t pid, n, func;
	uint32_t off; /* into chain_ids */
	int ret;      /* at is a return address's call (name_chain()) */
};

struct frames {
	struct strtab *names;
	struct chain_ent *chains;
	size_t nchains, capchains;
	struct htab chains_h;
	uint32_t *chain_ids;
	size_t nchain_ids, capchain_ids;
	struct symbolizer *sym;
	struct objects *objs; /* NULL: mappings are read from their paths */
	struct ksym *ksyms;
	size_t nksyms, capksyms;
	int sorted;
	int lines; /* --lines: native frames show FILE:LINE */
	int demangle; /* native names demangled (lib/demangle.h) */
	struct frame_infos *infos; /* NULL: names are all that is wanted */
	uint32_t unmapped_id, kernel_id; /* interned on first use */
};

int frames_new(struct frames **out, struct strtab *names, struct symbolizer *sym)
{
	struct frames *f = calloc(1, sizeof(*f));

	if (!f)
		return -ENOMEM;
	f->names = names;
	f->sym = sym;
	f->sorted = 1;
	f->unmapped_id = f->kernel_id = UINT32_MAX;
	*out = f;
	return 0;
}

void frames_set_objects(struct frames *f, struct objects *o)
{
	f->objs = o;
}

void frames_set_lines(struct frames *f, int lines)
{
	f->lines = lines;
}

void frames_set_demangle(struct frames *f, int demangle)
{
	f->demangle = demangle;
}

/* A native function's name as the frame shows it: demangled into buf
 * when asked and mangled, else as the symbol has it. */
static const char *readable(const struct frames *f, const char *sym, char *buf, size_t len)
{
	return f->demangle && lp_demangle(sym, buf, len) ? buf : sym;
}

void frames_set_infos(struct frames *f, struct frame_infos *infos)
{
	f->infos = infos;
}

int frames_describing(const struct frames *f)
{
	return f->infos != NULL;
}

int frames_name_as(struct frames *f, const char *name, const struct frame_info *fi,
		   uint32_t *id)
{
	int err = frames_name(f, name, id);

	if (err || !f->infos)
		return err;
	return frameinfo_note(f->infos, *id, fi);
}

/* Describes native frame `id`, the first time only: in mapping m (NULL:
 * none), at ELF address vaddr of its file, a frame of function func
 * (NONE: itself), running sf's file and line (NULL: unknown). */
static int describe_native(struct frames *f, uint32_t id, const struct map_ent *m,
			   uint64_t vaddr, uint32_t func, const struct src_frame *sf)
{
	struct frame_info fi = { .kind = FRAME_NATIVE, .func = func,
				 .file = FRAMEINFO_NONE, .mapping = FRAMEINFO_NONE,
				 .addr = vaddr };
	const uint8_t *bid = NULL;
	uint32_t len = 0;
	int err = 0;

	if (!f->infos || frameinfo_known(f->infos, id))
		return 0;
	if (m && m->path[0]) {
		if (f->objs && m->object)
			objects_build_id(f->objs, m->object, &bid, &len);
		err = frameinfo_mapping(f->infos, m->path, bid, len, &fi.mapping);
	}
	if (!err && sf && sf->file) {
		err = frames_name(f, sf->file, &fi.file);
		fi.line = sf->line;
	}
	return err ?: frameinfo_note(f->infos, id, &fi);
}

void frames_free(struct frames *f)
{
	if (!f)
		return;
	for (size_t i = 0; i < f->nksyms; i++)
		free(f->ksyms[i].name);
	free(f->ksyms);
	free(f->chains);
	htab_free(&f->chains_h);
	free(f->chain_ids);
	free(f);
}

int frames_name(struct frames *f, const char *name, uint32_t *id)
{
	size_t n = strlen(name);
	char *clean;
	int err;

	for (size_t i = 0; i < n; i++)
		if (esc_control_len((const unsigned char *)name + i, n - i))
			goto dirty;
	return strtab_intern(f->names, name, n, id);
dirty:
	clean = esc_dup(name); /* same length */
	if (!clean)
		return -ENOMEM;
	err = strtab_intern(f->names, clean, n, id);
	free(clean);
	return err;
}

static const char *base_name(const char *path)
{
	const char *slash = strrchr(path, '/');

	return slash && slash[1] ? slash + 1 : path;
}

/* Names one frame of a DWARF chain: "NAME[ [inlined]][ (FILE:LINE)]";
 * func: the name id of the function without (FILE:LINE), or NONE when
 * it is yet to be interned. */
static int chain_frame(struct frames *f, const struct map_ent *m, uint64_t vaddr,
		       const char *name, int inlined, const struct src_frame *sf,
		       uint32_t func, uint32_t *id)
{
	char buf[768];
	int n, err;

	n = snprintf(buf, sizeof(buf), "%s%s", name, inlined ? " [inlined]" : "");
	if (func == FRAMEINFO_NONE) {
		err = frames_name(f, buf, &func);
		if (err)
			return err;
	}
	if (f->lines && sf->file && n >= 0 && (size_t)n < sizeof(buf))
		snprintf(buf + n, sizeof(buf) - n, " (%s:%u)", base_name(sf->file),
			 sf->line);
	err = frames_name(f, buf, id);
	return err ?: describe_native(f, *id, m, vaddr, func, sf);
}

/* A frame in a mapping without a file: "[anon]" or the kernel's name
 * for it; with --lines, in executable code, "NAME+0xOFF" (OFF from the
 * mapping's start) as the frame and NAME as its function. */
static int name_special(struct frames *f, const struct map_ent *m, uint64_t at,
			uint32_t *id, uint32_t *func)
{
	const char *name = m->path[0] ? m->path : "[anon]";
	uint64_t off = at - m->start;
	char buf[512];
	int err;

	err = frames_name(f, name, func) ?:
	      describe_native(f, *func, m, off + m->pgoff, FRAMEINFO_NONE, NULL);
	*id = *func;
	if (err || !f->lines || !(m->prot & LP_PROT_EXEC))
		return err;
	snprintf(buf, sizeof(buf), "%s+0x%" PRIx64, name, off);
	return frames_name(f, buf, id) ?:
	       describe_native(f, *id, m, off + m->pgoff, *func, NULL);
}

/* The symbol of address at in mapping m. */
static int lookup(struct frames *f, const struct map_ent *m, uint64_t at,
		  struct sym_result *res)
{
	uint64_t off = at - m->start + m->pgoff;

	return f->objs ? objects_lookup(f->objs, m->object, m->path, off, res) :
			 symbolizer_lookup(f->sym, m->path, off, res);
}

static int name_chain(struct frames *f, const struct maps_view *v, uint64_t addr, int ret,
		      uint32_t *ids, uint32_t *n, uint32_t *func)
{
	const struct map_ent *m;
	struct sym_result res;
	struct src_chain c;
	char buf[512];
	const char *name;
	uint64_t at = ret && addr ? addr - 1 : addr;
	int err;

	*n = 1;
	m = maps_view_find(v, at);
	if (!m) {
		if (f->unmapped_id == UINT32_MAX) {
			err = frames_name(f, "[unmapped]", &f->unmapped_id) ?:
			      describe_native(f, f->unmapped_id, NULL, 0, FRAMEINFO_NONE, NULL);
			if (err)
				return err;
		}
		*ids = *func = f->unmapped_id;
		return 0;
	}
	if (m->path[0] != '/' && !(m->object && f->objs))
		/* Anonymous code (another JIT's: a trace's is named by the
		 * Lua walk), [stack], or anything else the kernel names and
		 * the trace gives no object (the vDSO has one when its
		 * symbols are embedded): one function per mapping name, so
		 * that the time of a foreign JIT's code adds up in one row;
		 * --lines shows where in it, as it shows a line. */
		return name_special(f, m, at, ids, func);
	err = lookup(f, m, at, &res);
	/* A return address that follows no call is a signal trampoline's
	 * first byte, which the kernel enters as if returned to (glibc's
	 * __restore_rt, the arm64 vDSO's __kernel_rt_sigreturn: each after
	 * a nop no symbol covers): named by the symbol that starts there. */
	if (!err && ret && addr && !res.func && res.elf) {
		struct sym_result tr;

		err = lookup(f, m, addr, &tr);
		if (!err && tr.func && tr.start == tr.addr)
			res = tr;
	}
	if (err)
		return err;
	c.n = 0;
	if (f->objs && res.elf) {
		err = objects_srcline(f->objs, m->object, res.addr, &c);
		if (err)
			return err;
	}
	name = res.func;
	if (!name && c.n)
		name = c.f[c.n - 1].func; /* DWARF knows what symbols do not */
	if (!name) {
		snprintf(buf, sizeof(buf), "%s+0x%" PRIx64, base_name(m->path),
			 res.addr);
		name = buf;
	} else {
		name = readable(f, name, buf, sizeof(buf));
	}
	err = frames_name(f, name, func) ?:
	      describe_native(f, *func, m, res.addr, FRAMEINFO_NONE,
			      c.n ? &c.f[c.n - 1] : NULL);
	if (err || !c.n) {
		*ids = *func;
		return err;
	}
	for (uint32_t i = 0; i + 1 < c.n; i++) {
		char inl[512];

		err = chain_frame(f, m, res.addr,
				  c.f[i].func ? readable(f, c.f[i].func, inl, sizeof(inl)) : "?",
				  1, &c.f[i], FRAMEINFO_NONE, &ids[i]);
		if (err)
			return err;
	}
	*n = c.n;
	if (!f->lines || !c.f[c.n - 1].file) {
		ids[c.n - 1] = *func;
		return 0;
	}
	return chain_frame(f, m, res.addr, name, 0, &c.f[c.n - 1], *func,
			   &ids[c.n - 1]);
}

int frames_user_chain(struct frames *f, const struct maps_view *v, uint64_t addr, int ret,
		      uint32_t *ids, uint32_t *n, uint32_t *func)
{
	uint64_t at = ret && addr ? addr - 1 : addr;
	uint64_t gen = v->gen, hash;
	uint32_t pid = v->pid;
	struct htab_probe p;
	int64_t i;
	int err;

	hash = hash_mix(hash_mix(hash_u64(pid), gen), at);
	htab_probe_start(&f->chains_h, hash, &p);
	while ((i = htab_probe_next(&f->chains_h, &p)) >= 0) {
		const struct chain_ent *c = &f->chains[i];

		if (c->at == at && c->pid == pid && c->gen == gen && c->ret == (ret && addr)) {
			memcpy(ids, f->chain_ids + c->off, c->n * sizeof(*ids));
			*n = c->n;
			*func = c->func;
			return 0;
		}
	}
	err = name_chain(f, v, addr, ret, ids, n, func);
	if (!err && f->nchain_ids + *n > UINT32_MAX)
		return 0; /* named, not kept */
	err = err ?: GROW(f->chain_ids, f->capchain_ids, f->nchain_ids + *n) ?:
	      GROW(f->chains, f->capchains, f->nchains + 1) ?:
	      htab_insert(&f->chains_h, hash, f->nchains);
	if (err)
		return err;
	memcpy(f->chain_ids + f->nchain_ids, ids, *n * sizeof(*ids));
	f->chains[f->nchains++] = (struct chain_ent){ gen, at, pid, *n, *func,
						      (uint32_t)f->nchain_ids, ret && addr };
	f->nchain_ids += *n;
	return 0;
}

int frames_user(struct frames *f, const struct maps_view *v, uint64_t addr, int ret,
		uint32_t *id)
{
	uint32_t ids[FRAMES_MAX_CHAIN], n;

	return frames_user_chain(f, v, addr, ret, ids, &n, id);
}

int frames_add_ksyms(struct frames *f, const struct lp_ksyms *rec)
{
	int err;

	err = GROW(f->ksyms, f->capksyms, f->nksyms + rec->count);
	if (err)
		return err;
	for (uint32_t i = 0; i < rec->count; i++) {
		const char *name = rec->syms[i].name ? rec->syms[i].name : "";
		struct ksym *k = &f->ksyms[f->nksyms];

		k->name = strdup(name);
		if (!k->name)
			return -ENOMEM;
		k->addr = rec->syms[i].addr;
		k->id = UINT32_MAX;
		f->nksyms++;
	}
	f->sorted = 0;
	return 0;
}

static int ksym_cmp(const void *a, const void *b)
{
	const struct ksym *x = a, *y = b;

	if (x->addr != y->addr)
		return x->addr < y->addr ? -1 : 1;
	return strcmp(x->name, y->name);
}

static const struct frame_info kernel_info = {
	.kind = FRAME_KERNEL, .func = FRAMEINFO_NONE, .file = FRAMEINFO_NONE,
	.mapping = FRAMEINFO_NONE,
};

int frames_kernel(struct frames *f, uint64_t addr, int ret, uint32_t *id)
{
	uint64_t at = ret && addr ? addr - 1 : addr;
	size_t lo = 0, hi = f->nksyms;
	struct ksym *k;
	char buf[512];
	int err;

	if (!f->sorted && f->nksyms) {
		qsort(f->ksyms, f->nksyms, sizeof(*f->ksyms), ksym_cmp);
		f->sorted = 1;
	}
	if (!f->nksyms || at < f->ksyms[0].addr) {
		if (f->kernel_id == UINT32_MAX) {
			err = frames_name_as(f, "[kernel]_[k]", &kernel_info, &f->kernel_id);
			if (err)
				return err;
		}
		*id = f->kernel_id;
		return 0;
	}
	while (hi - lo > 1) {
		size_t mid = lo + (hi - lo) / 2;

		if (f->ksyms[mid].addr <= at)
			lo = mid;
		else
			hi = mid;
	}
	/* Of several names at one address, the first in sort order. */
	while (lo && f->ksyms[lo - 1].addr == f->ksyms[lo].addr)
		lo--;
	k = &f->ksyms[lo];
	if (k->id == UINT32_MAX) {
		snprintf(buf, sizeof(buf), "%s_[k]", k->name);
		err = frames_name_as(f, buf, &kernel_info, &k->id);
		if (err)
			return err;
	}
	*id = k->id;
	return 0;
}

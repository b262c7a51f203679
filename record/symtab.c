/*
 * symtab.c - an object's function symbols, and the part of them a trace
 * embeds: what naming the addresses samples hit needs, not the table.
 *
 * A report names an address by the last symbol at or below it, looking
 * back over a few symbols for an outer function a nested one hides
 * (lp_objsym_find() in lib/elfsyms.h); its answer depends on the
 * symbols it looks at and on nothing else.  So for each address samples
 * hit, the recorder marks those symbols, and embeds the marked ones only.
 * nginx, its Lua module, LuaJIT and libc have some 3,300 symbols (65 KB
 * before compression); a profile's hits need a few hundred of them.
 *
 * The symbol at or below an address is always among those looked at, so
 * a subset never lets a symbol without a size (which covers up to the
 * next symbol) reach past the symbol that follows it in the file, nor a
 * lookup reach further back: the symbols embedded are the file's, sizes
 * as they are, and a report names every hit address as the whole table
 * would (docs/format.md §3.14; tests/unit/test_symtab.c).
 *
 * The table is read once, when the object is first hit, and kept, its
 * names copied out: samples go on hitting new addresses.  It is read on
 * objects_prep.c's worker (obj_symtab_read()), then marked and written on
 * the recorder's thread (objects.c), never on both at once.
 */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "format/trace.h"
#include "lib/elfsyms.h"
#include "record/symtab.h"

/* Symbols per SYMTAB record: keeps every record far below the format's
 * 16 MiB limit, whatever the object. */
#define SYMS_PER_RECORD 32768

enum { MARK_NONE, MARK_NEEDED, MARK_WRITTEN };

struct obj_symtab {
	struct lp_objseg *segs; /* PT_LOAD headers */
	size_t nsegs;
	struct lp_objsym *syms; /* ascending, one per address */
	size_t nsyms;
	char *names;
	uint8_t *mark;   /* per symbol: MARK_* */
	size_t nneeded;  /* MARK_NEEDED */
	size_t nwritten; /* MARK_WRITTEN */
	int announced;   /* a record went out: the object is embedded */
};

/* Copies the symbols and their names. */
static int keep_symbols(struct obj_symtab *t, const struct elf_fsym *v, size_t n)
{
	size_t bytes = 0, pos = 0;

	for (size_t i = 0; i < n; i++)
		bytes += v[i].len + 1;
	t->syms = calloc(n ? n : 1, sizeof(*t->syms));
	t->mark = calloc(n ? n : 1, 1);
	t->names = malloc(bytes ? bytes : 1);
	if (!t->syms || !t->mark || !t->names)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		memcpy(t->names + pos, v[i].name, v[i].len);
		t->names[pos + v[i].len] = '\0';
		t->syms[i] = (struct lp_objsym){ v[i].addr, v[i].size, t->names + pos };
		pos += v[i].len + 1;
	}
	t->nsyms = n;
	return 0;
}

int obj_symtab_new(struct obj_symtab **out, const struct lp_objseg *segs,
		   size_t nsegs, const struct elf_fsym *v, size_t n)
{
	struct obj_symtab *t = calloc(1, sizeof(*t));
	int err;

	*out = NULL;
	if (!t)
		return -ENOMEM;
	t->segs = malloc((nsegs ? nsegs : 1) * sizeof(*t->segs));
	if (!t->segs) {
		free(t);
		return -ENOMEM;
	}
	if (nsegs)
		memcpy(t->segs, segs, nsegs * sizeof(*segs));
	t->nsegs = nsegs;
	err = keep_symbols(t, v, n);
	if (err) {
		obj_symtab_free(t);
		return err;
	}
	*out = t;
	return 0;
}

int obj_symtab_read(struct obj_symtab **out, Elf *elf)
{
	struct lp_objseg *segs = NULL;
	struct elf_fsym *fsyms = NULL;
	size_t nph, nsegs = 0, nfsyms = 0;
	int err;

	*out = NULL;
	if (elf_kind(elf) != ELF_K_ELF || elf_getphdrnum(elf, &nph))
		return 1;
	segs = calloc(nph ? nph : 1, sizeof(*segs));
	if (!segs)
		return -ENOMEM;
	for (size_t i = 0; i < nph && i < INT_MAX; i++) {
		GElf_Phdr ph;

		if (!gelf_getphdr(elf, (int)i, &ph))
			break;
		if (ph.p_type == PT_LOAD)
			segs[nsegs++] = (struct lp_objseg){ ph.p_offset, ph.p_filesz,
							    ph.p_vaddr };
	}
	/* The same names the report would choose from the file. */
	err = elf_function_symbols(elf, &fsyms, &nfsyms) ?:
	      obj_symtab_new(out, segs, nsegs, fsyms, nfsyms);
	free(fsyms);
	free(segs);
	return err;
}

const struct lp_objseg *obj_symtab_segs(const struct obj_symtab *t, size_t *n)
{
	*n = t->nsegs;
	return t->segs;
}

static void need(struct obj_symtab *t, size_t i)
{
	if (t->mark[i] == MARK_NONE) {
		t->mark[i] = MARK_NEEDED;
		t->nneeded++;
	}
}

static void obj_symtab_need_vaddr(struct obj_symtab *t, uint64_t vaddr)
{
	size_t from, to;

	lp_objsym_find(t->syms, t->nsyms, vaddr, &from, &to);
	for (size_t i = from; i < to; i++)
		need(t, i);
}

void obj_symtab_need(struct obj_symtab *t, uint64_t off)
{
	uint64_t vaddr;

	if (elf_seg_vaddr(t->segs, t->nsegs, off, &vaddr))
		return; /* the report prints module+offset: no symbol needed */
	obj_symtab_need_vaddr(t, vaddr);
	/* None covering it, the report looks at the next byte too: a
	 * signal trampoline's return address (report/frames.c). */
	if (vaddr + 1 && lp_objsym_find(t->syms, t->nsyms, vaddr, NULL, NULL) < 0)
		obj_symtab_need_vaddr(t, vaddr + 1);
}

void obj_symtab_need_all(struct obj_symtab *t)
{
	for (size_t i = 0; i < t->nsyms; i++)
		need(t, i);
}

/* Writes syms as SYMTAB records of at most SYMS_PER_RECORD, each with
 * the segments: each record stands alone. */
static int write_records(struct obj_symtab *t, uint64_t object,
			 const struct lp_objsym *syms, size_t n,
			 struct trace_writer *w)
{
	struct lp_record rec;
	int err = 0;

	for (size_t i = 0; !err && (i < n || (i == 0 && !t->announced));
	     i += SYMS_PER_RECORD) {
		size_t k = n - i < SYMS_PER_RECORD ? n - i : SYMS_PER_RECORD;

		memset(&rec, 0, sizeof(rec));
		rec.type = LP_REC_SYMTAB;
		rec.u.symtab.object = object;
		rec.u.symtab.nseg = (uint32_t)t->nsegs;
		rec.u.symtab.segs = t->segs;
		rec.u.symtab.nsym = (uint32_t)k;
		rec.u.symtab.syms = syms + i;
		err = trace_write(w, &rec);
		if (!err)
			t->announced = 1;
	}
	return err;
}

int obj_symtab_write(struct obj_symtab *t, uint64_t object, struct trace_writer *w)
{
	struct lp_objsym *v;
	size_t n = 0;
	int err;

	if (!t->nneeded && t->announced)
		return 0;
	v = malloc((t->nneeded ? t->nneeded : 1) * sizeof(*v));
	if (!v)
		return -ENOMEM;
	for (size_t i = 0; i < t->nsyms && n < t->nneeded; i++)
		if (t->mark[i] == MARK_NEEDED)
			v[n++] = t->syms[i];
	err = write_records(t, object, v, n, w);
	free(v);
	if (err)
		return err;
	for (size_t i = 0; i < t->nsyms && t->nneeded; i++) {
		if (t->mark[i] == MARK_NEEDED) {
			t->mark[i] = MARK_WRITTEN;
			t->nneeded--;
			t->nwritten++;
		}
	}
	return 0;
}

void obj_symtab_counts(const struct obj_symtab *t, uint64_t *written,
		       uint64_t *total)
{
	*written = t->nwritten;
	*total = t->nsyms;
}

void obj_symtab_free(struct obj_symtab *t)
{
	if (!t)
		return;
	free(t->segs);
	free(t->syms);
	free(t->names);
	free(t->mark);
	free(t);
}

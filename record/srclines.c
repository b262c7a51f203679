/*
 * srclines.c - resolves the addresses samples hit in an object into
 * source-line chains (the functions inlined there, their files and lines)
 * and embeds them as SRCLINES records (docs/format.md §3.18), so that a
 * report gives native frames lines and inlined functions on any machine,
 * without the DWARF.
 *
 * A debug file describes a whole library, a profile hits a few thousand
 * of its addresses: the answers are far smaller than the DWARF they come
 * from.  The DWARF is read here exactly as the report reads a local file
 * (lib/dwarf_image.c, lib/srcline.c), at the address the report
 * will ask about (objects.c keeps the leaf as it is and a return address
 * less one, and elf_seg_vaddr() places it), so a trace reports the same
 * lines whether they were embedded or not.  Each flush writes the chains
 * of the addresses new since the last one, in records of a bounded size
 * whose names and files are listed once per record.
 *
 * What is embedded is bounded per object and per trace: past a bound the
 * object gets one note (a record with SKIPPED_* flags and no chains) and
 * no more chains, so that `info` can tell lines left out from lines that
 * DWARF does not have.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "format/trace.h"
#include "lib/dwarf_image.h"
#include "lib/elfsyms.h"
#include "lib/grow.h"
#include "lib/srcline.h"
#include "record/addrset.h"
#include "record/srclines.h"

/* A record is cut at about this many bytes: well below a chunk, and large
 * enough that its names are listed once for many chains. */
#define RECORD_BYTES (256u << 10)
/* A name or file longer than this is left out (0): one chain then stays
 * far below a chunk, whatever the DWARF says. */
#define MAX_NAME (64u << 10)
/* The most the four counts of a record (uv, at most 10 bytes each) add
 * to what the batch counts. */
#define RECORD_HEAD (4 * 10)

struct srclines_object {
	uint64_t id;
	struct lp_dwarf_image dwarf;
	struct srcline *lines;
	struct lp_objseg *segs;
	size_t nsegs;
};

/* One record being built: its chains, their frames and the strings they
 * name, each string once (strs[] is hashed by content in slots[]). */
struct batch {
	struct lp_srcchain *chains;
	size_t nchain, capchain;
	struct lp_srcframe *frames;
	size_t nframe, capframe;
	const char **strs;
	size_t nstr, capstr;
	uint32_t *slots; /* 1 + index into strs, 0 empty */
	size_t capslots;
	size_t bytes;    /* the body so far, counts aside */
};

static size_t uv_size(uint64_t v)
{
	size_t n = 1;

	while (v >= 0x80) {
		v >>= 7;
		n++;
	}
	return n;
}

static uint64_t hash_str(const char *s)
{
	uint64_t h = 0xcbf29ce484222325ull;

	for (; *s; s++)
		h = (h ^ (uint8_t)*s) * 0x100000001b3ull;
	return h;
}

static int rehash(struct batch *b)
{
	size_t cap = b->capslots ? 2 * b->capslots : 256;
	uint32_t *slots = calloc(cap, sizeof(*slots));

	if (!slots)
		return -ENOMEM;
	for (size_t i = 0; i < b->nstr; i++) {
		size_t h = hash_str(b->strs[i]) & (cap - 1);

		while (slots[h])
			h = (h + 1) & (cap - 1);
		slots[h] = (uint32_t)i + 1;
	}
	free(b->slots);
	b->slots = slots;
	b->capslots = cap;
	return 0;
}

/* The frame index of s in the batch (1 + its index, 0 for none), adding
 * it if new; *cost grows by what a new string adds to the body. */
static int intern(struct batch *b, const char *s, uint32_t *idx, size_t *cost)
{
	size_t len = s ? strlen(s) : 0, h;
	int err;

	*idx = 0;
	if (!len || len > MAX_NAME)
		return 0;
	if (2 * (b->nstr + 1) > b->capslots && (err = rehash(b)))
		return err;
	for (h = hash_str(s) & (b->capslots - 1); b->slots[h]; h = (h + 1) & (b->capslots - 1)) {
		if (!strcmp(b->strs[b->slots[h] - 1], s)) {
			*idx = b->slots[h];
			return 0;
		}
	}
	err = GROW(b->strs, b->capstr, b->nstr + 1);
	if (err)
		return err;
	b->strs[b->nstr++] = s;
	b->slots[h] = (uint32_t)b->nstr;
	*idx = (uint32_t)b->nstr;
	*cost += uv_size(len) + len;
	return 0;
}

/* Adds the chain c at vaddr (above the batch's last).  The strings stay
 * the srcline table's: the batch is written before it closes.  On
 * failure the batch holds no more chains than before. */
static int batch_add(struct batch *b, uint64_t vaddr, const struct src_chain *c)
{
	uint64_t prev = b->nchain ? b->chains[b->nchain - 1].vaddr : 0;
	size_t cost = uv_size(vaddr - prev) + uv_size(c->n);
	int err;

	err = GROW(b->chains, b->capchain, b->nchain + 1) ?:
	      GROW(b->frames, b->capframe, b->nframe + c->n);
	for (uint32_t k = 0; !err && k < c->n; k++) {
		struct lp_srcframe *f = &b->frames[b->nframe + k];

		err = intern(b, c->f[k].func, &f->func, &cost) ?:
		      intern(b, c->f[k].file, &f->file, &cost);
		f->line = c->f[k].line;
		cost += uv_size(f->func) + uv_size(f->file) + uv_size(f->line);
	}
	if (err)
		return err;
	b->chains[b->nchain++] = (struct lp_srcchain){ vaddr, c->n, NULL };
	b->nframe += c->n;
	b->bytes += cost;
	return 0;
}

/* Writes the batch as one record (flags: a note), counts it, and empties
 * the batch; an empty batch is no record, unless it is a note. */
static int batch_write(struct batch *b, uint64_t id, uint32_t flags,
		       struct srclines_count *cnt, uint64_t *left, struct trace_writer *w)
{
	struct lp_record rec = { .type = LP_REC_SRCLINES };
	struct lp_srclines *sl = &rec.u.srclines;
	size_t first = 0, bytes;
	int err = 0;

	if (b->nchain || flags) {
		for (size_t i = 0; i < b->nchain; i++) {
			b->chains[i].frames = b->frames + first;
			first += b->chains[i].nframe;
		}
		*sl = (struct lp_srclines){ id, flags, (uint32_t)b->nstr, b->strs,
					    (uint32_t)b->nchain, b->chains };
		bytes = lp_srclines_size(sl);
		err = trace_write(w, &rec);
		if (!err) {
			cnt->chains += b->nchain;
			cnt->bytes += bytes;
			*left -= bytes < *left ? bytes : *left;
		}
	}
	b->nchain = b->nframe = b->nstr = b->bytes = 0;
	if (b->slots)
		memset(b->slots, 0, b->capslots * sizeof(*b->slots));
	return err;
}

static void batch_free(struct batch *b)
{
	free(b->chains);
	free(b->frames);
	free(b->strs);
	free(b->slots);
}

int srclines_open(struct srclines_object **out, int fd, const char *path,
		  uint64_t id, const struct lp_objseg *segs, size_t nsegs)
{
	struct srclines_object *o;
	Elf *elf;
	int err;

	*out = NULL;
	if (elf_version(EV_CURRENT) == EV_NONE)
		return 0;
	/* Read, not mapped: a file truncated under us must not SIGBUS. */
	elf = elf_begin(fd, ELF_C_READ, NULL);
	if (!elf)
		return 0;
	o = calloc(1, sizeof(*o));
	if (!o) {
		elf_end(elf);
		return -ENOMEM;
	}
	o->id = id;
	err = elf_kind(elf) == ELF_K_ELF ? lp_dwarf_image_open(&o->dwarf, elf, path, NULL) : 1;
	elf_end(elf);
	/* No DWARF (1), or no memory for it: nothing to embed, and the
	 * recording goes on. */
	if (err || srcline_new(&o->lines, o->dwarf.dwarf))
		goto cleanup;
	o->segs = malloc((nsegs ? nsegs : 1) * sizeof(*segs));
	if (!o->segs)
		goto cleanup;
	memcpy(o->segs, segs, nsegs * sizeof(*segs));
	o->nsegs = nsegs;
	*out = o;
	return 0;
cleanup:
	srclines_free(o);
	return 0;
}

void srclines_free(struct srclines_object *o)
{
	if (!o)
		return;
	srcline_free(o->lines);
	lp_dwarf_image_close(&o->dwarf);
	free(o->segs);
	free(o);
}

int srclines_write(struct srclines_object *o, uint64_t *offs, size_t n,
		   struct srclines_count *cnt, uint64_t *left, struct trace_writer *w)
{
	struct batch b = { 0 };
	uint32_t skip = 0;
	size_t nv = 0;
	int err = 0;

	if (cnt->skipped)
		return 0;
	/* In place: file offsets become the addresses the report asks for. */
	for (size_t i = 0; i < n; i++)
		if (!elf_seg_vaddr(o->segs, o->nsegs, offs[i], &offs[nv]))
			nv++;
	if (nv)
		qsort(offs, nv, sizeof(*offs), u64_cmp);
	for (size_t i = 0; i < nv && !err && !skip; i++) {
		struct src_chain c;

		if (i && offs[i] == offs[i - 1])
			continue;
		/* Memory short: the addresses left go without lines, and
		 * only a write error stops the recording. */
		if (srcline_lookup(o->lines, offs[i], &c))
			break;
		/* A chain that names nothing says what no chain says. */
		if (!c.n || (c.n == 1 && !c.f[0].func && !c.f[0].file))
			continue;
		if (batch_add(&b, offs[i], &c))
			break;
		if (cnt->bytes + b.bytes + RECORD_HEAD > SRCLINES_MAX_OBJECT)
			skip = LP_SRCLINES_SKIPPED_SIZE;
		else if (b.bytes + RECORD_HEAD > *left)
			skip = LP_SRCLINES_SKIPPED_BUDGET;
		if (skip) {
			/* The chain that passed the bound is dropped; the
			 * ones before it go out, then the note. */
			b.nchain--;
			b.nframe -= c.n;
		}
		if (skip || b.bytes >= RECORD_BYTES)
			err = batch_write(&b, o->id, 0, cnt, left, w);
	}
	if (!err)
		err = batch_write(&b, o->id, skip, cnt, left, w);
	cnt->skipped = skip;
	batch_free(&b);
	return err;
}

/*
 * luajit_protos.c - the Lua function prototypes a trace needs, read once
 * each from the live process.
 *
 * The walker reports a prototype by address and a fingerprint.  Addresses
 * are reused once the GC frees a prototype, so the key is (pid, address,
 * fingerprint): a reused address with another chunk or first line is a
 * new prototype with a new id.  The recorder reads a prototype some time
 * after the sample (the ring buffer is drained every 100 ms or so); if by
 * then the memory no longer holds what the sample saw (fingerprint), the
 * frame maps to id 0, "unknown", and is counted, never misnamed.  A proto
 * the GC freed in the meantime may still show the old fingerprint (its
 * header is intact) while its chunk name, as dead, holds another string
 * or none: the allocator's free-list links overwrite a freed object's
 * first words, type byte included, so the proto and its chunk name must
 * both still be of their type, and the proto's header unchanged after
 * everything it names was read.
 *
 * The walker sends, before the first sample that shows a prototype, what
 * names it (lp_event_proto: its chunk name and lines, copied while it was
 * on the stack); proto_table_note() keeps that until the prototype is
 * read.  A prototype gone by then is written from it, without bytecode
 * (nbc 0): its frames have a name and a definition line, not the line
 * they ran.
 *
 * A GCproto is one allocation of sizept bytes holding, after the header,
 * the bytecode, upvalue slots, GC and number constants, line info, upvalue
 * names and variable info; the strings it names (chunk name, string
 * constants) live elsewhere.
 *
 *   pt                    pt+pt_size                          pt+sizept
 *   | GCproto header      | bc[sizebc] | uv | kgc[] k-> kn[] | lineinfo |
 *                           uvinfo (NUL-separated) | varinfo (to the end)
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "lib/grow.h"
#include "lib/htab.h"
#include "record/luajit.h"

#define PROTO_MAX_SIZE (16u << 20)
#define STRING_MAX 4096
#define LJ_TSTR_GCT 4 /* gct of a string: ~LJ_TSTR, and LJ_TSTR is ~4u */
#define LJ_TPROTO_GCT 7 /* gct of a prototype: ~LJ_TPROTO */
#define PROTO_HDR_MAX 256 /* the most of a proto's header read */

/* What the walker saw of a prototype (lp_event_proto). */
struct proto_ident {
	uint32_t firstline, numline;
	char *chunkname;
};

/* A prototype met: its key, and its id or what is known of it. */
struct proto_key {
	uint64_t addr;
	uint32_t pid;
	uint16_t fingerprint;
	uint64_t id; /* ID_FAILED; ID_NOTED: not read yet */
	struct proto_ident *ident;
};

#define ID_FAILED UINT64_MAX
#define ID_NOTED (UINT64_MAX - 1)

struct proto_table {
	struct proto_key *v; /* every proto met, in the order met */
	size_t n, cap;
	struct htab index;   /* key_hash() -> v[] */
	uint64_t count, failed, nomem, next_id;
	uint64_t noted;      /* entries ID_NOTED */
	uint64_t from_ident; /* written from what the walker saw */
	char *last_ident_name; /* the chunk name pt->rec points at, if so */
	/* The decoded record handed out by proto_table_get, and the
	 * buffers it points into, reused from one proto to the next. */
	struct lp_proto rec;
	uint8_t *block;
	char *strings;
	size_t strings_len, strings_cap;
	struct lp_proto_kstr *kstr;
	size_t kstr_cap;
	size_t *kstr_off; /* each kstr's string in strings, until the end */
	size_t kstr_off_cap;
	const char **uvnames;
	size_t uvnames_cap;
	size_t *uv_off; /* each upvalue name's offset in block */
	size_t uv_off_cap;
	uint32_t *lines;
	size_t lines_cap;
};

static uint64_t key_hash(uint32_t pid, uint64_t addr, uint16_t fp)
{
	return hash_u64(addr ^ (uint64_t)pid << 40 ^ fp);
}

struct proto_table *proto_table_new(void)
{
	struct proto_table *pt = calloc(1, sizeof(*pt));

	if (!pt)
		return NULL;
	pt->next_id = 1;
	return pt;
}

/* The proto met under this key, or NULL. */
static struct proto_key *find(struct proto_table *pt, uint64_t hash, uint32_t pid,
			      uint64_t addr, uint16_t fp)
{
	struct htab_probe p;
	int64_t i;

	htab_probe_start(&pt->index, hash, &p);
	while ((i = htab_probe_next(&pt->index, &p)) >= 0) {
		struct proto_key *e = &pt->v[i];

		if (e->addr == addr && e->pid == pid && e->fingerprint == fp)
			return e;
	}
	return NULL;
}

/* A new entry for this key: 0, or -ENOMEM. */
static int add(struct proto_table *pt, uint64_t hash, uint32_t pid, uint64_t addr,
	       uint16_t fp, struct proto_key **out)
{
	if (GROW(pt->v, pt->cap, pt->n + 1) ||
	    htab_insert(&pt->index, hash, (uint32_t)pt->n))
		return -ENOMEM;
	*out = &pt->v[pt->n++];
	**out = (struct proto_key){ .addr = addr, .pid = pid, .fingerprint = fp };
	return 0;
}

static uint32_t get_u32(const uint8_t *p)
{
	uint32_t v;

	memcpy(&v, p, 4);
	return v;
}

/* Copies a target GCstr into pt->strings: 0 with its offset in *off;
 * -EFAULT if it cannot be read, -EINVAL if it is no string (check_type),
 * -ENOMEM. */
static int read_gcstr(struct proto_table *pt, const struct lj_target *t,
		      uint64_t str, int check_type, size_t *off)
{
	const struct lj_layout *lo = &t->layout;
	uint8_t hdr[64];
	uint32_t len;

	if (!str || lo->str_size > sizeof(hdr) ||
	    target_read(t->pid, str, hdr, lo->str_size))
		return -EFAULT;
	if (check_type && hdr[lo->ref_size + 1] != LJ_TSTR_GCT)
		return -EINVAL;
	len = get_u32(hdr + lo->str_len);
	if (len > STRING_MAX)
		len = STRING_MAX;
	if (GROW(pt->strings, pt->strings_cap, pt->strings_len + len + 1))
		return -ENOMEM;
	*off = pt->strings_len;
	if (target_read(t->pid, str + lo->str_size, pt->strings + *off, len))
		return -EFAULT;
	pt->strings[*off + len] = '\0';
	pt->strings_len += len + 1;
	return 0;
}

/* An offset inside the block for a pointer the header holds, or 0. */
static size_t inner(uint64_t ptr, uint64_t base, size_t size)
{
	return ptr > base && ptr < base + size ? (size_t)(ptr - base) : 0;
}

/* Whether two reads of a proto's header show the same live proto: its
 * type, and the fields that never change while it lives (its GC list
 * link, mark, flags and root trace do). */
static int proto_same(const struct lj_layout *lo, const uint8_t *a, const uint8_t *b)
{
	const uint16_t fields[] = { lo->pt_sizept, lo->pt_sizebc, lo->pt_firstline,
				    lo->pt_numline };

	if (a[lo->ref_size + 1] != LJ_TPROTO_GCT || b[lo->ref_size + 1] != LJ_TPROTO_GCT ||
	    lj_get_ref(lo, a + lo->pt_chunkname) != lj_get_ref(lo, b + lo->pt_chunkname))
		return 0;
	for (size_t i = 0; i < sizeof(fields) / sizeof(*fields); i++)
		if (get_u32(a + fields[i]) != get_u32(b + fields[i]))
			return 0;
	return 1;
}

/* What a proto's header says, read and checked before its block is. */
struct proto_hdr {
	uint32_t sizept, sizebc, sizekgc, numline, firstline;
	uint64_t chunkref;
};

/* Reads the header of the proto at addr: 0; -EFAULT unreadable; -ESTALE
 * not the proto the sample saw (freed, another one); -EINVAL sizes that
 * make no sense. */
static int read_header(const struct lj_target *t, uint64_t addr, uint16_t fingerprint,
		       struct proto_hdr *h)
{
	const struct lj_layout *lo = &t->layout;
	uint8_t hdr[PROTO_HDR_MAX];

	if (lo->pt_size > sizeof(hdr) || target_read(t->pid, addr, hdr, lo->pt_size))
		return -EFAULT;
	if (hdr[lo->ref_size + 1] != LJ_TPROTO_GCT)
		return -ESTALE; /* freed (or never a proto) */
	h->sizept = get_u32(hdr + lo->pt_sizept);
	h->sizebc = get_u32(hdr + lo->pt_sizebc);
	h->sizekgc = get_u32(hdr + lo->pt_sizekgc);
	h->chunkref = lj_get_ref(lo, hdr + lo->pt_chunkname);
	h->firstline = get_u32(hdr + lo->pt_firstline);
	h->numline = get_u32(hdr + lo->pt_numline);
	if (lj_proto_fingerprint(h->chunkref, h->firstline, h->numline) != fingerprint)
		return -ESTALE;
	if (h->sizept > PROTO_MAX_SIZE || h->sizept < lo->pt_size + 4ull * h->sizebc ||
	    !h->sizebc || h->sizekgc > h->sizept / lo->ref_size)
		return -EINVAL;
	return 0;
}

/* Lines: instruction 0 is on firstline; lineinfo[i - 1] holds the offset
 * from firstline of instruction i, in 1, 2 or 4 bytes; those past the end
 * of the block are left 0.  0 or -ENOMEM. */
static int decode_lines(struct proto_table *pt, const struct proto_hdr *h,
			const uint8_t *b, size_t lineinfo)
{
	size_t w = h->numline < 256 ? 1 : h->numline < 65536 ? 2 : 4;

	if (GROW(pt->lines, pt->lines_cap, h->sizebc))
		return -ENOMEM;
	memset(pt->lines, 0, h->sizebc * sizeof(*pt->lines));
	for (uint32_t i = 0; i < h->sizebc; i++) {
		size_t at;
		uint32_t d = 0;

		pt->lines[i] = h->firstline;
		if (!i || !lineinfo)
			continue;
		at = lineinfo + (i - 1) * w;
		if (at + w > h->sizept)
			break;
		memcpy(&d, b + at, w);
		pt->lines[i] = h->firstline + d;
	}
	return 0;
}

/* String constants: the GC constants sit below k (at koff in the block),
 * the one at k - (d+1)*ref_size is what GGET/TGETS operand d names; the
 * others (tables, protos, cdata) and strings that cannot be read are left
 * out.  Their strings' offsets in pt->kstr_off.  0 or -ENOMEM. */
static int read_kstrs(struct proto_table *pt, const struct lj_target *t,
		      const struct proto_hdr *h, const uint8_t *b, size_t koff)
{
	const struct lj_layout *lo = &t->layout;

	pt->rec.nkstr = 0;
	if (GROW(pt->kstr, pt->kstr_cap, h->sizekgc + 1) ||
	    GROW(pt->kstr_off, pt->kstr_off_cap, h->sizekgc + 1))
		return -ENOMEM;
	for (uint32_t d = 0; koff && d < h->sizekgc; d++) {
		size_t at = koff - (d + 1) * lo->ref_size, off;
		int err;

		if ((d + 1) * lo->ref_size > koff)
			break;
		err = read_gcstr(pt, t, lj_get_ref(lo, b + at), 1, &off);
		if (err == -ENOMEM)
			return err;
		if (err)
			continue;
		pt->kstr[pt->rec.nkstr].index = d;
		pt->kstr_off[pt->rec.nkstr++] = off;
	}
	return 0;
}

/* Upvalue names: NUL-separated, sizeuv of them, from uvinfo in the block
 * (0: none); their offsets in the block in pt->uv_off.  0 or -ENOMEM. */
static int read_uvnames(struct proto_table *pt, const struct lj_layout *lo,
			const struct proto_hdr *h, const uint8_t *b, size_t uvinfo)
{
	uint32_t n = b[lo->pt_sizeuv];
	size_t at = uvinfo;

	pt->rec.nuv = 0;
	if (!uvinfo)
		return 0;
	if (GROW(pt->uvnames, pt->uvnames_cap, n + 1) ||
	    GROW(pt->uv_off, pt->uv_off_cap, n + 1))
		return -ENOMEM;
	for (uint32_t i = 0; i < n && at < h->sizept; i++) {
		size_t len = strnlen((const char *)b + at, h->sizept - at);

		if (at + len >= h->sizept)
			break;
		pt->uv_off[pt->rec.nuv++] = at;
		at += len + 1;
	}
	return 0;
}

/* Points pt->rec at what was read (strings may have moved while growing,
 * so offsets become pointers only now). */
static void fill_rec(struct proto_table *pt, const struct lj_layout *lo, uint64_t addr,
		     const struct proto_hdr *h, size_t chunk_off, size_t varinfo)
{
	const uint8_t *b = pt->block;

	pt->rec.addr = addr;
	pt->rec.chunkname = pt->strings + chunk_off;
	pt->rec.firstline = h->firstline;
	pt->rec.numline = h->numline;
	pt->rec.numparams = b[lo->pt_numparams];
	pt->rec.flags = b[lo->pt_flags];
	pt->rec.nbc = h->sizebc;
	pt->rec.bc = (const uint32_t *)(b + lo->pt_size);
	pt->rec.lines = pt->lines;
	for (uint32_t i = 0; i < pt->rec.nkstr; i++)
		pt->kstr[i].str = pt->strings + pt->kstr_off[i];
	pt->rec.kstr = pt->kstr;
	for (uint32_t i = 0; i < pt->rec.nuv; i++)
		pt->uvnames[i] = (const char *)b + pt->uv_off[i];
	pt->rec.uvnames = pt->rec.nuv ? pt->uvnames : NULL;
	pt->rec.varinfo = varinfo ? b + varinfo : NULL;
	pt->rec.varinfo_len = varinfo ? (uint32_t)(h->sizept - varinfo) : 0;
}

/* Reads and decodes the proto at addr into pt->rec: 0, -ENOMEM, or what
 * read_header() says, -EFAULT for a block or chunk name that cannot be
 * read, -ESTALE for a proto that changed while it was read. */
static int read_proto(struct proto_table *pt, const struct lj_target *t,
		      uint64_t addr, uint16_t fingerprint)
{
	const struct lj_layout *lo = &t->layout;
	struct proto_hdr h;
	uint8_t hdr[PROTO_HDR_MAX];
	size_t chunk_off, koff;
	uint8_t *b;
	int err;

	err = read_header(t, addr, fingerprint, &h);
	if (err)
		return err;
	free(pt->block);
	pt->block = b = malloc(h.sizept);
	if (!b)
		return -ENOMEM;
	if (target_read(t->pid, addr, b, h.sizept))
		return -EFAULT;
	pt->strings_len = 0;
	err = read_gcstr(pt, t, h.chunkref, 1, &chunk_off);
	if (err)
		return err == -ENOMEM ? err : -EFAULT;
	koff = inner(lj_get_ref(lo, b + lo->pt_k), addr, h.sizept + 1);
	err = decode_lines(pt, &h, b, inner(lj_get_ref(lo, b + lo->pt_lineinfo), addr,
					    h.sizept)) ?:
	      read_kstrs(pt, t, &h, b, koff) ?:
	      read_uvnames(pt, lo, &h, b, inner(lj_get_ref(lo, b + lo->pt_uvinfo), addr,
						h.sizept));
	if (err)
		return err;
	/* Everything is read.  The proto still alive and unchanged: what it
	 * names was alive too while we read it. */
	if (target_read(t->pid, addr, hdr, lo->pt_size) || !proto_same(lo, hdr, b))
		return -ESTALE;
	fill_rec(pt, lo, addr, &h, chunk_off,
		 inner(lj_get_ref(lo, b + lo->pt_varinfo), addr, h.sizept));
	return 0;
}

void proto_table_note(struct proto_table *pt, uint32_t pid, uint64_t addr,
		      uint16_t fingerprint, uint32_t firstline, uint32_t numline,
		      const char *name, size_t len, size_t full)
{
	uint64_t hash = key_hash(pid, addr, fingerprint);
	struct proto_key *e;
	struct proto_ident *id;

	/* A name cut short is no file's or loader's name; a chunk loaded
	 * from a string is named by the start of its first line. */
	if (find(pt, hash, pid, addr, fingerprint) || !len ||
	    (len < full && (name[0] == '@' || name[0] == '=')))
		return;
	id = calloc(1, sizeof(*id));
	if (!id || !(id->chunkname = strndup(name, len)) ||
	    add(pt, hash, pid, addr, fingerprint, &e)) {
		if (id)
			free(id->chunkname);
		free(id);
		pt->nomem++;
		return;
	}
	id->firstline = firstline;
	id->numline = numline;
	e->id = ID_NOTED;
	e->ident = id;
	pt->noted++;
}

static void ident_free(struct proto_ident *id)
{
	if (id) {
		free(id->chunkname);
		free(id);
	}
}

/* pt->rec from what the walker saw of a prototype: no bytecode. */
static void rec_from_ident(struct proto_table *pt, uint64_t addr,
			   const struct proto_ident *id)
{
	memset(&pt->rec, 0, sizeof(pt->rec));
	pt->rec.addr = addr;
	pt->rec.chunkname = id->chunkname;
	pt->rec.firstline = id->firstline;
	pt->rec.numline = id->numline;
}

uint64_t proto_table_get(struct proto_table *pt, const struct lj_target *t,
			 uint64_t addr, uint16_t fingerprint,
			 const struct lp_proto **rec)
{
	uint32_t pid = (uint32_t)t->pid;
	uint64_t hash = key_hash(pid, addr, fingerprint);
	struct proto_key *e;
	struct proto_ident *id;
	int err;

	*rec = NULL;
	e = find(pt, hash, pid, addr, fingerprint);
	if (e && e->id != ID_NOTED)
		return e->id == ID_FAILED ? 0 : e->id;
	if (!e && add(pt, hash, pid, addr, fingerprint, &e)) {
		pt->nomem++;
		return 0;
	}
	free(pt->last_ident_name);
	pt->last_ident_name = NULL;
	id = e->ident;
	e->ident = NULL;
	if (e->id == ID_NOTED)
		pt->noted--;
	/* A proto that could not be read, nor named from what the walker
	 * saw, is remembered as such (ID_FAILED) so that it is not read
	 * again at every sample.  Out of memory is counted as such, not as
	 * a proto that could not be read. */
	err = read_proto(pt, t, addr, fingerprint);
	if (err == -ENOMEM)
		pt->nomem++;
	if (!err) {
		e->id = pt->next_id++;
		pt->count++;
	} else if (id) {
		rec_from_ident(pt, addr, id);
		pt->last_ident_name = id->chunkname; /* until the next call */
		id->chunkname = NULL;
		e->id = pt->next_id++;
		pt->count++;
		pt->from_ident += err != -ENOMEM;
	} else {
		e->id = ID_FAILED;
		pt->failed += err != -ENOMEM;
	}
	ident_free(id);
	if (e->id == ID_FAILED)
		return 0;
	pt->rec.id = e->id;
	*rec = &pt->rec;
	return pt->rec.id;
}

uint64_t proto_table_at(struct proto_table *pt, const struct lj_target *t,
			uint64_t addr, uint32_t *sizebc, const struct lp_proto **rec)
{
	const struct lj_layout *lo = &t->layout;
	uint8_t hdr[PROTO_HDR_MAX];
	uint32_t firstline, numline;

	*rec = NULL;
	*sizebc = 0;
	if (!addr || lo->pt_size > sizeof(hdr) || target_read(t->pid, addr, hdr, lo->pt_size))
		return 0;
	memcpy(&firstline, hdr + lo->pt_firstline, 4);
	memcpy(&numline, hdr + lo->pt_numline, 4);
	memcpy(sizebc, hdr + lo->pt_sizebc, 4);
	return proto_table_get(pt, t, addr,
			       lj_proto_fingerprint(lj_get_ref(lo, hdr + lo->pt_chunkname),
						    firstline, numline), rec);
}

uint64_t proto_table_from_ident(const struct proto_table *pt)
{
	return pt->from_ident;
}

uint64_t proto_table_count(const struct proto_table *pt)
{
	return pt->count;
}

uint64_t proto_table_failed(const struct proto_table *pt)
{
	return pt->failed;
}

uint64_t proto_table_nomem(const struct proto_table *pt)
{
	return pt->nomem;
}

void proto_table_free(struct proto_table *pt)
{
	if (!pt)
		return;
	for (size_t i = 0; i < pt->n; i++)
		ident_free(pt->v[i].ident);
	free(pt->v);
	htab_free(&pt->index);
	free(pt->last_ident_name);
	free(pt->block);
	free(pt->strings);
	free(pt->kstr);
	free(pt->kstr_off);
	free(pt->uvnames);
	free(pt->uv_off);
	free(pt->lines);
	free(pt);
}

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

struct proto_key {
	uint64_t addr;
	uint32_t pid;
	uint16_t fingerprint;
	uint64_t id; /* 0 empty; ID_FAILED; ID_NOTED: not read yet */
	struct proto_ident *ident;
};

#define ID_FAILED UINT64_MAX
#define ID_NOTED (UINT64_MAX - 1)

struct proto_table {
	struct proto_key *slots; /* open addressing; id 0 = empty */
	uint64_t nslots, count, failed, next_id;
	uint64_t noted;      /* slots ID_NOTED */
	uint64_t from_ident; /* written from what the walker saw */
	char *last_ident_name; /* the chunk name pt->rec points at, if so */
	/* The decoded record handed out by proto_table_get. */
	struct lp_proto rec;
	uint8_t *block;
	char *strings;
	size_t strings_len, strings_cap;
	struct lp_proto_kstr *kstr;
	const char **uvnames;
	uint32_t *lines;
};

static uint64_t key_hash(uint32_t pid, uint64_t addr, uint16_t fp)
{
	uint64_t h = (addr ^ ((uint64_t)pid << 40) ^ fp) * 0x9e3779b97f4a7c15ull;

	return h ^ (h >> 31);
}

struct proto_table *proto_table_new(void)
{
	struct proto_table *pt = calloc(1, sizeof(*pt));

	if (!pt)
		return NULL;
	pt->nslots = 1024;
	pt->slots = calloc(pt->nslots, sizeof(*pt->slots));
	if (!pt->slots) {
		free(pt);
		return NULL;
	}
	pt->next_id = 1;
	return pt;
}

static struct proto_key *find_slot(struct proto_key *slots, uint64_t nslots,
				   uint32_t pid, uint64_t addr, uint16_t fp)
{
	uint64_t i = key_hash(pid, addr, fp) & (nslots - 1);

	while (slots[i].id && !(slots[i].addr == addr && slots[i].pid == pid &&
				slots[i].fingerprint == fp))
		i = (i + 1) & (nslots - 1);
	return &slots[i];
}

static int grow(struct proto_table *pt)
{
	uint64_t n = pt->nslots * 2;
	struct proto_key *s = calloc(n, sizeof(*s));

	if (!s)
		return -ENOMEM;
	for (uint64_t i = 0; i < pt->nslots; i++)
		if (pt->slots[i].id)
			*find_slot(s, n, pt->slots[i].pid, pt->slots[i].addr,
				   pt->slots[i].fingerprint) = pt->slots[i];
	free(pt->slots);
	pt->slots = s;
	pt->nslots = n;
	return 0;
}

static uint32_t get_u32(const uint8_t *p)
{
	uint32_t v;

	memcpy(&v, p, 4);
	return v;
}

/* Copies a target GCstr into pt->strings; returns its offset or -1. */
static long read_gcstr(struct proto_table *pt, const struct lj_target *t,
		       uint64_t str, int check_type)
{
	const struct lj_layout *lo = &t->layout;
	uint8_t hdr[64];
	uint32_t len;
	long off;

	if (!str || lo->str_size > sizeof(hdr) ||
	    target_read(t->pid, str, hdr, lo->str_size))
		return -1;
	if (check_type && hdr[lo->ref_size + 1] != LJ_TSTR_GCT)
		return -1;
	len = get_u32(hdr + lo->str_len);
	if (len > STRING_MAX)
		len = STRING_MAX;
	if (pt->strings_len + len + 1 > pt->strings_cap) {
		size_t cap = (pt->strings_cap + len + 1) * 2;
		char *s = realloc(pt->strings, cap);

		if (!s)
			return -1;
		pt->strings = s;
		pt->strings_cap = cap;
	}
	off = (long)pt->strings_len;
	if (target_read(t->pid, str + lo->str_size, pt->strings + off, len))
		return -1;
	pt->strings[off + len] = '\0';
	pt->strings_len += len + 1;
	return off;
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

/* Reads and decodes the proto at addr into pt->rec. */
static int read_proto(struct proto_table *pt, const struct lj_target *t,
		      uint64_t addr, uint16_t fingerprint)
{
	const struct lj_layout *lo = &t->layout;
	uint8_t hdr[PROTO_HDR_MAX];
	uint32_t sizept, sizebc, sizekgc, numline, firstline;
	size_t lineinfo, uvinfo, varinfo, koff, chunk_off_str = 0;
	uint64_t chunkref, k;
	long chunk_off, *kstr_off = NULL, *uv_off = NULL;
	uint8_t *b;
	int err = -EINVAL;

	if (lo->pt_size > sizeof(hdr) || target_read(t->pid, addr, hdr, lo->pt_size))
		return -EFAULT;
	if (hdr[lo->ref_size + 1] != LJ_TPROTO_GCT)
		return -ESTALE; /* freed (or never a proto) */
	sizept = get_u32(hdr + lo->pt_sizept);
	sizebc = get_u32(hdr + lo->pt_sizebc);
	sizekgc = get_u32(hdr + lo->pt_sizekgc);
	chunkref = lj_get_ref(lo, hdr + lo->pt_chunkname);
	firstline = get_u32(hdr + lo->pt_firstline);
	numline = get_u32(hdr + lo->pt_numline);
	if (lj_proto_fingerprint(chunkref, firstline, numline) != fingerprint)
		return -ESTALE;
	if (sizept > PROTO_MAX_SIZE || sizept < lo->pt_size + 4ull * sizebc ||
	    !sizebc || sizekgc > sizept / lo->ref_size)
		return -EINVAL;
	free(pt->block);
	pt->block = b = malloc(sizept);
	if (!b || target_read(t->pid, addr, b, sizept))
		return -EFAULT;

	pt->strings_len = 0;
	chunk_off = read_gcstr(pt, t, chunkref, 1);
	if (chunk_off < 0)
		return -EFAULT;
	chunk_off_str = (size_t)chunk_off;
	lineinfo = inner(lj_get_ref(lo, b + lo->pt_lineinfo), addr, sizept);
	uvinfo = inner(lj_get_ref(lo, b + lo->pt_uvinfo), addr, sizept);
	varinfo = inner(lj_get_ref(lo, b + lo->pt_varinfo), addr, sizept);
	k = lj_get_ref(lo, b + lo->pt_k);
	koff = inner(k, addr, sizept + 1);

	/* Lines: instruction 0 is on firstline; lineinfo[i - 1] holds the
	 * offset from firstline of instruction i, in 1, 2 or 4 bytes. */
	free(pt->lines);
	pt->lines = calloc(sizebc, sizeof(*pt->lines));
	if (!pt->lines)
		return -ENOMEM;
	for (uint32_t i = 0; i < sizebc; i++) {
		size_t w = numline < 256 ? 1 : numline < 65536 ? 2 : 4, at;
		uint32_t d = 0;

		pt->lines[i] = firstline;
		if (!i || !lineinfo)
			continue;
		at = lineinfo + (i - 1) * w;
		if (at + w > sizept)
			break;
		memcpy(&d, b + at, w);
		pt->lines[i] = firstline + d;
	}

	/* String constants: the GC constants sit below k, the one at
	 * k - (d+1)*ref_size is what GGET/TGETS operand d names. */
	free(pt->kstr);
	pt->kstr = calloc(sizekgc + 1, sizeof(*pt->kstr));
	kstr_off = calloc(sizekgc + 1, sizeof(*kstr_off));
	if (!pt->kstr || !kstr_off) {
		err = -ENOMEM;
		goto out;
	}
	pt->rec.nkstr = 0;
	for (uint32_t d = 0; koff && d < sizekgc; d++) {
		size_t at = koff - (d + 1) * lo->ref_size;
		long off;

		if ((d + 1) * lo->ref_size > koff)
			break;
		off = read_gcstr(pt, t, lj_get_ref(lo, b + at), 1);
		if (off < 0)
			continue; /* a table, proto or cdata constant */
		pt->kstr[pt->rec.nkstr].index = d;
		kstr_off[pt->rec.nkstr++] = off;
	}

	/* Upvalue names: NUL-separated, sizeuv of them. */
	pt->rec.nuv = 0;
	if (uvinfo) {
		uint32_t n = b[lo->pt_sizeuv];
		size_t at = uvinfo;

		free(pt->uvnames);
		pt->uvnames = calloc(n + 1, sizeof(*pt->uvnames));
		uv_off = calloc(n + 1, sizeof(*uv_off));
		if (!pt->uvnames || !uv_off) {
			err = -ENOMEM;
			goto out;
		}
		for (uint32_t i = 0; i < n && at < sizept; i++) {
			size_t len = strnlen((const char *)b + at, sizept - at);

			if (at + len >= sizept)
				break;
			uv_off[pt->rec.nuv++] = (long)at;
			at += len + 1;
		}
	}

	/* Everything is read.  The proto still alive and unchanged: what it
	 * names was alive too while we read it. */
	if (target_read(t->pid, addr, hdr, lo->pt_size) || !proto_same(lo, hdr, b)) {
		err = -ESTALE;
		goto out;
	}
	/* Point the record at it (strings may have moved while growing, so
	 * offsets become pointers only now). */
	pt->rec.addr = addr;
	pt->rec.chunkname = pt->strings + chunk_off_str;
	pt->rec.firstline = firstline;
	pt->rec.numline = numline;
	pt->rec.numparams = b[lo->pt_numparams];
	pt->rec.flags = b[lo->pt_flags];
	pt->rec.nbc = sizebc;
	pt->rec.bc = (const uint32_t *)(b + lo->pt_size);
	pt->rec.lines = pt->lines;
	for (uint32_t i = 0; i < pt->rec.nkstr; i++)
		pt->kstr[i].str = pt->strings + kstr_off[i];
	pt->rec.kstr = pt->kstr;
	for (uint32_t i = 0; i < pt->rec.nuv; i++)
		pt->uvnames[i] = (const char *)b + uv_off[i];
	pt->rec.uvnames = pt->rec.nuv ? pt->uvnames : NULL;
	pt->rec.varinfo = varinfo ? b + varinfo : NULL;
	pt->rec.varinfo_len = varinfo ? (uint32_t)(sizept - varinfo) : 0;
	err = 0;
out:
	free(kstr_off);
	free(uv_off);
	return err;
}

static void grow_if_full(struct proto_table *pt)
{
	if ((pt->count + pt->failed + pt->noted) * 2 > pt->nslots)
		grow(pt);
}

void proto_table_note(struct proto_table *pt, uint32_t pid, uint64_t addr,
		      uint16_t fingerprint, uint32_t firstline, uint32_t numline,
		      const char *name, size_t len, size_t full)
{
	struct proto_key *slot = find_slot(pt->slots, pt->nslots, pid, addr, fingerprint);
	struct proto_ident *id;

	/* A name cut short is no file's or loader's name; a chunk loaded
	 * from a string is named by the start of its first line. */
	if (slot->id || !len || (len < full && (name[0] == '@' || name[0] == '=')))
		return;
	id = calloc(1, sizeof(*id));
	if (!id || !(id->chunkname = strndup(name, len))) {
		free(id);
		return;
	}
	id->firstline = firstline;
	id->numline = numline;
	slot->addr = addr;
	slot->pid = pid;
	slot->fingerprint = fingerprint;
	slot->id = ID_NOTED;
	slot->ident = id;
	pt->noted++;
	grow_if_full(pt);
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
	struct proto_key *slot;
	struct proto_ident *id;

	*rec = NULL;
	slot = find_slot(pt->slots, pt->nslots, (uint32_t)t->pid, addr, fingerprint);
	if (slot->id && slot->id != ID_NOTED)
		return slot->id == ID_FAILED ? 0 : slot->id;
	free(pt->last_ident_name);
	pt->last_ident_name = NULL;
	id = slot->ident;
	slot->ident = NULL;
	if (slot->id == ID_NOTED)
		pt->noted--;
	slot->addr = addr;
	slot->pid = (uint32_t)t->pid;
	slot->fingerprint = fingerprint;
	/* A proto that could not be read, nor named from what the walker
	 * saw, is remembered as such (ID_FAILED) so that it is not read
	 * again at every sample. */
	if (!read_proto(pt, t, addr, fingerprint)) {
		slot->id = pt->next_id++;
		pt->count++;
	} else if (id) {
		rec_from_ident(pt, addr, id);
		pt->last_ident_name = id->chunkname; /* until the next call */
		id->chunkname = NULL;
		slot->id = pt->next_id++;
		pt->count++;
		pt->from_ident++;
	} else {
		slot->id = ID_FAILED;
		pt->failed++;
	}
	ident_free(id);
	if (slot->id != ID_FAILED) {
		pt->rec.id = slot->id;
		*rec = &pt->rec;
	}
	grow_if_full(pt);
	return *rec ? pt->rec.id : 0;
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

void proto_table_free(struct proto_table *pt)
{
	if (!pt)
		return;
	for (uint64_t i = 0; i < pt->nslots; i++)
		ident_free(pt->slots[i].ident);
	free(pt->slots);
	free(pt->last_ident_name);
	free(pt->block);
	free(pt->strings);
	free(pt->kstr);
	free(pt->uvnames);
	free(pt->lines);
	free(pt);
}

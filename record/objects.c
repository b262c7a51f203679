/*
 * objects.c - the ELF objects a recording hits: which file each mapping
 * is, which objects samples hit and at which addresses, and when their
 * symbols and source lines go into the trace.  It decides; symtab.c and
 * srclines.c hold one object's symbols and lines and write their
 * records, and objects_prep.c reads them off the recorder's thread.
 *
 * A trace is read on other machines, often after the binaries it names
 * were upgraded, so the native frames of a trace must not depend on the
 * files a report finds.  This file gives every file mapping the recorder
 * writes an object id, and writes, before the MAPS record that first
 * names it, an OBJECT record saying which file that is by content (its
 * GNU build-id, or a content hash; format/objid.c).  It notes the objects
 * that samples hit (user stack addresses, the C functions of Lua frames)
 * and keeps every address they hit, once (addrset.c).  The symbols and
 * DWARF of an object are read on a thread of their own (objects_prep.c)
 * from the moment a sample first hits it, so that a flush never holds up
 * the recorder for them.  At each flush and at the end, for the addresses
 * new since the last flush, it embeds the symbols that name them
 * (symtab.c: a few hundred of a few thousand) as SYMTAB records and their
 * source lines, resolved by the object's DWARF, as SRCLINES records
 * (srclines.c), so a trace cut short still symbolizes what it holds.  An
 * object not read yet keeps the addresses that hit it for the next flush;
 * the last flush waits for all.  An address that cannot be kept (the set
 * is full) makes its object embed its whole table.
 * `--no-embed` keeps the OBJECT records (a report can then check the
 * files it finds) and leaves the rest out.
 *
 * Files are opened as procmaps_open() opens them: the very file the
 * process mapped, through /proc/PID/map_files, even if its path was since
 * replaced or deleted, and by path only when that fails.  The descriptor
 * is kept until the object's symbols are written, because the process may
 * be gone by then.
 */
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "format/trace.h"
#include "lib/elfsyms.h"
#include "lib/grow.h"
#include "record/addrset.h"
#include "record/objects.h"
#include "record/sample_event.h"
#include "record/say.h"
#include "record/objects_prep.h"
#include "record/procmaps.h"
#include "record/srclines.h"
#include "record/symtab.h"
#include "record/vdso.h"

/* Descriptors kept open for objects not yet embedded; past this many the
 * file is opened again by path when its symbols are written. */
#define MAX_OPEN_FDS 512
/* Objects whose DWARF is kept open for addresses hit later: libdw's
 * state and the decompressed sections cost memory (libc's: some 10 MiB).
 * Past this many, an object embeds the lines of the addresses hit up to
 * its first flush, and later addresses in it get none. */
#define MAX_OPEN_DWARF 64
/* Keys of the address set: the object id above the file offset. */
#define ADDR_OFF_BITS 44

struct object {
	uint64_t id;
	char *path;
	uint64_t inode;
	int fd;      /* -1 once closed */
	int hit;     /* a sample hit it */
	int written; /* its table is read (or cannot be) */
	int queued;  /* being read by the worker (objects_prep.c) */
	int all;     /* an address was not kept: embed the whole table */
	struct obj_symtab *syms;       /* its table, while embedding */
	struct srclines_object *dwarf; /* open for addresses hit later */
	struct srclines_count lines;   /* its lines embedded so far */
};

struct object_set {
	int embed;
	struct object *v;
	size_t n, cap;
	size_t nopen;
	size_t pending; /* hit and not written */
	uint64_t embedded;
	uint64_t lines_left;   /* SRCLINES bytes the trace may still embed */
	struct addr_set addrs; /* (object, file offset) of addresses hit */
	size_t ndwarf;         /* objects with dwarf open */
	size_t nall, nall_done; /* objects marked all; as of the last write */
	struct obj_prep *prep; /* reads symbols and DWARF; NULL: no embedding */
};

struct object_set *object_set_new(int embed)
{
	struct object_set *s = calloc(1, sizeof(*s));

	if (s) {
		s->embed = embed;
		s->lines_left = SRCLINES_MAX_TRACE;
		if (embed && !(s->prep = obj_prep_new())) {
			free(s);
			return NULL;
		}
	}
	return s;
}

void object_set_free(struct object_set *s)
{
	if (!s)
		return;
	obj_prep_free(s->prep);
	for (size_t i = 0; i < s->n; i++) {
		if (s->v[i].fd >= 0)
			close(s->v[i].fd);
		free(s->v[i].path);
		obj_symtab_free(s->v[i].syms);
		srclines_free(s->v[i].dwarf);
	}
	addr_set_free(&s->addrs);
	free(s->v);
	free(s);
}

static struct object *find(struct object_set *s, const char *path, uint64_t inode)
{
	/* A process maps tens of files; a linear scan over the few hundred
	 * a recording meets costs nothing next to reading /proc. */
	for (size_t i = 0; i < s->n; i++)
		if (s->v[i].inode == inode && !strcmp(s->v[i].path, path))
			return &s->v[i];
	return NULL;
}

/* A new object for mapping m, read from fd (taken over): reads its
 * identity and writes its OBJECT record.  NULL when the file cannot be
 * read (its frames then print as module+offset, as before objects
 * existed). */
static struct object *add_fd(struct object_set *s, const struct lp_mapping *m, int fd,
			     struct trace_writer *w)
{
	uint8_t ident[LP_OBJID_MAX];
	struct lp_record rec;
	struct object *o;
	uint32_t kind, len;
	uint64_t size;

	if (GROW(s->v, s->cap, s->n + 1)) {
		close(fd);
		return NULL;
	}
	if (lp_objid_read(fd, &kind, ident, &len, &size)) {
		close(fd);
		return NULL;
	}
	o = &s->v[s->n];
	memset(o, 0, sizeof(*o));
	o->path = strdup(m->path);
	if (!o->path) {
		close(fd);
		return NULL;
	}
	o->id = s->n + 1;
	o->inode = m->inode;
	o->fd = -1;
	if (s->embed && s->nopen < MAX_OPEN_FDS) {
		o->fd = fd;
		s->nopen++;
	} else {
		close(fd);
	}
	s->n++;
	memset(&rec, 0, sizeof(rec));
	rec.type = LP_REC_OBJECT;
	rec.u.object.id = o->id;
	rec.u.object.path = o->path;
	rec.u.object.id_kind = kind;
	rec.u.object.ident = ident;
	rec.u.object.ident_len = len;
	rec.u.object.size = size;
	if (trace_write(w, &rec))
		return NULL; /* the session sees the writer's error next time */
	return o;
}

/* The file behind m, or our own vDSO's bytes for a process's vDSO (the
 * same image: vdso.h): a descriptor, or -errno. */
static int open_object(pid_t pid, const struct lp_mapping *m)
{
	return vdso_mapping(m->path) ? vdso_fd() : procmaps_open(pid, m);
}

void object_set_assign(struct object_set *s, pid_t pid, struct maps_table *t,
		       struct trace_writer *w)
{
	for (uint32_t i = 0; i < t->n; i++) {
		struct lp_mapping *m = &t->v[i];
		struct object *o;
		int fd;

		m->object = 0;
		/* Anonymous memory, [stack] and the like are no object; the
		 * vDSO is one, when its symbols are embedded. */
		if (m->path[0] != '/' && !(s->embed && vdso_mapping(m->path)))
			continue;
		o = find(s, m->path, m->inode);
		if (!o && (fd = open_object(pid, m)) >= 0)
			o = add_fd(s, m, fd, w);
		if (o)
			m->object = o->id;
	}
}

/* Has the worker read o's symbols and DWARF (objects_prep.c), with a
 * descriptor of its own; o stays unqueued if none can be had (its
 * frames then print as module+offset). */
static void queue(struct object_set *s, struct object *o)
{
	int fd;

	if (!s->prep || o->queued)
		return;
	fd = o->fd >= 0 ? fcntl(o->fd, F_DUPFD_CLOEXEC, 0) :
	     vdso_mapping(o->path) ? vdso_fd() : open(o->path, O_RDONLY | O_CLOEXEC);
	if (fd >= 0 && !obj_prep_submit(s->prep, o->id, fd, o->path))
		o->queued = 1;
}

void object_set_note_id(struct object_set *s, uint64_t id)
{
	struct object *o;

	if (!id || id > s->n)
		return;
	o = &s->v[id - 1];
	if (!o->hit) {
		o->hit = 1;
		if (!o->written) {
			s->pending++;
			queue(s, o);
		}
	}
}

/* Notes at, an address in mapping m (NULL: none), and its object. */
static void note_at(struct object_set *s, const struct lp_mapping *m, uint64_t at)
{
	uint64_t off;

	if (!m || !m->object)
		return;
	object_set_note_id(s, m->object);
	off = at - m->start + m->pgoff;
	if (!s->embed || m->object > s->n)
		return;
	if (m->object >= (1ull << (64 - ADDR_OFF_BITS)) || off >= (1ull << ADDR_OFF_BITS) ||
	    addr_set_add(&s->addrs, m->object << ADDR_OFF_BITS | off) < 0) {
		/* Its symbols cannot be chosen: all of them. */
		s->nall += !s->v[m->object - 1].all;
		s->v[m->object - 1].all = 1;
	}
}

void object_set_note(struct object_set *s, const struct maps_table *t,
		     const uint64_t *addrs, uint32_t n)
{
	for (uint32_t i = 0; i < n; i++)
		note_at(s, maps_table_find(t, addrs[i]), addrs[i]);
}

void object_set_note_frames(struct object_set *s, const struct lp_mapping *const *maps,
			    const uint64_t *addrs, uint32_t n)
{
	for (uint32_t i = 0; i < n; i++)
		note_at(s, maps[i], sample_frame_addr(addrs[i], (int)i));
}

/* Takes what the worker read of o (j: NULL when nothing could be): its
 * table, whose symbols write_fresh() embeds as addresses need them, and
 * its DWARF. */
static int take_object(struct object_set *s, struct object *o,
		       struct obj_prepared *j)
{
	if (!j || !j->syms) /* gone or not ELF: its frames print as module+offset */
		return j ? j->err : 0;
	s->embedded++;
	o->syms = j->syms;
	j->syms = NULL;
	o->dwarf = j->dwarf;
	j->dwarf = NULL;
	s->ndwarf += !!o->dwarf;
	return 0;
}

/* Writes the symbols and source lines of the addresses hit since the
 * last flush, object by object (the keys sort by object), keeping those
 * of objects still being read for the next flush, then the symbols of
 * objects that need their whole table or have not been announced, then
 * closes the DWARF of the objects past MAX_OPEN_DWARF. */
static int write_fresh(struct object_set *s, struct trace_writer *w)
{
	const uint64_t off_mask = (1ull << ADDR_OFF_BITS) - 1;
	uint64_t *keys = s->addrs.fresh;
	size_t n = s->addrs.nfresh, kept = 0;
	int err = 0;

	if (n)
		qsort(keys, n, sizeof(*keys), u64_cmp);
	for (size_t i = 0, j; i < n && !err; i = j) {
		uint64_t id = keys[i] >> ADDR_OFF_BITS;
		struct object *o = id && id <= s->n ? &s->v[id - 1] : NULL;

		for (j = i; j < n && keys[j] >> ADDR_OFF_BITS == id; j++)
			;
		if (o && o->queued && !o->written) {
			memmove(keys + kept, keys + i, (j - i) * sizeof(*keys));
			kept += j - i;
			continue;
		}
		for (size_t k = i; k < j; k++) {
			keys[k] &= off_mask; /* the file offset alone */
			if (o && o->syms)
				obj_symtab_need(o->syms, keys[k]);
		}
		if (o && o->syms)
			err = obj_symtab_write(o->syms, o->id, w);
		if (!err && o && o->dwarf)
			err = srclines_write(o->dwarf, keys + i, j - i, &o->lines,
					     &s->lines_left, w);
	}
	s->addrs.nfresh = kept;
	for (size_t i = 0; i < s->n && !err; i++) {
		struct object *o = &s->v[i];

		if (!o->syms)
			continue;
		if (o->all)
			obj_symtab_need_all(o->syms);
		err = obj_symtab_write(o->syms, o->id, w);
	}
	for (size_t i = s->n; i-- > 0 && s->ndwarf > MAX_OPEN_DWARF;) {
		if (s->v[i].dwarf) {
			srclines_free(s->v[i].dwarf);
			s->v[i].dwarf = NULL;
			s->ndwarf--;
		}
	}
	return err;
}

int object_set_write(struct object_set *s, struct trace_writer *w, int last)
{
	int err = 0;

	if (!s->pending && !s->addrs.nfresh && s->nall == s->nall_done)
		return 0;
	s->nall_done = s->nall;
	for (size_t i = 0; i < s->n && !err; i++) {
		struct object *o = &s->v[i];

		if (!o->hit || o->written)
			continue;
		if (s->embed) {
			struct obj_prepared *j;

			queue(s, o);
			j = o->queued ? obj_prep_take(s->prep, o->id, last) : NULL;
			if (o->queued && !j)
				continue; /* still being read: the next flush */
			err = take_object(s, o, j);
			obj_prepared_free(j);
		}
		o->written = 1;
		s->pending--;
		if (o->fd >= 0) {
			close(o->fd);
			o->fd = -1;
			s->nopen--;
		}
	}
	if (!err)
		err = write_fresh(s, w);
	return err;
}

void object_set_stats(const struct object_set *s, uint64_t *objects,
		      uint64_t *embedded, uint64_t *symbols, uint64_t *of)
{
	*objects = s->n;
	*embedded = s->embedded;
	*symbols = *of = 0;
	for (size_t i = 0; i < s->n; i++) {
		uint64_t written, total;

		if (!s->v[i].syms)
			continue;
		obj_symtab_counts(s->v[i].syms, &written, &total);
		*symbols += written;
		*of += total;
	}
}

void object_set_print_srclines(const struct object_set *s, int verbose)
{
	uint64_t objects = 0, chains = 0, bytes = 0, skipped = 0;

	for (size_t i = 0; i < s->n; i++) {
		objects += !!s->v[i].lines.chains;
		chains += s->v[i].lines.chains;
		bytes += s->v[i].lines.bytes;
		skipped += !!s->v[i].lines.skipped;
	}
	if (!objects && !skipped)
		return;
	fprintf(stderr, "luaprof record: source lines of %llu objects embedded "
		"(%llu addresses, %.1f KiB)", (unsigned long long)objects,
		(unsigned long long)chains, bytes / 1024.0);
	if (skipped)
		fprintf(stderr, "; %llu objects left out in part, over %llu MiB per "
			"object or %llu MiB per trace", (unsigned long long)skipped,
			SRCLINES_MAX_OBJECT >> 20, SRCLINES_MAX_TRACE >> 20);
	if (s->addrs.dropped)
		fprintf(stderr, "; %llu hit addresses not looked up (too many): "
			"they have no lines", (unsigned long long)s->addrs.dropped);
	fprintf(stderr, "\n");
	for (size_t i = 0; verbose && i < s->n; i++) {
		const struct object *o = &s->v[i];

		if (!o->lines.chains && !o->lines.skipped)
			continue;
		say(stderr, 0, "  lines: %s: %llu addresses, %llu bytes%s",
			o->path, (unsigned long long)o->lines.chains,
			(unsigned long long)o->lines.bytes,
			o->lines.skipped == LP_SRCLINES_SKIPPED_SIZE ?
			"; more left out, over the bound per object" :
			o->lines.skipped ? "; more left out, the trace's bound was spent" : "");
	}
}

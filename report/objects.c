/*
 * objects.c - which file, or which embedded table, names the frames of
 * each object of a trace (see objects.h).
 *
 * A trace must report the same on every machine, so an embedded table
 * always wins over any file.  Without one (`record --no-embed`, or a
 * trace cut before its tables), a file is only trusted when its identity
 * (GNU build-id, or content hash; format/objid.c) is the recorded one: a
 * library upgraded since the recording would otherwise put wrong names on
 * the frames, silently.  Each object is resolved once, and what went
 * wrong is said once per object.
 *
 * Source lines and inlined frames follow the same rule: an object's come
 * from the chains the recorder resolved and embedded (SRCLINES records,
 * srclines.c) when the trace has any for it, and from the DWARF of the
 * local file it trusts (or that file's debug file) only when the trace
 * embeds nothing of the object; that DWARF is opened on the first frame
 * that needs it, and read as the recorder reads it (lib/dwarf_image.c,
 * lib/srcline.c).
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lib/debuginfo.h"
#include "lib/dwarf_image.h"
#include "lib/srcline.h"
#include "lib/escape.h"
#include "lib/htab.h"
#include "report/srclines.h"
#include "report/objects.h"

enum { UNRESOLVED, EMBEDDED, LOCAL, FAILED };

struct object {
	uint64_t id;
	char *path;
	uint32_t kind, len;
	uint8_t ident[LP_OBJID_MAX];
	char key[32]; /* the symbolizer's key: the embedded table, or... */
	char *file;   /* ...the local file that matched */
	int state;
	struct linetab embedded; /* SRCLINES records */
	struct lp_dwarf_image dwarf; /* the local file's, when none */
	struct srcline *lines;
	int dwarf_state; /* 0 not opened yet, 1 open, -1 none */
};

struct objects {
	struct symbolizer *sym;
	const char *symfs, *who;
	struct object *v;
	size_t len, cap;
	struct htab h; /* id -> v[] index */
	struct strtab names; /* of the embedded chains' frames */
};

int objects_new(struct objects **out, struct symbolizer *sym,
		const char *symfs, const char *who)
{
	*out = calloc(1, sizeof(**out));
	if (!*out)
		return -ENOMEM;
	(*out)->sym = sym;
	(*out)->symfs = symfs;
	(*out)->who = who;
	return 0;
}

void objects_free(struct objects *o)
{
	if (!o)
		return;
	for (size_t i = 0; i < o->len; i++) {
		free(o->v[i].path);
		free(o->v[i].file);
		srcline_free(o->v[i].lines);
		lp_dwarf_image_close(&o->v[i].dwarf);
		linetab_free(&o->v[i].embedded);
	}
	free(o->v);
	htab_free(&o->h);
	strtab_free(&o->names);
	free(o);
}

static struct object *find(const struct objects *o, uint64_t id)
{
	struct htab_probe p;
	int64_t i;

	htab_probe_start(&o->h, hash_u64(id), &p);
	while ((i = htab_probe_next(&o->h, &p)) >= 0)
		if (o->v[i].id == id)
			return &o->v[i];
	return NULL;
}

int objects_add(struct objects *o, const struct lp_object *rec)
{
	struct object *ob;
	int err;

	if (!rec->id || find(o, rec->id) || rec->ident_len > LP_OBJID_MAX)
		return 0; /* the first definition stands */
	err = GROW(o->v, o->cap, o->len + 1);
	if (err)
		return err;
	ob = &o->v[o->len];
	memset(ob, 0, sizeof(*ob));
	ob->path = strdup(rec->path ? rec->path : "");
	if (!ob->path)
		return -ENOMEM;
	err = htab_insert(&o->h, hash_u64(rec->id), o->len);
	if (err) {
		free(ob->path);
		return err;
	}
	ob->id = rec->id;
	ob->kind = rec->id_kind;
	ob->len = rec->ident_len;
	if (rec->ident_len)
		memcpy(ob->ident, rec->ident, rec->ident_len);
	/* Not a path (paths start with '/'), so no file can be taken for it. */
	snprintf(ob->key, sizeof(ob->key), "[object %" PRIu64 "]", rec->id);
	o->len++;
	return 0;
}

int objects_add_symtab(struct objects *o, const struct lp_symtab *rec)
{
	struct object *ob = find(o, rec->object);
	int err;

	if (!ob)
		return 0; /* a table of an object the trace lost: unusable */
	err = symbolizer_add_table(o->sym, ob->key, rec);
	if (!err)
		ob->state = EMBEDDED;
	return err;
}

int objects_add_srclines(struct objects *o, const struct lp_srclines *rec)
{
	struct object *ob = find(o, rec->object);

	return ob ? linetab_add(&ob->embedded, &o->names, rec) : 0;
}

int objects_preload(struct objects *o, const char *path)
{
	struct trace_reader *r;
	struct lp_record rec;
	char msg[256];
	int err;

	err = trace_reader_open(&r, path, msg, sizeof(msg));
	if (err)
		return err;
	/* Only these three: the samples and stacks are most of a trace. */
	trace_reader_skip(r, ~(1ull << LP_REC_OBJECT | 1ull << LP_REC_SYMTAB |
			       1ull << LP_REC_SRCLINES));
	while ((err = trace_reader_next(r, &rec)) == 1) {
		if (rec.type == LP_REC_OBJECT)
			err = objects_add(o, &rec.u.object);
		else if (rec.type == LP_REC_SYMTAB)
			err = objects_add_symtab(o, &rec.u.symtab);
		else if (rec.type == LP_REC_SRCLINES)
			err = objects_add_srclines(o, &rec.u.srclines);
		else
			continue;
		if (err)
			break;
	}
	trace_reader_close(r);
	return err < 0 ? err : 0;
}

/* 1 if the file at path is the recorded object, 0 if it is another
 * file, -errno if it cannot be read. */
static int same_object(const struct object *ob, const char *path)
{
	uint8_t ident[LP_OBJID_MAX];
	uint32_t kind, len;
	uint64_t size;
	int fd, err;

#ifdef FUZZING_BUILD_MODE_UNSAFE_FOR_PRODUCTION
	return -ENOENT; /* tests/fuzz/: no local files, see symbolize.c */
#endif
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	err = lp_objid_read(fd, &kind, ident, &len, &size);
	close(fd);
	if (err)
		return err;
	return kind == ob->kind && len == ob->len && !memcmp(ident, ob->ident, len);
}

/* Finds a local file for an object without an embedded table. */
static int resolve(struct objects *o, struct object *ob)
{
	char cand[2][PATH_MAX];
	int ncand = 0, differs = 0, err = -ENOENT;

	if (o->symfs && (size_t)snprintf(cand[ncand], PATH_MAX, "%s%s", o->symfs,
					 ob->path) < PATH_MAX)
		ncand++;
	snprintf(cand[ncand++], PATH_MAX, "%s", ob->path);
	for (int i = 0; i < ncand; i++) {
		int r = same_object(ob, cand[i]);

		if (r == 1) {
			ob->file = strdup(cand[i]);
			if (!ob->file)
				return -ENOMEM;
			ob->state = LOCAL;
			return 0;
		}
		if (r == 0)
			differs = 1;
		else if (err == -ENOENT)
			err = r;
	}
	ob->state = FAILED;
	fprintf(stderr, "%s: ", o->who);
	esc_fputs(ob->path, stderr); /* from the trace */
	if (differs)
		fprintf(stderr, ": build-id differs from the recorded one; "
			"its frames print as module+offset\n");
	else
		fprintf(stderr, ": not embedded in the trace and not found "
			"here (%s); its frames print as module+offset\n", strerror(-err));
	return 0;
}

int objects_lookup(struct objects *o, uint64_t id, const char *path,
		   uint64_t off, struct sym_result *res)
{
	struct object *ob = id ? find(o, id) : NULL;
	char buf[PATH_MAX];
	int err;

	if (!ob) {
		/* A trace from before objects, or one that lost the record:
		 * nothing to check a file against, so take what is there. */
		if (o->symfs && path[0] == '/' &&
		    (size_t)snprintf(buf, sizeof(buf), "%s%s", o->symfs, path) < sizeof(buf) &&
		    !access(buf, R_OK))
			path = buf;
		return symbolizer_lookup(o->sym, path, off, res);
	}
	if (ob->state == UNRESOLVED) {
		err = resolve(o, ob);
		if (err)
			return err;
	}
	switch (ob->state) {
	case EMBEDDED:
		return symbolizer_lookup(o->sym, ob->key, off, res);
	case LOCAL:
		return symbolizer_lookup(o->sym, ob->file, off, res);
	}
	res->func = NULL;
	res->addr = off;
	res->elf = 0;
	res->start = 0;
	return 0;
}

/* The DWARF of the local file an object without embedded lines trusts
 * (already checked to be the recorded object), as the recorder would
 * have read it: 0, 1 when it has none, -ENOMEM. */
static int open_local_dwarf(struct objects *o, struct object *ob)
{
	struct lp_debug_file f;
	int err;

	if (lp_debug_file_open(&f, ob->file))
		return 1;
	err = lp_dwarf_image_open(&ob->dwarf, f.elf, ob->path, o->symfs);
	lp_debug_file_close(&f);
	return err;
}

/* Opens the DWARF of an object without embedded lines on first use: the
 * trusted local file's, if any. */
static int open_dwarf(struct objects *o, struct object *ob)
{
	int err = 1;

	ob->dwarf_state = -1;
	if (ob->state == LOCAL)
		err = open_local_dwarf(o, ob);
	if (err)
		return err < 0 ? err : 0;
	err = srcline_new(&ob->lines, ob->dwarf.dwarf);
	if (err) {
		lp_dwarf_image_close(&ob->dwarf);
		return err;
	}
	ob->dwarf_state = 1;
	return 0;
}

int objects_srcline(struct objects *o, uint64_t id, uint64_t vaddr,
		    struct src_chain *c)
{
	struct object *ob = id ? find(o, id) : NULL;
	int err;

	c->n = 0;
	if (!ob || ob->state == UNRESOLVED)
		return 0;
	/* The recorder's answers, and only them, when the trace has any. */
	if (ob->embedded.embedded)
		return linetab_lookup(&ob->embedded, vaddr, c);
	if (!ob->dwarf_state) {
		err = open_dwarf(o, ob);
		if (err)
			return err;
	}
	if (ob->dwarf_state < 0)
		return 0;
	return srcline_lookup(ob->lines, vaddr, c);
}

uint64_t objects_embedded(const struct objects *o)
{
	uint64_t n = 0;

	for (size_t i = 0; i < o->len; i++)
		n += o->v[i].state == EMBEDDED;
	return n;
}

int objects_build_id(const struct objects *o, uint64_t id, const uint8_t **ident,
		     uint32_t *len)
{
	const struct object *ob = find(o, id);

	*ident = NULL;
	*len = 0;
	if (!ob || ob->kind != LP_OBJID_BUILD_ID)
		return 0;
	*ident = ob->ident;
	*len = ob->len;
	return 1;
}

/*
 * heap_walk.c - the LuaJIT VM in a copy of a process's memory (heap.h):
 * every GC object it holds with its size as LuaJIT's allocator accounts
 * it (lj_gc.c's frees), and which path from the VM's roots first reaches
 * each one (heap_layout.c says where the fields are).
 *
 * Objects are found where the GC itself finds them: the list from
 * g->gc.root (every object but strings and open upvalues; userdata after
 * the main thread), each thread's open upvalues and the string table's
 * chains.  A breadth-first walk from the roots (_G, the registry, the
 * main thread's stack, the FFI's tables, the JIT's traces, the type
 * metatables and metamethod names of g->gcroot) then follows what
 * LuaJIT's marking follows: table keys and values and metatables,
 * closures' upvalues, environments and prototypes, prototypes' constants,
 * threads' stacks, userdata's metatables and environments, a trace's
 * starting prototype.  Each object gets the first path that reaches it,
 * which, breadth first, is a shortest one; objects no path reaches are
 * garbage the GC has not swept yet.  Weak references are followed like
 * strong ones.
 *
 * Every read goes through heap_ptr(): a reference outside the copy, or to
 * a header of the wrong type, is counted and not followed.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/grow.h"
#include "lib/htab.h"
#include "record/heap.h"

#define NONE UINT32_MAX
#define MAX_OBJECTS (1u << 28)   /* more is not a heap this walk can hold */
#define MAX_VEC (1u << 27)       /* array and hash parts, stacks, constants */
#define STEP_MAX 60              /* bytes of a key in a path step */
#define NAMED_KEYS 256           /* string keys named in a table at most */

/* ---- the walk's tables ------------------------------------------------- */

struct obj {
	uint64_t addr, size;
	uint32_t node;  /* the path that first reached it; NONE: not yet */
	uint8_t type;   /* enum heap_type */
};

struct walk {
	const struct heap_image *im;
	const struct heap_layout *hl;
	uint32_t depth;
	struct obj *objs;
	size_t nobjs, capobjs;
	uint32_t *queue;
	size_t nqueue, capqueue, head;
	struct htab objs_h, names_h, nodes_h, entries_h; /* objs by addr */
	size_t capnames, capnodes, capentries;
	uint32_t deeper; /* the name id of "[deeper]" */
	uint64_t ctab;   /* the FFI's C type table, 0 if none */
	uint32_t ctop;   /* its types */
	uint64_t cts;    /* the FFI's CTState, 0 if none */
	uint64_t G;
	struct heap_snapshot *s;
};

static uint64_t hash_text(const char *s)
{
	uint64_t h = 0xcbf29ce484222325ull;

	for (; *s; s++)
		h = (h ^ (uint8_t)*s) * 0x100000001b3ull;
	return h;
}

/* The id (1-based, as name records have it) of text, interned. */
static int name_id(struct walk *w, const char *text, uint32_t *id)
{
	struct heap_snapshot *s = w->s;
	uint64_t h = hash_text(text);
	struct htab_probe p;
	int64_t i;
	char *copy;

	htab_probe_start(&w->names_h, h, &p);
	while ((i = htab_probe_next(&w->names_h, &p)) >= 0)
		if (!strcmp(s->names[i], text)) {
			*id = (uint32_t)i + 1;
			return 0;
		}
	copy = strdup(text);
	if (!copy || GROW(s->names, w->capnames, s->nnames + 1) ||
	    htab_insert(&w->names_h, h, s->nnames)) {
		free(copy);
		return -ENOMEM;
	}
	s->names[s->nnames++] = copy;
	*id = s->nnames;
	return 0;
}

/* The node of step `name` after node parent (NONE: a root), or the cut
 * at --depth: "[deeper]" once, which everything below it shares. */
static int step_node(struct walk *w, uint32_t parent, uint32_t name, uint32_t *out)
{
	struct heap_snapshot *s = w->s;
	uint32_t depth = parent == NONE ? 1 : s->nodes[parent].depth + 1;
	struct htab_probe p;
	uint64_t h;
	int64_t i;

	if (parent != NONE && s->nodes[parent].name == w->deeper) {
		*out = parent;
		return 0;
	}
	if (depth > w->depth)
		name = w->deeper;
	h = hash_u64(((uint64_t)parent << 32) ^ name);
	htab_probe_start(&w->nodes_h, h, &p);
	while ((i = htab_probe_next(&w->nodes_h, &p)) >= 0)
		if (s->nodes[i].parent == parent && s->nodes[i].name == name) {
			*out = (uint32_t)i;
			return 0;
		}
	if (GROW(s->nodes, w->capnodes, s->nnodes + 1) ||
	    htab_insert(&w->nodes_h, h, s->nnodes))
		return -ENOMEM;
	s->nodes[s->nnodes] = (struct heap_node){ parent, name, depth };
	*out = s->nnodes++;
	return 0;
}

static int step_text(struct walk *w, uint32_t parent, const char *text, uint32_t *out)
{
	uint32_t id;

	return name_id(w, text, &id) ?: step_node(w, parent, id, out);
}

static int64_t obj_find(const struct walk *w, uint64_t addr)
{
	struct htab_probe p;
	int64_t i;

	htab_probe_start(&w->objs_h, hash_u64(addr), &p);
	while ((i = htab_probe_next(&w->objs_h, &p)) >= 0)
		if (w->objs[i].addr == addr)
			return i;
	return -1;
}

/* ---- objects and their sizes ------------------------------------------- */

static uint64_t table_size(const struct heap_layout *hl, const uint8_t *t)
{
	int8_t colo = (int8_t)t[hl->t_colo];
	uint32_t asize = le32(t + hl->t_asize), hmask = le32(t + hl->t_hmask);
	uint64_t n = hl->t_size;

	if (colo)
		n += (uint64_t)(colo & 0x7f) * 8; /* the array part in the header's block */
	if (asize && colo <= 0)
		n += (uint64_t)asize * 8;
	if (hmask)
		n += ((uint64_t)hmask + 1) * hl->node_size;
	return n;
}

/* A cdata's bytes as lj_cdata_free() frees them: a variable-length one's
 * from the GCcdataVar before it, a fixed one's header and its C type's
 * size (past attributes; 8, a pointer's, for a type without a size).
 * The header alone when the type table is unknown (counted). */
static uint64_t cdata_size(struct walk *w, uint64_t o, const uint8_t *h)
{
	const struct heap_layout *hl = w->hl;
	uint32_t id = (uint32_t)h[hl->ref + 2] | (uint32_t)h[hl->ref + 3] << 8, info = 0;
	const uint8_t *ct = NULL;

	if (h[hl->ref] & 0x80) { /* cdataisv: extra + len */
		const uint8_t *v = heap_ptr(w->im, o - 8, 8);

		if (v)
			return (uint64_t)(v[2] | v[3] << 8) + le32(v + 4);
	}
	for (int k = 0; k < 16 && id && id < w->ctop; k++) {
		ct = heap_ptr(w->im, w->ctab + (uint64_t)id * hl->ct_size, 8);
		info = ct ? le32(ct) : 0;
		if (!ct || info >> 28 != 8) /* not CT_ATTRIB */
			break;
		id = info & 0xffff;
		ct = NULL;
	}
	if (!ct) {
		w->s->st.cdata++;
		return hl->cd_size;
	}
	return hl->cd_size + (info >> 28 <= 5 ? le32(ct + 4) : 8);
}

/* The bytes LuaJIT's allocator gave object o of type type (whose header
 * h holds hl->t_size bytes or fewer, as read_size says), or 0 when its
 * fields cannot be read. */
static uint64_t object_size(struct walk *w, uint64_t o, int type)
{
	const struct heap_layout *hl = w->hl;
	const uint8_t *h;

	switch (type) {
	case HT_STR:
		h = heap_ptr(w->im, o, hl->s_size);
		return h ? hl->s_size + (uint64_t)le32(h + hl->s_len) + 1 : 0;
	case HT_UPVAL:
		return hl->uv_size;
	case HT_THREAD:
		h = heap_ptr(w->im, o, hl->l_stacksize + 4);
		return h ? hl->l_size + 8ull * le32(h + hl->l_stacksize) : 0;
	case HT_PROTO:
		h = heap_ptr(w->im, o, hl->pt_sizept + 4);
		return h ? le32(h + hl->pt_sizept) : 0;
	case HT_FUNC:
		h = heap_ptr(w->im, o, hl->f_nupv + 1);
		if (!h)
			return 0;
		return h[hl->f_ffid] == 0 ? hl->f_uvptr + (uint64_t)hl->ref * h[hl->f_nupv] :
					    hl->f_cupv + 8ull * h[hl->f_nupv];
	case HT_CDATA:
		h = heap_ptr(w->im, o, hl->cd_size);
		return h ? cdata_size(w, o, h) : 0;
	case HT_TAB:
		h = heap_ptr(w->im, o, hl->t_size);
		return h ? table_size(hl, h) : 0;
	case HT_UDATA:
		h = heap_ptr(w->im, o, hl->u_size);
		return h ? hl->u_size + (uint64_t)le32(h + hl->u_len) : 0;
	case HT_TRACE: /* as lj_trace_free() frees it */
		h = heap_ptr(w->im, o, hl->tr_size);
		if (!h || le32(h + hl->tr_nins) < le32(h + hl->tr_nk))
			return 0;
		return hl->tr_size + 8ull * (le32(h + hl->tr_nins) - le32(h + hl->tr_nk)) +
		       (uint64_t)hl->sn_size * (h[hl->tr_nsnap] | h[hl->tr_nsnap + 1] << 8) +
		       4ull * (hl->tr_snapmap32 ? le32(h + hl->tr_nsnapmap) :
				(uint32_t)(h[hl->tr_nsnapmap] | h[hl->tr_nsnapmap + 1] << 8));
	}
	return 0;
}

/* Adds object o, of type type, to the table: its index in *idx, or -1
 * when it cannot be (a header or size that does not read). */
static int obj_add(struct walk *w, uint64_t o, int type, int64_t *idx)
{
	uint64_t size = object_size(w, o, type);

	*idx = -1;
	if (!size || w->nobjs >= MAX_OBJECTS)
		return 0;
	if (GROW(w->objs, w->capobjs, w->nobjs + 1) ||
	    htab_insert(&w->objs_h, hash_u64(o), (uint32_t)w->nobjs))
		return -ENOMEM;
	w->objs[w->nobjs] = (struct obj){ o, size, NONE, (uint8_t)type };
	*idx = (int64_t)w->nobjs++;
	return 0;
}

/* Follows a GC list from o by nextgc, adding each object: a link that
 * leads nowhere, or back to an object seen, ends it (a cut counted). */
static int add_chain(struct walk *w, uint64_t o, int only_type)
{
	const struct heap_layout *hl = w->hl;
	int64_t idx;
	int err;

	for (uint64_t n = 0; o && n < MAX_OBJECTS; n++) {
		const uint8_t *h = heap_ptr(w->im, o, hl->ref + 2);
		int type = h ? h[hl->ref + 1] : -1;

		if (type < HT_STR || type >= HT_MAX || (only_type && type != only_type) ||
		    obj_find(w, o) >= 0) {
			w->s->st.cut_chains++;
			return 0;
		}
		err = obj_add(w, o, type, &idx);
		if (err)
			return err;
		if (idx < 0) {
			w->s->st.cut_chains++;
			return 0;
		}
		o = get_ref(hl, h);
	}
	return 0;
}

/* Every object: the root list, then the string table's chains (a chain's
 * head has its low bit as a flag). */
static int enumerate(struct walk *w, uint64_t G)
{
	const struct heap_layout *hl = w->hl;
	const uint8_t *g = heap_ptr(w->im, G, hl->g_gcroot + hl->ngcroot * hl->ref);
	const uint8_t *tab, *cts;
	uint64_t strtab;
	uint32_t mask;
	int err;

	if (!g)
		return -EFAULT;
	w->s->st.gc_total = hl->gc64 ? le64(g + hl->g_total) : le32(g + hl->g_total);
	cts = heap_ptr(w->im, get_ref(hl, g + hl->g_ctype_state), 48);
	if (cts) {
		w->cts = get_ref(hl, g + hl->g_ctype_state);
		w->ctab = le64(cts);
		w->ctop = le32(cts + 8);
	}
	w->s->st.gc_state = g[hl->g_state];
	err = add_chain(w, get_ref(hl, g + hl->g_root), 0);
	/* Open upvalues are on their thread's list, not the root list. */
	for (size_t i = 0, n = w->nobjs; i < n && !err; i++) {
		const uint8_t *th = w->objs[i].type == HT_THREAD ?
				    heap_ptr(w->im, w->objs[i].addr, hl->l_stack + 2 * hl->ref) : NULL;

		if (th)
			err = add_chain(w, get_ref(hl, th + hl->l_stack + hl->ref), HT_UPVAL);
	}
	if (err)
		return err;
	strtab = le64(g + hl->g_strtab);
	mask = le32(g + hl->g_strmask);
	tab = mask < MAX_VEC ? heap_ptr(w->im, strtab, ((size_t)mask + 1) * hl->ref) : NULL;
	if (!tab) {
		w->s->st.cut_chains++;
		return 0;
	}
	for (uint64_t i = 0; i <= mask && !err; i++)
		err = add_chain(w, get_ref(hl, tab + i * hl->ref) & ~1ull, HT_STR);
	return err;
}

/* ---- the walk from the roots ------------------------------------------- */

/* The GC object a TValue holds, and its type; 0 for none.  GC64: the
 * type in the top 17 bits, the pointer in the low 47; otherwise the
 * type in the high word. */
static uint64_t tv_gc(const struct heap_layout *hl, const uint8_t *tv, int *type)
{
	uint32_t it = hl->gc64 ? (uint32_t)((int64_t)le64(tv) >> 47) : le32(tv + 4);

	if (it < ~(uint32_t)12 || it > ~(uint32_t)4)
		return 0;
	*type = (int)~it;
	return hl->gc64 ? le64(tv) & ((1ull << 47) - 1) : le32(tv);
}

static int tv_nil(const struct heap_layout *hl, const uint8_t *tv)
{
	return (hl->gc64 ? (uint32_t)((int64_t)le64(tv) >> 47) : le32(tv + 4)) == ~(uint32_t)0;
}

/* Object o of type type, reached at node: queued if not reached before.
 * A reference to no object of that type is counted and dropped; one to
 * an object on no GC list (the walk missed it there) is added. */
static int reach(struct walk *w, uint64_t o, int type, uint32_t node)
{
	int64_t i = obj_find(w, o);
	int err;

	if (i < 0) {
		if (gct_of(w->im, w->hl, o) != type) {
			w->s->st.bad_refs++;
			return 0;
		}
		if (o >= w->G && o < w->G + w->hl->g_gcroot)
			return 0; /* g->strempty, inside global_State: no object of its own */
		err = obj_add(w, o, type, &i);
		if (err)
			return err;
		if (i < 0) {
			w->s->st.bad_refs++;
			return 0;
		}
		w->s->st.off_list++;
	} else if (w->objs[i].type != type) {
		w->s->st.bad_refs++;
		return 0;
	}
	if (w->objs[i].node != NONE)
		return 0;
	w->objs[i].node = node;
	if (GROW(w->queue, w->capqueue, w->nqueue + 1))
		return -ENOMEM;
	w->queue[w->nqueue++] = (uint32_t)i;
	return 0;
}

static int reach_tv(struct walk *w, const uint8_t *tv, uint32_t node)
{
	int type;
	uint64_t o = tv_gc(w->hl, tv, &type);

	return o ? reach(w, o, type, node) : 0;
}

static int reach_ref(struct walk *w, uint64_t o, uint32_t node)
{
	int type = o ? gct_of(w->im, w->hl, o) : -1;

	if (!o)
		return 0;
	if (type < HT_STR || type >= HT_MAX) {
		w->s->st.bad_refs++;
		return 0;
	}
	return reach(w, o, type, node);
}

/* A string's text for a path step: at most STEP_MAX bytes, controls and
 * ';' (folded stacks' separator) as '?'; NULL if it does not read. */
static const char *str_text(const struct walk *w, uint64_t s, char *buf, size_t len)
{
	const struct heap_layout *hl = w->hl;
	const uint8_t *h = heap_ptr(w->im, s, hl->s_size), *p;
	size_t n, k = 0;

	if (!h || h[hl->ref + 1] != HT_STR)
		return NULL;
	n = le32(h + hl->s_len);
	p = heap_ptr(w->im, s + hl->s_size, n < STEP_MAX ? n : STEP_MAX);
	if (!p)
		return NULL;
	for (size_t i = 0; i < n && i < STEP_MAX && k + 4 < len; i++)
		buf[k++] = p[i] < 0x20 || p[i] == 0x7f || p[i] == ';' ? '?' : (char)p[i];
	if (n > STEP_MAX && k + 4 < len)
		k += (size_t)snprintf(buf + k, len - k, "...");
	buf[k] = '\0';
	return buf;
}

/* "[function chunk:line]" for a Lua function's prototype p (prefix
 * "proto" for the prototype itself). */
static void proto_label(const struct walk *w, uint64_t p, const char *what, char *buf,
			size_t len)
{
	const struct heap_layout *hl = w->hl;
	const uint8_t *h = heap_ptr(w->im, p, hl->pt_size);
	char chunk[STEP_MAX + 8];
	const char *c = NULL;

	if (h && h[hl->ref + 1] == HT_PROTO)
		c = str_text(w, get_ref(hl, h + hl->pt_chunkname), chunk, sizeof(chunk));
	if (!c) {
		snprintf(buf, len, "[%s ?]", what);
		return;
	}
	if (*c == '@' || *c == '=')
		c++;
	if (le32(h + hl->pt_firstline) == UINT32_MAX) /* LuaJIT's own, built in */
		snprintf(buf, len, "[%s %s]", what, c);
	else
		snprintf(buf, len, "[%s %s:%u]", what, c, le32(h + hl->pt_firstline));
}

/* The step a table's entry with this key gets: a string key's text (but
 * in a map of more than NAMED_KEYS of them, "[*]": one path for all, as
 * for an array), an integer's "[*]", anything else "[key]". */
static int key_step(struct walk *w, const uint8_t *key, int map, uint32_t node, uint32_t *out)
{
	char buf[STEP_MAX + 8];
	const char *text = "[key]";
	int type;
	uint64_t o = tv_gc(w->hl, key, &type);
	uint32_t it = w->hl->gc64 ? (uint32_t)((int64_t)le64(key) >> 47) : le32(key + 4);

	if (o && type == HT_STR)
		text = map ? "[*]" : str_text(w, o, buf, sizeof(buf)) ?: "[key]";
	if (!*text)
		text = "\"\""; /* the empty string */
	else if (!o && it < ~(uint32_t)13)
		text = "[*]"; /* a number */
	return step_text(w, node, text, out);
}

/* The live entries of a hash part with string keys. */
static uint64_t string_keys(const struct heap_layout *hl, const uint8_t *v, uint32_t hmask)
{
	uint64_t n = 0;
	int type;

	for (uint64_t i = 0; i <= hmask; i++) {
		const uint8_t *nd = v + i * hl->node_size;
		uint32_t it = hl->gc64 ? (uint32_t)((int64_t)le64(nd) >> 47) : le32(nd + 4);

		n += it != ~(uint32_t)0 && tv_gc(hl, nd + 8, &type) && type == HT_STR;
	}
	return n;
}

static int visit_table(struct walk *w, uint64_t o, uint32_t node)
{
	const struct heap_layout *hl = w->hl;
	const uint8_t *t = heap_ptr(w->im, o, hl->t_size), *v;
	uint32_t asize, hmask, step;
	int err, map;

	if (!t)
		return 0;
	asize = le32(t + hl->t_asize);
	hmask = le32(t + hl->t_hmask);
	err = step_text(w, node, "[metatable]", &step) ?:
	      reach_ref(w, get_ref(hl, t + hl->t_meta), step);
	if (err)
		return err;
	v = asize && asize < MAX_VEC ? heap_ptr(w->im, get_ref(hl, t + hl->t_array), asize * 8ull)
				     : NULL;
	if (asize && !v)
		w->s->st.bad_refs++;
	if (v)
		err = step_text(w, node, "[*]", &step);
	for (uint32_t i = 0; v && i < asize && !err; i++)
		err = reach_tv(w, v + i * 8ull, step);
	v = hmask && hmask < MAX_VEC ?
	    heap_ptr(w->im, get_ref(hl, t + hl->t_node), ((uint64_t)hmask + 1) * hl->node_size) :
	    NULL;
	if (hmask && !v)
		w->s->st.bad_refs++;
	map = v && string_keys(hl, v, hmask) > NAMED_KEYS;
	for (uint64_t i = 0; v && i <= hmask && !err; i++) {
		const uint8_t *n = v + i * hl->node_size;
		int type;

		if (tv_nil(hl, n) || (!tv_gc(hl, n, &type) && !tv_gc(hl, n + 8, &type)))
			continue; /* a dead key (the GC marks none), or no object */
		err = key_step(w, n + 8, map, node, &step) ?: reach_tv(w, n, step) ?:
		      reach_tv(w, n + 8, step);
	}
	return err;
}

/* Upvalue i's name from a prototype's uvinfo (NUL-terminated names, one
 * after another), or "#i". */
static void upvalue_name(const struct walk *w, const uint8_t *pt, uint32_t i, char *buf,
			 size_t len)
{
	const struct heap_layout *hl = w->hl;
	uint64_t at = pt ? get_ref(hl, pt + hl->pt_uvinfo) : 0;
	uint32_t nuv = pt ? pt[hl->pt_sizeuv] : 0;

	for (uint32_t k = 0; at && i < nuv && k <= i; k++) {
		const uint8_t *s = heap_ptr(w->im, at, 1);
		size_t n = 0;

		while (s && n < 256 && s[n])
			s = heap_ptr(w->im, at, ++n + 1) ? s : NULL;
		if (!s || n >= 256)
			break;
		if (k == i) {
			snprintf(buf, len, "upvalue %.*s", (int)(n < STEP_MAX ? n : STEP_MAX),
				 (const char *)s);
			for (char *c = buf; *c; c++)
				if ((unsigned char)*c < 0x20 || *c == 0x7f || *c == ';')
					*c = '?';
			return;
		}
		at += n + 1;
	}
	snprintf(buf, len, "upvalue #%u", i + 1);
}

static int visit_func(struct walk *w, uint64_t o, uint32_t node)
{
	const struct heap_layout *hl = w->hl;
	const uint8_t *f = heap_ptr(w->im, o, hl->f_cupv), *pt = NULL;
	char label[STEP_MAX * 2];
	uint32_t fnode, step;
	uint64_t proto = 0;
	int err;

	if (!f)
		return 0;
	if (f[hl->f_ffid] == 0) {
		proto = get_ref(hl, f + hl->f_pc) - hl->pt_size;
		pt = heap_ptr(w->im, proto, hl->pt_size);
		proto_label(w, proto, "function", label, sizeof(label));
	} else {
		snprintf(label, sizeof(label), "[cfunction]");
	}
	err = step_text(w, node, label, &fnode) ?: step_text(w, fnode, "[env]", &step) ?:
	      reach_ref(w, get_ref(hl, f + hl->f_env), step);
	if (!err && proto)
		err = reach_ref(w, proto, fnode);
	for (uint32_t i = 0; !err && i < f[hl->f_nupv]; i++) {
		const uint8_t *u = heap_ptr(w->im, o + (proto ? hl->f_uvptr + i * hl->ref :
							hl->f_cupv + i * 8ull), 8);

		if (!u)
			break;
		if (proto)
			upvalue_name(w, pt, i, label, sizeof(label));
		else
			snprintf(label, sizeof(label), "upvalue #%u", i + 1);
		err = step_text(w, fnode, label, &step) ?:
		      (proto ? reach_ref(w, get_ref(hl, u), step) : reach_tv(w, u, step));
	}
	return err;
}

static int visit_proto(struct walk *w, uint64_t o, uint32_t node)
{
	const struct heap_layout *hl = w->hl;
	const uint8_t *pt = heap_ptr(w->im, o, hl->pt_size), *k;
	uint32_t n, step;
	int err;

	if (!pt)
		return 0;
	n = le32(pt + hl->pt_sizekgc);
	err = step_text(w, node, "[constants]", &step) ?:
	      reach_ref(w, get_ref(hl, pt + hl->pt_chunkname), step);
	k = n && n < MAX_VEC ?
	    heap_ptr(w->im, get_ref(hl, pt + hl->pt_k) - (uint64_t)n * hl->ref, n * hl->ref) : NULL;
	for (uint32_t i = 0; k && i < n && !err; i++)
		err = reach_ref(w, get_ref(hl, k + i * hl->ref), step);
	return err;
}

static int visit_thread(struct walk *w, uint64_t o, uint32_t node)
{
	const struct heap_layout *hl = w->hl;
	const uint8_t *th = heap_ptr(w->im, o, hl->l_stacksize + 4), *v;
	uint64_t stack, top, n;
	uint32_t step;
	int err;

	if (!th)
		return 0;
	stack = get_ref(hl, th + hl->l_stack);
	top = le64(th + hl->l_top);
	n = top > stack ? (top - stack) / 8 : 0;
	if (n > le32(th + hl->l_stacksize))
		n = 0;
	err = step_text(w, node, "[env]", &step) ?:
	      reach_ref(w, get_ref(hl, th + hl->l_env), step) ?:
	      step_text(w, node, "[stack]", &step);
	v = n ? heap_ptr(w->im, stack, n * 8) : NULL;
	for (uint64_t i = 0; v && i < n && !err; i++)
		err = reach_tv(w, v + i * 8, step);
	return err;
}

static int visit(struct walk *w, const struct obj *ob)
{
	const struct heap_layout *hl = w->hl;
	const uint8_t *p;
	uint32_t step;
	int err;

	switch (ob->type) {
	case HT_TAB:
		return visit_table(w, ob->addr, ob->node);
	case HT_FUNC:
		return visit_func(w, ob->addr, ob->node);
	case HT_PROTO:
		return visit_proto(w, ob->addr, ob->node);
	case HT_THREAD:
		return visit_thread(w, ob->addr, ob->node);
	case HT_TRACE:
		p = heap_ptr(w->im, ob->addr, hl->tr_startpt + hl->ref);
		return p ? step_text(w, ob->node, "[start]", &step) ?:
			   reach_ref(w, get_ref(hl, p + hl->tr_startpt), step) : 0;
	case HT_UPVAL:
		p = heap_ptr(w->im, ob->addr, hl->uv_v + hl->ref);
		p = p ? heap_ptr(w->im, get_ref(hl, p + hl->uv_v), 8) : NULL;
		return p ? reach_tv(w, p, ob->node) : 0;
	case HT_UDATA:
		p = heap_ptr(w->im, ob->addr, hl->u_size);
		if (!p)
			return 0;
		err = step_text(w, ob->node, "[metatable]", &step) ?:
		      reach_ref(w, get_ref(hl, p + hl->u_meta), step) ?:
		      step_text(w, ob->node, "[env]", &step);
		return err ?: reach_ref(w, get_ref(hl, p + hl->u_env), step);
	}
	return 0;
}

/* The compiled traces, J->trace[1 .. sizetrace). */
static int reach_traces(struct walk *w, uint64_t G)
{
	const struct heap_layout *hl = w->hl;
	const uint8_t *j = heap_ptr(w->im, G + hl->g2j, hl->j_sizetrace + 4), *tr;
	uint32_t n = j ? le32(j + hl->j_sizetrace) : 0, node;
	int err = 0;

	tr = n && n <= 65536 ? heap_ptr(w->im, le64(j + hl->j_trace), (size_t)n * hl->ref) : NULL;
	if (!tr)
		return 0;
	err = step_text(w, NONE, "[jit traces]", &node);
	for (uint32_t i = 1; i < n && !err; i++)
		err = reach_ref(w, get_ref(hl, tr + (size_t)i * hl->ref), node);
	return err;
}

/* The roots, in the order the walk names objects by: _G (the main
 * thread's environment) first, so that a global's path starts there. */
static int reach_roots(struct walk *w, uint64_t L, uint64_t G)
{
	const struct heap_layout *hl = w->hl;
	const uint8_t *th = heap_ptr(w->im, L, hl->l_env + hl->ref);
	const uint8_t *g = heap_ptr(w->im, G, hl->g_gcroot + hl->ngcroot * hl->ref);
	uint32_t node;
	int err;

	if (!th || !g)
		return -EFAULT;
	err = step_text(w, NONE, "_G", &node) ?: reach_ref(w, get_ref(hl, th + hl->l_env), node) ?:
	      step_text(w, NONE, "[registry]", &node) ?: reach_tv(w, g + hl->g_registry, node) ?:
	      step_text(w, NONE, "[main thread]", &node) ?: reach_ref(w, L, node);
	/* The FFI's finalizers and its map of metatables and callbacks
	 * (CTState's finalizer and miscmap: C pointers in either width). */
	for (int i = 0; w->cts && i < 2 && !err; i++) {
		const uint8_t *p = heap_ptr(w->im, w->cts + 32 + 8 * i, 8);

		err = step_text(w, NONE, i ? "[ffi miscmap]" : "[ffi finalizers]", &node) ?:
		      (p ? reach_ref(w, le64(p), node) : 0);
	}
	if (!err && hl->g2j)
		err = reach_traces(w, G);
	for (uint32_t i = 0; i < hl->ngcroot && !err; i++) {
		uint64_t o = get_ref(hl, g + hl->g_gcroot + i * hl->ref);
		int type = o ? gct_of(w->im, hl, o) : -1;

		if (type < 0)
			continue;
		err = step_text(w, NONE, type == HT_TAB ? "[type metatables]" :
					 type == HT_STR ? "[metamethod names]" : "[gcroot]", &node) ?:
		      reach_ref(w, o, node);
	}
	return err;
}

static const char *const type_names[HT_MAX] = {
	[HT_STR] = "[string]", [HT_UPVAL] = "[upvalue]", [HT_THREAD] = "[thread]",
	[HT_PROTO] = "[proto]", [HT_FUNC] = "[function]", [HT_TRACE] = "[trace]",
	[HT_CDATA] = "[cdata]", [HT_TAB] = "[table]", [HT_UDATA] = "[userdata]",
};

/* The leaf an object's entry gets: its type, a function or prototype
 * named by its chunk and line. */
static int leaf_name(struct walk *w, const struct obj *ob, uint32_t *id)
{
	char label[STEP_MAX * 2];
	const uint8_t *f;

	if (ob->node != NONE && ob->type == HT_PROTO) {
		proto_label(w, ob->addr, "proto", label, sizeof(label));
		return name_id(w, label, id);
	}
	if (ob->node != NONE && ob->type == HT_FUNC &&
	    (f = heap_ptr(w->im, ob->addr, w->hl->f_uvptr))) {
		if (f[w->hl->f_ffid])
			return name_id(w, "[cfunction]", id);
		proto_label(w, get_ref(w->hl, f + w->hl->f_pc) - w->hl->pt_size, "function",
			    label, sizeof(label));
		return name_id(w, label, id);
	}
	return name_id(w, type_names[ob->type], id);
}

static int aggregate_one(struct walk *w, const struct obj *ob, uint32_t node)
{
	struct heap_snapshot *s = w->s;
	struct htab_probe p;
	uint32_t leaf;
	uint64_t h;
	int64_t i;
	int err = leaf_name(w, ob, &leaf);

	if (err)
		return err;
	h = hash_u64(((uint64_t)node << 32) ^ leaf);
	htab_probe_start(&w->entries_h, h, &p);
	while ((i = htab_probe_next(&w->entries_h, &p)) >= 0)
		if (s->entries[i].node == node && s->entries[i].leaf == leaf)
			break;
	if (i < 0) {
		if (GROW(s->entries, w->capentries, s->nentries + 1) ||
		    htab_insert(&w->entries_h, h, s->nentries))
			return -ENOMEM;
		i = (int64_t)s->nentries++;
		s->entries[i] = (struct heap_entry){ node, leaf, 0, 0 };
	}
	s->entries[i].bytes += ob->size;
	s->entries[i].count++;
	return 0;
}

static int aggregate(struct walk *w)
{
	struct heap_stats *st = &w->s->st;
	uint32_t unreachable;
	int err = step_text(w, NONE, "[unreachable]", &unreachable);

	for (size_t i = 0; i < w->nobjs && !err; i++) {
		const struct obj *ob = &w->objs[i];
		uint32_t node = ob->node == NONE ? unreachable : ob->node;

		st->objects++;
		st->bytes += ob->size;
		st->by_type[ob->type]++;
		st->bytes_by_type[ob->type] += ob->size;
		if (ob->node == NONE) {
			st->unreachable++;
			st->unreachable_bytes += ob->size;
		} else {
			st->reached++;
			st->reached_bytes += ob->size;
			st->deeper += w->s->nodes[ob->node].name == w->deeper;
		}
		err = aggregate_one(w, ob, node);
	}
	return err;
}

int heap_walk(const struct heap_image *im, const struct heap_layout *hl, uint64_t L,
	      uint64_t G, uint32_t depth, struct heap_snapshot *out)
{
	struct walk w = { .im = im, .hl = hl, .depth = depth ? depth : 1, .s = out, .G = G };
	int err;

	memset(out, 0, sizeof(*out));
	err = name_id(&w, "[deeper]", &w.deeper) ?: enumerate(&w, G) ?: reach_roots(&w, L, G);
	while (!err && w.head < w.nqueue) {
		struct obj ob = w.objs[w.queue[w.head++]];

		err = visit(&w, &ob);
	}
	if (!err)
		err = aggregate(&w);
	free(w.objs);
	htab_free(&w.objs_h);
	free(w.queue);
	htab_free(&w.names_h);
	htab_free(&w.nodes_h);
	htab_free(&w.entries_h);
	if (err)
		heap_snapshot_free(out);
	return err;
}

void heap_snapshot_free(struct heap_snapshot *s)
{
	for (uint32_t i = 0; i < s->nnames; i++)
		free(s->names[i]);
	free(s->names);
	free(s->nodes);
	free(s->entries);
	memset(s, 0, sizeof(*s));
}

/*
 * symexec.c - the instruction-set-neutral half of symexec.h: values and
 * their interned nodes, the facts, and the two ways through the code (the
 * walk from an entry point and the linear sweep).  A backend decodes one
 * instruction at a time and calls back here to load, store and record.
 *
 * Everything read is a file a target process mapped, so every bound is
 * fixed: nodes, facts, worklist and instructions per context.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "record/symexec.h"

#define SX_MAX_NODES (1u << 16)
#define SX_MAX_FACTS (1u << 18)
#define SX_MAX_WORK 4096

struct pending; /* a followed call, walked after its caller */

struct sx_ctx {
	struct sx_image img;
	const struct sx_isa *isa;
	void *handle;
	struct sx_node *nodes; /* [0] unused: id 0 is "none" */
	uint32_t nnodes, cap_nodes;
	uint32_t *hash;        /* open addressing, 2 * SX_MAX_NODES */
	struct sx_fact *facts;
	size_t nfacts, cap_facts;
	unsigned steps, budget;
	struct pending *q;   /* callees to walk, first in first out */
	size_t qhead, qtail, qcap;
	uint16_t nframes;
};

/* ---- values ---- */

struct sx_val sx_const(int64_t v)
{
	return (struct sx_val){ .off = v, .known = 1 };
}

struct sx_val sx_unknown(void)
{
	return (struct sx_val){ 0 };
}

struct sx_val sx_term(uint32_t term, int64_t off)
{
	return (struct sx_val){ .term = term, .off = off, .known = 1 };
}

int sx_val_eq(const struct sx_val *a, const struct sx_val *b)
{
	return a->known && b->known && a->term == b->term && a->idx == b->idx &&
	       (!a->idx || a->scale == b->scale) && a->off == b->off;
}

int sx_is_term(const struct sx_val *v, uint32_t term, int64_t *off)
{
	if (!v->known || v->idx || !term || v->term != term)
		return 0;
	if (off)
		*off = v->off;
	return 1;
}

int sx_is_const(const struct sx_val *v, int64_t *k)
{
	if (!v->known || v->term || v->idx)
		return 0;
	if (k)
		*k = v->off;
	return 1;
}

struct sx_val sx_add(const struct sx_val *a, const struct sx_val *b)
{
	struct sx_val r;

	if (!a->known || !b->known)
		return sx_unknown();
	if (a->term && b->term) {
		/* term + term: the second becomes the index, scale 1 */
		if (a->idx || b->idx)
			return sx_unknown();
		r = *a;
		r.idx = b->term;
		r.scale = 1;
		r.off = (int64_t)((uint64_t)a->off + (uint64_t)b->off);
		return r;
	}
	r = a->term ? *a : *b;
	if (a->idx && b->idx) {
		if (a->idx != b->idx)
			return sx_unknown();
		r.scale = (int64_t)((uint64_t)a->scale + (uint64_t)b->scale);
	} else if (b->idx && a->term) {
		r.idx = b->idx;
		r.scale = b->scale;
	} else if (a->idx && b->term) {
		r.idx = a->idx;
		r.scale = a->scale;
	}
	r.off = (int64_t)((uint64_t)a->off + (uint64_t)b->off);
	return r;
}

struct sx_val sx_neg(const struct sx_val *a)
{
	if (!sx_is_const(a, NULL))
		return sx_unknown();
	return sx_const((int64_t)(0 - (uint64_t)a->off));
}

struct sx_val sx_mul(const struct sx_val *a, int64_t k)
{
	struct sx_val r = *a;

	if (!a->known)
		return sx_unknown();
	if (k == 1)
		return r;
	if (a->term && !a->idx) {
		/* term * k: the term becomes the index */
		r.idx = a->term;
		r.term = 0;
		r.scale = k;
	} else if (a->term) {
		return sx_unknown();
	} else if (a->idx) {
		r.scale = (int64_t)((uint64_t)a->scale * (uint64_t)k);
	}
	r.off = (int64_t)((uint64_t)a->off * (uint64_t)k);
	return r;
}

/* ---- nodes ---- */

static uint64_t node_hash(const struct sx_node *n)
{
	uint64_t h = n->kind * 0x9e3779b97f4a7c15ull;

	h ^= ((uint64_t)n->width << 16 | n->n) * 0xbf58476d1ce4e5b9ull;
	h ^= n->site * 0x94d049bb133111ebull;
	h ^= ((uint64_t)n->addr.term << 32 | n->addr.idx) * 0x9e3779b97f4a7c15ull;
	h ^= (uint64_t)n->addr.scale * 0xbf58476d1ce4e5b9ull;
	h ^= (uint64_t)n->addr.off * 0x94d049bb133111ebull;
	h ^= h >> 31;
	return h;
}

static int node_eq(const struct sx_node *a, const struct sx_node *b)
{
	return a->kind == b->kind && a->width == b->width && a->n == b->n &&
	       a->site == b->site && a->addr.term == b->addr.term &&
	       a->addr.idx == b->addr.idx && a->addr.scale == b->addr.scale &&
	       a->addr.off == b->addr.off && a->addr.known == b->addr.known;
}

uint32_t sx_intern(struct sx_ctx *c, const struct sx_node *n)
{
	const uint32_t mask = 2 * SX_MAX_NODES - 1;
	uint32_t i = (uint32_t)node_hash(n) & mask;

	for (;; i = (i + 1) & mask) {
		uint32_t id = c->hash[i];

		if (!id)
			break;
		if (node_eq(&c->nodes[id], n))
			return id;
	}
	if (c->nnodes >= SX_MAX_NODES)
		return 0;
	if (c->nnodes == c->cap_nodes) {
		uint32_t cap = c->cap_nodes * 2;
		struct sx_node *v = realloc(c->nodes, cap * sizeof(*v));

		if (!v)
			return 0;
		c->nodes = v;
		c->cap_nodes = cap;
	}
	c->nodes[c->nnodes] = *n;
	c->hash[i] = c->nnodes;
	return c->nnodes++;
}

uint32_t sx_arg(struct sx_ctx *c, unsigned n)
{
	struct sx_node nd = { .kind = SXN_ARG, .n = (uint16_t)n };

	return sx_intern(c, &nd);
}

uint32_t sx_invar(struct sx_ctx *c, unsigned n)
{
	struct sx_node nd = { .kind = SXN_INVAR, .n = (uint16_t)n };

	return sx_intern(c, &nd);
}

uint32_t sx_any(struct sx_ctx *c)
{
	struct sx_node nd = { .kind = SXN_ANY };

	return sx_intern(c, &nd);
}

const struct sx_node *sx_node(const struct sx_ctx *c, uint32_t id)
{
	return id && id < c->nnodes ? &c->nodes[id] : NULL;
}

const struct sx_node *sx_load_of(const struct sx_ctx *c, const struct sx_val *v)
{
	const struct sx_node *n;

	if (!v->known || v->idx || v->off || !(n = sx_node(c, v->term)))
		return NULL;
	return n->kind == SXN_LOAD ? n : NULL;
}

static void term_str(const struct sx_ctx *c, uint32_t id, char *buf, size_t len, int depth)
{
	const struct sx_node *n = sx_node(c, id);
	char a[160];

	if (!n) {
		snprintf(buf, len, "?");
		return;
	}
	switch (n->kind) {
	case SXN_ARG:
		snprintf(buf, len, "ARG%u", n->n);
		break;
	case SXN_SP:
		snprintf(buf, len, "SP");
		break;
	case SXN_RET:
		snprintf(buf, len, "RET@%" PRIx64, n->site);
		break;
	case SXN_INVAR:
		snprintf(buf, len, "INV%u", n->n);
		break;
	case SXN_ANY:
		snprintf(buf, len, "ANY");
		break;
	default:
		if (depth > 4) {
			snprintf(buf, len, "LOAD(...)");
			break;
		}
		sx_val_str(c, &n->addr, a, sizeof(a));
		snprintf(buf, len, "LOAD(%s,%u)", a, n->width);
	}
}

void sx_val_str(const struct sx_ctx *c, const struct sx_val *v, char *buf, size_t len)
{
	char t[192] = "", i[192] = "";

	if (!v->known) {
		snprintf(buf, len, "unknown");
		return;
	}
	if (v->term)
		term_str(c, v->term, t, sizeof(t), 0);
	if (v->idx) {
		term_str(c, v->idx, i, sizeof(i), 0);
		snprintf(buf, len, "%s+%s*%" PRId64 "%+" PRId64, t, i, v->scale, v->off);
	} else if (v->term) {
		snprintf(buf, len, "%s%+" PRId64, t, v->off);
	} else {
		snprintf(buf, len, "%" PRId64, v->off);
	}
}

/* ---- the context ---- */

const struct sx_isa *sx_isa_for(uint16_t machine)
{
	static const struct sx_isa *const isas[] = { &sx_isa_x86_64, &sx_isa_arm64 };

	for (size_t i = 0; i < sizeof(isas) / sizeof(isas[0]); i++)
		if (isas[i]->machine == machine)
			return isas[i];
	return NULL;
}

struct sx_ctx *sx_new(const struct sx_image *img, const struct sx_isa *isa)
{
	struct sx_ctx *c = calloc(1, sizeof(*c));

	if (!c)
		return NULL;
	c->img = *img;
	c->isa = isa;
	c->cap_nodes = 1024;
	c->nodes = calloc(c->cap_nodes, sizeof(*c->nodes));
	c->hash = calloc(2 * SX_MAX_NODES, sizeof(*c->hash));
	c->handle = isa->open();
	if (!c->nodes || !c->hash || !c->handle) {
		sx_free(c);
		return NULL;
	}
	c->nnodes = 1;
	return c;
}

void sx_free(struct sx_ctx *c)
{
	if (!c)
		return;
	if (c->handle)
		c->isa->close(c->handle);
	free(c->nodes);
	free(c->hash);
	free(c->facts);
	free(c->q);
	free(c);
}

void sx_clear_facts(struct sx_ctx *c)
{
	c->nfacts = 0;
}

void *sx_isa_handle(struct sx_ctx *c)
{
	return c->handle;
}

const struct sx_image *sx_img(const struct sx_ctx *c)
{
	return &c->img;
}

const struct sx_fact *sx_facts(const struct sx_ctx *c, size_t *n)
{
	*n = c->nfacts;
	return c->facts;
}

unsigned sx_steps(const struct sx_ctx *c)
{
	return c->steps;
}

const uint8_t *sx_code_at(const struct sx_ctx *c, uint64_t pc, size_t *left)
{
	if (pc < c->img.start || pc >= c->img.end)
		return NULL;
	*left = (size_t)(c->img.end - pc);
	return c->img.code + (pc - c->img.start);
}

static struct sx_fact *fact_new(struct sx_ctx *c)
{
	if (c->nfacts == c->cap_facts) {
		size_t cap = c->cap_facts ? c->cap_facts * 2 : 256;
		struct sx_fact *v;

		if (cap > SX_MAX_FACTS)
			return NULL;
		v = realloc(c->facts, cap * sizeof(*v));
		if (!v)
			return NULL;
		c->facts = v;
		c->cap_facts = cap;
	}
	memset(&c->facts[c->nfacts], 0, sizeof(c->facts[0]));
	return &c->facts[c->nfacts++];
}

void sx_fact_add(struct sx_ctx *c, const struct sx_state *s, uint8_t kind, uint64_t pc,
		 uint8_t width, const struct sx_val *a, const struct sx_val *b)
{
	struct sx_fact *f = fact_new(c);

	if (!f)
		return;
	f->kind = kind;
	f->width = width;
	f->depth = s->depth;
	f->frame = s->frame;
	f->pc = pc;
	if (a)
		f->a = *a;
	if (b)
		f->b = *b;
}

void sx_fact_call(struct sx_ctx *c, const struct sx_state *s, uint8_t kind, uint64_t pc,
		  uint8_t mem, const struct sx_val *a, const struct sx_val *b)
{
	struct sx_fact *f = fact_new(c);

	if (!f)
		return;
	f->kind = kind;
	f->depth = s->depth;
	f->frame = s->frame;
	f->pc = pc;
	f->mem = mem;
	if (a)
		f->a = *a;
	if (b)
		f->b = *b;
	for (int i = 0; i < SX_NARGS; i++)
		f->args[i] = s->reg[c->isa->arg_regs[i]];
}

/* The frame's stack slot at addr (SP-relative, no index), or -1. */
static int stack_slot(const struct sx_state *s, const struct sx_val *addr, uint8_t width)
{
	int64_t off;

	if (!sx_is_term(addr, s->sp_term, &off))
		return -1;
	for (unsigned i = 0; i < s->nslots; i++)
		if (s->slot[i].off == off && s->slot[i].width == width)
			return (int)i;
	return -1;
}

struct sx_val sx_do_load(struct sx_ctx *c, struct sx_state *s, uint64_t pc,
			 const struct sx_val *addr, uint8_t width)
{
	struct sx_node n = { .kind = SXN_LOAD, .width = width };
	struct sx_val v;
	int i = stack_slot(s, addr, width);

	if (i >= 0)
		return s->slot[i].v;
	if (!addr->known)
		return sx_unknown();
	n.addr = *addr;
	v = sx_term(sx_intern(c, &n), 0);
	if (!v.term)
		return sx_unknown();
	sx_fact_add(c, s, SXF_LOAD, pc, width, addr, &v);
	return v;
}

void sx_do_store(struct sx_ctx *c, struct sx_state *s, uint64_t pc,
		 const struct sx_val *addr, uint8_t width, const struct sx_val *v)
{
	int64_t off;
	int i;

	if (!addr->known)
		return;
	sx_fact_add(c, s, SXF_STORE, pc, width, addr, v);
	if (!sx_is_term(addr, s->sp_term, &off))
		return;
	/* A store over part of a slot makes the slot unknown. */
	for (unsigned k = 0; k < s->nslots; k++)
		if (s->slot[k].off < off + width && off < s->slot[k].off + s->slot[k].width)
			s->slot[k].v = sx_unknown();
	i = stack_slot(s, addr, width);
	if (i < 0) {
		if (s->nslots == SX_STACK_SLOTS)
			return;
		i = (int)s->nslots++;
		s->slot[i].off = off;
		s->slot[i].width = width;
	}
	s->slot[i].v = *v;
}

/* ---- the walk ---- */

/*
 * Each instruction is read at most SX_VISITS times in one walk: a path
 * that reaches it again goes on only the first SX_VISITS times.  Twice,
 * because the first path to an instruction is often the worse one: the
 * fall-through after a call that never returns (an error raiser), which
 * clobbered the registers the jump around it kept.
 */
#define SX_VISITS 2

struct visited {
	uint64_t *v; /* open addressing; 0 = empty (no code at vaddr 0) */
	uint8_t *n_in;
	size_t cap, n;
};

/* Counts a visit of pc: how many there were before, or -ENOMEM. */
static int visit(struct visited *vs, uint64_t pc)
{
	size_t i;

	if (vs->n * 2 >= vs->cap) {
		struct visited nv = { .cap = vs->cap ? vs->cap * 2 : 1024 };

		nv.v = calloc(nv.cap, sizeof(*nv.v));
		nv.n_in = calloc(nv.cap, 1);
		if (!nv.v || !nv.n_in) {
			free(nv.v);
			free(nv.n_in);
			return -ENOMEM;
		}
		for (size_t k = 0; k < vs->cap; k++) {
			if (vs->v[k]) {
				size_t j = (vs->v[k] * 0x9e3779b97f4a7c15ull >> 20) & (nv.cap - 1);

				while (nv.v[j])
					j = (j + 1) & (nv.cap - 1);
				nv.v[j] = vs->v[k];
				nv.n_in[j] = vs->n_in[k];
				nv.n++;
			}
		}
		free(vs->v);
		free(vs->n_in);
		*vs = nv;
	}
	for (i = (pc * 0x9e3779b97f4a7c15ull >> 20) & (vs->cap - 1); vs->v[i];
	     i = (i + 1) & (vs->cap - 1))
		if (vs->v[i] == pc)
			return vs->n_in[i] < 255 ? vs->n_in[i]++ : 255;
	vs->v[i] = pc;
	vs->n_in[i] = 1;
	vs->n++;
	return 0;
}

struct work {
	uint64_t pc;
	struct sx_state s;
};

static int push_work(struct work **wl, size_t *n, size_t *cap, uint64_t pc,
		     const struct sx_state *s)
{
	if (*n == *cap) {
		struct work *v = realloc(*wl, *cap * 2 * sizeof(**wl));

		if (!v)
			return -ENOMEM;
		*wl = v;
		*cap *= 2;
	}
	(*wl)[*n].pc = pc;
	(*wl)[(*n)++].s = *s;
	return 0;
}

static int walkable(const struct sx_ctx *c, uint64_t pc)
{
	return pc >= c->img.start && pc < c->img.end &&
	       !(pc >= c->img.plt_start && pc < c->img.plt_end);
}

struct pending {
	uint64_t target, site;
	unsigned depth_left, limit;
	struct sx_state s;
};

#define SX_MAX_PENDING 256

/* Queues a followed call to target from state s (the caller's, before
 * the call), to be walked for at most limit instructions: a large callee
 * (an error path) must not take the budget of what follows. */
static void follow_call(struct sx_ctx *c, const struct sx_state *s, uint64_t site,
			uint64_t target, unsigned depth_left, unsigned limit)
{
	struct pending *p;

	if (!depth_left || !walkable(c, target) || c->qtail - c->qhead >= SX_MAX_PENDING ||
	    c->nframes == UINT16_MAX)
		return;
	if (c->qtail == c->qcap) {
		if (c->qhead) {
			memmove(c->q, c->q + c->qhead, (c->qtail - c->qhead) * sizeof(*c->q));
			c->qtail -= c->qhead;
			c->qhead = 0;
		} else {
			size_t cap = c->qcap ? c->qcap * 2 : 16;
			struct pending *v = realloc(c->q, cap * sizeof(*v));

			if (!v)
				return;
			c->q = v;
			c->qcap = cap;
		}
	}
	p = &c->q[c->qtail++];
	p->target = target;
	p->site = site;
	p->depth_left = depth_left - 1;
	p->limit = limit / 4 > 256 ? limit / 4 : 256;
	p->s = *s;
	/* Where a call pushes its return address, the callee's SP is that
	 * much lower. */
	p->s.reg[c->isa->sp_reg] = sx_add(&s->reg[c->isa->sp_reg],
					  &(struct sx_val){ .off = -c->isa->call_push,
							    .known = 1 });
	p->s.depth = s->depth + 1;
}

#define SX_MAX_CASES 512

/*
 * The targets of a switch's jump table, from the value an indirect jump
 * goes to: base + (int32)LOAD(table + i*4) as position-independent code
 * computes it, or LOAD(table + i*8) of absolute pointers, for any index i
 * (ANY or a value).  As many
 * entries as the constant last compared with allows (the switch's range
 * check), at most SX_MAX_CASES; each target must be code.  The number
 * of targets written to out, or 0 when the jump is no such switch.
 */
static size_t switch_targets(const struct sx_ctx *c, const struct sx_state *s,
			     const struct sx_val *v, uint64_t *out, size_t cap)
{
	const struct sx_node *ld = sx_node(c, v->term);
	int64_t base = v->off, n;
	size_t k = 0;

	if (!c->img.read || !ld || ld->kind != SXN_LOAD || v->idx || ld->addr.term ||
	    !ld->addr.idx)
		return 0;
	n = s->bound >= 0 && s->bound < SX_MAX_CASES ? s->bound + 1 : 0;
	for (int64_t i = 0; i < n && k < cap; i++) {
		uint64_t at = (uint64_t)(ld->addr.off + i * ld->addr.scale), t;
		int32_t rel;

		if (ld->width == 4 && ld->addr.scale == 4) {
			if (c->img.read(c->img.obj, at, &rel, 4))
				break;
			t = (uint64_t)(base + rel);
		} else if (ld->width == 8 && ld->addr.scale == 8 && !base) {
			if (c->img.pointer(c->img.obj, at, &t))
				break;
		} else {
			break;
		}
		if (!walkable(c, t))
			break;
		out[k++] = t;
	}
	return k;
}

static int walk(struct sx_ctx *c, uint64_t entry, const struct sx_state *init,
		unsigned depth_left, unsigned limit)
{
	unsigned until = c->steps + limit < c->budget ? c->steps + limit : c->budget;
	struct visited vs = { 0 };
	struct work *wl = malloc(sizeof(*wl));
	size_t nwl = 0, cap = 1;
	int err = 0;

	if (!wl)
		return -ENOMEM;
	wl[nwl].pc = entry;
	wl[nwl++].s = *init;
	while (nwl && !err) {
		struct work w = wl[--nwl];
		uint64_t pc = w.pc;

		for (;;) {
			struct sx_next nx = { 0 };
			int seen;

			if (c->steps >= until || !walkable(c, pc))
				break;
			seen = visit(&vs, pc);
			if (seen < 0) {
				err = seen;
				break;
			}
			if (seen >= SX_VISITS)
				break;
			c->steps++;
			if (c->isa->step(c, &w.s, pc, &nx))
				break;
			if (nx.indirect) {
				uint64_t t[SX_MAX_CASES];
				size_t nt = switch_targets(c, &w.s, &nx.ind, t, SX_MAX_CASES);

				for (size_t i = 0; i < nt && nwl < SX_MAX_WORK; i++) {
					if (push_work(&wl, &nwl, &cap, t[i], &w.s)) {
						err = -ENOMEM;
						break;
					}
				}
			}
			if (nx.stop)
				break;
			if (nx.call) {
				follow_call(c, &w.s, pc, nx.target, depth_left, limit);
				c->isa->after_call(&w.s, sx_term(sx_intern(c, &(struct sx_node){
					.kind = SXN_RET, .site = pc }), 0));
			}
			if (nx.jump && nx.fall) {
				if (nwl < SX_MAX_WORK &&
				    push_work(&wl, &nwl, &cap, nx.target, &w.s)) {
					err = -ENOMEM;
					break;
				}
			} else if (nx.jump) {
				pc = nx.target;
				continue;
			}
			pc = nx.next_pc;
		}
	}
	free(wl);
	free(vs.v);
	free(vs.n_in);
	return err;
}

int sx_run(struct sx_ctx *c, uint64_t entry, const struct sx_val *args, int nargs,
	   unsigned depth, unsigned budget)
{
	struct sx_state *s;
	int err;

	if (!walkable(c, entry))
		return -EINVAL;
	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	for (int i = 0; i < SX_NARGS; i++) {
		uint32_t a = sx_arg(c, (unsigned)i);

		s->reg[c->isa->arg_regs[i]] = args ? (i < nargs ? args[i] : sx_unknown()) :
						     sx_term(a, 0);
	}
	s->sp_term = sx_intern(c, &(struct sx_node){ .kind = SXN_SP });
	s->reg[c->isa->sp_reg] = sx_term(s->sp_term, 0);
	c->budget = c->steps + budget;
	c->qhead = c->qtail = 0;
	c->nframes = 1;
	err = walk(c, entry, s, depth, budget);
	while (!err && c->qhead < c->qtail && c->steps < c->budget) {
		struct pending *p = &c->q[c->qhead];
		struct sx_val target = sx_const((int64_t)p->target);

		struct sx_fact *f;

		*s = p->s;
		c->qhead++;
		s->frame = c->nframes++;
		f = fact_new(c);
		if (f) {
			f->kind = SXF_ENTER;
			f->depth = s->depth;
			f->frame = s->frame;
			f->parent = p->s.frame;
			f->pc = p->site;
			f->a = s->reg[c->isa->sp_reg];
			f->b = target;
		}
		err = walk(c, p->target, s, p->depth_left, p->limit);
	}
	free(s);
	return err;
}

int sx_sweep(struct sx_ctx *c, uint64_t start, uint64_t end, const int *invar_regs,
	     const struct sx_val *invar_vals, int ninvar)
{
	struct sx_state *s = calloc(1, sizeof(*s));
	uint64_t pc = start;

	if (!s)
		return -ENOMEM;
	s->sp_term = sx_intern(c, &(struct sx_node){ .kind = SXN_SP });
	while (pc < end && walkable(c, pc)) {
		struct sx_next nx = { 0 };

		for (int i = 0; i < ninvar; i++)
			s->reg[invar_regs[i]] = invar_vals[i];
		s->reg[c->isa->sp_reg] = sx_term(s->sp_term, 0);
		s->nslots = 0;
		c->steps++;
		if (c->isa->step(c, s, pc, &nx)) {
			pc += (uint64_t)c->isa->insn_align;
			continue;
		}
		if (nx.call)
			c->isa->after_call(s, sx_term(sx_intern(c, &(struct sx_node){
				.kind = SXN_RET, .site = pc }), 0));
		pc = nx.next_pc;
	}
	free(s);
	return 0;
}

/*
 * stacktree.c - the stacks of a trace as a tree of frame paths from the
 * root, for the stack_branch record (stacktree.h, format.md §3.5.1).
 *
 * A node is one frame at the end of one path from the root; a stack is
 * its leaf node.  The writer finds children through a hash of (parent,
 * address) and remembers, per node, the first stack through it (`via`)
 * and that stack's next frame (`next`), which is what the reader will
 * know of the base it names.  The reader needs no child lookup: it
 * appends the new frames of each stack under the node its base leads to,
 * and rebuilds the addresses by walking parent links, at most
 * LP_STACK_MAX_DEPTH steps.
 *
 *   writer:  root(kind) -> main -> loop -> handler -> leaf A   (stack 1)
 *                                      \-> parse   -> leaf B   (stack 2:
 *            base 1, keep 3, new [parse, leaf B], pred = handler)
 *
 * Both sides run on untrusted or unbounded input, so every table grows
 * with overflow checks, and the writer stops adding nodes past max_nodes
 * (later stacks still branch from what the tree holds).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "format/stacktree.h"

#define ST_KINDS 16 /* stack kinds the writer shares roots for */

struct st_node {
	uint64_t addr;
	uint64_t next;   /* writer: the via stack's frame after this one */
	uint32_t parent; /* node index, 0 for a frame at a root */
	uint32_t via;    /* writer: 1 + the first stack through here */
};

struct st_stack {
	uint64_t id;
	uint32_t kind, depth;
	uint32_t leaf; /* node index, 0 for an empty stack */
};

/* Open addressing over indices + 1; the hashes are recomputed from the
 * arrays when the table grows, so a slot is four bytes. */
struct st_index {
	uint32_t *slots;
	size_t cap; /* a power of two, or 0 */
};

struct lp_stacktree {
	struct st_node *nodes; /* nodes[0] unused: index 0 is "none" */
	size_t nnodes, capnodes, max_nodes;
	struct st_stack *stacks;
	size_t nstacks, capstacks;
	struct st_index children; /* writer: nodes by (parent, addr) */
	struct st_index ids;      /* reader: stacks by id */
	uint32_t roots[ST_KINDS]; /* writer: a virtual root node per kind */
};

static uint64_t mix(uint64_t x)
{
	x ^= x >> 30;
	x *= 0xbf58476d1ce4e5b9ull;
	x ^= x >> 27;
	x *= 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

static uint64_t child_hash(uint32_t parent, uint64_t addr)
{
	return mix(addr ^ mix(parent + 0x9e3779b97f4a7c15ull));
}

static int grow(void **v, size_t *cap, size_t need, size_t size)
{
	size_t ncap = *cap ? *cap : 64;
	void *nv;

	if (need <= *cap)
		return 0;
	while (ncap < need) {
		if (ncap > SIZE_MAX / 2)
			return -ENOMEM;
		ncap *= 2;
	}
	if (ncap > SIZE_MAX / size || ncap > UINT32_MAX)
		return -ENOMEM;
	nv = realloc(*v, ncap * size);
	if (!nv)
		return -ENOMEM;
	*v = nv;
	*cap = ncap;
	return 0;
}

static void place_slot(uint32_t *slots, size_t cap, uint64_t h, uint32_t v)
{
	size_t i = h & (cap - 1);

	while (slots[i])
		i = (i + 1) & (cap - 1);
	slots[i] = v;
}

/* Makes room for `count` entries at a load of at most one half;
 * hash_of(t, v) gives the hash of entry v (an index + 1). */
static int index_reserve(struct lp_stacktree *t, struct st_index *x,
			 size_t count, uint64_t (*hash_of)(const struct lp_stacktree *, uint32_t))
{
	size_t ncap = x->cap ? x->cap : 64;
	uint32_t *ns;

	if (count <= x->cap / 2)
		return 0;
	while (count > ncap / 2) {
		if (ncap > SIZE_MAX / 2 / sizeof(*ns))
			return -ENOMEM;
		ncap *= 2;
	}
	ns = calloc(ncap, sizeof(*ns));
	if (!ns)
		return -ENOMEM;
	for (size_t i = 0; i < x->cap; i++)
		if (x->slots[i])
			place_slot(ns, ncap, hash_of(t, x->slots[i]), x->slots[i]);
	free(x->slots);
	x->slots = ns;
	x->cap = ncap;
	return 0;
}

static uint64_t node_hash(const struct lp_stacktree *t, uint32_t v)
{
	return child_hash(t->nodes[v].parent, t->nodes[v].addr);
}

static uint64_t stack_hash(const struct lp_stacktree *t, uint32_t v)
{
	return mix(t->stacks[v - 1].id);
}

struct lp_stacktree *lp_stacktree_new(size_t max_nodes)
{
	struct lp_stacktree *t = calloc(1, sizeof(*t));

	if (!t)
		return NULL;
	t->nnodes = 1;
	t->max_nodes = max_nodes;
	return t;
}

void lp_stacktree_free(struct lp_stacktree *t)
{
	if (!t)
		return;
	free(t->nodes);
	free(t->stacks);
	free(t->children.slots);
	free(t->ids.slots);
	free(t);
}

size_t lp_stacktree_bytes(const struct lp_stacktree *t)
{
	if (!t)
		return 0;
	return t->capnodes * sizeof(*t->nodes) + t->capstacks * sizeof(*t->stacks) +
	       (t->children.cap + t->ids.cap) * sizeof(uint32_t);
}

/* Appends a node; its index, or 0 when out of memory. */
static uint32_t new_node(struct lp_stacktree *t, uint32_t parent,
			 uint64_t addr, uint32_t via)
{
	struct st_node *n;

	if (grow((void **)&t->nodes, &t->capnodes, t->nnodes + 1, sizeof(*t->nodes)))
		return 0;
	n = &t->nodes[t->nnodes];
	n->addr = addr;
	n->next = 0;
	n->parent = parent;
	n->via = via;
	return (uint32_t)t->nnodes++;
}

static uint32_t find_child(const struct lp_stacktree *t, uint32_t parent,
			   uint64_t addr)
{
	const struct st_index *x = &t->children;
	size_t i;

	if (!x->cap)
		return 0;
	for (i = child_hash(parent, addr) & (x->cap - 1); x->slots[i];
	     i = (i + 1) & (x->cap - 1)) {
		const struct st_node *n = &t->nodes[x->slots[i]];

		if (n->parent == parent && n->addr == addr)
			return x->slots[i];
	}
	return 0;
}

/* The writer's stacks are only ever named as bases, by index. */
static int add_stack(struct lp_stacktree *t, uint64_t id, uint32_t kind,
		     uint32_t depth, uint32_t leaf)
{
	struct st_stack *s;

	if (grow((void **)&t->stacks, &t->capstacks, t->nstacks + 1, sizeof(*t->stacks)))
		return -ENOMEM;
	s = &t->stacks[t->nstacks++];
	s->id = id;
	s->kind = kind;
	s->depth = depth;
	s->leaf = leaf;
	return 0;
}

/* Adds the frames of s rootward of `keep` under node cur, as stack
 * number t->nstacks (already added), whose via they become. */
static int grow_path(struct lp_stacktree *t, const struct lp_stack *s,
		     uint32_t cur, uint32_t keep)
{
	uint32_t via = (uint32_t)t->nstacks, i;

	if (index_reserve(t, &t->children, t->nnodes + s->depth - keep, node_hash))
		return -ENOMEM;
	for (i = s->depth - keep; i-- > 0;) {
		uint32_t n = new_node(t, cur, s->addrs[i], via);

		if (!n)
			return -ENOMEM;
		if (i)
			t->nodes[n].next = s->addrs[i - 1];
		place_slot(t->children.slots, t->children.cap, node_hash(t, n), n);
		cur = n;
	}
	t->stacks[via - 1].leaf = cur;
	return 0;
}

int lp_stacktree_find(struct lp_stacktree *t, const struct lp_stack *s,
		      struct lp_stack_branch *br)
{
	uint32_t cur, keep = 0, child;
	const struct st_node *n;

	memset(br, 0, sizeof(*br));
	if (s->kind >= ST_KINDS)
		return 0; /* a kind this writer does not share: written whole */
	if (!t->roots[s->kind]) {
		t->roots[s->kind] = new_node(t, 0, 0, 0);
		if (!t->roots[s->kind])
			return -ENOMEM;
	}
	cur = t->roots[s->kind];
	while (keep < s->depth &&
	       (child = find_child(t, cur, s->addrs[s->depth - 1 - keep]))) {
		cur = child;
		keep++;
	}
	n = &t->nodes[cur];
	br->node = cur;
	br->keep = keep;
	if (n->via && t->stacks[n->via - 1].id < s->id) {
		const struct st_stack *b = &t->stacks[n->via - 1];

		br->base = b->id;
		br->pred = b->depth > keep ? n->next : keep ? n->addr : 0;
	}
	return 0;
}

int lp_stacktree_insert(struct lp_stacktree *t, const struct lp_stack *s,
			const struct lp_stack_branch *br)
{
	uint32_t cur = br->node, keep = br->keep;

	if (!cur || t->nnodes + s->depth - keep > t->max_nodes)
		return 0; /* not shared, or full: later stacks branch from
			   * what the tree holds */
	if (add_stack(t, s->id, s->kind, s->depth, cur))
		return -ENOMEM;
	if (!t->nodes[cur].via) {
		/* Only a root is without a via: the first stack of its kind. */
		t->nodes[cur].via = (uint32_t)t->nstacks;
		t->nodes[cur].next = s->depth > keep ? s->addrs[s->depth - keep - 1] : 0;
	}
	return grow_path(t, s, cur, keep);
}

static const struct st_stack *find_stack(const struct lp_stacktree *t,
					  uint64_t id)
{
	const struct st_index *x = &t->ids;
	size_t i;

	if (!x->cap)
		return NULL;
	for (i = mix(id) & (x->cap - 1); x->slots[i]; i = (i + 1) & (x->cap - 1))
		if (t->stacks[x->slots[i] - 1].id == id)
			return &t->stacks[x->slots[i] - 1];
	return NULL;
}

/* Reader: stack id ends at node leaf (a first definition only). */
static int name_stack(struct lp_stacktree *t, uint64_t id, uint32_t kind,
		      uint32_t depth, uint32_t leaf)
{
	if (find_stack(t, id))
		return 0; /* defined twice: the first one stands */
	if (index_reserve(t, &t->ids, t->nstacks + 1, stack_hash) ||
	    add_stack(t, id, kind, depth, leaf))
		return -ENOMEM;
	place_slot(t->ids.slots, t->ids.cap, mix(id), (uint32_t)t->nstacks);
	return 0;
}

int lp_stacktree_add(struct lp_stacktree *t, const struct lp_stack *s)
{
	uint32_t cur = 0, i;

	if (find_stack(t, s->id))
		return 0;
	for (i = s->depth; i-- > 0;) {
		cur = new_node(t, cur, s->addrs[i], 0);
		if (!cur)
			return -ENOMEM;
	}
	return name_stack(t, s->id, s->kind, s->depth, cur);
}

int lp_stacktree_base(const struct lp_stacktree *t, uint32_t kind,
		      uint64_t base, uint32_t keep, uint32_t *anchor,
		      uint64_t *pred)
{
	const struct st_stack *b = find_stack(t, base);
	uint32_t n, steps;

	if (!b || b->kind != kind)
		return -ENOENT;
	if (keep > b->depth)
		return -EBADMSG;
	n = b->leaf;
	steps = b->depth - keep;
	if (steps) {
		/* Up to the base's frame one below the kept ones. */
		while (--steps)
			n = t->nodes[n].parent;
		*pred = t->nodes[n].addr;
		*anchor = t->nodes[n].parent;
	} else {
		*anchor = n;
		*pred = keep ? t->nodes[n].addr : 0;
	}
	return 0;
}

int lp_stacktree_extend(struct lp_stacktree *t, uint64_t id, uint32_t kind,
			uint32_t anchor, uint32_t keep, const uint64_t *new,
			uint32_t nnew, uint64_t *out)
{
	uint32_t cur = anchor, i, n = anchor;

	for (i = 0; i < nnew; i++) {
		out[nnew - 1 - i] = new[i];
		cur = new_node(t, cur, new[i], 0);
		if (!cur)
			return -ENOMEM;
	}
	for (i = 0; i < keep; i++) {
		out[nnew + i] = t->nodes[n].addr;
		n = t->nodes[n].parent;
	}
	return name_stack(t, id, kind, keep + nnew, cur);
}

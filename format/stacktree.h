/*
 * stacktree.h - the stacks of a trace as a tree of their root sides, so
 * that a stack is written as an earlier stack's root-side frames plus its
 * own new ones (the stack_branch record, docs/format.md §3.5.1).
 *
 * Stacks of one program share their root side: main, the event loop, the
 * request handler; what differs is the last few frames toward the leaf.
 * The writer looks a new stack up from its root to the first frame no
 * earlier stack has, and names that stack as the base; the reader rebuilds
 * each stack from its base.  Both keep one node per distinct frame path,
 * not one address per frame of every stack.  Private to format/.
 */
#ifndef LUAPROF_FORMAT_STACKTREE_H
#define LUAPROF_FORMAT_STACKTREE_H

#include <stddef.h>
#include <stdint.h>

#include "format/trace.h"

struct lp_stacktree;

/* A stack's branch from an earlier one: the `keep` root-side frames of
 * stack `base` (0: no base), and the predictor of the first new frame's
 * address (format.md §3.5.1). */
struct lp_stack_branch {
	uint64_t base;
	uint32_t keep;
	uint64_t pred;
	uint32_t node; /* private: where the stack leaves the tree */
};

struct lp_stacktree *lp_stacktree_new(size_t max_nodes);
void lp_stacktree_free(struct lp_stacktree *t);
size_t lp_stacktree_bytes(const struct lp_stacktree *t);

/*
 * Writer: finds the earlier stack sharing the longest root side with s
 * (same kind, a smaller id) and fills *br (base 0 when there is none).
 * 0 or -ENOMEM.
 */
int lp_stacktree_find(struct lp_stacktree *t, const struct lp_stack *s,
		      struct lp_stack_branch *br);
/* Writer: adds s, once written, to the tree (while it has room), with
 * what lp_stacktree_find() said of it.  0 or -ENOMEM. */
int lp_stacktree_insert(struct lp_stacktree *t, const struct lp_stack *s,
			const struct lp_stack_branch *br);

/* Reader: adds a stack read whole (a stack record). */
int lp_stacktree_add(struct lp_stacktree *t, const struct lp_stack *s);

/*
 * Reader: for a stack_branch of `kind` on `base` keeping `keep` frames,
 * finds the base (-ENOENT: never read, or another kind; -EBADMSG: keep
 * deeper than the base) and its predictor; *anchor says where the new
 * frames hang for lp_stacktree_extend().
 */
int lp_stacktree_base(const struct lp_stacktree *t, uint32_t kind,
		      uint64_t base, uint32_t keep, uint32_t *anchor,
		      uint64_t *pred);

/*
 * Reader: adds stack `id` made of the frames at `anchor` and new[0..nnew)
 * (root side first), and writes its addresses leaf first into out, which
 * has room for keep + nnew.  0 or -ENOMEM.
 */
int lp_stacktree_extend(struct lp_stacktree *t, uint64_t id, uint32_t kind,
			uint32_t anchor, uint32_t keep, const uint64_t *new,
			uint32_t nnew, uint64_t *out);

#endif

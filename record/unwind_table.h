/*
 * unwind_table.h - compact unwind rows for one ELF object, computed from
 * its call frame information (.eh_frame, else .debug_frame).  The rows
 * (struct lp_unwind_row, bpf/unwind_maps.h) are what the BPF walker searches;
 * record/unwind.c loads them.  No BPF and no root here: the unit tests
 * build tables of their own executable.
 */
#ifndef LUAPROF_RECORD_UNWIND_TABLE_H
#define LUAPROF_RECORD_UNWIND_TABLE_H

#include <stddef.h>
#include <stdint.h>

#include "bpf/unwind_maps.h"

/* Where the rows came from (a mask: .debug_frame fills in for functions
 * .eh_frame does not describe). */
enum unwind_source {
	UNWIND_SRC_NONE = 0, /* no CFI: the walker follows frame pointers */
	UNWIND_SRC_EH_FRAME = 1,
	UNWIND_SRC_DEBUG_FRAME = 2,
};

/* A PT_LOAD segment: file bytes [offset, offset + filesz) at vaddr. */
struct unwind_seg {
	uint64_t offset, vaddr, filesz;
	uint32_t flags; /* PF_X, PF_W, PF_R */
};

/* A function as its FDE bounds it: vaddrs [lo, hi). */
struct unwind_fn {
	uint32_t lo, hi;
};

struct unwind_table {
	struct lp_unwind_row *rows; /* sorted by pc, no two alike in a row */
	uint32_t nrows;
	struct unwind_fn *fns; /* sorted by lo: what a stripped object's
				* symbols no longer bound */
	uint32_t nfns;
	struct unwind_seg *segs;
	uint32_t nsegs;
	unsigned int source; /* enum unwind_source bits */
	/* What the builder met, for statistics and tests. */
	uint32_t fdes;        /* FDEs turned into rows */
	uint32_t bad_entries; /* CIEs/FDEs skipped as malformed or foreign */
	uint32_t unsupported; /* rows marked LP_CFA_UNSUPPORTED */
	uint32_t unsupported_exprs; /* CFA, rbp or RA expressions of no known form */
	uint32_t deref_rows;  /* LP_CFA_DEREF_*: realigned frames */
	uint32_t plt_rows, signal_rows, end_rows;
};

/*
 * Each returns 0 (a table with no rows and source UNWIND_SRC_NONE when the
 * object has no CFI) or -errno: -ENOEXEC for what is not a 64-bit x86_64
 * ELF, -ERANGE for an object whose code lies above 4 GiB, -ENOMEM.
 */
int unwind_table_build_fd(int fd, struct unwind_table *t);
int unwind_table_build_path(const char *path, struct unwind_table *t);
int unwind_table_build_mem(const void *image, size_t size,
			   struct unwind_table *t);
/* The same for the kernel's vDSO, whose arm64 signal trampoline has no
 * CFI: its instructions get an LP_CFA_SIGNAL row. */
int unwind_table_build_vdso(const void *image, size_t size, struct unwind_table *t);

/* The function (FDE) that holds vaddr, or NULL. */
const struct unwind_fn *unwind_table_function(const struct unwind_table *t, uint64_t vaddr);

/* The row covering vaddr, or NULL below the first row. */
const struct lp_unwind_row *unwind_table_lookup(const struct unwind_table *t,
						uint64_t vaddr);

/*
 * For a mapping of the object at file offset pgoff: the value d such that
 * vaddr = (address - mapping start) + pgoff + d.  -ENOENT when no PT_LOAD
 * segment holds pgoff.
 */
int unwind_table_vaddr_delta(const struct unwind_table *t, uint64_t pgoff,
			     int64_t *d);

void unwind_table_free(struct unwind_table *t);

#endif

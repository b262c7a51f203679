/*
 * addrset.h - the addresses samples hit, each kept once (addrset.c).
 */
#ifndef LUAPROF_RECORD_ADDRSET_H
#define LUAPROF_RECORD_ADDRSET_H

#include <stddef.h>
#include <stdint.h>

struct addr_set {
	uint64_t *slot; /* open addressing; 0 = empty */
	size_t cap, n;
	uint64_t *fresh; /* added since the last drain, in order */
	size_t nfresh, freshcap;
	uint64_t dropped; /* not kept: the set was full */
};

#define ADDR_SET_MAX (1u << 19) /* keys: 8 MiB of table at most */
/* Adds key (non-zero): 1 if new (it is then in fresh), 0 if known,
 * -ENOMEM, or -ENOSPC past ADDR_SET_MAX keys (counted in dropped). */
int addr_set_add(struct addr_set *a, uint64_t key);
void addr_set_free(struct addr_set *a);
/* qsort's comparison of uint64_t, ascending: for the keys drained from
 * fresh (objects.c) and the addresses they become (srclines.c). */
int u64_cmp(const void *a, const void *b);

#endif

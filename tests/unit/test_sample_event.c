/*
 * test_sample_event.c - unit tests of the packed sample event's unpacking
 * (record/sample_event.c): a well-formed event comes back whole, frames in
 * place; every way the head can lie about its lengths (not whole frames,
 * more than the struct holds, more than the bytes received) is rejected
 * without reading past the event (run under ASan, an overread would show).
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "record/sample_event.h"
#include "tests/unit/unit.h"

/* Packs a sample of nk kernel, nu user and nl Lua frames as the sampler
 * does, into a buffer of exactly that size (heap: ASan sees its end). */
static unsigned char *pack(int32_t kbytes, int32_t ubytes, uint16_t nl, size_t *size)
{
	struct lp_event_sample e;
	size_t k = kbytes > 0 ? kbytes : 0, u = ubytes > 0 ? ubytes : 0;
	unsigned char *p;

	memset(&e, 0, sizeof(e));
	e.h.type = LP_EVENT_SAMPLE;
	e.h.pid = 42;
	e.kstack_bytes = kbytes;
	e.ustack_bytes = ubytes;
	e.lua_depth = nl;
	e.ustack_stop = 3;
	for (int i = 0; i < LP_MAX_STACK; i++)
		e.kstack[i] = 0xffff000000000000ull + i;
	for (int i = 0; i < LP_MAX_USTACK; i++)
		e.ustack[i] = 0x400000 + i;
	for (int i = 0; i < LP_MAX_LUA; i++)
		e.lua[i].addr = 0x7000 + i;
	*size = lp_event_sample_wire_size(kbytes, ubytes, nl);
	p = malloc(*size);
	if (!p)
		abort();
	memcpy(p, &e, lp_event_sample_head_size);
	memcpy(p + lp_event_sample_head_size, e.kstack, k);
	memcpy(p + lp_event_sample_head_size + k, e.ustack, u);
	memcpy(p + lp_event_sample_head_size + k + u, e.lua, nl * sizeof(e.lua[0]));
	return p;
}

TEST(sample_event_round_trip)
{
	static struct lp_event_sample e;
	size_t size;
	unsigned char *p = pack(3 * 8, 5 * 8, 2, &size);
	int err;

	CHECK(size == 72 + 24 + 40 + 32);
	err = sample_event_unpack(p, size, &e);
	free(p);
	CHECK(err == 0);
	CHECK(e.h.pid == 42 && e.ustack_stop == 3 && e.lua_depth == 2);
	CHECK(e.kstack[0] == 0xffff000000000000ull && e.kstack[2] == 0xffff000000000002ull);
	CHECK(e.ustack[0] == 0x400000 && e.ustack[4] == 0x400004);
	CHECK(e.lua[0].addr == 0x7000 && e.lua[1].addr == 0x7001);
}

TEST(sample_event_failed_stacks_carry_nothing)
{
	static struct lp_event_sample e;
	size_t size;
	unsigned char *p = pack(-14, 0, 1, &size);
	int err;

	CHECK(size == 72 + 16);
	err = sample_event_unpack(p, size, &e);
	free(p);
	CHECK(err == 0);
	CHECK(e.kstack_bytes == -14 && e.lua[0].addr == 0x7000);
}

TEST(sample_event_full_depth)
{
	static struct lp_event_sample e;
	size_t size;
	unsigned char *p = pack(LP_MAX_STACK * 8, LP_MAX_USTACK * 8, LP_MAX_LUA, &size);
	int err;

	CHECK(size == sizeof(e));
	err = sample_event_unpack(p, size, &e);
	free(p);
	CHECK(err == 0);
	CHECK(e.lua[LP_MAX_LUA - 1].addr == 0x7000 + LP_MAX_LUA - 1);
}

/* Each lie, in a buffer of the size it claims or less. */
TEST(sample_event_rejects_lies)
{
	static struct lp_event_sample e;
	struct lp_event_sample *h;
	size_t size;
	unsigned char *p = pack(2 * 8, 2 * 8, 1, &size);

	h = (struct lp_event_sample *)p;
	for (size_t cut = 0; cut < size; cut++)
		CHECK(sample_event_unpack(p, cut, &e) == -EINVAL);
	CHECK(sample_event_unpack(p, size, &e) == 0);
	h->kstack_bytes = 17; /* not whole frames */
	CHECK(sample_event_unpack(p, size, &e) == -EINVAL);
	h->kstack_bytes = (LP_MAX_STACK + 1) * 8; /* more than kstack[] holds */
	CHECK(sample_event_unpack(p, size, &e) == -EINVAL);
	h->kstack_bytes = 16;
	h->ustack_bytes = (LP_MAX_USTACK + 1) * 8;
	CHECK(sample_event_unpack(p, size, &e) == -EINVAL);
	h->ustack_bytes = 24; /* one frame more than sent */
	CHECK(sample_event_unpack(p, size, &e) == -EINVAL);
	h->ustack_bytes = 16;
	h->lua_depth = LP_MAX_LUA + 1;
	CHECK(sample_event_unpack(p, size, &e) == -EINVAL);
	h->lua_depth = 2; /* likewise */
	CHECK(sample_event_unpack(p, size, &e) == -EINVAL);
	h->lua_depth = 1;
	CHECK(sample_event_unpack(p, size, &e) == 0);
	free(p);
}

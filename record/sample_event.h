/*
 * sample_event.h - a sample event off the ring buffer, checked and
 * unpacked (record/sample_event.c).
 */
#ifndef LUAPROF_RECORD_SAMPLE_EVENT_H
#define LUAPROF_RECORD_SAMPLE_EVENT_H

#include <stddef.h>
#include <stdint.h>

#include "bpf/sampler.h"

int sample_event_unpack(const void *data, size_t size, struct lp_event_sample *e);

_Static_assert(sizeof(((struct lp_event_sample *)0)->ustack) == LP_MAX_USTACK * 8,
	       "ustack holds LP_MAX_USTACK frames");

/* The user stack's frames: at most LP_MAX_USTACK, which is all the
 * struct holds and all sample_event_unpack() lets through; 0 when the
 * walk failed (a negative count). */
static inline int sample_ustack_frames(const struct lp_event_sample *e)
{
	return e->ustack_bytes > 0 ? e->ustack_bytes / 8 : 0;
}

/* The address a user frame is looked up at: the leaf's pc, a caller's
 * return address less one (the call, which may be a mapping's last
 * instruction); a gap (0) as it is. */
static inline uint64_t sample_frame_addr(uint64_t pc, int i)
{
	return i && pc ? pc - 1 : pc;
}

#endif

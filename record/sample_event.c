/*
 * sample_event.c - unpacks a sample event as the ring buffer carries it
 * (bpf/sampler.h: a 64-byte head, then only the kernel, user and Lua
 * frames present) into the whole struct lp_event_sample the rest of
 * record/ reads.  The BPF side sends samples at their real size so that a
 * small ring holds many; here every length the head claims is checked
 * against the bytes received before a byte of it is read: a stack count
 * that is not a whole number of frames, more frames than the struct holds,
 * or parts that overrun the event reject it (-EINVAL), and nothing past
 * the end is ever read.
 */
#include <errno.h>
#include <stdint.h>
#include <string.h>

#include "record/sample_event.h"

/* Checks one stack's byte count: 0 if it fits and is whole frames.  A
 * negative count (the helper's errno) carries no bytes. */
static int stack_bytes_ok(int32_t bytes, size_t cap)
{
	return bytes <= 0 || ((size_t)bytes <= cap && bytes % 8 == 0) ? 0 : -EINVAL;
}

/* Fills e from the event at data (size bytes); 0, or -EINVAL when the
 * event is not a well-formed sample, e then holding nothing usable.  The
 * parts of e past what the event carries are left as they were. */
int sample_event_unpack(const void *data, size_t size, struct lp_event_sample *e)
{
	const unsigned char *p = data;
	size_t kbytes, ubytes, lbytes, need;

	if (size < lp_event_sample_head_size)
		return -EINVAL;
	memcpy(e, p, lp_event_sample_head_size);
	if (stack_bytes_ok(e->kstack_bytes, sizeof(e->kstack)) ||
	    stack_bytes_ok(e->ustack_bytes, sizeof(e->ustack)) || e->lua_depth > LP_MAX_LUA)
		return -EINVAL;
	kbytes = lp_event_stack_wire(e->kstack_bytes);
	ubytes = lp_event_stack_wire(e->ustack_bytes);
	lbytes = (size_t)e->lua_depth * sizeof(struct lp_lua_frame);
	need = lp_event_sample_head_size + kbytes + ubytes + lbytes;
	if (size < need)
		return -EINVAL;
	p += lp_event_sample_head_size;
	memcpy(e->kstack, p, kbytes);
	memcpy(e->ustack, p + kbytes, ubytes);
	memcpy(e->lua, p + kbytes + ubytes, lbytes);
	return 0;
}

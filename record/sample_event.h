/*
 * sample_event.h - a sample event off the ring buffer, checked and
 * unpacked (record/sample_event.c).
 */
#ifndef LUAPROF_RECORD_SAMPLE_EVENT_H
#define LUAPROF_RECORD_SAMPLE_EVENT_H

#include <stddef.h>

#include "bpf/sampler.h"

int sample_event_unpack(const void *data, size_t size, struct lp_event_sample *e);

#endif

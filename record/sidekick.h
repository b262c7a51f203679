/*
 * sidekick.h - the unwinder kept current during a flush (sidekick.c).
 * Between sidekick_begin() and sidekick_end() a thread consumes the ring
 * buffer: it publishes the mappings of processes that exec'd or whose
 * walks stopped outside known code, and queues every event; sidekick_end()
 * stops it and hands the queued events, in order, to handle.  It returns
 * how many events found no memory (lost).
 */
#ifndef LUAPROF_RECORD_SIDEKICK_H
#define LUAPROF_RECORD_SIDEKICK_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct sidekick;
struct unwinder;
struct maps_table;
struct proc_info;

struct sidekick_stats {
	uint64_t published; /* process mappings published during flushes */
	uint64_t queued;    /* events read during flushes */
};

/* known(ctx, pid): the mappings the recorder last read of pid, or NULL;
 * a re-read keeps the code they held, as procmaps_read_code() does.  The
 * main thread leaves them alone during a flush. */
struct ring_buffer;
/* rb is the caller's, which it does not poll during a flush; its callback
 * hands events to sidekick_event() while the sidekick runs. */
int sidekick_new(struct sidekick **out, struct ring_buffer *rb, struct unwinder *unw,
		 const struct maps_table *(*known)(void *ctx, pid_t pid), void *ctx);
int sidekick_event(void *k, void *data, size_t size);
void sidekick_begin(struct sidekick *k);
uint64_t sidekick_end(struct sidekick *k, int (*handle)(void *ctx, void *data, size_t size),
		      void *ctx);
void sidekick_stats(const struct sidekick *k, struct sidekick_stats *st);
/* While sidekick_end() hands an event over: the mappings (taken: the
 * caller frees them) and the /proc facts of pid as the sidekick read them
 * and gave the walker at that event, if it did.  0, or -ENOENT. */
int sidekick_take_maps(struct sidekick *k, pid_t pid, struct maps_table *out);
int sidekick_info(struct sidekick *k, pid_t pid, struct proc_info *out);
/* A copy of the mappings the sidekick last published of pid during this
 * flush, whatever the event: for a process gone since.  0 or -errno. */
int sidekick_latest_maps(struct sidekick *k, pid_t pid, struct maps_table *out);
void sidekick_free(struct sidekick *k);

#endif

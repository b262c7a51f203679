/*
 * objects.h - the ELF objects a recording hit, embedded for the report
 * (objects.c): identities, symbols and source lines.
 */
#ifndef LUAPROF_RECORD_OBJECTS_H
#define LUAPROF_RECORD_OBJECTS_H

#include <stdint.h>
#include <sys/types.h>

struct maps_table;
struct lp_mapping;
struct trace_writer;

struct object_set;

/* embed = 0: identities only (`record --no-embed`), no symbols. */
struct object_set *object_set_new(int embed);
/* Sets the object id of every file mapping of t (pid's), writing an
 * OBJECT record for each file new to the trace, before the caller's MAPS
 * record that names it. */
void object_set_assign(struct object_set *s, pid_t pid, struct maps_table *t,
		       struct trace_writer *w);
/* Notes the objects of t that addresses (or an object id) fall in, and
 * keeps the addresses, as they are (code addresses, such as the C
 * functions of Lua frames), for their source lines. */
void object_set_note(struct object_set *s, const struct maps_table *t,
		     const uint64_t *addrs, uint32_t n);
/* The same for a user stack, leaf first, each frame's mapping looked up
 * already (maps[i], NULL: in none): the leaf's address is kept as it is,
 * every other one, a return address, less one (the call, as the report
 * looks it up). */
void object_set_note_frames(struct object_set *s, const struct lp_mapping *const *maps,
			    const uint64_t *addrs, uint32_t n);
void object_set_note_id(struct object_set *s, uint64_t id);
/* Writes the SYMTAB and SRCLINES records the addresses noted since the
 * last call need (symtab.c, srclines.c); those of an object still being
 * read (objects_prep.c) wait for the next call, unless last (which waits
 * for them). */
int object_set_write(struct object_set *s, struct trace_writer *w, int last);
/* Objects mapped and embedded, and the symbols embedded of how many
 * their tables hold. */
void object_set_stats(const struct object_set *s, uint64_t *objects,
		      uint64_t *embedded, uint64_t *symbols, uint64_t *of);
/* For record's summary: the source lines embedded, the objects left out
 * in part over a bound, and with `verbose` each object's lines. */
void object_set_print_srclines(const struct object_set *s, int verbose);
void object_set_free(struct object_set *s);

#endif

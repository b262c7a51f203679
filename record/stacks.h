/*
 * stacks.h - stacks interned by content, ids from 1 (stacks.c): each
 * distinct stack is written once as a STACK record, and samples name it.
 */
#ifndef LUAPROF_RECORD_STACKS_H
#define LUAPROF_RECORD_STACKS_H

#include <stdint.h>

struct stack_table;

struct stack_table *stack_table_new(void);
/* Returns the id; *is_new says the caller must emit its definition. */
uint64_t stack_table_intern(struct stack_table *t, uint32_t kind,
			    const uint64_t *addrs, uint32_t depth, int *is_new);
uint64_t stack_table_count(const struct stack_table *t);
uint64_t stack_table_bytes(const struct stack_table *t);
void stack_table_free(struct stack_table *t);

/* Stack kinds of record/ beyond the trace's: Lua frames are interned in
 * the same table, as (kind | link << 8, value, pc) triplets. */
#define STACK_KIND_LUA 3

#endif

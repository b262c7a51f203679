/*
 * kallsyms.h - the kernel symbols that stacks hit, embedded as KSYMS
 * records (kallsyms.c).
 */
#ifndef LUAPROF_RECORD_KALLSYMS_H
#define LUAPROF_RECORD_KALLSYMS_H

#include <stdint.h>

struct trace_writer;

struct ksym_set;

struct ksym_set *ksym_set_new(void);
void ksym_set_note(struct ksym_set *s, const uint64_t *addrs, uint32_t n);
/* Reads /proc/kallsyms, once: 0, or -errno (-ENOENT: it shows no
 * addresses), which ksym_set_write() returns again. */
int ksym_set_load(struct ksym_set *s);
/* Resolves the addresses noted since the last call against
 * /proc/kallsyms and writes one KSYMS record with the symbols they fall in
 * that no earlier record holds.  -ENOENT: kallsyms shows no addresses. */
int ksym_set_write(struct ksym_set *s, struct trace_writer *w);
void ksym_set_free(struct ksym_set *s);

#endif

/*
 * fake_target.h - a target process's memory for the unit tests of what
 * record/ reads from one: regions at chosen addresses, read through the
 * recorder's target_read() (fake_target.c defines it for the whole unit
 * test binary).
 */
#ifndef LUAPROF_TESTS_FAKE_TARGET_H
#define LUAPROF_TESTS_FAKE_TARGET_H

#include <stddef.h>
#include <stdint.h>

/* A zeroed region of size bytes that target_read() sees at addr. */
uint8_t *fake_region(uint64_t addr, size_t size);
/* Forgets every region. */
void fake_regions_free(void);

#endif

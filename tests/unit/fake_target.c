/*
 * fake_target.c - the unit tests' target memory (fake_target.h): the one
 * target_read() the unit test binary has, over regions the tests lay out.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

#include "tests/unit/fake_target.h"

struct region {
	uint64_t addr;
	uint8_t *mem;
	size_t size;
};

static struct region regions[32];
static int nregions;

int target_read(pid_t pid, uint64_t addr, void *buf, size_t len);

int target_read(pid_t pid, uint64_t addr, void *buf, size_t len)
{
	(void)pid;
	for (int i = 0; i < nregions; i++)
		if (addr >= regions[i].addr && addr + len <= regions[i].addr + regions[i].size) {
			memcpy(buf, regions[i].mem + (addr - regions[i].addr), len);
			return 0;
		}
	return -EFAULT;
}

uint8_t *fake_region(uint64_t addr, size_t size)
{
	struct region *r;

	if (nregions == (int)(sizeof(regions) / sizeof(regions[0])))
		abort();
	r = &regions[nregions++];
	r->addr = addr;
	r->size = size;
	r->mem = calloc(1, size);
	if (!r->mem)
		abort();
	return r->mem;
}

void fake_regions_free(void)
{
	while (nregions)
		free(regions[--nregions].mem);
}

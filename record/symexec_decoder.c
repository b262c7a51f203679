/*
 * symexec_decoder.c - the capstone decoder and decoded-instruction cache
 * the instruction-set backends share (symexec_decoder.h says why).
 */
#include <stdlib.h>
#include <string.h>

#include "record/symexec_decoder.h"

struct sx_decoder *sx_decoder_new(cs_arch arch, cs_mode mode, size_t size)
{
	struct sx_decoder *d = calloc(1, sizeof(*d));

	if (!d)
		return NULL;
	if (size < sizeof(uint64_t) || cs_open(arch, mode, &d->cs) != CS_ERR_OK) {
		free(d);
		return NULL;
	}
	cs_option(d->cs, CS_OPT_DETAIL, CS_OPT_ON);
	d->size = size;
	d->insn = cs_malloc(d->cs);
	d->cache = calloc(SX_DECODED, size);
	d->tmp = calloc(1, size);
	if (!d->insn || !d->cache || !d->tmp) {
		sx_decoder_free(d);
		return NULL;
	}
	return d;
}

void sx_decoder_free(void *p)
{
	struct sx_decoder *d = p;

	if (!d)
		return;
	if (d->insn)
		cs_free(d->insn, 1);
	cs_close(&d->cs);
	free(d->cache);
	free(d->tmp);
	free(d);
}

static uint64_t slot_pc(const unsigned char *slot)
{
	uint64_t pc;

	memcpy(&pc, slot, sizeof(pc));
	return pc;
}

const void *sx_decoder_fetch(struct sx_decoder *d, struct sx_ctx *c, uint64_t pc,
			     sx_decode_fn decode, void *h)
{
	uint32_t i = (uint32_t)((pc * 0x9e3779b97f4a7c15ull) >> 48) & (SX_DECODED - 1);

	for (unsigned probe = 0; probe < 32; probe++, i = (i + 1) & (SX_DECODED - 1)) {
		unsigned char *slot = d->cache + (size_t)i * d->size;
		uint64_t at = slot_pc(slot);

		if (at == pc)
			return slot;
		if (!at) {
			if (d->used >= SX_DECODED / 2 * 3 / 2 || decode(c, h, pc, slot))
				break;
			d->used++;
			return slot;
		}
	}
	return decode(c, h, pc, d->tmp) ? NULL : d->tmp;
}

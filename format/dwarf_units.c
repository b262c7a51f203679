/*
 * dwarf_units.c - where a DWARF unit and an abbreviation table end (see
 * dwarf_units.h for why the recorder needs it and why it is in format/).
 */
#include <errno.h>
#include <stddef.h>

#include "format/dwarf_units.h"

#define DW_FORM_implicit_const 0x21

static uint64_t get(const uint8_t *p, int bytes, int be)
{
	uint64_t v = 0;

	for (int i = 0; i < bytes; i++)
		v |= (uint64_t)p[i] << 8 * (be ? bytes - 1 - i : i);
	return v;
}

int lp_dwarf_unit_len(const uint8_t *sec, uint64_t size, uint64_t off, int be,
		      uint64_t *len)
{
	uint64_t n, head = 4;

	if (off > size || size - off < 4)
		return -EINVAL;
	n = get(sec + off, 4, be);
	if (n == 0xffffffffu) {
		if (size - off < 12)
			return -EINVAL;
		n = get(sec + off + 4, 8, be);
		head = 12;
	} else if (n >= 0xfffffff0u) {
		return -EINVAL; /* reserved */
	}
	if (n > size - off - head)
		return -EINVAL;
	*len = head + n;
	return 0;
}

/* Skips one LEB128 number at *at, never past end: 0, or -EINVAL. */
static int skip_leb(const uint8_t *sec, uint64_t end, uint64_t *at, uint64_t *val)
{
	uint64_t v = 0;
	int shift = 0;

	while (*at < end) {
		uint8_t b = sec[(*at)++];

		if (shift < 64)
			v |= (uint64_t)(b & 0x7f) << shift;
		shift += 7;
		if (!(b & 0x80)) {
			if (val)
				*val = v;
			return 0;
		}
	}
	return -EINVAL;
}

int lp_dwarf_abbrev_len(const uint8_t *sec, uint64_t size, uint64_t off,
			uint64_t *len)
{
	uint64_t at = off, code, name, form;

	if (off > size)
		return -EINVAL;
	/* Every pass reads at least one byte: the loop ends by size - off
	 * passes at the latest. */
	for (;;) {
		if (at == size)
			break; /* the section's end closes the table */
		if (skip_leb(sec, size, &at, &code))
			return -EINVAL;
		if (!code)
			break;
		if (skip_leb(sec, size, &at, NULL) || at >= size) /* tag */
			return -EINVAL;
		at++; /* DW_CHILDREN_yes or _no */
		do {
			if (skip_leb(sec, size, &at, &name) || skip_leb(sec, size, &at, &form))
				return -EINVAL;
			if (form == DW_FORM_implicit_const &&
			    skip_leb(sec, size, &at, NULL))
				return -EINVAL;
		} while (name || form);
	}
	*len = at - off;
	return 0;
}

/*
 * dwarf_units.h - the extent of one unit of DWARF inside its section: a
 * compilation unit's abbreviation table in .debug_abbrev, and the length
 * of a unit that starts with a unit_length (a CU in .debug_info, a line
 * program in .debug_line).
 *
 * The recorder embeds an object's DWARF one compilation unit at a time
 * (record/debug_units.c), so it must know where each piece a CU uses
 * ends.  These are plain parsers over bytes, in format/ so that the unit
 * tests check them without the recorder.  The bytes come from debug
 * files the profiled program's owner may have written: every read is
 * bounded by the section's end, and every loop advances.
 */
#ifndef LUAPROF_FORMAT_DWARF_UNITS_H
#define LUAPROF_FORMAT_DWARF_UNITS_H

#include <stdint.h>

/*
 * The length in bytes, its unit_length field included, of the unit that
 * starts at `off` of a section of `size` bytes (32-bit DWARF: 4 + length;
 * 64-bit: 12 + length), in byte order `be` (1: big-endian).  0, or
 * -EINVAL when the field or the unit runs past the section's end or uses
 * a reserved length.
 */
int lp_dwarf_unit_len(const uint8_t *sec, uint64_t size, uint64_t off, int be,
		      uint64_t *len);

/*
 * The length of the abbreviation table that starts at `off` of
 * .debug_abbrev: its entries (code, tag, children flag, then attribute
 * and form pairs, with a constant after DW_FORM_implicit_const, ended by
 * 0, 0) up to and including the 0 code that ends the table.  0, or
 * -EINVAL when the table runs past the section's end (a table that ends
 * exactly at the section's end without its 0 code is accepted: libdw
 * reads it so too).
 */
int lp_dwarf_abbrev_len(const uint8_t *sec, uint64_t size, uint64_t off,
			uint64_t *len);

#endif

/*
 * debuginfo.c - embeds the DWARF of an object samples hit, so that a
 * report can give its native frames source lines and inlined functions on
 * any machine, without the files.
 *
 * The DWARF comes from the object itself or its separate debug file,
 * found and checked by format/debuginfo.c (the report uses the same rule
 * for --no-embed traces).  Only the sections lines and inlines need are
 * written, decompressed, as DEBUG records of at most LP_DEBUG_PIECE bytes
 * each (docs/format.md §3.16), and of the three large ones only what the
 * units samples hit use: a debug file describes the whole library, a
 * profile hits a few dozen of its functions (libc's DWARF is 8.6 MiB).
 * This file writes, when an object is first embedded, the small sections
 * whole and the header of every compilation unit of .debug_info, at its
 * true offset: with the rest of a unit zero-filled by the report, libdw
 * still walks the units from the first, and sees a unit not embedded as
 * one whose first entry is a null one.  The units themselves, with their
 * abbreviation tables and line programs, follow as samples hit them
 * (debug_units.c), each section left sparse.
 *
 * DWARF can be large, so it is bounded: an object whose first records
 * alone are over DEBUG_MAX_EMBED_OBJECT, or would take the recording past
 * DEBUG_MAX_TRACE, is left out, with a DEBUG note saying so and how much,
 * so that `info` can tell a trace without DWARF from one whose DWARF was
 * refused; an object whose units reach a bound later gets the same note.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "record/recorder.h"


void debug_budget_init(struct debug_budget *b)
{
	memset(b, 0, sizeof(*b));
	b->left = DEBUG_MAX_TRACE;
}

int debuginfo_skip(struct trace_writer *w, const struct debug_object *d,
		   struct debug_budget *b, uint32_t why, uint64_t bytes)
{
	struct lp_record rec;

	b->skipped++;
	if (b->nskip < DEBUG_SKIPS_KEPT) {
		snprintf(b->skips[b->nskip].path, sizeof(b->skips[0].path), "%s", d->path);
		b->skips[b->nskip].bytes = bytes;
		b->skips[b->nskip].why = why;
		b->nskip++;
	}
	memset(&rec, 0, sizeof(rec));
	rec.type = LP_REC_DEBUG;
	rec.u.debug = (struct lp_debug){
		.object = d->id, .flags = why, .eclass = d->s.eclass,
		.edata = d->s.edata, .emachine = d->s.emachine, .name = "",
		/* The note's size is bounded like a section's; the real total
		 * may be larger still. */
		.size = bytes < LP_DEBUG_MAX_OBJECT ? bytes : LP_DEBUG_MAX_OBJECT,
	};
	return trace_write(w, &rec);
}

int debuginfo_write(struct trace_writer *w, const struct debug_object *d,
		    int sect, uint64_t off, uint64_t len)
{
	const struct lp_debug_sections *s = &d->s;
	struct lp_record rec;
	int err = 0;

	if (off > s->size[sect] || len > s->size[sect] - off)
		return 0; /* the caller checked; never write past a section */
	for (uint64_t at = off; !err && at < off + len; at += LP_DEBUG_PIECE) {
		uint64_t n = off + len - at;

		memset(&rec, 0, sizeof(rec));
		rec.type = LP_REC_DEBUG;
		rec.u.debug = (struct lp_debug){
			.object = d->id, .eclass = s->eclass, .edata = s->edata,
			.emachine = s->emachine, .name = lp_debug_section_names[sect],
			.size = s->size[sect], .offset = at,
			.len = (uint32_t)(n < LP_DEBUG_PIECE ? n : LP_DEBUG_PIECE),
			.data = s->data[sect] + at,
		};
		err = trace_write(w, &rec);
	}
	return err;
}

void debug_object_free(struct debug_object *d)
{
	if (!d)
		return;
	if (d->dw)
		dwarf_end(d->dw);
	lp_debug_file_close(&d->dbg);
	lp_debug_file_close(&d->obj);
	free(d->segs);
	free(d->cus.v);
	free(d->abbrevs.v);
	free(d->lines.v);
	free(d);
}

/*
 * The first records of an object: the whole sections and the header of
 * every unit.  With w NULL only counts their bytes, so that the budget is
 * checked before anything is written; with w, writes them.  libdw stops
 * at a unit it cannot read; so do we, and the units past it cannot be
 * found by the report either.
 */
static int first_records(struct trace_writer *w, struct debug_object *d,
			 uint64_t *bytes)
{
	uint64_t off = 0, next;
	size_t hsize;
	int err = 0;

	*bytes = 0;
	/* Written whole: small, and read by offset from any unit. */
	for (int i = LP_DEBUG_UNIT_SECTS; !err && i < LP_DEBUG_NSECT; i++) {
		*bytes += d->s.size[i];
		if (w)
			err = debuginfo_write(w, d, i, 0, d->s.size[i]);
	}
	while (!err && dwarf_next_unit(d->dw, off, &next, &hsize, NULL, NULL, NULL,
				       NULL, NULL, NULL) == 0 && next > off) {
		*bytes += hsize;
		if (w)
			err = debuginfo_write(w, d, LP_DEBUG_INFO, off, hsize);
		off = next;
	}
	return err;
}

int debuginfo_embed(int fd, const char *path, uint64_t id,
		    const struct lp_objseg *segs, size_t nsegs,
		    struct debug_budget *b, struct trace_writer *w,
		    struct debug_object **out)
{
	struct debug_object *d;
	Elf *elf;
	uint64_t need;
	int err = 0;

	*out = NULL;
	if (elf_version(EV_CURRENT) == EV_NONE)
		return 0;
	d = calloc(1, sizeof(*d));
	if (!d)
		return -ENOMEM;
	d->id = id;
	d->obj.fd = d->dbg.fd = -1;
	snprintf(d->path, sizeof(d->path), "%s", path);
	/* Read, not mapped: a file truncated under us must not SIGBUS. */
	d->obj.elf = elf_begin(fd, ELF_C_READ, NULL);
	if (!d->obj.elf || elf_kind(d->obj.elf) != ELF_K_ELF)
		goto cleanup;
	elf = d->obj.elf;
	if (!lp_has_debug_info(elf)) {
		if (lp_debug_file_find(elf, path, "", &d->dbg))
			goto cleanup; /* no DWARF: nothing to embed or say */
		elf = d->dbg.elf;
	}
	/* Unusable DWARF is no DWARF, for us as for the report's libdw. */
	if (lp_debug_sections_read(elf, LP_DEBUG_MAX_OBJECT, &d->s) ||
	    d->s.total > LP_DEBUG_MAX_OBJECT)
		goto cleanup;
	d->dw = dwarf_begin_elf(elf, DWARF_C_READ, NULL);
	if (!d->dw)
		goto cleanup;
	d->be = d->s.edata == ELFDATA2MSB;
	first_records(NULL, d, &need);
	if (need > DEBUG_MAX_EMBED_OBJECT || need > b->left) {
		err = debuginfo_skip(w, d, b, need > DEBUG_MAX_EMBED_OBJECT ?
				     LP_DEBUG_SKIPPED_SIZE : LP_DEBUG_SKIPPED_BUDGET,
				     d->s.total);
		goto cleanup;
	}
	d->segs = malloc((nsegs ? nsegs : 1) * sizeof(*segs));
	if (!d->segs) {
		err = -ENOMEM;
		goto cleanup;
	}
	memcpy(d->segs, segs, nsegs * sizeof(*segs));
	d->nsegs = nsegs;
	err = first_records(w, d, &need);
	if (err)
		goto cleanup;
	b->left -= need;
	b->objects++;
	b->bytes += need;
	d->bytes = need;
	*out = d;
	return 0;
cleanup:
	debug_object_free(d);
	return err;
}

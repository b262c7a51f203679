/*
 * debuginfo.c - embeds the DWARF of an object samples hit, so that a
 * report can give its native frames source lines and inlined functions on
 * any machine, without the files.
 *
 * The DWARF comes from the object itself or its separate debug file,
 * found and checked by format/debuginfo.c (the report uses the same rule
 * for --no-embed traces).  Only the sections lines and inlines need are
 * written, decompressed, as DEBUG records of at most LP_DEBUG_PIECE bytes
 * each (docs/format.md §3.16).  DWARF can be large, so it is bounded:
 * an object with more than DEBUG_MAX_EMBED_OBJECT bytes of those sections,
 * or one that would take the recording past DEBUG_MAX_TRACE in all, is
 * left out, with a DEBUG note saying so and how much, so that `info` can
 * tell a trace without DWARF from one whose DWARF was refused.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "format/debuginfo.h"
#include "record/recorder.h"

void debug_budget_init(struct debug_budget *b)
{
	memset(b, 0, sizeof(*b));
	b->left = DEBUG_MAX_TRACE;
}

static int write_note(struct trace_writer *w, uint64_t id, uint32_t flags,
		      const struct lp_debug_sections *s)
{
	struct lp_record rec;

	memset(&rec, 0, sizeof(rec));
	rec.type = LP_REC_DEBUG;
	rec.u.debug = (struct lp_debug){
		.object = id, .flags = flags, .eclass = s->eclass, .edata = s->edata,
		.emachine = s->emachine, .name = "",
		/* The note's size is bounded like a section's; the real total
		 * may be larger still. */
		.size = s->total < LP_DEBUG_MAX_OBJECT ? s->total : LP_DEBUG_MAX_OBJECT,
	};
	return trace_write(w, &rec);
}

static int write_sections(struct trace_writer *w, uint64_t id,
			  const struct lp_debug_sections *s)
{
	struct lp_record rec;
	int err = 0;

	for (int i = 0; i < LP_DEBUG_NSECT && !err; i++) {
		if (!s->size[i])
			continue; /* absent, or empty: the same to a reader */
		for (uint64_t off = 0; !err && off < s->size[i]; off += LP_DEBUG_PIECE) {
			uint64_t n = s->size[i] - off;

			memset(&rec, 0, sizeof(rec));
			rec.type = LP_REC_DEBUG;
			rec.u.debug = (struct lp_debug){
				.object = id, .eclass = s->eclass, .edata = s->edata,
				.emachine = s->emachine,
				.name = lp_debug_section_names[i], .size = s->size[i],
				.offset = off, .len = (uint32_t)(n < LP_DEBUG_PIECE ? n : LP_DEBUG_PIECE),
				.data = s->data[i] + off,
			};
			err = trace_write(w, &rec);
		}
	}
	return err;
}

int debuginfo_embed(int fd, const char *path, uint64_t id,
		    struct debug_budget *b, struct trace_writer *w)
{
	struct lp_debug_file obj = { .fd = -1 }, dbg = { .fd = -1 };
	struct lp_debug_sections s;
	Elf *elf;
	int err;

	if (elf_version(EV_CURRENT) == EV_NONE)
		return 0;
	/* Read, not mapped: a file truncated under us must not SIGBUS. */
	obj.elf = elf_begin(fd, ELF_C_READ, NULL);
	if (!obj.elf || elf_kind(obj.elf) != ELF_K_ELF)
		goto cleanup;
	elf = obj.elf;
	if (!lp_has_debug_info(elf)) {
		if (lp_debug_file_find(elf, path, "", &dbg))
			goto cleanup; /* no DWARF: nothing to embed or say */
		elf = dbg.elf;
	}
	err = lp_debug_sections_read(elf, LP_DEBUG_MAX_OBJECT, &s);
	if (err)
		goto cleanup; /* unusable DWARF is no DWARF */
	if (s.total > DEBUG_MAX_EMBED_OBJECT || s.total > b->left) {
		uint32_t why = s.total > DEBUG_MAX_EMBED_OBJECT ? LP_DEBUG_SKIPPED_SIZE :
			       LP_DEBUG_SKIPPED_BUDGET;

		b->skipped++;
		if (b->nskip < DEBUG_SKIPS_KEPT) {
			snprintf(b->skips[b->nskip].path, sizeof(b->skips[0].path), "%s", path);
			b->skips[b->nskip].bytes = s.total;
			b->skips[b->nskip].why = why;
			b->nskip++;
		}
		err = write_note(w, id, why, &s);
		goto out;
	}
	err = write_sections(w, id, &s);
	if (!err) {
		b->left -= s.total;
		b->objects++;
		b->bytes += s.total;
	}
	goto out;
cleanup:
	err = 0;
out:
	if (obj.elf)
		elf_end(obj.elf);
	lp_debug_file_close(&dbg);
	return err;
}

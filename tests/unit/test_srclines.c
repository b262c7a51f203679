/*
 * test_srclines.c - source lines from the recorder to the report, without
 * root or a compiler: the unit test binary (built with -g) is its own
 * fixture.  record/srclines.c resolves file offsets of this binary into
 * SRCLINES records of a real trace, as a recording does at a flush; the
 * report (report/objects.c) must then answer the return address of a
 * call made from inside an always-inlined function with that function
 * [inlined] at the call's line, inside its caller at the line that
 * inlined it, and exactly what it answers from the binary itself when
 * the trace embeds nothing (--no-embed).  An offset no DWARF covers gives
 * no lines; the bounds per object and per trace give a note, and nothing
 * more for the object.
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "format/trace.h"
#include "record/srclines.h"
#include "report/objects.h"
#include "report/symbolize.h"
#include "tests/unit/unit.h"

#define MAX_SEGS 16

static volatile int sl_line_call, sl_line_inline;
static void *volatile sl_sink;

__attribute__((noinline, used)) void *sl_callee(void)
{
	return __builtin_return_address(0);
}

/* The call is not a tail call: the store after it keeps it a call whose
 * return address lies in the inlined copy of this function. */
static inline __attribute__((always_inline)) void *sl_inlined(void)
{
	void *r = sl_callee(); sl_line_call = __LINE__;

	sl_sink = r;
	return r;
}

__attribute__((noinline, used)) void *sl_outer(void)
{
	void *r = sl_inlined(); sl_line_inline = __LINE__;

	sl_sink = r;
	return r;
}

/* This binary's PT_LOAD segments, as the recorder reads them. */
static size_t self_segments(int fd, struct lp_objseg *segs)
{
	size_t nph, n = 0;
	Elf *elf;

	elf_version(EV_CURRENT);
	elf = elf_begin(fd, ELF_C_READ, NULL);
	if (!elf || elf_getphdrnum(elf, &nph))
		return 0;
	for (size_t i = 0; i < nph && n < MAX_SEGS; i++) {
		GElf_Phdr ph;

		if (gelf_getphdr(elf, (int)i, &ph) && ph.p_type == PT_LOAD)
			segs[n++] = (struct lp_objseg){ ph.p_offset, ph.p_filesz, ph.p_vaddr };
	}
	elf_end(elf);
	return n;
}

/* The file offset of the link-time address vaddr. */
static uint64_t file_offset(const struct lp_objseg *segs, size_t n, uint64_t vaddr)
{
	for (size_t i = 0; i < n; i++)
		if (vaddr >= segs[i].vaddr && vaddr - segs[i].vaddr < segs[i].filesz)
			return vaddr - segs[i].vaddr + segs[i].offset;
	return UINT64_MAX;
}

static const char *base(const char *path)
{
	const char *s = path ? strrchr(path, '/') : NULL;

	return s ? s + 1 : path ? path : "";
}

static int str_same(const char *a, const char *b)
{
	return (!a && !b) || (a && b && !strcmp(a, b));
}

struct fixture {
	int fd;
	struct lp_objseg segs[MAX_SEGS];
	size_t nsegs;
	uint64_t vaddr[4]; /* the inlined call, sl_callee, main, the ELF header */
	uint8_t ident[LP_OBJID_MAX];
	uint32_t kind, len;
	uint64_t size;
};

int main(int argc, char **argv); /* in main.c: another unit */

static int fixture_open(struct fixture *fx)
{
	Dl_info info;
	void *ret = sl_outer();

	if (!dladdr(ret, &info) || !info.dli_fbase)
		return -1;
	fx->fd = open("/proc/self/exe", O_RDONLY | O_CLOEXEC);
	if (fx->fd < 0)
		return -1;
	fx->nsegs = self_segments(fx->fd, fx->segs);
	/* A PIE's first PT_LOAD is at 0: its link-time address is the
	 * runtime one less the load base.  The call is the byte before. */
	fx->vaddr[0] = (uint64_t)((uintptr_t)ret - (uintptr_t)info.dli_fbase) - 1;
	fx->vaddr[1] = (uint64_t)((uintptr_t)sl_callee - (uintptr_t)info.dli_fbase);
	fx->vaddr[2] = (uint64_t)((uintptr_t)main - (uintptr_t)info.dli_fbase);
	fx->vaddr[3] = 0x10;
	return lp_objid_read(fx->fd, &fx->kind, fx->ident, &fx->len, &fx->size);
}

/* Writes object 1 (symbols embedded: no symbols, the segments) with the
 * lines srclines_write() gives for offs, and object 2, the same file, with
 * nothing embedded, to the trace at path. */
static int write_trace(const char *path, struct fixture *fx, const uint64_t *offs, size_t n,
		       struct srclines_count *cnt, uint64_t *left)
{
	struct lp_record obj = { .type = LP_REC_OBJECT };
	struct lp_record st = { .type = LP_REC_SYMTAB };
	struct srclines_object *so = NULL;
	struct trace_writer *w;
	uint64_t copy[8];
	int err;

	unlink(path); /* the writer creates a new file only */
	if (n > sizeof(copy) / sizeof(copy[0]) || trace_writer_open(&w, path, LP_CODEC_ZLIB))
		return -1;
	obj.u.object = (struct lp_object){ 1, "/proc/self/exe", fx->kind, fx->len,
					   fx->ident, fx->size };
	st.u.symtab = (struct lp_symtab){ .object = 1, .nseg = (uint32_t)fx->nsegs,
					  .segs = fx->segs };
	err = trace_write(w, &obj) ?: trace_write(w, &st);
	obj.u.object.id = 2;
	err = err ?: trace_write(w, &obj);
	err = err ?: srclines_open(&so, fx->fd, "/proc/self/exe", 1, fx->segs, fx->nsegs);
	if (!err && !so)
		err = -ENOENT;
	/* srclines_write() reuses the array: the caller's stays as it was. */
	memcpy(copy, offs, n * sizeof(*offs));
	err = err ?: srclines_write(so, copy, n, cnt, left, w);
	srclines_free(so);
	return trace_writer_close(w, NULL) ?: err;
}

TEST(srclines_recorded_then_reported)
{
	const char *path = "srclines.lp";
	char full[4096];
	struct fixture fx;
	struct srclines_count cnt = { 0 };
	struct symbolizer *sym = NULL;
	struct objects *o = NULL;
	struct sym_result res;
	uint64_t offs[6], left = SRCLINES_MAX_TRACE;
	struct src_chain c, local;

	snprintf(full, sizeof(full), "%s/%s", unit_tmpdir(), path);
	CHECK(fixture_open(&fx) == 0 && fx.nsegs);
	for (int i = 0; i < 4; i++)
		offs[i] = file_offset(fx.segs, fx.nsegs, fx.vaddr[i]);
	offs[4] = offs[0]; /* hit twice before a flush: one chain */
	offs[5] = UINT64_MAX >> 20; /* in no segment */
	CHECK(offs[0] != UINT64_MAX && offs[3] != UINT64_MAX);
	CHECK(write_trace(full, &fx, offs, 6, &cnt, &left) == 0);
	/* The inlined call, sl_callee and main; not the ELF header. */
	CHECK(cnt.chains == 3 && cnt.bytes > 0 && !cnt.skipped);
	CHECK(left == SRCLINES_MAX_TRACE - cnt.bytes);

	CHECK(symbolizer_new(&sym, "test") == 0);
	CHECK(objects_new(&o, sym, NULL, "test") == 0);
	CHECK(objects_preload(o, full) == 0);
	/* Resolves the objects: 1 by its table, 2 by the file. */
	CHECK(objects_lookup(o, 1, "/proc/self/exe", offs[1], &res) == 0 && res.elf);
	CHECK(res.addr == fx.vaddr[1]);
	CHECK(objects_lookup(o, 2, "/proc/self/exe", offs[1], &res) == 0 && res.elf);

	CHECK(objects_srcline(o, 1, fx.vaddr[0], &c) == 0 && c.n == 2);
	CHECK(c.f[0].func && !strcmp(c.f[0].func, "sl_inlined"));
	CHECK(!strcmp(base(c.f[0].file), "test_srclines.c"));
	CHECK(c.f[0].line == (uint32_t)sl_line_call);
	CHECK(c.f[1].func && !strcmp(c.f[1].func, "sl_outer"));
	CHECK(!strcmp(base(c.f[1].file), "test_srclines.c"));
	CHECK(c.f[1].line == (uint32_t)sl_line_inline);
	CHECK(objects_srcline(o, 1, fx.vaddr[1], &c) == 0 && c.n == 1);
	CHECK(c.f[0].func && !strcmp(c.f[0].func, "sl_callee"));
	/* What the report reads from the file itself, frame for frame. */
	for (int i = 0; i < 4; i++) {
		CHECK(objects_srcline(o, 1, fx.vaddr[i], &c) == 0);
		CHECK(objects_srcline(o, 2, fx.vaddr[i], &local) == 0);
		CHECK(c.n == local.n && (i < 3) == (c.n > 0));
		for (uint32_t k = 0; k < c.n; k++)
			CHECK(str_same(c.f[k].func, local.f[k].func) &&
			      str_same(c.f[k].file, local.f[k].file) &&
			      c.f[k].line == local.f[k].line);
	}
	/* An address the recorder did not resolve has no lines, though the
	 * DWARF has them: the trace's answers, and only them. */
	CHECK(objects_srcline(o, 1, fx.vaddr[1] + 1, &c) == 0 && c.n == 0);
	CHECK(objects_srcline(o, 2, fx.vaddr[1] + 1, &c) == 0 && c.n == 1);
	objects_free(o);
	symbolizer_free(sym);
	close(fx.fd);
}

/* Reads the SRCLINES records of object 1: chains and the notes' flags. */
static void read_lines(const char *path, uint64_t *chains, uint32_t *flags, int *notes)
{
	struct trace_reader *r;
	struct lp_record rec;
	char msg[64];

	*chains = *flags = *notes = 0;
	if (trace_reader_open(&r, path, msg, sizeof(msg)))
		return;
	while (trace_reader_next(r, &rec) == 1) {
		if (rec.type != LP_REC_SRCLINES || rec.u.srclines.object != 1)
			continue;
		*chains += rec.u.srclines.nchain;
		*flags |= rec.u.srclines.flags;
		*notes += !!rec.u.srclines.flags;
	}
	trace_reader_close(r);
}

TEST(srclines_bounds_leave_a_note)
{
	char full[4096];
	struct fixture fx;
	struct srclines_count cnt = { 0 };
	uint64_t offs[3], left = 20, chains;
	uint32_t flags;
	int notes;

	snprintf(full, sizeof(full), "%s/bounds.lp", unit_tmpdir());
	CHECK(fixture_open(&fx) == 0 && fx.nsegs);
	for (int i = 0; i < 3; i++)
		offs[i] = file_offset(fx.segs, fx.nsegs, fx.vaddr[i]);
	/* 20 bytes left in the trace: no chain fits with a record's head. */
	CHECK(write_trace(full, &fx, offs, 3, &cnt, &left) == 0);
	CHECK(cnt.skipped == LP_SRCLINES_SKIPPED_BUDGET && cnt.chains == 0);
	read_lines(full, &chains, &flags, &notes);
	CHECK(chains == 0 && flags == LP_SRCLINES_SKIPPED_BUDGET && notes == 1);
	/* An object near its own bound, short of the three chains' size by
	 * less than the last chain takes: the first goes in, then the note,
	 * and nothing after it. */
	cnt = (struct srclines_count){ 0 };
	left = SRCLINES_MAX_TRACE;
	CHECK(write_trace(full, &fx, offs, 3, &cnt, &left) == 0 && cnt.chains == 3);
	cnt = (struct srclines_count){ .bytes = SRCLINES_MAX_OBJECT - 40 - (cnt.bytes - 10) };
	CHECK(write_trace(full, &fx, offs, 3, &cnt, &left) == 0);
	CHECK(cnt.skipped == LP_SRCLINES_SKIPPED_SIZE && cnt.chains >= 1 && cnt.chains < 3);
	read_lines(full, &chains, &flags, &notes);
	CHECK(chains == cnt.chains && flags == LP_SRCLINES_SKIPPED_SIZE && notes == 1);
	/* Once cut, an object resolves nothing more. */
	chains = cnt.chains;
	CHECK(write_trace(full, &fx, offs, 3, &cnt, &left) == 0);
	CHECK(cnt.chains == chains);
	close(fx.fd);
}

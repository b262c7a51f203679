/*
 * test_symtab.c - the symbols a recording embeds (record/symtab.c): only
 * those the addresses samples hit need, yet a report must name every hit
 * address exactly as the whole table would.  Two ways: a small table
 * built to hold each case the lookup rule has (sizes, no sizes, the last
 * symbol, gaps past a function's end, a function with more nested
 * symbols than the rule looks back over), checked address by address
 * with random subsets; and real objects (this test binary, libc), whose
 * traces, one embedding the whole table as older recorders did and one
 * the subset, must give byte-identical reports.
 */
#include <dlfcn.h>
#include <fcntl.h>
#include <gelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lib/elfsyms.h"
#include "record/symtab.h"
#include "report/objects.h"
#include "tests/unit/report_test.h"

#define OBJ_ID 1
#define OBJ_PATH "/nonexistent/libsym.so"

/* An OBJECT record for OBJ_ID. */
static int write_object(struct trace_writer *w, const char *path)
{
	static const uint8_t bid[] = { 1, 2, 3, 4 };
	struct lp_record r = { .type = LP_REC_OBJECT };

	r.u.object = (struct lp_object){ OBJ_ID, path, LP_OBJID_BUILD_ID,
					 sizeof(bid), bid, 1 };
	return trace_write(w, &r);
}

/* A trace of the whole table, as recorders before subsets wrote it. */
static int write_whole(const char *file, const char *path,
		       const struct lp_objseg *segs, size_t nsegs,
		       const struct elf_fsym *v, size_t n)
{
	struct lp_objsym *syms = calloc(n ? n : 1, sizeof(*syms));
	struct trace_writer *w = rt_open(file);
	struct lp_record r = { .type = LP_REC_SYMTAB };
	int err;

	if (!syms || !w)
		return -1;
	for (size_t i = 0; i < n; i++)
		syms[i] = (struct lp_objsym){ v[i].addr, v[i].size, v[i].name };
	r.u.symtab = (struct lp_symtab){ OBJ_ID, (uint32_t)nsegs, segs,
					 (uint32_t)n, syms };
	err = write_object(w, path) ?: trace_write(w, &r);
	err = trace_writer_close(w, NULL) ?: err;
	free(syms);
	return err;
}

/* What a report reads from a trace: the object's names. */
static struct objects *load(const char *file, struct symbolizer **sym)
{
	struct objects *o = NULL;

	if (symbolizer_new(sym, "test") || objects_new(&o, *sym, NULL, "test"))
		return NULL;
	if (objects_preload(o, file)) {
		objects_free(o);
		return NULL;
	}
	return o;
}

static void unload(struct objects *o, struct symbolizer *sym)
{
	objects_free(o);
	symbolizer_free(sym);
}

/* Whether file offset off reads the same from both. */
static int same_name(struct objects *a, struct objects *b, uint64_t off)
{
	struct sym_result ra, rb;

	if (objects_lookup(a, OBJ_ID, OBJ_PATH, off, &ra) ||
	    objects_lookup(b, OBJ_ID, OBJ_PATH, off, &rb))
		return 0;
	if (ra.elf != rb.elf || ra.addr != rb.addr || !ra.func != !rb.func)
		return 0;
	return !ra.func || !strcmp(ra.func, rb.func);
}

#define F(a, s, n) { a, s, n, sizeof(n) - 1 }
/* Every case of the lookup rule, from vaddr 0x1000 (file offset 0). */
static const struct elf_fsym cases[] = {
	F(0x1000, 0x10, "sized"),     /* then a gap to 0x1020 */
	F(0x1020, 0, "unsized"),      /* covers up to 0x1040 */
	F(0x1040, 0x100, "outer"),    /* holds five nested ones */
	F(0x1050, 0x8, "in1"),
	F(0x1060, 0x8, "in2"),
	F(0x1070, 0x8, "in3"),
	F(0x1080, 0x8, "in4"),        /* past it, outer is 4 back: hidden */
	F(0x1090, 0, "in5_unsized"),  /* covers up to 0x10a0, inside outer */
	F(0x10a0, 0x10, "after_in"),  /* ends at 0x10b0: outer is 3 back */
	F(0x1200, 0x4, "small"),
	F(0x1300, 0, "last_unsized"), /* covers to the end */
};
#undef F

TEST(symtab_subset_names_as_the_whole_table)
{
	static const struct lp_objseg segs[] = { { 0, 0x2000, 0x1000 } };
	const size_t n = sizeof(cases) / sizeof(cases[0]);
	const char *whole = rt_path("whole.lp"), *part = rt_path("part.lp");
	struct symbolizer *ws = NULL, *ps = NULL;
	struct objects *wo, *po;
	unsigned seed = 1;

	CHECK(write_whole(whole, OBJ_PATH, segs, 1, cases, n) == 0);
	CHECK((wo = load(whole, &ws)) != NULL);
	/* Random handfuls of hit addresses, each embedded alone. */
	for (int round = 0; round < 300; round++) {
		uint64_t offs[4];
		struct obj_symtab *t = NULL;
		struct trace_writer *w = rt_open(part);
		uint64_t written, total;

		CHECK(w && obj_symtab_new(&t, segs, 1, cases, n) == 0);
		for (int k = 0; k < 4; k++) {
			seed = seed * 1103515245u + 12345u;
			offs[k] = (seed >> 8) % 0x400; /* vaddrs 0x1000 to 0x1400 */
			obj_symtab_need(t, offs[k]);
		}
		CHECK(write_object(w, OBJ_PATH) == 0);
		CHECK(obj_symtab_write(t, OBJ_ID, w) == 0);
		obj_symtab_counts(t, &written, &total);
		CHECK(written <= 4 * LP_SYM_LOOKBACK && total == n);
		obj_symtab_free(t);
		CHECK(trace_writer_close(w, NULL) == 0);
		CHECK((po = load(part, &ps)) != NULL);
		for (int k = 0; k < 4; k++) {
			if (!same_name(wo, po, offs[k]))
				fprintf(stderr, "offset 0x%llx differs\n",
					(unsigned long long)offs[k]);
			CHECK(same_name(wo, po, offs[k]));
		}
		unload(po, ps);
	}
	unload(wo, ws);
}

/* The test binary's and libc's mappings, stacks of one address each
 * every `step` bytes of their code, a sample of each, and the object's
 * symbols: whole or only those the addresses need. */
struct real_obj {
	const char *path;
	struct lp_mapping m; /* its executable mapping */
	struct lp_objseg segs[16];
	size_t nsegs;
	struct elf_fsym *syms;
	size_t nsyms;
	Elf *elf;
	int fd;
};

static int open_real(struct real_obj *r, const void *code)
{
	char line[512], path[256];
	unsigned long long start, end, pgoff;
	FILE *f = fopen("/proc/self/maps", "r");
	size_t nph;

	memset(r, 0, sizeof(*r));
	r->fd = -1;
	while (f && fgets(line, sizeof(line), f)) {
		char perms[8];

		if (sscanf(line, "%llx-%llx %7s %llx %*s %*s %255s", &start, &end, perms,
			   &pgoff, path) == 5 && perms[2] == 'x' &&
		    start <= (uintptr_t)code && (uintptr_t)code < end) {
			r->m = (struct lp_mapping){ start, end, pgoff,
						    LP_PROT_READ | LP_PROT_EXEC, 0,
						    NULL, OBJ_ID };
			r->path = strdup(path);
		}
	}
	if (f)
		fclose(f);
	if (!r->path || (r->fd = open(r->path, O_RDONLY)) < 0)
		return -1;
	r->m.path = r->path;
	elf_version(EV_CURRENT);
	r->elf = elf_begin(r->fd, ELF_C_READ_MMAP, NULL);
	if (!r->elf || elf_getphdrnum(r->elf, &nph))
		return -1;
	for (size_t i = 0; i < nph && r->nsegs < 16; i++) {
		GElf_Phdr ph;

		if (gelf_getphdr(r->elf, (int)i, &ph) && ph.p_type == PT_LOAD)
			r->segs[r->nsegs++] = (struct lp_objseg){ ph.p_offset,
								  ph.p_filesz, ph.p_vaddr };
	}
	return elf_function_symbols(r->elf, &r->syms, &r->nsyms);
}

static void close_real(struct real_obj *r)
{
	free(r->syms);
	if (r->elf)
		elf_end(r->elf);
	if (r->fd >= 0)
		close(r->fd);
	free((void *)r->path);
}

/* The trace of r's code hit every `step` bytes; its symbols whole or a
 * subset.  Returns the file's size, 0 on failure. */
static long write_real(const char *file, struct real_obj *r, uint64_t step,
		       int subset)
{
	struct trace_writer *w = rt_open(file);
	struct obj_symtab *t = NULL;
	uint64_t id = 1, time = 0;
	struct stat st;
	int err;

	if (!w)
		return 0;
	err = write_object(w, r->path) ?: rt_maps(w, 100, LP_MAPS_REPLACE, &r->m, 1);
	for (uint64_t a = r->m.start; !err && a < r->m.end; a += step, id++)
		err = rt_stack(w, id, LP_STACK_USER, &a, 1) ?:
		      rt_samples(w, &time, 100, 100, 0, id, 1);
	if (!err && subset) {
		err = obj_symtab_new(&t, r->segs, r->nsegs, r->syms, r->nsyms);
		for (uint64_t a = r->m.start; !err && a < r->m.end; a += step)
			obj_symtab_need(t, a - r->m.start + r->m.pgoff);
		err = err ?: obj_symtab_write(t, OBJ_ID, w);
		obj_symtab_free(t);
	} else if (!err) {
		struct lp_objsym *v = calloc(r->nsyms + 1, sizeof(*v));
		struct lp_record rec = { .type = LP_REC_SYMTAB };

		for (size_t i = 0; v && i < r->nsyms; i++)
			v[i] = (struct lp_objsym){ r->syms[i].addr, r->syms[i].size,
						   r->syms[i].name };
		rec.u.symtab = (struct lp_symtab){ OBJ_ID, (uint32_t)r->nsegs, r->segs,
						   (uint32_t)r->nsyms, v };
		err = v ? trace_write(w, &rec) : -1;
		free(v);
	}
	err = trace_writer_close(w, NULL) ?: err;
	return err || stat(file, &st) ? 0 : (long)st.st_size;
}

/* Each format's report of the whole table's trace and of the subset's,
 * written in turn to one path (the path is in some reports). */
static void reports_agree(const void *code, uint64_t step)
{
	static const char *const formats[] = { "folded", "top", "callgraph" };
	const char *file = rt_path("real.lp");
	char *whole[3] = { 0 };
	struct real_obj r;
	long wsize, psize;

	CHECK(open_real(&r, code) == 0 && r.nsyms > 0);
	CHECK((wsize = write_real(file, &r, step, 0)) > 0);
	for (size_t i = 0; i < 3; i++)
		CHECK(rt_run(cmd_report, &whole[i], NULL, "report", "--format",
			     formats[i], file, NULL) == 0 && whole[i]);
	CHECK((psize = write_real(file, &r, step, 1)) > 0);
	for (size_t i = 0; i < 3; i++) {
		char *part = NULL;

		CHECK(rt_run(cmd_report, &part, NULL, "report", "--format", formats[i],
			     file, NULL) == 0 && part);
		if (strcmp(whole[i], part))
			fprintf(stderr, "%s: %s differs from the whole table's\n",
				r.path, formats[i]);
		CHECK(strlen(part) > 100 && !strcmp(whole[i], part));
		free(part);
		free(whole[i]);
	}
	close_real(&r);
}

/* Every 3rd byte of this binary's code (its .symtab: local, nested and
 * size-less symbols), every 11th of libc's. */
TEST(symtab_subset_reports_byte_identical)
{
	reports_agree((const void *)reports_agree, 3);
}

TEST(symtab_subset_reports_byte_identical_libc)
{
	reports_agree((const void *)qsort, 11);
}

/* An executable with no symbol at all (stripped, no .dynsym): its entry
 * point is named _start; with no entry point, nothing is. */
static int entry_syms(uint64_t entry, struct elf_fsym **v, size_t *n)
{
	const char *path = rt_path("entry.elf");
	Elf64_Ehdr eh = {
		.e_ident = { ELFMAG0, ELFMAG1, ELFMAG2, ELFMAG3, ELFCLASS64, ELFDATA2LSB,
			     EV_CURRENT },
		.e_type = ET_EXEC, .e_machine = EM_X86_64, .e_version = EV_CURRENT,
		.e_entry = entry, .e_phoff = sizeof(Elf64_Ehdr), .e_ehsize = sizeof(Elf64_Ehdr),
		.e_phentsize = sizeof(Elf64_Phdr), .e_phnum = 1,
	};
	Elf64_Phdr ph = { .p_type = PT_INTERP, .p_offset = 0, .p_filesz = 1 };
	FILE *f = fopen(path, "wb");
	Elf *elf;
	int fd, err = -1;

	if (!f || fwrite(&eh, sizeof(eh), 1, f) != 1 || fwrite(&ph, sizeof(ph), 1, f) != 1 ||
	    fclose(f))
		return -1;
	elf_version(EV_CURRENT);
	fd = open(path, O_RDONLY);
	if (fd < 0)
		return -1;
	elf = elf_begin(fd, ELF_C_READ, NULL);
	if (elf)
		err = elf_function_symbols(elf, v, n);
	elf_end(elf);
	close(fd);
	return err;
}

TEST(symtab_entry_point_is_start)
{
	struct elf_fsym *v = NULL;
	size_t n = 0;

	CHECK(entry_syms(0x401020, &v, &n) == 0);
	CHECK(n == 1 && v[0].addr == 0x401020 && v[0].size == 0x40 &&
	      !strcmp(v[0].name, "_start"));
	free(v);
	v = NULL;
	CHECK(entry_syms(0, &v, &n) == 0);
	CHECK(n == 0);
	free(v);
}

/* lp_objsym_find over r's table: the report's rule. */
static long real_find(const struct real_obj *r, uint64_t addr)
{
	struct lp_objsym *v = calloc(r->nsyms ? r->nsyms : 1, sizeof(*v));
	long i;

	if (!v)
		return -2;
	for (size_t k = 0; k < r->nsyms; k++)
		v[k] = (struct lp_objsym){ r->syms[k].addr, r->syms[k].size, r->syms[k].name };
	i = lp_objsym_find(v, r->nsyms, addr, NULL, NULL);
	free(v);
	return i;
}

/* The "sym@plt" stubs of the object holding code, against objdump's:
 * every stub objdump names by a symbol (not "*ABS*+0x...", which ours
 * names by the ifunc) has that name and address here, and no stub is
 * named here that objdump names otherwise.  *agreed: how many agreed. */
static void plt_agrees(const void *code, int *agreed)
{
	struct real_obj r;
	char cmd[600], line[512], name[256];
	unsigned long long addr;
	FILE *p;

	*agreed = 0;
	CHECK(open_real(&r, code) == 0);
	snprintf(cmd, sizeof(cmd), "objdump -d --no-show-raw-insn '%s' 2>/dev/null", r.path);
	p = popen(cmd, "r");
	CHECK(p != NULL);
	while (fgets(line, sizeof(line), p)) {
		long i;

		if (sscanf(line, "%llx <%255[^>]>:", &addr, name) != 2 ||
		    strlen(name) < 5 || strcmp(name + strlen(name) - 4, "@plt") ||
		    strchr(name, '+') || name[0] == '*')
			continue;
		i = real_find(&r, addr);
		CHECK(i >= 0 && r.syms[i].addr == addr && !strcmp(r.syms[i].name, name));
		(*agreed)++;
	}
	pclose(p);
	for (size_t i = 0; i < r.nsyms; i++) /* each of ours objdump names too */
		if (strstr(r.syms[i].name, "@plt"))
			CHECK(r.syms[i].size >= 8 && r.syms[i].size <= 32);
	close_real(&r);
}

TEST(symtab_plt_stubs_named_as_objdump)
{
	int agreed;

	plt_agrees((const void *)plt_agrees, &agreed); /* this binary */
	CHECK(agreed > 10);
	plt_agrees((const void *)qsort, &agreed); /* libc's own */
	CHECK(agreed > 0);
}

/* _init has no size: it covers .init up to its end, not the .plt that
 * follows, whose first entry (the resolver's) no symbol names. */
TEST(symtab_sizeless_symbol_ends_with_its_section)
{
	struct real_obj r;
	size_t shstrndx;
	Elf_Scn *scn = NULL;
	uint64_t init_end = 0, plt = 0;
	long i;

	CHECK(open_real(&r, (const void *)plt_agrees) == 0);
	CHECK(elf_getshdrstrndx(r.elf, &shstrndx) == 0);
	while ((scn = elf_nextscn(r.elf, scn))) {
		GElf_Shdr sh;
		const char *name;

		if (!gelf_getshdr(scn, &sh) || !(name = elf_strptr(r.elf, shstrndx, sh.sh_name)))
			continue;
		if (!strcmp(name, ".init"))
			init_end = sh.sh_addr + sh.sh_size;
		if (!strcmp(name, ".plt"))
			plt = sh.sh_addr;
	}
	if (!init_end || !plt) {
		close_real(&r);
		SKIP("this binary has no .init or no .plt");
	}
	i = real_find(&r, init_end - 1);
	CHECK(i >= 0 && !strcmp(r.syms[i].name, "_init") &&
	      r.syms[i].addr + r.syms[i].size == init_end);
	CHECK(real_find(&r, plt) == -1);
	close_real(&r);
}

/* An exported symbol of no type in code is an entry point written by hand
 * (the arm64 vDSO's __kernel_rt_sigreturn): it names its code.  One in
 * data (_edata, a label) names nothing.  Built here by the compiler. */
TEST(symtab_untyped_export_in_code)
{
	const char *src = rt_path("untyped.s"), *so = rt_path("untyped.so");
	char cmd[700];
	struct elf_fsym *v = NULL;
	size_t n = 0;
	int found = 0, data = 0, fd;
	FILE *f = fopen(src, "w");
	Elf *elf;

	CHECK(f != NULL);
	fputs("\t.text\n\t.globl hand_entry\n\tnop\nhand_entry:\n\tnop\n\tnop\n"
	      "\t.data\n\t.globl data_label\ndata_label:\n\t.quad 1\n", f);
	CHECK(fclose(f) == 0);
	snprintf(cmd, sizeof(cmd), "cc -shared -nostdlib -o '%s' '%s' 2>/dev/null", so, src);
	if (system(cmd) != 0)
		SKIP("no compiler to build a shared object");
	fd = open(so, O_RDONLY);
	CHECK(fd >= 0);
	elf_version(EV_CURRENT);
	elf = elf_begin(fd, ELF_C_READ, NULL);
	CHECK(elf && elf_function_symbols(elf, &v, &n) == 0);
	for (size_t i = 0; i < n; i++) {
		found |= !strcmp(v[i].name, "hand_entry") && v[i].size >= 2;
		data |= !strcmp(v[i].name, "data_label") || !strcmp(v[i].name, "_edata");
	}
	CHECK(found && !data);
	free(v);
	elf_end(elf);
	close(fd);
}

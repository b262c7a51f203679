/*
 * symbolize.c - the per-file symbol cache behind symbolize.h.
 *
 * A file is opened with libelf once; its PT_LOAD segments and function
 * symbols are copied out and the file is closed again, so a report over
 * hundreds of libraries holds no descriptors or mappings.  Function
 * symbols come from .symtab, then from .dynsym (which is all a stripped
 * library keeps).  Aliases at one address collapse to the name a reader
 * expects: a global over a weak or local one, then the shortest, so that
 * `memcpy` wins over `__memcpy_avx_unaligned_erms` only where both name the
 * same code.  A file we cannot read is remembered as such, warned about
 * once, and never retried.
 */
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lib/escape.h"
#include "lib/htab.h"
#include "lib/elfsyms.h"
#include "report/symbolize.h"

struct sym_file {
	char *path;
	int elf;                /* read as ELF */
	struct lp_objseg *segs;
	size_t nsegs;
	struct lp_objsym *syms; /* sorted by addr, one per address */
	size_t nsyms;
	char *names;            /* the names syms point into */
};

struct symbolizer {
	const char *who;
	struct sym_file *files;
	size_t len, cap;
	struct htab h; /* path -> files[] index */
};

int symbolizer_new(struct symbolizer **out, const char *who)
{
	*out = calloc(1, sizeof(**out));
	if (!*out)
		return -ENOMEM;
	(*out)->who = who;
	return 0;
}

void symbolizer_free(struct symbolizer *s)
{
	if (!s)
		return;
	for (size_t i = 0; i < s->len; i++) {
		free(s->files[i].path);
		free(s->files[i].segs);
		free(s->files[i].syms);
		free(s->files[i].names);
	}
	free(s->files);
	htab_free(&s->h);
	free(s);
}

static int read_segments(Elf *elf, struct sym_file *f)
{
	size_t n, cap = 0;

	if (elf_getphdrnum(elf, &n))
		return 0; /* no program headers: offsets stay offsets */
	/* Grown per PT_LOAD found, not sized by the header's count, which a
	 * broken file may state as anything. */
	for (size_t i = 0; i < n && i < INT_MAX; i++) {
		GElf_Phdr ph;

		if (!gelf_getphdr(elf, (int)i, &ph))
			break;
		if (ph.p_type != PT_LOAD)
			continue;
		if (GROW(f->segs, cap, f->nsegs + 1))
			return -ENOMEM;
		f->segs[f->nsegs++] = (struct lp_objseg){ ph.p_offset, ph.p_filesz,
							  ph.p_vaddr };
	}
	return 0;
}

/* Copies the chosen names out of the ELF image, which is about to be
 * closed. */
static int keep_symbols(struct sym_file *f, const struct elf_fsym *v, size_t n)
{
	size_t bytes = 0, pos = 0;

	for (size_t i = 0; i < n; i++)
		bytes += v[i].len + 1;
	f->syms = calloc(n ? n : 1, sizeof(*f->syms));
	f->names = malloc(bytes ? bytes : 1);
	if (!f->syms || !f->names)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		memcpy(f->names + pos, v[i].name, v[i].len + 1);
		f->syms[i].addr = v[i].addr;
		f->syms[i].size = v[i].size;
		f->syms[i].name = f->names + pos;
		pos += v[i].len + 1;
	}
	f->nsyms = n;
	return 0;
}

/* Reads one file into f.  Returns 0 with f->elf set, a positive value
 * with *reason set when the file is not usable, or -ENOMEM. */
static int load(struct sym_file *f, const char **reason)
{
	struct elf_fsym *fsyms = NULL;
	size_t nfsyms = 0;
	Elf *elf = NULL;
	struct stat st;
	int fd, err = 1;

	if (elf_version(EV_CURRENT) == EV_NONE) {
		*reason = elf_errmsg(-1);
		return 1;
	}
#ifdef FUZZING_BUILD_MODE_UNSAFE_FOR_PRODUCTION
	/* tests/fuzz/: the fuzzer's input is the trace, not this machine's
	 * files (which are trusted, slow to read and not the same anywhere). */
	fd = -1;
	errno = ENOENT;
#else
	fd = open(f->path, O_RDONLY | O_CLOEXEC);
#endif
	if (fd < 0) {
		*reason = strerror(errno);
		return 1;
	}
	if (fstat(fd, &st) || !S_ISREG(st.st_mode)) {
		*reason = "not a regular file";
		goto cleanup;
	}
	elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	if (!elf) {
		*reason = elf_errmsg(-1);
		goto cleanup;
	}
	if (elf_kind(elf) != ELF_K_ELF) {
		*reason = "not an ELF file";
		goto cleanup;
	}
	err = read_segments(elf, f);
	if (!err)
		err = elf_function_symbols(elf, &fsyms, &nfsyms);
	if (!err)
		err = keep_symbols(f, fsyms, nfsyms);
	if (!err)
		f->elf = 1;
cleanup:
	free(fsyms);
	if (elf)
		elf_end(elf);
	close(fd);
	return err;
}

static int get_file(struct symbolizer *s, const char *path,
		    struct sym_file **out)
{
	uint64_t hash = hash_bytes(path, strlen(path));
	const char *reason = NULL;
	struct htab_probe p;
	struct sym_file *f;
	int64_t i;
	int err;

	htab_probe_start(&s->h, hash, &p);
	while ((i = htab_probe_next(&s->h, &p)) >= 0) {
		if (!strcmp(s->files[i].path, path)) {
			*out = &s->files[i];
			return 0;
		}
	}
	err = GROW(s->files, s->cap, s->len + 1);
	if (err)
		return err;
	f = &s->files[s->len];
	memset(f, 0, sizeof(*f));
	f->path = strdup(path);
	if (!f->path)
		return -ENOMEM;
	err = load(f, &reason);
	if (err < 0 || (err = htab_insert(&s->h, hash, s->len)) < 0) {
		free(f->path);
		free(f->segs);
		free(f->syms);
		free(f->names);
		return err;
	}
	if (!f->elf) {
		fprintf(stderr, "%s: cannot read ", s->who);
		esc_fputs(path, stderr); /* may come from the trace */
		fprintf(stderr, ": %s; its frames print as module+offset\n",
			reason ? reason : "unknown error");
	}
	s->len++;
	*out = f;
	return 0;
}

int symbolizer_add_table(struct symbolizer *s, const char *key,
			 const struct lp_symtab *rec)
{
	uint64_t hash = hash_bytes(key, strlen(key));
	struct lp_objsym *old_syms;
	char *old_names;
	struct elf_fsym *raw = NULL;
	struct htab_probe p;
	struct sym_file *f = NULL;
	size_t nraw = 0;
	int64_t i;
	int err;

	htab_probe_start(&s->h, hash, &p);
	while ((i = htab_probe_next(&s->h, &p)) >= 0)
		if (!strcmp(s->files[i].path, key))
			f = &s->files[i];
	if (!f) {
		err = GROW(s->files, s->cap, s->len + 1);
		if (err)
			return err;
		f = &s->files[s->len];
		memset(f, 0, sizeof(*f));
		f->path = strdup(key);
		if (!f->path)
			return -ENOMEM;
		err = htab_insert(&s->h, hash, s->len);
		if (err) {
			free(f->path);
			return err;
		}
		s->len++;
		f->elf = 1; /* what an ELF file would have given */
	}
	if (!f->nsegs && rec->nseg) {
		f->segs = calloc(rec->nseg, sizeof(*f->segs));
		if (!f->segs)
			return -ENOMEM;
		memcpy(f->segs, rec->segs, rec->nseg * sizeof(*f->segs));
		f->nsegs = rec->nseg;
	}
	if (!rec->nsym)
		return 0;
	/* Merge with what earlier records gave, through the same alias
	 * rules as a file's symbols (the recorder already kept one name per
	 * address, so they rarely apply). */
	raw = calloc(f->nsyms + rec->nsym, sizeof(*raw));
	if (!raw)
		return -ENOMEM;
	for (size_t k = 0; k < f->nsyms; k++, nraw++)
		raw[nraw] = (struct elf_fsym){ f->syms[k].addr, f->syms[k].size,
					       f->syms[k].name, strlen(f->syms[k].name) };
	for (uint32_t k = 0; k < rec->nsym; k++) {
		const char *name = rec->syms[k].name ? rec->syms[k].name : "";

		if (!name[0])
			continue;
		raw[nraw++] = (struct elf_fsym){ rec->syms[k].addr, rec->syms[k].size,
						 name, strlen(name) };
	}
	old_syms = f->syms;
	old_names = f->names;
	f->syms = NULL;
	f->names = NULL;
	err = keep_symbols(f, raw, elf_fsyms_merge(raw, nraw));
	if (err) {
		free(f->syms);
		free(f->names);
		f->syms = old_syms;
		f->names = old_names;
	} else {
		free(old_syms);
		free(old_names);
	}
	free(raw);
	return err;
}

static const char *find_sym(const struct sym_file *f, uint64_t addr, uint64_t *start)
{
	long i = lp_objsym_find(f->syms, f->nsyms, addr, NULL, NULL);

	*start = i < 0 ? 0 : f->syms[i].addr;
	return i < 0 ? NULL : f->syms[i].name;
}

int symbolizer_lookup(struct symbolizer *s, const char *path, uint64_t off,
		      struct sym_result *res)
{
	struct sym_file *f;
	uint64_t vaddr;
	int err;

	res->func = NULL;
	res->addr = off;
	res->elf = 0;
	res->start = 0;
	err = get_file(s, path, &f);
	if (err)
		return err;
	if (!f->elf)
		return 0;
	/* The rule the recorder uses for the lines it embeds. */
	if (elf_seg_vaddr(f->segs, f->nsegs, off, &vaddr))
		return 0;
	res->elf = 1;
	res->addr = vaddr;
	res->func = find_sym(f, res->addr, &res->start);
	return 0;
}

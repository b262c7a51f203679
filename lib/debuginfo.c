/*
 * debuginfo.c - finds an object's DWARF and the sections of it that lines
 * and inlined functions need (see debuginfo.h for why this is in lib/).
 */
#include <elfutils/libdwelf.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "lib/debuginfo.h"

#define DEBUG_ROOT "/usr/lib/debug"
#define MAX_BUILD_ID 64

const char *const lp_debug_section_names[LP_DEBUG_NSECT] = {
	".debug_info",	  ".debug_abbrev",	".debug_line",
	".debug_line_str", ".debug_str",	".debug_str_offsets",
	".debug_addr",	  ".debug_ranges",	".debug_rnglists",
	".debug_aranges",
};

/* The index of a section name in lp_debug_section_names, or -1. */
static int section_index(const char *name)
{
	for (int i = 0; i < LP_DEBUG_NSECT; i++)
		if (!strcmp(name, lp_debug_section_names[i]))
			return i;
	return -1;
}

void lp_debug_file_close(struct lp_debug_file *f)
{
	if (f->elf)
		elf_end(f->elf);
	if (f->fd >= 0)
		close(f->fd);
	f->elf = NULL;
	f->fd = -1;
}

int lp_debug_file_open(struct lp_debug_file *f, const char *path)
{
	struct stat st;
	int err = -ENOENT;

	f->elf = NULL;
	f->fd = -1;
	if (elf_version(EV_CURRENT) == EV_NONE)
		return -EINVAL;
	if ((size_t)snprintf(f->path, sizeof(f->path), "%s", path) >= sizeof(f->path))
		return -ENAMETOOLONG;
	/* Looked at before it is opened: a path a debug file names (dwz's
	 * .gnu_debugaltlink) may be a device, whose opening alone may do
	 * something.  The fstat() below still decides. */
	if (stat(path, &st))
		return -errno;
	if (!S_ISREG(st.st_mode))
		return -ENOENT;
	/* O_NONBLOCK: a FIFO planted where a debug file is looked for must
	 * not hang us; it is then refused as not regular. */
	f->fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	if (f->fd < 0)
		return -errno;
	if (fstat(f->fd, &st) || !S_ISREG(st.st_mode))
		goto fail;
	/* Read, not mapped: a file truncated while it is read would
	 * otherwise kill us with SIGBUS. */
	f->elf = elf_begin(f->fd, ELF_C_READ, NULL);
	if (!f->elf || elf_kind(f->elf) != ELF_K_ELF) {
		err = -EINVAL;
		goto fail;
	}
	return 0;
fail:
	lp_debug_file_close(f);
	return err;
}

/* The name of section scn, with a .zdebug_ prefix read as .debug_. */
static const char *section_name(Elf *elf, size_t shstrndx, const GElf_Shdr *sh,
				int *gnu_compressed, char *buf, size_t len)
{
	const char *name = elf_strptr(elf, shstrndx, sh->sh_name);

	*gnu_compressed = 0;
	if (!name)
		return NULL;
	if (!strncmp(name, ".zdebug_", 8)) {
		*gnu_compressed = 1;
		snprintf(buf, len, ".debug_%s", name + 8);
		return buf;
	}
	return name;
}

int lp_has_debug_info(Elf *elf)
{
	Elf_Scn *scn = NULL;
	size_t shstrndx;
	char buf[64];
	int z;

	if (elf_getshdrstrndx(elf, &shstrndx))
		return 0;
	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		const char *name;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type == SHT_NOBITS || !sh.sh_size)
			continue;
		name = section_name(elf, shstrndx, &sh, &z, buf, sizeof(buf));
		if (name && !strcmp(name, ".debug_info"))
			return 1;
	}
	return 0;
}

static size_t build_id(Elf *elf, uint8_t *id)
{
	const void *p;
	ssize_t n = dwelf_elf_gnu_build_id(elf, &p);

	if (n <= 0 || n > MAX_BUILD_ID)
		return 0;
	memcpy(id, p, n);
	return (size_t)n;
}

/* The CRC32 of a whole file, as .gnu_debuglink records it (zlib's). */
static int file_crc32(int fd, uint32_t *crc)
{
	unsigned char buf[65536];
	uLong c = crc32(0L, Z_NULL, 0);
	off_t off = 0;
	ssize_t n;

	while ((n = pread(fd, buf, sizeof(buf), off)) > 0) {
		c = crc32(c, buf, (uInt)n);
		off += n;
	}
	if (n < 0)
		return -errno;
	*crc = (uint32_t)c;
	return 0;
}

/* Opens a candidate separate debug file: it must hold DWARF, carry the
 * object's build-id if the object has one, and match crc if asked. */
static int try_debug_file(struct lp_debug_file *f, const char *path,
			  const uint8_t *id, size_t idlen, int check_crc,
			  uint32_t crc)
{
	uint8_t fid[MAX_BUILD_ID];
	uint32_t fcrc = 0;

	if (lp_debug_file_open(f, path))
		return -ENOENT;
	if (!lp_has_debug_info(f->elf))
		goto mismatch;
	if (idlen && (build_id(f->elf, fid) != idlen || memcmp(fid, id, idlen)))
		goto mismatch;
	if (check_crc && (file_crc32(f->fd, &fcrc) || fcrc != crc))
		goto mismatch;
	return 0;
mismatch:
	lp_debug_file_close(f);
	return -ENOENT;
}

/* ROOT/usr/lib/debug/.build-id/xx/rest.debug for build-id id (2 bytes
 * or more): 0, or -ENAMETOOLONG. */
static int build_id_path(char *path, size_t len, const char *root, const uint8_t *id,
			 size_t idlen)
{
	size_t n;

	if (idlen < 2)
		return -ENOENT;
	n = (size_t)snprintf(path, len, "%s" DEBUG_ROOT "/.build-id/%02x/", root, id[0]);
	for (size_t i = 1; i < idlen && n < len; i++)
		n += (size_t)snprintf(path + n, len - n, "%02x", id[i]);
	if (n + sizeof(".debug") > len)
		return -ENAMETOOLONG;
	strcat(path, ".debug");
	return 0;
}

int lp_debug_file_find(Elf *obj, const char *object, const char *root,
		       struct lp_debug_file *f)
{
	uint8_t id[MAX_BUILD_ID];
	char path[PATH_MAX], dir[PATH_MAX];
	const char *link, *slash;
	size_t idlen;
	GElf_Word crc = 0;

	f->fd = -1;
	f->elf = NULL;
	idlen = build_id(obj, id);
	if (!build_id_path(path, sizeof(path), root, id, idlen) &&
	    !try_debug_file(f, path, id, idlen, 0, 0))
		return 0;
	link = dwelf_elf_gnu_debuglink(obj, &crc);
	/* The name comes from the target's file: a bare file name only. */
	if (!link || !link[0] || strchr(link, '/') || !strcmp(link, ".") ||
	    !strcmp(link, ".."))
		return -ENOENT;
	slash = strrchr(object, '/');
	if (!slash || (size_t)(slash - object) >= sizeof(dir))
		return -ENOENT;
	memcpy(dir, object, slash - object);
	dir[slash - object] = '\0';
	{
		const char *const fmts[] = { "%s%s/%s", "%s%s/.debug/%s",
					     "%s" DEBUG_ROOT "%s/%s" };

		for (size_t i = 0; i < sizeof(fmts) / sizeof(fmts[0]); i++) {
			if ((size_t)snprintf(path, sizeof(path), fmts[i], root, dir, link) >=
			    sizeof(path))
				continue;
			if (!try_debug_file(f, path, id, idlen, 1, crc))
				return 0;
		}
	}
	return -ENOENT;
}

/* The path and build-id in elf's .gnu_debugaltlink (dwz -m): the path
 * NUL-terminated, then the shared file's build-id, the section's other
 * bytes.  0, 1 when elf has no such section, -EINVAL when it is not that. */
static int read_altlink(Elf *elf, char *name, size_t len, uint8_t *id, size_t *idlen)
{
	Elf_Scn *scn = NULL;
	Elf_Data *d;
	GElf_Shdr sh;
	const char *end;
	size_t shstrndx, n;

	if (elf_getshdrstrndx(elf, &shstrndx))
		return 1;
	while ((scn = elf_nextscn(elf, scn))) {
		const char *sname;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_PROGBITS)
			continue;
		sname = elf_strptr(elf, shstrndx, sh.sh_name);
		if (sname && !strcmp(sname, ".gnu_debugaltlink"))
			break;
	}
	if (!scn)
		return 1;
	/* A path and a build-id: bounded before libelf reads it. */
	if (sh.sh_size > len + MAX_BUILD_ID || !(d = elf_getdata(scn, NULL)) ||
	    !d->d_buf || !(end = memchr(d->d_buf, 0, d->d_size)))
		return -EINVAL;
	n = (size_t)(end - (const char *)d->d_buf);
	*idlen = d->d_size - n - 1;
	if (!n || n >= len || *idlen < 2 || *idlen > MAX_BUILD_ID)
		return -EINVAL;
	memcpy(name, d->d_buf, n + 1);
	memcpy(id, end + 1, *idlen);
	return 0;
}

int lp_debug_altfile_find(Elf *elf, const char *file, const char *root,
			  struct lp_debug_file *f)
{
	char name[PATH_MAX], path[PATH_MAX], real[PATH_MAX];
	uint8_t id[MAX_BUILD_ID];
	const char *dir = file, *slash;
	size_t idlen, n = sizeof(path);
	int err;

	f->fd = -1;
	f->elf = NULL;
	err = read_altlink(elf, name, sizeof(name), id, &idlen);
	if (err)
		return err > 0 ? 1 : -ENOENT;
	if (name[0] == '/') {
		n = (size_t)snprintf(path, sizeof(path), "%s%s", root, name);
	} else {
		/* As gdb and libdw take it: in the directory of the file
		 * that names it, its symbolic links resolved (Fedora's
		 * links are relative, from /usr/lib/debug/usr/lib64/). */
		if (realpath(file, real))
			dir = real;
		slash = strrchr(dir, '/');
		if (slash)
			n = (size_t)snprintf(path, sizeof(path), "%.*s/%s",
					     (int)(slash - dir), dir, name);
	}
	if (n < sizeof(path) && !try_debug_file(f, path, id, idlen, 0, 0))
		return 0;
	if (!build_id_path(path, sizeof(path), root, id, idlen) &&
	    !try_debug_file(f, path, id, idlen, 0, 0))
		return 0;
	return -ENOENT;
}

/* The plain size of a compressed section without decompressing it, so
 * that an object too large to embed costs no inflating. */
static int plain_size(Elf_Scn *scn, const GElf_Shdr *sh, int gnu, uint64_t *size)
{
	Elf_Data *raw;
	GElf_Chdr ch;

	if (sh->sh_flags & SHF_COMPRESSED) {
		if (!gelf_getchdr(scn, &ch))
			return -EINVAL;
		*size = ch.ch_size;
		return 0;
	}
	if (!gnu) {
		*size = sh->sh_size;
		return 0;
	}
	/* "ZLIB" and the size as 8 big-endian bytes. */
	raw = elf_rawdata(scn, NULL);
	if (!raw || !raw->d_buf || raw->d_size < 12 || memcmp(raw->d_buf, "ZLIB", 4))
		return -EINVAL;
	*size = 0;
	for (int i = 4; i < 12; i++)
		*size = *size << 8 | ((const uint8_t *)raw->d_buf)[i];
	return 0;
}

int lp_debug_sections_read(Elf *elf, struct lp_debug_sections *s)
{
	Elf_Scn *scn = NULL;
	size_t shstrndx;
	GElf_Ehdr eh;
	char buf[64];

	memset(s, 0, sizeof(*s));
	if (!gelf_getehdr(elf, &eh) || elf_getshdrstrndx(elf, &shstrndx))
		return -EINVAL;
	s->eclass = eh.e_ident[EI_CLASS];
	s->edata = eh.e_ident[EI_DATA];
	s->emachine = eh.e_machine;
	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		const char *name;
		int i, z;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type == SHT_NOBITS)
			continue;
		name = section_name(elf, shstrndx, &sh, &z, buf, sizeof(buf));
		i = name ? section_index(name) : -1;
		if (i < 0 || s->scn[i])
			continue; /* not needed, or a second one: the first stands */
		if (plain_size(scn, &sh, z, &s->size[i]))
			return -EINVAL;
		s->scn[i] = scn;
		s->how[i] = z ? LP_DEBUG_GNU : sh.sh_flags & SHF_COMPRESSED ?
			LP_DEBUG_ELF : LP_DEBUG_PLAIN;
		s->total += s->size[i];
	}
	if (!s->scn[LP_DEBUG_INFO] || !s->scn[LP_DEBUG_ABBREV] || !s->scn[LP_DEBUG_LINE])
		return -ENOENT;
	return 0;
}

/* Inflates the zlib stream src[0..n) into exactly size bytes at dst. */
static int inflate_exact(const uint8_t *src, size_t n, uint8_t *dst, uint64_t size)
{
	z_stream z;
	int rc;

	if (n > UINT32_MAX || size > UINT32_MAX) /* zlib counts in uInt */
		return -EINVAL;
	memset(&z, 0, sizeof(z));
	if (inflateInit(&z) != Z_OK)
		return -EINVAL;
	z.next_in = (Bytef *)src;
	z.avail_in = (uInt)n;
	z.next_out = dst;
	z.avail_out = (uInt)size;
	rc = inflate(&z, Z_FINISH);
	rc = rc == Z_STREAM_END && z.total_out == size ? 0 : -EINVAL;
	inflateEnd(&z);
	return rc;
}

int lp_debug_section_copy(const struct lp_debug_sections *s, int i, uint8_t *dst)
{
	Elf_Scn *scn = s->scn[i];
	Elf_Data *d;
	size_t hdr;

	if (!scn)
		return -EINVAL;
	if (s->how[i] == LP_DEBUG_PLAIN) {
		d = elf_getdata(scn, NULL);
		if (!d || d->d_size != s->size[i] || (d->d_size && !d->d_buf))
			return -EINVAL;
		if (d->d_size)
			memcpy(dst, d->d_buf, d->d_size);
		return 0;
	}
	/* Compressed: inflated straight into dst, so that the plain bytes
	 * exist once, not also in libelf (libc's DWARF is 8.6 MiB). */
	d = elf_rawdata(scn, NULL);
	if (!d || !d->d_buf)
		return -EINVAL;
	if (s->how[i] == LP_DEBUG_GNU) {
		hdr = 12; /* "ZLIB" and the size */
	} else {
		GElf_Chdr ch;

		if (!gelf_getchdr(scn, &ch))
			return -EINVAL;
		if (ch.ch_type != ELFCOMPRESS_ZLIB) {
			/* zstd, or what libelf knows and we do not: its way. */
			if (elf_compress(scn, 0, 0) < 0 || !(d = elf_getdata(scn, NULL)) ||
			    d->d_size != s->size[i] || (d->d_size && !d->d_buf))
				return -EINVAL;
			if (d->d_size)
				memcpy(dst, d->d_buf, d->d_size);
			return 0;
		}
		hdr = s->eclass == ELFCLASS32 ? sizeof(Elf32_Chdr) : sizeof(Elf64_Chdr);
	}
	if (d->d_size < hdr)
		return -EINVAL;
	return inflate_exact((const uint8_t *)d->d_buf + hdr, d->d_size - hdr, dst,
			     s->size[i]);
}

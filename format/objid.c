/*
 * objid.c - the identity of an ELF file (trace.h, docs/format.md §3.13).
 *
 * A trace names the files its mappings came from by content, not only by
 * path, so that a report on another machine, or after an upgrade, can
 * tell whether the file it finds is the one that ran.  The recorder writes
 * the identity into the trace and the report computes it again for a
 * candidate file, which is why the computation lives here, beside the
 * format, where both sides get the same bytes.
 *
 * The GNU build-id note is the identity when the file has one: linkers
 * derive it from the contents, and debuginfod and distribution debug
 * packages use it too.  A file without one is identified by a 64-bit
 * FNV-1a hash of its size and of its first and last MiB: cheap for a file
 * of any size, and it changes with any rebuild in practice.
 */
#include <errno.h>
#include <gelf.h>
#include <libelf.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "format/trace.h"

#define HASH_SPAN (1u << 20)

static uint64_t fnv1a(uint64_t h, const uint8_t *p, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		h ^= p[i];
		h *= 0x100000001b3ull;
	}
	return h;
}

/* Hashes n bytes of fd from off; -errno on a read error or a short file. */
static int hash_range(int fd, uint64_t off, uint64_t n, uint8_t *buf,
		      uint64_t *h)
{
	while (n) {
		size_t want = n < HASH_SPAN ? (size_t)n : HASH_SPAN;
		ssize_t got = pread(fd, buf, want, (off_t)off);

		if (got < 0)
			return -errno;
		if (got == 0)
			return -EIO; /* the file shrank under us */
		*h = fnv1a(*h, buf, (size_t)got);
		off += (uint64_t)got;
		n -= (uint64_t)got;
	}
	return 0;
}

/* The content hash: FNV-1a 64 over the size as 8 little-endian bytes,
 * then bytes [0, min(size, 1 MiB)), then the last min(size - 1 MiB, 1 MiB)
 * bytes, written as 8 little-endian bytes. */
static int content_hash(int fd, uint64_t size, uint8_t *ident)
{
	uint64_t h = 0xcbf29ce484222325ull, head, tail;
	uint8_t le[8], *buf;
	int err;

	for (int i = 0; i < 8; i++)
		le[i] = (uint8_t)(size >> (8 * i));
	h = fnv1a(h, le, 8);
	buf = malloc(HASH_SPAN);
	if (!buf)
		return -ENOMEM;
	head = size < HASH_SPAN ? size : HASH_SPAN;
	tail = size - head < HASH_SPAN ? size - head : HASH_SPAN;
	err = hash_range(fd, 0, head, buf, &h) ?:
	      hash_range(fd, size - tail, tail, buf, &h);
	free(buf);
	for (int i = 0; i < 8; i++)
		ident[i] = (uint8_t)(h >> (8 * i));
	return err;
}

/* The NT_GNU_BUILD_ID descriptor of an ELF file; 0 if found, 1 if not. */
static int build_id(int fd, uint8_t *ident, uint32_t *len)
{
	Elf *elf;
	size_t n;
	int found = 1;

	if (elf_version(EV_CURRENT) == EV_NONE)
		return 1;
	elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	if (!elf)
		return 1;
	if (elf_kind(elf) != ELF_K_ELF || elf_getphdrnum(elf, &n))
		goto cleanup;
	/* The note is in a PT_NOTE segment of every linked object, so the
	 * program headers find it even in a file without section headers. */
	for (size_t i = 0; found && i < n && i < INT_MAX; i++) {
		GElf_Phdr ph;
		GElf_Nhdr nh;
		Elf_Data *data;
		size_t off = 0, name_off, desc_off;

		if (!gelf_getphdr(elf, (int)i, &ph) || ph.p_type != PT_NOTE)
			continue;
		data = elf_getdata_rawchunk(elf, ph.p_offset, ph.p_filesz,
					    ph.p_align == 8 ? ELF_T_NHDR8 : ELF_T_NHDR);
		if (!data)
			continue;
		while ((off = gelf_getnote(data, off, &nh, &name_off, &desc_off)) > 0) {
			if (nh.n_type != NT_GNU_BUILD_ID || nh.n_namesz != 4 ||
			    memcmp((const char *)data->d_buf + name_off, "GNU", 4) ||
			    !nh.n_descsz || nh.n_descsz > LP_OBJID_MAX)
				continue;
			memcpy(ident, (const uint8_t *)data->d_buf + desc_off, nh.n_descsz);
			*len = nh.n_descsz;
			found = 0;
			break;
		}
	}
cleanup:
	elf_end(elf);
	return found;
}

int lp_objid_read(int fd, uint32_t *kind, uint8_t *ident, uint32_t *len,
		  uint64_t *size)
{
	struct stat st;
	int err;

	if (fstat(fd, &st))
		return -errno;
	if (!S_ISREG(st.st_mode))
		return -EINVAL;
	*size = (uint64_t)st.st_size;
	if (!build_id(fd, ident, len)) {
		*kind = LP_OBJID_BUILD_ID;
		return 0;
	}
	err = content_hash(fd, *size, ident);
	if (err)
		return err;
	*kind = LP_OBJID_CONTENT;
	*len = 8;
	return 0;
}

/*
 * vdso.c - the kernel's vDSO image, read from our own mapping (see
 * vdso.h).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <unistd.h>

#include "record/procmaps.h"
#include "record/vdso.h"

int vdso_mapping(const char *path)
{
	return !strcmp(path, "[vdso]");
}

int vdso_image(void **copy, size_t *size)
{
	struct maps_table self;
	unsigned long base = getauxval(AT_SYSINFO_EHDR);
	int err = -ENOENT;

	*copy = NULL;
	*size = 0;
	if (!base || procmaps_read(getpid(), &self))
		return -ENOENT;
	for (uint32_t i = 0; i < self.n; i++) {
		const struct lp_mapping *m = &self.v[i];

		/* Its code and headers share one mapping: the image. */
		if (!vdso_mapping(m->path) || m->start != base)
			continue;
		*copy = malloc(m->end - m->start);
		if (!*copy) {
			err = -ENOMEM;
			break;
		}
		memcpy(*copy, (const void *)base, m->end - m->start);
		*size = m->end - m->start;
		err = 0;
		break;
	}
	maps_table_free(&self);
	return err;
}

int vdso_fd(void)
{
	void *image;
	size_t size, done = 0;
	int err = vdso_image(&image, &size), fd;

	if (err)
		return err;
	fd = memfd_create("luaprof-vdso", MFD_CLOEXEC);
	if (fd < 0) {
		err = -errno;
		free(image);
		return err;
	}
	while (done < size) {
		ssize_t n = write(fd, (const char *)image + done, size - done);

		if (n <= 0) {
			err = n < 0 ? -errno : -EIO;
			break;
		}
		done += (size_t)n;
	}
	free(image);
	if (!err && lseek(fd, 0, SEEK_SET) < 0)
		err = -errno;
	if (err) {
		close(fd);
		return err;
	}
	return fd;
}

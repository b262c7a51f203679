/*
 * objects_prep.c - reads, on a thread of its own, what embedding an
 * object takes: its PT_LOAD segments, its function symbols and its DWARF
 * (record/objects.c writes them; srclines.c resolves lines with the
 * DWARF).
 *
 * The recorder's one thread drains the ring buffer, and everything that
 * must happen while a process lives happens there: reading the prototypes
 * and traces its samples name before the GC frees them, locating the VM
 * of a process that may exit a moment later, re-reading mappings.
 * Reading an object's symbols and opening its DWARF take tens to hundreds
 * of milliseconds (libc's with libc6-dbg: 150, tarantool's: 55, a flush
 * of a dozen libraries: 370), and the first flush of every recording did
 * it all: samples waited that long, and what they named was gone by
 * then.  So an object is queued here the moment a sample first hits it,
 * and the flush writes it once it is ready, and leaves it for the next
 * flush if not; only the last flush waits.
 *
 * The worker shares nothing with the recorder's thread but the queue:
 * a job owns a descriptor of its own and a copy of the path, and what it
 * reads (the object's obj_symtab, names copied out of the ELF image, and
 * its DWARF) is the job's until the recorder takes it; only then are its
 * symbols marked and written (symtab.c, on the recorder's thread).  libelf and libdw keep no state shared between
 * descriptors (their error codes are per thread).
 */
#include <errno.h>
#include <libelf.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "record/objects_prep.h"
#include "record/srclines.h"
#include "record/symtab.h"

struct obj_prep {
	pthread_t thread;
	int running;
	pthread_mutex_t lock;
	pthread_cond_t wake;   /* a job queued, or stop */
	pthread_cond_t done_c; /* a job done */
	struct obj_prepared *todo, **todo_tail, *done;
	int stop;
};

/* Reads one job's object: its table (symtab.c: segments, symbols, names
 * copied) and its DWARF. */
static void prepare(struct obj_prepared *j)
{
	const struct lp_objseg *segs;
	size_t nsegs;
	Elf *elf = NULL;
	int err;

	if (elf_version(EV_CURRENT) == EV_NONE)
		goto cleanup;
	elf = elf_begin(j->fd, ELF_C_READ_MMAP, NULL);
	if (!elf)
		goto cleanup;
	err = obj_symtab_read(&j->syms, elf);
	if (err) {
		j->err = err < 0 ? err : 0; /* not ELF: module+offset */
		goto cleanup;
	}
	/* No DWARF, or no memory for it: the object goes without lines. */
	segs = obj_symtab_segs(j->syms, &nsegs);
	if (srclines_open(&j->dwarf, j->fd, j->path, j->id, segs, nsegs))
		j->dwarf = NULL;
cleanup:
	if (elf)
		elf_end(elf);
	close(j->fd);
	j->fd = -1;
}

static void *worker(void *arg)
{
	struct obj_prep *p = arg;

	pthread_mutex_lock(&p->lock);
	for (;;) {
		struct obj_prepared *j;

		while (!p->todo && !p->stop)
			pthread_cond_wait(&p->wake, &p->lock);
		if (p->stop)
			break;
		j = p->todo;
		p->todo = j->next;
		if (!p->todo)
			p->todo_tail = &p->todo;
		pthread_mutex_unlock(&p->lock);
		prepare(j);
		pthread_mutex_lock(&p->lock);
		j->next = p->done;
		p->done = j;
		pthread_cond_broadcast(&p->done_c);
	}
	pthread_mutex_unlock(&p->lock);
	return NULL;
}

struct obj_prep *obj_prep_new(void)
{
	struct obj_prep *p = calloc(1, sizeof(*p));

	if (!p)
		return NULL;
	pthread_mutex_init(&p->lock, NULL);
	pthread_cond_init(&p->wake, NULL);
	pthread_cond_init(&p->done_c, NULL);
	p->todo_tail = &p->todo;
	/* No thread: jobs are prepared when taken, on the caller's. */
	p->running = !pthread_create(&p->thread, NULL, worker, p);
	return p;
}

int obj_prep_submit(struct obj_prep *p, uint64_t id, int fd, const char *path)
{
	struct obj_prepared *j = calloc(1, sizeof(*j));

	if (!j || !(j->path = strdup(path))) {
		free(j);
		close(fd);
		return -ENOMEM;
	}
	j->id = id;
	j->fd = fd;
	pthread_mutex_lock(&p->lock);
	*p->todo_tail = j;
	p->todo_tail = &j->next;
	pthread_cond_signal(&p->wake);
	pthread_mutex_unlock(&p->lock);
	return 0;
}

/* Unlinks job id from *list; NULL if it is not there. */
static struct obj_prepared *unlink_job(struct obj_prepared **list, uint64_t id,
				       struct obj_prepared ***tail)
{
	for (struct obj_prepared **pp = list; *pp; pp = &(*pp)->next) {
		struct obj_prepared *j = *pp;

		if (j->id != id)
			continue;
		*pp = j->next;
		if (tail && *tail == &j->next)
			*tail = pp;
		j->next = NULL;
		return j;
	}
	return NULL;
}

struct obj_prepared *obj_prep_take(struct obj_prep *p, uint64_t id, int wait)
{
	struct obj_prepared *j;

	pthread_mutex_lock(&p->lock);
	while (!(j = unlink_job(&p->done, id, NULL))) {
		if (!p->running) {
			/* No worker: do it now, here. */
			j = unlink_job(&p->todo, id, &p->todo_tail);
			pthread_mutex_unlock(&p->lock);
			if (j)
				prepare(j);
			return j;
		}
		if (!wait)
			break;
		pthread_cond_wait(&p->done_c, &p->lock);
	}
	pthread_mutex_unlock(&p->lock);
	return j;
}

void obj_prepared_free(struct obj_prepared *j)
{
	if (!j)
		return;
	if (j->fd >= 0)
		close(j->fd);
	srclines_free(j->dwarf);
	obj_symtab_free(j->syms);
	free(j->path);
	free(j);
}

void obj_prep_free(struct obj_prep *p)
{
	struct obj_prepared *j;

	if (!p)
		return;
	pthread_mutex_lock(&p->lock);
	p->stop = 1;
	pthread_cond_signal(&p->wake);
	pthread_mutex_unlock(&p->lock);
	if (p->running)
		pthread_join(p->thread, NULL);
	while ((j = p->todo)) {
		p->todo = j->next;
		obj_prepared_free(j);
	}
	while ((j = p->done)) {
		p->done = j->next;
		obj_prepared_free(j);
	}
	pthread_mutex_destroy(&p->lock);
	pthread_cond_destroy(&p->wake);
	pthread_cond_destroy(&p->done_c);
	free(p);
}

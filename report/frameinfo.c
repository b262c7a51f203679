/*
 * frameinfo.c - the per-name descriptions of frames (see frameinfo.h).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "report/frameinfo.h"

static const char *const kind_names[] = {
#define FRAME_KIND_NAME(k, name, help) name,
	FRAME_KINDS(FRAME_KIND_NAME)
#undef FRAME_KIND_NAME
};

const char *frame_kind_name(uint32_t kind)
{
	return kind < FRAME_NKINDS ? kind_names[kind] : "other";
}

void frameinfo_init(struct frame_infos *t, struct strtab *names)
{
	memset(t, 0, sizeof(*t));
	t->names = names;
}

void frameinfo_free(struct frame_infos *t)
{
	free(t->v);
	free(t->maps);
	htab_free(&t->maps_h);
	memset(t, 0, sizeof(*t));
}

static int unset(const struct frame_info *fi)
{
	return fi->kind == FRAME_OTHER && fi->func == FRAMEINFO_NONE;
}

int frameinfo_note(struct frame_infos *t, uint32_t id, const struct frame_info *fi)
{
	int err;

	if (id < t->len && !unset(&t->v[id]))
		return 0;
	err = GROW(t->v, t->cap, (size_t)id + 1);
	if (err)
		return err;
	for (; t->len <= id; t->len++)
		t->v[t->len] = (struct frame_info){ .kind = FRAME_OTHER, .func = FRAMEINFO_NONE,
						    .file = FRAMEINFO_NONE,
						    .mapping = FRAMEINFO_NONE };
	t->v[id] = *fi;
	if (t->v[id].func == FRAMEINFO_NONE)
		t->v[id].func = id;
	return 0;
}

struct frame_info frameinfo_get(const struct frame_infos *t, uint32_t id)
{
	if (id < t->len && !unset(&t->v[id]))
		return t->v[id];
	return (struct frame_info){ .kind = FRAME_OTHER, .func = id, .file = FRAMEINFO_NONE,
				    .mapping = FRAMEINFO_NONE };
}

int frameinfo_mapping(struct frame_infos *t, const char *path,
		      const uint8_t *build_id, uint32_t len, uint32_t *idx)
{
	uint32_t pid, bid = FRAMEINFO_NONE;
	struct htab_probe p;
	char hex[2 * 64 + 1];
	uint64_t hash;
	int64_t i;
	int err;

	err = strtab_intern(t->names, path, strlen(path), &pid);
	if (err)
		return err;
	if (len) {
		if (len > 64)
			len = 64;
		for (uint32_t k = 0; k < len; k++)
			snprintf(hex + 2 * k, 3, "%02x", build_id[k]);
		err = strtab_intern(t->names, hex, 2 * len, &bid);
		if (err)
			return err;
	}
	hash = hash_mix(hash_u64(pid), bid);
	htab_probe_start(&t->maps_h, hash, &p);
	while ((i = htab_probe_next(&t->maps_h, &p)) >= 0) {
		if (t->maps[i].path == pid && t->maps[i].build_id == bid) {
			*idx = i;
			return 0;
		}
	}
	err = GROW(t->maps, t->capmaps, t->nmaps + 1);
	if (!err)
		err = htab_insert(&t->maps_h, hash, t->nmaps);
	if (err)
		return err;
	t->maps[t->nmaps] = (struct frame_mapping){ .path = pid, .build_id = bid };
	*idx = t->nmaps++;
	return 0;
}

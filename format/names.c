/*
 * names.c - the human-readable names of codecs and record types.  Codec
 * names appear on the command line (`record --compress lz4`) and in
 * `luaprof info` (its codecs line), record type names in diagnostics and
 * the tests, so they live next to the format rather than in either tool;
 * both directions of the codec mapping share one table, and the record
 * names expand the list of types (LP_RECDEF in trace.h).  Event kinds'
 * names and units (LP_KINDDEF in kinds.h) are here for the same reason:
 * `report --kind`, headers and pprof's sample types all read them.
 */
#include <errno.h>
#include <string.h>

#include "format/trace.h"

static const char *const codec_names[] = {
	[LP_CODEC_NONE] = "none",
	[LP_CODEC_LZ4] = "lz4",
	[LP_CODEC_ZLIB] = "zlib",
};

static const char *const record_names[] = {
#define NAME(T, n, num, kind) [LP_REC_##T] = #n,
	LP_RECDEF(NAME)
#undef NAME
};

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

const char *lp_codec_name(enum lp_codec codec)
{
	/* The cast also turns a negative value into a large, rejected one. */
	if ((unsigned int)codec < ARRAY_SIZE(codec_names))
		return codec_names[codec];
	return "unknown";
}

int lp_codec_parse(const char *name, enum lp_codec *codec)
{
	unsigned int i;

	if (!name)
		return -EINVAL;
	for (i = 0; i < ARRAY_SIZE(codec_names); i++) {
		if (!strcmp(name, codec_names[i])) {
			*codec = (enum lp_codec)i;
			return 0;
		}
	}
	return -EINVAL;
}

static const struct lp_kind_info kind_infos[] = {
#define INFO(NAME, num, name, unit, ppc, ppv, ppu, shown, div, help) \
	[num] = { name, unit, ppc, ppv, ppu, shown, div, help },
	LP_KINDDEF(INFO)
#undef INFO
};

const struct lp_kind_info *lp_kind_info(uint32_t kind)
{
	if (kind < ARRAY_SIZE(kind_infos) && kind_infos[kind].name)
		return &kind_infos[kind];
	return NULL;
}

int lp_kind_parse(const char *name, uint32_t *kind)
{
	for (uint32_t k = 0; name && k < ARRAY_SIZE(kind_infos); k++) {
		if (kind_infos[k].name && !strcmp(name, kind_infos[k].name)) {
			*kind = k;
			return 0;
		}
	}
	return -EINVAL;
}

const char *lp_record_name(enum lp_record_type type)
{
	if ((unsigned int)type < ARRAY_SIZE(record_names) &&
	    record_names[type])
		return record_names[type];
	return "unknown";
}

/*
 * luajit_sources.c - the Lua source files of a trace, by id (see
 * luajit_sources.h).
 *
 * A source's text comes from the trace and is untrusted: it is kept with
 * its length (it may hold NUL bytes), and split once into lines by '\n'
 * (a '\r' before it is dropped), so a line is found by index, never by
 * scanning.  Lua source is plain text: NUL bytes print as '?' later.  Line N of the text is the chunk's line N, as LuaJIT numbers
 * them; a text cut by the recorder simply has fewer lines.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "lib/htab.h"
#include "report/luajit_sources.h"

struct src {
	uint64_t id;
	uint32_t status;
	char *text;
	size_t len;
	size_t *starts; /* nlines + 1 offsets: line i is [starts[i-1], starts[i]) */
	uint32_t nlines;
};

struct luasrc {
	struct src *v;
	size_t n, cap;
	struct htab h;
};

int luasrc_new(struct luasrc **out)
{
	*out = calloc(1, sizeof(**out));
	return *out ? 0 : -ENOMEM;
}

void luasrc_free(struct luasrc *s)
{
	if (!s)
		return;
	for (size_t i = 0; i < s->n; i++) {
		free(s->v[i].text);
		free(s->v[i].starts);
	}
	free(s->v);
	htab_free(&s->h);
	free(s);
}

static const struct src *find(const struct luasrc *s, uint64_t id)
{
	struct htab_probe p;
	int64_t i;

	if (!s || !id)
		return NULL;
	htab_probe_start(&s->h, hash_u64(id), &p);
	while ((i = htab_probe_next(&s->h, &p)) >= 0)
		if (s->v[i].id == id)
			return &s->v[i];
	return NULL;
}

int luasrc_add(struct luasrc *s, const struct lp_lua_source *rec)
{
	struct src *e;
	uint32_t n = 1;
	size_t len = rec->text_len;

	if (!rec->id || find(s, rec->id))
		return 0;
	if (GROW(s->v, s->cap, s->n + 1))
		return -ENOMEM;
	e = &s->v[s->n];
	memset(e, 0, sizeof(*e));
	e->id = rec->id;
	e->status = rec->status;
	/* Only a text the recorder vouched for.  LuaJIT counts what
	 * follows the last line break as one more line (where a main chunk
	 * ends), so k breaks make k + 1 lines; but a text cut at a line
	 * break has no line after it. */
	if (rec->status != LP_LUASRC_WHOLE && rec->status != LP_LUASRC_CUT)
		len = 0;
	for (size_t i = 0; i < len; i++)
		n += rec->text[i] == '\n';
	e->text = malloc(len + 1);
	e->starts = malloc((n + 1) * sizeof(*e->starts));
	if (!e->text || !e->starts) {
		free(e->text);
		free(e->starts);
		return -ENOMEM;
	}
	memcpy(e->text, rec->text, len);
	e->text[len] = '\0';
	e->len = len;
	e->starts[0] = 0;
	e->nlines = 0;
	for (size_t i = 0; i < len; i++)
		if (rec->text[i] == '\n')
			e->starts[++e->nlines] = i + 1;
	e->starts[++e->nlines] = len;
	if (!len || (rec->status == LP_LUASRC_CUT && rec->text[len - 1] == '\n'))
		e->nlines--;
	if (htab_insert(&s->h, hash_u64(e->id), s->n)) {
		free(e->text);
		free(e->starts);
		return -ENOMEM;
	}
	s->n++;
	return 0;
}

uint32_t luasrc_status(const struct luasrc *s, uint64_t id)
{
	const struct src *e = find(s, id);

	return e ? e->status : 0;
}

uint32_t luasrc_nlines(const struct luasrc *s, uint64_t id)
{
	const struct src *e = find(s, id);

	return e ? e->nlines : 0;
}

int luasrc_line(const struct luasrc *s, uint64_t id, uint32_t line,
		const char **text, size_t *len)
{
	const struct src *e = find(s, id);
	size_t a, b;

	if (!e || !line || line > e->nlines)
		return -ENOENT;
	a = e->starts[line - 1];
	b = e->starts[line];
	if (b > a && e->text[b - 1] == '\n')
		b--;
	if (b > a && e->text[b - 1] == '\r')
		b--;
	*text = e->text + a;
	*len = b - a;
	return 0;
}

const char *luasrc_why_not(const struct luasrc *s, uint64_t id)
{
	if (!id)
		return "not loaded from a file";
	switch (luasrc_status(s, id)) {
	case LP_LUASRC_WHOLE:
		return "line not in the file";
	case LP_LUASRC_CUT:
		return "past the part of the file the trace holds";
	case LP_LUASRC_CHANGED:
		return "the file changed since it was loaded";
	case LP_LUASRC_UNREADABLE:
		return "the file could not be read when recording";
	case LP_LUASRC_BUDGET:
		return "over the trace's bound for sources";
	case 0:
		return "not in the trace";
	}
	return "of a kind this luaprof does not know";
}

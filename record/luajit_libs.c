/*
 * luajit_libs.c - a LuaJIT build's builtins (fast functions), numbered
 * and named from its own library tables, so that a stripped build of any
 * release names `string.format` as the build itself numbers it.
 *
 * Each standard library registers itself with
 *
 *   lj_lib_register(L, libname, init, cf)
 *
 * where init is buildvm's description of the library (lj_libdef.h):
 *
 *   init  [first ffid] [bcff index] [hash size]
 *         then per entry a tag byte, length in its low 6 bits:
 *           0x00 | len  name   a C function        } each takes the next
 *           0x40 | len  name   an assembler one    } ffid; len 0: not put
 *           0x80 | len  name   the same, again     } in the table
 *           0xf9 len name bytecode   a function written in Lua (no ffid)
 *           0xfa, 0xfb + 8 bytes, 0xfc + 1, 0xfd, 0xfe (skips an ffid)
 *           0xc0 | len  a string pushed for a later 0xfa
 *           0xff   the end
 *
 * The luaopen_* functions are exported, and the calls they make with a
 * pointer into data that reads as such a description are the libraries'
 * registrations (through a function pointer for jit.util and
 * jit.profile, which lj_lib_prereg registers lazily: such a pointer is
 * followed).  Names are spelled as LuaJIT's jit/vmdef.lua spells them:
 * "lib.name", base functions bare, a function with no name (len 0)
 * named after the one that follows it, plus "_aux" (ipairs_aux,
 * gmatch_aux, coroutine.wrap_aux, as LuaJIT's sources name them).  A
 * library registered without a name (the io file methods, the ffi and
 * string.buffer libraries) takes the prefix that the known build of the
 * same variant gives most of its functions.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "record/elfimage.h"
#include "record/luajit_code.h"
#include "record/symexec.h"

#define LIB_MAX 64          /* registrations looked at */
#define INIT_MAX 4096       /* bytes of one description */
#define FF_MAX 256

enum {
	LIBINIT_LENMASK = 0x3f, LIBINIT_TAGMASK = 0xc0, LIBINIT_STRING = 0xc0,
	LIBINIT_LUA = 0xf9, LIBINIT_SET = 0xfa, LIBINIT_NUMBER = 0xfb,
	LIBINIT_COPY = 0xfc, LIBINIT_LASTCL = 0xfd, LIBINIT_FFID = 0xfe,
	LIBINIT_END = 0xff,
};

struct lib {
	uint64_t init;     /* 0: a lazily registered function (postreg) */
	char name[64];     /* the registration's libname, "" for none */
	char prereg[64];   /* the lazy registration's name (jit.util) */
	uint32_t ffid;     /* postreg: the function's id */
};

struct cursor {
	const uint8_t *p, *end;
};

static int get_byte(struct cursor *c, uint8_t *b)
{
	if (c->p >= c->end)
		return -1;
	*b = *c->p++;
	return 0;
}

static int skip(struct cursor *c, size_t n)
{
	if ((size_t)(c->end - c->p) < n)
		return -1;
	c->p += n;
	return 0;
}

static int uleb(struct cursor *c, uint32_t *v)
{
	uint32_t r = 0;
	uint8_t b;

	for (int sh = 0; sh < 35; sh += 7) {
		if (get_byte(c, &b))
			return -1;
		r |= (uint32_t)(b & 0x7f) << sh;
		if (b < 0x80) {
			*v = r;
			return 0;
		}
	}
	return -1;
}

/* A table constant's key or value (lj_bcread.c bcread_ktabk). */
static int skip_ktabk(struct cursor *c)
{
	uint32_t tp, v;

	if (uleb(c, &tp))
		return -1;
	if (tp >= 5) /* BCDUMP_KTAB_STR */
		return skip(c, tp - 5);
	if (tp == 3) /* INT */
		return uleb(c, &v);
	if (tp == 4) /* NUM */
		return uleb(c, &v) || uleb(c, &v) ? -1 : 0;
	return 0;
}

/* A stripped prototype as lj_bcread_proto reads it (no length first). */
static int skip_proto(struct cursor *c)
{
	uint8_t b[4];
	uint32_t kgc, kn, bc, v;

	for (int i = 0; i < 4; i++) /* flags, numparams, framesize, sizeuv */
		if (get_byte(c, &b[i]))
			return -1;
	if (uleb(c, &kgc) || uleb(c, &kn) || uleb(c, &bc) || kgc > 4096 || kn > 4096 ||
	    bc > 65536 || skip(c, (size_t)bc * 4 + (size_t)b[3] * 2))
		return -1;
	for (uint32_t i = 0; i < kgc; i++) {
		uint32_t tp;

		if (uleb(c, &tp))
			return -1;
		if (tp >= 5) { /* BCDUMP_KGC_STR */
			if (skip(c, tp - 5))
				return -1;
		} else if (tp == 1) { /* TAB */
			uint32_t na, nh;

			if (uleb(c, &na) || uleb(c, &nh) || na > 4096 || nh > 4096)
				return -1;
			for (uint32_t k = 0; k < na + 2 * nh; k++)
				if (skip_ktabk(c))
					return -1;
		} else if (tp != 0) { /* I64, U64: two numbers; COMPLEX: four */
			for (uint32_t k = 0; k < (tp == 4 ? 4u : 2u); k++)
				if (uleb(c, &v))
					return -1;
		}
	}
	for (uint32_t i = 0; i < kn; i++) {
		uint8_t first;

		if (get_byte(c, &first))
			return -1;
		if (first & 0x80)
			while (!get_byte(c, &b[0]) && b[0] >= 0x80)
				;
		if ((first & 1) && uleb(c, &v))
			return -1;
	}
	return 0;
}

/* One name of a description. */
struct entry {
	uint32_t ffid;
	char name[64];
	int noreg; /* an id registered elsewhere (LIBINIT_FFID), not a helper */
};

/*
 * Parses a description: its functions' ffids and names (empty for an
 * unnamed one).  The number of entries, or -1 if the bytes are not one.
 */
static int parse_init(const uint8_t *p, size_t len, struct entry *e, int max)
{
	struct cursor c = { p, p + len };
	uint8_t ffid, bcff, hsize, tag, l;
	int n = 0;

	if (get_byte(&c, &ffid) || get_byte(&c, &bcff) || get_byte(&c, &hsize) ||
	    hsize > 128)
		return -1;
	for (uint32_t id = ffid;;) {
		if (get_byte(&c, &tag))
			return -1;
		l = tag & LIBINIT_LENMASK;
		if ((tag & LIBINIT_TAGMASK) != LIBINIT_STRING) {
			if (n == max || id >= FF_MAX || (size_t)(c.end - c.p) < l)
				return -1;
			e[n].ffid = id++;
			for (int i = 0; i < l; i++)
				if (c.p[i] < 0x21 || c.p[i] > 0x7e)
					return -1;
			memcpy(e[n].name, c.p, l);
			e[n].noreg = 0;
			e[n++].name[l] = '\0';
			c.p += l;
			continue;
		}
		switch (tag) {
		case LIBINIT_LUA:
			if (get_byte(&c, &l) || skip(&c, l) || skip_proto(&c))
				return -1;
			break;
		case LIBINIT_SET:
		case LIBINIT_LASTCL:
			break;
		case LIBINIT_NUMBER:
			if (skip(&c, 8))
				return -1;
			break;
		case LIBINIT_COPY:
			if (skip(&c, 1))
				return -1;
			break;
		case LIBINIT_FFID:
			/* an id registered elsewhere (LJLIB_NOREG): unnamed */
			if (n == max || id >= FF_MAX)
				return -1;
			e[n].ffid = id++;
			e[n].noreg = 1;
			e[n++].name[0] = '\0';
			break;
		case LIBINIT_END:
			return n;
		default:
			if (skip(&c, l))
				return -1;
		}
	}
}

/* Reads and parses the description at a: parse_init's result. */
static int read_init(const struct elf_image *im, uint64_t a, struct entry *e, int max)
{
	uint8_t buf[INIT_MAX];
	size_t len = sizeof(buf);

	/* as much as the segment holds, up to INIT_MAX */
	while (len >= 16 && elf_image_read(im, a, buf, len))
		len /= 2;
	return len >= 16 ? parse_init(buf, len, e, max) : -1;
}

/* A NUL-terminated string of the image at a, into buf; 0 or -1. */
static int image_str(const struct elf_image *im, uint64_t a, char *buf, size_t len)
{
	if (!a || elf_image_read(im, a, buf, len - 1))
		return -1;
	buf[len - 1] = '\0';
	return memchr(buf, '\0', len - 1) ? 0 : -1;
}

static int in_code(const struct elf_image *im, uint64_t a)
{
	return elf_image_is_text(im, a);
}

/* The registrations a luaopen_* function makes, into libs. */
static void find_libs(struct elf_image *im, struct sx_ctx *sx, uint64_t fn,
		      const char *prereg, struct lib *libs, int *nlibs, int depth)
{
	const struct sx_fact *f;
	size_t n;
	struct { uint64_t fn; char name[64]; } lazy[8];
	struct entry *e = malloc(FF_MAX * sizeof(*e));
	int nlazy = 0;

	if (!e)
		return;
	sx_clear_facts(sx);
	if (sx_run(sx, fn, NULL, 0, 0, 2000)) {
		free(e);
		return;
	}
	f = sx_facts(sx, &n);
	for (size_t i = 0; i < n && *nlibs < LIB_MAX; i++) {
		int64_t init, name, code, id;
		uint8_t probe[3];
		int k;

		/* lj_lib_postreg(L, cf, FF_table_clone, "clone"), often a tail
		 * call: the function prereg's name names */
		if ((f[i].kind == SXF_CALL || f[i].kind == SXF_JMP) && prereg[0] &&
		    sx_is_const(&f[i].args[1], &code) && in_code(im, (uint64_t)code) &&
		    sx_is_const(&f[i].args[2], &id) && id > 1 && id < FF_MAX &&
		    sx_is_const(&f[i].args[3], &name) && !in_code(im, (uint64_t)name)) {
			libs[*nlibs].init = 0;
			libs[*nlibs].ffid = (uint32_t)id;
			snprintf(libs[*nlibs].prereg, sizeof(libs[*nlibs].prereg), "%s", prereg);
			libs[(*nlibs)++].name[0] = '\0';
			continue;
		}
		if (f[i].kind != SXF_CALL)
			continue;
		/* lj_lib_prereg(L, "jit.util", luaopen_jit_util, env) */
		if (depth && sx_is_const(&f[i].args[1], &name) &&
		    sx_is_const(&f[i].args[2], &code) && in_code(im, (uint64_t)code) &&
		    nlazy < 8) {
			lazy[nlazy].fn = (uint64_t)code;
			if (image_str(im, (uint64_t)name, lazy[nlazy].name,
				      sizeof(lazy[nlazy].name)))
				lazy[nlazy].name[0] = '\0';
			nlazy++;
		}
		if (!sx_is_const(&f[i].args[2], &init) || in_code(im, (uint64_t)init) ||
		    elf_image_read(im, (uint64_t)init, probe, sizeof(probe)) ||
		    read_init(im, (uint64_t)init, e, FF_MAX) <= 0)
			continue;
		for (k = 0; k < *nlibs && libs[k].init != (uint64_t)init; k++)
			;
		if (k < *nlibs)
			continue;
		libs[k].init = (uint64_t)init;
		if (!sx_is_const(&f[i].args[1], &name) ||
		    image_str(im, (uint64_t)name, libs[k].name, sizeof(libs[k].name)))
			libs[k].name[0] = '\0';
		snprintf(libs[k].prereg, sizeof(libs[k].prereg), "%s", prereg);
		(*nlibs)++;
	}
	free(e);
	for (int i = 0; i < nlazy; i++)
		find_libs(im, sx, lazy[i].fn, lazy[i].name, libs, nlibs, depth - 1);
}

/* Whether the known build has the builtin "prefix.name". */
static int like_has(const struct lj_build_desc *like, const char *prefix, size_t plen,
		    const char *name)
{
	for (uint32_t m = 0; m < like->nffnames; m++) {
		const char *full = like->ffnames[m];

		if (!strncmp(full, prefix, plen) && full[plen] == '.' &&
		    !strcmp(full + plen + 1, name))
			return 1;
	}
	return 0;
}

/* The prefix the known build gives most of these functions, among those
 * that no named library of this build has; "" if none. */
static void guess_prefix(const struct entry *e, int n, const struct lj_build_desc *like,
			 const struct lib *libs, int nlibs, char *out, size_t len)
{
	int best = 0;

	out[0] = '\0';
	if (!like)
		return;
	/* each distinct prefix of the known build's names, once */
	for (uint32_t k = 0; k < like->nffnames; k++) {
		const char *full = like->ffnames[k], *dot = strrchr(full, '.');
		size_t plen = dot ? (size_t)(dot - full) : 0;
		int votes = 0, named = 0, seen = 0;

		if (!dot || plen >= 64)
			continue;
		for (uint32_t j = 0; j < k && !seen; j++)
			seen = !strncmp(like->ffnames[j], full, plen + 1) &&
			       strrchr(like->ffnames[j], '.') == like->ffnames[j] + plen;
		for (int l = 0; l < nlibs && !seen; l++)
			named |= strlen(libs[l].name) == plen && !strncmp(libs[l].name, full, plen);
		if (seen || named)
			continue;
		for (int i = 0; i < n; i++)
			votes += e[i].name[0] && like_has(like, full, plen, e[i].name);
		if (votes > best) {
			best = votes;
			snprintf(out, len, "%.*s", (int)plen, full);
		}
	}
}

/* Does the known build number every builtin named here as this build
 * does (and at least LIKE_MIN of them)?  Then this build's unnamed ids
 * are the known build's too: the lazily registered functions (table.new,
 * table.isempty, jit.util's) whose registration an amalgamated build
 * inlines out of reach. */
#define LIKE_MIN 100
static int like_numbering(const struct lj_ffnames *out, uint32_t top,
			  const struct lj_build_desc *like)
{
	uint32_t named = 0;

	if (top > like->nffnames)
		return 0;
	for (uint32_t i = 2; i < top; i++) {
		if (!out->names[i] || !out->names[i][0])
			continue;
		if (strcmp(out->names[i], like->ffnames[i]))
			return 0;
		named++;
	}
	return named >= LIKE_MIN;
}

static int fill_from_like(struct lj_ffnames *out, uint32_t top,
			  const struct lj_build_desc *like)
{
	for (uint32_t i = 2; i < top; i++) {
		if (out->names[i] && out->names[i][0])
			continue;
		free(out->names[i]);
		out->names[i] = strdup(like->ffnames[i]);
		if (!out->names[i])
			return -ENOMEM;
	}
	return 0;
}

int lj_ffnames_from_code(struct elf_image *im, struct sx_ctx *sx,
			 const struct lj_build_desc *like, struct lj_ffnames *out,
			 int *resume, int *wrap_aux)
{
	struct lib libs[LIB_MAX];
	int nlibs = 0;
	uint32_t top = 0;

	memset(out, 0, sizeof(*out));
	*resume = *wrap_aux = -1;
	for (size_t i = 0; i < im->nsyms; i++)
		if (!strncmp(im->syms[i].name, "luaopen_", 8))
			find_libs(im, sx, im->syms[i].addr, "", libs, &nlibs, 1);
	out->names = calloc(FF_MAX, sizeof(*out->names));
	if (!out->names)
		return -ENOMEM;
	for (int l = 0; l < nlibs; l++) {
		if (libs[l].init || out->names[libs[l].ffid])
			continue;
		out->names[libs[l].ffid] = strdup(libs[l].prereg);
		if (!out->names[libs[l].ffid])
			return -ENOMEM;
		if (libs[l].ffid + 1 > top)
			top = libs[l].ffid + 1;
	}
	for (int l = 0; l < nlibs; l++) {
		struct entry e[FF_MAX];
		char prefix[64];
		int n = libs[l].init ? read_init(im, libs[l].init, e, FF_MAX) : 0;

		if (n <= 0)
			continue;
		if (!strcmp(libs[l].name, "_G"))
			prefix[0] = '\0';
		else if (libs[l].name[0])
			snprintf(prefix, sizeof(prefix), "%s", libs[l].name);
		else
			guess_prefix(e, n, like, libs, nlibs, prefix, sizeof(prefix));
		if (!prefix[0] && !libs[l].name[0])
			snprintf(prefix, sizeof(prefix), "%s", libs[l].prereg);
		for (int i = n - 1; i >= 0; i--) {
			char name[160];

			/* an unnamed helper before its user: ipairs_aux and
			 * gmatch_aux (LJLIB_NOREGUV), coroutine.wrap_aux
			 * (LJLIB_NOREG, as functions registered elsewhere
			 * are: table.new, OpenResty's table.isempty) */
			if (!e[i].name[0] && i + 1 < n && e[i + 1].name[0] &&
			    (!e[i].noreg || !strcmp(e[i + 1].name, "wrap")) &&
			    !strstr(e[i + 1].name, "_aux") && !out->names[e[i].ffid])
				snprintf(e[i].name, sizeof(e[i].name), "%.59s_aux", e[i + 1].name);
			if (!e[i].name[0] || out->names[e[i].ffid])
				continue;
			snprintf(name, sizeof(name), "%s%s%s", prefix, prefix[0] ? "." : "",
				 e[i].name);
			out->names[e[i].ffid] = strdup(name);
			if (!out->names[e[i].ffid])
				return -ENOMEM;
			if (e[i].ffid + 1 > top)
				top = e[i].ffid + 1;
		}
	}
	if (like && like_numbering(out, top, like)) {
		int err = fill_from_like(out, top, like);

		if (err)
			return err;
	}
	for (uint32_t i = 0; i < top; i++) {
		if (out->names[i] && !strcmp(out->names[i], "coroutine.resume"))
			*resume = (int)i;
		else if (out->names[i] && !strcmp(out->names[i], "coroutine.wrap_aux"))
			*wrap_aux = (int)i;
	}
	/* Ids 0 and 1 are Lua and C functions; unnamed ids stay "". */
	for (uint32_t i = 0; i < top || i < 2; i++) {
		if (!out->names[i])
			out->names[i] = strdup(i == 0 ? "Lua" : i == 1 ? "C" : "");
		if (!out->names[i])
			return -ENOMEM;
	}
	out->n = top > 2 ? top : 2;
	return top > 2 ? 0 : -ENOENT;
}

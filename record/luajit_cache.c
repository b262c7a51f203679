/*
 * luajit_cache.c - layouts derived from a LuaJIT build's code, kept on
 * disk by the build's identity, so that the next recording of the same
 * build has them at once.
 *
 * Reading a build's code takes some 10 ms (luajit_code.c), and a process
 * that starts running Lua before its layout is known has no Lua frames
 * until then: a short-lived child, a host that dlopen()s libluajit.  As
 * perf keeps ~/.debug by build-id, luaprof keeps one small text file per
 * build in $LUAPROF_CACHE_DIR, else $XDG_CACHE_HOME/luaprof/luajit, else
 * ~/.cache/luaprof/luajit, named by the object's build-id (or the hash
 * format/objid.c makes of a file without one) and size:
 *
 *   luaprof-luajit-layout 1 <luaprof's version>
 *   field <name> <value> <code|struct> <where>     one per field found
 *   vm <start> <end>                               the interpreter
 *   ff <id> <name>                                 one per builtin
 *   end
 *
 * A file is believed only if it is a regular file owned by this user
 * that no one else may write, its first line names this version of
 * luaprof and of the rules (a newer luaprof reads the code again), every
 * line parses and fits, and it ends with "end".  Anything else is read
 * again from the code and written anew: the cache can make a recording
 * faster, never different.  It is written private (0600, in a 0700
 * directory), to a temporary file renamed over the old one.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "format/trace.h"
#include "record/luajit_code.h"

/* Bumped whenever luajit_code.c's rules, luajit_libs.c or luajit_struct.c
 * change what they derive: older files are read again from the code. */
#define RULES_VERSION 3

#define LINE_MAX_LEN 256
#define FF_MAX 256

/* Where a field may come from: the rules' and declarations' names, the
 * only `via` strings a file may give (they must point to static text). */
static const char *const vias[] = {
	"lua_pushthread", "lua_gettop", "lua_call", "lua_newstate", "luaL_newstate",
	"lua_tolstring", "luaJIT_setmode", "its interpreter", "lua_checkstack",
	"lua_cpcall", "luaopen_base", "lua_State", "GCfuncC", "GCproto", "GCtrace",
	"SnapShot", "jit_State", "CFRAME_OFS_*",
};

static const char *via_static(const char *s)
{
	for (size_t i = 0; i < sizeof(vias) / sizeof(vias[0]); i++)
		if (!strcmp(vias[i], s))
			return vias[i];
	return NULL;
}

/* The cache file's path for the object open at fd: 0, or -errno. */
static int cache_path(int fd, char *path, size_t len, char *dir, size_t dlen)
{
	const char *env = getenv("LUAPROF_CACHE_DIR"), *xdg = getenv("XDG_CACHE_HOME");
	const char *home = getenv("HOME");
	uint8_t ident[LP_OBJID_MAX];
	uint32_t kind, n;
	uint64_t size;
	char hex[2 * LP_OBJID_MAX + 1];
	int w;

	if (lp_objid_read(fd, &kind, ident, &n, &size) || n > LP_OBJID_MAX)
		return -ENOENT;
	for (uint32_t i = 0; i < n; i++)
		snprintf(hex + 2 * i, 3, "%02x", ident[i]);
	if (env && env[0] == '/')
		w = snprintf(dir, dlen, "%s", env);
	else if (xdg && xdg[0] == '/')
		w = snprintf(dir, dlen, "%s/luaprof/luajit", xdg);
	else if (home && home[0] == '/')
		w = snprintf(dir, dlen, "%s/.cache/luaprof/luajit", home);
	else
		return -ENOENT;
	if (w < 0 || (size_t)w >= dlen)
		return -ENAMETOOLONG;
	w = snprintf(path, len, "%s/%s%s-%llu", dir, kind == LP_OBJID_BUILD_ID ? "" : "h",
		     hex, (unsigned long long)size);
	return w < 0 || (size_t)w >= len ? -ENAMETOOLONG : 0;
}

/* One "field NAME VALUE FROM WHERE" line into r; 0 or -EINVAL. */
static int parse_field(char *line, struct lj_code_result *r)
{
	char name[64], from[16], *where;
	long long v;
	int f, n = 0;

	if (sscanf(line, "field %63s %lld %15s %n", name, &v, from, &n) != 3 || !n)
		return -EINVAL;
	where = line + n;
	where[strcspn(where, "\n")] = '\0';
	for (f = 0; f < LJF__N && strcmp(lj_fields[f].name, name); f++)
		;
	if (f == LJF__N || lj_fields[f].group == LJG_PAD || !lj_field_fits(f, v) ||
	    r->from[f])
		return -EINVAL;
	if (!strcmp(from, "code"))
		r->from[f] = LJ_FROM_CODE;
	else if (!strcmp(from, "struct"))
		r->from[f] = LJ_FROM_STRUCT;
	else
		return -EINVAL;
	if (!(r->via[f] = via_static(where)))
		return -EINVAL;
	lj_field_set(&r->layout, f, v);
	return 0;
}

/* One "ff ID NAME" line: printable names, ids in order from 0. */
static int parse_ff(char *line, struct lj_code_result *r)
{
	unsigned id;
	int n = 0;
	char *name;

	if (sscanf(line, "ff %u %n", &id, &n) != 1 || !n || id != r->ff.n || id >= FF_MAX)
		return -EINVAL;
	name = line + n;
	name[strcspn(name, "\n")] = '\0';
	for (const char *p = name; *p; p++)
		if (*p < 0x21 || *p > 0x7e)
			return -EINVAL;
	if (strlen(name) > 63 || !(r->ff.names[id] = strdup(name)))
		return -EINVAL;
	r->ff.n = id + 1;
	return 0;
}

static int parse(FILE *f, struct lj_code_result *r)
{
	char line[LINE_MAX_LEN], head[64];
	unsigned long long a, b;
	int rules, ended = 0;

	if (!fgets(line, sizeof(line), f) ||
	    sscanf(line, "luaprof-luajit-layout %d %63s", &rules, head) != 2 ||
	    rules != RULES_VERSION || strcmp(head, LUAPROF_VERSION))
		return -ESTALE;
	r->ff.names = calloc(FF_MAX, sizeof(*r->ff.names));
	if (!r->ff.names)
		return -ENOMEM;
	while (fgets(line, sizeof(line), f)) {
		if (ended || !strchr(line, '\n'))
			return -EINVAL;
		if (!strncmp(line, "field ", 6)) {
			if (parse_field(line, r))
				return -EINVAL;
		} else if (!strncmp(line, "ff ", 3)) {
			if (parse_ff(line, r))
				return -EINVAL;
		} else if (sscanf(line, "vm %llx %llx", &a, &b) == 2 && a < b) {
			r->vm_start = a;
			r->vm_end = b;
		} else if (!strcmp(line, "end\n")) {
			ended = 1;
		} else {
			return -EINVAL;
		}
	}
	return ended ? 0 : -EINVAL;
}

int lj_cache_load(int fd, struct lj_code_result *r)
{
	char path[PATH_MAX], dir[PATH_MAX];
	struct stat st;
	FILE *f;
	int cfd, err;

	memset(r, 0, sizeof(*r));
	if (cache_path(fd, path, sizeof(path), dir, sizeof(dir)))
		return -ENOENT;
	cfd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
	if (cfd < 0)
		return -ENOENT;
	if (fstat(cfd, &st) || !S_ISREG(st.st_mode) || st.st_uid != geteuid() ||
	    (st.st_mode & 022) || st.st_size > 64 * 1024 || !(f = fdopen(cfd, "r"))) {
		close(cfd);
		return -EPERM;
	}
	err = parse(f, r);
	fclose(f);
	if (err) {
		lj_ffnames_free(&r->ff);
		memset(r, 0, sizeof(*r));
	}
	return err;
}

static void write_result(FILE *f, const struct lj_code_result *r)
{
	fprintf(f, "luaprof-luajit-layout %d %s\n", RULES_VERSION, LUAPROF_VERSION);
	for (int i = 0; i < LJF__N; i++)
		if (r->from[i] && r->via[i] && via_static(r->via[i]))
			fprintf(f, "field %s %lld %s %s\n", lj_fields[i].name,
				lj_field_get(&r->layout, i),
				r->from[i] == LJ_FROM_CODE ? "code" : "struct", r->via[i]);
	if (r->vm_end)
		fprintf(f, "vm %llx %llx\n", (unsigned long long)r->vm_start,
			(unsigned long long)r->vm_end);
	for (uint32_t i = 0; i < r->ff.n && i < FF_MAX; i++)
		fprintf(f, "ff %u %s\n", i, r->ff.names[i]);
	fprintf(f, "end\n");
}

/* mkdir -p with mode 0700 for what it makes. */
static int make_dirs(char *dir)
{
	for (char *p = dir + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		if (mkdir(dir, 0700) && errno != EEXIST) {
			*p = '/';
			return -errno;
		}
		*p = '/';
	}
	return mkdir(dir, 0700) && errno != EEXIST ? -errno : 0;
}

void lj_cache_store(int fd, const struct lj_code_result *r)
{
	char path[PATH_MAX], dir[PATH_MAX], tmp[PATH_MAX + 16];
	FILE *f;
	int tfd;

	for (int i = 0; i < LJF__N; i++)
		if (r->from[i] && (!r->via[i] || !via_static(r->via[i])))
			return; /* a rule this file does not know: not kept */
	if (r->conflict[0] || cache_path(fd, path, sizeof(path), dir, sizeof(dir)) ||
	    make_dirs(dir) || snprintf(tmp, sizeof(tmp), "%s.%d", path, (int)getpid()) >=
	    (int)sizeof(tmp))
		return;
	tfd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (tfd < 0)
		return;
	f = fdopen(tfd, "w");
	if (!f) {
		close(tfd);
		unlink(tmp);
		return;
	}
	write_result(f, r);
	if (fclose(f) || rename(tmp, path))
		unlink(tmp);
}

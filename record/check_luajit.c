/*
 * check_luajit.c - `luaprof check --luajit FILE|PID`: can luaprof read
 * this LuaJIT?  For the user whose build is not one a test here made,
 * before a recording, and for a bug report: every offset the walker and
 * the recorder use, where the build's code showed it (the function) or
 * that LuaJIT 2.1's declaration gave it, DWARF's value beside it when the
 * object has debug info, and the builtins' names.  Ends with one verdict
 * line; exits 0 when luaprof walks the build's Lua frames, 1 when not.
 * With a PID, the LuaJIT that process maps, read as `record -p` reads it
 * (through /proc/PID/map_files: a container's own file).
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lib/escape.h"
#include "record/luajit.h"
#include "record/luajit_code.h"
#include "record/procmaps.h"

/* "FILE" or "PID": the object to read, open, and its name. */
static int open_object(const char *what, char *name, size_t len, int *fd)
{
	char *end;
	long pid = strtol(what, &end, 10);

	if (*what && !*end && pid > 0 && pid <= INT_MAX) {
		struct maps_table maps;
		struct lj_target *t = NULL;
		char msg[1024];
		int err = procmaps_read((pid_t)pid, &maps);

		if (err) {
			fprintf(stderr, "luaprof check: pid %ld: %s\n", pid, strerror(-err));
			return err;
		}
		err = lj_detect((pid_t)pid, &maps, NULL, &t, NULL, msg, sizeof(msg));
		if (err == -ENOENT) {
			fprintf(stderr, "luaprof check: pid %ld maps no LuaJIT\n", pid);
		} else if (!err || t) {
			for (uint32_t i = 0; i < maps.n && *fd < 0; i++)
				if (!strcmp(maps.v[i].path, t->object))
					*fd = procmaps_open((pid_t)pid, &maps.v[i]);
			snprintf(name, len, "%s (pid %ld)", t->object, pid);
		} else {
			fprintf(stderr, "luaprof check: pid %ld: ", pid);
			esc_fputs(msg, stderr);
			fputc('\n', stderr);
		}
		free(t);
		maps_table_free(&maps);
		return *fd >= 0 ? 0 : -ENOENT;
	}
	*fd = open(what, O_RDONLY | O_CLOEXEC);
	if (*fd < 0) {
		fprintf(stderr, "luaprof check: %s: %s\n", what, strerror(errno));
		return -errno;
	}
	snprintf(name, len, "%s", what);
	return 0;
}

static const char *from_word(const struct lj_code_result *r, int f)
{
	switch (r->from[f]) {
	case LJ_FROM_CODE:
		return r->via[f] ? r->via[f] : "code";
	case LJ_FROM_STRUCT:
		return "declared";
	default:
		return "-";
	}
}

/* The table: one line per field; DWARF's value where there is one.
 * Returns how many fields DWARF gives otherwise. */
static int print_fields(const struct lj_code_result *r, const struct lj_layout *dw)
{
	int differ = 0;

	printf("%-24s %6s  %-28s %s\n", "field", "value", "from", dw ? "DWARF" : "");
	for (int f = 0; f < LJF__N; f++) {
		long long v = lj_field_get(&r->layout, (enum lj_field)f);
		char dwv[32] = "";

		if (lj_fields[f].group == LJG_PAD)
			continue;
		if (dw && !lj_fields[f].in_dwarf) {
			snprintf(dwv, sizeof(dwv), "(not in DWARF)");
		} else if (dw) {
			long long w = lj_field_get(dw, (enum lj_field)f);

			if (w == v)
				snprintf(dwv, sizeof(dwv), "same");
			else
				snprintf(dwv, sizeof(dwv), "%lld DIFFERS", w), differ++;
		}
		if (r->from[f] == LJ_FROM_NONE)
			printf("%-24s %6s  %-28s %s\n", lj_fields[f].name, "-", "-", dwv);
		else
			printf("%-24s %6lld  %-28s %s\n", lj_fields[f].name, v, from_word(r, f), dwv);
	}
	return differ;
}

static void print_builtins(const struct lj_code_result *r, int verbose)
{
	printf("builtins: %u ids, named from its library tables", r->ff.n);
	if (r->ff.n > 2) {
		printf(" (2 ");
		esc_fputs(r->ff.names[2], stdout);
		printf(" ... %u ", r->ff.n - 1);
		esc_fputs(r->ff.names[r->ff.n - 1], stdout);
		printf(")");
	}
	printf("\n");
	for (uint32_t i = 0; verbose && i < r->ff.n; i++) {
		printf("  %3u ", i);
		esc_fputs(r->ff.names[i], stdout);
		putchar('\n');
	}
}

int check_luajit(const char *what, int verbose)
{
	const struct lj_code_result *r;
	const char *msg;
	struct lj_layout dw;
	struct lj_ffnames ff = { 0 };
	char name[PATH_MAX + 32], dmsg[512], path[64], *shown;
	int fd = -1, err, have_dw, differ, snaps;

	if (open_object(what, name, sizeof(name), &fd))
		return 1;
	shown = esc_dup(name);
	if (!shown) {
		close(fd);
		return 1;
	}
	err = lj_layout_of(fd, &r, &msg);
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	have_dw = !lj_layout_from_dwarf(path, &dw, &ff, dmsg, sizeof(dmsg));
	lj_ffnames_free(&ff);
	if (err == -ENOEXEC || (err && !r->from[LJF_ref_size] && !have_dw)) {
		printf("%s: %s\n", shown, msg);
		printf("luaprof cannot walk Lua frames in %s: it is no LuaJIT 2.1 it can read\n",
		       shown);
		close(fd);
		free(shown);
		return 1;
	}
	printf("%s: LuaJIT 2.1 (%s, %s)\n", shown,
	       (r->layout.flags & LJ_LAYOUT_OPENRESTY) ? "OpenResty luajit2" : "upstream",
	       r->layout.ref_size == 8 ? "GC64" : r->layout.ref_size == 4 ? "32-bit refs" :
	       "references unknown");
	differ = print_fields(r, have_dw ? &dw : NULL);
	print_builtins(r, verbose);
	printf("%s\n", msg);
	close(fd);
	snaps = r->from[LJF_sn_size] != LJ_FROM_NONE;
	if (have_dw && differ) {
		printf("luaprof walks this build with DWARF's offsets; its code says otherwise "
		       "for %d field%s (a luaprof bug: please report it)\n", differ,
		       differ > 1 ? "s" : "");
		free(shown);
		return 0;
	}
	if (err && !have_dw) {
		printf("luaprof cannot walk Lua frames in %s: describe it with "
		       "--luajit-offsets\n", shown);
		free(shown);
		return 1;
	}
	free(shown);
	printf("luaprof walks this build: Lua frames%s%s\n",
	       r->from[LJF_g2j] ? ", compiled traces" : " (traces by number only)",
	       snaps ? ", their snapshots (inlined functions)" :
	       r->from[LJF_g2j] ? " (no snapshots: this LuaJIT's keep no machine-code "
				  "offset, a 2021 addition)" : "");
	return 0;
}

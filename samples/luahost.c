/*
 * luahost.c - runs a Lua script in a LuaJIT loaded as a shared library:
 * dlopen()s the given libluajit (luajit2's or upstream's), creates a state,
 * opens the standard libraries, sets the global `arg` (arg[0] = SCRIPT,
 * arg[1..] = ARGS, as the luajit command does) and runs SCRIPT with ARGS
 * also passed as `...`.  Errors are printed with a traceback.  So the Lua
 * VM runs from a mapped libluajit-5.1.so rather than inside an executable,
 * the way nginx's lua module and other embedders use it.  Exits 0 when the
 * script ran, 1 on any error (bad library, unreadable script, Lua error).
 *
 *   usage: luahost [-joff] [-gc SECONDS] LIBLUAJIT.so SCRIPT.lua [ARGS...]
 *   e.g.   luahost /usr/lib/x86_64-linux-gnu/libluajit-5.1.so.2 abc.lua 3
 *
 * -joff turns the JIT compiler off before the script runs, as luajit -joff
 * does (jit.off()).  -gc SECONDS: once the script ran, the host itself
 * runs full collections (lua_gc(L, LUA_GCCOLLECT, 0)) for SECONDS of CPU
 * time, with no Lua code running, as uwsgi does between requests.
 *
 * No LuaJIT headers needed: the few entry points are declared here, with
 * the Lua 5.1 ABI that LuaJIT keeps.  dlopen is in libc since glibc 2.34,
 * so no -ldl.
 */
#include <dlfcn.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define LUA_GLOBALSINDEX (-10002)
#define LUA_GCCOLLECT 2

typedef struct lua_State lua_State;

static struct {
	lua_State *(*newstate)(void);
	void (*openlibs)(lua_State *L);
	int (*loadfile)(lua_State *L, const char *file);
	int (*loadstring)(lua_State *L, const char *s);
	int (*pcall)(lua_State *L, int nargs, int nresults, int errfunc);
	const char *(*tolstring)(lua_State *L, int idx, size_t *len);
	void (*createtable)(lua_State *L, int narr, int nrec);
	void (*pushstring)(lua_State *L, const char *s);
	void (*rawseti)(lua_State *L, int idx, int n);
	void (*getfield)(lua_State *L, int idx, const char *k);
	void (*setfield)(lua_State *L, int idx, const char *k);
	void (*remove)(lua_State *L, int idx);
	int (*gc)(lua_State *L, int what, int data);
	void (*close)(lua_State *L);
} lua;

static int load_lua(const char *libname)
{
	const struct {
		const char *name;
		void *fn;
	} syms[] = {
		{ "luaL_newstate", &lua.newstate },
		{ "luaL_openlibs", &lua.openlibs },
		{ "luaL_loadfile", &lua.loadfile },
		{ "luaL_loadstring", &lua.loadstring },
		{ "lua_pcall", &lua.pcall },
		{ "lua_tolstring", &lua.tolstring },
		{ "lua_createtable", &lua.createtable },
		{ "lua_pushstring", &lua.pushstring },
		{ "lua_rawseti", &lua.rawseti },
		{ "lua_getfield", &lua.getfield },
		{ "lua_setfield", &lua.setfield },
		{ "lua_remove", &lua.remove },
		{ "lua_gc", &lua.gc },
		{ "lua_close", &lua.close },
	};
	void *lib = dlopen(libname, RTLD_NOW | RTLD_GLOBAL);

	if (!lib) {
		fprintf(stderr, "luahost: %s\n", dlerror());
		return -1;
	}
	for (size_t i = 0; i < sizeof(syms) / sizeof(syms[0]); i++) {
		void *p = dlsym(lib, syms[i].name);

		if (!p) {
			fprintf(stderr, "luahost: %s: no symbol %s (not a LuaJIT library?)\n",
				libname, syms[i].name);
			return -1;
		}
		/* POSIX: a data pointer from dlsym converts to a function pointer. */
		*(void **)syms[i].fn = p;
	}
	return 0;
}

static const char *message(lua_State *L)
{
	const char *msg = lua.tolstring(L, -1, NULL);

	return msg ? msg : "(error object is not a string)";
}

/* Full collections from the host, for `seconds` of this process's CPU. */
static void host_gc(lua_State *L, double seconds)
{
	clock_t end = clock() + (clock_t)(seconds * CLOCKS_PER_SEC);

	while (clock() < end)
		lua.gc(L, LUA_GCCOLLECT, 0);
}

int main(int argc, char **argv)
{
	lua_State *L;
	int i, rc = 0, joff = 0;
	double gc = 0;

	if (argc > 1 && strcmp(argv[1], "-joff") == 0) {
		joff = 1;
		argv++;
		argc--;
	}
	if (argc > 2 && strcmp(argv[1], "-gc") == 0) {
		gc = atof(argv[2]);
		argv += 2;
		argc -= 2;
	}
	if (argc < 3) {
		fprintf(stderr, "usage: luahost [-joff] [-gc SECONDS] LIBLUAJIT.so SCRIPT.lua "
			"[ARGS...]\n");
		return 1;
	}
	if (load_lua(argv[1]) < 0)
		return 1;
	L = lua.newstate();
	if (!L) {
		fprintf(stderr, "luahost: cannot create a Lua state\n");
		return 1;
	}
	lua.openlibs(L);
	if (joff && (lua.loadstring(L, "require('jit').off()") != 0 ||
		     lua.pcall(L, 0, 0, 0) != 0)) {
		fprintf(stderr, "luahost: -joff: %s\n", message(L));
		lua.close(L);
		return 1;
	}

	/* arg = { [0] = SCRIPT, ARGS... } */
	lua.createtable(L, argc - 3, 1);
	for (i = 2; i < argc; i++) {
		lua.pushstring(L, argv[i]);
		lua.rawseti(L, -2, i - 2);
	}
	lua.setfield(L, LUA_GLOBALSINDEX, "arg");

	/* Stack: debug.traceback (the message handler), then the chunk. */
	lua.getfield(L, LUA_GLOBALSINDEX, "debug");
	lua.getfield(L, -1, "traceback");
	lua.remove(L, -2);
	if (lua.loadfile(L, argv[2]) != 0) {
		fprintf(stderr, "luahost: %s\n", message(L));
		rc = 1;
	} else {
		for (i = 3; i < argc; i++)
			lua.pushstring(L, argv[i]);
		if (lua.pcall(L, argc - 3, 0, 1) != 0) {
			fprintf(stderr, "luahost: %s\n", message(L));
			rc = 1;
		}
	}
	if (!rc && gc > 0)
		host_gc(L, gc);
	lua.close(L);
	return rc;
}

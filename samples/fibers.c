/*
 * fibers.c - two Lua coroutines, each on a C stack of its own, that
 * switch in C, as tarantool's fibers do: the ground truth for a VM whose
 * G->cur_L runs on another stack than the sampled one.
 *
 * It dlopen()s a libluajit (as luahost.c does, no headers needed), makes
 * two threads of one state (lua_newthread) and two C stacks cut from one
 * allocation, so that both lie in one memory mapping, and runs fiber_a on
 * the first, calling the Lua function work_a, and fiber_b on the second,
 * calling work_b.  Each work calls the C function yield() in a loop,
 * which switches to the other fiber (swapcontext) and, back, burns C time
 * in burn_c: work_a's burns are 3 times as long as work_b's.  LuaJIT sets
 * G->cur_L only when C enters the VM (lua_pcall), so after both fibers
 * have started it names work_b's thread while fiber_a burns.
 *
 *   usage: fibers LIBLUAJIT.so ROUNDS
 *
 * Exits 0 when both works ran their rounds.
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <ucontext.h>

#define LUA_GLOBALSINDEX (-10002)
#define STACK_BYTES (256 * 1024)

typedef struct lua_State lua_State;
typedef int (*lua_CFunction)(lua_State *L);

static struct {
	lua_State *(*newstate)(void);
	void (*openlibs)(lua_State *L);
	int (*loadstring)(lua_State *L, const char *s);
	int (*pcall)(lua_State *L, int nargs, int nresults, int errfunc);
	lua_State *(*newthread)(lua_State *L);
	void (*pushcclosure)(lua_State *L, lua_CFunction fn, int n);
	void (*pushinteger)(lua_State *L, long n);
	void (*getfield)(lua_State *L, int idx, const char *k);
	void (*setfield)(lua_State *L, int idx, const char *k);
	const char *(*tolstring)(lua_State *L, int idx, size_t *len);
} lua;

static const char script[] =
	"function work_a(n)\n"
	"  local x = 0\n"
	"  for i = 1, n do for j = 1, 200 + i % 300 do x = x + j end yield() end\n"
	"end\n"
	"function work_b(n)\n"
	"  local x = 0\n"
	"  for i = 1, n do for j = 1, 200 + i % 300 do x = x + j end yield() end\n"
	"end\n";

static ucontext_t main_uc, fiber_uc[2];
static lua_State *thread[2];
static int current, done[2], failed;
static long rounds;
static unsigned seed = 12345;

/* C work of a varying length (no fixed period near a sampling one): 3
 * times as much for fiber a as for fiber b. */
static __attribute__((noinline)) void burn_c(int fiber)
{
	volatile unsigned long x = 0;
	unsigned long n;

	seed = seed * 1103515245u + 12345u;
	n = (20000 + (seed >> 16) % 40000) * (fiber == 0 ? 3 : 1);
	for (unsigned long i = 0; i < n; i++)
		x += i;
}

/* Lua's yield(): to the other fiber, if it still runs, then C work. */
static int lua_yield_burn(lua_State *L)
{
	int me = current, other = me ^ 1;

	(void)L;
	if (!done[other]) {
		current = other;
		swapcontext(&fiber_uc[me], &fiber_uc[other]);
	}
	burn_c(me);
	return 0;
}

static void run_work(int fiber, const char *name)
{
	lua_State *L = thread[fiber];

	lua.getfield(L, LUA_GLOBALSINDEX, name);
	lua.pushinteger(L, rounds);
	if (lua.pcall(L, 1, 0, 0) != 0) {
		fprintf(stderr, "fibers: %s: %s\n", name, lua.tolstring(L, -1, NULL));
		failed = 1;
	}
	done[fiber] = 1;
	/* The other fiber goes on alone; the last one back returns to main
	 * (uc_link). */
	if (!done[fiber ^ 1]) {
		current = fiber ^ 1;
		swapcontext(&fiber_uc[fiber], &fiber_uc[fiber ^ 1]);
	}
}

/* Two functions, so that a stack names the fiber it stands on. */
static __attribute__((noinline)) void fiber_a(void)
{
	run_work(0, "work_a");
}

static __attribute__((noinline)) void fiber_b(void)
{
	run_work(1, "work_b");
}

static int load_lua(const char *libname)
{
	const struct {
		const char *name;
		void *fn;
	} syms[] = {
		{ "luaL_newstate", &lua.newstate },   { "luaL_openlibs", &lua.openlibs },
		{ "luaL_loadstring", &lua.loadstring }, { "lua_pcall", &lua.pcall },
		{ "lua_newthread", &lua.newthread },  { "lua_pushcclosure", &lua.pushcclosure },
		{ "lua_pushinteger", &lua.pushinteger }, { "lua_getfield", &lua.getfield },
		{ "lua_setfield", &lua.setfield },    { "lua_tolstring", &lua.tolstring },
	};
	void *lib = dlopen(libname, RTLD_NOW | RTLD_GLOBAL);

	if (!lib) {
		fprintf(stderr, "fibers: %s\n", dlerror());
		return -1;
	}
	for (size_t i = 0; i < sizeof(syms) / sizeof(syms[0]); i++) {
		void *p = dlsym(lib, syms[i].name);

		if (!p) {
			fprintf(stderr, "fibers: %s: no symbol %s\n", libname, syms[i].name);
			return -1;
		}
		*(void **)syms[i].fn = p;
	}
	return 0;
}

int main(int argc, char **argv)
{
	void (*entry[2])(void) = { fiber_a, fiber_b };
	char *stacks;
	lua_State *L;

	if (argc != 3 || (rounds = atol(argv[2])) <= 0) {
		fprintf(stderr, "usage: fibers LIBLUAJIT.so ROUNDS\n");
		return 1;
	}
	if (load_lua(argv[1]) < 0 || !(L = lua.newstate()))
		return 1;
	lua.openlibs(L);
	lua.pushcclosure(L, lua_yield_burn, 0);
	lua.setfield(L, LUA_GLOBALSINDEX, "yield");
	if (lua.loadstring(L, script) != 0 || lua.pcall(L, 0, 0, 0) != 0) {
		fprintf(stderr, "fibers: %s\n", lua.tolstring(L, -1, NULL));
		return 1;
	}
	/* Both threads stay on L's stack: anchored for the GC. */
	thread[0] = lua.newthread(L);
	thread[1] = lua.newthread(L);
	/* One allocation for both stacks: one mapping holds them. */
	stacks = malloc(2 * STACK_BYTES);
	if (!stacks)
		return 1;
	for (int i = 0; i < 2; i++) {
		getcontext(&fiber_uc[i]);
		fiber_uc[i].uc_stack.ss_sp = stacks + i * STACK_BYTES;
		fiber_uc[i].uc_stack.ss_size = STACK_BYTES;
		fiber_uc[i].uc_link = &main_uc;
		makecontext(&fiber_uc[i], entry[i], 0);
	}
	current = 0;
	swapcontext(&main_uc, &fiber_uc[0]);
	return failed || !done[0] || !done[1];
}

-- resumes.lua [SECONDS] - resumes a coroutine of another LuaJIT state
-- through the FFI's lua_resume, the C API, for SECONDS of CPU (default 3):
-- a plain luajit process driving coroutines from C as nginx does, so
-- that `record -e lua-wait` probes its every resume and return, and a
-- tick often lands in the kernel's uretprobe trampoline as lua_resume
-- returns into it.  tests/e2e/lua_waits.sh checks such ticks give whole
-- stacks, or cut ones, never a frame that is not there.
local ffi = require("ffi")
ffi.cdef[[
void *luaL_newstate(void);
void luaL_openlibs(void *L);
void lua_close(void *L);
void *lua_newthread(void *L);
int luaL_loadstring(void *L, const char *s);
int lua_resume(void *L, int narg);
void lua_settop(void *L, int idx);
]]
local C = ffi.C
local L = C.luaL_newstate()
C.luaL_openlibs(L)
-- The coroutine yields forever: each resume runs it to its next yield.
local co = C.lua_newthread(L)
assert(C.luaL_loadstring(co, "while true do coroutine.yield() end") == 0)
local function drive(n)
	for _ = 1, n do
		assert(C.lua_resume(co, 0) == 1) -- LUA_YIELD
		C.lua_settop(co, 0)
	end
end
local stop = os.clock() + (tonumber(arg and arg[1]) or 3)
while os.clock() < stop do
	drive(1000)
end
C.lua_close(L)

-- births.lua - creates and closes LuaJIT states in a loop, through the FFI,
-- for SECONDS of CPU (default 2): most ticks fall in a VM being born, whose
-- G is still zeroed (vmstate 0, no trace 0) and whose L has no stack yet.
-- tests/e2e/lua_walk.sh checks that no such tick gives a garbage frame.
local ffi = require("ffi")
ffi.cdef[[ void *luaL_newstate(void); void lua_close(void *L); ]]
local C = ffi.C
local stop = os.clock() + (tonumber(arg and arg[1]) or 2)
while os.clock() < stop do
	C.lua_close(C.luaL_newstate())
end

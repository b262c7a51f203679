-- jitmix.lua - compiled code of every shape whose snapshots luaprof must
-- read right: one loop whose trace inlines functions called in every way
-- a trace can call them, and the traces LuaJIT grows around it.
--   branchy   a branch taken one time in three: side traces
--   protected calls inner through pcall: a PCALL frame inside the trace
--   va        a vararg function: a VARG frame
--   lazy[k]   an __index function: a metamethod, a continuation frame
--   stitched  calls os.time, which LuaJIT does not compile: the trace
--             ends in a call of the builtin and another one starts after
--             it (a stitched trace)
--   sorted    qsort through the FFI, with a Lua comparator: a trace that
--             calls C that calls back into the interpreter
-- With FLUSH > 0, jit.flush() every FLUSH calls of loop: traces are
-- thrown away and compiled again, their numbers and memory reused.
-- Whatever the JIT does, the Lua call chains a profile shows must be
-- chains the program has, as a profile with the JIT off (-joff) shows.
-- Runs CPU-bound for SECONDS of CPU time (os.clock), then exits 0.
--   usage: luajit jitmix.lua [SECONDS [FLUSH]]      (default 5, 0)
local ffi = require("ffi")
ffi.cdef[[
void qsort(void *base, size_t nmemb, size_t size,
	   int (*compar)(const void *, const void *));
]]

local function branchy(x, i)
	if i % 3 == 0 then
		x = (x * 7 + i) % 65521
	else
		x = (x * 5 + 3) % 65519
	end
	return x
end

local function inner(x) return (x * 13 + 1) % 65497 end

local function protected(x)
	local ok, v = pcall(inner, x)
	return ok and v or 0
end

local function va(...)
	local a, b = ...
	return (a * 3 + b) % 65521
end

local lazy = setmetatable({}, { __index = function(_, k) return (k * 11 + 7) % 65519 end })

local function stitched(x)
	return (x + #tostring(x) + os.time() % 2) % 65521
end

local function compare(a, b)
	local x = ffi.cast("const int *", a)[0]
	local y = ffi.cast("const int *", b)[0]
	return x < y and -1 or (x > y and 1 or 0)
end
local compare_c = ffi.cast("int (*)(const void *, const void *)", compare)
local arr = ffi.new("int[16]")

local function sorted(x)
	for k = 0, 15 do arr[k] = (x * (k + 1)) % 97 end
	ffi.C.qsort(arr, 16, 4, compare_c)
	return arr[0]
end

local function loop(n)
	local x = 1
	for i = 1, n do
		x = branchy(x, i)
		x = protected(x)
		x = va(x, i)
		x = lazy[x % 1000]
		if i % 64 == 0 then x = stitched(x) end
		if i % 256 == 0 then x = x + sorted(x) end
	end
	return x
end

local seconds = tonumber(arg and arg[1]) or 5
local flush = tonumber(arg and arg[2]) or 0
local deadline = os.clock() + seconds
local seed, sum, calls = 12345, 0, 0
while os.clock() < deadline do
	seed = (seed * 1103515245 + 12345) % 2147483648
	sum = sum + loop(3000 + seed % 3000)
	calls = calls + 1
	if flush > 0 and calls % flush == 0 then jit.flush() end
end
-- Use the result so that no work can be dropped.
if sum < 0 then print(sum) end

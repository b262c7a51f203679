-- retain.lua - two functions that allocate the same, one keeping all of
-- it: keep() adds tables and strings to the global `cache`, drop() makes
-- the same and lets them go.  Allocations are half each; what is still
-- alive at the end is keep()'s.  Prints the entries kept and the heap
-- LuaJIT counts at the end (KiB, after a full collection).
-- usage: luajit retain.lua [SECONDS]  (default 3)
cache = {}

function keep()
	for i = 1, 100 do
		cache[#cache + 1] = { i, tostring(i + #cache) .. "kept" }
	end
end

function drop()
	local t
	for i = 1, 100 do
		t = { i, tostring(i + #cache) .. "gone" }
	end
	return t
end

-- First 0.3 s of CPU that allocates nothing: a profiler that finds the VM
-- by its CPU samples (luaprof) has found it before the work begins.
local spin, x = os.clock() + 0.3, 0
while os.clock() < spin do
	for i = 1, 10000 do x = x + i end
end

local stop = os.clock() + (tonumber(arg[1]) or 3)
while os.clock() < stop do
	keep()
	drop()
end
collectgarbage()
print(#cache, collectgarbage("count"))

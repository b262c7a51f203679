-- allocs.lua - three functions that allocate, a 1 share of the bytes, b 2
-- and c 3: each round calls them in a shuffled order, a making 1 unit of
-- tables and strings, b 2 and c 3 (a unit: tables of three fields, a
-- string built from a number, a table holding it; the loop compiles).
-- What each call allocates is measured around it, as LuaJIT counts it
-- (collectgarbage("count"), with the collector stopped: it would free
-- meanwhile; it runs between calls, every 64 MiB), and the sums printed
-- at the end, "a_bytes b_bytes c_bytes": the truth the allocation
-- profile is held to.
-- usage: luajit allocs.lua [SECONDS]  (default 3)
local keep = {}
local n = 0

local function unit(k)
	for i = 1, k * 200 do
		local t = { i, i + 1, s = tostring(i + n) .. "x" }
		keep[(i % 64) + 1] = t -- live a little, then garbage
		keep[65] = { t }
	end
	n = n + 1
end

function a() unit(1) end
function b() unit(2) end
function c() unit(3) end

local order = { 1, 2, 3 }
local seed = 12345
local function rand3()
	seed = (seed * 1103515245 + 12345) % 2147483648
	return seed % 3 + 1
end

-- First 0.3 s of CPU that allocates nothing: a profiler that finds the VM
-- by its CPU samples (luaprof) has found it before the work begins.
local spin, x = os.clock() + 0.3, 0
while os.clock() < spin do
	for i = 1, 10000 do x = x + i end
end

local bytes = { 0, 0, 0 }
collectgarbage("stop")
local stop = os.clock() + (tonumber(arg[1]) or 3)
while os.clock() < stop do
	-- a shuffled order, so that no fixed period lines up with a sampler
	local i, j = rand3(), rand3()
	order[i], order[j] = order[j], order[i]
	for k = 1, 3 do -- called by name: the profile names them so
		local o = order[k]
		local before = collectgarbage("count")
		if o == 1 then a() elseif o == 2 then b() else c() end
		bytes[o] = bytes[o] + (collectgarbage("count") - before) * 1024
	end
	if collectgarbage("count") > 65536 then
		collectgarbage()
		collectgarbage("stop")
	end
end
print(string.format("%.0f %.0f %.0f", bytes[1], bytes[2], bytes[3]))

-- allocs.lua - three functions that allocate, a 1 share of the bytes, b 2
-- and c 3: each round calls them in a shuffled order, a making 1 unit of
-- tables and strings, b 2 and c 3 (a unit: tables of three fields, a
-- string built from a number, a table holding it; the loop compiles).
-- What each call allocates is measured here, as LuaJIT counts it
-- (collectgarbage("count") across ten calls with the collector stopped),
-- once the run is over and its code compiled or not as it ran;
-- "a_bytes b_bytes c_bytes" printed to stdout at the end, times the calls
-- made (the ten too): the truth the allocation profile is held to.
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
local calls = 0
local seed = 12345
local function rand3()
	seed = (seed * 1103515245 + 12345) % 2147483648
	return seed % 3 + 1
end

local stop = os.clock() + (tonumber(arg[1]) or 3)
while os.clock() < stop do
	-- a shuffled order, so that no fixed period lines up with a sampler
	local i, j = rand3(), rand3()
	order[i], order[j] = order[j], order[i]
	for k = 1, 3 do -- called by name: the profile names them so
		local o = order[k]
		if o == 1 then a() elseif o == 2 then b() else c() end
	end
	calls = calls + 1
end

local function per_call(f) -- the mean of 10 calls
	collectgarbage("stop")
	local before = collectgarbage("count")
	for _ = 1, 10 do
		f()
	end
	local d = (collectgarbage("count") - before) * 1024 / 10
	collectgarbage("restart")
	return d
end
local pa, pb, pc = per_call(a), per_call(b), per_call(c)
calls = calls + 10 -- per_call's own
print(string.format("%.0f %.0f %.0f", pa * calls, pb * calls, pc * calls))

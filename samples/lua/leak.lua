-- leak.lua - a Lua program that leaks at a known place, for `luaprof heap`
-- (tests/e2e/heap.sh, bench/heap.sh).  Every 0.1 s, leak() adds 25 users
-- (a table, a name, ~4 KB of data each: ~1 MB a second) to the global
-- cache.users, which keeps them; other() makes as many and drops them,
-- garbage for the GC.  So between two heap snapshots, what grew is under
-- _G;cache;users, and the rest stays level.  Each tick it writes its
-- collectgarbage("count") (KiB, LuaJIT's own count of its heap) to
-- COUNTFILE, so that a test can check a snapshot's total against it.
--   usage: luajit leak.lua [SECONDS [COUNTFILE [PRELOAD_MB]]]
-- (default 60 s, no file; PRELOAD_MB: users added at the start, for a
-- heap of that size at once)
local seconds = tonumber(arg and arg[1]) or 60
local countfile = arg and arg[2]
local preload = tonumber(arg and arg[3]) or 0

cache = { users = {} }
local n = 0

local function user(i)
	return { id = i, name = "user" .. i, data = string.rep("x", 4000) .. i }
end

function leak()
	local users = cache.users
	for _ = 1, 25 do
		n = n + 1
		users[#users + 1] = user(n)
	end
end

function other()
	local t = {}
	for i = 1, 25 do
		t[i] = user(-i)
	end
	return #t
end

local function write_count()
	if not countfile then
		return
	end
	local f = io.open(countfile .. ".tmp", "w")
	f:write(string.format("%.0f\n", collectgarbage("count") * 1024))
	f:close()
	os.rename(countfile .. ".tmp", countfile)
end

for _ = 1, preload * 10 do
	leak()
end
local start = os.time()
while os.time() - start < seconds do
	leak()
	other()
	write_count()
	os.execute("sleep 0.1")
end

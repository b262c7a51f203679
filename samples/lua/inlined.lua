-- inlined.lua - a loop in f calling two small local functions that LuaJIT
-- inlines into f's trace: g (one multiply-add and a modulo) and h (three
-- of them), each after a check of its argument.  With the JIT on, time is
-- spent in one compiled trace whose base frame is f; luaprof places it in
-- f, g and h by the trace's snapshots, where LuaJIT's own profiler in
-- function mode (luajit -jp=fi1 inlined.lua) finds it too, roughly:
--     h ~70%, g ~25%, f the rest.
-- The checks matter: LuaJIT takes a snapshot at every comparison, and
-- code is placed at the snapshot before it.  Without them (pure arithmetic,
-- no guard from the loop's start to its end) the loop body has a single
-- snapshot, f's, and all of it is placed in f: a trace keeps nothing finer
-- (see docs/format.md, trace_snaps).
-- f's iteration count varies from call to call, so no part of the loop
-- runs at a fixed period a sampling rate could alias with.
-- Runs CPU-bound for SECONDS of CPU time (os.clock), then exits 0.
--   usage: luajit inlined.lua [SECONDS]      (default 5)

local function g(x)
	if x < 0 then x = -x end
	return (x * 3 + 1) % 65521
end

local function h(x)
	if x < 0 then x = -x end
	x = (x * 5 + 7) % 65521
	x = (x * 11 + 13) % 65519
	return (x * 17 + 19) % 65497
end

local function f(n)
	local a = 1
	for i = 1, n do
		a = g(a + i)
		a = h(a)
	end
	return a
end

local seconds = tonumber(arg and arg[1]) or 5
local deadline = os.clock() + seconds
local seed, sum = 12345, 0
while os.clock() < deadline do
	seed = (seed * 1103515245 + 12345) % 2147483648
	sum = sum + f(2000 + seed % 3000)
end
-- Use the result so that no work can be dropped.
if sum < 0 then print(sum) end

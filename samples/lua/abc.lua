-- abc.lua - a Lua program whose profile is known in advance (the Lua twin
-- of samples/hot.c).  Global functions a, b and c call one common callee,
-- work(n), with 1, 2 and 3 units of work; work is a pure-Lua loop whose
-- cost is exactly n * UNIT iterations, so:
--   * inclusive shares: a ~1/6, b ~2/6, c ~3/6 of the samples;
--   * self time: work holds nearly all of it (a, b, c and the driver
--     almost none);
--   * stacks: main -> a|b|c -> work, names derived from the call sites
--     (all globals): "main (abc.lua:0)", "a (abc.lua:LINE)", "b (...)",
--     "c (...)", "work (...)".
-- In these samples, CHUNK ("abc.lua" above) is the script's path as it was
-- run (luajit samples/lua/abc.lua: "samples/lua/abc.lua") and LINE is the
-- line of the function's "function" keyword (grep -n '^function a(').
-- LuaJIT's own profiler as a reference (self time by function; -joff
-- makes its attribution exact, see below):
--   luajit -joff -jp=frm0 abc.lua 5     ->  "  505  work" (raw counts)
--   luajit -joff -jp=fs2 abc.lua 5      ->  "100%  work" then its callers
--                                           "  <- 47%  c", "  <- 33%  b" ...
-- jit.p samples every 10 ms of CPU time but takes the sample at the VM's
-- next safe point: time in C (builtins, FFI) is charged to the calling
-- Lua function, and with the JIT on, to where the trace next exits.
-- Runs CPU-bound for SECONDS of CPU time (os.clock), then exits 0.  UNIT
-- is the loop count of one unit of work (tests/kernels/smoke.sh makes it
-- smaller where code runs emulated, for more calls in a run).
--   usage: luajit abc.lua [SECONDS [UNIT]]  (default 5, 200000)
local UNIT = tonumber(arg and arg[2]) or 200000

function work(n)
	local x = 0
	for i = 1, n * UNIT do
		x = (x + i * 7) % 1000003
	end
	return x
end

-- Not tail calls: a "return work(1)" would drop a's frame.
function a() local r = work(1); return r end
function b() local r = work(2); return r end
function c() local r = work(3); return r end

local seconds = tonumber(arg and arg[1]) or 5
local deadline = os.clock() + seconds
local sum = 0
while os.clock() < deadline do
	sum = sum + a() + b() + c()
end
-- Use the result so that no work can be dropped.
if sum < 0 then print(sum) end

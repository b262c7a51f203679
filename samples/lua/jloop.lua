-- jloop.lua - compiled loops entered from the interpreter and left at
-- once, again and again: run is interpreted (jit.off), and each call of
-- count enters the trace of its while loop (JLOOP, which lowers rsp below
-- the VM's C frame for the trace) and leaves it a few iterations later
-- through the exit handler (lj_trace_exit, then back on the C frame).
-- Ticks in those few instructions are on the interpreter's frame, not on
-- a helper's: stacks are "main (jloop.lua:0)" right under the host's
-- lua_pcall, then run, then count, then the VM's own C code; nothing
-- above the root, never truncated.
-- The loops' lengths vary with a counter: no fixed period.
-- Runs for SECONDS of CPU time (os.clock), then exits 0.
--   usage: luajit jloop.lua [SECONDS]      (default 5)
local function count(n)
	local i, s = 0, 0
	while i < n do
		i = i + 1
		s = s + i
	end
	return s
end

local function run(seconds)
	local deadline, k, acc = os.clock() + seconds, 0, 0
	while os.clock() < deadline do
		for j = 1, 100 do
			k = k + 1
			acc = acc + count(2 + (k * 7 + j) % 5)
		end
	end
	return acc
end
jit.off(run)

local seconds = tonumber(arg and arg[1]) or 5
if run(seconds) < 0 then print("never") end

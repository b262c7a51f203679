-- twice.lua - a Lua program for `luaprof diff`: three global functions,
-- first, middle and last, each a pure-Lua loop of its own (so each is the
-- leaf of its samples: its self time is its work), doing 1, FACTOR and 1
-- units of work per round.  `twice.lua 1` and `twice.lua 2` differ in one
-- function only, middle, whose work doubles:
--   FACTOR 1: first, middle, last ~1/3 of the samples each;
--   FACTOR 2: first ~1/4, middle ~1/2, last ~1/4.
-- A round's size varies (a linear congruential sequence), so the program
-- runs in no fixed period that a sampling rate could alias with.
-- Runs for SECONDS of CPU time (os.clock), then exits 0.
--   usage: luajit twice.lua FACTOR [SECONDS]     (defaults 1 and 2)
local factor = tonumber(arg and arg[1]) or 1
local seconds = tonumber(arg and arg[2]) or 2

function first(n)
	local x = 0
	for i = 1, n do
		x = (x + i * 7) % 1000003
	end
	return x
end

function middle(n)
	local x = 0
	for i = 1, n * factor do
		x = (x + i * 7) % 1000003
	end
	return x
end

function last(n)
	local x = 0
	for i = 1, n do
		x = (x + i * 7) % 1000003
	end
	return x
end

local deadline = os.clock() + seconds
local seed, sum = 12345, 0
while os.clock() < deadline do
	seed = (seed * 1103515245 + 12345) % 2147483648
	local n = 20000 + seed % 40000
	-- Not tail calls, and the results used: no frame or work dropped.
	sum = sum + first(n) + middle(n) + last(n)
end
if sum < 0 then print(sum) end

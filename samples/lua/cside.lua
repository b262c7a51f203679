-- cside.lua - a Lua program that spends nearly all of its time in C called
-- from Lua: string.gsub over a 4 MB string.  The interpreter runs for a
-- few instructions between calls, so almost no sample lands in it (where
-- the VM's registers show its global state); every sample's native stack
-- still crosses the VM's C frame, which holds the running lua_State.
--   * stacks: main -> rewrite -> string.gsub -> (the C code of gsub),
--     "main (cside.lua:0)", "rewrite (cside.lua:LINE)" (a global);
--   * nearly every sample has those Lua frames, from the first one.
-- Each call gets another pattern, in an order that does not repeat with a
-- fixed period, so no call length lines up with the sampling period.
-- Runs for SECONDS of CPU time (os.clock), then exits 0.
--   usage: luajit cside.lua [SECONDS]      (default 5)
local text = string.rep("the quick brown fox jumps over the lazy dog 0123456789\n", 74000)
local patterns = { "[aeiou]", "%d+", "o%a", "%s", "[xyz]", "fox", "%p" }

function rewrite(k)
	local out, n = string.gsub(text, patterns[k], "#")
	return #out + n
end

local seconds = tonumber(arg and arg[1]) or 5
local deadline = os.clock() + seconds
local k, sum = 1, 0
while os.clock() < deadline do
	sum = sum + rewrite(k)
	k = (k * 3 + sum) % #patterns + 1
end
if sum < 0 then print(sum) end

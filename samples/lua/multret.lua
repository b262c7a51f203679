-- multret.lua - functions returning several results, most of the time:
-- when a function returns, the VM moves its results down over its own
-- frame, function slot and link slot included, so a sample taken then
-- finds the innermost frame half overwritten (the link slot holding a
-- result, such as 2.5, rather than the return address).
--   * spread -> unpack (a tail call: spread's frame is unpack's) copies up
--     to 200 numbers over the frame; finds calls string.find, a C function
--     returning 2 numbers; both from the main chunk;
--   * stacks: "main (multret.lua:0)" then unpack, "finds (multret.lua:LINE)"
--     or string.find, or the frame being returned from ("[builtin]": its
--     function slot was overwritten); never truncated.
-- The number of results changes from call to call, and the order of the
-- calls with them: no fixed period.
-- Runs for SECONDS of CPU time (os.clock), then exits 0.
--   usage: luajit multret.lua [SECONDS]      (default 5)
local t = {}
for i = 1, 200 do t[i] = i + 0.5 end
local s = string.rep("abc,", 10)

local function spread(k) return unpack(t, 1, k) end

function finds(k)
	local a, b = 0, 0
	for i = 1, k do a, b = string.find(s, ",", i % 30 + 1, true) end
	return a + b
end

local seconds = tonumber(arg and arg[1]) or 5
local deadline = os.clock() + seconds
local acc, k = 0, 100
while os.clock() < deadline do
	k = 100 + (k * 7 + acc) % 101
	acc = acc + select("#", spread(k)) + finds(k % 50 + 10)
end
if acc < 0 then print(acc) end

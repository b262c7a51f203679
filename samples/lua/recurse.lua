-- recurse.lua - deep Lua recursion: descend(n) calls itself until it is
-- 300 frames deep, then bottom() burns CPU; the driver repeats that.
--   * stacks: main -> descend x300 -> bottom, i.e. exactly DEPTH (300)
--     consecutive "descend (recurse.lua:LINE)" frames under
--     "main (recurse.lua:0)", then "bottom (recurse.lua:LINE)" as the
--     leaf (every name a global; LINE: see abc.lua);
--   * self time: bottom holds nearly all of it (>95%); descend appears in
--     nearly every sample's stack (inclusive ~100%).
-- No tail calls anywhere (a tail call would collapse the frames).
-- Runs CPU-bound for SECONDS of CPU time (os.clock), then exits 0.
--   usage: luajit recurse.lua [SECONDS]      (default 5)
local DEPTH, UNIT = 300, 200000

function bottom()
	local x = 0
	for i = 1, UNIT do
		x = (x + i * 7) % 1000003
	end
	return x
end

-- descend(n) is the n-th frame from the bottom: descend(1) calls bottom.
function descend(n)
	local r
	if n > 1 then
		r = descend(n - 1)
	else
		r = bottom()
	end
	return r + 1
end

local seconds = tonumber(arg and arg[1]) or 5
local deadline = os.clock() + seconds
local sum = 0
while os.clock() < deadline do
	sum = sum + descend(DEPTH)
end
if sum < 0 then print(sum) end

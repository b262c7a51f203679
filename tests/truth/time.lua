-- time.lua - each function's true share of a program's time, by ablation.
--
-- Loads DIR/NAME.lua and, for each function fn named, DIR/NAME-nofn.lua
-- (the program without fn's work, gen.lua), each as its own chunk, so
-- each has its own prototypes and its own traces.  After a warm-up that
-- compiles them all, it times them in turn, round after round, each
-- round running every variant's f the same number of times: drift in the
-- machine's speed (other work, frequency) falls on all variants alike.
-- fn's share is (full - without fn) / full over the median times.
--
--   usage: luajit time.lua DIR NAME FN...
--   prints: "FN SHARE SPREAD" per function, SPREAD the half-width of the
--   middle half of the per-round shares; "shape SHARE", what is left;
--   then "time MS" per call of f.

local dir, name = arg[1], arg[2]
local fns = {}
for i = 3, #arg do fns[#fns + 1] = arg[i] end
assert(#fns >= 1, "usage: luajit time.lua DIR NAME FN...")

local run = { assert(loadfile(dir .. "/" .. name .. ".lua"))("lib") }
for i, fn in ipairs(fns) do
	run[i + 1] = assert(loadfile(dir .. "/" .. name .. "-no" .. fn .. ".lua"))("lib")
end

local N, CALLS, ROUNDS = 4000, 16, 31
local sum = 0
for i = 1, #run do for _ = 1, 40 do sum = sum + run[i](N) end end

local t = {}
for i = 1, #run do t[i] = {} end
for r = 1, ROUNDS do
	for i = 1, #run do
		local t0 = os.clock()
		for _ = 1, CALLS do sum = sum + run[i](N) end
		t[i][r] = os.clock() - t0
	end
end

local function median(a)
	local s = {}
	for i = 1, #a do s[i] = a[i] end
	table.sort(s)
	return s[(#s + 1) / 2], s[math.floor(#s / 4) + 1], s[#s - math.floor(#s / 4)]
end

-- Per-round shares give the spread; the medians of the times, the share.
-- Each function's share is of its work, as removing it saves; what no
-- removal saves (the loop, the calls, the comparisons, the traces'
-- entries and exits: the program's shape) is printed as "shape": it is
-- some function's time, which one ablation cannot tell.
local full = median(t[1])
local shape = 1
for i = 2, #run do
	local per = {}
	for r = 1, ROUNDS do per[r] = (t[1][r] - t[i][r]) / t[1][r] end
	local _, lo, hi = median(per)
	local share = (full - median(t[i])) / full
	print(string.format("%s %.4f %.4f", fns[i - 1], share, (hi - lo) / 2))
	shape = shape - share
end
print(string.format("shape %.4f", shape))
print(string.format("time %.4f", full / CALLS * 1000))
if sum < 0 then print(sum) end

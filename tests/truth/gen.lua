-- gen.lua - the programs of the compiled-code truth harness, written out.
--
-- Each program is a loop in f that calls small functions LuaJIT inlines
-- into f's trace; each function's body is a list of items:
--
--   G        a comparison (LuaJIT takes a snapshot there)
--   W n      n units of work: x = (x * a + b) % m, each with its own
--            constants (so no two units are one expression to LuaJIT)
--   S        the unit every function that has S shares (same constants:
--            on the same x LuaJIT computes it once)
--   C fn     a call: x = fn(x) (fn may be M.g: the same function, from a
--            table)
--   L n w    a loop of n rounds of w units (LuaJIT unrolls short ones)
--   B w      w units only when x >= 60000, one time in twelve (a side
--            trace runs them)
--   M        math.sin, a C function of libm the trace calls
--   F        cbrt through the FFI
--   any other text is a Lua line, kept as it is
--
-- A function's work is its W, S, L, B, M and F items; its comparisons
-- and calls are its shape.  For each function fn the generator also
-- writes the program without fn's work (its shape kept, so that the
-- trace keeps its snapshots): the time that saves is fn's true share,
-- measured by time.lua.  No profiler is the judge.
--
--   usage: luajit gen.lua DIR          writes DIR/NAME.lua, DIR/NAME-noFN.lua
--                                      and DIR/NAME.fns for every program,
--                                      and DIR/programs: "NAME ablation", or
--                                      "NAME none" where no truth is known
--   DIR/NAME.fns: one line per function: NAME GUARDS WORK (counts of
--   comparisons and of work items in its body).
--   Every program runs its loop for SECONDS of CPU time (os.clock) with a
--   trip count that varies from call to call (so no part runs at a fixed
--   period a sampling rate could alias with):  luajit NAME.lua [SECONDS]
--   Loaded as a module (loadfile(path)("lib")) it returns f.

local P, order = {}, {}
local function program(name, desc, fns, notruth)
	fns.desc = desc
	fns.notruth = notruth
	P[name] = fns
	order[#order + 1] = name
end

program("first", "g and h compare first, then compute; f works between them",
	{ f = { "C g", "W 2", "C h" }, g = { "G", "W 1" }, h = { "G", "W 3" } })
program("last", "g and h compute first, then compare",
	{ f = { "C g", "W 2", "C h" }, g = { "W 1", "G" }, h = { "W 3", "G" } })
program("middle", "g and h compute on both sides of their comparison",
	{ f = { "W 1", "C g", "C h" }, g = { "W 1", "G", "W 1" }, h = { "W 1", "G", "W 2" } })
program("noguard", "g has no comparison: nothing in the trace is only g's",
	{ f = { "C g", "W 1", "C h" }, g = { "W 2" }, h = { "G", "W 2" } })
-- No truth: removing g's work leaves the expression h still computes, and
-- g's own runs beside h's (neither waits for the other), so removing it
-- saves next to nothing.  Shares are shown, not judged.
program("cse", "g and h begin with the same expression of the same x",
	{ f = { "local y = x", "x = g(y) + h(y)", "W 1" }, g = { "S", "G", "W 1" }, h = { "S", "G", "W 2" } },
	true)
program("loop", "h loops over its work, in a trace of its own",
	{ f = { "C g", "W 2", "C h" }, g = { "G", "W 1" }, h = { "G", "L 6 1" } })
program("deep", "three levels: f calls g, which calls k",
	{ f = { "C g", "W 1", "C h" }, g = { "G", "W 1", "C k" }, k = { "G", "W 2" }, h = { "G", "W 1" } })
program("side", "h does more work now and then, in a side trace",
	{ f = { "C g", "W 1", "C h" }, g = { "G", "W 1" }, h = { "G", "W 1", "B 6" } })
program("ccall", "g calls libm's sin, h cbrt through the FFI",
	{ f = { "C g", "W 1", "C h" }, g = { "G", "M", "W 1" }, h = { "G", "F", "W 1" } })
-- Called through a table, with no comparison: the trace checks both
-- closures before its loop and keeps no snapshot in either, so which of
-- them made what code is not known.  Their time must be marked, f's not
-- grow.
program("fields", "f calls g and h through a table; neither compares",
	{ f = { "C M.g", "W 1", "C M.h" }, g = { "W 1" }, h = { "W 2" } })

-- Constants of the work units: multipliers and increments, and moduli
-- (primes below 2^16) so that x stays a small whole number.
local MUL = { 3, 5, 11, 17, 23, 31, 41, 47, 59, 67, 73, 83, 97, 103, 109, 127 }
local MOD = { 65521, 65519, 65497, 65479, 65449, 65447, 65437, 65423,
	65419, 65413, 65407, 65393, 65381, 65371, 65357, 65353 }
local FNS = { "f", "g", "k", "h" }

local function gen(spec, without)
	local out, unit = {}, 0
	local function emit(s) out[#out + 1] = s end
	local function work(ind, fn, m, a, b)
		if fn == without then return emit(ind .. "-- work left out") end
		emit(string.format("%sx = (x * %d + %d) %% %d", ind, m, a, b))
	end
	local function next_unit()
		unit = unit + 1
		return MUL[(unit - 1) % #MUL + 1], 2 * unit + 1, MOD[(unit - 1) % #MOD + 1]
	end
	local function body(fn, ind)
		for _, it in ipairs(spec[fn]) do
			local op, a, b = it:match("^(%u) ?([%w.]*) ?(%S*)$")
			if op == "G" then emit(ind .. "if x < 0 then x = -x end")
			elseif op == "C" then emit(ind .. "x = " .. a .. "(x)")
			elseif op == "W" then
				for _ = 1, tonumber(a) do work(ind, fn, next_unit()) end
			elseif op == "S" then work(ind, fn, 7, 3, 65309)
			elseif op == "L" then
				emit(ind .. "for j = 1, " .. a .. " do")
				for _ = 1, tonumber(b) do work(ind .. "\t", fn, next_unit()) end
				emit(ind .. "end")
			elseif op == "B" then
				emit(ind .. "if x >= 60000 then")
				for _ = 1, tonumber(a) do work(ind .. "\t", fn, next_unit()) end
				emit(ind .. "end")
			elseif op == "M" or op == "F" then
				local call = op == "M" and "sin(x) * 100" or "ffi.C.cbrt(x) * 100"
				if fn == without then emit(ind .. "-- work left out")
				else emit(string.format("%sx = (x + %s) %% 65291", ind, call)) end
			else emit(ind .. it) end
		end
	end
	emit("local ffi = require(\"ffi\")")
	emit("pcall(ffi.cdef, \"double cbrt(double);\")")
	emit("local sin = math.sin")
	-- Callees first (locals), callers after them, f last.
	for i = #FNS, 2, -1 do
		local fn = FNS[i]
		if spec[fn] then
			emit("local function " .. fn .. "(x)")
			body(fn, "\t")
			emit("\treturn x\nend")
		end
	end
	emit("local M = { g = g, h = h, k = k }")
	emit("local function f(n)\n\tlocal x = 1\n\tfor i = 1, n do\n\t\tx = x + i")
	body("f", "\t\t")
	emit("\tend\n\treturn x\nend")
	emit([[
if ... == "lib" then return f end
local deadline = os.clock() + (tonumber(arg and arg[1]) or 3)
local seed, sum = 12345, 0
while os.clock() < deadline do
	seed = (seed * 1103515245 + 12345) % 2147483648
	sum = sum + f(2000 + seed % 3000)
end
if sum < 0 then print(sum) end]])
	return table.concat(out, "\n") .. "\n"
end

local function write(path, s)
	local fh = assert(io.open(path, "w"))
	fh:write(s)
	fh:close()
end

local dir = assert(arg[1], "usage: luajit gen.lua DIR")
local list = {}
for _, name in ipairs(order) do
	local spec = P[name]
	write(dir .. "/" .. name .. ".lua", "-- " .. name .. ": " .. spec.desc .. "\n" .. gen(spec))
	local fns = {}
	for _, fn in ipairs(FNS) do
		if spec[fn] then
			write(dir .. "/" .. name .. "-no" .. fn .. ".lua", gen(spec, fn))
			local guards, work = 0, 0
			for _, it in ipairs(spec[fn]) do
				local op = it:match("^(%u)")
				if op == "G" then guards = guards + 1
				elseif op and op:match("[WSLBMF]") then work = work + 1 end
			end
			fns[#fns + 1] = string.format("%s %d %d", fn, guards, work)
		end
	end
	write(dir .. "/" .. name .. ".fns", table.concat(fns, "\n") .. "\n")
	list[#list + 1] = name .. (spec.notruth and " none" or " ablation")
end
write(dir .. "/programs", table.concat(list, "\n") .. "\n")

-- names.lua - one function per kind of name LuaJIT derives from the
-- caller's call site (as debug.getinfo(f, "n") and tracebacks do).  Each
-- burns the same unit of work inside itself, so each holds ~1/8 of the
-- self time.  All are called from the main chunk ("main (names.lua:0)"),
-- except upvalue_fn, called from via_upvalue, and the anonymous function,
-- called from call_param.  Expected names (namewhat, then the frame as
-- luaprof prints it, NAME (CHUNK:LINE), LINE being where it is defined):
--   global_fn()        global   "global_fn (names.lua:LINE)"
--   local_fn()         local    "local_fn (names.lua:LINE)"
--   M.field_fn()       field    "field_fn (names.lua:LINE)"   (LuaJIT
--                      derives the key only, not "M.field_fn")
--   obj:method_fn()    method   "method_fn (names.lua:LINE)"  (the key
--                      only, not "obj:method_fn")
--   upvalue_fn()       upvalue  "upvalue_fn (names.lua:LINE)", called
--                      from via_upvalue (a local: "via_upvalue (...)")
--   f()                local    "f (names.lua:LINE)": an anonymous
--                      function passed to call_param(f) and called
--                      through its parameter f; call_param is a local
--   fns[1]()           (none)   "? (names.lua:LINE)": called through a
--                      table index, LuaJIT derives no name
--   vararg_fn(1, 2)    local    "vararg_fn (names.lua:LINE)": a vararg
--                      function, whose frame LuaJIT moves above its
--                      arguments (a VARG frame over the call's)
-- LINE is the line of each function's "function" keyword; a test can find
-- it with grep -n.  The program checks the derivations itself (through
-- debug.getinfo, once at start) and exits 1 if one differs.
-- Runs CPU-bound for SECONDS of CPU time (os.clock), then exits 0.
--   usage: luajit names.lua [SECONDS]      (default 5)
local UNIT = 100000
local checking = true
local seen = {}

local function note(tag)
	if checking then
		local i = debug.getinfo(2, "n")
		seen[tag] = (i.namewhat or "") .. " " .. tostring(i.name)
	end
end

function global_fn()
	note("global")
	local x = 0
	for i = 1, UNIT do x = (x + i * 7) % 1000003 end
	return x
end

local function local_fn()
	note("local")
	local x = 0
	for i = 1, UNIT do x = (x + i * 7) % 1000003 end
	return x
end

local M = {}
function M.field_fn()
	note("field")
	local x = 0
	for i = 1, UNIT do x = (x + i * 7) % 1000003 end
	return x
end

local obj = {}
function obj:method_fn()
	note("method")
	local x = 0
	for i = 1, UNIT do x = (x + i * 7) % 1000003 end
	return x
end

local function upvalue_fn()
	note("upvalue")
	local x = 0
	for i = 1, UNIT do x = (x + i * 7) % 1000003 end
	return x
end

local function via_upvalue()
	local r = upvalue_fn()
	return r
end

local function call_param(f)
	local r = f()
	return r
end

local function vararg_fn(...)
	note("vararg")
	local x = select("#", ...)
	for i = 1, UNIT do x = (x + i * 7) % 1000003 end
	return x
end

local fns = {
	function()
		note("indexed")
		local x = 0
		for i = 1, UNIT do x = (x + i * 7) % 1000003 end
		return x
	end,
}

local seconds = tonumber(arg and arg[1]) or 5
local deadline = os.clock() + seconds
local sum, rounds = 0, 0
while os.clock() < deadline or rounds == 0 do
	sum = sum + global_fn()
	sum = sum + local_fn()
	sum = sum + M.field_fn()
	sum = sum + obj:method_fn()
	sum = sum + via_upvalue()
	sum = sum + call_param(function()
		note("param")
		local x = 0
		for i = 1, UNIT do x = (x + i * 7) % 1000003 end
		return x
	end)
	sum = sum + fns[1]()
	sum = sum + vararg_fn(1, 2)
	rounds = rounds + 1
	if checking then
		checking = false
		local want = {
			global = "global global_fn", ["local"] = "local local_fn",
			field = "field field_fn", method = "method method_fn",
			upvalue = "upvalue upvalue_fn", param = "local f",
			indexed = " nil", vararg = "local vararg_fn",
		}
		for tag, w in pairs(want) do
			if seen[tag] ~= w then
				io.stderr:write("names.lua: ", tag, " derived as '",
					tostring(seen[tag]), "', expected '", w, "'\n")
				os.exit(1)
			end
		end
	end
end
if sum < 0 then print(sum) end

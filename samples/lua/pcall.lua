-- pcall.lua - work under pcall and xpcall, with errors raised and caught
-- in a loop, and a message handler that itself does work.
-- Each round of the driver (the main chunk) does:
--     pcall(protected, false)            risky: 1 unit, returns normally
--     pcall(protected, true)             risky: 1 unit, then error()
--     xpcall(protected, on_error, true)  risky: 1 unit, then error(), and
--                                        handler: 1 unit, inside on_error
-- so of the self time, risky holds ~3/4 and handler ~1/4 (errors are
-- cheap next to a unit of work).  Names: pcall/xpcall and the error
-- machinery call protected and on_error from C, so LuaJIT derives no name
-- for them ("? (pcall.lua:LINE)"); they call the globals risky and
-- handler from Lua, which derive normally:
--     risky    "risky (pcall.lua:LINE)"
--     handler  "handler (pcall.lua:LINE)"     (LINE: see abc.lua)
-- Stacks (Lua frames, root first; builtins in brackets):
--     main -> [pcall] -> ?(protected) -> risky
--     main -> [xpcall] -> ?(protected) -> risky -> [error] -> ?(on_error)
--          -> handler       (the handler runs before the stack unwinds)
-- The program checks every outcome and exits 1 if one is wrong.
-- Runs CPU-bound for SECONDS of CPU time (os.clock), then exits 0.
--   usage: luajit pcall.lua [SECONDS]      (default 5)
local UNIT = 100000

function risky(fail)
	local x = 0
	for i = 1, UNIT do
		x = (x + i * 7) % 1000003
	end
	if fail then
		error("risky failed: " .. x, 0)
	end
	return x
end

function handler(msg)
	local x = #msg
	for i = 1, UNIT do
		x = (x + i * 7) % 1000003
	end
	return "handled: " .. msg
end

local function protected(fail)
	local r = risky(fail)
	return r
end

local function on_error(msg)
	local r = handler(msg)
	return r
end

local seconds = tonumber(arg and arg[1]) or 5
local deadline = os.clock() + seconds
local rounds = 0
while os.clock() < deadline do
	local ok, v = pcall(protected, false)
	if not ok or type(v) ~= "number" then error("pcall without error failed") end
	ok, v = pcall(protected, true)
	if ok or not v:find("^risky failed") then error("pcall did not catch") end
	ok, v = xpcall(protected, on_error, true)
	if ok or not v:find("^handled: risky failed") then error("xpcall did not handle") end
	rounds = rounds + 1
end
if rounds < 1 then os.exit(1) end

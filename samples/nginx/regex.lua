-- regex.lua - a handler for tests/e2e/nginx_regex.sh: OpenResty's
-- ngx.re.find with "jo" (PCRE's JIT, the compiled regex cached), called
-- from a loop the JIT compiles.  The trace calls the match through the
-- FFI (lua-resty-core): ngx_http_lua_ffi_exec_regex, pcre_exec, then
-- PCRE's own JIT code in anonymous memory, like LuaJIT's traces.  Nearly
-- all of scan()'s time is the match's; burn() is a Lua loop whose trace
-- does the work itself.  A profile shows:
--     handle -> scan -> (PCRE's code: native frames, anonymous code)
--     handle -> burn  (its own samples, in its trace)
-- The rounds vary per request, so that no request takes a fixed time
-- near a sampling period.
local M = {}

local find = ngx.re.find
local subject = string.rep("abcdefghij", 40) .. "foo=12345;bar=xyz"

local function scan(n)
	local hits = 0
	for _ = 1, n do
		if find(subject, [[(\w+)=(\d+);]], "jo") then
			hits = hits + 1
		end
	end
	return hits
end

local function burn(n)
	local a = 0
	for i = 1, n * 40 do
		a = (a * 31 + i) % 1000003
	end
	return a
end

function M.handle()
	local hits = scan(100 + math.random(200))
	local sum = burn(100 + math.random(200))
	ngx.say("hits ", hits, " sum ", sum)
end

return M

-- app.lua - the Lua handler of the nginx scenario (samples/nginx/nginx.conf):
-- each request does a known amount of CPU work in named Lua functions, so a
-- profile of the nginx workers shows, under the worker's native frames
-- (nginx's event loop, lua-nginx-module's content handler; both binaries
-- are stripped, so mostly unnamed), these Lua frames:
--     the content_by_lua_block's chunk, named "=content_by_lua(nginx.conf:N)"
--       (N: the line of content_by_lua_block in the conf; note "=", not
--       "@"), its main function: "main (content_by_lua(nginx.conf:N):0)"
--     -> handle          "handle (APP:LINE)"   (called as a field:
--                        require("app").handle())
--     -> render          "render (APP:LINE)"   (an upvalue of handle)
--        -> string.format  (a builtin, per row; JIT-compiled into the
--                          trace when the JIT is on) and table.concat
--        -> string.gsub    (a builtin, never compiled)
--     -> compute_checksum "compute_checksum (APP:LINE)" (an upvalue),
--                        a pure-Lua loop over the page's bytes: most of
--                        the Lua self time.
-- APP is this file's absolute path (chunkname "@/.../samples/nginx/app.lua",
-- as lua_package_path holds the absolute directory), LINE the line of the
-- function's "function" keyword.  The response is
-- a short text line with the checksum (so the network costs little).
local M = {}

local ROWS = 200

-- A pure-Lua loop: an Adler-32-like checksum of s, repeated ROUNDS times.
local ROUNDS = 4
local function compute_checksum(s)
	local a, b = 1, 0
	local byte = string.byte
	for _ = 1, ROUNDS do
		for i = 1, #s do
			a = (a + byte(s, i)) % 65521
			b = (b + a) % 65521
		end
	end
	return b * 65536 + a
end

-- Builds a page of ROWS formatted rows, then rewrites its numbers.
local function render(seed)
	local rows = {}
	for i = 1, ROWS do
		rows[i] = string.format("<tr><td>%d</td><td>%08x</td><td>%.3f</td></tr>",
			i, (seed * i) % 4294967296, i / 7)
	end
	local page = table.concat(rows, "\n")
	page = string.gsub(page, "(%d+)%.(%d+)", "%2,%1")
	return page
end

local requests = 0

function M.handle()
	requests = requests + 1
	local page = render(requests)
	local sum = compute_checksum(page)
	ngx.say("pid ", ngx.worker.pid(), " request ", requests, " bytes ", #page,
		" checksum ", sum)
end

return M

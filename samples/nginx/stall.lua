-- stall.lua - a handler for tests/e2e/stalls.sh and the arm64 lane: it
-- reads the file "big" beside nginx's prefix (the tests' $TMP/big, the
-- prefix being $TMP/nginx) whole, with io.open and f:read("*a"), and
-- answers its length.  The read blocks the worker's event loop for as
-- long as it takes: each request is one stall, read_big's, with the read
-- under it.
local M = {}

local function read_big()
	local f = assert(io.open(ngx.config.prefix():gsub("/?$", "/") .. "../big", "rb"))
	local s = f:read("*a")
	f:close()
	return #s
end

function M.handle()
	ngx.say(read_big())
end

return M

-- leaky.lua - a request handler that leaks into a module-level table, as
-- a session cache without expiry does: each request to /leak keeps ~2 KB
-- (a table and its strings) in leaky.sessions for the worker's life.
-- `luaprof heap` names where it stays: the module is reached from the
-- registry's _LOADED (package.loaded), so a snapshot's path is
-- [registry];_LOADED;leaky;sessions;...  (tests/e2e/heap.sh).
local M = { sessions = {} }
local n = 0

function M.handle()
	n = n + 1
	local id = string.format("s%08d-%d", n, ngx.worker.pid())
	M.sessions[id] = { id = id, at = ngx.now(), payload = string.rep("p", 2000) .. id }
	ngx.say("kept ", n)
end

return M

-- waits.lua - Lua-land waits of the nginx scenario (samples/nginx/nginx.conf,
-- location /waits): the handler's coroutine yields to nginx's event loop
-- in three named functions whose waits are 1:2:3, without ever blocking
-- the worker (its time off the CPU is epoll's, not theirs):
--     a  ngx.sleep(0.010)
--     b  ngx.sleep(0.020)
--     c  a cosocket reading from a slow server: this nginx's /slow, which
--        answers after ngx.sleep(0.030) (connect and send are quick)
-- A profile of kind lua-wait shows each wait under its function, the
-- yielding builtin or C function above it (ngx.sleep's, the cosocket's
-- receive), and /slow's own sleep under slow().  The handler does no
-- CPU work worth a sample.  Its answer is what each of a, b, c took by
-- the monotonic clock, in microseconds: "a b c", the test's truth.
local ffi = require("ffi")
ffi.cdef[[
struct lp_timespec { long tv_sec; long tv_nsec; };
int clock_gettime(int clk, struct lp_timespec *ts);
]]
local ts = ffi.new("struct lp_timespec")

local function now_us()
	ffi.C.clock_gettime(1, ts) -- CLOCK_MONOTONIC
	return tonumber(ts.tv_sec) * 1000000 + tonumber(ts.tv_nsec) / 1000
end

local M = {}

local function a()
	ngx.sleep(0.010)
end

local function b()
	ngx.sleep(0.020)
end

local function c()
	local sock = ngx.socket.tcp()
	sock:settimeout(2000)
	assert(sock:connect("127.0.0.1", ngx.var.server_port))
	assert(sock:send("GET /slow HTTP/1.0\r\nHost: localhost\r\n\r\n"))
	-- The whole answer: its first byte comes after slow()'s sleep.
	local body = sock:receive("*a")
	sock:close()
	return body
end

-- (Each called by its name: a frame is named as its caller calls it.)
function M.handle()
	local t0 = now_us()
	a()
	local t1 = now_us()
	b()
	local t2 = now_us()
	c()
	local t3 = now_us()
	ngx.say(string.format("%d %d %d", t1 - t0, t2 - t1, t3 - t2))
end

function M.slow()
	ngx.sleep(0.030)
	ngx.say("slow")
end

return M

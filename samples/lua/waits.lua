-- waits.lua - three functions that wait off the CPU in three ways, a for
-- 1 share, b for 2 and c for 3: a sleeps through the FFI (nanosleep), b
-- reads a pipe a child writes to late (io.popen), c waits for a command
-- to end (os.execute).  Each call's wall time is measured here, and the
-- sums printed at the end, "a_ms b_ms c_ms": the truth the off-CPU
-- profile is held to (a sleep overshoots by a timer slack a machine has,
-- which the wall time holds and the requested times would not).
-- usage: luajit waits.lua [ROUNDS]  (default 20: about 2.4 s)
local ffi = require("ffi")
ffi.cdef [[
struct lp_timespec { long tv_sec; long tv_nsec; };
int nanosleep(const struct lp_timespec *req, struct lp_timespec *rem);
int clock_gettime(int clk, struct lp_timespec *ts);
]]
local ts, now_ts = ffi.new("struct lp_timespec"), ffi.new("struct lp_timespec")

local function now_ms()
	ffi.C.clock_gettime(1, now_ts) -- CLOCK_MONOTONIC
	return tonumber(now_ts.tv_sec) * 1e3 + tonumber(now_ts.tv_nsec) / 1e6
end

function a() -- 20 ms in two sleeps
	for _ = 1, 2 do
		ts.tv_sec, ts.tv_nsec = 0, 10000000
		ffi.C.nanosleep(ts, nil)
	end
end

function b() -- 40 ms on a pipe
	local f = io.popen("sleep 0.04; echo late")
	f:read("*l")
	f:close()
end

function c() -- 60 ms for a command
	os.execute("sleep 0.06")
end

local ta, tb, tc = 0, 0, 0
for _ = 1, tonumber(arg[1]) or 20 do
	local t0 = now_ms()
	a()
	local t1 = now_ms()
	b()
	local t2 = now_ms()
	c()
	local t3 = now_ms()
	ta, tb, tc = ta + t1 - t0, tb + t2 - t1, tc + t3 - t2
end
print(string.format("%.1f %.1f %.1f", ta, tb, tc))

-- durable.lua FILE [N] - appends N (default 300) lines to FILE, each made
-- durable with fdatasync(2) through the FFI before the next: a wait in
-- uninterruptible sleep (D: the disk's), where waits.lua's all sleep
-- interruptibly (S).  tests/e2e/offcpu.sh tells the two apart.
local ffi = require("ffi")
ffi.cdef[[
int open(const char *path, int flags, int mode);
long write(int fd, const void *buf, unsigned long n);
int fdatasync(int fd);
int close(int fd);
]]
local O_WRONLY, O_CREAT, O_APPEND = 1, 0x40, 0x400
local fd = ffi.C.open(assert(arg[1], "usage: durable.lua FILE [N]"),
	O_WRONLY + O_CREAT + O_APPEND, 420)
assert(fd >= 0, "cannot open " .. arg[1])
local line = string.rep("x", 100) .. "\n"

local function durable(n)
	for _ = 1, n do
		ffi.C.write(fd, line, #line)
		ffi.C.fdatasync(fd)
	end
end

durable(tonumber(arg[2]) or 300)
ffi.C.close(fd)

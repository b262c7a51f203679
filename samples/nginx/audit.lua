-- audit.lua - a handler that works on the CPU and then waits off it, for
-- bench/offcpu_nginx.sh and the README's off-CPU flame graph: app.lua's
-- page and checksum (the CPU), then an audit line for the request,
-- appended to a file of the worker's and made durable with fdatasync(2)
-- before the handler returns.  fdatasync blocks the worker until the disk
-- has the line (ext4's journal commit: a fraction of a millisecond to a
-- few on this VM's disk), and nginx's event loop with it: the pattern an
-- off-CPU profile is for (a file read of a small file would come from the
-- page cache without waiting, and ngx.sleep yields to the event loop,
-- which then waits in epoll_wait, not in the handler).
--     main (content_by_lua(nginx.conf:N):0) -> handle (APP:LINE)
--        -> app.handle ... (CPU)
--        -> audit (APP:LINE) -> fdatasync (FFI: libc, then the kernel's
--           ext4_sync_file / jbd2 waits)
local ffi = require("ffi")
local app = require("app")

ffi.cdef[[
int open(const char *path, int flags, int mode);
long write(int fd, const void *buf, unsigned long n);
int fdatasync(int fd);
]]

local O_WRONLY, O_CREAT, O_APPEND = 1, 0x40, 0x400
local M = {}
local fd

local function audit(line)
	if not fd then
		fd = ffi.C.open(ngx.config.prefix() .. "logs/audit." .. ngx.worker.pid(),
			O_WRONLY + O_CREAT + O_APPEND, 420)
	end
	ffi.C.write(fd, line, #line)
	ffi.C.fdatasync(fd)
end

function M.handle()
	app.handle()
	audit(string.format("%.3f %s %s\n", ngx.now(), ngx.var.remote_addr, ngx.var.request_uri))
end

return M

-- ffi.lua - time in libc, called through LuaJIT's FFI from named Lua
-- functions.  The driver (the main chunk) gives each worker the same slice
-- of CPU time (SLICE seconds of os.clock) in turn, so each holds ~1/3 of
-- the samples (inclusive), nearly all of it inside libc:
--     measure_strlen -> ffi.C.strlen on a 4 MB string  (libc: strlen,
--                       glibc's __strlen_avx2 or similar)
--     compare_mem    -> ffi.C.memcmp on two equal 4 MB buffers (libc:
--                       memcmp, __memcmp_avx2_movbe or similar)
--     sort_qsort     -> ffi.C.qsort -> qsort_cmp, a Lua callback made
--                       with ffi.cast (frames: sort_qsort, libc's qsort /
--                       msort internals, LuaJIT's callback entry
--                       (lj_vm_ffi_callback), then the Lua callback, which
--                       LuaJIT names "?" as C called it:
--                       "? (ffi.lua:LINE)")
-- The FFI calls are plain C calls: no builtin frame sits between the Lua
-- function and libc (under the JIT the call is compiled inline).
-- Runs CPU-bound for SECONDS of CPU time (os.clock), then exits 0.
--   usage: luajit ffi.lua [SECONDS]      (default 5)
local ffi = require("ffi")
ffi.cdef[[
size_t strlen(const char *s);
int memcmp(const void *a, const void *b, size_t n);
void qsort(void *base, size_t nmemb, size_t size,
           int (*compar)(const void *, const void *));
]]
local C = ffi.C
local SLICE = 0.01
local SIZE = 4 * 1024 * 1024

local long = string.rep("luaprof!", SIZE / 8)
local buf1 = ffi.new("uint8_t[?]", SIZE)
local buf2 = ffi.new("uint8_t[?]", SIZE)
ffi.fill(buf1, SIZE, 0x5a)
ffi.fill(buf2, SIZE, 0x5a)
local N = 2000
local base = ffi.new("int32_t[?]", N)
local arr = ffi.new("int32_t[?]", N)
local seed = 4321
for i = 0, N - 1 do
	seed = (seed * 1103515245 + 12345) % 2147483648
	base[i] = seed
end

local qsort_cmp = ffi.cast("int (*)(const void *, const void *)",
	function(pa, pb)
		local a = ffi.cast("const int32_t *", pa)[0]
		local b = ffi.cast("const int32_t *", pb)[0]
		return a < b and -1 or (a > b and 1 or 0)
	end)

function measure_strlen(deadline)
	local n = 0
	repeat
		for i = 1, 4 do
			n = n + tonumber(C.strlen(long))
		end
	until os.clock() >= deadline
	return n
end

function compare_mem(deadline)
	local n = 0
	repeat
		for i = 1, 4 do
			n = n + C.memcmp(buf1, buf2, SIZE)
		end
	until os.clock() >= deadline
	return n
end

function sort_qsort(deadline)
	local n = 0
	repeat
		ffi.copy(arr, base, N * 4)
		C.qsort(arr, N, 4, qsort_cmp)
		n = n + arr[0]
	until os.clock() >= deadline
	return n
end
-- A C function that calls back into Lua must not be called from compiled
-- code: keep sort_qsort interpreted (LuaJIT would otherwise have to
-- blacklist it itself, or fail with "bad callback").
jit.off(sort_qsort)

local seconds = tonumber(arg and arg[1]) or 5
local deadline = os.clock() + seconds
local sum = 0
while os.clock() < deadline do
	sum = sum + measure_strlen(os.clock() + SLICE)
	sum = sum + compare_mem(os.clock() + SLICE)
	sum = sum + sort_qsort(os.clock() + SLICE)
end
if sum < 0 then print(sum) end

-- jitcomp.lua - time in the VM's own C code, beside Lua: the JIT compiler
-- (every chunk made by loadstring has a loop of its own, which LuaJIT
-- records and compiles) and error unwinding (pcall of a function that
-- throws every third call).  Both run in C called from the interpreter
-- (the compiler through a C frame of its own, lj_vm_cpcall), so the
-- native frames of that C code belong on the leaf side of the Lua frames:
--   * stacks: "main (jitcomp.lua:0)" right under the host's lua_pcall,
--     then the Lua frames, then the compiler's or the unwinder's native
--     frames, and [JIT compiler] last for the compiler's samples;
--   * throw (jitcomp.lua:LINE) under pcall, then error, then libgcc's
--     unwinder (_Unwind_RaiseException).
-- The loops' lengths and the throws vary with a counter: no fixed period.
-- Runs for SECONDS of CPU time (os.clock), then exits 0.
--   usage: luajit jitcomp.lua [SECONDS]      (default 5)
function throw(i)
	if i % 3 == 0 then error("boom " .. i) end
	return i
end

local seconds = tonumber(arg and arg[1]) or 5
local deadline = os.clock() + seconds
local k, acc = 0, 0
while os.clock() < deadline do
	k = k + 1
	local f = loadstring("local a = 0 for i = 1, " .. (100 + k % 37) ..
		" do a = a + i * " .. k .. " end return a")
	acc = acc + f()
	for j = 1, 20 + k % 13 do
		local ok, v = pcall(throw, j + k)
		if ok then acc = acc + v end
	end
end
if acc < 0 then print(acc) end

-- cfuncs.lua - time spent inside builtins (C functions of the standard
-- library), each called from its own distinctly named global Lua function.
-- The driver (the main chunk) gives each worker the same slice of CPU time
-- (SLICE seconds of os.clock) in turn, so each worker holds ~1/7 of the
-- samples (inclusive), and most of a worker's time is in its builtin:
--     rep_strings    -> string.rep       "rep_strings (cfuncs.lua:LINE)"
--     format_numbers -> string.format
--     gsub_words     -> string.gsub
--     find_patterns  -> string.find      (a pattern with captures)
--     sort_numbers   -> table.sort -> ?(sort_cmp) -> cmp
--     concat_parts   -> table.concat
--     collect_tables -> collectgarbage   (full cycles: VM state GC)
-- table.sort calls its comparator sort_cmp from C, so LuaJIT derives no
-- name for it ("? (cfuncs.lua:LINE)"); sort_cmp calls the global cmp.
-- With the JIT on, LuaJIT compiles some builtins into traces
-- (string.rep, string.format, table.concat, plain string.find) and their
-- time then shows as calls from trace code into VM helpers (lj_buf_*,
-- lj_strfmt_*) rather than as the builtin: assert builtin names under
-- -joff; string.gsub and table.sort (never compiled) show either way.
-- Runs CPU-bound for SECONDS of CPU time (os.clock), then exits 0.
--   usage: luajit cfuncs.lua [SECONDS]      (default 5)
local SLICE = 0.01

-- Inputs, built once.
local words = {}
for i = 1, 2000 do
	words[i] = string.char(97 + i % 26, 97 + i % 7, 97 + i % 11) .. i
end
local text = table.concat(words, " ")       -- ~14 KB of "abc123 " words
local parts = {}
for i = 1, 20000 do parts[i] = words[i % 2000 + 1] end
local shuffled = {}
local seed = 12345
for i = 1, 3000 do
	seed = (seed * 1103515245 + 12345) % 2147483648
	shuffled[i] = seed
end

function rep_strings(deadline)
	local n = 0
	repeat
		for i = 1, 20 do
			n = n + #string.rep("abcdefgh", 50000 + i)
		end
	until os.clock() >= deadline
	return n
end

function format_numbers(deadline)
	local n = 0
	repeat
		for i = 1, 500 do
			n = n + #string.format("%d:%s:%.3f:%x:%5.1e", i, "item", i / 3, i * 7, i * 1.5)
		end
	until os.clock() >= deadline
	return n
end

function gsub_words(deadline)
	local n = 0
	repeat
		local s, k = string.gsub(text, "(%a+)(%d+)", "%2%1")
		n = n + k + #s
	until os.clock() >= deadline
	return n
end

function find_patterns(deadline)
	local n = 0
	repeat
		for i = 1, 20 do
			-- No match: the matcher tries every position of the text.
			local s = string.find(text, "(%d+)%-(%a+)x$", i)
			n = n + (s or 1)
		end
	until os.clock() >= deadline
	return n
end

function cmp(a, b)
	return a < b
end

local function sort_cmp(a, b)
	local r = cmp(a, b)
	return r
end

function sort_numbers(deadline)
	local n = 0
	repeat
		local t = {}
		for i = 1, #shuffled do t[i] = shuffled[i] end
		table.sort(t, sort_cmp)
		n = n + t[1]
	until os.clock() >= deadline
	return n
end

function concat_parts(deadline)
	local n = 0
	repeat
		for i = 1, 10 do
			n = n + #table.concat(parts, ",")
		end
	until os.clock() >= deadline
	return n
end

-- Garbage, then full collections: the time is the collector's, which the
-- VM marks as its GC state (lj_gc_fullgc), so it shows as [GC].
function collect_tables(deadline)
	local n = 0
	repeat
		local t = {}
		for i = 1, 2000 do t[i] = { i } end
		collectgarbage()
		n = n + #t
	until os.clock() >= deadline
	return n
end

local seconds = tonumber(arg and arg[1]) or 5
local deadline = os.clock() + seconds
local sum = 0
while os.clock() < deadline do
	sum = sum + rep_strings(os.clock() + SLICE)
	sum = sum + format_numbers(os.clock() + SLICE)
	sum = sum + gsub_words(os.clock() + SLICE)
	sum = sum + find_patterns(os.clock() + SLICE)
	sum = sum + sort_numbers(os.clock() + SLICE)
	sum = sum + concat_parts(os.clock() + SLICE)
	sum = sum + collect_tables(os.clock() + SLICE)
end
if sum < 0 then print(sum) end

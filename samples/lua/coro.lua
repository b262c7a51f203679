-- coro.lua - work on both sides of coroutine switches.
--   * A producer/consumer pair driven by coroutine.resume: the coroutine
--     body (producer_body, called by coroutine.resume, so LuaJIT derives
--     no name for it: "? (coro.lua:LINE)") calls produce() for each item
--     and yields it; the main chunk resumes it and calls consume(item).
--   * A generator made with coroutine.wrap: its body (generator_body,
--     again "?") calls wrapped_gen() for each value and yields it; the
--     main chunk calls the wrapper.
-- produce, consume and wrapped_gen are globals, called from Lua, and each
-- burns one equal unit of work inside itself (self time), so each holds
-- ~1/3 of the self time:
--     produce     "produce (coro.lua:LINE)"      inside the resumed coroutine
--     consume     "consume (coro.lua:LINE)"      on the main thread
--     wrapped_gen "wrapped_gen (coro.lua:LINE)"  inside the wrapped coroutine
-- (LINE: see abc.lua.)
-- Lua stacks as LuaJIT sees them (each coroutine has its own Lua stack):
--     main thread: main -> [coroutine.resume | the wrap function] or consume
--     producer:    ?(producer_body) -> produce
--     generator:   ?(generator_body) -> wrapped_gen
-- Runs CPU-bound for SECONDS of CPU time (os.clock), then exits 0.
--   usage: luajit coro.lua [SECONDS]      (default 5)
local UNIT = 100000


function produce(i)
	local x = i
	for k = 1, UNIT do
		x = (x + k * 7) % 1000003
	end
	return x
end

function consume(item)
	local x = item
	for k = 1, UNIT do
		x = (x + k * 7) % 1000003
	end
	return x
end

function wrapped_gen(i)
	local x = i
	for k = 1, UNIT do
		x = (x + k * 7) % 1000003
	end
	return x
end

local function producer_body()
	local i = 0
	while true do
		i = i + 1
		local item = produce(i)
		coroutine.yield(item)
	end
end

local function generator_body()
	local i = 0
	while true do
		i = i + 1
		local v = wrapped_gen(i)
		coroutine.yield(v)
	end
end

local seconds = tonumber(arg and arg[1]) or 5
local deadline = os.clock() + seconds
local producer = coroutine.create(producer_body)
local gen = coroutine.wrap(generator_body)
local sum = 0
while os.clock() < deadline do
	local ok, item = coroutine.resume(producer)
	assert(ok, item)
	sum = sum + consume(item) + gen()
end
if sum < 0 then print(sum) end

# app_tarantool.sh - tarantool (its own static fork of LuaJIT, 32-bit
# references, offsets from the DWARF in its executable) running two
# fibers that yield to each other: each fiber runs on a stack of its own
# that starts at coro_init.  JIT on, 3 s of its own CPU time, launched by
# `record --`.  Checks the bars every real application is held to
# (tests/lib.sh; coro_init is a fiber's root), the workload's functions
# under each fiber, and, for compiled code, the lines of the traces (the
# JIT state's offsets must be this fork's, not upstream's).
. tests/lib.sh

tests/deps.sh || { fail "test dependencies (tests/deps.sh)"; exit 1; }

W=$TMP/fibers.lua
cat >$W <<'LUA'
local fiber = require('fiber')
local function fib(n)
  if n < 2 then return n end
  return fib(n - 1) + fib(n - 2)
end
local function strs(n)
  local t = {}
  for i = 1, n do t[#t + 1] = ('x'):rep(i % 50) .. tostring(i) end
  return #table.concat(t)
end
local function sum(n)
  local s = 0
  for i = 1, n do s = s + i % 7 end
  return s
end
-- CPU seconds, not wall clock: as long on a busy machine as on an idle one.
local deadline = os.clock() + 3
local done = 0
local function worker(kind)
  local acc = 0
  while os.clock() < deadline do
    if kind == 1 then
      acc = acc + fib(15 + math.random(3)) + sum(20000 + math.random(20000))
    else
      acc = acc + strs(100 + math.random(100))
    end
    fiber.yield()
  end
  done = done + 1
end
fiber.create(worker, 1)
fiber.create(worker, 2)
while done < 2 do fiber.sleep(0.01) end
os.exit(0)
LUA
line() { grep -n "$1" $W | head -1 | cut -d: -f1; }

(cd $TMP && exec $LUAPROF record -F 999 -o $TMP/tt.lp -- tarantool $W \
	>$TMP/tt.out 2>$TMP/tt.err)
check "record exits 0" test $? -eq 0
check "the LuaJIT in tarantool was recognized" grep -q "LuaJIT in /usr/bin/tarantool" $TMP/tt.err
$LUAPROF report --format folded -o $TMP/tt.folded $TMP/tt.lp 2>/dev/null
check_app_stacks "tarantool" $TMP/tt.folded coro_init

worker="? ($W:$(line 'local function worker'))"
fib="fib ($W:$(line 'local function fib'))"
strs="strs ($W:$(line 'local function strs'))"
sum="sum ($W:$(line 'local function sum'))"
check "a fiber runs worker from coro_init, through lua_pcall" \
	grep -qE "^coro_init;.*;lua_pcall;$(printf '%s' "$worker" | sed 's/[.()?]/\\&/g');" $TMP/tt.folded
check "fib recurses under worker" grep -qF "$worker;$fib;$fib;$fib" $TMP/tt.folded
check "strs runs under worker" grep -qF "$worker;$strs" $TMP/tt.folded
check "sum runs under worker" grep -qF "$worker;$sum" $TMP/tt.folded

# sum's loop runs compiled: its samples have the line of the loop, where
# its trace starts, not an unknown line.
$LUAPROF report --by line -n 0 -o $TMP/tt.lines $TMP/tt.lp 2>/dev/null
loop=$(line 'for i = 1, n do s = s')
insum=$(folded_incl $TMP/tt.folded "$sum")
atloop=$(awk -v l=" $W:$loop " 'index($0, l) { print $1; exit }' $TMP/tt.lines)
check_num "share of sum's samples at its loop's line (compiled code)" \
	"$(share ${atloop:-0} $insum)" ">=" 0.9 || grep -F " $W:" $TMP/tt.lines | head -5 | sed 's/^/    /'

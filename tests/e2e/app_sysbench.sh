# app_sysbench.sh - sysbench running a Lua workload on 2 threads: one
# lua_State per worker thread, event() called from C through lua_pcall
# (libluajit-5.1.so.2), JIT on: compiled traces calling libm, string
# building with builtins, the GC.  Launched by `record --`, 60000 events.  Checks
# the bars every real application is held to (tests/lib.sh) and that both
# threads' samples carry the workload's functions under event.
. tests/lib.sh

tests/deps.sh || { fail "test dependencies (tests/deps.sh)"; exit 1; }

W=$TMP/cpu.lua
cat >$W <<'LUA'
function thread_init()
  acc = 0
end
local function uniform(n)
  local s = 0
  for i = 1, n do s = s + math.sin(i) * math.cos(i) end
  return s
end
local function fmt(n)
  local parts = {}
  for i = 1, n do parts[#parts + 1] = string.format("%d:%g", i, i / 3) end
  return table.concat(parts, ",")
end
function event()
  acc = acc + uniform(2000 + math.random(1000))
  acc = acc + #fmt(100 + math.random(100))
end
function thread_done()
end
LUA
line() { grep -n "$1" $W | head -1 | cut -d: -f1; }

# A fixed number of events, not a fixed time: the samples follow the CPU
# time the workload takes, so a loaded machine does not leave a few
# samples in which the launch's first moments weigh too much.
$LUAPROF record -F 999 -o $TMP/sb.lp -- sysbench $W --threads=2 --time=0 --events=60000 run \
	>$TMP/sb.out 2>$TMP/sb.err
check "record exits 0" test $? -eq 0
check "sysbench ran its events" grep -qE "total number of events: +[1-9]" $TMP/sb.out
check "the LuaJIT in libluajit-5.1.so.2 was recognized" grep -q "LuaJIT in .*libluajit-5.1.so" $TMP/sb.err
$LUAPROF report --format folded -o $TMP/sb.folded $TMP/sb.lp 2>/dev/null
check_app_stacks "sysbench" $TMP/sb.folded

# The workload's functions, named, under event(), which sysbench's own
# chunk calls through pcall, in the worker threads (start_thread), under
# sysbench's lua_pcall.
ev="? ($W:$(line '^function event'))"
un="uniform ($W:$(line 'function uniform'))"
fm="fmt ($W:$(line 'function fmt'))"
check "uniform runs under event, under pcall, in a worker thread" \
	grep -qF "start_thread;" <(grep -F ";lua_pcall;" $TMP/sb.folded | grep -F ";pcall;$ev;$un;")
check "fmt runs under event" grep -qF ";$ev;$fm" $TMP/sb.folded
total=$(folded_total $TMP/sb.folded)
check_num "share of samples in uniform" "$(share $(folded_incl $TMP/sb.folded "$un") $total)" ">=" 0.3
check_num "share of samples in fmt" "$(share $(folded_incl $TMP/sb.folded "$fm") $total)" ">=" 0.05

# app_tarantool.sh - tarantool (its own static fork of LuaJIT, 32-bit
# references, offsets from the DWARF in its executable) running two
# fibers that yield to each other: each fiber runs on a stack of its own
# that starts at coro_init.  JIT on, 3 s of its own CPU time, launched by
# `record --`.  Checks the bars every real application is held to
# (tests/lib.sh; coro_init is a fiber's root), the workload's functions
# under each fiber, for compiled code the lines of the traces (the JIT
# state's offsets must be this fork's, not upstream's), and builtins by
# this fork's numbering (it lacks jit.security: ffi.fill is upstream's
# ffi.copy).  Then the same on a copy of tarantool without its DWARF: the
# fork's offsets and builtins read from its code, as its DWARF gives them.
. tests/lib.sh

tests/deps.sh || { fail "test dependencies (tests/deps.sh)"; exit 1; }

W=$TMP/fibers.lua
{ app_lua_functions; cat <<'LUA'; } >$W
local fiber = require('fiber')
local ffi = require('ffi')
local function sum(n)
  local s = 0
  for i = 1, n do s = s + i % 7 end
  return s
end
-- Interpreted (jit.off): ffi.fill runs as the builtin it is.
local buf = ffi.new('char[?]', 65536)
local function fill(n)
  for i = 1, n do ffi.fill(buf, 65536, i) end
end
jit.off(fill)
-- CPU seconds, not wall clock: as long on a busy machine as on an idle one.
local deadline = os.clock() + tonumber(os.getenv('SECS'))
local done = 0
local function worker(kind)
  local acc = 0
  while os.clock() < deadline do
    if kind == 1 then
      acc = acc + fib(15 + math.random(3)) + sum(20000 + math.random(20000))
    else
      acc = acc + strs(100 + math.random(100))
      fill(20 + math.random(20))
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

worker="? ($W:$(line 'local function worker'))"
fib="fib ($W:$(line 'local function fib'))"
strs="strs ($W:$(line 'local function strs'))"
sum="sum ($W:$(line 'local function sum'))"
fill="fill ($W:$(line 'local function fill'))"
loop=$(line 'for i = 1, n do s = s')

# record_tarantool LABEL OUT SECS TARANTOOL
record_tarantool() {
	local label=$1 out=$2
	(cd $TMP && SECS=$3 exec $LUAPROF record -v -F 999 -o $out.lp -- $4 $W \
		>$out.out 2>$out.err)
	check "$label: record exits 0" test $? -eq 0
	$LUAPROF report --format folded -o $out.folded $out.lp 2>/dev/null
	$LUAPROF report --by line -n 0 -o $out.lines $out.lp 2>/dev/null
	$LUAPROF info $out.lp >$out.info
}

# The fork's names and compiled code's lines, whatever gave the offsets.
check_fork() {
	local label=$1 out=$2 insum atloop
	check "$label: fib recurses under worker" grep -qF "$worker;$fib;$fib;$fib" $out.folded
	check "$label: strs runs under worker" grep -qF "$worker;$strs" $out.folded
	check "$label: sum runs under worker" grep -qF "$worker;$sum" $out.folded
	check "$label: ffi.fill is named by this fork's numbering, under fill" \
		grep -qF "$worker;$fill;ffi.fill" $out.folded
	check "$label: no builtin named by upstream's numbering (ffi.copy)" \
		bash -c "! grep -qF 'ffi.copy' $out.folded"
	# sum's loop runs compiled: its samples have the line of the loop,
	# where its trace starts, not an unknown line.
	insum=$(folded_incl $out.folded "$sum")
	atloop=$(awk -v l=" $W:$loop " 'index($0, l) { print $1; exit }' $out.lines)
	check_num "$label: share of sum's samples at its loop's line (compiled code)" \
		"$(share ${atloop:-0} $insum)" ">=" 0.9 ||
		grep -F " $W:" $out.lines | head -5 | sed 's/^/    /'
}

record_tarantool "tarantool" $TMP/tt 3 tarantool
check "the LuaJIT in tarantool was recognized, offsets from its DWARF" \
	grep -q "LuaJIT in /usr/bin/tarantool; offsets from DWARF (/usr/bin/tarantool)" $TMP/tt.err
check "info: tarantool's VM, build dwarf" \
	grep -qE "^  pid [0-9]+ \(tarantool\): LuaJIT 2.1 \(upstream, 32-bit refs\) in /usr/bin/tarantool; build dwarf, offsets from DWARF" $TMP/tt.info
check_app_stacks "tarantool" $TMP/tt.folded coro_init
# Over the bar (failed once under load at 3.26%, not reproduced in 37
# runs since): where the walks stopped and why, so that it explains itself.
awk -v total="$(folded_total $TMP/tt.folded)" '{ n += $1 }
	END { exit !(n > 0.005 * total) }' $TMP/tt.folded.truncated && {
	grep -E '^native stacks|^samples:' $TMP/tt.info
	grep -E 'stops:|walk cut short|Lua stack truncated|^luaprof record: Lua:' $TMP/tt.err
} | cut -c1-300 | sed 's/^/    /'
# A fiber's Lua frames stand on its own C stack, under lua_pcall: never
# on the scheduler's (ev_run, epoll) or another fiber's, where G->cur_L,
# the last fiber to enter the VM, does not run.  A stack cut short
# ([truncated], held to its own bar above) shows no root to be under: a
# tick in coro_transfer, the switch between fibers' stacks, which has no
# CFI, cuts a yielding fiber's stack there (failed once so under load).
not_under_pcall() {
	grep -F "($W:" $TMP/tt.folded | grep -vF ';lua_pcall;' | grep -vF '[truncated];'
}
check_num "tarantool: samples with the workload's Lua frames not under lua_pcall" \
	"$(not_under_pcall | awk '{ n += $NF } END { print n + 0 }')" "==" 0 ||
	not_under_pcall | head -3 | cut -c1-300 | sed 's/^/    /'
check "a fiber runs worker from coro_init, through lua_pcall" \
	grep -qE "^coro_init;.*;lua_pcall;$(printf '%s' "$worker" | sed 's/[.()?]/\\&/g');" $TMP/tt.folded
check_fork "tarantool" $TMP/tt

# Without DWARF: the fork's layout from its code.
if ! objcopy --strip-debug /usr/bin/tarantool $TMP/tarantool; then
	fail "objcopy --strip-debug /usr/bin/tarantool"
	exit 1
fi
record_tarantool "stripped tarantool" $TMP/st 2 $TMP/tarantool
check "stripped tarantool: the fork's layout, read from its code" \
	grep -q "LuaJIT in $TMP/tarantool; offsets derived: .* from its code (.*); 203 builtins named from its library tables" $TMP/st.err
check "stripped tarantool: info says where the layout came from" \
	grep -qE "^  pid [0-9]+ \(tarantool\): .*; build code, offsets derived: " $TMP/st.info
# What the code shows is what tarantool's DWARF says, field by field.
$LUAPROF check --luajit /usr/bin/tarantool >$TMP/check.out
check "luaprof check --luajit tarantool: exits 0" test $? -eq 0
check "luaprof check --luajit tarantool: DWARF agrees with the code on every field" \
	bash -c "grep -q ' same\$' $TMP/check.out && ! grep -q DIFFERS $TMP/check.out"
check_fork "stripped tarantool" $TMP/st

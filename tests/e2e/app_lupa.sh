# app_lupa.sh - LuaJIT inside a Python process: python3-lupa's
# LuaRuntime (libluajit-5.1.so.2), a Lua function called from a Python
# loop for 3 s of the process's CPU time, JIT on.  Launched by
# `record --`.  Checks the bars every real application is held to
# (tests/lib.sh) and that the Lua functions stand on the Python frames
# that call them.
. tests/lib.sh

tests/deps.sh || { fail "test dependencies (tests/deps.sh)"; exit 1; }

W=$TMP/work.py
cat >$W <<'PY'
import time
import lupa

lua = lupa.LuaRuntime()
lua.execute('''
function fib(n)
  if n < 2 then return n end
  return fib(n - 1) + fib(n - 2)
end
function strs(n)
  local t = {}
  for i = 1, n do t[#t + 1] = ("x"):rep(i % 50) .. tostring(i) end
  return #table.concat(t)
end
function work(r)
  return fib(16 + r % 3) + strs(100 + r % 100)
end
''')
work = lua.globals().work
# CPU seconds, not wall clock: as long on a busy machine as on an idle one.
deadline = time.process_time() + 3
r = 0
while time.process_time() < deadline:
    work(r)
    r += 7
PY

# Debian's python3, whose lupa module this is, whatever else is on PATH.
$LUAPROF record -F 999 -o $TMP/lp.lp -- /usr/bin/python3 $W >$TMP/lp.out 2>$TMP/lp.err
check "record exits 0" test $? -eq 0
check "the LuaJIT in libluajit-5.1.so.2 was recognized" grep -q "LuaJIT in .*libluajit-5.1.so" $TMP/lp.err
$LUAPROF report --format folded -o $TMP/lp.folded $TMP/lp.lp 2>/dev/null
check_app_stacks "python3-lupa" $TMP/lp.folded

# The chunk given to execute() is a string that lupa names "<python>":
# LuaJIT calls it [string "<python>"], and so does the report.  work is
# called from C, so it has no name (?), as in LuaJIT's tracebacks.
chunk='\[string "<python>"\]'
check "work runs under Python's interpreter, through lua_pcall" \
	grep -qE "^_start;.*;_PyEval_EvalFrameDefault;.*;lua_pcall;\? \($chunk:11\);" $TMP/lp.folded
check "fib recurses under work" grep -qE ";\? \($chunk:11\);fib \($chunk:2\);fib \($chunk:2\);" $TMP/lp.folded
check "strs runs under work" grep -qE ";\? \($chunk:11\);strs \($chunk:6\)" $TMP/lp.folded

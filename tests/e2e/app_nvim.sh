# app_nvim.sh - neovim headless running a Lua file (`:luafile`) in its
# libluajit-5.1.so.2: recursion, string building with builtins, the GC,
# JIT on, for 3 s of its own CPU time.  Launched by `record --`.  Checks
# the bars every real application is held to (tests/lib.sh) and that the
# workload's functions stand on neovim's frames that run the file.
. tests/lib.sh

tests/deps.sh || { fail "test dependencies (tests/deps.sh)"; exit 1; }

W=$TMP/work.lua
{ app_lua_functions; cat <<'LUA'; } >$W
-- CPU seconds, not wall clock: as long on a busy machine as on an idle one.
local deadline = os.clock() + 3
local acc = 0
while os.clock() < deadline do
  acc = acc + fib(16 + math.random(4)) + strs(200 + math.random(200))
end
LUA
line() { grep -n "$1" $W | head -1 | cut -d: -f1; }

# Its own home and state: nvim writes nothing of root's.
HOME=$TMP XDG_CONFIG_HOME=$TMP XDG_STATE_HOME=$TMP XDG_DATA_HOME=$TMP \
	$LUAPROF record -F 999 -o $TMP/nv.lp -- \
	nvim --headless -u NONE -i NONE -n -c "luafile $W" -c 'qa!' \
	</dev/null >$TMP/nv.out 2>$TMP/nv.err
check "record exits 0" test $? -eq 0
check "the LuaJIT in libluajit-5.1.so.2 was recognized" grep -q "LuaJIT in .*libluajit-5.1.so" $TMP/nv.err
$LUAPROF report --format folded -o $TMP/nv.folded $TMP/nv.lp 2>/dev/null
check_app_stacks "neovim" $TMP/nv.folded

main="main ($W:0)"
fib="fib ($W:$(line 'local function fib'))"
strs="strs ($W:$(line 'local function strs'))"
check "the file's main chunk runs under nlua_exec_file, under main, from _start" \
	grep -qE "^_start;.*;main;.*;nlua_exec_file;.*;lua_pcall;$(printf '%s' "$main" | sed 's/[.()]/\\&/g');" $TMP/nv.folded
check "fib recurses under main" grep -qF "$main;$fib;$fib;$fib" $TMP/nv.folded
check "strs runs under main" grep -qF "$main;$strs" $TMP/nv.folded
total=$(folded_total $TMP/nv.folded)
check_num "share of samples in fib" "$(share $(folded_incl $TMP/nv.folded "$fib") $total)" ">=" 0.2
check_num "share of samples in strs" "$(share $(folded_incl $TMP/nv.folded "$strs") $total)" ">=" 0.1

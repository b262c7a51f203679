# app_wrk.sh - wrk (libluajit-5.1.so.2) loading the test nginx with a
# script: one lua_State per wrk thread (2), each calling the script's
# request() and response() from its event loop (aeMain) through
# lua_call, JIT on, plus the main thread's own VM for setup().  request()
# and response() burn a varying amount of CPU in Lua, so that a request's
# cost has no fixed period near the sampling one.  Recorded from wrk's
# start (`record --`) until wrk has used 2 s of CPU time (the samples
# follow its CPU, not the clock), then stopped.  Checks the bars every
# real application is held to (tests/lib.sh) and that the callbacks'
# functions stand under wrk's thread and event loop.
. tests/lib.sh
. tests/nginx.sh

tests/deps.sh || { fail "test dependencies (tests/deps.sh)"; exit 1; }

nginx_start || { fail "nginx started"; exit 1; }

W=$TMP/work.lua
{ app_lua_functions; cat <<'LUA'; } >$W
burned = 0
function request()
  burned = burned + fib(10 + math.random(6))
  return wrk.format(nil, "/")
end
function response(status, headers, body)
  burned = burned + strs(20 + math.random(60))
end
LUA
line() { grep -n "$1" $W | head -1 | cut -d: -f1; }

$LUAPROF record -F 999 -d 60 -o $TMP/wrk.lp -- \
	wrk -t2 -c4 -d60s -s $W "http://127.0.0.1:$NGINX_PORT/" >$TMP/wrk.out 2>$TMP/wrk.err &
REC=$!
CLEANUP_PIDS+=($REC)
wait_for pgrep -P $REC -x wrk >/dev/null
WRK=$(pgrep -P $REC -x wrk)
CLEANUP_PIDS+=($WRK)
check "wrk runs under the recorder" test -n "$WRK"
# Until wrk has used 2 s of CPU (at most the 60 s of -d), then stopped.
ticks=$((2 * $(getconf CLK_TCK)))
until [ "$(cpu_ticks $WRK)" -ge $ticks ] || ! kill -0 $REC 2>/dev/null; do
	sleep 0.2
done
kill -INT $REC 2>/dev/null
wait $REC
check "record exits 0" test $? -eq 0
check "the LuaJIT in libluajit-5.1.so.2 was recognized" grep -q "LuaJIT in .*libluajit-5.1.so" $TMP/wrk.err
$LUAPROF report --format folded -o $TMP/wrk.folded $TMP/wrk.lp 2>/dev/null
check_app_stacks "wrk" $TMP/wrk.folded

# Each callback's work under the callback, in a wrk thread's event loop
# (start_thread ... aeMain), from wrk's script_request and script_response.
fib="fib ($W:$(line 'local function fib'))"
strs="strs ($W:$(line 'local function strs'))"
# (Called from C, a callback has no name LuaJIT can derive: "?".)
req="? ($W:$(line '^function request'))"
resp="? ($W:$(line '^function response'))"
re() { printf '%s' "$1" | sed 's/[.()?]/\\&/g'; }
check "request's fib runs under request, from a thread's aeMain" \
	grep -qE "start_thread;.*;aeMain;.*;script_request;$(re "$req");$(re "$fib");" $TMP/wrk.folded
check "response's strs runs under response, from a thread's aeMain" \
	grep -qE "start_thread;.*;aeMain;.*;script_response;$(re "$resp");$(re "$strs")" $TMP/wrk.folded
# Both threads' VMs are walked: request's frames in the samples of two
# threads (speedscope's JSON has a profile per thread).
$LUAPROF report --format speedscope -o $TMP/wrk.json $TMP/wrk.lp 2>/dev/null
nthreads=$(python3 - "$TMP/wrk.json" "$req" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
fr = [i for i, f in enumerate(d["shared"]["frames"]) if f["name"] == sys.argv[2]]
print(sum(1 for p in d["profiles"] if any(i in s for s in p["samples"] for i in fr)))
PY
)
check_num "wrk threads with request's frames" "${nthreads:-0}" ">=" 2
nginx_stop

# app_kresd.sh - knot-resolver (kresd, libluajit-5.1.so.2) on 127.0.0.1:
# a config with a Lua policy callback run for each query and an
# event.recurrent timer burning CPU in Lua, answering kdig's queries
# from its own policy rules (a forward to a closed loopback port, so
# nothing leaves the machine).  Recorded from its start until kresd has
# used 2 s of CPU time (the samples follow its CPU time, not the clock, so
# a loaded machine does not leave a few samples in which its start-up
# weighs too much), under load once it answers.
# Checks the bars every real application is held to (tests/lib.sh) and
# that the callbacks stand on the frames of kresd's event loop.
. tests/lib.sh

tests/deps.sh || { fail "test dependencies (tests/deps.sh)"; exit 1; }

PORT=$((20000 + RANDOM % 20000))
D=$TMP/kr
mkdir -p $D
cat >$D/config <<LUA
net.listen('127.0.0.1', $PORT, { kind = 'dns' })
cache.size = 10 * MB
trust_anchors.remove('.')
for _, m in ipairs({ 'priming', 'detect_time_skew', 'detect_time_jump',
                     'ta_signal_query', 'ta_sentinel', 'ta_update' }) do
  pcall(modules.unload, m)
end
dofile('$D/work.lua')
policy.add(function(req, qry) score(qry) return nil end)
policy.add(policy.all(policy.ANSWER({ [kres.type.A] = { rdata = kres.str2ip('192.0.2.1'), ttl = 300 } }, true)))
policy.add(policy.all(policy.FORWARD('127.0.0.1@9')))
LUA
W=$D/work.lua
{ app_lua_functions; cat <<'LUA'; } >$W
burned = 0
-- Every 10 ms, 3 to 7 ms of the process's CPU time in Lua.
local function burn()
  local stop = os.clock() + (3 + 4 * math.random()) / 1000
  repeat burned = burned + fib(12 + math.random(4)) until os.clock() >= stop
end
event.recurrent(10, burn)
function score(qry)
  burned = burned + strs(100 + math.random(200))
end
LUA
line() { grep -n "$1" $W | head -1 | cut -d: -f1; }

# Recorded from its start (config loading, module setup) until kresd has
# used 2 s of CPU time (at most 60 s), then stopped by the recorder
# (SIGTERM to the pid it launched) when the recorder is told to stop.
$LUAPROF record -F 999 -d 60 -o $TMP/kr.lp -- kresd -n -c $D/config $D \
	>$D/kresd.log 2>$TMP/kr.err </dev/null &
REC=$!
CLEANUP_PIDS+=($REC)
answers() { kdig @127.0.0.1 -p $PORT +notcp +timeout=1 +retry=0 +short "$@" 2>/dev/null; }
ready() { answers ready.example A | grep -q 192.0.2.1; }
wait_for ready
check "kresd answers on 127.0.0.1:$PORT" ready || { sed 's/^/    /' $D/kresd.log | tail -5; exit 1; }
KRESD=$(pgrep -P $REC -x kresd)
CLEANUP_PIDS+=($KRESD)

# Queries while recording: 20 names a kdig, until the recorder is done;
# it is told to stop (SIGINT) once kresd has used 2 s of CPU time.
ticks=$((2 * $(getconf CLK_TCK)))
while kill -0 $REC 2>/dev/null; do
	i=$((${i:-0} + 1))
	answers $(for j in $(seq 20); do echo "q$i-$j.example A"; done) >/dev/null
	[ -z "${stopping:-}" ] && [ "$(cpu_ticks $KRESD)" -ge $ticks ] &&
		{ kill -INT $REC; stopping=1; }
done
wait $REC
check "record exits 0" test $? -eq 0
check "the recorder stopped kresd" bash -c "! kill -0 $KRESD 2>/dev/null"
check "the LuaJIT in libluajit-5.1.so.2 was recognized" grep -q "LuaJIT in .*libluajit-5.1.so" $TMP/kr.err
$LUAPROF report --format folded -o $TMP/kr.folded $TMP/kr.lp 2>/dev/null
check_app_stacks "kresd" $TMP/kr.folded

fib="fib ($W:$(line 'local function fib'))"
strs="strs ($W:$(line 'local function strs'))"
score="score ($W:$(line '^function score'))"
burn="? ($W:$(line 'local function burn'))"
check "the timer's fib runs under burn, from kresd's event loop (uv_run)" \
	grep -qE "^_start;.*;uv_run;.*;$(printf '%s;%s;' "$burn" "$fib" | sed 's/[.()?]/\\&/g')" $TMP/kr.folded
check "the policy callback's strs runs under score, from uv_run" \
	grep -qE "^_start;.*;uv_run;.*;$(printf '%s;%s' "$score" "$strs" | sed 's/[.()]/\\&/g')" $TMP/kr.folded

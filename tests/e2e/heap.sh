# heap.sh - `luaprof heap`: snapshots of a LuaJIT VM's heap, read from
# outside.  samples/lua/leak.lua leaks ~1 MB a second into the global
# cache.users and makes as much garbage; under luajit2 (/usr/bin/luajit),
# upstream LuaJIT (GC64) and a 32-bit-refs build, two snapshots 2.5 s apart
# must show the growth under _G;cache;users (80% or more of it), a total
# within 15% of the program's own collectgarbage("count"), strings and
# tables among the objects, and a pause said; every report format reads
# them, and go tool pprof reads heap_space.  In nginx (lua-nginx-module on
# libluajit2), a handler that keeps ~2 KB a request in a module's table
# (samples/nginx/leaky.lua): the diff of two snapshots of a worker names
# the module through the registry's _LOADED.  Every process stopped by pid.
. tests/lib.sh
. tests/nginx.sh

tests/deps.sh || { fail "test dependencies (tests/deps.sh)"; exit 1; }
tests/luajit-builds.sh || { fail "LuaJIT builds (tests/luajit-builds.sh)"; exit 1; }

BUILDS=$PWD/build/luajit-builds

# growth_under BASE NEW REGEX : the share of the bytes that grew from BASE
# to NEW (diff --format folded: "stack BASE NEW") on stacks matching REGEX.
growth_under() {
	$LUAPROF diff --kind heap --format folded "$1" "$2" |
		awk -v re="$3" '{ d = $NF - $(NF - 1); if (d <= 0) next; g += d; if ($0 ~ re) m += d }
			END { printf "%.4f", g ? m / g : 0 }'
}

# snapshot NAME PID : luaprof heap -p PID into $TMP/NAME.lp (its output in
# $TMP/NAME.out); its exit status.
snapshot() {
	$LUAPROF heap -p "$2" -o "$TMP/$1.lp" >"$TMP/$1.out" 2>&1
}

leak_case() { # NAME LUAJIT
	local name=$1 lj=$2 pid total count users pause
	if [ ! -x "$lj" ]; then
		fail "$name: $lj is missing (tests/luajit-builds.sh builds it)"
		return
	fi
	"$lj" samples/lua/leak.lua 30 "$TMP/$name.count" 1 >/dev/null 2>&1 &
	pid=$!
	CLEANUP_PIDS+=($pid)
	wait_for test -s "$TMP/$name.count"
	sleep 1
	snapshot $name-1 $pid
	check "$name: heap exits 0" test $? -eq 0
	count=$(cat "$TMP/$name.count")
	sleep 2.5
	snapshot $name-2 $pid
	check "$name: the second snapshot too" test $? -eq 0
	kill $pid
	wait $pid 2>/dev/null
	pause=$(sed -n 's/^luaprof heap: pid [0-9]* stopped \([0-9.]*\) ms.*/\1/p' "$TMP/$name-1.out")
	check "$name: the pause is said" test -n "$pause"
	$LUAPROF report --kind heap --format folded "$TMP/$name-1.lp" >"$TMP/$name-1.folded"
	total=$(folded_total "$TMP/$name-1.folded")
	check_num "$name: bytes in the snapshot / the program's count ($total / $count)" \
		"$(share "$total" "${count:-0}")" ">=" 0.85
	check_num "$name: ... and at most 115% of it" "$(share "$total" "${count:-1}")" "<=" 1.15
	check "$name: strings and tables among the objects" \
		grep -qE "^luaprof heap:.* [1-9][0-9]* strings .* [1-9][0-9]* tables" "$TMP/$name-1.out"
	users=$(awk '/^_G;cache;users;/ { n += $NF } END { print n + 0 }' "$TMP/$name-1.folded")
	check_num "$name: most bytes are cache.users' data" "$(share "$users" "$total")" ">=" 0.8
	check_num "$name: what grew is under _G;cache;users" \
		"$(growth_under "$TMP/$name-1.lp" "$TMP/$name-2.lp" '^_G;cache;users;')" ">=" 0.8
}

leak_case luajit2 /usr/bin/luajit
leak_case upstream-gc64 $BUILDS/bookworm-gc64-gcc/luajit
leak_case nogc64 $BUILDS/bullseye-nogc64-gcc/luajit

# Every view reads a snapshot; diff's top view in bytes; info counts it.
T=$TMP/luajit2-2.lp
for f in top folded callgraph speedscope flamegraph; do
	$LUAPROF report --kind heap --format $f -o $TMP/v.$f $T 2>$TMP/v.err
	check "report --format $f of a snapshot" test -s $TMP/v.$f
done
check "top names the leak's path" grep -q "users" $TMP/v.top
check "report without --kind shows a snapshot's heap" \
	grep -q "^# kind: heap" <($LUAPROF report $T 2>/dev/null)
check "diff without --kind compares snapshots in bytes" \
	grep -q "^# bytes in each snapshot" <($LUAPROF diff $TMP/luajit2-1.lp $T 2>/dev/null)
$LUAPROF diff --kind heap $TMP/luajit2-1.lp $T >$TMP/diff.top
check "diff compares bytes" grep -q "^# bytes in each snapshot" $TMP/diff.top
check "diff: users grew" awk '$NF == "users" && $6 > 0 { f = 1 } END { exit !f }' $TMP/diff.top
check "info counts heap events" grep -qE "^events: [1-9][0-9]* heap \([1-9][0-9]* bytes\)" \
	<($LUAPROF info $T)
$LUAPROF report --kind heap --format pprof -o $TMP/heap.pb.gz $T
go tool pprof -sample_index=heap_space -top $TMP/heap.pb.gz >$TMP/pprof.top 2>$TMP/pprof.err
check "go tool pprof reads heap_space" grep -qF "[string]" $TMP/pprof.top
# The trace is the caller's only: 0600, and never written through a link.
check "the snapshot is mode 0600" test "$(stat -c %a $T)" = 600
ln -s $TMP/elsewhere $TMP/link.lp
$LUAPROF heap -p $$ -o $TMP/link.lp >/dev/null 2>&1
check "heap refuses to write through a link" test ! -e $TMP/elsewhere
$LUAPROF heap -p $$ -o $TMP/bash.lp >/dev/null 2>$TMP/bash.err
check "a process without LuaJIT: exit 1, said" test $? -eq 1 -a -s $TMP/bash.err
$LUAPROF heap -o $TMP/x.lp >/dev/null 2>&1
check "no -p: exit 2" test $? -eq 2

# cdata with their payloads: 2000 each of a 1000-byte VLA (a GCcdataVar),
# an 800-byte struct, an int64_t and a uint8_t[64], kept in a global.
cat >$TMP/cdata.lua <<'LUA'
local ffi = require("ffi")
ffi.cdef "typedef struct { double a[100]; } big_t;"
keep = {}
for i = 1, 2000 do
	keep[#keep + 1] = ffi.new("char[?]", 1000)
	keep[#keep + 1] = ffi.new("big_t")
	keep[#keep + 1] = ffi.new("int64_t", i)
	keep[#keep + 1] = ffi.new("uint8_t[64]")
end
io.open(arg[1], "w"):close()
while true do os.execute("sleep 0.2") end
LUA
luajit $TMP/cdata.lua $TMP/cdata.ready &
CD=$!
CLEANUP_PIDS+=($CD)
wait_for test -e $TMP/cdata.ready
snapshot cdata $CD
check "cdata: heap exits 0" test $? -eq 0
kill $CD
read -r total gct < <(sed -n 's/.* objects, \([0-9]*\) bytes (LuaJIT counts \([0-9]*\) in all).*/\1 \2/p' $TMP/cdata.out)
check_num "cdata: the objects' bytes / g->gc.total" "$(share "${total:-0}" "${gct:-1}")" ">=" 0.97
cd_bytes=$($LUAPROF report --kind heap --format folded $TMP/cdata.lp | awk '/^_G;keep;\[\*\];\[cdata\] / { print $NF }')
check_num "cdata: their payloads counted (8000 cdata, ~1.94 MB a 1000)" "${cd_bytes:-0}" ">=" 3800000
check "cdata: none by its header only" test -z "$(grep 'header only' $TMP/cdata.out)"

# A VM that never rests (a loop in a trace): the snapshot is taken after
# its retries all the same, and says it may be inconsistent.
luajit -e 'local t = {} local i = 0 while true do i = i + 1 t[i % 100 + 1] = i end' &
BUSY=$!
CLEANUP_PIDS+=($BUSY)
sleep 0.5
snapshot busy $BUSY
check "a busy VM: heap exits 0" test $? -eq 0
check "... after 21 tries" grep -qE "^luaprof heap: pid $BUSY stopped .*; 21 tries" $TMP/busy.out
check "... and says the snapshot may be inconsistent" \
	grep -qE "busy at every try \(last: [a-z ]+[0-9]*\): the snapshot may be inconsistent" \
	$TMP/busy.out
kill $BUSY

# nginx: a worker's heap grows in leaky.sessions, reached from _LOADED.
if nginx_start; then
	W=$(nginx_workers | head -1)
	curl -sf -o /dev/null http://127.0.0.1:$NGINX_PORT/leak
	snapshot nginx-1 $W
	check "nginx worker: heap exits 0" test $? -eq 0
	wrk -t1 -c4 -d2s http://127.0.0.1:$NGINX_PORT/leak >$TMP/wrk.out 2>&1
	snapshot nginx-2 $W
	check "nginx worker: the second snapshot too" test $? -eq 0
	snapshot nginx-master $NGINX_MASTER
	check "nginx master: heap names its workers as where requests run" \
		grep -q "is nginx's master; .* (pids $(nginx_workers | tr '\n' ' ' | sed 's/ $//'))" \
		$TMP/nginx-master.out
	nginx_stop
	check_num "nginx: what grew is the module's table, through _LOADED" \
		"$(growth_under $TMP/nginx-1.lp $TMP/nginx-2.lp '(_LOADED|package;loaded);leaky;sessions;')" \
		">=" 0.8
else
	fail "nginx did not start"
fi

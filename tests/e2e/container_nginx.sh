# container_nginx.sh - nginx with the Lua module from Debian trixie (its
# libluajit is OpenResty's luajit2 of 2025, stripped), run as a container
# runs it (tests/lib.sh's container: its own mount and pid namespaces, the
# trixie root of tests/trixie-root.sh pivoted to), profiled from this
# machine with `record -p MASTER` under load.  Everything it maps and
# loads exists only in the root, and where this machine has a file of the
# same path it is another build or another text: /usr/lib/x86_64-linux-
# gnu/libluajit-5.1.so.2 is bookworm's luajit2 here, and the handler,
# app.lua, lies at a path that holds a decoy here.  The checks are those
# lua_nginx.sh holds bookworm's nginx to: the handler's functions named on
# nginx's frames, no Lua stack cut, compiled code placed by its snapshots,
# the source lines the container's file has.
. tests/lib.sh
. tests/nginx.sh

tests/deps.sh || { fail "test dependencies (tests/deps.sh)"; exit 1; }
tests/luajit-builds.sh || { fail "LuaJIT builds (tests/luajit-builds.sh)"; exit 1; }
tests/trixie-root.sh || { fail "a Debian trixie root (tests/trixie-root.sh)"; exit 1; }

ROOT=$PWD/build/trixie-root/root
# One directory, its path the same in the root and here.
D=$TMP/ct
APP=$D/app.lua
PREFIX=$D/ngx
LIB=/usr/lib/x86_64-linux-gnu/libluajit-5.1.so.2 # and its version
mkdir -p $ROOT$D $D $ROOT$PREFIX/logs $ROOT$PREFIX/tmp
cp samples/nginx/app.lua $ROOT$APP
# The decoy: the same path here, other lines.
{ echo "-- not the container's file: luaprof must not read this"; cat samples/nginx/app.lua; } |
	sed 's/^local ROWS = 200$/local ROWS = 200 -- DECOY/' >$APP
for port in $(seq 24000 24100); do
	! (exec 3<>/dev/tcp/127.0.0.1/$port) 2>/dev/null && break
done
sed -e "s|@PORT@|$port|g" -e "s|@APPDIR@|$D|g" -e "s|@INIT_LUA@||" \
	samples/nginx/nginx.conf >$ROOT$PREFIX/nginx.conf

container $ROOT nginx -p $PREFIX -c $PREFIX/nginx.conf </dev/null >$TMP/ngx.out 2>&1 &
CT=$!
CLEANUP_PIDS+=($CT)
NGINX_PORT=$port
wait_for _nginx_answers
MASTER=$(container_pid $CT)
check "trixie's nginx starts in the container and answers" test -n "$MASTER"
[ -n "$MASTER" ] || { cat $TMP/ngx.out $ROOT$PREFIX/logs/*.log 2>/dev/null | tail -5; exit 1; }
check "the master runs in other namespaces than this shell" \
	bash -c "[ \$(readlink /proc/$MASTER/ns/mnt) != \$(readlink /proc/self/ns/mnt) ] &&
		[ \$(readlink /proc/$MASTER/ns/pid) != \$(readlink /proc/self/ns/pid) ]"

$LUAPROF record -F 499 -d 4 -p $MASTER -o $TMP/ct.lp 2>$TMP/ct.err &
REC=$!
CLEANUP_PIDS+=($REC)
wait_for eval "grep -q recording $TMP/ct.err || ! kill -0 $REC 2>/dev/null"
wrk -t2 -c8 -d5s "http://127.0.0.1:$port/" >$TMP/ct.wrk 2>&1
wait $REC
check "record -p MASTER exits 0" test $? -eq 0
check "the LuaJIT is named by its path in the container, its layout read from its code" \
	grep -qE "LuaJIT in $LIB[.0-9]*; offsets derived" $TMP/ct.err
check "no Lua VM said not to validate" bash -c "! grep -qE 'did not validate|probably wrong' $TMP/ct.err"
$LUAPROF report --format folded -o $TMP/ct.folded $TMP/ct.lp 2>/dev/null
check "the handler stands on nginx's frames" \
	grep -qE "ngx_http_lua_run_thread;main \(=content_by_lua\(nginx.conf:[0-9]+\):0\);handle \($APP:[0-9]+\)" $TMP/ct.folded
check "render is named, under handle" grep -qE ";handle \([^;]*;render \($APP:[0-9]+\)" $TMP/ct.folded
check "compute_checksum is named, under handle" \
	grep -qE ";handle \([^;]*;compute_checksum \($APP:[0-9]+\)" $TMP/ct.folded
check "builtins called by render are named" grep -qE ";render \([^;]*;string\.(format|gsub|rep)" $TMP/ct.folded
total=$(awk '/ngx_http_lua_run_thread/ { n += $NF } END { print n + 0 }' $TMP/ct.folded)
lua=$(awk -v f="($APP:" '/ngx_http_lua_run_thread/ && index($0, f) { n += $NF } END { print n + 0 }' $TMP/ct.folded)
check_num "samples in the Lua handler" "$total" ">=" 200
check_num "of those, with the handler's Lua frames" "$(share $lua $total)" ">=" 0.9
check "no Lua stack cut" grep -qE "Lua: [0-9]+ samples with Lua frames \([0-9.]+%\), 0 truncated," $TMP/ct.err
check "compiled code placed by its traces' snapshots" \
	grep -qE "compiled code: [0-9]+ samples, [0-9]+ \((9[0-9]|100)\.[0-9]%\) placed" \
	<($LUAPROF report --format top $TMP/ct.lp 2>/dev/null)
$LUAPROF report --by line -n 40 $TMP/ct.lp >$TMP/ct.lines 2>/dev/null
check "by line: the container's app.lua, not the file at its path here" \
	bash -c "grep -qF 'local ROWS = 200' $TMP/ct.lines || grep -q 'app.lua:' $TMP/ct.lines"
check "by line: no line of the decoy" bash -c "! grep -q DECOY $TMP/ct.lines"
check "by line: compute_checksum's loop shows its real text" \
	grep -qF 'a = (a + byte(s, i)) % 65521' $TMP/ct.lines

kill -QUIT $MASTER 2>/dev/null
wait_for _nginx_gone $MASTER
kill $CT 2>/dev/null
wait $CT 2>/dev/null
rm -rf $ROOT$D

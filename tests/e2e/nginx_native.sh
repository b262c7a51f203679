# nginx_native.sh - a real multi-process LuaJIT server: nginx (master + 2
# workers running samples/nginx/app.lua in lua-nginx-module) recorded by
# its master's pid while wrk loads it.  Checks that the workers, found as
# the master's children, are followed and sampled, each of them, and that
# info lists the whole tree.  Native frames only: Lua frames are checked
# elsewhere.
. tests/lib.sh
. tests/nginx.sh

# nginx, lua-nginx-module, wrk, curl (quick and silent when present).
tests/deps.sh
deps=$?
check "test dependencies installed (tests/deps.sh)" test $deps -eq 0
[ $deps -eq 0 ] || exit 1

nginx_start
check "nginx starts and answers on 127.0.0.1:$NGINX_PORT" test -n "$NGINX_MASTER"
[ -n "$NGINX_MASTER" ] || exit 1
workers=$(nginx_workers)
check_num "nginx runs 2 workers" "$(echo "$workers" | grep -c .)" "==" 2
body=$(curl -sf "http://127.0.0.1:$NGINX_PORT/")
check "the Lua handler answers" grep -q "checksum" <<<"$body"

# Record the master for 3 s while wrk loads the workers (for 4 s, so that
# the load covers the whole recording).
nginx_record_under_load $TMP/nginx 3 -F 99
check "record -p MASTER exits 0" test $? -eq 0
rps=$(awk '/^Requests\/sec:/ { print $2 }' $TMP/nginx.wrk)
check_num "wrk got answers (requests/s)" "${rps:-0}" ">" 100
check "every answer was a 2xx (no Lua errors)" bash -c "! grep -q 'Non-2xx' $TMP/nginx.wrk"

# info: the master and both workers are listed, with their samples.
$LUAPROF info $TMP/nginx.lp >$TMP/info.txt 2>&1
check "info exits 0" test $? -eq 0
check "info says complete" grep -qi "complete" $TMP/info.txt
listed() { # PID: a row of info's process table
	awk '/^processes/,/^time span/' $TMP/info.txt | awk -v p="$1" '$1 == p { f = 1 } END { exit !f }'
}
check "info lists the master ($NGINX_MASTER)" listed $NGINX_MASTER
for w in $workers; do
	check "info lists worker $w" listed $w
done

# report --pid W: each worker has samples of its own.
$LUAPROF report --format folded -o $TMP/all.folded $TMP/nginx.lp 2>/dev/null
total=$(folded_total $TMP/all.folded)
check_num "samples recorded" "$total" ">=" 60
sum=0
for w in $workers; do
	$LUAPROF report --format folded --pid $w -o $TMP/w$w.folded $TMP/nginx.lp 2>/dev/null
	check "report --pid $w exits 0" test $? -eq 0
	n=$(folded_total $TMP/w$w.folded)
	sum=$((sum + n))
	check_num "worker $w is sampled" "$n" ">=" 20
	# The workers run Lua: in libluajit's VM, in JIT-compiled code
	# ([anon] mappings) or, once luaprof names them, in app.lua's frames.
	lua=$(awk '/libluajit|\[anon\]|\(app\.lua:/ { n += $NF } END { print n + 0 }' $TMP/w$w.folded)
	check_num "worker $w: share of samples in LuaJIT code" "$(share $lua $n)" ">=" 0.2
done
$LUAPROF report --format folded --pid $NGINX_MASTER -o $TMP/master.folded $TMP/nginx.lp 2>/dev/null
m=$(folded_total $TMP/master.folded)
check_num "the idle master has few samples" "$(share $m $total)" "<" 0.05
check_num "the workers hold nearly all samples" "$(share $sum $total)" ">=" 0.95

nginx_stop
gone=1
for p in $NGINX_MASTER $workers; do kill -0 $p 2>/dev/null && gone=0; done
check "nginx stops: master and workers exited" test $gone -eq 1

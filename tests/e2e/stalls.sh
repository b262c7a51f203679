# stalls.sh - event-loop stalls (record -e stall, report --stalls) on a
# real event loop: nginx with the Lua module, whose handler's Lua
# function read_big reads a 64 MiB file whole (io.open, f:read("*a")),
# blocking its worker's epoll loop for each request.  Recorded by the
# master's pid with CPU samples and off-CPU waits beside, at a 5 ms
# threshold, while curl makes a few requests.  Every stall listed must
# be at least the threshold; the longest must name read_big (with the
# read under it) among the stacks its thread ran inside it, for most of
# what they show of it; the loop's own stack is where the worker waits again, in
# epoll_wait.  Shares and lower bounds only: the machine may be busy.
. tests/lib.sh
. tests/nginx.sh

tests/deps.sh || { fail "test dependencies (tests/deps.sh)"; exit 1; }
REQUESTS=6
dd if=/dev/zero of=$TMP/big bs=1M count=64 status=none
NGINX_CONF_SRC=$(nginx_conf_for stall) nginx_start
check "nginx starts with the reading handler" test -n "$NGINX_MASTER"
[ -n "$NGINX_MASTER" ] || exit 1
check "the handler reads the whole file" \
	test "$(curl -sf --max-time 20 http://127.0.0.1:$NGINX_PORT/)" = 67108864

$LUAPROF record -p $NGINX_MASTER -e cpu,off-cpu,stall --stall-threshold 5 -F 999 \
	-o $TMP/s.lp 2>$TMP/s.err &
rec=$!
CLEANUP_PIDS+=($rec)
wait_for eval "grep -q recording $TMP/s.err || ! kill -0 $rec 2>/dev/null"
for i in $(seq $REQUESTS); do
	curl -sf -o /dev/null --max-time 20 http://127.0.0.1:$NGINX_PORT/
done
kill -INT $rec
wait $rec
check "record -e cpu,off-cpu,stall exits 0" test $? -eq 0
nginx_stop

$LUAPROF report --stalls -n 0 -o $TMP/s.txt $TMP/s.lp 2>$TMP/rep.err
check "report --stalls exits 0" test $? -eq 0
# A stall's line: "   LEN ms  pid PID/TID COMM  at S s".
awk '/^ +[0-9.]+ ms  pid / { print $1 }' $TMP/s.txt >$TMP/lens
n=$(wc -l <$TMP/lens)
check_num "stalls listed, of $REQUESTS requests" "$n" ">=" $((REQUESTS / 2))
check_num "the shortest stall listed (ms), at a 5 ms threshold" \
	"$(sort -g $TMP/lens | head -1)" ">=" 5
check "the summary counts them" grep -qE "^# $n stalls, [0-9.]+ s in all$" $TMP/s.txt
check "a stall is an nginx worker's" grep -qE "^ +[0-9.]+ ms  pid [0-9]+/[0-9]+ nginx  at " $TMP/s.txt
# The longest stall's block (up to the blank line after it) in which its
# thread was seen at all: on a busy machine an idle iteration preempted
# for long may be a stall with nothing inside.
awk '/^ +[0-9.]+ ms  pid / { if (seen) exit; b = "" } /^$/ { if (seen) exit }
	/^ +[0-9.]+%  (cpu|off-cpu) / { seen = 1 } { b = b $0 "\n" }
	END { printf "%s", b }' $TMP/s.txt >$TMP/top
check "the longest stall's loop waits again in epoll_wait" \
	grep -qE "^      loop  .*epoll_wait" $TMP/top
# Of what the view puts inside it (CPU samples and waits of its thread):
# the rest of a stall's length is time its thread could run but did not
# get a CPU, which no event sees, and which a busy machine makes long
# (the share of its whole length fell to 0.178 in a full make test).
read -r readbig seen < <(awk '/^ +[0-9.]+%  (cpu|off-cpu) / { sub("%", "", $1); s += $1
	if (/;read_big \(/) n += $1 } END { print n / 100, s / 100 }' $TMP/top)
check_num "the longest stall: a part of it seen (CPU samples or waits)" "${seen:-0}" ">" 0
check_num "... of which in read_big" \
	"$(awk -v n="${readbig:-0}" -v s="${seen:-0}" 'BEGIN { printf "%.3f", s ? n / s : 0 }')" ">=" 0.8
check "some stall names read_big above a read" \
	grep -qE "  (cpu|off-cpu) +.*;read_big \([^;]*\.lua:[0-9]+\);.*(;read;|;__libc_read;|;(ksys|vfs)_read_\[k\])" \
	$TMP/s.txt
# --kind stall: the loops' stacks weighed by their stalls' time.
$LUAPROF report --kind stall --format folded -o $TMP/s.folded $TMP/s.lp 2>/dev/null
check "--kind stall: the loop's stacks end in epoll_wait" grep -qE ";epoll_wait [0-9]+$" $TMP/s.folded
total=$($LUAPROF report --kind stall $TMP/s.lp 2>/dev/null | awk '/^# stall:/ { print $3 }')
check "--kind stall: header and folded lines agree" test "$total" = "$(folded_total $TMP/s.folded)"
$LUAPROF record -e cpu --stall-threshold 5 -o $TMP/x.lp -- true >/dev/null 2>$TMP/mis.err
check "--stall-threshold without -e stall is misuse" test $? -eq 2
echo "  $n stalls; the longest: $(head -1 $TMP/top)"

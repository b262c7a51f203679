# lua_allocs.sh - allocations (record -e alloc, -e inuse) against ground
# truths.  samples/lua/allocs.lua's a, b and c allocate tables and strings
# 1:2:3 and print what each allocated as LuaJIT counts it; their shares of
# the bytes sampled, each under its Lua function, must be those within
# 0.05, with the JIT on (compiled traces allocate) and off.
# samples/lua/retain.lua's keep() and drop() allocate alike and keep()
# keeps it all: alloc shows them half and half, inuse shows keep(); the
# bytes inuse add up to the heap LuaJIT counts at the end.  Every view
# reads the kinds, pprof as go tool pprof names them, and report, info and
# record agree on the counts.  nginx's workers (luajit2, a shared library,
# forked after the recorder attached to the master) have their
# allocations sampled under app.lua's handler, whole stacks; of a handler
# that leaks into a module's table, inuse names the handler.
. tests/lib.sh
. tests/nginx.sh

export HOME=$TMP GOCACHE=$TMP/go-cache PPROF_TMPDIR=$TMP

for mode in jit joff; do
	flag=; [ $mode = joff ] && flag=-joff
	$LUAPROF record -e alloc --alloc-every 16k -o $TMP/$mode.lp -- \
		luajit $flag samples/lua/allocs.lua 3 >$TMP/$mode.out 2>$TMP/$mode.err
	check "$mode: record -e alloc exits 0" test $? -eq 0
	read -r ta tb tc <$TMP/$mode.out
	check "$mode: allocs.lua printed its bytes" test -n "$tc"
	$LUAPROF report --kind alloc --format folded -o $TMP/$mode.folded $TMP/$mode.lp 2>/dev/null
	check "$mode: report --kind alloc exits 0" test $? -eq 0
	a=$(folded_under a $TMP/$mode.folded) b=$(folded_under b $TMP/$mode.folded)
	c=$(folded_under c $TMP/$mode.folded)
	echo "# $mode: bytes sampled a $a b $b c $c; allocated by LuaJIT's count a $ta b $tb c $tc"
	sum=$((a + b + c)) truth=$(awk -v a="$ta" -v b="$tb" -v c="$tc" 'BEGIN { print a + b + c }')
	check_num "$mode: bytes sampled under a, b, c" "$sum" ">" 0
	check_abc_shares "$mode: %s's share of the bytes, against LuaJIT's count" 0.05 \
		"$a" "$b" "$c" "$ta" "$tb" "$tc"
	# Of the sum: the bytes sampled are a Poisson count of N-byte units (N = 16 KiB:
	# about 1% of it), and the probe is on before the work begins.
	check_num "$mode: bytes sampled under a, b, c, of LuaJIT's count" \
		"$(awk -v s="$sum" -v t="$truth" 'BEGIN { printf "%.3f", s / t }')" ">=" 0.9
	check_num "$mode: ... and not much more" \
		"$(awk -v s="$sum" -v t="$truth" 'BEGIN { printf "%.3f", s / t }')" "<=" 1.1
	events=$(grep -oE "of those, [0-9]+ alloc events" $TMP/$mode.err | grep -oE "[0-9]+")
	check "$mode: record counts its alloc events" test "${events:-0}" -gt 100
	check "$mode: report's header counts them too" \
		grep -qE "^# alloc: [0-9]+ bytes in $events events" \
		<($LUAPROF report --kind alloc $TMP/$mode.lp 2>/dev/null)
done
# Compiled code allocates: with the JIT on, most bytes are sampled in
# traces (pprof's vmstate label), with -joff none.
for mode in jit joff; do
	$LUAPROF report --kind alloc --format pprof -o $TMP/$mode.pb.gz $TMP/$mode.lp 2>/dev/null
	go tool pprof -tags $TMP/$mode.pb.gz 2>/dev/null |
		awk '/vmstate:/ { v = 1; next }
			v && /Compiled$/ && match($0, /[0-9.]+%/) { print substr($0, RSTART, RLENGTH - 1); exit }' \
		>$TMP/$mode.compiled
done
check_num "jit: the bytes sampled in compiled code (%)" "$(cat $TMP/jit.compiled)" ">=" 50
check "joff: none in compiled code" test ! -s $TMP/joff.compiled

# inuse: keep() keeps, drop() drops.
$LUAPROF record -e inuse --alloc-every 16k -o $TMP/r.lp -- luajit samples/lua/retain.lua 3 \
	>$TMP/r.out 2>$TMP/r.err
check "record -e inuse exits 0" test $? -eq 0
read -r kept heap_kib <$TMP/r.out
$LUAPROF report --kind alloc --format folded -o $TMP/ra.folded $TMP/r.lp 2>/dev/null
$LUAPROF report --kind inuse --format folded -o $TMP/ri.folded $TMP/r.lp 2>/dev/null
check "report --kind inuse exits 0" test $? -eq 0
ak=$(folded_under keep $TMP/ra.folded) ad=$(folded_under drop $TMP/ra.folded)
ik=$(folded_under keep $TMP/ri.folded) id=$(folded_under drop $TMP/ri.folded)
itotal=$(folded_total $TMP/ri.folded)
echo "# alloc: keep $ak drop $ad; inuse: keep $ik drop $id, all $itotal; heap at the end $heap_kib KiB"
check_num "alloc: keep()'s share of keep's and drop's bytes" "$(share "$ak" $((ak + ad)))" ">=" 0.4
check_num "alloc: ... and drop()'s" "$(share "$ad" $((ak + ad)))" ">=" 0.4
# (drop() may grow the string table, which lives on: one block.)
check_num "inuse: keep()'s share of what is alive" "$(share "$ik" "$itotal")" ">=" 0.75
check_num "inuse: the bytes alive, of the heap LuaJIT counts at the end" \
	"$(awk -v i="$itotal" -v h="$heap_kib" 'BEGIN { printf "%.3f", i / (h * 1024) }')" ">=" 0.75
check_num "inuse: ... and not much more" \
	"$(awk -v i="$itotal" -v h="$heap_kib" 'BEGIN { printf "%.3f", i / (h * 1024) }')" "<=" 1.25

# pprof: alloc's sample types as Go names them, the bytes as report's.
$LUAPROF report --kind alloc --format pprof -o $TMP/a.pb.gz $TMP/jit.lp 2>/dev/null
go tool pprof -top -sample_index=alloc_space -nodecount=100000 $TMP/a.pb.gz >$TMP/pp.top 2>$TMP/pp.err
check "go tool pprof -sample_index=alloc_space reads it" test $? -eq 0
check "go tool pprof: c among the functions" grep -qF "c (samples/lua/allocs.lua:" $TMP/pp.top
pptotal=$(awk '/ total$/ { print; exit }' $TMP/pp.top | grep -oE "of [0-9.]+[kMG]?B total")
echo "# go tool pprof: $pptotal"
check "go tool pprof's total is report's" test -n "$pptotal"
go tool pprof -top -sample_index=alloc_objects $TMP/a.pb.gz >$TMP/ppo.top 2>&1
check "go tool pprof -sample_index=alloc_objects reads it" grep -qE "of [0-9.]+[kM]? total" $TMP/ppo.top
$LUAPROF report --kind inuse --format pprof -o $TMP/i.pb.gz $TMP/r.lp 2>/dev/null
go tool pprof -top -sample_index=inuse_space $TMP/i.pb.gz >$TMP/ppi.top 2>&1
check "go tool pprof -sample_index=inuse_space: keep() holds it" \
	grep -qF "keep (samples/lua/retain.lua:" $TMP/ppi.top
# info counts each kind; the flame graph draws the bytes.
$LUAPROF info $TMP/r.lp >$TMP/info.out 2>&1
check "info counts alloc events" grep -qE "alloc" $TMP/info.out
check "info counts inuse events" grep -qE "inuse" $TMP/info.out
$LUAPROF report --kind inuse --format flamegraph -o $TMP/i.svg $TMP/r.lp 2>/dev/null
check "an inuse flame graph names keep()" grep -qF "keep (samples/lua/retain.lua:" $TMP/i.svg
# misuse
$LUAPROF record --alloc-every 1k -o $TMP/x.lp -- true >/dev/null 2>$TMP/mis.err
check "--alloc-every without -e alloc is misuse" test $? -eq 2
$LUAPROF record -e alloc --alloc-every 12 -o $TMP/x.lp -- true >/dev/null 2>$TMP/mis.err
check "--alloc-every below 64 bytes is misuse" test $? -eq 2
# The collector's own CPU, by the Lua function whose allocation ran it:
# the CPU samples taken beside the allocations (state G) need nothing new
# (retain.lua's collector runs; allocs.lua's is stopped while it measures).
$LUAPROF report --format folded -o $TMP/cpu.folded $TMP/r.lp 2>/dev/null
check "CPU samples in the collector, under the function allocating" \
	grep -qE ";(keep|drop) \(samples/lua/retain.lua:[0-9]+\);.*\[GC\]" $TMP/cpu.folded

# nginx: the workers' VMs, located from their first CPU samples, then
# probed; the handler allocates.
nginx_start || { check "nginx starts" false; exit 0; }
nginx_record_under_load $TMP/ng 4 -e inuse --alloc-every 64k
check "record -e inuse of nginx exits 0" test $? -eq 0
nginx_stop
$LUAPROF report --kind alloc --format folded -o $TMP/ng.folded $TMP/ng.lp 2>/dev/null
total=$(folded_total $TMP/ng.folded)
handler=$(grep -E ";handle \([^;]*samples/nginx/app.lua:" $TMP/ng.folded | folded_total /dev/stdin)
echo "# nginx: $total bytes sampled, $handler under app.lua's handle()"
check_num "nginx: bytes sampled" "$total" ">" 0
check_num "nginx: ... under app.lua's handle()" "$(share "$handler" "$total")" ">=" 0.8
check_num "nginx: ... in whole stacks" "$(rooted $TMP/ng.folded)" ">=" 0.95
# Each worker probes the allocator at the one instruction, read from the
# file: in memory, the other worker's probe shows there as an int3.  (The
# native leaf: the VM's state, when the GC, the JIT compiler or a trace
# exit allocated, follows it as a frame of its own.)
check "nginx: the allocations sampled at one instruction" test "$(awk '{ sub(/ [0-9]+$/, "");
	n = split($0, f, ";"); while (n > 1 && f[n] ~ /^\[(GC|JIT compiler|trace exit)\]$/) n--;
	print f[n] }' $TMP/ng.folded | sort -u | wc -l)" -eq 1
check "nginx: inuse has events of its own" \
	grep -qE "inuse" <($LUAPROF info $TMP/ng.lp 2>/dev/null)

# /leak (samples/nginx/leaky.lua) keeps ~2 KB a request in a module's
# table for the worker's life: what is alive at the end is under its
# handler, which the heap snapshot (tests/e2e/heap.sh) finds by path.
nginx_start || { check "nginx starts again" false; exit 0; }
$LUAPROF record -e inuse --alloc-every 16k -d 4 -p $NGINX_MASTER -o $TMP/lk.lp 2>$TMP/lk.err &
rec=$!
CLEANUP_PIDS+=($rec)
wait_for eval "grep -q recording $TMP/lk.err || ! kill -0 $rec 2>/dev/null"
wrk -t1 -c2 -d5s "http://127.0.0.1:$NGINX_PORT/leak" >/dev/null 2>&1
wait $rec
check "record -e inuse of nginx's /leak exits 0" test $? -eq 0
nginx_stop
$LUAPROF report --kind inuse --format folded -o $TMP/lk.folded $TMP/lk.lp 2>/dev/null
lk=$(grep -E ";handle \([^;]*samples/nginx/leaky.lua:" $TMP/lk.folded | folded_total /dev/stdin)
echo "# nginx /leak: $(folded_total $TMP/lk.folded) bytes alive at the end, $lk under leaky.lua's handle()"
check_num "nginx /leak: what stays alive is under the handler that keeps it" \
	"$(share "$lk" "$(folded_total $TMP/lk.folded)")" ">=" 0.8

# lua_waits.sh - Lua-land waits (record -e lua-wait) against a ground
# truth: nginx's /waits (samples/nginx/waits.lua) yields to the event loop
# in a, b and c for about 1:2:3 of the time (ngx.sleep 10 and 20 ms, a
# cosocket read from a server that answers after 30 ms), and answers what
# each took by the monotonic clock.  Four clients at once, so that the
# coroutines' waits interleave in each worker.  Their shares of the
# Lua-land wait time, each under its Lua function and above the resumer's
# lua_resume, must be those shares within 0.05; the CPU samples beside
# them stay CPU samples, whole: while a coroutine runs, its lua_resume's
# return address is the kernel's uretprobe trampoline, which the native
# walk must see through (wrk loads / meanwhile, Lua CPU work under
# lua_resume); report, pprof (`go tool pprof -sample_index=wait`) and
# info agree.
. tests/lib.sh
. tests/nginx.sh

export HOME=$TMP GOCACHE=$TMP/go-cache PPROF_TMPDIR=$TMP
nginx_start || { check "nginx starts" false; exit 0; }
$LUAPROF record -p $NGINX_MASTER -e cpu,lua-wait -F 999 -o $TMP/w.lp -d 8 \
	>$TMP/rec.out 2>$TMP/rec.err &
rec=$!
# Until the recorder samples (its status line says so), then the clients.
wait_for grep -q "recording" $TMP/rec.err
wrk -t1 -c2 -d5s "http://127.0.0.1:$NGINX_PORT/" >/dev/null 2>&1 &
load=$!
waits_clients 4 5
wait $rec
check "record -e cpu,lua-wait exits 0" test $? -eq 0
wait $load "${CLIENTS[@]}"
nginx_stop
# Requests cut by the end of the recording are in the clients' times but
# not all in the profile: fewer than 4 of some 250.
read -r ta tb tc n < <(waits_times)
check_num "requests answered" "${n:-0}" ">=" 40
$LUAPROF report --kind lua-wait --format folded -o $TMP/w.folded $TMP/w.lp 2>$TMP/rep.err
check "report --kind lua-wait exits 0" test $? -eq 0
# WHO: the wait under Lua function WHO of waits.lua, above lua_resume.
waited() { grep -F ";lua_resume;" $TMP/w.folded | grep -F ";$1 ($PWD/samples/nginx/waits.lua:" |
	folded_total /dev/stdin; }
a=$(waited a) b=$(waited b) c=$(waited c) slow=$(waited slow)
echo "# Lua-land wait us: a $a b $b c $c (slow $slow); by the clock: a $ta b $tb c $tc, $n requests"
for f in a b c; do
	eval "got=\${$f:-0}"
	check_num "$f's Lua-land wait (us)" "$got" ">" 0
done
sum=$((a + b + c))
truth=$(awk -v a="$ta" -v b="$tb" -v c="$tc" 'BEGIN { print a + b + c }')
check_abc_shares "%s's share of the Lua-land wait time, against the clock's" 0.05 \
	"$a" "$b" "$c" "$ta" "$tb" "$tc"
check_num "Lua-land wait of a, b and c, of the clock's" \
	"$(awk -v s="$sum" -v t="$truth" 'BEGIN { printf "%.3f", s / t }')" ">=" 0.9
check_num "... and no more" \
	"$(awk -v s="$sum" -v t="$truth" 'BEGIN { printf "%.3f", s / t }')" "<=" 1.05
check_num "the slow server's own wait, under slow()" "${slow:-0}" ">" 0
# Every wait sits on the handler's chunk, on the resumer's lua_resume.
check "every wait is a Lua stack above lua_resume" \
	sh -c "! grep -vE ';lua_resume;main \(=content_by_lua\(nginx.conf:[0-9]+\):0\);' $TMP/w.folded"

# The CPU samples beside them: whole stacks, from _start through main and
# lua_resume to app.lua's handler (a walk stopped at the trampoline
# would start elsewhere); and the waits' own, the resumers'.
$LUAPROF report --format folded --comm -o $TMP/cpu.folded $TMP/w.lp 2>/dev/null
sed -n 's/^nginx;//p' $TMP/cpu.folded | grep -F ";handle ($PWD/samples/nginx/app.lua:" \
	>$TMP/cpu.resume
check_num "CPU samples in app.lua's handler" "$(folded_total $TMP/cpu.resume)" ">=" 20
check_num "... rooted at _start, through main" "$(rooted $TMP/cpu.resume)" ">=" 0.99
check_num "the waits' stacks rooted at _start, through main" "$(rooted $TMP/w.folded)" ">=" 0.99
# Nor at the trampoline itself, where a sample lands as lua_resume
# returns into it (the kernel's uretprobe system call): whole, but for
# the last instructions after the kernel has dropped its return
# instance (the original address then on the stack the trampoline pops),
# which end the stack, cut: never a frame above [uprobes].
check "no frame above the trampoline's ([uprobes])" \
	sh -c "! grep -E '\[uprobes\]' $TMP/cpu.folded | grep -vqE '^nginx;\[truncated\];\[uprobes\](;[^;]*_\[k\])* [0-9]+$'"
sed -n 's/^nginx;//p' $TMP/cpu.folded >$TMP/cpu.nginx
check_num "nginx's CPU samples rooted at _start, through main" "$(rooted $TMP/cpu.nginx)" ">=" 0.99

# The CPU samples beside them: kind cpu, the default; the header counts
# the waits, and no wait's weight is counted as CPU time.
$LUAPROF report $TMP/w.lp >$TMP/cpu.top 2>/dev/null
events=$($LUAPROF info $TMP/w.lp | awk '/^events:/ { print $2 }')
check "info counts the Lua-land waits" test "${events:-0}" -gt 0
check "the CPU report names them" \
	grep -qF "# also in the trace: $events lua-wait events (--kind lua-wait)" $TMP/cpu.top
total=$($LUAPROF report --kind lua-wait $TMP/w.lp 2>/dev/null | awk '/^# lua-wait:/ { print $3 }')
check "report's header and the folded lines agree" \
	test "$total" = "$(folded_total $TMP/w.folded)"
$LUAPROF report --kind lua-wait --format pprof -o $TMP/w.pb.gz $TMP/w.lp 2>/dev/null
go tool pprof -top -sample_index=wait -nodecount=100000 $TMP/w.pb.gz >$TMP/pp.top 2>$TMP/pp.err
check "go tool pprof -sample_index=wait reads it" test $? -eq 0
check "go tool pprof: c's wait among the functions" \
	grep -qF "c ($PWD/samples/nginx/waits.lua:" $TMP/pp.top

# A plain luajit driving another state's coroutine through the FFI's
# lua_resume (samples/lua/resumes.lua), thousands of times a second: many
# ticks land in the trampoline as lua_resume returns into it.  Such a
# stack ends there, cut, under the Lua function that called lua_resume:
# never a gap or a trace's code taken for the trampoline's.
$LUAPROF record -q -e cpu,lua-wait -F 999 -o $TMP/rs.lp -- luajit samples/lua/resumes.lua 2 \
	2>$TMP/rs.err
check "record -e cpu,lua-wait -- luajit resumes.lua exits 0" test $? -eq 0
$LUAPROF report --format folded -o $TMP/rs.folded $TMP/rs.lp 2>/dev/null
check_num "resumes.lua: samples in the trampoline" "$(grep -F '[uprobes]' $TMP/rs.folded |
	folded_total /dev/stdin)" ">" 0
check "resumes.lua: each ends the stack, cut, under drive" \
	sh -c "! grep -F '[uprobes]' $TMP/rs.folded |
		grep -vqE '^\[truncated\];.*;drive \(samples/lua/resumes.lua:[0-9]+\);\[uprobes\](;[^;]*_\[k\])* [0-9]+$'"

# tests/kernels/smoke_arm64.sh - the smoke test of the kernel matrix's
# arm64 lane: it runs inside Debian's arm64 kernel under qemu (booted by
# tests/kernels.sh), in a root of Debian's arm64 packages, from this tree
# mounted read-only at its own path, with the cross-built luaprof
# (build/arm64/luaprof-static) and samples (build/arm64/samples/).
#
# First what holds without luaprof, so that the lane says what is wrong
# with the guest before it says anything of luaprof: the machine is
# aarch64, its kernel loads perf_event BPF programs that may take user
# stacks, both Debian LuaJITs run the Lua samples, LuaJIT's own profiler
# sees abc.lua's 1:2:3, and nginx with the Lua module answers on
# 127.0.0.1.  Then luaprof, as tests/kernels/smoke.sh checks it on x86_64
# (check; a C program without frame pointers and both LuaJITs with and
# without the JIT, recorded at once; a launched target; inlined.lua's
# compiled code placed in f, g and h as jit.p places it; allocations
# (-e alloc) against LuaJIT's own count; nginx; report and info), with
# a:b:c within 10% (or its sampling noise), nginx's stacks 99% rooted.  Without the binary that part is one FAIL saying it is
# missing.  The traces and this guest's reports of them are copied to
# $LUAPROF_SMOKE_CMP (the results share) for tests/kernels.sh to read
# them again on x86_64.
#
# Emulated, the LuaJIT interpreter runs 32 to 50 times slower than on the
# host, compiled code 9 to 12: targets run for CPU time, not wall-clock
# time, and abc.lua's unit of work is sized here (unit()).
#
# On the host, for a look at the script itself:
#   LUAPROF=build/luaprof LUAPROF_SMOKE_ARCH=x86_64 LUAPROF_SMOKE_SAMPLES=build/samples \
#   LUAPROF_SMOKE_UPSTREAM=build/luajit-upstream LUAPROF_SMOKE_CMP=/tmp/cmp \
#   bash tests/kernels/smoke_arm64.sh
LUAPROF=${LUAPROF:-$PWD/build/arm64/luaprof-static}
# The tree is read-only in the guest: the layouts' cache goes to /tmp.
export LUAPROF_CACHE_DIR=${LUAPROF_CACHE_DIR:-/tmp/luaprof-cache}
. tests/lib.sh
. tests/nginx.sh
. tests/kernels/smoke_lib.sh

SAMPLES=$PWD/${LUAPROF_SMOKE_SAMPLES:-build/arm64/samples}
ARCH=${LUAPROF_SMOKE_ARCH:-aarch64}
CMP=${LUAPROF_SMOKE_CMP:-/luaprof-results/cmp}
LJ2=/usr/bin/luajit
UPSTREAM=${LUAPROF_SMOKE_UPSTREAM:-/opt/luajit-upstream}
LJ1=$UPSTREAM/usr/bin/luajit
# jit.p for upstream LuaJIT: its own modules, not luajit2's.
LJ1_PATH="$UPSTREAM/usr/share/luajit-2.1.0-beta3/?.lua;;"
S=samples/lua

echo "  kernel $(uname -r), $(uname -m), $(nproc) CPUs; up $(cut -d' ' -f1 /proc/uptime) s" \
	"when this script started"

# --- the machine -------------------------------------------------------------
check "uname -m is $ARCH" test "$(uname -m)" = "$ARCH"
check "the BPF JIT is on" test "$(cat /proc/sys/net/core/bpf_jit_enable 2>/dev/null)" = 1
check "the kernel has BTF" test -s /sys/kernel/btf/vmlinux
# bpftool's probes load a program of each type and call each helper.
bpftool feature probe kernel >$TMP/probe.txt 2>&1
check "BPF: perf_event programs load" \
	grep -q "eBPF program_type perf_event is available" $TMP/probe.txt
check "BPF: perf_event programs may call bpf_get_stack" \
	awk '/^eBPF helpers supported for program type perf_event:/ { on = 1; next }
		on && /^eBPF helpers/ { exit } on && $2 == "bpf_get_stack" { found = 1 }
		END { exit !found }' $TMP/probe.txt

at "the Lua samples"
# --- both LuaJITs run the Lua samples ------------------------------------------
# sample_args FILE: a short run's arguments (0.1 s of CPU where it takes
# SECONDS: emulated, starting a LuaJIT costs more than that).
sample_args() {
	case "$1" in
	durable.lua) echo "$TMP/durable.out 20" ;;
	twice.lua) echo "1 0.1" ;;
	waits.lua) echo 1 ;;
	*) echo 0.1 ;;
	esac
}
for lj in luajit2:$LJ2 upstream:$LJ1; do
	name=${lj%%:*} bin=${lj#*:} failed= n=0
	for f in $S/*.lua; do
		n=$((n + 1))
		# shellcheck disable=SC2046
		timeout 120 $bin $f $(sample_args ${f##*/}) >$TMP/sample.out 2>&1 ||
			{ failed="$failed ${f##*/}"; tail -n 3 $TMP/sample.out | sed 's/^/  | /'; }
	done
	check "$name runs the $n Lua samples${failed:+ (not:$failed)}" test -z "$failed"
done
at "LuaJIT's own profiler"

# jitp NAME LUAJIT ARGS...: LuaJIT's own profiler (jit.p, each ms of CPU,
# which the guest's 250 Hz tick makes 4) on abc.lua, interpreted (where it
# charges each tick exactly): a:b:c is 1:2:3 in the guest too, what
# luaprof's shares are held to below.  One process's timer ticks are
# independent samples: within() is told 4 times as many, as it counts the
# noise of a quarter.
jitp() {
	local name=$1 a b c abc
	shift
	"$@" -joff -jp=fs2ri1 $S/abc.lua 3 $(unit "$@" -joff) >$TMP/$name.jitp 2>&1
	a=$(awk '$1 == "<-" && $3 == "a" { print $2 }' $TMP/$name.jitp)
	b=$(awk '$1 == "<-" && $3 == "b" { print $2 }' $TMP/$name.jitp)
	c=$(awk '$1 == "<-" && $3 == "c" { print $2 }' $TMP/$name.jitp)
	abc=$((${a:-0} + ${b:-0} + ${c:-0}))
	# (About 750 in 3 s of CPU; 300 where the host starves the guest,
	# whose ticks then come late: enough for the shares, if fewer.)
	check_num "$name: jit.p samples of a, b and c" "$abc" ">=" 200
	within "$name jit.p" "a's share of a+b+c" $((abc * 4)) "$(share ${a:-0} $abc)" 0.1667 0.10
	within "$name jit.p" "b's share of a+b+c" $((abc * 4)) "$(share ${b:-0} $abc)" 0.3333 0.10
	within "$name jit.p" "c's share of a+b+c" $((abc * 4)) "$(share ${c:-0} $abc)" 0.5 0.10
	echo "  $name jit.p: a:b:c = ${a:-0}:${b:-0}:${c:-0}"
}
jitp luajit2 $LJ2
LUA_PATH=$LJ1_PATH jitp upstream $LJ1

at "nginx"
# --- nginx with the Lua module answers ------------------------------------------
NGINX_JIT=on nginx_start
check "nginx with the Lua module starts on 127.0.0.1" test -n "$NGINX_MASTER"
if [ -n "$NGINX_MASTER" ]; then
	curl -sf --max-time 20 "http://127.0.0.1:$NGINX_PORT/" >$TMP/answer.txt 2>&1
	check "nginx: content_by_lua's handler answers" \
		grep -qE "^pid [0-9]+ request [0-9]+ bytes [0-9]+" $TMP/answer.txt
	echo "  nginx answered: $(head -c 100 $TMP/answer.txt)"
fi

# --- luaprof ------------------------------------------------------------------
if [ ! -x "$LUAPROF" ]; then
	fail "luaprof" "${LUAPROF#$PWD/} is missing: no arm64 luaprof to test (make ARCH=arm64 static)"
	nginx_stop
	exit 0
fi

at "luaprof check"
$LUAPROF check >$TMP/check.txt 2>&1
rc=$?
sed 's/^/  | /' $TMP/check.txt
check "luaprof check exits 0" test $rc -eq 0
check "luaprof check: luaprof will run here" grep -q "^luaprof will run here" $TMP/check.txt
if ! grep -q "^luaprof will run here" $TMP/check.txt; then
	nginx_stop
	exit 1
fi

# --- six targets at once: a C program without frame pointers (the
# .eh_frame unwinder), the same with a signal handler (the vDSO's
# trampoline), both LuaJITs with and without the JIT (abc.lua's 1:2:3) -------
start nofp $SAMPLES/nofp chains 600
start nofp-signal $SAMPLES/nofp signal 600
start luajit2-joff $LJ2 -joff $S/abc.lua 600 $(unit $LJ2 -joff)
start upstream-joff $LJ1 -joff $S/abc.lua 600 $(unit $LJ1 -joff)
start luajit2-jit $LJ2 $S/abc.lua 600 $(unit $LJ2)
start upstream-jit $LJ1 $S/abc.lua 600 $(unit $LJ1)
for t in "${TARGETS[@]}"; do
	wait_for busy ${PID[$t]} 0.5 || wait_for busy ${PID[$t]} 0.5 ||
		fail "$t: the target did not get 0.5 s of CPU in 40 s"
done
at "recording the six targets"
pids=$(IFS=,; echo "${PID[*]}")
# 3 s of CPU each: up to 3000 samples each, a thousand or so where the
# emulated kernel throttles the sampling rate.
record_until all 18 $pids -F 999 -p $pids
at "recorded"
for t in "${TARGETS[@]}"; do
	kill ${PID[$t]} 2>/dev/null
	wait ${PID[$t]} 2>/dev/null
	fold $t
done
echo "  all six: $(folded_total $TMP/all.folded) samples; native walks $(walks all)," \
	"stopped unmapped $(walks all unmapped)"

total=$(folded_total $TMP/nofp.folded)
check_num "nofp: samples" "$total" ">=" 300
check "nofp: main;run_chains;chain_a;level1;level2;level3;spin_leaf is named" \
	grep -q "main;run_chains;chain_a;level1;level2;level3;spin_leaf " $TMP/nofp.folded
check "nofp: main;run_chains;chain_b;vla_frame;level3;spin_leaf is named" \
	grep -q "main;run_chains;chain_b;vla_frame;level3;spin_leaf " $TMP/nofp.folded
check_num "nofp: share of samples rooted at _start, through main" \
	"$(rooted $TMP/nofp.folded)" ">=" 0.9
echo "  nofp: $total samples, rooted $(rooted $TMP/nofp.folded)"
# A handler returns through the vDSO's __kernel_rt_sigreturn, which has no
# CFI: the walk reads the interrupted registers from the signal frame.
h=$(folded_incl $TMP/nofp-signal.folded on_alarm)
check_num "nofp signal: samples in the handler" "$h" ">=" 10
check_num "nofp signal: handler samples reaching main through the signal frame" \
	"$(share_with $TMP/nofp-signal.folded on_alarm main)" ">=" 0.95
check_num "nofp signal: handler samples under wait_loop, the code they interrupted" \
	"$(share_with $TMP/nofp-signal.folded on_alarm wait_loop)" ">=" 0.95
# The trampoline is the vDSO's, whose symbols the trace embeds.
check_num "nofp signal: handler samples under __kernel_rt_sigreturn, named" \
	"$(share_with $TMP/nofp-signal.folded on_alarm __kernel_rt_sigreturn)" ">=" 0.95
# A tick during the rt_sigreturn system call finds the pc after the svc;
# once the call has restored sp, the frame it points at is no signal
# frame, and the walk must say so ([truncated]), not end there as whole.
check_num "nofp signal: stacks through the vDSO neither rooted nor cut" \
	"$(awk '/\[vdso\]|;__kernel_rt_sigreturn;/ && !/^(_start|\[truncated\]);/ { n += $NF }
		END { print n + 0 }' $TMP/nofp-signal.folded)" "==" 0
echo "  nofp signal: $h samples in the handler, through the signal frame" \
	"$(share_with $TMP/nofp-signal.folded on_alarm main)"

A=$(lua_frame a abc.lua '^function a()')
B=$(lua_frame b abc.lua '^function b()')
C=$(lua_frame c abc.lua '^function c()')
W=$(lua_frame work abc.lua '^function work')
for name in luajit2-joff upstream-joff luajit2-jit upstream-jit; do
	f=$TMP/$name.folded
	total=$(folded_total $f)
	lua=$(awk '/\(samples\/lua\/abc.lua:[0-9]+\)/ { n += $NF } END { print n + 0 }' $f)
	a=$(folded_incl $f "$A")
	b=$(folded_incl $f "$B")
	c=$(folded_incl $f "$C")
	abc=$((a + b + c))
	check_num "$name: samples" "$total" ">=" 300
	check_num "$name: share of samples with Lua frames" "$(share $lua $total)" ">=" 0.95
	check_num "$name: share of samples rooted at _start, through main" "$(rooted $f)" ">=" 0.95
	check "$name: work is named, under c, under main" grep -qF "main ($S/abc.lua:0);$C;$W" $f
	within $name "a's share of a+b+c" $abc "$(share $a $abc)" 0.1667 0.10
	within $name "b's share of a+b+c" $abc "$(share $b $abc)" 0.3333 0.10
	within $name "c's share of a+b+c" $abc "$(share $c $abc)" 0.5 0.10
	echo "  $name: $total samples, Lua $(share $lua $total), rooted $(rooted $f), a:b:c = $a:$b:$c"
done
check "the four LuaJITs were recognized" test "$(grep -c "LuaJIT in" $TMP/all.err)" -ge 4
# arm64's traces run without their number in g->vmstate: the recorder
# finds each by the code the walk stepped over, helpers the trace calls
# (lj_vm_modi for abc.lua's %) included, and its snapshots place the
# samples in the functions it inlined, as on x86_64.
for name in luajit2-jit upstream-jit; do
	check_num "$name: share of compiled samples placed by their traces' snapshots" \
		"$(compiled_placed $TMP/all.lp --pid ${PID[$name]})" ">=" 0.9
done

at "a launched target"
# --- a launched target: record -- COMMAND (the launch breakpoint) ---------------
if record launched -F 999 -- $LJ1 -joff $S/abc.lua 3 $(unit $LJ1 -joff); then
	check "launched: work is named, under c, under main" \
		grep -qF "main ($S/abc.lua:0);$C;$W" $TMP/launched.folded
	echo "  launched: $(folded_total $TMP/launched.folded) samples"
fi

at "inlined frames"
# --- compiled code placed in the functions a trace inlined: inlined.lua's
# loop in f inlines g and h; their self shares against jit.p's, run alone
# (its hooks change the traces), as tests/e2e/lua_inlined.sh holds them on
# x86_64: the arm64 machine-code match places the code between snapshots.
for lj in luajit2:$LJ2: upstream:$LJ1:$LJ1_PATH; do
	IFS=: read -r name bin path <<<"$lj"
	record inl-$name -F 999 -- $bin $S/inlined.lua 3 || continue
	env ${path:+LUA_PATH=$path} $bin -jp=frm0i1,$TMP/inl-$name.jp $S/inlined.lua 3
	lua_self_shares $TMP/inl-$name.folded $S/inlined.lua >$TMP/inl-$name.ours
	jp_shares $TMP/inl-$name.jp >$TMP/inl-$name.theirs
	echo "  inlined $name: luaprof $(tr '\n' ' ' <$TMP/inl-$name.ours)| jit.p" \
		"$(tr '\n' ' ' <$TMP/inl-$name.theirs)"
	check_num "inlined $name: self shares of f, g, h overlap jit.p's" \
		"$(shares_overlap $TMP/inl-$name.ours $TMP/inl-$name.theirs)" ">=" 0.8
	check_num "inlined $name: share of compiled samples placed" \
		"$(compiled_placed $TMP/inl-$name.lp)" ">=" 0.95
	check "inlined $name: records stretches placed by instruction" \
		grep -qE "between snapshots, [1-9][0-9]* stretches placed by instruction" \
		$TMP/inl-$name.err
done

at "allocations"
# --- record -e alloc: the allocator's probe site read from arm64 code
# (record/luajit_alloc_arm64.c); allocs.lua's a, b and c allocate 1:2:3
# and print what each allocated as LuaJIT counts it. ---------------------------
for lj in luajit2:$LJ2 upstream:$LJ1; do
	name=${lj%%:*} bin=${lj#*:}
	$LUAPROF record -e alloc --alloc-every 4k -o $TMP/alloc-$name.lp -- \
		$bin $S/allocs.lua 2 >$TMP/alloc-$name.out 2>$TMP/alloc-$name.err
	check "alloc $name: record -e alloc exits 0" test $? -eq 0
	read -r ta tb tc <$TMP/alloc-$name.out
	$LUAPROF report --kind alloc --format folded -o $TMP/alloc-$name.folded \
		$TMP/alloc-$name.lp 2>/dev/null
	sa=$(folded_under a $TMP/alloc-$name.folded)
	sb=$(folded_under b $TMP/alloc-$name.folded)
	sc=$(folded_under c $TMP/alloc-$name.folded)
	sum=$((sa + sb + sc)) truth=$(awk -v a="${ta:-0}" -v b="${tb:-0}" -v c="${tc:-0}" \
		'BEGIN { print a + b + c }')
	echo "  alloc $name: bytes sampled a $sa b $sb c $sc; by LuaJIT's count a $ta b $tb c $tc"
	check_num "alloc $name: bytes sampled under a, b, c, of LuaJIT's count" \
		"$(share $sum $truth)" ">=" 0.8
	check_abc_shares "alloc $name: %s's share of the bytes, against LuaJIT's count" 0.05 \
		"$sa" "$sb" "$sc" "$ta" "$tb" "$tc"
done

at "off-CPU waits and memory in use"
# --- record -e off-cpu: waits.lua's a, b and c wait off the CPU (a
# nanosleep, a pipe, a command's end) for about 1:2:3 of the time, as it
# measures by the clock (tests/e2e/offcpu.sh).  Then -e inuse: of
# retain.lua's blocks, keep()'s live on (tests/e2e/lua_allocs.sh). ------------
$LUAPROF record -e cpu,off-cpu -F 499 -o $TMP/w.lp -- $LJ2 $S/waits.lua 6 \
	>$TMP/w.out 2>$TMP/w.err
check "off-cpu: record -e cpu,off-cpu exits 0" test $? -eq 0
read -r ta tb tc <$TMP/w.out
$LUAPROF report --kind off-cpu --format folded -o $TMP/w.folded $TMP/w.lp 2>/dev/null
# WHO SYSCALL: the off-CPU us under Lua function WHO, above libc's SYSCALL.
waited() { grep -F ";$1 ($S/waits.lua:" $TMP/w.folded | grep -F ";$2;" | folded_total /dev/stdin; }
wa=$(waited a __nanosleep) wb=$(waited b read) wc=$(waited c wait4)
sum=$((wa + wb + wc)) truth=$(awk -v a="${ta:-0}" -v b="${tb:-0}" -v c="${tc:-0}" \
	'BEGIN { print a + b + c }')
echo "  off-cpu: us a $wa b $wb c $wc; by the clock ms a $ta b $tb c $tc"
check_abc_shares "off-cpu: %s's share of the off-CPU time, against the clock's" 0.05 \
	"$wa" "$wb" "$wc" "$ta" "$tb" "$tc"
check_num "off-cpu: the time of a, b and c, of the clock's" \
	"$(share $sum $(awk -v t="$truth" 'BEGIN { printf "%d", t * 1000 }'))" ">=" 0.8
$LUAPROF record -e inuse --alloc-every 16k -o $TMP/r.lp -- $LJ2 $S/retain.lua 3 \
	>$TMP/r.out 2>$TMP/r.err
check "inuse: record -e inuse exits 0" test $? -eq 0
$LUAPROF report --kind inuse --format folded -o $TMP/ri.folded $TMP/r.lp 2>/dev/null
ik=$(folded_under keep $TMP/ri.folded) id=$(folded_under drop $TMP/ri.folded)
echo "  inuse: keep $ik drop $id, all $(folded_total $TMP/ri.folded) bytes"
check_num "inuse: keep()'s share of what is alive" \
	"$(share "$ik" "$(folded_total $TMP/ri.folded)")" ">=" 0.75

# --- nginx with the Lua module, JIT on, under wrk --------------------------------
if [ -n "$NGINX_MASTER" ]; then
	wrk_load
	at "recording nginx"
	record_until ng 3 $WORKERS -F 499 -p $NGINX_MASTER
	wrk_stop
	for w in ${WORKERS//,/ }; do
		$LUAPROF report --format folded --pid $w -o $TMP/w$w.folded $TMP/ng.lp 2>/dev/null
		check_num "nginx worker $w: samples" "$(folded_total $TMP/w$w.folded)" ">=" 50
	done
	check_num "nginx: share of samples rooted at _start, through main" \
		"$(rooted $TMP/ng.folded)" ">=" 0.99
	check "nginx: compute_checksum runs under handle, on the nginx frames" \
		grep -qE "ngx_http_lua_run_thread;main \(=content_by_lua\(nginx\.conf:[0-9]+\):0\);handle \([^;]*app\.lua:[0-9]+\);compute_checksum \([^;]*app\.lua:[0-9]+\)" $TMP/ng.folded
	echo "  nginx: $(folded_total $TMP/ng.folded) samples, rooted $(rooted $TMP/ng.folded)"
fi

# --- record -e lua-wait: /waits (samples/nginx/waits.lua) yields to the
# event loop in a, b and c for about 1:2:3 of the time, and answers what
# each took by the clock (tests/e2e/lua_waits.sh); two clients at once. --------
if [ -n "$NGINX_MASTER" ]; then
	at "Lua-land waits"
	$LUAPROF record -p $NGINX_MASTER -e cpu,lua-wait -F 499 -o $TMP/lw.lp -d 12 \
		>/dev/null 2>$TMP/lw.err &
	rec=$!
	CLEANUP_PIDS+=($rec)
	wait_for eval "grep -q recording $TMP/lw.err || ! kill -0 $rec 2>/dev/null"
	waits_clients 2 6
	wait $rec
	check "lua-wait: record -e cpu,lua-wait exits 0" test $? -eq 0
	wait "${CLIENTS[@]}"
	read -r ta tb tc n < <(waits_times)
	$LUAPROF report --kind lua-wait --format folded -o $TMP/lw.folded $TMP/lw.lp 2>/dev/null
	# WHO: the wait under Lua function WHO of waits.lua, above lua_resume.
	lwaited() { grep -F ";lua_resume;" $TMP/lw.folded |
		grep -F ";$1 ($NGINX_APPDIR/waits.lua:" | folded_total /dev/stdin; }
	wa=$(lwaited a) wb=$(lwaited b) wc=$(lwaited c)
	echo "  lua-wait: us a $wa b $wb c $wc; by the clock us a $ta b $tb c $tc, $n requests"
	check_num "lua-wait: requests answered" "$n" ">=" 8
	check_abc_shares "lua-wait: %s's share of the Lua-land wait time, against the clock's" 0.08 \
		"$wa" "$wb" "$wc" "$ta" "$tb" "$tc"
	check "lua-wait: every wait is a Lua stack above lua_resume" \
		sh -c "! grep -vE ';lua_resume;main \(=content_by_lua\(nginx.conf:[0-9]+\):0\);' $TMP/lw.folded"
fi

# --- PCRE's JIT code called from a trace (ngx.re.find with "jo") ------------
# arm64's traces carry no number to bound their code in the walk: the
# recorder tells PCRE's code from a trace's by J->trace[], and the stack
# gets the gap x86_64's walk leaves there, [unknown frames] over [anon]
# (tests/e2e/nginx_regex.sh).  Else the match's time goes to scan itself.
if [ -n "$NGINX_MASTER" ]; then
	nginx_stop
	at "nginx with ngx.re"
	NGINX_CONF_SRC=$(nginx_conf_for regex)
	NGINX_JIT=on nginx_start
	check "nginx with the regex handler starts on 127.0.0.1" test -n "$NGINX_MASTER"
fi
if [ -n "$NGINX_MASTER" ]; then
	wrk_load
	record_until re 3 $WORKERS -F 499 -p $NGINX_MASTER
	wrk_stop
	read -r scan native self rooted anon burn banon bself \
		< <(regex_counts $TMP/re.folded $NGINX_APPDIR/regex.lua)
	check_num "ngx.re: samples under scan" "$scan" ">=" 50
	check_num "ngx.re: share of scan's samples given to scan's own Lua frames" \
		"$(share $self $scan)" "<=" 0.15
	check_num "ngx.re: scan's samples in PCRE's code" "$anon" ">=" 25
	check_num "ngx.re: of those, the share rooted at _start with [unknown frames] above" \
		"$(share $rooted $anon)" ">=" 0.95
	check_num "ngx.re: share of burn's samples in burn itself" "$(share $bself $burn)" ">=" 0.8
	echo "  ngx.re: scan $scan (PCRE's code $anon, $rooted of them rooted over" \
		"[unknown frames]; scan's own $self); burn $burn (its own $bself)"
fi

# --- record -e stall: a handler that reads a 16 MiB file whole blocks its
# worker's event loop (tests/e2e/stalls.sh); arm64 has no epoll_wait
# system call, only epoll_pwait. ----------------------------------------------
if [ -n "$NGINX_MASTER" ]; then
	nginx_stop
	at "event-loop stalls"
	head -c 16777216 /dev/zero >$TMP/big # (samples/nginx/stall.lua reads it)
	NGINX_CONF_SRC=$(nginx_conf_for stall) NGINX_JIT=on nginx_start
	check "nginx with the reading handler starts on 127.0.0.1" test -n "$NGINX_MASTER"
fi
if [ -n "$NGINX_MASTER" ]; then
	$LUAPROF record -p $NGINX_MASTER -e cpu,off-cpu,stall --stall-threshold 5 -F 499 \
		-o $TMP/st.lp 2>$TMP/st.err &
	rec=$!
	CLEANUP_PIDS+=($rec)
	wait_for eval "grep -q recording $TMP/st.err || ! kill -0 $rec 2>/dev/null"
	for i in 1 2 3 4; do
		curl -sf -o /dev/null --max-time 30 "http://127.0.0.1:$NGINX_PORT/"
	done
	kill -INT $rec
	wait $rec
	check "stall: record -e cpu,off-cpu,stall exits 0" test $? -eq 0
	$LUAPROF report --stalls -n 0 -o $TMP/st.txt $TMP/st.lp 2>/dev/null
	n=$(grep -cE "^ +[0-9.]+ ms  pid [0-9]+/[0-9]+ nginx  at " $TMP/st.txt)
	check_num "stall: stalls listed, of 4 requests" "$n" ">=" 2
	check "stall: the loop waits again in epoll_pwait" grep -qE "^      loop  .*;epoll_pwait$" $TMP/st.txt
	check "stall: some stall names read_big above a read" \
		grep -qE "  (cpu|off-cpu) +.*;read_big \([^;]*\.lua:[0-9]+\);.*;read;" $TMP/st.txt
	echo "  stall: $n stalls; the longest: $(grep -m1 -E "^ +[0-9.]+ ms  pid" $TMP/st.txt)"
fi

at "report and info"
# --- report and info on the traces -------------------------------------------
$LUAPROF info $TMP/all.lp >$TMP/info.txt 2>&1
check "info reads a trace" grep -q "^status: complete" $TMP/info.txt
check "info: nothing lost" grep -q "^lost: 0$" $TMP/info.txt
$LUAPROF report $TMP/all.lp >$TMP/top.txt 2>&1
check "report (top) names spin_leaf" grep -q "spin_leaf" $TMP/top.txt
$LUAPROF report --format callgraph --pid ${PID[upstream-joff]} $TMP/all.lp >$TMP/cg.txt 2>&1
check "report --format callgraph names work" grep -qF "work (" $TMP/cg.txt

# The traces and their reports here, for the host to read again: read
# where the host reads them, by the same relative path (the report names
# its trace).
mkdir -p "$CMP"
for t in all ng re; do
	[ -s $TMP/$t.lp ] || continue
	cp $TMP/$t.lp "$CMP/$t.lp"
	(cd "$CMP" && $LUAPROF report $t.lp >$t.top 2>/dev/null &&
		$LUAPROF report --format folded $t.lp >$t.folded 2>/dev/null)
done
nginx_stop
at "done"
if [ -n "${LUAPROF_SMOKE_KEEP:-}" ]; then
	mkdir -p "$LUAPROF_SMOKE_KEEP" && cp $TMP/*.lp $TMP/*.folded $TMP/*.err "$LUAPROF_SMOKE_KEEP/"
fi

# tests/kernels/smoke.sh - the smoke subset of the end-to-end tests that
# every kernel of the matrix runs (tests/kernels.sh boots the guests; this
# runs inside them, from the host's tree).  It runs on the host as it is,
# too (`bash tests/kernels/smoke.sh`), for figures to compare with.
#
# The checks are what must hold on any kernel: `luaprof check` passes,
# every BPF program loads, a C program without frame pointers, both
# LuaJITs with and without the JIT, and nginx with the Lua module come out
# with their frames named and rooted at _start, abc.lua's 1:2:3 within
# 15% (or its sampling noise, see within()), waits.lua's waits off the
# CPU under their Lua functions and kernel waits, and report and info read
# the traces.  Each check prints its figure.
#
# Emulated (qemu TCG, on a host others load too), code runs 10 to 20 times
# slower and the guest's CPUs stall whenever the host runs something else.
# So the shares are measured on targets already running, recorded with
# -p: a launched target's first moments, before the recorder has read its
# mappings and found its VM, are a few milliseconds here but a large part
# of a short recording in a guest (its native walks stop "unmapped", its
# samples have no Lua frames yet).  One launched recording checks launch.
# And the five CPU-bound targets are recorded at once, each then reported
# with --pid: loading the sampler, which the verifier takes seconds to
# check in a guest, and reading the targets' objects are paid once.
. tests/lib.sh
. tests/nginx.sh
. tests/kernels/smoke_lib.sh

LJ2=/usr/bin/luajit
LJ1=$PWD/build/luajit-upstream/usr/bin/luajit
S=samples/lua

echo "  kernel $(uname -r), $(nproc) CPUs"

at "luaprof check"
# --- luaprof check ----------------------------------------------------------
$LUAPROF check >$TMP/check.txt 2>&1
rc=$?
sed 's/^/  | /' $TMP/check.txt
check "luaprof check exits 0" test $rc -eq 0
check "luaprof check: luaprof will run here" grep -q "^luaprof will run here" $TMP/check.txt
# The rest would fail the same way, at length.
grep -q "^luaprof will run here" $TMP/check.txt || exit 1

# --- five targets at once: a C program without frame pointers (the
# .eh_frame unwinder), both LuaJITs with and without the JIT (abc.lua's
# 1:2:3) ---------------------------------------------------------------------
start nofp $SAMPLES/nofp chains 600
start luajit2-joff $LJ2 -joff $S/abc.lua 600 $(unit $LJ2 -joff)
start upstream-joff $LJ1 -joff $S/abc.lua 600 $(unit $LJ1 -joff)
start luajit2-jit $LJ2 $S/abc.lua 600 $(unit $LJ2)
start upstream-jit $LJ1 $S/abc.lua 600 $(unit $LJ1)
# Each has run a while (the JIT's traces compiled, the heap grown).
for t in "${TARGETS[@]}"; do
	wait_for busy ${PID[$t]} 0.5 || wait_for busy ${PID[$t]} 0.5 ||
		fail "$t: the target did not get 0.5 s of CPU in 40 s"
done
at "recording the five targets"
pids=$(IFS=,; echo "${PID[*]}")
# 2.5 s of CPU each: about a thousand samples each when the host leaves
# the guest alone, a few hundred when it does not.
record_until all 12.5 $pids -F 999 -p $pids
at "recorded"
for t in "${TARGETS[@]}"; do
	kill ${PID[$t]} 2>/dev/null
	wait ${PID[$t]} 2>/dev/null
	fold $t
done
at "reported"
echo "  all five: $(folded_total $TMP/all.folded) samples; native walks $(walks all)," \
	"stopped unmapped $(walks all unmapped)"

total=$(folded_total $TMP/nofp.folded)
check_num "nofp: samples" "$total" ">=" 300
check "nofp: main;run_chains;chain_a;level1;level2;level3;spin_leaf is named" \
	grep -q "main;run_chains;chain_a;level1;level2;level3;spin_leaf " $TMP/nofp.folded
check_num "nofp: share of samples rooted at _start, through main" \
	"$(rooted $TMP/nofp.folded)" ">=" 0.9
# No share: emulated, a chain takes tens of milliseconds, too few calls
# in a recording for their 1:1 to show within 15%.
check "nofp: main;run_chains;chain_b;vla_frame;level3;spin_leaf (rbp-based CFA) is named" \
	grep -q "main;run_chains;chain_b;vla_frame;level3;spin_leaf " $TMP/nofp.folded
echo "  nofp: $total samples, rooted $(rooted $TMP/nofp.folded)"

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
	within $name "a's share of a+b+c" $abc "$(share $a $abc)" 0.1667
	within $name "b's share of a+b+c" $abc "$(share $b $abc)" 0.3333
	within $name "c's share of a+b+c" $abc "$(share $c $abc)" 0.5
	echo "  $name: $total samples, Lua $(share $lua $total), rooted $(rooted $f)," \
		"a:b:c = 1:$(awk -v a=$a -v b=$b 'BEGIN { printf "%.2f", a ? b / a : 0 }'):$(awk -v a=$a -v c=$c 'BEGIN { printf "%.2f", a ? c / a : 0 }')"
done
check "the four LuaJITs were recognized" test "$(grep -c "LuaJIT in" $TMP/all.err)" -ge 4

at "a launched target"
# --- a launched target: record -- COMMAND -------------------------------------
# 3 s of CPU: in a guest, finding the VM of a process just started takes
# the recorder a second or more.
if record launched -F 999 -- $LJ1 -joff $S/abc.lua 3 $(unit $LJ1 -joff); then
	check "launched: work is named, under c, under main" \
		grep -qF "main ($S/abc.lua:0);$C;$W" $TMP/launched.folded
	echo "  launched: $(folded_total $TMP/launched.folded) samples;" \
		"native walks $(walks launched), stopped unmapped $(walks launched unmapped)"
fi

at "off-CPU time"
# --- record -e off-cpu: the scheduler's switch and the system calls' return,
# each wait under its Lua function and its kernel wait ----------------------
if record offcpu -e off-cpu -F 999 -- $LJ1 $S/waits.lua 3; then
	$LUAPROF report --kind off-cpu --format folded -o $TMP/offcpu.folded $TMP/offcpu.lp 2>/dev/null
	check "off-cpu: a's nanosleep under a" \
		grep -qE ";a \($S/waits.lua:[0-9]+\);.*hrtimer_nanosleep_\[k\] [0-9]+$" $TMP/offcpu.folded
	check "off-cpu: c's wait4 under c" \
		grep -qE ";c \($S/waits.lua:[0-9]+\);.*do_wait_\[k\] [0-9]+$" $TMP/offcpu.folded
	echo "  off-cpu: $(folded_total $TMP/offcpu.folded) us in $(wc -l <$TMP/offcpu.folded) stacks"
fi

# --- nginx with the Lua module, JIT on, under wrk ---------------------------
NGINX_JIT=on nginx_start
check "nginx starts" test -n "$NGINX_MASTER"
if [ -n "$NGINX_MASTER" ]; then
	wrk_load # (both workers busy before the recording starts)
	at "recording nginx"
	record_until ng 2 $WORKERS -F 499 -p $NGINX_MASTER
	wrk_stop
	for w in ${WORKERS//,/ }; do
		$LUAPROF report --format folded --pid $w -o $TMP/w$w.folded $TMP/ng.lp 2>/dev/null
		n=$(folded_total $TMP/w$w.folded)
		check_num "nginx worker $w: samples" "$n" ">=" 50
		check_num "nginx worker $w: share rooted at _start, through main" \
			"$(rooted $TMP/w$w.folded)" ">=" 0.9
	done
	check "nginx: compute_checksum runs under handle, on the nginx frames" \
		grep -qE "ngx_http_lua_run_thread;main \(=content_by_lua\(nginx\.conf:[0-9]+\):0\);handle \([^;]*app\.lua:[0-9]+\);compute_checksum \([^;]*app\.lua:[0-9]+\)" $TMP/ng.folded
	echo "  nginx: $(folded_total $TMP/ng.folded) samples, rooted $(rooted $TMP/ng.folded);" \
		"native walks $(walks ng), stopped unmapped $(walks ng unmapped)"
	# Lua-land waits: uprobes on lua_resume (through the perf PMU);
	# /waits yields in a, b, c (samples/nginx/waits.lua).
	at "recording nginx's Lua-land waits"
	record_gets lw 20 /waits -e lua-wait
	check "lua-wait: record exits 0" test $? -eq 0
	$LUAPROF report --kind lua-wait --format folded -o $TMP/lw.folded $TMP/lw.lp 2>/dev/null
	for f in a b c; do
		check "lua-wait: $f's waits under $f, above lua_resume" \
			grep -qE ";lua_resume;main \(=content_by_lua\(nginx\.conf:[0-9]+\):0\);handle \([^;]*waits\.lua:[0-9]+\);$f \(" $TMP/lw.folded
	done
	echo "  lua-wait: $(folded_total $TMP/lw.folded) us in $(wc -l <$TMP/lw.folded) stacks"
	# Allocations: a uprobe on the VM's allocator, return probes and one
	# on lua_close (its attach cookie); the handler allocates.
	at "recording nginx's allocations"
	record_gets al 40 / -e inuse --alloc-every 16k
	check "alloc: record exits 0" test $? -eq 0
	$LUAPROF report --kind alloc --format folded -o $TMP/al.folded $TMP/al.lp 2>/dev/null
	check "alloc: allocations under app.lua's handle()" \
		grep -qE ";handle \([^;]*app\.lua:[0-9]+\);" $TMP/al.folded
	echo "  alloc: $(folded_total $TMP/al.folded) bytes in $(wc -l <$TMP/al.folded) stacks"
	nginx_stop
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

at "done"
echo "  perf_event_max_sample_rate now $(cat /proc/sys/kernel/perf_event_max_sample_rate)"
dmesg 2>/dev/null | grep -iE "perf:|hrtimer|clocksource|tsc" | tail -n 12 | sed 's/^/  | /'

# LUAPROF_SMOKE_KEEP=DIR: the traces and their reports stay there.
if [ -n "${LUAPROF_SMOKE_KEEP:-}" ]; then
	mkdir -p "$LUAPROF_SMOKE_KEEP" && cp $TMP/*.lp $TMP/*.folded $TMP/*.err "$LUAPROF_SMOKE_KEEP/"
fi

# tests/kernels/smoke.sh - the smoke subset of the end-to-end tests that
# every kernel of the matrix runs (tests/kernels.sh boots the guests; this
# runs inside them, from the host's tree).  It runs on the host as it is,
# too (`bash tests/kernels/smoke.sh`), for figures to compare with.
#
# The checks are what must hold on any kernel: `luaprof check` passes,
# every BPF program loads, a C program without frame pointers, both
# LuaJITs with and without the JIT, and nginx with the Lua module come out
# with their frames named and rooted at _start, abc.lua's 1:2:3 within
# 15%, and report and info read the traces.  Each check prints its figure.
#
# Emulated (qemu TCG, on a host others load too), code runs 10 to 20 times
# slower and the guest's CPUs stall whenever the host runs something else.
# So the shares are measured on targets already running, recorded with
# -p: a launched target's first moments, before the recorder has read its
# mappings and found its VM, are a few milliseconds here but a large part
# of a short recording in a guest (its native walks stop "unmapped", its
# samples have no Lua frames yet).  One launched recording checks launch.
. tests/lib.sh
. tests/nginx.sh

LJ2=/usr/bin/luajit
LJ1=$PWD/build/luajit-upstream/usr/bin/luajit
S=samples/lua
SECS=${LUAPROF_SMOKE_SECS:-4}

echo "  kernel $(uname -r), $(nproc) CPUs"

# --- luaprof check ----------------------------------------------------------
$LUAPROF check >$TMP/check.txt 2>&1
rc=$?
sed 's/^/  | /' $TMP/check.txt
check "luaprof check exits 0" test $rc -eq 0
check "luaprof check: luaprof will run here" grep -q "^luaprof will run here" $TMP/check.txt
# The rest would fail the same way, at length.
grep -q "^luaprof will run here" $TMP/check.txt || exit 1

# record NAME ARGS... : records into $TMP/NAME.lp with -v (the unwinder's
# stops in $TMP/NAME.err), folds it into $TMP/NAME.folded.
record() {
	local name=$1 rc
	shift
	$LUAPROF record -v -o $TMP/$name.lp "$@" >/dev/null 2>$TMP/$name.err
	rc=$?
	check "$name: record exits 0" test $rc -eq 0
	[ $rc -eq 0 ] || grep -v '^libbpf: ' $TMP/$name.err | tail -n 20 | sed 's/^/  | /'
	$LUAPROF report --format folded -o $TMP/$name.folded $TMP/$name.lp 2>/dev/null
	return $rc
}

# busy PID SECS: PID has had SECS of CPU time.
busy() { awk -v t="$(cpu_seconds $1)" -v s=$2 'BEGIN { exit !(t >= s) }'; }

# attach NAME COMMAND... : starts COMMAND, lets it run 1 s of CPU (the
# JIT's traces compiled, the heap grown), records it with -p for $SECS s
# at 999 Hz, stops it.
attach() {
	local name=$1 pid
	shift
	"$@" >/dev/null 2>&1 &
	pid=$!
	CLEANUP_PIDS+=($pid)
	if ! wait_for busy $pid 1 && ! wait_for busy $pid 1; then
		fail "$name: the target did not get 1 s of CPU in 40 s"
		kill $pid 2>/dev/null
		return 1
	fi
	record $name -F 999 -d $SECS -p $pid
	rc=$?
	kill $pid 2>/dev/null
	wait $pid 2>/dev/null
	return $rc
}

# walks NAME [REASON]: native walks of NAME in all, or those that stopped
# for REASON (record -v's "native unwind: ... stops:" line).
walks() {
	awk -v r="${2:-}" '/native unwind: .* walks/ {
		for (i = 1; i < NF; i++) {
			if (r == "" && $(i + 1) ~ /^walks,?$/) n += $i
			if (r != "" && $i == r) n += $(i + 1) } }
		END { print n + 0 }' $TMP/$1.err
}

# rooted FOLDED: the share of samples whose stack starts at _start and
# holds main (a walk that stopped early starts elsewhere).
rooted() {
	awk '{ n += $NF } /^_start;(__libc_start_main|__libc_start_call_main)[^ ]*;.*main[; ]/ { r += $NF }
		END { printf "%.4f", n ? r / n : 0 }' $1
}

# within NAME LABEL N SHARE EXPECTED: a share of N samples within 15% of
# EXPECTED, or within 3.5 standard deviations of N samples' binomial noise
# where that is wider (a guest the host starves gets few samples: at 600,
# 3.5 deviations of 1/6 are 0.052, 31% of it).
within() {
	local tol lo hi
	tol=$(awk -v e=$5 -v n=$3 'BEGIN { t = 0.15 * e; s = n ? 3.5 * sqrt(e * (1 - e) / n) : 1;
		printf "%.4f", s > t ? s : t }')
	lo=$(awk -v e=$5 -v t=$tol 'BEGIN { printf "%.4f", e - t }')
	hi=$(awk -v e=$5 -v t=$tol 'BEGIN { printf "%.4f", e + t }')
	check_num "$1: $2 is $5 +-$tol (low)" "$4" ">" $lo
	check_num "$1: $2 is $5 +-$tol (high)" "$4" "<" $hi
}

# --- a C program without frame pointers: the .eh_frame unwinder --------------
if attach nofp $SAMPLES/nofp chains 120; then
	total=$(folded_total $TMP/nofp.folded)
	check_num "nofp: samples" "$total" ">=" 300
	check "nofp: main;run_chains;chain_a;level1;level2;level3;spin_leaf is named" \
		grep -q "main;run_chains;chain_a;level1;level2;level3;spin_leaf " $TMP/nofp.folded
	check_num "nofp: share of samples rooted at _start, through main" \
		"$(rooted $TMP/nofp.folded)" ">=" 0.9
	a=$(folded_incl $TMP/nofp.folded chain_a)
	b=$(folded_incl $TMP/nofp.folded chain_b)
	within nofp "chain_a's share of chain_a+chain_b" $((a + b)) "$(share $a $((a + b)))" 0.5
	echo "  nofp: $total samples; native walks $(walks nofp), stopped unmapped $(walks nofp unmapped)"
fi

# --- both LuaJITs, with and without the JIT: abc.lua's 1:2:3 -----------------
lua_frame() { echo "$1 ($S/$2:$(grep -n "$3" $S/$2 | head -1 | cut -d: -f1))"; }
A=$(lua_frame a abc.lua '^function a()')
B=$(lua_frame b abc.lua '^function b()')
C=$(lua_frame c abc.lua '^function c()')
W=$(lua_frame work abc.lua '^function work')

# abc NAME UNIT LUAJIT ARGS... : abc.lua, UNIT iterations a unit of work.
# Emulated, a unit of 200000 takes 40 to 65 ms interpreted (3 ms on this
# machine): a few dozen calls in a recording, and each stall of the
# guest's CPUs moves a share by percents.  Interpreted, a tenth of it
# makes hundreds of calls; compiled, 200000 takes 10 ms.
abc() {
	local name=$1 unit=$2 total lua a b c abc
	shift 2
	attach $name "$@" $S/abc.lua 600 $unit || return
	check "$name: the LuaJIT build was recognized" grep -q "LuaJIT in" $TMP/$name.err
	total=$(folded_total $TMP/$name.folded)
	lua=$(awk '/\(samples\/lua\/abc.lua:[0-9]+\)/ { n += $NF } END { print n + 0 }' $TMP/$name.folded)
	a=$(folded_incl $TMP/$name.folded "$A")
	b=$(folded_incl $TMP/$name.folded "$B")
	c=$(folded_incl $TMP/$name.folded "$C")
	abc=$((a + b + c))
	check_num "$name: samples" "$total" ">=" 300
	check_num "$name: share of samples with Lua frames" "$(share $lua $total)" ">=" 0.95
	check_num "$name: share of samples rooted at _start, through main" \
		"$(rooted $TMP/$name.folded)" ">=" 0.95
	check "$name: work is named, under c, under main" \
		grep -qF "main ($S/abc.lua:0);$C;$W" $TMP/$name.folded
	within $name "a's share of a+b+c" $abc "$(share $a $abc)" 0.1667
	within $name "b's share of a+b+c" $abc "$(share $b $abc)" 0.3333
	within $name "c's share of a+b+c" $abc "$(share $c $abc)" 0.5
	echo "  $name: $total samples, Lua $(share $lua $total), rooted $(rooted $TMP/$name.folded)," \
		"a:b:c = 1:$(awk -v a=$a -v b=$b 'BEGIN { printf "%.2f", a ? b / a : 0 }'):$(awk -v a=$a -v c=$c 'BEGIN { printf "%.2f", a ? c / a : 0 }');" \
		"native walks $(walks $name), stopped unmapped $(walks $name unmapped)"
}

abc luajit2-joff 20000 $LJ2 -joff
abc upstream-joff 20000 $LJ1 -joff
abc luajit2-jit 200000 $LJ2
abc upstream-jit 200000 $LJ1

# --- a launched target: record -- COMMAND -------------------------------------
if record launched -F 999 -- $LJ1 -joff $S/abc.lua 1 20000; then
	check "launched: work is named, under c, under main" \
		grep -qF "main ($S/abc.lua:0);$C;$W" $TMP/launched.folded
	echo "  launched: $(folded_total $TMP/launched.folded) samples;" \
		"native walks $(walks launched), stopped unmapped $(walks launched unmapped)"
fi

# --- nginx with the Lua module, JIT on, under wrk ---------------------------
NGINX_JIT=on nginx_start
check "nginx starts" test -n "$NGINX_MASTER"
if [ -n "$NGINX_MASTER" ]; then
	wrk -t1 -c4 -d600s "http://127.0.0.1:$NGINX_PORT/" >/dev/null 2>&1 &
	load=$!
	CLEANUP_PIDS+=($load)
	workers=$(nginx_workers)
	# Both workers busy before the recording starts.
	for w in $workers; do
		wait_for busy $w 0.2 || wait_for busy $w 0.2
	done
	# Longer: reading nginx's objects takes seconds in a guest, and -d
	# counts them.
	record ng -F 499 -d $((SECS + 2)) -p $NGINX_MASTER
	kill $load 2>/dev/null
	wait $load 2>/dev/null
	for w in $workers; do
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
	nginx_stop
fi

# --- report and info on the traces -------------------------------------------
$LUAPROF info $TMP/luajit2-jit.lp >$TMP/info.txt 2>&1
check "info reads a trace" grep -q "^status: complete" $TMP/info.txt
check "info: nothing lost" grep -q "^lost: 0$" $TMP/info.txt
$LUAPROF report $TMP/nofp.lp >$TMP/top.txt 2>&1
check "report (top) names spin_leaf" grep -q "spin_leaf" $TMP/top.txt
$LUAPROF report --format callgraph $TMP/upstream-joff.lp >$TMP/cg.txt 2>&1
check "report --format callgraph names work" grep -qF "work (" $TMP/cg.txt

# LUAPROF_SMOKE_KEEP=DIR: the traces and their reports stay there.
if [ -n "${LUAPROF_SMOKE_KEEP:-}" ]; then
	mkdir -p "$LUAPROF_SMOKE_KEEP" && cp $TMP/*.lp $TMP/*.folded $TMP/*.err "$LUAPROF_SMOKE_KEEP/"
fi

# tests/kernels/smoke_lib.sh - the helpers of the kernel matrix's smoke
# scripts (tests/kernels/smoke.sh, and smoke_arm64.sh in the arm64 lane),
# sourced after tests/lib.sh and tests/nginx.sh: recording targets that
# already run until they have had so much CPU, however slowly the
# emulator runs them, folding the result, sizing abc.lua's unit of work
# to this machine, and a share's check against its sampling noise.  They
# use $LUAPROF, $TMP and, for lua_frame, $S (the Lua samples' directory).

# at WHAT: how long the smoke test has run, for the log.
at() { echo "  [${SECONDS}s] $*"; }

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

HZ=$(getconf CLK_TCK)

# record_until NAME CPUSECS PIDS ARGS... : records like record, PIDS being
# a comma-separated list, until they have had CPUSECS seconds of CPU
# between them since sampling started (at most 240 s), then stops the
# recorder with SIGINT.  Not -d: a guest the host starves gives its
# targets a fraction of the wall clock, and the recorder's setup (reading
# their objects) counts in -d.
record_until() {
	local name=$1 secs=$2 pids=${3//,/ } rec c0 want rc i
	shift 3
	$LUAPROF record -v -o $TMP/$name.lp "$@" >/dev/null 2>$TMP/$name.err &
	rec=$!
	CLEANUP_PIDS+=($rec)
	for i in $(seq 600); do
		grep -q "^luaprof record: recording" $TMP/$name.err && break
		kill -0 $rec 2>/dev/null || break
		sleep 0.2
	done
	c0=$(ticks_of $pids)
	want=$(awk -v s=$secs -v hz=$HZ 'BEGIN { printf "%d", s * hz }')
	for i in $(seq 1200); do
		(($(ticks_of $pids) - c0 >= want)) && break
		kill -0 $rec 2>/dev/null || break
		sleep 0.2
	done
	echo "  $name: recorded while the targets had $(awk -v t=$(($(ticks_of $pids) - c0)) \
		-v hz=$HZ 'BEGIN { print t / hz }') s of CPU"
	kill -INT $rec 2>/dev/null
	wait $rec
	rc=$?
	check "$name: record exits 0" test $rc -eq 0
	[ $rc -eq 0 ] || grep -v '^libbpf: ' $TMP/$name.err | tail -n 20 | sed 's/^/  | /'
	$LUAPROF report --format folded -o $TMP/$name.folded $TMP/$name.lp 2>/dev/null
	return $rc
}

# busy PID SECS: PID has had SECS of CPU time.
busy() { awk -v t="$(cpu_seconds $1)" -v s=$2 'BEGIN { exit !(t >= s) }'; }

# start NAME COMMAND... : starts COMMAND in the background, as target NAME.
TARGETS=()
declare -A PID
start() {
	local name=$1
	shift
	"$@" >/dev/null 2>&1 &
	PID[$name]=$!
	CLEANUP_PIDS+=($!)
	TARGETS+=($name)
}

# wrk_load: loads nginx (tests/nginx.sh's) with wrk until wrk_stop, once
# both its workers have had CPU; WORKERS are their pids, comma-separated.
wrk_load() {
	local w
	wrk -t1 -c4 -d600s "http://127.0.0.1:$NGINX_PORT/" >/dev/null 2>&1 &
	WRK=$!
	CLEANUP_PIDS+=($WRK)
	WORKERS=$(nginx_workers | paste -sd,)
	for w in ${WORKERS//,/ }; do
		wait_for busy $w 0.2 || wait_for busy $w 0.2
	done
}
wrk_stop() { kill $WRK 2>/dev/null; wait $WRK 2>/dev/null; }

# fold NAME: NAME's samples of the all-targets trace, folded.
fold() {
	$LUAPROF report --format folded --pid ${PID[$1]} -o $TMP/$1.folded $TMP/all.lp 2>/dev/null
}

# unit LUAJIT ARGS... : abc.lua's UNIT for a unit of work of about 5 ms
# with this LuaJIT and these flags, here.  A fixed one would not do:
# emulated, 200000 iterations take 40 to 65 ms interpreted (3 ms on the
# host), so a recording holds a few dozen calls and each stall of the
# guest's CPUs moves a share by percents; and 20000, a few hundred
# microseconds on the host, makes a round of a, b and c close to the
# sampling period, where ticks alias with it.
unit() {
	"$@" -e 'local t, x = os.clock(), 0
		for i = 1, 2000000 do x = (x + i * 7) % 1000003 end
		t = os.clock() - t
		io.write(math.max(2000, math.floor(2000000 * 0.005 / (t > 0 and t or 1e-3))))'
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

# within NAME LABEL N SHARE EXPECTED [TOL]: a share of N samples within
# TOL (default 0.15: 15%) of EXPECTED, or within 3.5 standard deviations
# of its sampling noise where that is wider.  The noise is that of N/4
# independent samples: emulated, samples come in runs (a target runs for
# a time slice between the others', and the host stalls the guest's
# CPUs), and the shares of repeated guest runs spread some twice as wide
# as N samples' would.  At 3500 samples that allows 1/6 +-0.044 (26%);
# 2/6 and 3/6 keep 15%.  No samples is no noise: the share must be met.
within() {
	local tol lo hi
	tol=$(awk -v e=$5 -v n=$3 -v r=${6:-0.15} 'BEGIN { t = r * e; s = n ? 3.5 * sqrt(e * (1 - e) / (n / 4)) : 0;
		printf "%.4f", (s > t ? s : t) }')
	lo=$(awk -v e=$5 -v t=$tol 'BEGIN { printf "%.4f", e - t }')
	hi=$(awk -v e=$5 -v t=$tol 'BEGIN { printf "%.4f", e + t }')
	check_num "$1: $2 is $5 +-$tol (low)" "$4" ">" $lo
	check_num "$1: $2 is $5 +-$tol (high)" "$4" "<" $hi
}

# lua_frame NAME FILE REGEX: NAME's frame as a report names it: NAME
# (samples/lua/FILE:LINE), LINE the first that matches REGEX.
lua_frame() { echo "$1 ($S/$2:$(grep -n "$3" $S/$2 | head -1 | cut -d: -f1))"; }

# record_gets OUT N PATH ARGS...: records nginx's master for 4 s with
# ARGS into OUT.lp (stderr OUT.err) while N requests for PATH are made,
# one at a time, by bash alone (the guest need not have curl); returns
# record's status.
record_gets() {
	local out=$1 n=$2 path=$3 rec i
	shift 3
	$LUAPROF record -d 4 -p $NGINX_MASTER -o $TMP/$out.lp "$@" 2>$TMP/$out.err &
	rec=$!
	wait_for grep -q "recording" $TMP/$out.err || sleep 2
	for i in $(seq $n); do
		(exec 3<>/dev/tcp/127.0.0.1/$NGINX_PORT &&
			printf 'GET %s HTTP/1.0\r\n\r\n' "$path" >&3 && cat <&3 >/dev/null) 2>/dev/null
	done
	wait $rec
}

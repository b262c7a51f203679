#!/usr/bin/env bash
# bench/alloc_nginx.sh - what allocation sampling (record -e alloc: one
# uprobe on g->allocf at its first branch, an int3 trap per allocator
# call; -e inuse: that, uretprobes on the functions the allocator
# tail-calls to allocate, and a probe on lua_close) costs a server and an
# allocation-heavy loop, beside CPU-only profiling in the same run.
#
# The probes are on the file (inode): every process on the machine that
# maps it takes the trap.  So nginx runs with a private copy of
# libluajit-5.1.so.2 (LD_LIBRARY_PATH, through a wrapper that execs
# /usr/sbin/nginx; the workers' maps are checked to name the copy), and
# the loop runs a private copy of /usr/bin/luajit (LuaJIT linked in):
# no other process on the machine is probed, and none of theirs counted.
#
# 1. nginx + lua module (2 workers, JIT on, samples/nginx/app.lua) under
#    wrk -t2 -c CONNS (default 8).  ROUNDS rounds (default 3) of four
#    WINDOW-second windows (default 5), in an order rotated from round to
#    round: (a) no profiler, (b) luaprof record -e cpu, (c) -e alloc
#    (--alloc-every EVERY, default luaprof's 512k), (d) -e inuse, each -p
#    MASTER at luaprof's default rate (or HZ).  A recorder's window starts
#    SETTLE s (default 1) after it says it records (the allocator is
#    probed once a CPU sample has shown the VM: within the first ticks)
#    and ends before it is stopped.  Per window: requests/s (wrk's), the
#    workers' CPU per request (utime + stime, /proc/PID/stat, ticks of 10
#    ms: figures of whole windows), the recorder's own CPU (% of one CPU),
#    `luaprof info`'s lost count.  Each of (b), (c), (d) is a ratio to (a)
#    of the same round; the table gives the median ratio over the rounds
#    and their range.
#    Then the probes' hit rates, in two more windows outside the ratios:
#    kernel.bpf_stats_enabled set to 1 for them only (each run then also
#    reads the clock twice; restored after, and at exit), one window of
#    (c) and one of (d): run_cnt per second of on_alloc (one per
#    allocator call: malloc, realloc and free alike), on_alloc_return
#    (one per malloc or realloc return, (d) only) and on_lua_close, from
#    /proc/REC/fdinfo (the recorder's own programs, not others' of the
#    same name), with run_time_ns / run_cnt (the program's own time, not
#    the trap's), and allocator calls per request.
# 2. The worst case: samples/lua/allocs.lua, a loop that does little but
#    allocate, LOOP_SECONDS (default 6) of its own CPU time per run, in
#    ROUNDS rounds rotated over none, -e cpu, -e alloc, -e inuse (record
#    -- COMMAND: it runs from its first instruction; its allocator is
#    probed after the first tick that shows its VM).  Its throughput:
#    bytes allocated (its own printout, LuaJIT's count) per CPU second
#    (the luajit process's user + system, bash's `time`; the traps run in
#    it, as system time).
# 3. Setup: record -v -d SETUP_SECONDS (default 2) -p MASTER with -e cpu,
#    alloc, inuse, ROUNDS rounds rotated, nginx under the same wrk load:
#    record's own "recorder CPU: setup X ms in Y ms of wall-clock time"
#    (until it records), and the wall time from its start to its "pid N:
#    allocator probed" lines (alloc, inuse: when allocations start being
#    sampled), stamped as they are written.
# build/luaprof and samples/lua/allocs.lua are copied at the start and
# the copies run throughout: a rebuild or an edit meanwhile does not split
# the run between two versions.  allocs.lua stops its collector and runs
# a full collection each 64 MiB: under the probes each is a burst of
# trapped frees, so a run's bytes come in steps of about 64 MiB; runs
# of several such steps (LOOP_SECONDS) keep the last one's share small.
# Each recorder's stderr is kept: lines other than its usual ones
# (status, summary, -v's figures) are printed at the end.
# Printed, never asserted.  Needs root, wrk (installed if missing),
# bpftool and tests/deps.sh's nginx packages.
set -u # not -e: the nginx helpers poll with commands that fail until ready
cd "$(dirname "$0")/.."
ROUNDS=${ROUNDS:-3}
WINDOW=${WINDOW:-5}
SETTLE=${SETTLE:-1}
HZ=${HZ:-}
CONNS=${CONNS:-8}
EVERY=${EVERY:-}
LOOP_SECONDS=${LOOP_SECONDS:-6}
SETUP_SECONDS=${SETUP_SECONDS:-2}
PARTS=${PARTS:-nginx loop setup}
. tests/lib.sh
. tests/nginx.sh
cp build/luaprof $TMP/luaprof
LUAPROF=$TMP/luaprof
export DEBIAN_FRONTEND=noninteractive
command -v wrk >/dev/null || apt-get install -y -qq wrk >/dev/null
command -v bpftool >/dev/null || apt-get install -y -qq bpftool >/dev/null
command -v nginx >/dev/null || tests/deps.sh
REC=
WRK=
old_stats=$(sysctl -n kernel.bpf_stats_enabled)
trap 'sysctl -qw kernel.bpf_stats_enabled=$old_stats; for p in $REC $WRK; do kill $p 2>/dev/null; done;
	nginx_stop >/dev/null 2>&1; cleanup' EXIT

# The private copies.
LJLIB=$TMP/lib
mkdir -p $LJLIB $TMP/bin
cp /usr/lib/x86_64-linux-gnu/libluajit-5.1.so.2 $LJLIB/libluajit-5.1.so.2
cp /usr/bin/luajit $TMP/luajit
cp samples/lua/allocs.lua $TMP/allocs.lua
printf '#!/bin/sh\nLD_LIBRARY_PATH=%s exec /usr/sbin/nginx "$@"\n' $LJLIB >$TMP/bin/nginx
chmod +x $TMP/bin/nginx
ldd $TMP/luajit | grep -q libluajit && { echo "alloc_nginx.sh: $TMP/luajit links libluajit: not private"; exit 1; }

PATH=$TMP/bin:$PATH NGINX_JIT=on nginx_start || exit 1
WORKERS=$(nginx_workers)
for w in $NGINX_MASTER $WORKERS; do
	if ! grep -q "$LJLIB/libluajit-5.1.so.2" /proc/$w/maps ||
		grep -q ' /usr/lib/x86_64-linux-gnu/libluajit' /proc/$w/maps; then
		echo "alloc_nginx.sh: pid $w does not map the private libluajit only:"
		grep luajit /proc/$w/maps | head -3
		exit 1
	fi
done
TCK=$(getconf CLK_TCK)
URL=http://127.0.0.1:$NGINX_PORT/
ALLOC_ARGS=${EVERY:+--alloc-every $EVERY}

# recorder CONF OUT: starts luaprof on the master (tests/nginx.sh), sets REC.
recorder() {
	case $1 in
	b) nginx_recorder $2 -e cpu ${HZ:+-F $HZ} ;;
	c) nginx_recorder $2 -e alloc $ALLOC_ARGS ${HZ:+-F $HZ} ;;
	d) nginx_recorder $2 -e inuse $ALLOC_ARGS ${HZ:+-F $HZ} ;;
	esac || exit 1
}

# window CONF ROUND [stats]: one window; appends to $TMP/windows "CONF
# ROUND rps us_per_req rec_pct lost" (not with stats: then to $TMP/bpf
# "CONF prog runs_per_s ns_per_run" and $TMP/calls "CONF rps").
window() {
	local conf=$1 out=$TMP/nginx.$1.$2 w0 w1 r0=0 r1=0 t0 t1 secs rps req lost=-
	[ $conf != a ] && { recorder $conf $out; sleep $SETTLE; }
	[ -n "${3:-}" ] && { prog_names $REC; bpf_stats >$out.bpf0; }
	t0=${EPOCHREALTIME/./}
	w0=$(ticks_of $WORKERS); [ -n "$REC" ] && r0=$(ticks_of $REC)
	wrk -t2 -c$CONNS -d${WINDOW}s $URL >$out.wrk 2>&1
	w1=$(ticks_of $WORKERS); [ -n "$REC" ] && r1=$(ticks_of $REC)
	t1=${EPOCHREALTIME/./}
	secs=$(awk -v a=$t0 -v b=$t1 'BEGIN { print (b - a) / 1e6 }')
	[ -n "${3:-}" ] && bpf_stats >$out.bpf1
	if [ -n "$REC" ]; then
		nginx_recorder_stop
		lost=$($LUAPROF info $out.lp 2>/dev/null | awk '/^lost:/ { print $2; exit }')
		$LUAPROF info $out.lp 2>/dev/null | grep -E '^(events|lost|samples)' >$out.info
		rm -f $out.lp
	fi
	grep -q 'Socket errors\|Non-2xx' $out.wrk && echo "  $conf round $2: wrk: $(grep 'Socket errors\|Non-2xx' $out.wrk | tr '\n' ' ')"
	rps=$(awk '/^Requests\/sec:/ { print $2 }' $out.wrk)
	req=$(awk '/requests in/ { print $1 }' $out.wrk)
	if [ -n "${3:-}" ]; then
		awk -v c=$conf -v s=$secs 'NR == FNR { n[$1] = $2; t[$1] = $3; next }
			$1 ~ /^on_(alloc|lua_close)/ { d = $2 - n[$1]; printf "%s %s %.1f %.0f\n", c, $1, d / s, d ? ($3 - t[$1]) / d : 0 }' \
			$out.bpf0 $out.bpf1 >>$TMP/bpf
		echo "$conf ${rps:-0} ${req:-0} $secs" >>$TMP/calls
		return
	fi
	awk -v c=$conf -v r=$2 -v rps=${rps:-0} -v req=${req:-0} -v w=$((w1 - w0)) -v rc=$((r1 - r0)) \
		-v t=$TCK -v s=$secs -v lost=${lost:-?} 'BEGIN {
		printf "%s %s %.1f %.1f %.2f %s\n", c, r, rps, req ? 1e6 * w / t / req : 0, 100 * rc / t / s, lost }' >>$TMP/windows
}

MED='function med(x, n,    i, j, t) {
	for (i = 2; i <= n; i++) { t = x[i]; for (j = i - 1; j >= 1 && x[j] > t; j--) x[j + 1] = x[j]; x[j + 1] = t }
	return n % 2 ? x[(n + 1) / 2] : (x[n / 2] + x[n / 2 + 1]) / 2 }'
# ratio_table FILE CONFS NAMES FIRSTCOL NCOLS: per configuration, the
# median of each column (first: CONF, then ROUND, then NCOLS figures,
# then optional extra) over the rounds, as a ratio to the round's first
# configuration beside its median; fmt per column from FMTS.
ratio_table() {
	local file=$1 base=$2 conf=$3 name=$4 cols=$5
	awk -v base=$base -v c=$conf -v name="$name" -v cols="$cols" "$MED"'
		BEGIN { nc = split(cols, C, " ") }
		$1 == base { for (k = 3; k < 3 + nc; k++) a[$2, k] = $k }
		$1 == c { n++; for (k = 2; k <= NF; k++) W[n, k] = $k; last = NF }
		END {
			printf "  %-26s", name
			for (j = 1; j <= nc; j++) {
				k = j + 2
				for (i = 1; i <= n; i++) x[i] = W[i, k]
				m = med(x, n)
				if (C[j] == "plain") { printf " %10.2f", m; continue }
				if (c == base) { printf " %30.1f", m; continue }
				for (i = 1; i <= n; i++) { r = a[W[i, 2], k]; x[i] = r ? W[i, k] / r : 0 }
				lo = hi = x[1]; for (i = 2; i <= n; i++) { if (x[i] < lo) lo = x[i]; if (x[i] > hi) hi = x[i] }
				printf " %30s", sprintf("%.1f x%.3f [%.3f-%.3f]", m, med(x, n), lo, hi)
			}
			l = ""; for (i = 1; i <= n; i++) if ((i, 3 + nc) in W) l = l (i > 1 ? "," : "") W[i, 3 + nc]
			printf " %s\n", l }' $file
}
rotate() { # ROUND CONFS...: CONFS rotated by ROUND - 1
	local r=$1 i n
	shift
	n=$#
	local a=("$@")
	for ((i = 0; i < n; i++)); do echo -n "${a[$(((i + r - 1) % n))]} "; done
}

echo "alloc_nginx.sh: $(nproc) CPUs, $(uname -r); luaprof at ${HZ:-its default rate}, --alloc-every ${EVERY:-default (512k)};"
echo "  build/luaprof of $(date -ur build/luaprof +%FT%TZ), HEAD $(git log -1 --format=%h 2>/dev/null)$(git diff --quiet HEAD -- 2>/dev/null || echo " with uncommitted changes to: $(git diff --name-only HEAD | tr '\n' ' ')")"
echo "  samples/lua/allocs.lua: $(git diff --quiet HEAD -- samples/lua/allocs.lua 2>/dev/null && echo as committed || echo with uncommitted changes) ($(md5sum <$TMP/allocs.lua | cut -c1-8))"
echo "  private copies: $LJLIB/libluajit-5.1.so.2 (nginx), $TMP/luajit (the loop)"
echo "  load average before: $(cut -d' ' -f1-3 /proc/loadavg)"

# --- 1. nginx
if [[ " $PARTS " = *" nginx "* ]]; then
	wrk -t2 -c$CONNS -d3s $URL >/dev/null 2>&1 # the JIT compiles the handler's traces
	: >$TMP/windows
	: >$TMP/bpf
	: >$TMP/calls
	for r in $(seq $ROUNDS); do
		for conf in $(rotate $r a b c d); do window $conf $r; done
	done
	sysctl -qw kernel.bpf_stats_enabled=1
	window c 0 stats
	window d 0 stats
	sysctl -qw kernel.bpf_stats_enabled=$old_stats
	echo
	echo "1. nginx + lua (2 workers, JIT on, app.lua) under wrk -t2 -c$CONNS, $ROUNDS rounds of $WINDOW s windows, order rotated"
	printf '  %-26s %30s %30s %10s %s\n' configuration "req/s" "worker CPU us/req" "rec %CPU" lost
	for conf in a b c d; do
		case $conf in
		a) name="(a) no profiler" ;; b) name="(b) -e cpu" ;; c) name="(c) -e alloc" ;; d) name="(d) -e inuse" ;;
		esac
		ratio_table $TMP/windows a $conf "$name" "ratio ratio plain"
	done
	echo "  (a): medians over the rounds; (b)-(d): the median over the rounds of each round's ratio"
	echo "  to its own (a) [lowest-highest]; rec %CPU: of one CPU, median; lost: per recording (info)"
	echo "  per window: conf round req/s us/req rec%CPU lost:"
	sort -k2,2n -k1,1 $TMP/windows | sed 's/^/    /'
	echo "  probe hits (kernel.bpf_stats_enabled=1 for these two windows only, not in the ratios):"
	while read -r conf rps req secs; do
		awk -v c=$conf -v rps=$rps '$1 == c { printf "    (%s) %-16s %12.0f runs/s %7.0f ns/run %8.1f per request\n", c, $2, $3, $4, rps ? $3 / rps : 0 }' $TMP/bpf
		echo "    ($conf) req/s $rps"
	done <$TMP/calls
	# Per probe hit: the median over the rounds of (c) - (a), (d) - (a)
	# worker CPU per request, over the hits per request of the extra windows.
	awk "$MED"'
		FILENAME == F1 { runs[$1, $2] = $3; next }
		FILENAME == F2 { rps[$1] = $2; next }
		{ us[$1, $2] = $4; if ($1 == "a") R[++nr] = $2 }
		END {
			for (k = 1; k <= 2; k++) {
				c = k == 1 ? "c" : "d"; n = 0
				for (i = 1; i <= nr; i++) if ((c, R[i]) in us) x[++n] = us[c, R[i]] - us["a", R[i]]
				d[c] = n ? med(x, n) : 0
			}
			ac = rps["c"] ? runs["c", "on_alloc"] / rps["c"] : 0
			ad = rps["d"] ? runs["d", "on_alloc"] / rps["d"] : 0
			rd = rps["d"] ? runs["d", "on_alloc_return"] / rps["d"] : 0
			pc = ac ? d["c"] / ac : 0
			printf "  per probe hit (the median over the rounds of the extra worker CPU per request):\n"
			printf "    (c) %+.0f us a request, %.0f allocator calls: %.2f us a call\n", d["c"], ac, pc
			if (rd) printf "    (d) %+.0f us a request, less %.0f calls at %.2f us: %.2f us a malloc/realloc return (%.0f a request)\n",
				d["d"], ad, pc, (d["d"] - ad * pc) / rd, rd
		}' F1=$TMP/bpf F2=$TMP/calls $TMP/bpf $TMP/calls $TMP/windows
	for f in $TMP/nginx.[cd].1.info; do
		[ -e $f ] && echo "  $(basename $f .info): $(tr '\n' ' ' <$f)"
	done
fi

# --- 2. The allocation loop.
loop_run() { # CONF ROUND: appends "CONF ROUND bytes_per_cpu_s cpu_s bytes" to $TMP/loop
	local conf=$1 out=$TMP/loop.$1.$2 kind
	local cmd="TIMEFORMAT='%3U %3S'; { time $TMP/luajit $TMP/allocs.lua $LOOP_SECONDS >$out.bytes; } 2>$out.time"
	case $conf in
	none) bash -c "$cmd" ;;
	*) kind=$conf
		$LUAPROF record -e $kind $([ $conf != cpu ] && echo $ALLOC_ARGS) ${HZ:+-F $HZ} -o $out.lp -- bash -c "$cmd" 2>$out.err
		$LUAPROF info $out.lp 2>/dev/null | grep -E '^(events|lost|samples)' >$out.info
		rm -f $out.lp ;;
	esac
	awk -v c=$conf -v r=$2 'NR == FNR { cpu = $1 + $2; next } { b = $1 + $2 + $3 }
		END { printf "%s %s %.0f %.3f %.0f\n", c, r, cpu ? b / cpu : 0, cpu, b }' $out.time $out.bytes >>$TMP/loop
}
if [[ " $PARTS " = *" loop "* ]]; then
	: >$TMP/loop
	for r in $(seq $ROUNDS); do
		for conf in $(rotate $r none cpu alloc inuse); do loop_run $conf $r; done
	done
	echo
	echo "2. samples/lua/allocs.lua, $LOOP_SECONDS s of its CPU per run ($TMP/luajit, JIT on), $ROUNDS rounds, order rotated"
	printf '  %-26s %30s %30s\n' configuration "MB allocated per CPU s" "CPU s of the run"
	for conf in none cpu alloc inuse; do
		awk '{ print $1, $2, $3 / 1e6, $4 }' $TMP/loop >$TMP/loop.mb
		ratio_table $TMP/loop.mb none $conf "$conf" "ratio plain"
	done
	echo "  per run: conf round bytes/CPU-s CPU-s bytes:"
	sort -k2,2n -k1,1 $TMP/loop | sed 's/^/    /'
	for f in $TMP/loop.alloc.1.info $TMP/loop.inuse.1.info; do
		[ -e $f ] && echo "  $(basename $f .info): $(tr '\n' ' ' <$f)"
	done
fi

# --- 3. Setup.
setup_run() { # KIND ROUND: appends "KIND ROUND setup_cpu_ms setup_wall_ms probed_ms" to $TMP/setup
	local kind=$1 out=$TMP/setup.$1.$2 t0
	t0=${EPOCHREALTIME/./}
	$LUAPROF record -v -d $SETUP_SECONDS -e $kind -p $NGINX_MASTER -o $out.lp \
		2> >(while IFS= read -r l; do echo "${EPOCHREALTIME/./} $l"; done >$out.err) >/dev/null
	sleep 0.2 # the stamping reader's last lines
	rm -f $out.lp
	awk -v k=$kind -v r=$2 -v t0=$t0 '
		/recorder CPU: setup/ { for (i = 1; i <= NF; i++) if ($i == "setup") { c = $(i + 1); w = $(i + 4) } }
		/allocator probed at/ && !p { p = ($1 - t0) / 1e3 }
		END { printf "%s %s %s %s %s\n", k, r, c, w, p ? sprintf("%.1f", p) : "-" }' $out.err >>$TMP/setup
}
if [[ " $PARTS " = *" setup "* ]]; then
	: >$TMP/setup
	wrk -t2 -c$CONNS -d$((ROUNDS * 3 * (SETUP_SECONDS + 8) + 30))s $URL >/dev/null 2>&1 &
	WRK=$!
	sleep 1
	for r in $(seq $ROUNDS); do
		for kind in $(rotate $r cpu alloc inuse); do setup_run $kind $r; done
	done
	kill $WRK 2>/dev/null; wait $WRK 2>/dev/null; WRK=
	echo
	echo "3. setup: record -v -d $SETUP_SECONDS -p MASTER, nginx under wrk -t2 -c$CONNS, $ROUNDS rounds, order rotated"
	printf '  %-8s %16s %16s %26s\n' kind "setup CPU ms" "setup wall ms" "start to allocator probed ms"
	for kind in cpu alloc inuse; do
		awk -v k=$kind "$MED"'
			$1 == k { n++; c[n] = $3; w[n] = $4; p[n] = $5; cl = cl " " $3; wl = wl " " $4; pl = pl " " $5 }
			END { m1 = med(c, n); m2 = med(w, n); m3 = p[1] == "-" ? "-" : sprintf("%.1f", med(p, n))
				printf "  %-8s %16.1f %16.1f %26s   (per round:%s /%s /%s)\n", k, m1, m2, m3, cl, wl, pl }' $TMP/setup
	done
fi
echo
echo "  load average after: $(cut -d' ' -f1-3 /proc/loadavg)"

# What the recorders of parts 1 and 2 said (no -v), but their status
# lines; numbers as N, each distinct line once with its count.
echo "recorders' messages, parts 1 and 2 (count, line):"
cat $TMP/nginx.*.err $TMP/loop.*.err 2>/dev/null | tr '\r' '\n' |
	grep -v -E '^\s*$|recording' | sed -E 's/[0-9]+(\.[0-9]+)?/N/g' | sort | uniq -c | sort -rn | head -30 | sed 's/^/  /'
n=$(grep -c '\[\(error\|crit\|alert\|emerg\)\]' $NGINX_PREFIX/logs/error.log)
echo "nginx error.log: $n lines of level error and above"
grep -m5 '\[\(error\|crit\|alert\|emerg\)\]' $NGINX_PREFIX/logs/error.log | cut -c1-240 | sed 's/^/  /'

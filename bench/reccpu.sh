#!/usr/bin/env bash
# bench/reccpu.sh - the recorder's own CPU while it records, in three
# parts: setup (until it says "recording": BPF load and verification,
# unwind tables, kernel symbols), sampling (while the target runs: CPU
# per second, per sample, and sleeps per second, each sleep a wake-up
# later), and finishing (after the last sample: the last chunk, the
# symbols, source lines and Lua sources embedded, the footer).
# The workload is bench/nginx.sh's: nginx + lua module (JIT on, 2
# workers) under wrk on loopback, here kept loaded for the whole run so
# that every recorder meets the same steady state; RATE Hz (default 999),
# ROUNDS rounds (default 3) of SECONDS_PER_RUN seconds (default 10).
# LUAPROF_BASE=path/to/luaprof adds another build in the same rounds,
# interleaved: a change's before and after under the same load.
#
# How it measures, from outside, so that any build can be measured:
# setup is the CPU of the recorder's threads (/proc/PID/task/*/schedstat,
# in ns) when "recording" appears; sampling is what they add from 2 s
# after that (past the first flush, which reads the symbols and DWARF of
# the objects hit: a cost paid once) to 0.5 s before the deadline, with
# their voluntary context switches (sleeps) in the same window; the whole
# run is bash's `time` (user + system, ms); finishing is the whole minus
# setup minus sampling at its steady rate over the recording's length, so
# it holds the first flush's one-time reads too.  A thread that exits
# within the window (the flush sidekick's, one per flush) is not counted
# in it.  The sampler's own time (BPF) runs in the target's context and
# is not the recorder's.  (record -v says the same from inside, for one
# recording: "recorder CPU".)
# Prints the medians over rounds, and the load average (other work on the
# machine makes every figure larger: say it with them).
# Needs root and tests/deps.sh's packages.
set -u # not -e: the nginx helpers poll with commands that fail until ready
cd "$(dirname "$0")/.."
ROUNDS=${ROUNDS:-3}
SECONDS_PER_RUN=${SECONDS_PER_RUN:-10}
RATE=${RATE:-999}
LUAPROF=$PWD/build/luaprof
LUAPROF_BASE=${LUAPROF_BASE:-}
. tests/lib.sh
. tests/nginx.sh
tests/deps.sh
WRK=
trap '[ -n "$WRK" ] && kill $WRK 2>/dev/null; nginx_stop >/dev/null 2>&1; cleanup' EXIT
make --no-print-directory -s build/luaprof
NGINX_JIT=on nginx_start || exit 1
SETTINGS=luaprof
[ -n "$LUAPROF_BASE" ] && SETTINGS+=" base"
# wrk for the whole run, then some (killed at exit).
wrk -t2 -c8 -d$((ROUNDS * (SECONDS_PER_RUN + 6) * 2 + 30))s \
	"http://127.0.0.1:$NGINX_PORT/" >$TMP/wrk.out 2>&1 &
WRK=$!
sleep 1

# threads_ns PID: the CPU time of PID's live threads, in ns.
threads_ns() {
	cat /proc/$1/task/*/schedstat 2>/dev/null | awk '{ s += $1 } END { printf "%d", s }'
}
# sleeps PID: the voluntary context switches of PID's live threads.
sleeps() {
	cat /proc/$1/task/*/status 2>/dev/null |
		awk '/^voluntary_ctxt_switches/ { s += $2 } END { print s + 0 }'
}
now_ns() { date +%s%N; }
median() { tr ' ' '\n' | grep . | sort -g | awk '{ v[NR] = $1 } END { print NR ? v[int((NR + 1) / 2)] : 0 }'; }

declare -A SETUP SAMPLING PERSAMPLE WAKE FINISH TOTAL SAMPLES LOST
run() { # setting round
	local set=$1 r=$2 out=$TMP/$1-$2 lp=$LUAPROF rec t0 t1 c0 c1 w0 w1 c_rec total n
	local TIMEFORMAT='%3U %3S'
	[ $set = base ] && lp=$LUAPROF_BASE
	{ time $lp record -F $RATE -d $SECONDS_PER_RUN -p $NGINX_MASTER \
		-o $out.lp >/dev/null 2>$out.err; } 2>$out.time &
	rec=$!
	wait_for eval "grep -q recording $out.err 2>/dev/null || ! kill -0 $rec 2>/dev/null"
	# The recorder is the subshell's child.
	pid=$(pgrep -P $rec -f "record -F" | head -1)
	[ -n "$pid" ] || pid=$rec
	c_rec=$(threads_ns $pid)
	sleep 2
	t0=$(now_ns) c0=$(threads_ns $pid) w0=$(sleeps $pid)
	sleep $(awk -v d=$SECONDS_PER_RUN 'BEGIN { print d - 2.5 }')
	t1=$(now_ns) c1=$(threads_ns $pid) w1=$(sleeps $pid)
	wait $rec
	total=$(awk '{ printf "%d", ($1 + $2) * 1e9 }' $out.time)
	n=$(trace_samples $out.lp $lp)
	LOST[$set]+=" $($lp info $out.lp | awk '/^lost:/ { print $2; exit }')"
	SAMPLES[$set]+=" $n"
	# sampling: CPU per second of wall clock, per sample, sleeps/s
	awk -v c0=$c0 -v c1=$c1 -v t0=$t0 -v t1=$t1 -v w0=$w0 -v w1=$w1 \
		-v n=$n -v d=$SECONDS_PER_RUN -v total=$total -v c_rec=$c_rec '
	BEGIN {
		rate = (c1 - c0) / (t1 - t0)         # CPU s per s
		per = n ? rate * d * 1e9 / n / 1e3 : 0 # us per sample (ns/1e3)
		finish = total - c_rec - rate * d * 1e9
		printf "%.1f %.3f %.2f %.1f %.1f %.1f\n", c_rec / 1e6, 100 * rate, per,
			(w1 - w0) / ((t1 - t0) / 1e9), finish / 1e6, total / 1e6
	}' >$out.fig
	read -r a b c d e f <$out.fig
	SETUP[$set]+=" $a" SAMPLING[$set]+=" $b" PERSAMPLE[$set]+=" $c"
	WAKE[$set]+=" $d" FINISH[$set]+=" $e" TOTAL[$set]+=" $f"
}

echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
for r in $(seq $ROUNDS); do
	for set in $SETTINGS; do
		run $set $r
	done
done
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
printf '%-8s %9s %6s %9s %13s %11s %9s %10s %9s\n' build samples lost "setup ms" \
	"sampling %CPU" "us/sample" "sleeps/s" "finish ms" "total ms"
for set in $SETTINGS; do
	printf '%-8s %9s %6s %9s %13s %11s %9s %10s %9s\n' $set \
		$(echo ${SAMPLES[$set]} | median) $(echo ${LOST[$set]} | median) \
		$(echo ${SETUP[$set]} | median) $(echo ${SAMPLING[$set]} | median) \
		$(echo ${PERSAMPLE[$set]} | median) $(echo ${WAKE[$set]} | median) \
		$(echo ${FINISH[$set]} | median) $(echo ${TOTAL[$set]} | median)
done
echo "(medians of $ROUNDS rounds of $SECONDS_PER_RUN s at $RATE Hz; samples per round;"
echo " sampling %CPU is of one CPU, sleeps/s counts every thread of the recorder)"

#!/usr/bin/env bash
# bench/ticks.sh - what one tick costs on this machine: the floor under
# any sampler's overhead, whatever it does in the tick.
#
# samples/fixed_work does a fixed amount of work in registers, pinned to
# the last CPU, once unprofiled and once under a setting, in alternating
# order, ROUNDS times per setting.  Its loop touches no memory, so a tick
# slows it only by the tick's own time on its CPU: the interrupt and its
# timer, the sampler's program, and on a virtual machine the exits to the
# hypervisor; not by the caches a tick disturbs, which bench/nginx.sh
# measures with the rest.  Per pair, the extra wall time over the ticks
# the profiled run took (HZ a second) is the cost of one tick, in us;
# times HZ, the share of a CPU it costs at that rate.  The settings, at
# each rate of HZS:
#   ticks-HZ     perf record -C CPU -e cpu-clock -F HZ without stacks, on
#                the work's CPU as luaprof's events are (one per CPU): the
#                tick and perf's writing of a sample of a few fields
#   filtered-HZ  luaprof record -p of another process: every tick of the
#                work's CPU runs luaprof's sampler, which sees a task that
#                is not a target and returns (what luaprof costs on the
#                CPUs its targets do not run on)
#   luaprof-HZ   luaprof record -- the work: every tick takes a whole
#                sample of it (a C program's few frames, no Lua)
# ROUNDS (default 20) changes the pairs per setting, HZS the rates
# (default 999: a second's run at 99 Hz takes 99 ticks, and a millisecond
# of noise is then 10 us a tick; HZS="99 999" WORK=1e10 measures both),
# WORK the loop's iterations (1e9: about a second here).  Needs root and
# perf (linux-perf).  Figures are printed, never asserted.
set -u
cd "$(dirname "$0")/.."
ROUNDS=${ROUNDS:-20}
HZS=${HZS:-999}
WORK=${WORK:-1000000000}
LUAPROF=$PWD/build/luaprof
FIXED=$PWD/build/samples/fixed_work
CPU=$(($(nproc) - 1))
. tests/lib.sh
command -v perf >/dev/null || DEBIAN_FRONTEND=noninteractive apt-get install -y -qq linux-perf >/dev/null
[ -x "$FIXED" ] && [ -x "$LUAPROF" ] || { echo "ticks.sh: run make first" >&2; exit 2; }
trap cleanup EXIT

# work [COMMAND...]: runs the work on $CPU under COMMAND, prints its wall s.
work() {
	"$@" taskset -c $CPU "$FIXED" $WORK 2>/dev/null | awk '/^fixed_work:/ { print $2 }'
}

# filtered HZ: the work beside a luaprof that records another process.
filtered() {
	local rec t other
	# (Not on this $(...)'s stdout, which would wait for them.)
	sleep 600 >/dev/null &
	other=$!
	CLEANUP_PIDS+=($other)
	"$LUAPROF" record -F $1 -p $other -o $TMP/f.lp >/dev/null 2>$TMP/f.err &
	rec=$!
	CLEANUP_PIDS+=($rec)
	wait_for eval "grep -q recording $TMP/f.err || ! kill -0 $rec 2>/dev/null"
	grep -q recording $TMP/f.err || { echo "ticks.sh: luaprof did not start:" >&2; cat $TMP/f.err >&2; }
	t=$(work)
	kill -INT $rec 2>/dev/null
	wait $rec 2>/dev/null
	kill $other 2>/dev/null
	echo $t
}

# profiled SETTING: one run of the work under SETTING, its wall s.
profiled() {
	local hz=${1##*-}
	rm -f $TMP/f.lp $TMP/l.lp # (the check below must not read the last pair's)
	case $1 in
	ticks-*) work perf record -q -C $CPU -e cpu-clock -F $hz -o $TMP/p.data -- ;;
	filtered-*) filtered $hz ;;
	luaprof-*) work "$LUAPROF" record -q -F $hz -o $TMP/l.lp -- ;;
	esac
}

echo "ticks.sh: samples/fixed_work ($WORK iterations) on CPU $CPU of $(nproc);" \
	"$ROUNDS pairs (unprofiled, profiled; order alternated) per setting"
echo "  load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
start=$SECONDS
for hz in $HZS; do
	for set in ticks-$hz filtered-$hz luaprof-$hz; do
		for r in $(seq $ROUNDS); do
			if [ $((r % 2)) = 1 ]; then
				plain=$(work); prof=$(profiled $set)
			else
				prof=$(profiled $set); plain=$(work)
			fi
			# A setting that did not sample would read as free.
			case $set in
			luaprof-*) [ "$(trace_samples $TMP/l.lp)" -gt 0 ] 2>/dev/null || prof= ;;
			filtered-*) [ -s $TMP/f.lp ] || prof= ;;
			esac
			[ -n "$prof" ] || { echo "ticks.sh: $set did not record; pair left out" >&2; continue; }
			echo "$set $plain $prof"
		done
	done
done >$TMP/runs
echo "  load average after: $(cut -d' ' -f1-3 /proc/loadavg); $((SECONDS - start)) s"
echo
# Per pair: us per tick = extra wall time / (the profiled run's s * HZ).
awk '$2 > 0 && $3 > 0 { split($1, k, "-"); hz = k[2]
	print $1, 1e6 * ($3 - $2) / ($3 * hz) }' $TMP/runs | awk -f bench/pairstat.awk >$TMP/stats
unprof=$(awk '{ print $2 }' $TMP/runs | sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }')
echo "unprofiled run: median $unprof s"
printf '%-13s %5s | %-33s %-33s %8s | %s\n' setting pairs "us per tick: mean [95%]" "median [95%]" sd "% of a CPU at HZ"
awk '{ hz = $1; sub(/.*-/, "", hz)
	mlo = $8 == "-" ? "" : sprintf(" [%6.2f, %6.2f]", $8, $9)
	lo = $4 == "-" ? "" : sprintf(" [%6.2f, %6.2f]", $4, $5)
	printf "%-13s %5d | %-33s %-33s %8s | %6.2f\n", $1, $2, sprintf("%6.2f%s", $3, lo),
		sprintf("%6.2f%s", $6, mlo), $7, $3 * hz / 1e4 }' $TMP/stats
echo
echo "us per tick: the work's extra wall time under the setting over the ticks"
echo "it took, pair by pair (the work touches no memory: the tick's own time,"
echo "not the caches it disturbs).  ticks: perf's cpu-clock tick without"
echo "stacks; filtered: luaprof's sampler on a CPU running no target;"
echo "luaprof: a whole sample of a C program each tick."

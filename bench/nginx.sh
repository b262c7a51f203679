#!/usr/bin/env bash
# bench/nginx.sh - the OpenResty-style workload: nginx + lua module (JIT
# on, 2 workers) under wrk on loopback.  For each setting (unprofiled,
# luaprof and perf record -g at 99 and 999 Hz, recording the master with
# its workers) it runs ROUNDS rounds of wrk for SECONDS each, interleaved
# so that drift in the machine hits every setting alike, and prints the
# median requests/s and its loss against unprofiled, bytes/sample, and
# luaprof's BPF run time per tick (kernel.bpf_stats_enabled, set for the
# run).  Needs root, perf (linux-perf) and tests/deps.sh's packages.
set -u # not -e: the nginx helpers poll with commands that fail until ready
cd "$(dirname "$0")/.."
ROUNDS=${ROUNDS:-3}
SECONDS_PER_RUN=${SECONDS_PER_RUN:-5}
LUAPROF=$PWD/build/luaprof
. tests/lib.sh
. tests/nginx.sh
tests/deps.sh
command -v perf >/dev/null || DEBIAN_FRONTEND=noninteractive apt-get install -y -qq linux-perf >/dev/null
old_stats=$(sysctl -n kernel.bpf_stats_enabled)
sysctl -qw kernel.bpf_stats_enabled=1
trap 'sysctl -qw kernel.bpf_stats_enabled=$old_stats; nginx_stop >/dev/null 2>&1; cleanup' EXIT

NGINX_JIT=on nginx_start
declare -A RPS BYTES SAMPLES BPFNS
run() { # setting round
	local set=$1 r=$2 out=$TMP/$1-$2 rec=
	case $set in
	luaprof-*) $LUAPROF record -v -F ${set#luaprof-} -d $((SECONDS_PER_RUN + 1)) \
			-p $NGINX_MASTER -o $out.lp >/dev/null 2>$out.err & rec=$! ;;
	perf-*) perf record -q -g -F ${set#perf-} -o $out.data \
			-p $NGINX_MASTER,$(nginx_workers | paste -sd,) -- sleep $((SECONDS_PER_RUN + 1)) \
			>/dev/null 2>&1 & rec=$! ;;
	esac
	[ -n "$rec" ] && sleep 0.5 # let the recorder attach before the load starts
	nginx_load $SECONDS_PER_RUN >$out.wrk 2>&1
	[ -n "$rec" ] && wait $rec
	RPS[$set]+=" $(awk '/^Requests\/sec:/ { print $2 }' $out.wrk)"
	case $set in
	luaprof-*)
		SAMPLES[$set]+=" $($LUAPROF info $out.lp | awk '/^samples/ { print $2; exit }')"
		BYTES[$set]+=" $(stat -c %s $out.lp)"
		BPFNS[$set]+=" $(awk '/BPF sampler:/ { print $(NF-3) }' $out.err)" ;;
	perf-*)
		SAMPLES[$set]+=" $(perf script -i $out.data -F pid 2>/dev/null | wc -l)"
		BYTES[$set]+=" $(stat -c %s $out.data)" ;;
	esac
}
median() { tr ' ' '\n' | grep . | sort -n | awk '{ v[NR] = $1 } END { print NR ? v[int((NR + 1) / 2)] : 0 }'; }
sum() { tr ' ' '\n' | awk '{ s += $1 } END { print s + 0 }'; }

SETTINGS="none luaprof-99 perf-99 luaprof-999 perf-999"
for r in $(seq $ROUNDS); do
	for set in $SETTINGS; do
		run $set $r
	done
done
base=$(echo ${RPS[none]} | median)
printf '%-13s %10s %8s %9s %13s %12s\n' setting "req/s" loss samples bytes/sample "BPF ns/run"
for set in $SETTINGS; do
	rps=$(echo ${RPS[$set]} | median)
	loss=$(awk -v a=$rps -v b=$base 'BEGIN { printf "%.1f%%", b ? 100 * (b - a) / b : 0 }')
	s=$(echo ${SAMPLES[$set]:-0} | sum)
	b=$(echo ${BYTES[$set]:-0} | sum)
	bps=$(awk -v b=$b -v s=$s 'BEGIN { printf "%.1f", s ? b / s : 0 }')
	ns=-
	[ -n "${BPFNS[$set]:-}" ] && ns=$(echo ${BPFNS[$set]} | median)
	printf '%-13s %10s %8s %9s %13s %12s\n' $set $rps $loss $s $bps $ns
done
echo
echo "BPF ns/run averages every tick of every CPU, the ones the filter drops too"
echo "(the kernel's bpf_stats give totals, not a median)."

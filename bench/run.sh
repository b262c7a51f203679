#!/usr/bin/env bash
# bench/run.sh - `make bench`: luaprof beside `perf record -g`, on the same
# workload in the same run.  For each rate (99 and 999 Hz) and each tool it
# records a running samples/hot for DURATION seconds (-p, so the recorder
# is measured alone) and prints samples, bytes/sample and the recorder's
# CPU time as a share of the recording's wall time, with luaprof/perf
# ratios, and the BPF sampler's own run time per tick
# (kernel.bpf_stats_enabled, set for the run).  Needs root and perf (Debian linux-perf).
set -eu
cd "$(dirname "$0")/.."
DURATION=${DURATION:-10}
LUAPROF=build/luaprof
TMP=$(mktemp -d /tmp/luaprof-bench.XXXXXX)
trap 'kill $hot 2>/dev/null; rm -rf "$TMP"' EXIT

command -v perf >/dev/null || {
	echo "bench: installing linux-perf" >&2
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq linux-perf >/dev/null
}

build/samples/hot $((DURATION * 6 + 10)) &
hot=$!

# cpu_of COMMAND... : runs it, prints "user+sys seconds" of it and children.
# (the command's stderr is kept in $TMP/rec.err).
cpu_of() {
	local TIMEFORMAT='%U %S'
	{ time "$@" >/dev/null 2>$TMP/rec.err; } 2>&1 | awk '{ print $1 + $2 }'
}

old_stats=$(sysctl -n kernel.bpf_stats_enabled)
sysctl -qw kernel.bpf_stats_enabled=1
trap 'sysctl -qw kernel.bpf_stats_enabled=$old_stats; kill $hot 2>/dev/null; rm -rf "$TMP"' EXIT

printf '%-22s %8s %12s %12s %10s\n' "recorder" "samples" "bytes" "bytes/sample" "CPU %"
declare -A BPS CPU BPFNS
for hz in 99 999; do
	lp_cpu=$(cpu_of $LUAPROF record -v -F $hz -d $DURATION -p $hot -o $TMP/b.lp)
	BPFNS[$hz]=$(awk '/BPF sampler:/ { print $(NF-3), $(NF-5) }' $TMP/rec.err)
	lp_samples=$($LUAPROF info $TMP/b.lp | awk '/^samples/ { print $2; exit }')
	lp_bytes=$(stat -c %s $TMP/b.lp)
	pf_cpu=$(cpu_of perf record -q -g -F $hz -p $hot -o $TMP/perf.data -- sleep $DURATION)
	pf_samples=$(perf script -i $TMP/perf.data -F pid 2>/dev/null | wc -l)
	pf_bytes=$(stat -c %s $TMP/perf.data)
	for tool in luaprof perf; do
		if [ $tool = luaprof ]; then s=$lp_samples b=$lp_bytes c=$lp_cpu
		else s=$pf_samples b=$pf_bytes c=$pf_cpu; fi
		bps=$(awk -v b=$b -v s=$s 'BEGIN { printf "%.1f", s ? b / s : 0 }')
		cpu=$(awk -v c=$c -v d=$DURATION 'BEGIN { printf "%.2f", 100 * c / d }')
		BPS[$tool$hz]=$bps CPU[$tool$hz]=$cpu
		printf '%-22s %8s %12s %12s %10s\n' "$tool -F $hz" $s $b $bps $cpu
	done
done
echo
for hz in 99 999; do
	set -- ${BPFNS[$hz]:-"? ?"}
	echo "luaprof BPF program at $hz Hz: $1 ns per run over $2 runs (every CPU tick, target or not)"
done
echo
echo "luaprof / perf -g ratios (lower is better for luaprof):"
for hz in 99 999; do
	awk -v a=${BPS[luaprof$hz]} -v b=${BPS[perf$hz]} -v c=${CPU[luaprof$hz]} -v d=${CPU[perf$hz]} -v hz=$hz \
		'BEGIN { cpu = (d > 0) ? sprintf("%.2f", c / d) : "n/a (perf used no measurable CPU)";
			printf "  %4d Hz: bytes/sample %.3f, recorder CPU %s\n", hz, (b > 0) ? a / b : 0, cpu }'
done

#!/usr/bin/env bash
# bench/setup.sh - the time from `record` starting to its first sample:
# the command record launches runs only once the sampler is loaded and
# attached, so the time from record's start to the command's first
# instruction is the setup a user waits through (most of it the kernel
# verifying the BPF sampler).  Measured idle and beside LOAD busy loops
# (default 4, on this machine's cores), ROUNDS rounds each (default 5),
# medians.  LUAPROF_BASE=path/to/luaprof adds another build in the same
# rounds, interleaved: a change's before and after under the same load.
# Prints, per build and load: wall-clock ms to the first sample, and the
# recorder's CPU ms over the same span (user + system, from /proc).
# Needs root.
set -u
cd "$(dirname "$0")/.."
ROUNDS=${ROUNDS:-5}
LOAD=${LOAD:-4}
LUAPROF=$PWD/build/luaprof
LUAPROF_BASE=${LUAPROF_BASE:-}
TMP=$(mktemp -d /tmp/luaprof-setup.XXXXXX)
trap 'kill $(jobs -p) 2>/dev/null; rm -rf $TMP' EXIT

# one BUILD : "wall_ms cpu_ms" of one recording of a command that writes
# the time it started at (date +%s%N, as t0 was taken).
one() {
	local t0 t1
	t0=$(date +%s%N)
	/usr/bin/time -f '%U %S' -o $TMP/time "$1" record -q -o $TMP/x.lp -- \
		sh -c 'date +%s%N >'"$TMP/started" 2>/dev/null
	t1=$(cat $TMP/started)
	awk -v a="$t0" -v b="$t1" '{ printf "%.0f %.0f\n", (b - a) / 1e6, ($1 + $2) * 1000 }' $TMP/time
}

median() { sort -n | awk '{ v[NR] = $1 } END { print NR ? v[int((NR + 1) / 2)] : "-" }'; }

builds=("$LUAPROF")
[ -n "$LUAPROF_BASE" ] && builds+=("$LUAPROF_BASE")
printf '%-40s %5s %10s %10s\n' build load "wall ms" "CPU ms"
for load in 0 $LOAD; do
	pids=()
	for ((i = 0; i < load; i++)); do
		(while :; do :; done) &
		pids+=($!)
	done
	sleep 1
	for i in "${!builds[@]}"; do : >$TMP/$i.$load; done
	for ((r = 0; r < ROUNDS; r++)); do
		for i in "${!builds[@]}"; do
			one "${builds[$i]}" >>$TMP/$i.$load
		done
	done
	for i in "${!builds[@]}"; do
		printf '%-40s %5s %10s %10s\n' "${builds[$i]}" "$load" \
			"$(cut -d' ' -f1 $TMP/$i.$load | median)" "$(cut -d' ' -f2 $TMP/$i.$load | median)"
	done
	[ ${#pids[@]} -gt 0 ] && kill "${pids[@]}" 2>/dev/null
	wait "${pids[@]}" 2>/dev/null
done
echo "# load average now: $(cut -d' ' -f1-3 /proc/loadavg)"

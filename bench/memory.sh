#!/usr/bin/env bash
# bench/memory.sh - the recorder's memory: its peak resident set (max RSS,
# as GNU time reads it: everything it maps, the BPF maps included) while
# recording one small target, a LuaJIT program (samples/lua/abc.lua,
# CPU-bound) at 999 Hz for DURATION seconds (default 120), beside `perf
# record -g` on the same process; and luaprof's own account of the BPF
# maps it sized (record -v).  Bytes are not noisy: one run of each.
# LUAPROF_BASE=path/to/luaprof adds another build's figures (main's, say)
# on the same target, for a before/after.
# Needs root and perf (Debian linux-perf).
set -eu
cd "$(dirname "$0")/.."
DURATION=${DURATION:-120}
RATE=${RATE:-999}
LUAPROF=build/luaprof
LUAPROF_BASE=${LUAPROF_BASE:-}
TMP=$(mktemp -d /tmp/luaprof-bench-mem.XXXXXX)
target=
trap '[ -n "$target" ] && kill $target 2>/dev/null; rm -rf "$TMP"' EXIT

command -v perf >/dev/null || {
	echo "bench: installing linux-perf" >&2
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq linux-perf >/dev/null
}
make --no-print-directory -s build/luaprof
luajit samples/lua/abc.lua $((3 * DURATION + 60)) &
target=$!

# maxrss COMMAND...: runs it, prints its peak RSS in KiB.
maxrss() {
	/usr/bin/time -o "$TMP/time" -f '%M' "$@" >/dev/null 2>"$TMP/err"
	cat "$TMP/time"
}

# luaprof_run BINARY NAME: records with it, prints its row of the table.
luaprof_run() {
	local kib samples lost

	kib=$(maxrss $1 record -v -F $RATE -d $DURATION -p $target -o $TMP/t.lp)
	samples=$($1 info $TMP/t.lp | awk '/^samples/ { print $2; exit }')
	lost=$($1 info $TMP/t.lp | awk '/^lost:/ { print $2; exit }')
	grep -E "BPF maps:|native unwind: [0-9]+ objects" "$TMP/err" |
		sed "s/^luaprof record: /  $2: /" >&2
	printf '%-10s %10s %12.1f %8s\n' "$2" "$samples" "$(echo "$kib / 1024" | bc -l)" "$lost"
	rm -f $TMP/t.lp
}
rows=$(luaprof_run $LUAPROF luaprof)
[ -n "$LUAPROF_BASE" ] && rows+=$'\n'$(luaprof_run $LUAPROF_BASE base)
pf=$(maxrss perf record -q -g -F $RATE -p $target -o $TMP/p.data -- sleep $DURATION)
pf_samples=$(perf script -i $TMP/p.data -F pid 2>/dev/null | wc -l)
printf '%-10s %10s %12s %8s\n' recorder samples "max RSS MiB" lost
echo "$rows"
printf '%-10s %10s %12.1f %8s\n' "perf -g" "$pf_samples" "$(echo "$pf / 1024" | bc -l)" -
echo "(one LuaJIT process, $RATE Hz, $DURATION s)"

#!/usr/bin/env bash
# bench/memory.sh - the recorder's memory: its peak resident set (max RSS,
# as GNU time reads it: everything it maps, the BPF maps included) while
# recording one small target, a LuaJIT program (samples/lua/abc.lua,
# CPU-bound) at 999 Hz for DURATION seconds (default 120), beside `perf
# record -g` on the same process; and luaprof's own account of the BPF
# maps it sized (record -v).  Bytes are not noisy: one run of each.
# Needs root and perf (Debian linux-perf).
set -eu
cd "$(dirname "$0")/.."
DURATION=${DURATION:-120}
RATE=${RATE:-999}
LUAPROF=build/luaprof
TMP=$(mktemp -d /tmp/luaprof-bench-mem.XXXXXX)
target=
trap '[ -n "$target" ] && kill $target 2>/dev/null; rm -rf "$TMP"' EXIT

command -v perf >/dev/null || {
	echo "bench: installing linux-perf" >&2
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq linux-perf >/dev/null
}
make --no-print-directory -s build/luaprof
luajit samples/lua/abc.lua $((2 * DURATION + 60)) &
target=$!

# maxrss COMMAND...: runs it, prints its peak RSS in KiB.
maxrss() {
	/usr/bin/time -o "$TMP/time" -f '%M' "$@" >/dev/null 2>"$TMP/err"
	cat "$TMP/time"
}

lp=$(maxrss $LUAPROF record -v -F $RATE -d $DURATION -p $target -o $TMP/t.lp)
lp_samples=$($LUAPROF info $TMP/t.lp | awk '/^samples/ { print $2; exit }')
grep -E "BPF maps:|native unwind: [0-9]+ objects" "$TMP/err" | sed 's/^luaprof record: /  /'
pf=$(maxrss perf record -q -g -F $RATE -p $target -o $TMP/p.data -- sleep $DURATION)
pf_samples=$(perf script -i $TMP/p.data -F pid 2>/dev/null | wc -l)
printf '%-10s %10s %12s\n' recorder samples "max RSS MiB"
printf '%-10s %10s %12.1f\n' luaprof "$lp_samples" "$(echo "$lp / 1024" | bc -l)"
printf '%-10s %10s %12.1f\n' "perf -g" "$pf_samples" "$(echo "$pf / 1024" | bc -l)"
echo "(one LuaJIT process, $RATE Hz, $DURATION s)"

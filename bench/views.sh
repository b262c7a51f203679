#!/usr/bin/env bash
# bench/views.sh - how fast `luaprof report` writes each format, on two
# synthetic traces of SAMPLES samples each (default 1,000,000; bench/
# synth.c: one process, four threads, Lua under host stacks, native and
# kernel stacks): a wide one (about 120,000 distinct stacks) and a narrow
# one (synth -k 10: about 13,000, closer to a real service), plus a
# second of each for `diff`.  Each run is timed three times and the
# fastest kept (the machine is shared); prints wall and CPU seconds,
# samples per second, peak memory and output size per format, and each
# format's time as a ratio to folded's, the simplest; then `info`, the
# line views (--by line, --annotate) and --vmstate.  No root needed.
#   usage: bench/views.sh            (SAMPLES=N to change the size)
set -eu
cd "$(dirname "$0")/.."
SAMPLES=${SAMPLES:-1000000}
LUAPROF=build/luaprof
TMP=$(mktemp -d /tmp/luaprof-bench-views.XXXXXX)
trap 'rm -rf "$TMP"' EXIT

make --no-print-directory -s build/luaprof build/bench/synth
# best3 COMMAND...: the fastest of three runs, "seconds cpu-seconds
# max-rss-KB" (CPU time, user + system, is less disturbed by others).
best3() {
	local i t best= rss= cpu=
	for i in 1 2 3; do
		/usr/bin/time -o "$TMP/time" -f '%e %U %S %M' "$@" >/dev/null 2>&1
		read -r t u sy r <"$TMP/time"
		if [ -z "$best" ] || awk -v a="$t" -v b="$best" 'BEGIN { exit !(a < b) }'; then
			best=$t rss=$r cpu=$(awk -v u="$u" -v s="$sy" 'BEGIN { print u + s }')
		fi
	done
	echo "$best $cpu $rss"
}

# table SHAPE SYNTH-ARGS...: the table of one trace shape.
table() {
	local shape=$1 f n s cpu rss
	shift
	rm -f "$TMP/a.lp" "$TMP/b.lp" # the writer never replaces a file
	build/bench/synth -n "$SAMPLES" "$@" "$TMP/a.lp"
	build/bench/synth -n "$SAMPLES" -s 2 "$@" "$TMP/b.lp"
	echo "$shape trace: $SAMPLES samples, $(stat -c %s "$TMP/a.lp") bytes," \
		"$($LUAPROF report --format folded "$TMP/a.lp" | wc -l) distinct stacks"
	printf '%-12s %8s %8s %14s %8s %8s %8s\n' format seconds "CPU s" samples/s "RSS MB" "out MB" "/folded"
	declare -A SECS
	for f in folded top callgraph flamegraph pprof speedscope diff info by-line \
		annotate vmstate; do
		n=$SAMPLES
		case $f in
		diff)
			set -- $LUAPROF diff -o "$TMP/out.$f" "$TMP/a.lp" "$TMP/b.lp"
			n=$((2 * SAMPLES)) ;;
		info) set -- sh -c "$LUAPROF info \"\$1\" >\"\$2\"" info "$TMP/a.lp" "$TMP/out.$f" ;;
		by-line) set -- $LUAPROF report --by line -o "$TMP/out.$f" "$TMP/a.lp" ;;
		annotate|vmstate) set -- $LUAPROF report --$f -o "$TMP/out.$f" "$TMP/a.lp" ;;
		*) set -- $LUAPROF report --format $f -o "$TMP/out.$f" "$TMP/a.lp" ;;
		esac
		read -r s cpu rss < <(best3 "$@")
		SECS[$f]=$s
		awk -v f="$f" -v s="$s" -v c="$cpu" -v n="$n" -v rss="$rss" \
			-v out="$(stat -c %s "$TMP/out.$f")" -v base="${SECS[folded]}" 'BEGIN {
			printf "%-12s %8.2f %8.2f %14.0f %8.1f %8.1f %8.2f\n", f, s, c,
				(s > 0 ? n / s : 0), rss / 1024, out / 1048576,
				(base > 0 ? s / base : 0) }'
	done
	echo
}

table wide
table narrow -k 10
echo "(seconds: wall clock, the fastest of 3 runs; samples/s from it; diff reads two traces)"

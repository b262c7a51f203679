#!/usr/bin/env bash
# bench/offcpu.sh - luaprof's off-CPU time beside libbpf-tools' offcputime
# (Debian libbpf-tools), on one process at once: samples/lua/waits.lua,
# whose a, b and c wait in a nanosleep, a pipe read and wait4 (os.execute).
# Both watch the same pid for SECONDS (default 5); their totals per kernel
# wait (the kernel function the wait is in) are printed side by side, in
# ms, with waits.lua's own clock for the whole run.  offcputime takes its
# stacks at each switch out, luaprof one per sampling period of waiting
# (-F, default 999 here); their windows differ by luaprof's setup (a few
# hundred ms, while waits.lua's pattern repeats every ~130 ms).  Printed,
# never asserted.  Needs root.
set -u
cd "$(dirname "$0")/.."
SECONDS_=${1:-5}
HZ=${HZ:-999}
OFFCPUTIME=${OFFCPUTIME:-/usr/sbin/offcputime}
TMP=$(mktemp -d /tmp/luaprof-offcpu.XXXXXX)
trap 'kill $(jobs -p) 2>/dev/null; rm -rf $TMP' EXIT
[ -x "$OFFCPUTIME" ] || { echo "bench/offcpu.sh: no $OFFCPUTIME (Debian libbpf-tools)" >&2; exit 1; }

luajit samples/lua/waits.lua $((SECONDS_ * 10 + 20)) >$TMP/truth &
lp=$!
sleep 0.2
"$OFFCPUTIME" -p $lp "$SECONDS_" >$TMP/oc.txt 2>$TMP/oc.err &
oc=$!
build/luaprof record -q -e off-cpu -F "$HZ" -p $lp -d "$SECONDS_" -o $TMP/lp.lp
wait $oc
kill $lp 2>/dev/null

# site: the kernel function a wait is in, by a stack's text.
site='{ k = "other"; if ($0 ~ /hrtimer_nanosleep/) k = "nanosleep"; else if ($0 ~ /pipe_read/) k = "pipe_read"; else if ($0 ~ /do_wait/) k = "wait4" }'
awk 'BEGIN { RS = "" } '"$site"' { s[k] += $NF } END { for (k in s) printf "offcputime %s %.1f\n", k, s[k] / 1000 }' \
	$TMP/oc.txt >$TMP/sums
build/luaprof report --kind off-cpu --pid $lp --format folded $TMP/lp.lp 2>/dev/null |
	awk "$site"' { s[k] += $NF } END { for (k in s) printf "luaprof %s %.1f\n", k, s[k] / 1000 }' >>$TMP/sums
printf '%-10s %12s %12s %8s\n' wait "offcputime" luaprof change
for k in nanosleep pipe_read wait4 other; do
	a=$(awk -v k=$k '$1 == "offcputime" && $2 == k { print $3 }' $TMP/sums)
	b=$(awk -v k=$k '$1 == "luaprof" && $2 == k { print $3 }' $TMP/sums)
	awk -v k=$k -v a="${a:-0}" -v b="${b:-0}" 'BEGIN { printf "%-10s %12.1f %12.1f %+7.1f%%\n", k, a, b, a ? 100 * (b - a) / a : 0 }'
done

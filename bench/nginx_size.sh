#!/usr/bin/env bash
# bench/nginx_size.sh - bytes/sample of long recordings of bench/nginx.sh's
# workload (nginx + lua module, JIT on, 2 workers, under wrk on loopback):
# LONG_SECONDS (default 60) at 99 Hz by luaprof as a user records (the
# symbols and source lines of the addresses hit embedded once per trace,
# here spread over a minute of samples), by luaprof --no-embed (the stream
# of samples alone), and by perf record -g.  Sizes, not costs: what each
# costs the workload is bench/nginx.sh's.
# Needs root, perf (linux-perf) and tests/deps.sh's packages.
set -u # not -e: the nginx helpers poll with commands that fail until ready
cd "$(dirname "$0")/.."
LONG_SECONDS=${LONG_SECONDS:-60}
LUAPROF=$PWD/build/luaprof
. tests/lib.sh
. tests/nginx.sh
tests/deps.sh
command -v perf >/dev/null || DEBIAN_FRONTEND=noninteractive apt-get install -y -qq linux-perf >/dev/null
trap 'nginx_stop >/dev/null 2>&1; cleanup' EXIT
NGINX_JIT=on nginx_start || exit 1

# sampling PID: perf (PID) runs its workload, sleep: its events are open.
sampling() {
	local c
	kill -0 $1 2>/dev/null || return 0
	for c in $(_nginx_children $1); do
		[ "$(cat /proc/$c/comm 2>/dev/null)" = sleep ] && return 0
	done
	return 1
}

echo "long run, ${LONG_SECONDS} s at 99 Hz:"
# Twice: as a user records (symbols and source lines embedded), and with
# --no-embed, the stream of samples alone.
for v in long noembed; do
	flags=
	[ $v = noembed ] && flags=--no-embed
	$LUAPROF record -F 99 -d $LONG_SECONDS $flags -p $NGINX_MASTER -o $TMP/$v.lp 2>$TMP/$v.err &
	rec=$!
	wait_for eval "grep -q recording $TMP/$v.err || ! kill -0 $rec 2>/dev/null"
	nginx_load $((LONG_SECONDS + 1)) >/dev/null 2>&1
	wait $rec
done
perf record -q -g -F 99 -o $TMP/long.data -p $NGINX_MASTER,$(nginx_workers | paste -sd,) \
	-- sleep $LONG_SECONDS >/dev/null 2>&1 &
rec=$!
wait_for sampling $rec
nginx_load $((LONG_SECONDS - 1)) >/dev/null 2>&1
wait $rec
ls=$(trace_samples $TMP/long.lp)
lb=$(stat -c %s $TMP/long.lp)
objs=$($LUAPROF info $TMP/long.lp | grep '^objects:')
emb=$(sed -nE 's/.*symbols of [0-9]+ embedded \(([0-9]+) bytes\).*/\1/p' <<<"$objs")
lines=$(sed -nE 's/.*lines from DWARF of [0-9]+ \(([0-9]+) bytes\).*/\1/p' <<<"$objs")
ns=$(trace_samples $TMP/noembed.lp)
nb=$(stat -c %s $TMP/noembed.lp)
ps=$(perf script -i $TMP/long.data -F pid 2>/dev/null | wc -l)
pb=$(stat -c %s $TMP/long.data)
awk -v lb=$lb -v ls=${ls:-0} -v emb=${emb:-0} -v dw=${lines:-0} -v pb=$pb -v ps=$ps \
	-v nb=$nb -v ns=${ns:-0} 'BEGIN {
	l = ls ? lb / ls : 0; p = ps ? pb / ps : 0; n = ns ? nb / ns : 0
	printf "  luaprof: %d bytes, %d samples, %.1f bytes/sample\n", lb, ls, l
	printf "    embedded before compression: symbols %d bytes, source lines %d bytes\n", emb, dw
	printf "  luaprof --no-embed: %d bytes, %d samples, %.1f bytes/sample\n", nb, ns, n
	printf "  ratio luaprof --no-embed/perf: %.2f\n", p ? n / p : 0
	printf "  perf -g: %d bytes, %d samples, %.1f bytes/sample\n", pb, ps, p
	printf "  ratio luaprof/perf: %.2f\n", p ? l / p : 0
}'

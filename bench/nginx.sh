#!/usr/bin/env bash
# bench/nginx.sh - the OpenResty-style workload: nginx + lua module (JIT
# on, 2 workers) under wrk on loopback.  For each setting (unprofiled,
# luaprof and perf record -g at 99 and 999 Hz, recording the master with
# its workers) it runs ROUNDS rounds of wrk for SECONDS each, interleaved
# so that drift in the machine hits every setting alike, and prints the
# median requests/s and its loss against the unprofiled run of the same
# round (median of the rounds, with the lowest and highest), bytes/sample, and
# luaprof's BPF time per sample: the median of its own per-sample clock,
# and the mean per tick from kernel.bpf_stats_enabled (set for the run),
# and each recorder's own CPU time.  On 2 shared cores run-to-run noise in
# req/s is several points (3 between two idle runs): more ROUNDS and
# longer runs narrow it, and the paired spread shows it.
# With -v, luaprof also says where the sampler's time goes (bpf/phases.h):
# the median over rounds of each phase's mean per sample, and of the
# frames each walk produced.
# Then long recordings at 99 Hz (LONG_SECONDS, default 60; 0 skips them),
# by luaprof as is and with --no-embed, and by perf: bytes/sample of the
# whole trace, with the symbols and source lines it embeds (issue 5), and
# of the sample stream alone.
#
# SETTINGS overrides the list (e.g. "none luaprof-999 perf-999");
# LUAPROF_BASE=path/to/luaprof adds base-99 and base-999, another build
# recorded in the same rounds: a change's before and after under the same
# load.
# Needs root, perf (linux-perf) and tests/deps.sh's packages.
set -u # not -e: the nginx helpers poll with commands that fail until ready
cd "$(dirname "$0")/.."
ROUNDS=${ROUNDS:-5}
SECONDS_PER_RUN=${SECONDS_PER_RUN:-8}
LONG_SECONDS=${LONG_SECONDS:-60}
LUAPROF=$PWD/build/luaprof
LUAPROF_BASE=${LUAPROF_BASE:-}
. tests/lib.sh
. tests/nginx.sh
tests/deps.sh
command -v perf >/dev/null || DEBIAN_FRONTEND=noninteractive apt-get install -y -qq linux-perf >/dev/null
old_stats=$(sysctl -n kernel.bpf_stats_enabled)
sysctl -qw kernel.bpf_stats_enabled=1
trap 'sysctl -qw kernel.bpf_stats_enabled=$old_stats; nginx_stop >/dev/null 2>&1; cleanup' EXIT

NGINX_JIT=on nginx_start
declare -A RPS BYTES SAMPLES BPFNS BPFMED BPFP99 PHASES CPU
run() { # setting round
	local set=$1 r=$2 out=$TMP/$1-$2 rec= TIMEFORMAT='%U %S' lp=$LUAPROF
	# Each recorder runs under bash's time, which writes its CPU seconds
	# (user, system) to $out.time.
	case $set in
	luaprof-*|base-*)
		[ ${set%-*} = base ] && lp=$LUAPROF_BASE
		{ time $lp record -v -F ${set#*-} -d $((SECONDS_PER_RUN + 1)) \
			-p $NGINX_MASTER -o $out.lp >/dev/null 2>$out.err; } 2>$out.time & rec=$! ;;
	perf-*) { time perf record -q -g -F ${set#perf-} -o $out.data \
			-p $NGINX_MASTER,$(nginx_workers | paste -sd,) -- sleep $((SECONDS_PER_RUN + 1)) \
			>/dev/null 2>&1; } 2>$out.time & rec=$! ;;
	esac
	[ -n "$rec" ] && wait_for sampling ${set%-*} $rec $out.err
	nginx_load $SECONDS_PER_RUN >$out.wrk 2>&1
	[ -n "$rec" ] && wait $rec
	RPS[$set]+=" $(awk '/^Requests\/sec:/ { print $2 }' $out.wrk)"
	[ -n "$rec" ] && CPU[$set]+=" $(awk -v d=$((SECONDS_PER_RUN + 1)) '{ printf "%.2f", 100 * ($1 + $2) / d }' $out.time)"
	case $set in
	luaprof-*|base-*)
		SAMPLES[$set]+=" $($LUAPROF info $out.lp | awk '/^samples/ { print $2; exit }')"
		BYTES[$set]+=" $(stat -c %s $out.lp)"
		BPFNS[$set]+=" $(awk '/BPF sampler:/ { print $(NF-3) }' $out.err)"
		BPFMED[$set]+=" $(bpf_quantile median $out.err)"
		BPFP99[$set]+=" $(bpf_quantile p99 $out.err)"
		# "phases, mean per sample: kernel stack 1.10 us, ...; 3.0 Lua
		# and 17.0 native frames, ... reads": the numbers, in order,
		# joined by /.
		PHASES[$set]+=" $(awk '/BPF sampler phases/ { sub(/.*sample:/, ""); gsub(/[^0-9. ]/, " ");
			$1 = $1; gsub(/ /, "/"); print }' $out.err)" ;;
	perf-*)
		SAMPLES[$set]+=" $(perf script -i $out.data -F pid 2>/dev/null | wc -l)"
		BYTES[$set]+=" $(stat -c %s $out.data)" ;;
	esac
}
# bpf_quantile median|p99 ERRFILE: record -v's figure, in us (">" dropped:
# the histogram's last bucket).
bpf_quantile() {
	awk -v q=$1 '/BPF sampler time per sample:/ { for (i = 1; i < NF; i++)
		if ($i == q) { v = $(i + 1); sub(/^>/, "", v); print v } }' $2
}
# sampling luaprof|base|perf PID ERRFILE: the recorder, a child of PID (the
# subshell timing it), samples, or has died.  The load starts only then.
# luaprof says "recording" after its setup (BPF load, unwind tables,
# kernel symbols); perf runs its workload, sleep, once its events are open.
sampling() {
	local c g
	kill -0 $2 2>/dev/null || return 0
	[ $1 != perf ] && { grep -q recording $3 2>/dev/null; return; }
	for c in $2 $(_nginx_children $2); do
		for g in $(_nginx_children $c); do
			[ "$(cat /proc/$g/comm 2>/dev/null)" = sleep ] && return 0
		done
	done
	return 1
}
median() { tr ' ' '\n' | grep . | sort -n | awk '{ v[NR] = $1 } END { print NR ? v[int((NR + 1) / 2)] : 0 }'; }
# paired_loss "NONE_RPS..." "SET_RPS...": the loss of each round against
# the unprofiled run of the same round (the rounds interleave, so drift in
# the machine cancels), as the median and, in brackets, the lowest and
# highest: the spread says how far to trust the median.
paired_loss() {
	awk -v a="$1" -v b="$2" 'BEGIN {
		n = split(a, x, " "); m = split(b, y, " "); if (m < n) n = m
		for (i = 1; i <= n; i++) l[i] = x[i] ? 100 * (x[i] - y[i]) / x[i] : 0
		for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++)
			if (l[j] < l[i]) { t = l[i]; l[i] = l[j]; l[j] = t }
		if (!n) { print "-"; exit }
		printf "%.1f%%[%.1f,%.1f]", l[int((n + 1) / 2)], l[1], l[n] }'
}
sum() { tr ' ' '\n' | awk '{ s += $1 } END { print s + 0 }'; }

SETTINGS=${SETTINGS:-none luaprof-99 perf-99 luaprof-999 perf-999}
[ -n "$LUAPROF_BASE" ] && SETTINGS+=" base-99 base-999"
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
for r in $(seq $ROUNDS); do
	for set in $SETTINGS; do
		run $set $r
	done
done
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
base=$(echo ${RPS[none]:-0} | median)
printf '%-13s %10s %19s %9s %13s %14s %11s %12s %13s\n' setting "req/s" "loss[min,max]" samples bytes/sample \
	"BPF median us" "BPF p99 us" "BPF mean ns" "recorder CPU"
for set in $SETTINGS; do
	rps=$(echo ${RPS[$set]} | median)
	loss=$(paired_loss "${RPS[none]:-}" "${RPS[$set]}")
	s=$(echo ${SAMPLES[$set]:-0} | sum)
	b=$(echo ${BYTES[$set]:-0} | sum)
	bps=$(awk -v b=$b -v s=$s 'BEGIN { printf "%.1f", s ? b / s : 0 }')
	ns=- med=- p99=- cpu=-
	[ -n "${BPFNS[$set]:-}" ] && ns=$(echo ${BPFNS[$set]} | median)
	[ -n "${BPFMED[$set]:-}" ] && med=$(echo ${BPFMED[$set]} | median)
	[ -n "${BPFP99[$set]:-}" ] && p99=$(echo ${BPFP99[$set]} | median)
	[ -n "${CPU[$set]:-}" ] && cpu=$(echo ${CPU[$set]} | median)%
	printf '%-13s %10s %19s %9s %13s %14s %11s %12s %13s\n' $set $rps $loss $s $bps $med $p99 $ns $cpu
done
# Each phase's median over the rounds (of its mean per sample there).
phased=
for set in $SETTINGS; do
	[ -n "$(echo ${PHASES[$set]:-} | tr -d ' /')" ] || continue
	[ -n "$phased" ] || printf '\n%-13s %8s %8s %8s %8s %8s %8s %8s %8s %8s %8s %8s %8s  (us per sample; frames; reads)\n' \
		setting kstack L-state lua copy native output "lua#" "native#" "nat-rd" "Lst-rd" "lua-rd" "failed"
	phased=1
	printf '%-13s' $set
	for i in 1 2 3 4 5 6 7 8 9 10 11 12; do
		printf ' %8s' $(for p in ${PHASES[$set]}; do echo $p | cut -d/ -f$i; done | median)
	done
	echo
done
echo
echo "Loss: per round against that round's unprofiled run; the median, and"
echo "in brackets the lowest and highest of the rounds."
echo "BPF median: luaprof's own clock, per sample of a target; BPF mean: the"
echo "kernel's bpf_stats, per tick of every CPU, the ones the filter drops too."
echo "Recorder CPU: the recorder process's user + system time, setup included,"
echo "as a share of one CPU over the run."

# The long run: bytes/sample once the one-time embedded symbols are spread.
[ "$LONG_SECONDS" -gt 0 ] || exit 0
echo
echo "long run, ${LONG_SECONDS} s at 99 Hz:"
# Twice: as a user records (symbols and source lines embedded), and with
# --no-embed, the stream of samples alone.
for v in long noembed; do
	flags=
	[ $v = noembed ] && flags=--no-embed
	$LUAPROF record -F 99 -d $LONG_SECONDS $flags -p $NGINX_MASTER -o $TMP/$v.lp 2>$TMP/$v.err &
	rec=$!
	wait_for sampling luaprof $rec $TMP/$v.err
	nginx_load $((LONG_SECONDS + 1)) >/dev/null 2>&1
	wait $rec
done
perf record -q -g -F 99 -o $TMP/long.data -p $NGINX_MASTER,$(nginx_workers | paste -sd,) \
	-- sleep $LONG_SECONDS >/dev/null 2>&1 &
rec=$!
wait_for sampling perf $rec
nginx_load $((LONG_SECONDS - 1)) >/dev/null 2>&1
wait $rec
ls=$($LUAPROF info $TMP/long.lp | awk '/^samples/ { print $2; exit }')
lb=$(stat -c %s $TMP/long.lp)
objs=$($LUAPROF info $TMP/long.lp | grep '^objects:')
emb=$(sed -nE 's/.*symbols of [0-9]+ embedded \(([0-9]+) bytes\).*/\1/p' <<<"$objs")
lines=$(sed -nE 's/.*lines from DWARF of [0-9]+ \(([0-9]+) bytes\).*/\1/p' <<<"$objs")
ns=$($LUAPROF info $TMP/noembed.lp | awk '/^samples/ { print $2; exit }')
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

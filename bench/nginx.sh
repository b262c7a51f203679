#!/usr/bin/env bash
# bench/nginx.sh - what profiling costs an OpenResty-style workload: nginx +
# lua module (JIT on, 2 workers) under wrk -t2 -c8 on loopback, unprofiled
# and under each setting (luaprof and perf record -g at 99 and 999 Hz,
# recording the master with its workers).
#
# How it measures.  wrk runs for the whole bench; nginx counts the requests
# it served (stub_status, read at each end of a window).  Each setting is
# measured in PAIRS pairs of WINDOW-second windows: one window under the
# setting, one unprofiled beside it, the order alternated from pair to pair
# and setting to setting, so that what drifts (the host, other work on the
# machine) falls on both halves of a pair alike.  A recorder's window
# starts SETTLE seconds after it says it samples (luaprof's "recording",
# perf's workload started) and ends before it is stopped: its setup and
# finishing are outside the window, accounted apart below.  Per window:
#  - throughput, requests per second;
#  - CPU per request: the CPU time of the nginx workers, wrk and the
#    recorder (their threads' run time from /proc/PID/task/*/schedstat, in
#    ns, steal excluded) over the requests served.  The sampler's BPF
#    program and the tick that runs it are charged to the task they
#    interrupt, so they are in it (unless the kernel accounts interrupt
#    time apart: the run says so).  Other processes on the machine are
#    not: under a load average of 11 to 20 their work moved one pair's
#    throughput by 36-120 points (sd) and its CPU per request by 3-19,
#    which is why this is the figure to read on a shared machine.
# Each pair gives the loss in throughput and the cost in CPU per request of
# the setting against its own unprofiled neighbour, in %; the table gives
# their mean over the pairs with a 95% interval, their median with a 95%
# interval that assumes no distribution (bench/pairstat.awk), and their
# standard deviation.  On a machine that only runs the bench (both
# CPUs busy with it, no steal), throughput is CPU over CPU per request, and
# the two agree.
#
# Direct accounting, per setting: the sampler's BPF time (run_time_ns and
# run_cnt of the recorder's perf_event program, from /proc/PID/fdinfo with
# kernel.bpf_stats_enabled set for the run) in ns per run and as a share of
# the machine; luaprof's own median and p99 per sample, and (with -vv)
# where its time goes by phase (bpf/phases.h); the recorder's CPU in the
# window (% of one CPU), its setup until it samples, and luaprof's
# finishing (record -v); samples and bytes/sample of the recordings.
#
# SETTINGS overrides the list (e.g. "luaprof-999 perf-999").  Two of the
# default's are controls: "ticks-999" is perf record -a -e cpu-clock -F 999
# without stacks, every CPU ticked as luaprof ticks them, each sample its
# IP alone: the floor that the ticks themselves cost, whoever samples;
# "none" pairs unprofiled windows with each other, whose interval must hold
# 0 (else the spread is not what the interval says).
# "luaprof-HZ" records with -v: the sampler's median and p99 per sample
# from its run-time histogram.  "quiet-HZ" is luaprof-HZ without -v, as
# users run it: no histogram, so no median.  "phases-HZ" records with -vv:
# the phase clock too (bpf/phases.h), for the table of where the time
# goes; its median holds the clock's own cost.
# LUAPROF_BASE=path/to/luaprof adds base-99 and base-999, another build in
# the same pairs: a change's before and after under the same load.
# AGAINST=ticks-999 (or any setting) runs it, not nothing, in each pair's
# other window: the table is then each setting's cost above it, measured
# pair by pair, as the loss goal is stated (luaprof-999 at most 1
# point of CPU per request above the ticks alone).
# NICE=-10 runs the workers, wrk and the recorders at that niceness, so that
# others' work on a shared machine preempts them less (it still shares the
# caches): for developing on a loaded machine, not for the figures.
# The default (8 settings, 8 pairs of 4 s) has 8.5 minutes of windows; with
# the recorders' starts and stops it ran 617-623 s on an idle machine (each
# setting about 76 s; 6 settings took 10 minutes under a load average of
# 11-19).
# bench/nginx_size.sh gives bytes/sample of long recordings.
# `bench/nginx.sh --self-check` checks the statistics on known data, with
# no root and nothing started.
# Needs root, perf (linux-perf) and tests/deps.sh's packages.
set -u # not -e: the nginx helpers poll with commands that fail until ready
cd "$(dirname "$0")/.."
[ "${1:-}" = --self-check ] && exec awk -v selfcheck=1 -f bench/pairstat.awk </dev/null
PAIRS=${PAIRS:-8}
WINDOW=${WINDOW:-4}
SETTLE=${SETTLE:-1}
NICE=${NICE:-0}
LUAPROF=$PWD/build/luaprof
LUAPROF_BASE=${LUAPROF_BASE:-}
AGAINST=${AGAINST:-}
SETTINGS=${SETTINGS:-luaprof-99 perf-99 luaprof-999 perf-999 phases-99 phases-999 ticks-999 none}
# (Once each: a base-HZ SETTINGS names already ran its windows twice.)
for b in base-99 base-999; do
	[ -n "$LUAPROF_BASE" ] && [[ " $SETTINGS " != *" $b "* ]] && SETTINGS+=" $b"
done
. tests/lib.sh
. tests/nginx.sh
tests/deps.sh
command -v perf >/dev/null || DEBIAN_FRONTEND=noninteractive apt-get install -y -qq linux-perf >/dev/null
old_stats=$(sysctl -n kernel.bpf_stats_enabled)
sysctl -qw kernel.bpf_stats_enabled=1
WRK=
trap 'sysctl -qw kernel.bpf_stats_enabled=$old_stats; [ -n "$WRK" ] && kill $WRK 2>/dev/null;
	nginx_stop >/dev/null 2>&1; cleanup' EXIT

# The tests' nginx, with a location that counts the requests served.
sed '/^\t\tlocation \/ {/i\
\t\tlocation = /requests { stub_status; }' samples/nginx/nginx.conf >$TMP/nginx.conf
NGINX_CONF_SRC=$TMP/nginx.conf
NGINX_JIT=on nginx_start || exit 1
WORKERS=$(nginx_workers)
NCPU=$(nproc)
renice -n $NICE -p $WORKERS >/dev/null
nice -n $NICE wrk -t2 -c8 -d3600s "http://127.0.0.1:$NGINX_PORT/" >/dev/null 2>&1 &
WRK=$!
sleep 3 # the JIT compiles the handler's traces, wrk's connections open

# tasks_ns PID...: the run time of their threads, in ns.
tasks_ns() {
	local p
	for p in "$@"; do cat /proc/$p/task/*/schedstat 2>/dev/null; done |
		awk '{ s += $1 } END { printf "%.0f", s }'
}

# A window's two snapshots must read the requests and the CPU times at the
# same moment: under load each command a snapshot forks waits for a CPU,
# and a second between the request count and the CPU times skews that
# window's CPU per request by a quarter.  So a snapshot forks nothing: bash
# builtins, /dev/tcp for the count, a few ms in all.
# add_ns PID...: adds their threads' run time (ns) to NS.
add_ns() {
	local p f v
	for p in "$@"; do
		for f in /proc/$p/task/*/schedstat; do
			{ read -r v _ <"$f" && NS=$((NS + v)); } 2>/dev/null
		done
	done
}
# requests: sets REQ to the requests nginx has served (stub_status: the
# third figure of the line after "server accepts handled requests").
requests() {
	local l next= f
	REQ=0
	exec 9<>/dev/tcp/127.0.0.1/$NGINX_PORT || return
	printf 'GET /requests HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n' >&9
	while IFS= read -r l <&9; do
		if [ -n "$next" ]; then f=($l); REQ=${f[2]}; break; fi
		[ "${l#server accepts}" != "$l" ] && next=1
	done
	exec 9<&-
}
# bpf_fds REC: sets BPF_FDS to the fdinfo files of REC's perf_event BPF
# programs (type 7), the sampler: its fork, exec and exit programs run at
# every fork, exec and exit on the machine, and on a machine where others
# run tests their cheap runs outnumbered the ticks and diluted ns/run.
bpf_fds() {
	BPF_FDS=$(grep -lP '^prog_type:\t7$' /proc/$1/fdinfo/* 2>/dev/null)
}
# snap REC: appends to SNAP "wall_ns requests workers_ns wrk_ns rec_ns busy
# idle steal bpf_ns bpf_runs" (/proc/stat's columns in USER_HZ, 1/100 s;
# the BPF programs of BPF_FDS); REC is the recorder's pid or 0.
snap() {
	local t u n sy i w q sq st f k v bt=0 bc=0 wk rc=0
	requests
	t=${EPOCHREALTIME/./}
	NS=0; add_ns $WORKERS; wk=$NS
	NS=0; add_ns $WRK; w=$NS
	[ $1 != 0 ] && { NS=0; add_ns $1; rc=$NS; }
	read -r _ u n sy i w2 q sq st _ </proc/stat
	for f in $BPF_FDS; do
		while read -r k v; do
			case $k in run_time_ns:) bt=$((bt + v)) ;; run_cnt:) bc=$((bc + v)) ;; esac
		done <$f
	done 2>/dev/null
	SNAP+=" ${t}000 $REQ $wk $w $rc $((u + n + sy + q + sq)) $((i + w2)) $st $bt $bc"
}
# window KEY ROLE REC: measures WINDOW seconds into $TMP/windows.
window() {
	BPF_FDS=
	[ $3 != 0 ] && bpf_fds $3
	SNAP=
	snap $3
	sleep $WINDOW
	snap $3
	echo "$1 $2$SNAP" >>$TMP/windows
}
# perf_sampling PERF: the pid of perf's workload (sleep) once it runs:
# perf has opened its events by then.
perf_sampling() {
	local c
	for c in $(_nginx_children $1); do
		[ "$(cat /proc/$c/comm 2>/dev/null)" = sleep ] && { echo $c; return 0; }
	done
	return 1
}
declare -A SAMPLES BYTES BPFMED BPFP99 PHASES SETUP FINISH
# profiled SETTING KEY [ROLE]: one window under SETTING, from SETTLE s after
# its recorder samples until it is stopped; ROLE none when it is the pair's
# reference (AGAINST).
profiled() {
	local set=$1 key=$2 role=${3:-prof} out=$TMP/$2.$1 lp=$LUAPROF rec sl= started verbose
	case $set in
	none) window $key $role 0; return ;;
	luaprof-*|base-*|quiet-*|phases-*)
		[ ${set%-*} = base ] && lp=$LUAPROF_BASE
		case ${set%-*} in quiet) verbose= ;; phases) verbose=-vv ;; *) verbose=-v ;; esac
		nice -n $NICE $lp record $verbose -F ${set#*-} \
			-p $NGINX_MASTER -o $out.lp >/dev/null 2>$out.err &
		rec=$!
		wait_for eval "grep -qs recording $out.err || ! kill -0 $rec 2>/dev/null" ;;
	perf-*|ticks-*)
		# ticks: every CPU's cpu-clock at that rate, as luaprof's, with
		# the least a sample can cost (its IP, no stack).
		if [ ${set%-*} = ticks ]; then
			nice -n $NICE perf record -q -a -e cpu-clock -F ${set#*-} -o $out.data \
				-- sleep 3600 >/dev/null 2>$out.err &
		else
			nice -n $NICE perf record -q -g -F ${set#*-} -o $out.data \
				-p $NGINX_MASTER,$(echo $WORKERS | tr ' ' ,) -- sleep 3600 >/dev/null 2>$out.err &
		fi
		rec=$!
		wait_for perf_sampling $rec >/dev/null
		sl=$(perf_sampling $rec) ;;
	esac
	# A recorder that failed has no window: said once, the pair left out.
	started=1
	kill -0 $rec 2>/dev/null || started=
	case $set in
	perf-*|ticks-*) [ -n "$sl" ] || started= ;;
	*) grep -qs recording $out.err || started= ;;
	esac
	if [ -z "$started" ]; then
		echo "nginx.sh: $set did not start sampling: $(tail -c 300 $out.err)" >&2
		kill -INT $rec 2>/dev/null
		wait $rec
		return
	fi
	SETUP[$set]+=" $(tasks_ns $rec)"
	sleep $SETTLE
	window $key $role $rec
	if [ -n "$sl" ]; then kill $sl; else kill -INT $rec; fi
	wait $rec
	case $set in
	perf-*|ticks-*)
		SAMPLES[$set]+=" $(perf script -i $out.data -F pid 2>/dev/null | wc -l)"
		BYTES[$set]+=" $(stat -c %s $out.data)"
		rm -f $out.data ;;
	*)
		SAMPLES[$set]+=" $(trace_samples $out.lp)"
		BYTES[$set]+=" $(stat -c %s $out.lp)"
		BPFMED[$set]+=" $(bpf_quantile median $out.err)"
		BPFP99[$set]+=" $(bpf_quantile p99 $out.err)"
		FINISH[$set]+=" $(sed -nE 's/.*recorder CPU:.*finishing ([0-9.]+) ms.*/\1/p' $out.err)"
		# "phases, mean per sample: kernel stack 1.10 us, ...; 3.0 Lua
		# and 17.0 native frames, ... reads": the numbers, in order,
		# joined by /.
		PHASES[$set]+=" $(awk '/BPF sampler phases/ { sub(/.*sample:/, ""); gsub(/[^0-9. ]/, " ");
			$1 = $1; gsub(/ /, "/"); print }' $out.err)"
		rm -f $out.lp ;;
	esac
}
# bpf_quantile median|p99 ERRFILE: record -v's figure, in us (">" dropped:
# the histogram's last bucket).
bpf_quantile() {
	awk -v q=$1 '/BPF sampler time per sample:/ { for (i = 1; i < NF; i++)
		if ($i == q) { v = $(i + 1); sub(/^>/, "", v); print v } }' $2
}
median() { tr ' ' '\n' | grep . | sort -n | awk '{ v[NR] = $1 } END { print NR ? v[int((NR + 1) / 2)] : "-" }'; }
sum() { tr ' ' '\n' | awk '{ s += $1 } END { print s + 0 }'; }

echo "nginx.sh: nginx + lua (2 workers, JIT on) under wrk -t2 -c8 on loopback, $NCPU CPUs;"
REF=${AGAINST:-unprofiled}
echo "  $PAIRS pairs of ${WINDOW} s windows per setting (profiled, $REF; order alternated)"
echo "  load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
# CPU per request holds the sampler's interrupt time only where the kernel
# charges it to the interrupted task.
if { zcat /proc/config.gz || cat /boot/config-$(uname -r); } 2>/dev/null |
	grep -q '^CONFIG_IRQ_TIME_ACCOUNTING=y'; then
	echo "  NOTE: this kernel accounts interrupt time apart (CONFIG_IRQ_TIME_ACCOUNTING):"
	echo "  the ticks and the BPF sampler are NOT in CPU per request; read throughput"
fi
: >$TMP/windows
start=$(date +%s)
for p in $(seq $PAIRS); do
	k=0
	for set in $SETTINGS; do
		k=$((k + 1))
		if [ $(((p + k) % 2)) = 0 ]; then
			profiled ${AGAINST:-none} $set:$p none
			profiled $set $set:$p
		else
			profiled $set $set:$p
			profiled ${AGAINST:-none} $set:$p none
		fi
	done
done
echo "  load average after: $(cut -d' ' -f1-3 /proc/loadavg); $(($(date +%s) - start)) s"

# Per window: "KEY ROLE rps cpu_us_per_req workers_us_per_req rec_share%
# busy% idle% steal% bpf_ns_per_run bpf_runs_per_s bpf_share%".
awk -v ncpu=$NCPU '{
	dt = ($13 - $3) / 1e9; req = $14 - $4; cs = dt * ncpu * 100	# USER_HZ per s, all CPUs
	runs = $22 - $12
	if (req <= 0 || dt <= 0) next
	printf "%s %s %.1f %.2f %.2f %.3f %.2f %.2f %.2f %.0f %.0f %.3f\n", $1, $2, req / dt,
		($15 - $5 + $16 - $6 + $17 - $7) / req / 1000, ($15 - $5) / req / 1000,
		100 * ($17 - $7) / 1e9 / dt, 100 * ($18 - $8) / cs, 100 * ($19 - $9) / cs,
		100 * ($20 - $10) / cs, runs ? ($21 - $11) / runs : 0, runs / dt,
		100 * ($21 - $11) / 1e9 / dt / ncpu }' $TMP/windows >$TMP/figures
# Per pair: the profiled window against its unprofiled neighbour.
awk '{ split($1, k, ":"); set = k[1]
	if ($2 == "none") { rps[$1] = $3; cpu[$1] = $4; next }
	prps[$1] = $3; pcpu[$1] = $4; of[$1] = set }
	END { for (p in of) if ((p in rps) && rps[p] && cpu[p]) {
		print of[p] ".tput", 100 * (1 - prps[p] / rps[p])
		print of[p] ".cpu", 100 * (pcpu[p] / cpu[p] - 1) } }' $TMP/figures |
	awk -f bench/pairstat.awk >$TMP/stats
# col ROLE SET N: the median of column N over SET's windows of ROLE.
col() { awk -v r=$1 -v s=$2 -v n=$3 '$2 == r && (s == "" || index($1, s ":") == 1) { print $n }' $TMP/figures | median; }
# interval KEY mean|median: the figure with its 95% interval.
interval() { awk -v k=$1 -v m=$2 '$1 == k { v = m == "mean" ? $3 : $6
	lo = m == "mean" ? $4 : $8; hi = m == "mean" ? $5 : $9
	if (lo == "-") printf "%6.2f", v; else printf "%6.2f [%6.1f,%6.1f]", v, lo, hi }' $TMP/stats; }
sd() { awk -v k=$1 '$1 == k { print $7 }' $TMP/stats; }

echo
echo "machine in the $REF windows (medians): busy $(col none '' 7)%, idle $(col none '' 8)%," \
	"steal $(col none '' 9)%; $(col none '' 3) req/s, $(col none '' 4) us of CPU per request" \
	"($(col none '' 5) of it in the workers)"
echo
printf '%-12s %5s | %-55s | %-52s\n' "" "" "CPU per request, + % against the $REF" "throughput, loss % against the $REF"
printf '%-12s %5s | %22s %22s %6s %9s | %22s %22s %6s\n' setting pairs mean median sd us/req mean median sd
for set in $SETTINGS; do
	printf '%-12s %5s | %22s %22s %6s %9s | %22s %22s %6s\n' $set \
		"$(awk -v k=$set.cpu '$1 == k { print $2 }' $TMP/stats)" \
		"$(interval $set.cpu mean)" "$(interval $set.cpu median)" "$(sd $set.cpu)" "$(col prof $set 4)" \
		"$(interval $set.tput mean)" "$(interval $set.tput median)" "$(sd $set.tput)"
done
echo
echo "direct accounting (medians over each setting's windows and recordings):"
printf '%-12s %10s %8s %9s %10s %8s %10s %10s %9s %9s %9s %8s\n' setting "BPF ns/run" runs/s "BPF %mach" \
	"BPF med us" "p99 us" "rec %CPU" "both %mach" "setup ms" "finish ms" samples "B/sample"
for set in $SETTINGS; do
	[ $set = none ] && continue
	s=$(echo ${SAMPLES[$set]:-0} | sum)
	b=$(echo ${BYTES[$set]:-0} | sum)
	bpf="$(col prof $set 10) $(col prof $set 11) $(col prof $set 12)"
	case $set in perf-*|ticks-*) bpf="- - -" ;; esac
	rec=$(col prof $set 6)
	printf '%-12s %10s %8s %9s %10s %8s %10s %10s %9s %9s %9s %8s\n' $set $bpf \
		"$(echo ${BPFMED[$set]:-} | median)" "$(echo ${BPFP99[$set]:-} | median)" "$rec" \
		"$(awk -v b=$(echo $bpf | cut -d' ' -f3) -v r=$rec -v n=$NCPU 'BEGIN { printf "%.3f", b + r / n }')" \
		"$(echo ${SETUP[$set]:-} | median | awk '{ printf $1 == "-" ? "-" : "%.0f", $1 / 1e6 }')" \
		"$(echo ${FINISH[$set]:-} | median)" "$s" \
		"$(awk -v b=$b -v s=$s 'BEGIN { printf "%.1f", s ? b / s : 0 }')"
done
# Each phase's median over the recordings (of its mean per sample there).
phased=
for set in $SETTINGS; do
	[ -n "$(echo ${PHASES[$set]:-} | tr -d ' /')" ] || continue
	[ -n "$phased" ] || printf '\n%-12s %8s %8s %8s %8s %8s %8s %8s %8s %8s %8s %8s %8s %8s  (us per sample; frames; reads)\n' \
		setting kstack L-state lua copy native output "lua#" "native#" "nat-rd" "Lst-rd" "lua-rd" "failed" "copy-rd"
	phased=1
	printf '%-12s' $set
	for i in 1 2 3 4 5 6 7 8 9 10 11 12 13; do
		printf ' %8s' $(for p in ${PHASES[$set]}; do echo $p | cut -d/ -f$i; done | median)
	done
	echo
done
cat <<EOF

CPU per request: the workers', wrk's and the recorder's CPU time over the
requests served, profiled against the unprofiled (or AGAINST's) window beside it (us/req:
the profiled windows' median); throughput: 1 - req/s profiled / req/s of the
same neighbour.  Mean and median over the pairs, each with its 95% interval
in brackets (the median's assumes no distribution: read it when a few pairs
stray, as they do under others' load); sd: the spread of one pair.  On a
machine loaded by other work, read CPU per request: throughput then follows
the others' load.  ticks-HZ: perf record -a -e cpu-clock -F HZ with no
stacks, what the ticks cost alone; none: unprofiled against unprofiled, the
control (its interval should hold 0).
BPF ns/run, runs/s, %mach: the recorder's sampler program in the window (every
tick of every CPU for luaprof, the filtered-out ones too), and its share of
all $NCPU CPUs.  BPF med, p99: luaprof's own clock per sample of a target.
rec %CPU: the recorder's CPU in the window (past its first ${SETTLE} s), % of
one CPU; both %mach: BPF and recorder as a share of the machine, the part of
the cost measured directly (the rest: the ticks themselves, their interrupt
entry and exit, the caches they disturb).  setup: the recorder's CPU until
it sampled; finish: luaprof's after the last sample (record -v).
B/sample: whole recordings, short ones (see bench/nginx_size.sh for long ones).
EOF

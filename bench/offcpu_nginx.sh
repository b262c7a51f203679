#!/usr/bin/env bash
# bench/offcpu_nginx.sh - what off-CPU recording costs a server whose
# handler blocks, and whether its totals agree with offcputime's there.
# nginx + lua module (2 workers, JIT on) runs samples/nginx/audit.lua:
# app.lua's CPU work, then an audit line appended and fdatasync'd (a
# blocking system call: the worker waits for the disk).
#
# 1. Cost.  ROUNDS rounds (default 3) of three WINDOW-second windows
#    (default 5) under wrk -t2 -c8, in an order rotated from round to
#    round: (a) no profiler, (b) luaprof record -e cpu -p MASTER, (c)
#    luaprof record -e cpu,off-cpu -p MASTER (at luaprof's default rate,
#    or HZ).  A recorder's window starts SETTLE s after it says it records
#    and ends before it is stopped.  Per window: requests/s (wrk's), the
#    workers' CPU per request (utime + stime from /proc/PID/stat, in ticks
#    of 10 ms: the figures are of whole windows), the recorder's own CPU
#    (% of one CPU), the workers' voluntary context switches per second
#    (/proc/PID/status).  Each of (b) and (c) is a ratio to (a) of the
#    same round; the table gives the median ratio over the rounds and
#    their range.
# 2. Agreement.  Under the same load, luaprof -e cpu,off-cpu -F COMPARE_HZ
#    (default 999) records the master while offcputime watches each
#    worker for COMPARE s (default 10).  bcc's offcputime-bpfcc if it runs
#    here, else libbpf-tools' /usr/sbin/offcputime (as bench/offcpu.sh;
#    the run says why).  luaprof's window is cut to offcputime's with
#    --from/--to (each worker's, from when its offcputime attached: its
#    bpf_link appears; origin: luaprof's "recording" line, its first
#    samples follow within a few ms at 999 Hz).  The stacks are compared
#    by the native frames both see: the user-mode leaf (the libc function
#    of the system call) and the kernel frames from the system call's
#    handler down to where it waits.  offcputime's kernel stack is taken
#    at the switch out, from the scheduler, luaprof's at the switch in,
#    of a task not running, which the kernel gives without its scheduler
#    (.sched.text) functions: those are cut from offcputime's too, by
#    /proc/kallsyms.  offcputime also counts preemption (a thread that
#    could run, switched out at an interrupt or a system call's exit),
#    which luaprof does not: its own line, out of the totals.
#    luaprof samples waits shorter than its period (with probability
#    d/period, weighing the period), so a stack's total has a sampling
#    error of about 1/sqrt(events): -F 999 for about 10 times the events
#    of 99 Hz.
# Printed, never asserted.  Needs root, wrk (installed if missing) and
# tests/deps.sh's nginx packages.
set -u # not -e: the nginx helpers poll with commands that fail until ready
cd "$(dirname "$0")/.."
ROUNDS=${ROUNDS:-3}
WINDOW=${WINDOW:-5}
SETTLE=${SETTLE:-1}
HZ=${HZ:-}
COMPARE=${COMPARE:-10}
COMPARE_HZ=${COMPARE_HZ:-999}
. tests/lib.sh
. tests/nginx.sh
LUAPROF=$PWD/build/luaprof
export DEBIAN_FRONTEND=noninteractive
command -v wrk >/dev/null || apt-get install -y -qq wrk >/dev/null
command -v nginx >/dev/null || tests/deps.sh
[ -x /usr/sbin/offcputime ] || apt-get install -y -qq libbpf-tools >/dev/null
command -v offcputime-bpfcc >/dev/null || apt-get install -y -qq bpfcc-tools >/dev/null 2>&1
REC=
WRK=
OCS=
trap 'for p in $OCS $REC $WRK; do kill $p 2>/dev/null; done; nginx_stop >/dev/null 2>&1; cleanup' EXIT

# Which offcputime: bcc's when it can compile its program here (it needs
# the running kernel's headers; and tracefs for its probes: mounted if
# that is what it says it lacks).
OC=/usr/sbin/offcputime OCKIND=libbpf
if command -v offcputime-bpfcc >/dev/null; then
	if offcputime-bpfcc -f 1 >$TMP/bcc.err 2>&1; then
		OC=offcputime-bpfcc OCKIND=bcc
	elif grep -qi 'tracefs\|debugfs\|kprobe_events' $TMP/bcc.err &&
		! mountpoint -q /sys/kernel/tracing; then
		echo "offcpu_nginx.sh: bcc wants tracefs: mount -t tracefs nodev /sys/kernel/tracing"
		mount -t tracefs nodev /sys/kernel/tracing &&
			offcputime-bpfcc -f 1 >$TMP/bcc.err 2>&1 && OC=offcputime-bpfcc OCKIND=bcc
	fi
	[ $OCKIND = bcc ] || echo "offcpu_nginx.sh: offcputime-bpfcc cannot run here" \
		"($( (grep -m1 -i 'kernel headers' $TMP/bcc.err || tail -1 $TMP/bcc.err) | cut -c1-100));" \
		"libbpf-tools' $OC instead"
fi

sed 's/require("app").handle()/require("audit").handle()/' samples/nginx/nginx.conf >$TMP/nginx.conf
NGINX_CONF_SRC=$TMP/nginx.conf
NGINX_JIT=on nginx_start || exit 1
WORKERS=$(nginx_workers)
TCK=$(getconf CLK_TCK)
URL=http://127.0.0.1:$NGINX_PORT/
wrk -t2 -c8 -d3s $URL >/dev/null 2>&1 # the JIT compiles the handler's traces

# recorder KINDS HZ OUT: starts luaprof (tests/nginx.sh), sets REC.
recorder() { nginx_recorder $3 -e $1 ${2:+-F $2} || exit 1; }

# window CONF ROUND: one window of CONF (a, b or c); appends "CONF ROUND
# rps workers_us_per_req recorder_%cpu vcsw_per_s lost" to $TMP/windows.
window() {
	local conf=$1 out=$TMP/$1.$2 w0 w1 r0=0 r1=0 c0 c1 rps req lost=-
	case $conf in
	b) recorder cpu "$HZ" $out ;;
	c) recorder cpu,off-cpu "$HZ" $out ;;
	esac
	[ -n "$REC" ] && sleep $SETTLE
	w0=$(ticks_of $WORKERS); c0=$(vcsw_of $WORKERS); [ -n "$REC" ] && r0=$(ticks_of $REC)
	wrk -t2 -c8 -d${WINDOW}s $URL >$out.wrk 2>&1
	w1=$(ticks_of $WORKERS); c1=$(vcsw_of $WORKERS); [ -n "$REC" ] && r1=$(ticks_of $REC)
	if [ -n "$REC" ]; then
		nginx_recorder_stop
		lost=$($LUAPROF info $out.lp 2>/dev/null | awk '/^lost:/ { print $2; exit }')
		rm -f $out.lp
	fi
	rps=$(awk '/^Requests\/sec:/ { print $2 }' $out.wrk)
	req=$(awk '/requests in/ { print $1 }' $out.wrk)
	awk -v c=$conf -v r=$2 -v rps=${rps:-0} -v req=${req:-0} -v w=$((w1 - w0)) -v rc=$((r1 - r0)) \
		-v cs=$((c1 - c0)) -v t=$TCK -v win=$WINDOW -v lost=${lost:-?} 'BEGIN {
		printf "%s %s %.1f %.1f %.2f %.1f %s\n", c, r, rps, req ? 1e6 * w / t / req : 0,
			100 * rc / t / win, cs / win, lost }' >>$TMP/windows
}

echo "offcpu_nginx.sh: nginx + lua (2 workers, JIT on, samples/nginx/audit.lua: CPU work, then an"
echo "  fdatasync'd audit line) under wrk -t2 -c8 on loopback, $(nproc) CPUs, $(uname -r);"
echo "  $ROUNDS rounds of ${WINDOW} s windows, order rotated; load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
: >$TMP/windows
for r in $(seq $ROUNDS); do
	case $((r % 3)) in
	1) order="a b c" ;; 2) order="b c a" ;; 0) order="c a b" ;;
	esac
	for conf in $order; do window $conf $r; done
done

# Per round, b and c against the round's a; medians and ranges.
echo
printf '%-22s %26s %26s %26s %9s %s\n' configuration "req/s" "worker CPU us/req" "worker vcsw/s" "rec %CPU" "lost"
for conf in a b c; do
	case $conf in
	a) name="(a) no profiler" ;; b) name="(b) -e cpu" ;; c) name="(c) -e cpu,off-cpu" ;;
	esac
	awk -v c=$conf -v name="$name" '
		function med(x, n,    i, j, t) {
			for (i = 2; i <= n; i++) { t = x[i]; for (j = i - 1; j >= 1 && x[j] > t; j--) x[j + 1] = x[j]; x[j + 1] = t }
			return n % 2 ? x[(n + 1) / 2] : (x[n / 2] + x[n / 2 + 1]) / 2 }
		$1 == "a" { for (k = 3; k <= 6; k++) a[$2, k] = $k }
		$1 == c { n++; for (k = 2; k <= 7; k++) W[n, k] = $k }
		END {
			printf "%-22s", name
			for (k = 3; k <= 6; k++) {
				for (i = 1; i <= n; i++) x[i] = W[i, k]
				m = med(x, n)
				if (c == "a" || k == 5) { printf k == 5 ? " %9.1f" : " %26.1f", m; continue }
				for (i = 1; i <= n; i++) { r = a[W[i, 2], k]; x[i] = r ? W[i, k] / r : 0 }
				lo = hi = x[1]; for (i = 2; i <= n; i++) { if (x[i] < lo) lo = x[i]; if (x[i] > hi) hi = x[i] }
				printf " %26s", sprintf("%.1f x%.3f [%.3f-%.3f]", m, med(x, n), lo, hi)
			}
			l = ""; for (i = 1; i <= n; i++) l = l (i > 1 ? "," : "") W[i, 7]
			printf " %s\n", c == "a" ? "-" : l }' $TMP/windows
done
echo "  (a): medians over the rounds; (b), (c): the median over the rounds of each round's ratio to"
echo "  its own (a), [lowest-highest]; recorder %CPU: of one CPU, median; lost: per recording (info)"
echo "  per round: conf round req/s us/req rec%CPU vcsw/s lost:"
sort -k2,2n -k1,1 $TMP/windows | sed 's/^/    /'

# --- 2. luaprof's off-CPU totals beside offcputime's, same workers, same window.
echo
wrk -t2 -c8 -d$((COMPARE + 30))s $URL >$TMP/cmp.wrk 2>&1 &
WRK=$!
sleep 1
recorder cpu,off-cpu $COMPARE_HZ $TMP/cmp
t_rec=${EPOCHREALTIME/./}
declare -A ATTACH
OCS=
for w in $WORKERS; do
	if [ $OCKIND = bcc ]; then
		$OC -f -d -p $w $COMPARE >$TMP/oc.$w 2>$TMP/oc.$w.err &
	else
		$OC -p $w $COMPARE >$TMP/oc.$w 2>$TMP/oc.$w.err &
	fi
	OCS+=" $!"
	ATTACH[$w]=$!
done
# When each attached: its bpf_link fd appears.
declare -A FROM
for w in $WORKERS; do
	p=${ATTACH[$w]}
	for i in $(seq 3000); do
		ls -l /proc/$p/fd 2>/dev/null | grep -q 'bpf_link\|bpf-link' && break
		kill -0 $p 2>/dev/null || break
		sleep 0.005
	done
	FROM[$w]=$(awk -v a=${EPOCHREALTIME/./} -v b=$t_rec 'BEGIN { printf "%.3f", (a - b) / 1e6 }')
done
wait $OCS
OCS=
nginx_recorder_stop
kill $WRK 2>/dev/null; wait $WRK 2>/dev/null; WRK=
echo "agreement: luaprof -e cpu,off-cpu -F $COMPARE_HZ beside $OC ($OCKIND), ${COMPARE} s per worker"
echo "  (luaprof cut to each offcputime's window: from +${FROM[*]} s after it recorded)"
$LUAPROF info $TMP/cmp.lp 2>/dev/null | grep -E '^(events|lost|native stacks):' | sed 's/^/  luaprof info: /'

# The names in .sched.text, which a sleeping task's stack omits.
awk '$3 == "__sched_text_start" { s = $1 } $3 == "__sched_text_end" { e = $1 }
	{ a[NR] = $1; n[NR] = $3 }
	END { for (i = 1; i <= NR; i++) if (a[i] >= s && a[i] < e) print n[i] }' /proc/kallsyms |
	sort -u >$TMP/sched.names
# Both as "KEY us" lines.  KEY: user leaf;kernel frames from the system
# call's handler to the wait (or "(preempted)").
norm='
	BEGIN { while ((getline l < SCHED) > 0) sched[l] = 1 }
	function key(u, nk,    i, k, s) {	# K[1] outermost .. K[nk] leaf
		while (nk > 0 && (K[nk] in sched || K[nk] ~ /^(bpf_prog_|bpf_trace_run|__traceiter_|__bpf_trace_)/)) nk--
		if (nk > 0 && K[nk] ~ /exit_to_user_mode|irqentry_exit|^asm_sysvec|^preempt_schedule/) return "(preempted: could run, not a wait)"
		s = 1
		for (i = 1; i <= nk; i++) if (K[i] ~ /^(__x64_sys_|__do_sys_|__se_sys_|__ia32_sys_)/) { s = i; break }
		k = u
		for (i = s; i <= nk; i++) if (K[i] !~ /^(entry_SYSCALL|do_syscall_64|x64_sys_call)/) k = k ";" K[i]
		return k
	}'
for w in $WORKERS; do
	if [ $OCKIND = bcc ]; then
		# "comm;user root..leaf;-;kernel root..leaf us"
		awk -v SCHED=$TMP/sched.names "$norm"'
			{ v = $NF; sub(/ [0-9]+$/, ""); n = split($0, f, ";"); nk = 0; u = "[unknown]"; ink = 0
			  for (i = 2; i <= n; i++) { if (f[i] == "-") { ink = 1; continue }
				if (ink) K[++nk] = f[i]; else u = f[i] }
			  print key(u, nk), v }' $TMP/oc.$w
	else
		# paragraphs: kernel frames leaf first, down to the entry frame; the
		# user frames, leaf first; "-  comm (pid)"; the us.
		awk -v SCHED=$TMP/sched.names "$norm"'
			BEGIN { RS = ""; FS = "\n" }
			{ v = $NF + 0; nk = 0; u = "[unknown]"; delete R
			  for (i = 1; i < NF; i++) { f = $i; gsub(/^ +| +$/, "", f)
				if (f ~ /^- /) break
				R[++nk] = f
				if (f ~ /^(entry_SYSCALL|asm_|ret_from_fork)/) { if (i + 1 < NF) { u = $(i + 1); gsub(/^ +| +$/, "", u); if (u ~ /^- /) u = "[unknown]" }; break } }
			  for (i = 1; i <= nk; i++) K[i] = R[nk + 1 - i]
			  print key(u, nk), v }' $TMP/oc.$w
	fi
done | awk '{ v = $NF; sub(/ [0-9]+$/, ""); s[$0] += v } END { for (k in s) print k, s[k] }' >$TMP/oc.keys
for w in $WORKERS; do
	$LUAPROF report --kind off-cpu --format folded --pid $w --from ${FROM[$w]} \
		--to $(awk -v f=${FROM[$w]} -v d=$COMPARE 'BEGIN { print f + d }') $TMP/cmp.lp 2>/dev/null
done | awk -v SCHED=$TMP/sched.names "$norm"'
	{ v = $NF; sub(/ [0-9]+$/, ""); n = split($0, f, ";"); nk = 0; u = "[unknown]"
	  for (i = 1; i <= n; i++) if (f[i] ~ /_\[k\]$/) { sub(/_\[k\]$/, "", f[i]); K[++nk] = f[i] } else if (!nk) u = f[i]
	  print key(u, nk), v }' |
	awk '{ v = $NF; sub(/ [0-9]+$/, ""); s[$0] += v } END { for (k in s) print k, s[k] }' >$TMP/lp.keys

awk 'NR == FNR { v = $NF; sub(/ [0-9]+$/, ""); oc[$0] = v; next }
	{ v = $NF; sub(/ [0-9]+$/, ""); lp[$0] = v }
	END {
		for (k in oc) all[k] = 1
		for (k in lp) all[k] = 1
		for (k in all) { m = oc[k] > lp[k] ? oc[k] : lp[k]; print m, k }
	}' $TMP/oc.keys $TMP/lp.keys | sort -rn | cut -d' ' -f2- >$TMP/keys.order
printf '  %12s %12s %8s  %s\n' "offcputime" luaprof change "stack (user leaf;kernel frames to the wait), ms"
ocs=0 lps=0 n=0
while IFS= read -r k; do
	a=$(awk -v k="$k" '{ v = $NF; sub(/ [0-9]+$/, "") } $0 == k { print v }' $TMP/oc.keys)
	b=$(awk -v k="$k" '{ v = $NF; sub(/ [0-9]+$/, "") } $0 == k { print v }' $TMP/lp.keys)
	n=$((n + 1))
	if [ $n -le ${TOP:-12} ]; then
		awk -v a=${a:-0} -v b=${b:-0} -v k="$k" 'BEGIN { printf "  %12.1f %12.1f %+7.1f%%  %s\n",
			a / 1000, b / 1000, a ? 100 * (b - a) / a : 0, k }'
	fi
	case $k in "(preempted"*) continue ;; esac
	ocs=$((ocs + ${a:-0})) lps=$((lps + ${b:-0}))
done <$TMP/keys.order
awk -v a=$ocs -v b=$lps -v n=$n 'BEGIN { printf "  %12.1f %12.1f %+7.1f%%  total of the waits (%d stacks; preemption left out)\n",
	a / 1000, b / 1000, a ? 100 * (b - a) / a : 0, n }'
# Per system call: luaprof's event is one per system call, with the
# kernel stack of its first stretch taken; a call that waits several
# times (fdatasync: the data's writeback, the inode's buffer, the disk's
# cache flush) puts all its stretches on that first stack, so its split
# between those stacks is not offcputime's, while its total is.
# (By the handler alone: offcputime's user stack is sometimes unreadable.)
echo "  per system call (its handler), ms:"
for f in oc lp; do
	awk '{ v = $NF; sub(/ [0-9]+$/, ""); n = split($0, p, ";"); k = n > 1 ? p[2] : $0; s[k] += v }
		END { for (k in s) print k, s[k] }' $TMP/$f.keys >$TMP/$f.calls
done
awk 'NR == FNR { v = $NF; sub(/ [0-9]+$/, ""); oc[$0] = v; all[$0] = 1; next }
	{ v = $NF; sub(/ [0-9]+$/, ""); lp[$0] = v; all[$0] = 1 }
	END { for (k in all) printf "  %12.1f %12.1f %+7.1f%%  %s\n", oc[k] / 1000, lp[k] / 1000,
		oc[k] ? 100 * (lp[k] - oc[k]) / oc[k] : 0, k }' $TMP/oc.calls $TMP/lp.calls | sort -k1,1 -rn | head -${TOP:-12}
echo "  load average after: $(cut -d' ' -f1-3 /proc/loadavg)"

#!/usr/bin/env bash
# bench/luawait_nginx.sh - what Lua-land waits (-e lua-wait: a uprobe on
# the entry and a uretprobe on the return of lua_resume) cost a server
# whose requests yield, beside CPU-only profiling in the same run, and
# whether the lua-wait profile still splits the waits right under load.
# nginx + lua module (2 workers, JIT on), two workloads:
#   waits  /waits (samples/nginx/waits.lua) under wrk -t2 -c WAITS_CONNS
#          (default 64): a, b, c yield 10 ms, 20 ms (ngx.sleep) and about
#          30 ms (a cosocket read of this nginx's /slow, itself a request
#          that sleeps 30 ms): little CPU, many resumes per request.
#   mixed  /mixed (added to samples/nginx/nginx.conf here): SLEEPS
#          (default 4) ngx.sleep(0), each a yield and a resume from a
#          zero timer, then app.lua's CPU work, under wrk -t2 -c
#          MIXED_CONNS (default 16): the workers busy, a high resume rate.
# The conf logs at "error", not "notice": Debian's nginx lacks the delayed
# events patch, and without it every ngx.sleep(0) writes a warning line
# to error.log, a write per yield that would be measured with the rest.
#
# Per workload, ROUNDS rounds (default 3) of four WINDOW-second windows
# (default 5), in an order rotated from round to round: (a) no profiler,
# (b) luaprof record -e cpu, (c) -e cpu,lua-wait, (d) -e
# cpu,off-cpu,lua-wait,stall, each -p MASTER at luaprof's default rate
# (or HZ).  A recorder's window starts SETTLE s (default 1) after it says
# it records and ends before it is stopped.  Per window:
#   req/s          wrk's (for waits: of /waits; each also made a /slow
#                  request, which wrk does not count)
#   worker CPU     the workers' utime + stime (/proc/PID/stat, ticks of
#                  10 ms: figures of whole windows) per request wrk counts
#   vcsw/s         the workers' voluntary context switches per second
#   rec %CPU       the recorder's own CPU, % of one CPU
#   resumes/s      lua_resume calls per second: run_cnt of the on_resume
#                  program (/proc/REC/fdinfo, kernel.bpf_stats_enabled set
#                  to 1 for the run and restored at exit); (c), (d) only.
#                  The probes are on the file, for every process: another
#                  LuaJIT program using the same libluajit on this machine
#                  adds its calls (on_resume leaves it at its first test).
#   lost           `luaprof info`'s lost count of the recording
# Each of (b), (c), (d) is a ratio to (a) of the same round; the tables
# give the median ratio over the rounds and their range; rec %CPU and
# resumes/s are medians.  (c) against (b) is what the lua-wait probes
# add to CPU profiling; (d) all that nginx can be asked to record.
# BPF: per program of (c) and (d), runs per second and mean ns per run
# (run_time_ns / run_cnt: the program's own time, not the uprobe's trap,
# nor the uretprobe's return trampoline, which show only in the workers'
# CPU; with bpf_stats_enabled each run also reads the clock twice).  The
# tracing programs (sys_exit, sys_enter, sched_switch, fork, exec, exit)
# run for the whole machine, others' work included.
# Shares (waits only, (c) and (d)): `luaprof report --kind lua-wait
# --format folded` summed under the frames a, b, c (and slow, /slow's own
# sleep), beside the handler's own clock (its answer "a b c" in us, summed
# by a wrk script over the window's requests), as a:b:c with a = 1, and
# each total's ratio profile/clock.  The recording holds a little more
# than the window (requests in flight when wrk stops finish their waits),
# so totals run a percent or two over; the shares should agree.
# nginx's error.log: its lines of level error and above, counted at the
# end and the first shown.
# Printed, never asserted.  Needs root, wrk (installed if missing),
# bpftool and tests/deps.sh's nginx packages.
set -u # not -e: the nginx helpers poll with commands that fail until ready
cd "$(dirname "$0")/.."
ROUNDS=${ROUNDS:-3}
WINDOW=${WINDOW:-5}
SETTLE=${SETTLE:-1}
HZ=${HZ:-}
WAITS_CONNS=${WAITS_CONNS:-64}
MIXED_CONNS=${MIXED_CONNS:-16}
SLEEPS=${SLEEPS:-4}
WORKLOADS=${WORKLOADS:-waits mixed}
. tests/lib.sh
. tests/nginx.sh
LUAPROF=$PWD/build/luaprof
export DEBIAN_FRONTEND=noninteractive
command -v wrk >/dev/null || apt-get install -y -qq wrk >/dev/null
command -v bpftool >/dev/null || apt-get install -y -qq bpftool >/dev/null
command -v nginx >/dev/null || tests/deps.sh
REC=
old_stats=$(sysctl -n kernel.bpf_stats_enabled)
sysctl -qw kernel.bpf_stats_enabled=1
trap 'sysctl -qw kernel.bpf_stats_enabled=$old_stats; [ -n "$REC" ] && kill $REC 2>/dev/null;
	nginx_stop >/dev/null 2>&1; cleanup' EXIT

# The conf: /mixed before /waits; errors only (see above).
awk -v n=$SLEEPS '/location = \/waits/ && !done {
		print "\t\tlocation = /mixed {\n\t\t\tdefault_type text/plain;\n\t\t\tcontent_by_lua_block {"
		print "\t\t\t\tfor _ = 1, " n " do ngx.sleep(0) end\n\t\t\t\trequire(\"app\").handle()"
		print "\t\t\t}\n\t\t}"
		done = 1 }
	{ sub(/error_log logs\/error.log notice;/, "error_log logs/error.log error;"); print }' \
	samples/nginx/nginx.conf >$TMP/nginx.conf
# The handler's clock: the sums of its answers "a b c" (us) over the window.
cat >$TMP/clock.lua <<'EOF'
local threads = {}
function setup(thread) threads[#threads + 1] = thread end
function init() n, sa, sb, sc = 0, 0, 0, 0 end
function response(status, headers, body)
	local a, b, c = body:match("^(%d+) (%d+) (%d+)")
	if a then n, sa, sb, sc = n + 1, sa + a, sb + b, sc + c end
end
function done()
	local N, A, B, C = 0, 0, 0, 0
	for _, t in ipairs(threads) do
		N, A, B, C = N + t:get("n"), A + t:get("sa"), B + t:get("sb"), C + t:get("sc")
	end
	io.write(string.format("clock: %d %.0f %.0f %.0f\n", N, A, B, C))
end
EOF
NGINX_CONF_SRC=$TMP/nginx.conf
NGINX_JIT=on nginx_start || exit 1
WORKERS=$(nginx_workers)
TCK=$(getconf CLK_TCK)
BASE=http://127.0.0.1:$NGINX_PORT
# The JIT compiles the handlers' traces.
wrk -t2 -c8 -d3s $BASE/mixed >/dev/null 2>&1
wrk -t2 -c16 -d2s $BASE/waits >/dev/null 2>&1

# recorder KINDS OUT: starts luaprof (tests/nginx.sh), sets REC, notes its programs.
recorder() {
	nginx_recorder $2 -e $1 ${HZ:+-F $HZ} || exit 1
	prog_names $REC
}
# shares TRACE: "a b c slow other" ms of lua-wait under each of those frames
# (folded lua-wait is in microseconds).
shares() {
	$LUAPROF report --kind lua-wait --format folded $1 2>/dev/null | awk '
		{ v = $NF; sub(/ [0-9]+$/, ""); n = split($0, f, ";"); k = "other"
		  for (i = 1; i <= n; i++) if (f[i] ~ /^(a|b|c|slow) \(.*waits\.lua:[0-9]+\)$/) k = substr(f[i], 1, index(f[i], " ") - 1)
		  s[k] += v }
		END { printf "%.1f %.1f %.1f %.1f %.1f\n", s["a"] / 1e3, s["b"] / 1e3, s["c"] / 1e3, s["slow"] / 1e3, s["other"] / 1e3 }'
}

# window WL CONF ROUND: one window; appends to $TMP/windows "WL CONF ROUND
# rps us_per_req rec_pct vcsw_per_s resumes_per_s lost", to $TMP/bpf "WL
# CONF ROUND prog runs_per_s ns_per_run", to $TMP/shares "WL CONF ROUND
# profile|clock a b c slow other" (ms).
window() {
	local wl=$1 conf=$2 out=$TMP/$1.$2.$3 w0 w1 r0=0 r1=0 c0 c1 t0 t1 rps req lost=- url conns script=
	case $wl in
	waits) url=$BASE/waits conns=$WAITS_CONNS script="-s $TMP/clock.lua" ;;
	mixed) url=$BASE/mixed conns=$MIXED_CONNS ;;
	esac
	case $conf in
	b) recorder cpu $out ;;
	c) recorder cpu,lua-wait $out ;;
	d) recorder cpu,off-cpu,lua-wait,stall $out ;;
	esac
	[ -n "$REC" ] && { sleep $SETTLE; bpf_stats >$out.bpf0; }
	t0=${EPOCHREALTIME/./}
	w0=$(ticks_of $WORKERS); c0=$(vcsw_of $WORKERS); [ -n "$REC" ] && r0=$(ticks_of $REC)
	wrk -t2 -c$conns -d${WINDOW}s $script $url >$out.wrk 2>&1
	w1=$(ticks_of $WORKERS); c1=$(vcsw_of $WORKERS); [ -n "$REC" ] && r1=$(ticks_of $REC)
	t1=${EPOCHREALTIME/./}
	local secs=$(awk -v a=$t0 -v b=$t1 'BEGIN { print (b - a) / 1e6 }') resumes=-
	if [ -n "$REC" ]; then
		bpf_stats >$out.bpf1
		nginx_recorder_stop
		awk -v wl=$wl -v c=$conf -v r=$3 -v s=$secs 'NR == FNR { n[$1] = $2; t[$1] = $3; next }
			{ d = $2 - n[$1]; printf "%s %s %s %s %.1f %.0f\n", wl, c, r, $1, d / s, d ? ($3 - t[$1]) / d : 0 }' \
			$out.bpf0 $out.bpf1 >>$TMP/bpf
		resumes=$(awk '$4 == "on_resume" { print $5 }' $TMP/bpf | tail -1)
		[ $conf = b ] && resumes=-
		lost=$($LUAPROF info $out.lp 2>/dev/null | awk '/^lost:/ { print $2; exit }')
		$LUAPROF info $out.lp 2>/dev/null | grep -E '^(events|lost):' >$out.info
		if [ $wl = waits ] && [ $conf != b ]; then
			echo "$wl $conf $3 profile $(shares $out.lp)" >>$TMP/shares
		fi
		rm -f $out.lp
	fi
	if [ $wl = waits ]; then
		awk -v wl=$wl -v c=$conf -v r=$3 '/^clock:/ { printf "%s %s %s clock %.1f %.1f %.1f - -\n", wl, c, r, $3 / 1e3, $4 / 1e3, $5 / 1e3 }' \
			$out.wrk >>$TMP/shares
	fi
	grep -q 'Socket errors\|Non-2xx' $out.wrk && echo "  $wl $conf round $3: wrk: $(grep 'Socket errors\|Non-2xx' $out.wrk | tr '\n' ' ')"
	rps=$(awk '/^Requests\/sec:/ { print $2 }' $out.wrk)
	req=$(awk '/requests in/ { print $1 }' $out.wrk)
	awk -v wl=$wl -v c=$conf -v r=$3 -v rps=${rps:-0} -v req=${req:-0} -v w=$((w1 - w0)) -v rc=$((r1 - r0)) \
		-v cs=$((c1 - c0)) -v t=$TCK -v s=$secs -v res=$resumes -v lost=${lost:-?} 'BEGIN {
		printf "%s %s %s %.1f %.1f %.2f %.1f %s %s\n", wl, c, r, rps, req ? 1e6 * w / t / req : 0,
			100 * rc / t / s, cs / s, res, lost }' >>$TMP/windows
}

echo "luawait_nginx.sh: nginx + lua (2 workers, JIT on) under wrk -t2 on loopback, $(nproc) CPUs, $(uname -r);"
echo "  waits: /waits, -c$WAITS_CONNS; mixed: /mixed ($SLEEPS x ngx.sleep(0), then app.lua), -c$MIXED_CONNS;"
echo "  $ROUNDS rounds of ${WINDOW} s windows per workload, order rotated; luaprof at ${HZ:-its default rate};"
echo "  load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
: >$TMP/windows
: >$TMP/bpf
: >$TMP/shares
for wl in $WORKLOADS; do
	for r in $(seq $ROUNDS); do
		case $((r % 4)) in
		1) order="a b c d" ;; 2) order="b c d a" ;; 3) order="c d a b" ;; 0) order="d a b c" ;;
		esac
		for conf in $order; do window $wl $conf $r; done
	done
done
echo "  load average after: $(cut -d' ' -f1-3 /proc/loadavg)"

MED='function med(x, n,    i, j, t) {
	for (i = 2; i <= n; i++) { t = x[i]; for (j = i - 1; j >= 1 && x[j] > t; j--) x[j + 1] = x[j]; x[j + 1] = t }
	return n % 2 ? x[(n + 1) / 2] : (x[n / 2] + x[n / 2 + 1]) / 2 }'
for wl in $WORKLOADS; do
	echo
	echo "$wl:"
	printf '  %-34s %26s %26s %26s %9s %10s %s\n' configuration "req/s" "worker CPU us/req" "worker vcsw/s" \
		"rec %CPU" "resumes/s" lost
	for conf in a b c d; do
		case $conf in
		a) name="(a) no profiler" ;; b) name="(b) -e cpu" ;; c) name="(c) -e cpu,lua-wait" ;;
		d) name="(d) -e cpu,off-cpu,lua-wait,stall" ;;
		esac
		awk -v wl=$wl -v c=$conf -v name="$name" "$MED"'
			$1 != wl { next }
			$2 == "a" { for (k = 4; k <= 7; k++) a[$3, k] = $k }
			$2 == c { n++; for (k = 3; k <= 9; k++) W[n, k] = $k }
			END {
				printf "  %-34s", name
				for (k = 4; k <= 8; k++) {
					m = 0
					for (i = 1; i <= n; i++) x[i] = W[i, k]
					if (k == 8 && x[1] == "-") { printf " %10s", "-"; continue }
					m = med(x, n)
					if (k == 8) { printf " %10.0f", m; continue }
					if (c == "a" || k == 6) { printf k == 6 ? " %9.2f" : " %26.1f", m; continue }
					for (i = 1; i <= n; i++) { r = a[W[i, 3], k]; x[i] = r ? W[i, k] / r : 0 }
					lo = hi = x[1]; for (i = 2; i <= n; i++) { if (x[i] < lo) lo = x[i]; if (x[i] > hi) hi = x[i] }
					printf " %26s", sprintf("%.1f x%.3f [%.3f-%.3f]", m, med(x, n), lo, hi)
				}
				l = ""; for (i = 1; i <= n; i++) l = l (i > 1 ? "," : "") W[i, 9]
				printf " %s\n", c == "a" ? "-" : l }' $TMP/windows
	done
	echo "  resumes per request, (c) and (d): $(awk -v wl=$wl '$1 == wl && $8 != "-" && $4 > 0 { printf "%s%.2f", s, $8 / $4; s = " " }' $TMP/windows)"
	echo "  BPF programs, median over the rounds: runs/s, ns/run"
	for conf in b c d; do
		awk -v wl=$wl -v c=$conf "$MED"'
			$1 == wl && $2 == c { if (!($4 in seen)) { seen[$4] = 1; names[++np] = $4 }
				n[$4]++; R[$4, n[$4]] = $5; T[$4, n[$4]] = $6 }
			END {
				printf "    (%s)", c
				for (p = 1; p <= np; p++) {
					k = names[p]
					for (i = 1; i <= n[k]; i++) x[i] = R[k, i]; r = med(x, n[k])
					for (i = 1; i <= n[k]; i++) x[i] = T[k, i]; t = med(x, n[k])
					printf " %s %.0f/s %.0f ns;", k, r, t
				}
				printf "\n" }' $TMP/bpf
	done
	if grep -q "^$wl " $TMP/shares; then
		echo "  lua-wait shares a:b:c (a = 1) and totals (s) per window, profile beside the handler's clock:"
		awk -v wl=$wl '$1 == wl { v[$2, $3, $4] = $5 " " $6 " " $7 " " $8; k[$2 " " $3] = 1 }
			END {
				for (cr in k) {
					split(cr, q, " "); c = q[1]; r = q[2]
					if (!((c, r, "profile") in v)) continue
					split(v[c, r, "profile"], p, " "); split(v[c, r, "clock"], t, " ")
					printf "    (%s) round %s: profile 1:%.2f:%.2f (%.1f %.1f %.1f s; slow %.1f s), clock 1:%.2f:%.2f (%.1f %.1f %.1f s), profile/clock %.3f %.3f %.3f\n",
						c, r, p[2] / p[1], p[3] / p[1], p[1] / 1e3, p[2] / 1e3, p[3] / 1e3, p[4] / 1e3,
						t[2] / t[1], t[3] / t[1], t[1] / 1e3, t[2] / 1e3, t[3] / 1e3,
						p[1] / t[1], p[2] / t[2], p[3] / t[3]
				}
			}' $TMP/shares | sort -k1,1 -k3,3n
	fi
	echo "  per window: workload conf round req/s us/req rec%CPU vcsw/s resumes/s lost:"
	awk -v wl=$wl '$1 == wl' $TMP/windows | sort -k3,3n -k2,2 | sed 's/^/    /'
done
for f in $TMP/waits.d.*.info $TMP/mixed.d.*.info; do
	[ -e $f ] && echo "  $(basename $f .info): $(tr '\n' ' ' <$f)"
done
echo
n=$(grep -c '\[\(error\|crit\|alert\|emerg\)\]' $NGINX_PREFIX/logs/error.log)
echo "nginx error.log: $n lines of level error and above"
grep -m5 '\[\(error\|crit\|alert\|emerg\)\]' $NGINX_PREFIX/logs/error.log | cut -c1-240 | sed 's/^/  /'

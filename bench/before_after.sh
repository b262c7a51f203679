#!/usr/bin/env bash
# bench/before_after.sh - the size, memory and report-speed goals,
# one build of luaprof against another on the same machine state: BASE
# (another tree's build/luaprof, say main's) beside this tree's, with
# `perf record -g` beside both where a recorder is measured.
#
#   short traces  nginx + lua module (JIT on, 2 workers) under wrk: both
#                 luaprofs record the master at 99 Hz for SECS (8) at
#                 the same time, perf beside them, ROUNDS (5) rounds;
#                 bytes/sample of each whole trace (everything embedded),
#                 median over the rounds.
#   memory        one small target, samples/lua/abc.lua (CPU-bound LuaJIT):
#                 both luaprofs and perf record it at 999 Hz for
#                 MEM_SECONDS (120) at the same time; each one's max RSS
#                 (GNU time: everything it maps, the BPF maps it mmaps).
#   report speed  each format on two synthetic traces of SAMPLES (1M)
#                 samples (bench/synth, as bench/views.sh: wide and
#                 narrow), the two builds alternating, the fastest of
#                 RUNS (3) kept; samples/s from CPU seconds (user +
#                 system, less disturbed by others than wall time), and
#                 whether both wrote the same bytes.
#
# Recording side by side means both see the same load; the machine is
# shared, so figures are medians or minima of repeated runs.
#   usage: BASE=/path/to/other/build/luaprof bench/before_after.sh [size|memory|report]...
# Needs root, perf (linux-perf) and tests/deps.sh's packages.
set -u # not -e: the nginx helpers poll with commands that fail until ready
cd "$(dirname "$0")/.."
: "${BASE:?BASE=path of the luaprof to compare with}"
ROUNDS=${ROUNDS:-5}
SECONDS_PER_RUN=${SECS:-8}
MEM_SECONDS=${MEM_SECONDS:-120}
NSAMPLES=${SAMPLES:-1000000} # tests/lib.sh sets SAMPLES
RUNS=${RUNS:-3}
NEW=$PWD/build/luaprof
LUAPROF=$NEW
PARTS=${*:-size memory report}
. tests/lib.sh
. tests/nginx.sh
make --no-print-directory -s build/luaprof build/bench/synth
median() { tr ' ' '\n' | grep . | sort -n | awk '{ v[NR] = $1 } END { print NR ? v[int((NR + 1) / 2)] : 0 }'; }
bps() { awk -v b="$1" -v s="$2" 'BEGIN { printf "%.1f", s ? b / s : 0 }'; }
pf_samples() { perf script -i "$1" -F pid 2>/dev/null | wc -l; }

# ---- short traces: nginx at 99 Hz -----------------------------------------
size_part() {
	local r tool rec_b rec_n pf out f same
	declare -A B
	tests/deps.sh
	NGINX_JIT=on nginx_start || return 1
	for r in $(seq "$ROUNDS"); do
		out=$TMP/size-$r
		"$BASE" record -F 99 -d "$SECONDS_PER_RUN" -p "$NGINX_MASTER" -o "$out-base.lp" \
			2>"$out-base.err" &
		rec_b=$!
		"$NEW" record -F 99 -d "$SECONDS_PER_RUN" -p "$NGINX_MASTER" -o "$out-new.lp" \
			2>"$out-new.err" &
		rec_n=$!
		perf record -q -g -F 99 -o "$out.data" -p "$NGINX_MASTER,$(nginx_workers | paste -sd,)" \
			-- sleep "$SECONDS_PER_RUN" >/dev/null 2>&1 &
		pf=$!
		wait_for grep -q recording "$out-base.err"
		wait_for grep -q recording "$out-new.err"
		nginx_load $((SECONDS_PER_RUN + 1)) >/dev/null 2>&1
		wait $rec_b $rec_n $pf
		B[base]+=" $(bps "$(stat -c %s "$out-base.lp")" "$(trace_samples "$out-base.lp")")"
		B[new]+=" $(bps "$(stat -c %s "$out-new.lp")" "$(trace_samples "$out-new.lp")")"
		B[perf]+=" $(bps "$(stat -c %s "$out.data")" "$(pf_samples "$out.data")")"
	done
	nginx_stop >/dev/null 2>&1
	echo "short traces: nginx (JIT on, 2 workers) under wrk, $SECONDS_PER_RUN s at 99 Hz, $ROUNDS rounds"
	printf '  %-8s %14s   %s\n' recorder "bytes/sample" "(median; each round)"
	for tool in base new perf; do
		printf '  %-8s %14s   %s\n' $tool "$(echo ${B[$tool]} | median)" "${B[$tool]# }"
	done
	# The new build reads the base's traces as the base does.
	for f in folded top; do
		"$BASE" report --format $f -o "$TMP/base-reads.$f" "$TMP/size-$ROUNDS-base.lp" 2>/dev/null
		"$NEW" report --format $f -o "$TMP/new-reads.$f" "$TMP/size-$ROUNDS-base.lp" 2>/dev/null
		cmp -s "$TMP/base-reads.$f" "$TMP/new-reads.$f" && same=same || same=DIFFERENT
		echo "  the base's trace, --format $f: the new build's report is the $same"
	done
}

# ---- memory: one small LuaJIT target at 999 Hz ----------------------------
memory_part() {
	local target b n p
	luajit samples/lua/abc.lua $((MEM_SECONDS + 60)) &
	target=$!
	CLEANUP_PIDS+=($target)
	/usr/bin/time -o "$TMP/mem-base.time" -f '%M' "$BASE" record -v -F 999 -d "$MEM_SECONDS" \
		-p $target -o "$TMP/mem-base.lp" >/dev/null 2>"$TMP/mem-base.err" &
	b=$!
	/usr/bin/time -o "$TMP/mem-new.time" -f '%M' "$NEW" record -v -F 999 -d "$MEM_SECONDS" \
		-p $target -o "$TMP/mem-new.lp" >/dev/null 2>"$TMP/mem-new.err" &
	n=$!
	/usr/bin/time -o "$TMP/mem-perf.time" -f '%M' perf record -q -g -F 999 -p $target \
		-o "$TMP/mem.data" -- sleep "$MEM_SECONDS" >/dev/null 2>&1 &
	p=$!
	wait $b $n $p
	kill $target 2>/dev/null
	echo "memory: one LuaJIT process (samples/lua/abc.lua), 999 Hz, $MEM_SECONDS s, recorded by all three at once"
	printf '  %-8s %10s %12s %14s\n' recorder samples "max RSS MiB" "bytes/sample"
	for tool in base new; do
		printf '  %-8s %10s %12.1f %14s\n' $tool "$(trace_samples "$TMP/mem-$tool.lp")" \
			"$(echo "$(cat "$TMP/mem-$tool.time") / 1024" | bc -l)" \
			"$(bps "$(stat -c %s "$TMP/mem-$tool.lp")" "$(trace_samples "$TMP/mem-$tool.lp")")"
	done
	printf '  %-8s %10s %12.1f %14s\n' perf "$(pf_samples "$TMP/mem.data")" \
		"$(echo "$(cat "$TMP/mem-perf.time") / 1024" | bc -l)" \
		"$(bps "$(stat -c %s "$TMP/mem.data")" "$(pf_samples "$TMP/mem.data")")"
	grep -E "BPF maps:|native unwind: [0-9]+ objects" "$TMP/mem-new.err" | sed 's/^luaprof record: /  new: /'
}

# ---- report speed ---------------------------------------------------------
# cpu_secs COMMAND...: its user + system seconds.
cpu_secs() {
	/usr/bin/time -o "$TMP/time" -f '%U %S' "$@" >/dev/null 2>&1
	awk '{ print $1 + $2 }' "$TMP/time"
}

report_table() { # shape synth-args...
	local shape=$1 f n i tool t best same
	shift
	rm -f "$TMP/a.lp" "$TMP/b.lp" # the writer never replaces a file
	build/bench/synth -n "$NSAMPLES" "$@" "$TMP/a.lp"
	build/bench/synth -n "$NSAMPLES" -s 2 "$@" "$TMP/b.lp"
	echo "report speed, $shape trace: $NSAMPLES samples, $("$NEW" report --format folded "$TMP/a.lp" | wc -l) distinct stacks"
	printf '  %-12s %14s %14s %8s %6s\n' format "base samples/s" "new samples/s" new/base same
	for f in folded top callgraph flamegraph pprof speedscope diff; do
		n=$NSAMPLES
		[ $f = diff ] && n=$((2 * NSAMPLES))
		declare -A BEST=()
		for i in $(seq "$RUNS"); do
			for tool in base new; do
				bin=$BASE
				[ $tool = new ] && bin=$NEW
				if [ $f = diff ]; then
					t=$(cpu_secs "$bin" diff -o "$TMP/out-$tool.$f" "$TMP/a.lp" "$TMP/b.lp")
				else
					t=$(cpu_secs "$bin" report --format $f -o "$TMP/out-$tool.$f" "$TMP/a.lp")
				fi
				best=${BEST[$tool]:-}
				if [ -z "$best" ] || awk -v a="$t" -v b="$best" 'BEGIN { exit !(a < b) }'; then
					BEST[$tool]=$t
				fi
			done
		done
		same=no
		cmp -s "$TMP/out-base.$f" "$TMP/out-new.$f" && same=yes
		awk -v f=$f -v n=$n -v b="${BEST[base]}" -v w="${BEST[new]}" -v same=$same 'BEGIN {
			bs = b > 0 ? n / b : 0; ns = w > 0 ? n / w : 0
			printf "  %-12s %14.0f %14.0f %8.2f %6s\n", f, bs, ns, bs ? ns / bs : 0, same }'
	done
}

report_part() {
	report_table wide
	report_table narrow -k 10
	echo "  (samples/s from CPU seconds, user + system, the fastest of $RUNS runs; diff reads two traces)"
}

echo "base: $BASE ($("$BASE" --version 2>/dev/null | head -1))"
echo "new:  $NEW ($("$NEW" --version 2>/dev/null | head -1))"
for part in $PARTS; do
	case $part in
	size) size_part ;;
	memory) memory_part ;;
	report) report_part ;;
	*) echo "bench/before_after.sh: unknown part '$part' (size, memory, report)" >&2; exit 2 ;;
	esac
	echo
done

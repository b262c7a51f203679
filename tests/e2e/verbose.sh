# verbose.sh - what record says of the BPF sampler's own cost.  -v: its
# time per sample (median, p90, p99 from its run-time histogram) and the
# kernel's count of its runs, without the phase clock, which costs a
# sample up to 0.6 us and would be in the median; -vv: where the time
# goes too, by phase, whose means add up to about the whole (bpf/phases.h:
# the phases cover the program but for its last few instructions).
. tests/lib.sh

# quantile FILE NAME : -v's figure NAME (median, p90, p99) in us.
quantile() {
	sed -nE "s/.*BPF sampler time per sample:.* $2 >?([0-9.]+) us.*/\1/p" "$1" | head -n 1
}
# phases FILE : -vv's phase means, "NAME X us" a line.
phases() {
	sed -nE 's/.*BPF sampler phases, mean per sample: ([^;]*);.*/\1/p' "$1" | tr ',' '\n'
}

for v in -v -vv; do
	$LUAPROF record $v -F 999 -o $TMP/hot$v.lp -- $SAMPLES/hot 1 >/dev/null 2>$TMP/err$v
	check "record $v -- hot exits 0" test $? -eq 0
	check_num "record $v: the sampler's median per sample" "$(quantile $TMP/err$v median)" ">" 0
	check_num "record $v: its p99 is no less" "$(quantile $TMP/err$v p99)" ">=" \
		"$(quantile $TMP/err$v median)"
done
check "record -v: no phases (their clock would be in the median)" \
	test -z "$(grep 'BPF sampler phases' $TMP/err-v)"
check_num "record -vv: the six phases" "$(phases $TMP/err-vv | grep -c ' us$')" "==" 6
# The phases' sum is the program's mean time per sample, less its entry
# and its last few instructions.  The kernel's own clock of the program
# (runs x ns per run, over the samples) holds that and the runs on other
# processes' ticks, which make no sample: the sum is below it, and above
# a quarter of it (0.6 of it on hot, a busy target beside idle CPUs).
sum=$(phases $TMP/err-vv | awk '{ s += $(NF - 1) } END { if (NR) print s }')
whole=$(awk '/BPF sampler: [0-9]+ runs, [0-9]+ ns per run/ { r = $5; ns = $7 }
	/^luaprof record: [0-9]+ samples/ { n = $3 }
	END { if (n && ns) printf "%.3f\n", r * ns / n / 1000 }' $TMP/err-vv)
check_num "record -vv: the phases add up to the sampler's time ($sum us of $whole)" \
	"$(awk -v s="${sum:-0}" -v w="${whole:-0}" 'BEGIN { print w ? s / w : 0 }')" ">=" 0.25
check_num "record -vv: and not to more" \
	"$(awk -v s="${sum:-0}" -v w="${whole:-0}" 'BEGIN { print w ? s / w : 1e9 }')" "<=" 1

# The sampler loads at a raised priority (record/session.c, SETUP_NICE),
# the command record launches runs at record's own: niceness 5 stays 5.
n=$(nice -n 5 $LUAPROF record -q -o $TMP/nice.lp -- sh -c 'cut -d" " -f19 /proc/self/stat')
check_num "the launched command's niceness is record's own" "${n:-x}" "==" 5
check "record -v: the setup's CPU and wall-clock time" \
	grep -qE 'recorder CPU: setup [0-9.]+ ms in [0-9.]+ ms of wall-clock time \(BPF load' $TMP/err-v

# native_stacks.sh - records real programs with BPF and checks that the
# report names their hot functions, with their callers, in the right shares,
# and that the sample count matches rate x the CPU time the target got.
. tests/lib.sh

# samples/hot: work_a, work_b, work_c share spin() 1:2:3 for 4 seconds.
T0=$(date +%s.%N)
$LUAPROF record -q -F 999 -d 30 -o $TMP/hot.lp -- $SAMPLES/hot 4 2>$TMP/rec.err
rc=$?
T1=$(date +%s.%N)
check "record -- hot exits 0" test $rc -eq 0
check_num "recording ends when the command exits" "$(awk -v a=$T0 -v b=$T1 'BEGIN{print b-a}')" "<" 10

$LUAPROF report --format folded -o $TMP/hot.folded $TMP/hot.lp 2>$TMP/rep.err
check "report --format folded exits 0" test $? -eq 0
total=$(folded_total $TMP/hot.folded)
# One busy thread for 4 s at 999 Hz: about 3996 samples on an idle
# machine; on a busy one, rate x the CPU time hot reports it got.
cpu=$(awk '/^hot: .* s of CPU$/ { print $2 }' $TMP/rec.err)
check "hot reported its CPU time" test -n "$cpu"
expected=$(awk -v c=${cpu:-0} 'BEGIN { print int(c * 999) }')
check_num "samples about rate x CPU time (low: $expected x 0.9)" "$total" ">=" \
	"$(awk -v e=$expected 'BEGIN { print int(e * 0.9) }')"
check_num "samples about rate x CPU time (high: $expected x 1.05)" "$total" "<=" \
	"$(awk -v e=$expected 'BEGIN { print int(e * 1.05) + 5 }')"
a=$(folded_incl $TMP/hot.folded work_a)
b=$(folded_incl $TMP/hot.folded work_b)
c=$(folded_incl $TMP/hot.folded work_c)
check_num "work_a inclusive share ~1/6" "$(share $a $total)" "<" 0.2067
check_num "work_a inclusive share ~1/6 (low)" "$(share $a $total)" ">" 0.1267
check_num "work_b inclusive share ~2/6" "$(share $b $total)" "<" 0.3733
check_num "work_b inclusive share ~2/6 (low)" "$(share $b $total)" ">" 0.2933
check_num "work_c inclusive share ~3/6" "$(share $c $total)" "<" 0.54
check_num "work_c inclusive share ~3/6 (low)" "$(share $c $total)" ">" 0.46
check "caller chain main;run;work_c;spin" grep -q "main;run;work_c;spin " $TMP/hot.folded
check "no bare addresses in frames" bash -c "! grep -qE '(^|;)0x[0-9a-f]+( |;)' $TMP/hot.folded"

$LUAPROF report --format top -n 5 $TMP/hot.lp >$TMP/top.txt 2>/dev/null
check "top names spin as the hottest by self" bash -c "grep -A3 -i 'self' $TMP/top.txt | grep -q spin"
$LUAPROF report --format callgraph $TMP/hot.lp >$TMP/cg.txt 2>/dev/null
check "callgraph shows the chain" grep -q work_c $TMP/cg.txt

$LUAPROF info $TMP/hot.lp >$TMP/info.txt
check "info exits 0" test $? -eq 0
check "info shows the sample count" grep -qE "samples.*\b$total\b" $TMP/info.txt
check "info says complete" grep -qi "complete" $TMP/info.txt
check "the default codec is zlib" grep -qE "^codecs:.*zlib \(" $TMP/info.txt

# Filters: a pid that is not in the trace keeps nothing; its own, all.
rm -f $TMP/none.folded
$LUAPROF report --format folded --pid 1 -o $TMP/none.folded $TMP/hot.lp 2>/dev/null
check "report --pid 1 exits 0, with a file" test $? -eq 0 -a -f $TMP/none.folded
check "--pid filter drops other processes" test "$(folded_total $TMP/none.folded)" -eq 0
hotpid=$(info_pids $TMP/hot.lp | head -1)
$LUAPROF report --format folded --pid "${hotpid:-0}" -o $TMP/own.folded $TMP/hot.lp 2>/dev/null
check "--pid filter keeps the process's own ($total samples)" \
	test "$(folded_total $TMP/own.folded)" -eq "$total" -a "$total" -gt 0

# A kernel-heavy command: kernel frames come out named, suffixed _[k].
$LUAPROF record -q -F 999 -o $TMP/dd.lp --compress lz4 -- \
	dd if=/dev/zero of=/dev/null bs=64k count=200000 2>/dev/null
check "record -- dd with lz4 exits 0" test $? -eq 0
$LUAPROF info $TMP/dd.lp >$TMP/ddinfo.txt
check "--compress lz4 writes lz4 chunks" grep -qE "^codecs:.*lz4 \(" $TMP/ddinfo.txt
$LUAPROF report --format folded -o $TMP/dd.folded $TMP/dd.lp 2>/dev/null
check "kernel frames are named and suffixed _[k]" grep -qE '[a-z_]+_\[k\]' $TMP/dd.folded
check "the read syscall path is seen" grep -qE 'sys_read_\[k\]|ksys_read_\[k\]|vfs_read_\[k\]' $TMP/dd.folded
check "user frames of dd sit below the kernel frames" grep -qE '(read|main)[^;]*;.*_\[k\]' $TMP/dd.folded

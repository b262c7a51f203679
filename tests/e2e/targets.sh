# targets.sh - which processes get recorded: -p on a process tree (existing
# and newly forked children), --no-children, a target that exits mid-way,
# a launched command that forks, and clean stops on SIGINT and SIGKILL.
. tests/lib.sh

# -p on a tree: two children exist before recording, a third is forked
# (on SIGUSR1) while recording.
$SAMPLES/tree 2 8 >$TMP/tree.out &
tree=$!
CLEANUP_PIDS+=($tree)
wait_line $TMP/tree.out ready
$LUAPROF record -F 199 -d 3 -p $tree -o $TMP/tree.lp 2>$TMP/rec.err &
rec=$!
wait_line $TMP/rec.err "recording"
kill -USR1 $tree
wait $rec
check "record -p on a tree exits 0" test $? -eq 0
$LUAPROF report --format folded --comm -o $TMP/tree.folded $TMP/tree.lp 2>/dev/null
check "existing children are sampled" grep -q "child_work" $TMP/tree.folded
check "a child forked while recording is sampled" grep -q "late_child_work" $TMP/tree.folded
$LUAPROF info $TMP/tree.lp >$TMP/tree.info
npids=$(awk '/^processes/,/^$/' $TMP/tree.info | grep -cE '^\s+[0-9]+')
check_num "info lists the parent and three children" "$npids" ">=" 4
kill $tree 2>/dev/null; wait $tree 2>/dev/null || true

# --no-children: only the parent, which just waits, so no child frames.
$SAMPLES/tree 2 4 >$TMP/tree2.out &
tree=$!
CLEANUP_PIDS+=($tree)
wait_line $TMP/tree2.out ready
$LUAPROF record -q -F 199 -d 1 --no-children -p $tree -o $TMP/nochild.lp
check "record --no-children -p exits 0" test $? -eq 0
$LUAPROF report --format folded -o $TMP/nochild.folded $TMP/nochild.lp 2>/dev/null
check "--no-children leaves children out" bash -c "! grep -q child_work $TMP/nochild.folded"
# (The parent only waits: no samples.  Its children ran, and are not in
# the trace's processes.)
check "--no-children: the trace's one process is the parent" \
	test "$(info_pids $TMP/nochild.lp | tr '\n' ' ')" = "$tree "
kill $tree 2>/dev/null; wait $tree 2>/dev/null || true

# A launched command that forks: its children are followed.
$LUAPROF record -q -F 199 -o $TMP/launch.lp -- $SAMPLES/tree 2 1.5 >/dev/null
check "record -- tree exits 0" test $? -eq 0
$LUAPROF report --format folded -o $TMP/launch.folded $TMP/launch.lp 2>/dev/null
check "children of a launched command are followed" grep -q child_work $TMP/launch.folded

# Processes whose threads exit together, a few hundred a second: a sample
# of one thread in do_exit() may reach the recorder after the exit event
# its last thread sent.  Before the recorder held exits back, such a
# sample was named against mappings already dropped, [unmapped], and made
# the process anew: its pid twice in info.
$LUAPROF record -q -F 999 -o $TMP/exits.lp -- $SAMPLES/exits 4 >$TMP/exits.out
check "record -- exits exits 0" test $? -eq 0
$LUAPROF report --format folded -o $TMP/exits.folded $TMP/exits.lp 2>/dev/null
read -r total _ garbage _ < <(stack_bars $TMP/exits.folded)
nexit=$(grep -F 'do_exit_[k]' $TMP/exits.folded | folded_total /dev/stdin)
check_num "exits: samples ($(cat $TMP/exits.out))" "${total:-0}" ">=" 300
check_num "exits: samples in do_exit, of $total" "$nexit" ">=" 5
check_num "exits: samples with a garbage frame" "$garbage" "==" 0 ||
	show_stacks $TMP/exits.folded.garbage
check_num "exits: pids in info more than once" \
	"$(info_pids $TMP/exits.lp | sort | uniq -d | wc -l)" "==" 0
# A child gone before the recorder read it runs its parent's image.
check_num "exits: processes in info with no exe" \
	"$($LUAPROF info $TMP/exits.lp | awk '$1 ~ /^[0-9]+$/ && $NF == "?"' | wc -l)" "==" 0

# A target that exits mid-way ends the recording, and the trace is whole.
# It exits once it has had half a second of CPU under the recorder (on a
# busy machine the recorder's setup may take longer than the target's
# whole run: then nothing before the exit was ever sampled).
$SAMPLES/hot 30 2>/dev/null &
hot=$!
CLEANUP_PIDS+=($hot)
$LUAPROF record -F 499 -d 30 -p $hot -o $TMP/exit.lp 2>$TMP/exit.err &
rec=$!
CLEANUP_PIDS+=($rec)
wait_line $TMP/exit.err recording
c0=$(cpu_seconds $hot)
wait_for eval 'awk -v a=$c0 -v b=$(cpu_seconds $hot) "BEGIN { exit !(b - a >= 0.5) }"'
T0=$(date +%s.%N)
kill $hot
wait $rec
rc=$?
T1=$(date +%s.%N)
check "record of an exiting target exits 0" test $rc -eq 0
check_num "recording ended with the target" "$(awk -v a=$T0 -v b=$T1 'BEGIN{print b-a}')" "<" 8
$LUAPROF info $TMP/exit.lp >$TMP/exit.info
# (Its row: PID PPID COMM JOINED EXIT SAMPLES EXE, EXIT "+S.SSS s".)
check "info shows the target's exit" \
	awk -v p=$hot '$1 == p && $5 ~ /^\+[0-9.]+$/ && $6 == "s" { f = 1 } END { exit !f }' $TMP/exit.info
check "info says complete" grep -qi "complete" $TMP/exit.info
$LUAPROF report --format folded -o $TMP/exit.folded $TMP/exit.lp 2>/dev/null
check "samples before the exit are kept" grep -q spin $TMP/exit.folded

# SIGINT stops cleanly and finishes the file.
$SAMPLES/hot 30 &
hot=$!
CLEANUP_PIDS+=($hot)
$LUAPROF record -F 499 -p $hot -o $TMP/int.lp 2>$TMP/int.err &
rec=$!
wait_line $TMP/int.err "recording"
wait_for test -s $TMP/int.lp
kill -INT $rec
wait $rec
check "SIGINT: exit 0" test $? -eq 0
check "SIGINT: summary printed" grep -q "samples" $TMP/int.err
$LUAPROF info $TMP/int.lp >$TMP/int.info 2>&1
check "SIGINT: trace complete" grep -qi "complete" $TMP/int.info

# SIGKILL after 8 s: at least 80% of the samples taken (999 Hz x the CPU
# time hot had meanwhile) are recovered (the recorder flushes once a
# second, and what the ring buffer held is lost too), and the report
# says the trace was cut short.
$LUAPROF record -F 999 -p $hot -o $TMP/kill.lp 2>$TMP/kill.err &
rec=$!
wait_line $TMP/kill.err "recording"
C0=$(cpu_seconds $hot)
sleep 8 # the scenario itself: a recorder killed after 8 s
kill -KILL $rec
C1=$(cpu_seconds $hot)
wait $rec 2>/dev/null
expected=$(awk -v a=$C0 -v b=$C1 'BEGIN { printf "%d", (b - a) * 999 }')
$LUAPROF report --format folded -o $TMP/kill.folded $TMP/kill.lp 2>$TMP/kill.rep
check "SIGKILL: report exits 0" test $? -eq 0
got=$(folded_total $TMP/kill.folded)
check_num "SIGKILL: share of samples recovered" "$(share $got $expected)" ">=" 0.8
check "SIGKILL: report says the trace was cut short" grep -qi "cut short" $TMP/kill.rep
kill $hot 2>/dev/null; wait $hot 2>/dev/null || true

# -p 1 is every process but the kernel's: the recorder, a descendant of
# pid 1, leaves itself out, and says so.  hot keeps a CPU busy meanwhile.
$SAMPLES/hot 30 &
hot=$!
CLEANUP_PIDS+=($hot)
$LUAPROF record -F 199 -d 1 -p 1 -o $TMP/all.lp 2>$TMP/all.err &
rec=$!
wait $rec
check "record -p 1 exits 0" test $? -eq 0
check "record -p 1 says it leaves itself out" grep -q "not recording pid $rec, this recorder" $TMP/all.err
$LUAPROF report --format folded -o $TMP/all.folded $TMP/all.lp 2>/dev/null
check "record -p 1 records the others" grep -q spin $TMP/all.folded
$LUAPROF report --format folded --pid $rec -o $TMP/self.folded $TMP/all.lp 2>/dev/null
check "no sample of the recorder itself" test ! -s $TMP/self.folded
$LUAPROF info $TMP/all.lp >$TMP/all.info 2>/dev/null
check "the recorder is not among the processes" \
	bash -c "! awk '/^processes/,/^time span/' $TMP/all.info | grep -qE '^ +$rec '"
kill $hot 2>/dev/null; wait $hot 2>/dev/null || true

# A target list that is only the recorder has nothing to record.
expect_self() {
	bash -c 'exec "$1" record -d 1 -p $$ -o "$2"' _ $LUAPROF $TMP/self.lp >/dev/null 2>$TMP/self.err
}
expect_self
check "record -p SELF exits 1" test $? -eq 1
check "record -p SELF says why" grep -q "this recorder itself: nothing to record" $TMP/self.err

# A kernel thread has no user stack: said, and recorded all the same.
kpid=$(awk '$1 == "Name:" && $2 == "kthreadd" { print FILENAME }' /proc/[0-9]*/status 2>/dev/null |
	head -1 | cut -d/ -f3)
if [ -n "$kpid" ]; then
	$LUAPROF record -F 99 -d 0.3 --no-children -p $kpid -o $TMP/kthread.lp 2>$TMP/kthread.err
	check "record of a kernel thread exits 0" test $? -eq 0
	check "record of a kernel thread warns it has no user stack" \
		grep -q "pid $kpid (kthreadd) is a kernel thread" $TMP/kthread.err
else
	fail "a kernel thread to record" "no kthreadd in /proc"
fi

# task_events.sh - record --task-events -- COMMAND: the cpu-clock event is
# opened on the launched command and inherited by its threads and
# children, so the sampler runs only on ticks of targets.  Beside a busy
# process that is not a target, record -v's "BPF sampler: N runs" (the
# kernel's count of every run, target or not) must then equal the samples
# taken plus those lost, where with the default per-CPU events every CPU's
# ticks run it (the control below: the check has teeth).
. tests/lib.sh

# runs FILE: from record -v's stderr.
runs() { sed -nE 's/.*BPF sampler: ([0-9]+) runs.*/\1/p' "$1" | head -n 1; }

# off_target FILE: the runs that made no sample and lost none.
off_target() { echo $(($(runs "$1") - $(record_summary "$1" samples) - $(record_summary "$1" lost))); }

# A process that is not a target keeps a CPU busy throughout.
$SAMPLES/hot 60 2>/dev/null &
busy=$!
CLEANUP_PIDS+=($busy)

# A launched tree: the parent forks two children that burn CPU; their
# events are inherited.
$LUAPROF record -v --task-events -F 499 -o $TMP/tree.lp -- $SAMPLES/tree 2 1.5 \
	>/dev/null 2>$TMP/tree.err
check "record --task-events -- tree exits 0" test $? -eq 0
if [ -z "$(runs $TMP/tree.err)" ] || [ -z "$(record_summary $TMP/tree.err samples)" ]; then
	fail "record -v says its runs and samples" "$(grep -E 'runs|samples' $TMP/tree.err)"
else
	n=$(record_summary $TMP/tree.err samples)
	check_num "--task-events: the tree is sampled" "$n" ">=" 20
	check_num "--task-events: no tick off the targets ($(runs $TMP/tree.err) runs, $n samples)" \
		"$(off_target $TMP/tree.err)" "<=" 2
fi
$LUAPROF report --format folded -o $TMP/tree.folded $TMP/tree.lp 2>/dev/null
check "--task-events: children forked by the command are sampled" grep -q child_work $TMP/tree.folded

# --no-children: the children inherit no event (attr.inherit_thread).
$LUAPROF record -v --task-events --no-children -F 499 -o $TMP/nochild.lp -- \
	$SAMPLES/tree 2 1 >/dev/null 2>$TMP/nochild.err
check "record --task-events --no-children exits 0" test $? -eq 0
$LUAPROF report --format folded -o $TMP/nochild.folded $TMP/nochild.lp 2>/dev/null
check "--task-events --no-children leaves children out" \
	bash -c "! grep -q child_work $TMP/nochild.folded"
# (The command only waits: no samples; its children ran.)
check "--task-events --no-children: the trace's one process is the command" \
	test "$(info_pids $TMP/nochild.lp | wc -l)" -eq 1
check_num "--task-events --no-children: the children do not tick" \
	"$(off_target $TMP/nochild.err)" "<=" 2

# The control: per-CPU events run the sampler on the busy process's ticks
# and on idle CPUs too, at least a third more runs than samples.
$LUAPROF record -v -F 499 -o $TMP/cpu.lp -- $SAMPLES/hot 1 >/dev/null 2>$TMP/cpu.err
n=$(record_summary $TMP/cpu.err samples)
check_num "per-CPU events: ticks off the target run the sampler ($(runs $TMP/cpu.err) runs, $n samples)" \
	"$(off_target $TMP/cpu.err)" ">" "$((${n:-0} / 3))"

# -p: a running process's threads would each need an event.
$LUAPROF record --task-events -p $busy -o $TMP/p.lp >/dev/null 2>$TMP/p.err
check "--task-events with -p is misuse (exit 2)" test $? -eq 2
check "... and says why" grep -q "needs -- COMMAND" $TMP/p.err

# offcpu.sh - off-CPU time (record -e off-cpu) against a ground truth:
# samples/lua/waits.lua's a, b and c wait off the CPU in three ways (an
# FFI nanosleep, a read on a pipe a child writes to late, os.execute's
# wait for a command) for about 1:2:3 of the time, and print what each
# took by the wall clock.  Their shares of luajit's off-CPU time, each
# under its Lua function and above the system call it waits in, must be
# those shares within 0.05; CPU samples taken beside them must be as
# without; report, pprof (`go tool pprof -sample_index=off_cpu`) and info
# must agree on the total.
. tests/lib.sh

export HOME=$TMP GOCACHE=$TMP/go-cache PPROF_TMPDIR=$TMP
$LUAPROF record -e cpu,off-cpu -F 999 -o $TMP/w.lp -- luajit samples/lua/waits.lua 15 \
	>$TMP/w.out 2>$TMP/w.err
check "record -e cpu,off-cpu exits 0" test $? -eq 0
read -r ta tb tc <$TMP/w.out
check "waits.lua printed its times" test -n "$tc"
$LUAPROF report --kind off-cpu --comm --format folded -o $TMP/w.folded $TMP/w.lp 2>$TMP/rep.err
check "report --kind off-cpu exits 0" test $? -eq 0
# WHO SYSCALL: luajit's off-CPU us under Lua function WHO and libc's SYSCALL.
waited() { grep "^luajit;" $TMP/w.folded | grep -F ";$1 (samples/lua/waits.lua:" |
	grep -F ";$2;" | folded_total /dev/stdin; }
a=$(waited a __nanosleep) b=$(waited b read) c=$(waited c wait4)
echo "# off-CPU us: a $a b $b c $c; by the wall clock ms: a $ta b $tb c $tc"
sum=$((a + b + c))
truth=$(awk -v a="$ta" -v b="$tb" -v c="$tc" 'BEGIN { print a + b + c }')
check_abc_shares "%s's share of the off-CPU time, against the wall clock's" 0.05 \
	"$a" "$b" "$c" "$ta" "$tb" "$tc"
# What is not off-CPU time: the CPU time spawning the commands (0.95 of
# the wall time is waits, idle) and, on a busy machine, the time the
# thread was preempted while it could run, which no one waits for.
check_num "off-CPU time of a, b and c, of the wall clock's (ms)" \
	"$(awk -v s="$sum" -v t="$truth" 'BEGIN { printf "%.3f", s / 1000 / t }')" ">=" 0.75
# Each wait above its kernel wait, as /proc/PID/stack shows one (the
# scheduler's own functions left out): nanosleep's, a pipe read's (6.1's
# pipe_read, 6.18's anon_pipe_read), wait4's.
check "a's waits end in the kernel's nanosleep" \
	grep -qE ";a \(samples/lua/waits.lua:[0-9]+\);.*;hrtimer_nanosleep_\[k\] [0-9]+$" $TMP/w.folded
check "b's waits end in a pipe read" \
	grep -qE ";b \(samples/lua/waits.lua:[0-9]+\);.*pipe_read_\[k\] [0-9]+$" $TMP/w.folded
check "c's waits end in wait4" \
	grep -qE ";c \(samples/lua/waits.lua:[0-9]+\);.*;do_wait_\[k\] [0-9]+$" $TMP/w.folded
check "no BPF or scheduler frame at a wait's leaf" \
	sh -c "! grep -qE '(bpf_|schedule)[a-z0-9_.]*_\[k\] [0-9]+$' $TMP/w.folded"

# The CPU samples beside them: kind cpu, the default, and the header
# counts the off-CPU events.
$LUAPROF report $TMP/w.lp >$TMP/cpu.top 2>/dev/null
events=$($LUAPROF info $TMP/w.lp | awk '/^events:/ { print $2 }')
check "info counts off-CPU events" test "${events:-0}" -gt 0
check "the CPU report names the off-CPU events" \
	grep -qF "# also in the trace: $events off-cpu events (--kind off-cpu)" $TMP/cpu.top
check "the CPU report has samples" grep -qE "^# samples: [1-9]" $TMP/cpu.top
total=$($LUAPROF report --kind off-cpu $TMP/w.lp 2>/dev/null | awk '/^# off-cpu:/ { print $3 }')
check "report's header and the folded lines agree" \
	test "$total" = "$($LUAPROF report --kind off-cpu --format folded $TMP/w.lp 2>/dev/null |
		folded_total /dev/stdin)"
# pprof: its own sample types, read by go tool pprof.
$LUAPROF report --kind off-cpu --format pprof -o $TMP/w.pb.gz $TMP/w.lp 2>/dev/null
go tool pprof -top -sample_index=off_cpu -nodecount=100000 $TMP/w.pb.gz >$TMP/pp.top 2>$TMP/pp.err
check "go tool pprof -sample_index=off_cpu reads it" test $? -eq 0
check "go tool pprof: c's wait among the functions" grep -qF "c (samples/lua/waits.lua:" $TMP/pp.top
# record's misuse.
$LUAPROF record -e cpu,wall -o $TMP/x.lp -- true >/dev/null 2>$TMP/mis.err
check "record -e with an unknown kind is misuse" test $? -eq 2
check "... saying which" grep -qF "unknown event kind 'wall'" $TMP/mis.err

# The wall view: each thread's CPU samples and waits on one axis, under
# the thread.  luajit's main thread spent its run on the CPU or waiting
# in a, b, c (by the clock above): its wall time is about that, not less
# than the waits alone, nor much more than the run.
$LUAPROF report --kind wall --format folded -o $TMP/wall.folded $TMP/w.lp 2>/dev/null
check "report --kind wall exits 0" test $? -eq 0
pid=$(awk '/^luajit tid [0-9]+;/ { sub(/^luajit tid /, ""); sub(/;.*/, ""); print; exit }' \
	$TMP/wall.folded)
check "the wall view roots luajit's stacks at its thread" test -n "$pid"
wall=$(grep "^luajit tid $pid;" $TMP/wall.folded | folded_total /dev/stdin)
check_num "luajit's wall time, of its waits' by the clock" \
	"$(awk -v w="$wall" -v t="$truth" 'BEGIN { printf "%.3f", w / 1000 / t }')" ">=" 0.95
check_num "... and not much more" \
	"$(awk -v w="$wall" -v t="$truth" 'BEGIN { printf "%.3f", w / 1000 / t }')" "<=" 1.3
# speedscope: the thread's timeline holds its samples and waits, in time
# order, weighed in nanoseconds, adding up to the folded view's time
# (besides the gaps between them, empty stacks).
$LUAPROF report --kind wall --format speedscope -o $TMP/wall.json $TMP/w.lp 2>/dev/null
check "report --kind wall --format speedscope exits 0" test $? -eq 0
ss=$(python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
p = [x for x in d["profiles"] if x["name"] == "luajit %s/%s" % (sys.argv[2], sys.argv[2])][0]
busy = [w for s, w in zip(p["samples"], p["weights"]) if s]  # not the gaps: idle
print(p["unit"], round(sum(busy) / 1000), len(busy))' $TMP/wall.json "$pid")
read -r unit sswall ssn <<<"$ss"
check "speedscope's wall timeline is in nanoseconds" test "$unit" = nanoseconds
check_num "... holds luajit's samples and waits" "${ssn:-0}" ">" 10
# (A sample without frames is an empty stack too: within 1%.)
check_num "... adding up to the folded wall time" \
	"$(awk -v a="${sswall:-0}" -v b="$wall" 'BEGIN { d = a / b - 1; print d < 0 ? -d : d }')" \
	"<=" 0.01

# How a wait slept: waits.lua's nanosleeps and pipe reads interruptibly
# (S: no pseudo-frame; a vfork's wait for its child is killable, D);
# durable.lua's fdatasync on the disk uninterruptibly (D), which ends
# its stacks with [uninterruptible] below the kernel's frames.
check "a's nanosleeps and b's pipe reads are not uninterruptible" \
	sh -c "! grep -qE '(hrtimer_nanosleep|pipe_read)_\[k\];\[uninterruptible\]' $TMP/w.folded"
$LUAPROF record -q -e off-cpu -o $TMP/d.lp -- luajit samples/lua/durable.lua $TMP/durable.out \
	2>$TMP/d.err
check "record -e off-cpu of durable.lua exits 0" test $? -eq 0
$LUAPROF report --kind off-cpu --format folded -o $TMP/d.folded $TMP/d.lp 2>/dev/null
sync_all=$(grep -E ";durable (\[[^]]*\] )?\(samples/lua/durable.lua:" $TMP/d.folded | grep -F ";fdatasync;" |
	folded_total /dev/stdin)
sync_d=$(grep -E ";durable (\[[^]]*\] )?\(samples/lua/durable.lua:" $TMP/d.folded | grep -F ";fdatasync;" |
	grep -E ";\[uninterruptible\] [0-9]+$" | folded_total /dev/stdin)
echo "# fdatasync off the CPU: $sync_all us, $sync_d us of it uninterruptible"
check_num "durable.lua waits in fdatasync (us)" "${sync_all:-0}" ">" 0
check_num "... mostly uninterruptibly, [uninterruptible] at the leaf" \
	"$(awk -v d="$sync_d" -v a="$sync_all" 'BEGIN { printf "%.3f", a ? d / a : 0 }')" ">=" 0.5
# The loop calls write (line 20) then fdatasync (21) through the FFI,
# results unused, so no snapshot parts the two calls in its trace: each
# call's waits are its own line's (or marked by its own name), never the
# other's.
$LUAPROF report --kind off-cpu --format folded --lines -o $TMP/d.lines $TMP/d.lp 2>/dev/null
sync_l=$(grep -F ";fdatasync (" $TMP/d.lines | grep -E ";durable (\[[^]]*\] )?\(samples/lua/durable.lua:" |
	folded_total /dev/stdin)
# (Interpreted, before the loop compiles, the call passes through the
# FFI's own frames: ffi.meta.__call and its C.)
sync_21=$(grep -F ";fdatasync (" $TMP/d.lines |
	grep -E ";durable (\[inlined: fdatasync\] )?\(samples/lua/durable.lua:21\);" |
	folded_total /dev/stdin)
echo "# fdatasync's waits under durable: $sync_l us, $sync_21 us at line 21"
check_num "durable.lua's fdatasync waits, by line (us)" "${sync_l:-0}" ">" 0
check "... all at fdatasync's line 21, none at write's 20" test "${sync_21:-0}" = "${sync_l:-0}"

# lua_fibers.sh - two Lua coroutines on C stacks of their own that switch
# in C (samples/fibers.c: ucontext, both stacks in one mapping), as
# tarantool's fibers do.  G->cur_L names the coroutine that last entered
# the VM, which is the other fiber's while one burns C time after the
# switch: the sample must carry the Lua frames of the coroutine whose C
# frame is on the sampled stack, found by the native walk, not cur_L's.
# fiber_a's burns are 3 times fiber_b's: the shares say whose frames each
# sample took.  Before, a burn showed the other fiber's Lua function, on
# its leaf alone (the native frames under it gone, not marked cut) or,
# earlier still, stitched to the other fiber's stack.
. tests/lib.sh

LIB=/usr/lib/x86_64-linux-gnu/libluajit-5.1.so.2
$LUAPROF record -F 999 -o $TMP/fb.lp -- $SAMPLES/fibers $LIB 40000 >$TMP/fb.out 2>$TMP/fb.err
check "record exits 0" test $? -eq 0
$LUAPROF report --format folded -o $TMP/fb.folded $TMP/fb.lp 2>/dev/null

chunk='[string "function work_a(n)..."]'
work_a="? ($chunk:1)" work_b="? ($chunk:5)"
# burn FIBER WORK : the samples in burn_c under FIBER's C frames and WORK.
burn() { grep -F ";$1;run_work;lua_pcall;$2;lua_yield_burn;burn_c" $TMP/fb.folded | folded_total /dev/stdin; }
all=$(grep -F ';burn_c' $TMP/fb.folded | folded_total /dev/stdin)
aa=$(burn fiber_a "$work_a") bb=$(burn fiber_b "$work_b")
ab=$(burn fiber_a "$work_b") ba=$(burn fiber_b "$work_a")
echo "# burn_c: $all samples; fiber_a/work_a $aa, fiber_b/work_b $bb, crossed $ab + $ba"
check_num "burn_c samples" "$all" ">=" 1000
check_num "share of burn_c under its own fiber's C frames and Lua function" \
	"$(share $((aa + bb)) $all)" ">=" 0.98
check_num "burn_c samples with the other fiber's Lua function" "$((ab + ba))" "==" 0
# 3 : 1 by the C work each does (0.75 of the burns are fiber_a's).
check_num "fiber_a's share of the burns (0.75 by the work)" \
	"$(share $aa $((aa + bb)))" ">=" 0.68
check_num "fiber_a's share of the burns, at most" "$(share $aa $((aa + bb)))" "<=" 0.82

# lua_truth.sh - compiled code placed where it really ran, held to
# measured truth (tests/truth/): for every program of the harness, each
# function's true share of the time by ablation on this machine, luaprof's
# share from a recording, and LuaJIT's own profiler's (jit.p) beside it.
#
#   - a function LuaJIT kept a comparison in (so a snapshot inside it):
#     luaprof's share within 5 points of the truth (the work share up to
#     the work and the whole shape, tests/truth/run.sh), widened by twice
#     the truth's own spread;
#   - any other function: never more than its truth and 5 points (no
#     neighbour's time given to it), and its share with what luaprof
#     marks as not placeable at least its truth less 5 points (its time is
#     placed in it or marked, not given away);
#   - over all of them, luaprof's mean error at most half of jit.p's.
# The programs with no truth (cse) are shown, not judged.
. tests/lib.sh

tests/deps.sh || { fail "test dependencies (tests/deps.sh)"; exit 1; }

OUT=$TMP/truth
tests/truth/run.sh -o $OUT -s 3 >$TMP/truth.table 2>$TMP/truth.err
check "the harness runs" test $? -eq 0 || tail -5 $TMP/truth.err
sed 's/^/  /' $TMP/truth.table

# Per function: PROGRAM FN GUARDS WORK SPREAD SHAPE LUAPROF JITP.
RES=$OUT/results
check_num "functions judged" "$(awk '$2 != "-" && $4 != "-"' $RES | wc -l)" ">=" 20
while read -r p fn guards work spread shape ours theirs; do
	[ "$fn" = "-" ] || [ "$work" = "-" ] && continue
	hi=$(awk -v w=$work -v s=$shape 'BEGIN { print w + s }')
	tol=$(awk -v s=$spread 'BEGIN { print 0.05 + 2 * s }')
	if [ "$guards" -gt 0 ]; then
		err=$(awk -v x=$ours -v lo=$work -v hi=$hi \
			'BEGIN { e = x < lo ? lo - x : x > hi ? x - hi : 0; printf "%.4f", e }')
		check_num "$p: $fn (a comparison inside) within 5 points of the truth" \
			"$err" "<=" "$tol"
	else
		unplaced=$(awk -v p=$p '$1 == p && $2 == "-" { print $4 }' $RES)
		check_num "$p: $fn gets no time of another's" \
			"$(awk -v x=$ours -v hi=$hi 'BEGIN { printf "%.4f", x - hi }')" "<=" "$tol"
		check_num "$p: $fn's time is placed in it or marked" \
			"$(awk -v x=$ours -v u=$unplaced -v lo=$work 'BEGIN { printf "%.4f", lo - x - u }')" \
			"<=" "$tol"
	fi
done <$RES

# The means, from the table's last line: luaprof's and jit.p's.
read -r ours theirs < <(awk '/^mean absolute error/ { sub(",", "", $9); print $9, $11 }' $TMP/truth.table)
check_num "luaprof's mean error over functions with a comparison (points)" "${ours:-99}" "<=" 5
check_num "... at most half of jit.p's (${theirs:-?})" "${ours:-99}" "<=" \
	"$(awk -v t=${theirs:-0} 'BEGIN { print t / 2 }')"
check "a program whose callees cannot be told apart has its time marked" \
	awk '$1 == "fields" && $2 == "-" { exit !($4 >= 0.5) }' $RES

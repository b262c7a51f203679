# fuzz_smoke.sh - a short pass of the trace fuzzer (tests/fuzz/, built by
# `make test` as make fuzz-build) on seeds recorded now: 20000 executions
# from a fixed seed through the reader, info and every report mode, under
# ASan and UBSan, after the inputs it once failed on
# (tests/fuzz/regressions/).  `make fuzz` is the long run; this one makes
# sure the harness works and that the seeds it starts from find nothing.
. tests/lib.sh

FUZZ=$PWD/build/fuzz/fuzz_trace
tests/deps.sh || { fail "test dependencies (tests/deps.sh)"; exit 1; }
if [ ! -x $FUZZ ]; then
	fail "the fuzzer is built" "$FUZZ missing (make fuzz-build)"
	exit 1
fi
tests/fuzz/seeds.sh $TMP/seeds >$TMP/seeds.log 2>&1
n=$(ls $TMP/seeds 2>/dev/null | wc -l)
check_num "seeds are recorded" "$n" ">=" 40
[ "$n" -ge 40 ] || cat $TMP/seeds.log
mkdir $TMP/corpus $TMP/artifacts
# Inputs the fuzzer once failed on (tests/fuzz/regressions/), each run once.
(cd $TMP && $FUZZ -artifact_prefix=$TMP/artifacts/ $OLDPWD/tests/fuzz/regressions/* \
	>$TMP/regress.log 2>&1)
check "the fuzzer's regression inputs pass" test $? -eq 0
grep -E 'ERROR|runtime error|SUMMARY' $TMP/regress.log | head -5
(cd $TMP && $FUZZ -runs=20000 -seed=1 -timeout=10 -max_len=16384 -artifact_prefix=$TMP/artifacts/ \
	$TMP/corpus $TMP/seeds >$TMP/fuzz.log 2>&1)
rc=$?
check "20000 executions, exit 0" test $rc -eq 0
check "no crash, leak or timeout" test -z "$(ls -A $TMP/artifacts)"
check "no sanitizer report" bash -c "! grep -qE 'ERROR: |runtime error:' $TMP/fuzz.log"
if [ $rc -ne 0 ]; then
	grep -E 'ERROR|runtime error|SUMMARY|#[0-9]+' $TMP/fuzz.log | tail -20
fi
grep -E '^Done|DONE' $TMP/fuzz.log | tail -2

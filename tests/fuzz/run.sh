#!/usr/bin/env bash
# tests/fuzz/run.sh SECONDS JOBS - what `make fuzz` runs: the trace fuzzer
# (build/fuzz/fuzz_trace, tests/fuzz/fuzz_trace.c) for SECONDS on JOBS
# processes (libFuzzer's -fork), from the corpus it has built so far in
# build/fuzz/corpus and the seeds tests/fuzz/seeds.sh records (once, into
# build/fuzz/seeds; needs root).  Inputs that crash, leak, hit undefined
# behaviour or take over 10 s go to build/fuzz/artifacts/; the run stops
# at the first one and exits non-zero.  The whole log is build/fuzz/fuzz.log;
# the last line printed is libFuzzer's count of executions, coverage and
# corpus.
set -eu
cd "$(dirname "$0")/../.."

secs=${1:-600}
jobs=${2:-1}
F=build/fuzz
[ -x $F/fuzz_trace ] || { echo "tests/fuzz/run.sh: $F/fuzz_trace not built (make fuzz-build)" >&2; exit 1; }
if [ ! -d $F/seeds ] || [ -z "$(ls -A $F/seeds)" ]; then
	tests/deps.sh # LuaJIT, for the Lua seed
	tests/fuzz/seeds.sh $F/seeds.tmp
	mv $F/seeds.tmp $F/seeds
fi
mkdir -p $F/corpus $F/artifacts
echo "tests/fuzz/run.sh: fuzzing for $secs s on $jobs process(es); log in $F/fuzz.log"
rc=0
$F/fuzz_trace -fork="$jobs" -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 \
	-artifact_prefix=$F/artifacts/ $F/corpus $F/seeds >$F/fuzz.log 2>&1 || rc=$?
grep -E '^#[0-9]+: cov' $F/fuzz.log | tail -1
if [ $rc -ne 0 ] || grep -qE 'ERROR: (AddressSanitizer|LeakSanitizer|libFuzzer)|runtime error:' $F/fuzz.log; then
	grep -E 'ERROR|runtime error|SUMMARY|artifact' $F/fuzz.log | head -20 >&2
	echo "tests/fuzz/run.sh: the fuzzer found a problem (exit $rc); inputs in $F/artifacts/" >&2
	exit 1
fi

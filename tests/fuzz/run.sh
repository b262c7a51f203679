#!/usr/bin/env bash
# tests/fuzz/run.sh SECONDS JOBS - what `make fuzz` runs: the trace fuzzer
# (build/fuzz/fuzz_trace, tests/fuzz/fuzz_trace.c) for SECONDS in JOBS
# processes at once (libFuzzer's -jobs, each with the shared corpus), from
# the corpus built so far in build/fuzz/corpus and the seeds that
# tests/fuzz/seeds.sh records (once, into build/fuzz/seeds; needs root).
# An input that crashes, leaks, hits undefined behaviour or takes over
# 10 s goes to build/fuzz/artifacts/ and fails the run.  Each process logs
# to build/fuzz/fuzz-N.log; the last lines printed add them up:
# executions, corpus size and coverage (libFuzzer's "cov", edges reached).
set -eu
cd "$(dirname "$0")/../.."

secs=${1:-600}
jobs=${2:-1}
F=$PWD/build/fuzz
[ -x $F/fuzz_trace ] || { echo "tests/fuzz/run.sh: $F/fuzz_trace not built (make fuzz-build)" >&2; exit 1; }
if [ ! -d $F/seeds ] || [ -z "$(ls -A $F/seeds)" ]; then
	tests/deps.sh # LuaJIT, for the Lua seed
	tests/fuzz/seeds.sh $F/seeds.tmp
	mv $F/seeds.tmp $F/seeds
fi
# An earlier run's findings are set aside, not counted again (a fixed one
# belongs in tests/fuzz/regressions/, which every run replays).
if [ -d $F/artifacts ] && [ -n "$(ls -A $F/artifacts)" ]; then
	old=$F/artifacts.$(date +%Y%m%d-%H%M%S)
	mv $F/artifacts $old
	echo "tests/fuzz/run.sh: an earlier run's inputs moved to $old"
fi
mkdir -p $F/corpus $F/artifacts
rm -f $F/fuzz-*.log
echo "tests/fuzz/run.sh: fuzzing for $secs s in $jobs process(es); logs in $F/fuzz-N.log"
rc=0
# Inputs are cut to FUZZ_MAX_LEN bytes (4 KB): a small trace holds every
# structure (seedgen's, 1 KB, every record type), and one of 4 KB runs
# through every command five times faster than one of 16 KB.
(cd $F && ./fuzz_trace -jobs="$jobs" -workers="$jobs" -max_total_time="$secs" -timeout=10 \
	-max_len="${FUZZ_MAX_LEN:-4096}" \
	-rss_limit_mb=2048 -print_final_stats=1 -artifact_prefix=$F/artifacts/ \
	corpus seeds "$OLDPWD/tests/fuzz/regressions" >/dev/null 2>&1) || rc=$?
awk '/^stat::number_of_executed_units:/ { runs += $2 }
     /^#[0-9]+/ { for (i = 1; i < NF; i++) if ($i == "cov:") cov[FILENAME] = $(i + 1) }
     END { for (f in cov) if (cov[f] > c) c = cov[f];
	   printf "tests/fuzz/run.sh: %d executions, coverage %d edges, ", runs, c }' $F/fuzz-*.log
echo "corpus $(ls $F/corpus | wc -l) inputs ($(du -sh $F/corpus | cut -f1))"
# An interrupted run (Ctrl-C) exits non-zero too: what counts is an
# artifact or a report.
if [ -n "$(ls -A $F/artifacts)" ] ||
   grep -qE 'ERROR: (AddressSanitizer|LeakSanitizer|libFuzzer)|runtime error:' $F/fuzz-*.log; then
	grep -hE 'ERROR|runtime error|SUMMARY|artifact' $F/fuzz-*.log | head -20 >&2
	echo "tests/fuzz/run.sh: the fuzzer found a problem (exit $rc); inputs in $F/artifacts/" >&2
	exit 1
fi

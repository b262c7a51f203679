# sanitized.sh - luaprof built with AddressSanitizer (leaks included) and
# UndefinedBehaviorSanitizer (build/san/luaprof, `make sanitize-build`),
# run as users run it: record a launched LuaJIT program with -vv, record
# nginx's master and workers by pid under load, then every report format
# and view, info, diff and check on what was recorded.  The unit tests
# run under the sanitizers too, but they never reach record's session,
# its BPF maps' sizing or its reading of live processes; the fuzzer drives
# only the reader.  Each run must exit 0 and leave no sanitizer report.
. tests/lib.sh
. tests/nginx.sh

tests/deps.sh || { fail "test dependencies (tests/deps.sh)"; exit 1; }

SAN=$PWD/build/san/luaprof
[ -x $SAN ] || { fail "build/san/luaprof is built (make sanitize-build)"; exit 1; }
REPORTS=$TMP/san-reports
mkdir -p $REPORTS
export ASAN_OPTIONS="detect_leaks=1:exitcode=23:log_path=$REPORTS/asan"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1:log_path=$REPORTS/ubsan"

# no_reports LABEL: no sanitizer report was written (each report names
# the process: asan.PID).
no_reports() {
	local label=$1
	if ls $REPORTS/* >/dev/null 2>&1; then
		fail "$label: no sanitizer report" "$(ls $REPORTS | tr '\n' ' ')"
		head -20 $REPORTS/* | sed 's/^/    /'
		rm -f $REPORTS/*
	else
		ok "$label: no sanitizer report"
	fi
}

# run LABEL ARGS... : the sanitized luaprof with ARGS exits 0, and no
# report was written.
run() {
	local label=$1 rc
	shift
	$SAN "$@" >$TMP/out 2>$TMP/err
	rc=$?
	check_num "$label: exits 0" $rc "==" 0 || sed 's/^/    /' $TMP/err | tail -5
	no_reports "$label"
}

run "record -vv -- luajit abc.lua" record -vv -F 999 -o $TMP/abc.lp -- \
	luajit samples/lua/abc.lua
check "the recording has samples" test "$(trace_samples $TMP/abc.lp)" -gt 100

# Processes that fork, start threads and exit a few hundred times a
# second: exits settling, mappings of processes gone, the vDSO's object.
run "record -- exits" record -F 999 -o $TMP/exits.lp -- $SAMPLES/exits 2
check "the exits recording has samples" test "$(trace_samples $TMP/exits.lp)" -gt 100

# The load starts once the recorder samples: the sanitized recorder takes
# seconds more to set up than the load would run, more so on a busy host.
nginx_start || { fail "nginx started"; exit 1; }
LUAPROF=$SAN nginx_record_under_load $TMP/ngx 3 -F 999
check_num "record -p nginx's master, under load: exits 0" $? "==" 0 ||
	sed 's/^/    /' $TMP/ngx.err | tail -5
no_reports "record -p nginx's master, under load"
nginx_stop
check "the nginx recording has samples" test "$(trace_samples $TMP/ngx.lp)" -gt 100

for f in top folded callgraph; do
	run "report --format $f" report --format $f --lines $TMP/abc.lp $TMP/ngx.lp
done
run "report --format flamegraph" report --format flamegraph -o $TMP/g.svg $TMP/ngx.lp
run "report --format pprof" report --format pprof -o $TMP/p.pb.gz $TMP/ngx.lp
run "report --format speedscope" report --format speedscope -o $TMP/s.json $TMP/ngx.lp
run "report --vmstate" report --vmstate $TMP/ngx.lp
run "report --annotate" report --annotate $TMP/abc.lp
run "report --by line" report --by line $TMP/ngx.lp
run "info" info $TMP/ngx.lp
run "diff" diff $TMP/abc.lp $TMP/ngx.lp
run "check" check

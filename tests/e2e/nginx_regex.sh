# nginx_regex.sh - anonymous code that is not LuaJIT's, under a trace:
# OpenResty's ngx.re.find(s, re, "jo") in a loop the JIT compiles
# (samples/nginx/regex.lua).  The trace calls the match through the FFI:
# ngx_http_lua_ffi_exec_regex, pcre_exec, then PCRE's JIT code, which
# lies in anonymous memory as the traces do.  While the match runs,
# g->vmstate still names the trace.  The sampler took that code for the
# trace's and stepped to the VM's C frame, and the report put the trace's
# Lua frames in its place: the match's time, nearly all of scan()'s, went
# to scan() as its own, in stacks that said they were whole.  Now only
# the running trace's own code (T->mcode, T->szmcode) is the trace's:
# PCRE's code is a native leaf under scan().  The walk cannot see the C
# functions between (PCRE's code has no CFI) but goes on from the VM's C
# frame, as from a trace's code: the stack reaches nginx's root, with
# [unknown frames] between scan() and [anon] (once, it stopped there, and
# the samples stood apart under [truncated]).  burn(), a Lua loop whose
# trace does its own work, must keep its samples, none of them taken for
# foreign code.
. tests/lib.sh
. tests/nginx.sh

tests/deps.sh || { fail "test dependencies (tests/deps.sh)"; exit 1; }
NGINX_CONF_SRC=$(nginx_conf_for regex)
NGINX_JIT=on nginx_start
check "nginx starts with the regex handler" test -n "$NGINX_MASTER"
[ -n "$NGINX_MASTER" ] || exit 1
APP=$NGINX_APPDIR/regex.lua

nginx_record_cpu $TMP/re 3 -F 499 -v
check "record -p MASTER exits 0" test $? -eq 0
$LUAPROF report --format folded -o $TMP/re.folded $TMP/re.lp 2>/dev/null

# The workers' VMs run when recording starts: the recorder finds each G
# in its memory at attach.  Learnt from the first tick in the interpreter
# or a trace instead, the first ticks in PCRE's code (which does not keep
# DISPATCH in its register) could not reach the VM's C frame and were cut
# at [anon].
located=$(awk '/LuaJIT VM at G=/ { n++ } /recording [0-9]+ processes/ { print n + 0; exit }' \
	$TMP/re.err)
check_num "VMs located at attach, before the first sample" "${located:-0}" ">=" 2
check_num "samples cut at another JIT's code" \
	"$(awk '/^\[truncated\];\[anon\] / { n += $NF } END { print n + 0 }' $TMP/re.folded)" "==" 0

read -r scan native self rooted anon burn banon bself < <(regex_counts $TMP/re.folded $APP)
check_num "samples under scan" "$scan" ">=" 100
check_num "share of scan's samples in PCRE's code and its C callers" \
	"$(share $native $scan)" ">=" 0.7
check_num "share of scan's samples given to scan's own Lua frames" \
	"$(share $self $scan)" "<=" 0.15 ||
	grep -F ";scan (" $TMP/re.folded | sort -t' ' -k2 -rn | head -3 | cut -c1-300 | sed 's/^/    /'
check_num "scan's samples in PCRE's code" "$anon" ">=" 50
check_num "of those, the share rooted at _start with [unknown frames] above PCRE's code" \
	"$(share $rooted $anon)" ">=" 0.95 ||
	grep -F ";scan (" $TMP/re.folded | grep -E ';\[anon\] [0-9]+$' |
		grep -vE '^_start;.*;\[unknown frames\];\[anon\] [0-9]+$' | head -3 | cut -c1-300 |
		sed 's/^/    /'
# Whole stacks, then, rooted and without garbage, as any application's.
check_app_stacks "nginx with ngx.re" $TMP/re.folded
check_num "samples under burn" "$burn" ">=" 100
check_num "share of burn's samples in burn itself" "$(share $bself $burn)" ">=" 0.8
check_num "share of burn's samples in anonymous code (its trace taken for another's)" \
	"$(share $banon $burn)" "<=" 0.02
# PCRE's samples are not compiled code's: the header's share of compiled
# samples placed in the functions their traces inlined leaves them out
# (counted in, it was 57%).
placed=$($LUAPROF report -n 1 $TMP/re.lp 2>/dev/null |
	sed -n 's/^# compiled code: [0-9]* samples, [0-9]* (\([0-9.]*\)%) placed.*/\1/p')
check_num "% of compiled samples placed by their traces' snapshots" "${placed:-0}" ">=" 90

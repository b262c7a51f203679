# lua_nginx.sh - Lua frames from a real OpenResty-style server: nginx with
# lua-nginx-module (libluajit-5.1.so.2 of luajit2), JIT off, 2 workers
# under wrk, recorded by the master's pid.  Checks that both workers are
# sampled, that the handler's Lua functions stand on the nginx frames
# that run them (ngx_http_lua_run_thread and down to main), with their
# names, and that nearly every sample running the handler has them.
. tests/lib.sh
. tests/nginx.sh

tests/deps.sh || { fail "test dependencies (tests/deps.sh)"; exit 1; }
NGINX_JIT=off nginx_start
check "nginx starts with the JIT off" test -n "$NGINX_MASTER"
[ -n "$NGINX_MASTER" ] || exit 1
APP=$NGINX_APPDIR/app.lua
line() { grep -n "$1" $APP | head -1 | cut -d: -f1; }

# Until the workers have had 3 s of CPU: as many samples on a busy
# machine as on an idle one (3 s of wall clock gave 39 and 45 samples,
# not 200, beside two CPU hogs), so that one odd sample is not a share.
# -v: the recorder says why a Lua stack was truncated (first few).
nginx_record_cpu $TMP/ng 3 -F 499 -v
check "record -p MASTER exits 0" test $? -eq 0
check "the LuaJIT in libluajit-5.1.so.2 was recognized" grep -q "LuaJIT in .*libluajit-5.1.so" $TMP/ng.err

for w in $(nginx_workers); do
	$LUAPROF report --format folded --pid $w -o $TMP/w$w.folded $TMP/ng.lp 2>/dev/null
	n=$(folded_total $TMP/w$w.folded)
	lua=$(awk -v a="($APP:" 'index($0, a) { n += $NF } END { print n + 0 }' $TMP/w$w.folded)
	# Half of what 499 Hz makes of the CPU it had while recorded.
	check_num "worker $w: samples, of its CPU time (${NGINX_WORKER_CPU[$w]:-0} s) at 499 Hz" \
		"$n" ">=" "$(awk -v c=${NGINX_WORKER_CPU[$w]:-0} 'BEGIN { print int(c * 499 / 2) }')"
	check_num "worker $w: samples" "$n" ">=" 100
	check_num "worker $w: share of samples in the Lua handler" "$(share $lua $n)" ">=" 0.3
done

$LUAPROF report --format folded -o $TMP/ng.folded $TMP/ng.lp 2>/dev/null
# As a regular expression: the app path's dots escaped.
app_re=$(printf '%s' "$APP" | sed 's/\./\\./g')
check "the handler stands on the nginx frames that run it, down to main" \
	grep -qE "__libc_start_main;.*;main;ngx_master_process_cycle;.*;ngx_http_core_content_phase;.*;ngx_http_lua_run_thread;main \(=content_by_lua\(nginx\.conf:[0-9]+\):0\);handle \($app_re:$(line '^function M.handle')\)" \
	$TMP/ng.folded
check "render is named, under handle" grep -qE ";handle \([^;]*;render \($APP:[0-9]+\)" $TMP/ng.folded
check "compute_checksum is named, under handle" grep -qE ";handle \([^;]*;compute_checksum \($APP:[0-9]+\)" $TMP/ng.folded
check "builtins called by render are named" grep -qE ";render \([^;]*;string\.(format|gsub|rep)" $TMP/ng.folded
# Inside ngx_http_lua_run_thread, nginx either runs the Lua handler (Lua
# frames follow at once) or, after it returned, sends its output.  The
# samples with the VM in between but no Lua frames would be failures.
inlua=$(awk '/ngx_http_lua_run_thread;/ { n += $NF } END { print n + 0 }' $TMP/ng.folded)
withlua=$(awk -v a="($APP:" '/ngx_http_lua_run_thread;/ && index($0, a) { n += $NF } END { print n + 0 }' $TMP/ng.folded)
output=$(awk '/ngx_http_lua_run_thread;ngx_http_lua_send_chain_link/ { n += $NF } END { print n + 0 }' $TMP/ng.folded)
check_num "samples in ngx_http_lua_run_thread, besides output, with Lua frames" \
	"$(share $withlua $((inlua - output)))" ">=" 0.98
ntrunc=$(lua_truncated $TMP/ng.folded)
check_num "truncated Lua stacks" "$ntrunc" "==" 0
if [ "$ntrunc" -gt 0 ]; then
	grep -F '[truncated]' $TMP/ng.folded | cut -c1-400 | head -5 | sed 's/^/    /'
	grep -F 'Lua stack truncated' $TMP/ng.err | head -5 | sed 's/^/    /'
fi

# Lua source in the trace: app.lua, a file module, is embedded and its
# lines are ranked with their text; the inline content_by_lua chunk has
# no file, and says so.
$LUAPROF report --by line -n 0 -o $TMP/ng.lines $TMP/ng.lp 2>/dev/null
$LUAPROF report --annotate -n 0 -o $TMP/ng.annotate $TMP/ng.lp 2>/dev/null
$LUAPROF info $TMP/ng.lp >$TMP/nginfo.txt
check "info: app.lua's source is embedded" grep -qE "^Lua sources: [1-9][0-9]* files embedded" $TMP/nginfo.txt
first=$(grep -E '^ +[0-9]' $TMP/ng.lines | head -1)
check "by line: the hottest line is an app.lua line, with its text" \
	grep -qE " $app_re:[0-9]+  [a-z_?]+: [^(]" <<<"$first"
check "by line: compute_checksum's lines are there, with their text" \
	grep -qE " $app_re:[0-9]+  compute_checksum: .+" $TMP/ng.lines
ln=$(grep -oE " $app_re:[0-9]+  render: " $TMP/ng.lines | head -1 | sed -E 's/.*:([0-9]+)  render: /\1/')
check "by line: render's line shows app.lua's real text" \
	grep -qF "render: $(sed -n "${ln:-0}p" $APP | sed -E 's/^[[:space:]]+//' | cut -c1-40)" $TMP/ng.lines
check "annotate: the content_by_lua chunk is source not available" \
	grep -qF "(source not available: not loaded from a file)" \
	<(grep -A1 -E "^main \(=content_by_lua\(nginx\.conf:[0-9]+\):" $TMP/ng.annotate)
echo "  nginx 3 s: trace $(stat -c %s $TMP/ng.lp) bytes; $(grep '^Lua sources:' $TMP/nginfo.txt)"
nginx_stop

# The JIT on, as in production: traces run the handler, and every worker
# sample's stack still reaches the process root through them.
NGINX_JIT=on nginx_start
check "nginx starts with the JIT on" test -n "$NGINX_MASTER"
[ -n "$NGINX_MASTER" ] || exit 1
nginx_record_cpu $TMP/ngj 3 -F 499
check "JIT on: record exits 0" test $? -eq 0
for w in $(nginx_workers); do
	$LUAPROF report --format folded --pid $w -o $TMP/wj$w.folded $TMP/ngj.lp 2>/dev/null
	n=$(folded_total $TMP/wj$w.folded)
	root=$(awk '/^_start;__libc_start_main;.*;main;ngx_master_process_cycle;/ { r += $NF } END { print r + 0 }' $TMP/wj$w.folded)
	check_num "JIT on, worker $w: share of samples reaching the process root" "$(share $root $n)" ">=" 0.99
done
$LUAPROF report --format folded -o $TMP/ngj.folded $TMP/ngj.lp 2>/dev/null
check "JIT on: compute_checksum runs under handle, on the nginx frames" \
	grep -qE "ngx_http_lua_run_thread;main \(=content_by_lua\(nginx\.conf:[0-9]+\):0\);handle \($app_re:[0-9]+\);compute_checksum \($app_re:[0-9]+\)" $TMP/ngj.folded
# The traces' snapshots place compiled time in the functions they inlined.
check "JIT on: the traces' snapshots were read" \
	grep -qE "compiled traces: [0-9]+ met, read [0-9]+ times: with their snapshots [1-9]" $TMP/ngj.err
placed=$($LUAPROF report -n 1 $TMP/ngj.lp 2>/dev/null |
	awk '/^# compiled code:/ { gsub(/[(%)]/, "", $7); print $7 / 100 }')
check_num "JIT on: share of compiled samples placed by their trace's snapshots" "${placed:-0}" ">=" 0.9
nginx_stop

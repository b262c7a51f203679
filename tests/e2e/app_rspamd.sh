# app_rspamd.sh - rspamd (libluajit-5.1.so.2): a main process forking
# two normal workers, a controller and a hyperscan helper, its rules in
# Lua calling much C.  Started on 127.0.0.1 from a temporary prefix, with
# the modules that reach the network disabled and its resolver pointed at
# a closed loopback port (nothing leaves the machine), and not recorded
# while it starts (a few seconds; its helper compiles the rules' regular
# expressions with hyperscan for some 20 s more, while the workers serve).
# Then attached as a daemon is, `record -p MAIN`, its workers followed as
# existing descendants, while rspamc feeds it mail; reloaded (SIGHUP)
# while recorded, the main process loading its configuration and Lua
# again and forking new workers.  A local rule, registered with
# register_symbol, burns a varying amount of CPU time in Lua per message
# and reports, through its symbol's options, how much of its worker's CPU
# time it used: the ground truth for its share of the samples, and of
# a regular expression it matches (rspamd_regexp: PCRE2's JIT code).
# Checks the bars every real application is held to (tests/lib.sh), and
# in each generation of workers that the rule's function stands under the
# worker's event loop and lua_pcall with the share it measured, and its
# regular expression's samples at their JIT code with theirs.
. tests/lib.sh

tests/deps.sh || { fail "test dependencies (tests/deps.sh)"; exit 1; }

# Three free ports (worker, controller, the closed resolver port), below
# the ephemeral range: rspamc's connections, refused while rspamd starts,
# take ports from that range, and one taken there failed a bind.
free_port() { ! ss -Hantu "( sport = :$1 )" | grep -q .; }
for i in $(seq 20); do
	PORT=$((10000 + RANDOM % 20000))
	free_port $PORT && free_port $((PORT + 1)) && free_port $((PORT + 2)) && break
done
D=$TMP/rs
mkdir -p $D/local/local.d $D/db $D/run $D/log $D/mail
cat >$D/rspamd.conf <<CONF
.include "\$CONFDIR/common.conf"
options {
    pidfile = "\$RUNDIR/rspamd.pid";
    .include "\$CONFDIR/options.inc"
    .include(try=true; priority=1,duplicate=merge) "\$LOCAL_CONFDIR/local.d/options.inc"
}
logging {
    type = "file";
    filename = "\$LOGDIR/rspamd.log";
    level = "notice";
}
worker "normal" {
    bind_socket = "127.0.0.1:$PORT";
    count = 2;
    mime = true;
}
worker "controller" {
    bind_socket = "127.0.0.1:$((PORT + 1))";
    count = 1;
    static_dir = "\${WWWDIR}";
}
CONF
echo "dns { nameserver = [\"127.0.0.1:$((PORT + 2))\"]; }" >$D/local/local.d/options.inc
# The modules that query servers (DNS lists, fuzzy storage, Redis, HTTP).
for m in antivirus arc asn clickhouse dcc dkim dkim_signing dmarc elastic \
	emails external_services fuzzy_check greylist history_redis \
	metadata_exporter metric_exporter mx_check neural phishing ratelimit \
	rbl replies reputation rspamd_update spf surbl url_reputation whitelist; do
	echo "enabled = false;" >$D/local/local.d/$m.conf
done

W=$D/local/rspamd.local.lua
{ app_lua_functions; cat <<'LUA'; } >$W
local burned, matched, pid = 0, 0, nil
local re = require('rspamd_regexp').create_cached('/(?:[a-z]+\\d+[a-z]*)+X|(?:foo|bar|baz)+qux/i')
local subject = string.rep('abc123def456 ghi789 foo bar ', 40)
-- Per message, 1 to 6 ms of the worker's CPU time (os.clock: the
-- process's, and a worker is one thread): in Lua, and in a regular
-- expression (rspamd_regexp: PCRE2, compiled by its JIT) now and then.
-- Reports what it burned, what of that went to the regular expression,
-- and the worker's CPU time so far.
local function burn(task)
  local t0 = os.clock()
  local stop = t0 + (1 + 5 * math.random()) / 1000
  local n = 0
  repeat
    n = n + fib(10 + math.random(6)) + strs(20 + math.random(60))
    if math.random() < 0.3 then
      local m0 = os.clock()
      if re:match(subject) then n = n + 1 end
      matched = matched + (os.clock() - m0)
    end
  until os.clock() >= stop
  local t1 = os.clock()
  burned = burned + (t1 - t0)
  pid = pid or io.open('/proc/self/stat'):read('*n')
  task:insert_result('LUAPROF_BURN', 0.0,
    string.format('%d %.6f %.6f %.6f', pid, burned, matched, t1))
end
rspamd_config:register_symbol({ name = 'LUAPROF_BURN', score = 0.0, callback = burn })
LUA
line() { grep -n "$1" $W | head -1 | cut -d: -f1; }

# Eight messages, plain and HTML, with and without links, of varying size.
for i in $(seq 8); do
	{
		echo "From: Sender $i <sender$i@example.com>"
		echo "To: rcpt@example.org"
		echo "Subject: message $i of the luaprof test"
		echo "Message-ID: <$i.$$@example.com>"
		echo "Date: Wed, 25 Nov 2026 03:00:0$i +0000"
		echo "MIME-Version: 1.0"
		if [ $((i % 2)) -eq 0 ]; then
			echo "Content-Type: text/html; charset=utf-8"
			echo
			echo "<html><body><p>Hello $i</p>"
			for j in $(seq $((i * 10))); do
				echo "<p>Line $j of message $i: <a href=\"http://host$j.example.net/p?q=$i\">link $j</a></p>"
			done
			echo "</body></html>"
		else
			echo "Content-Type: text/plain; charset=utf-8"
			echo
			for j in $(seq $((i * 10))); do
				echo "Line $j of message $i, some words to tokenize: lorem ipsum dolor sit amet $j"
			done
		fi
	} >$D/mail/$i.eml
done

rspamd -f -u root -g root -c $D/rspamd.conf --var=LOCAL_CONFDIR=$D/local \
	--var=DBDIR=$D/db --var=RUNDIR=$D/run --var=LOGDIR=$D/log \
	>$D/rspamd.out 2>&1 </dev/null &
MAIN=$!
CLEANUP_PIDS+=($MAIN)
# Stopped, and waited for, before the scratch directory is removed: its
# processes write hyperscan's cache there until they exit.
stop_rspamd() { kill $MAIN 2>/dev/null; wait $MAIN 2>/dev/null; }
scan() { rspamc -h 127.0.0.1:$PORT -t 5 "$@" 2>&1; }
ready() { scan $D/mail/1.eml | grep -q LUAPROF_BURN; }
# Its start: 2 s here once the files are cached, 10 s the first time
# (wait_for waits 20 s at most; up to 60 s then).
for i in 1 2 3; do wait_for ready && break; done
check "rspamd answers on 127.0.0.1:$PORT with the local rule" ready ||
	{ tail -5 $D/log/rspamd.log $D/rspamd.out | sed 's/^/    /'; stop_rspamd; exit 1; }
WORKERS=($(pgrep -P $MAIN -f "normal process"))
check "two normal workers" test ${#WORKERS[@]} -eq 2

# Attached once it serves, as to a running daemon; mail fed from the
# moment the recorder samples until the workers have used 1.5 s of CPU
# time, then reloaded (SIGHUP: the main process loads its configuration,
# and its Lua, again and forks new workers, which the recording follows),
# and fed until the new workers have used 1.5 s (at most 60 s in all), 4
# messages at a time.
$LUAPROF record -F 999 -d 60 -p $MAIN -o $TMP/rs.lp 2>$TMP/rs.err &
REC=$!
CLEANUP_PIDS+=($REC)
wait_for eval "grep -q recording $TMP/rs.err || ! kill -0 $REC 2>/dev/null"
workers_cpu() { local w t=0; for w in "$@"; do t=$((t + $(cpu_ticks $w))); done; echo $t; }
ticks=$((3 * $(getconf CLK_TCK) / 2))
feed() { # WORKERS... : scans until they have used $ticks more ticks
	local start
	start=$(workers_cpu "$@")
	while kill -0 $REC 2>/dev/null && [ $(($(workers_cpu "$@") - start)) -lt $ticks ]; do
		scan -n 4 $D/mail >>$D/scans
	done
}
feed ${WORKERS[@]}
kill -HUP $MAIN
new_workers() { pgrep -P $MAIN -f "normal process" | grep -vxF -e ${WORKERS[0]} -e ${WORKERS[1]}; }
wait_for eval '[ $(new_workers | wc -l) -eq 2 ]'
NEW=($(new_workers))
check "two new workers after SIGHUP" test ${#NEW[@]} -eq 2 && feed ${NEW[@]}
kill -INT $REC
wait $REC
check "record -p MAIN exits 0" test $? -eq 0
stop_rspamd
check "rspamd and its workers are gone" bash -c "! pgrep -P $MAIN >/dev/null && ! kill -0 $MAIN 2>/dev/null"
check "the LuaJIT in libluajit-5.1.so.2 was recognized" grep -q "LuaJIT in .*libluajit-5.1.so" $TMP/rs.err
$LUAPROF report --format folded -o $TMP/rs.folded $TMP/rs.lp 2>/dev/null

# PCRE2's JIT code (anonymous memory, no CFI, no frame pointer) cannot be
# stepped out of by its own frame.  When Lua called it (the rule's
# regexp:match, through rspamd's C functions and pcre2_match), the walk
# goes on from the VM's C frame: the stack is whole, with the Lua frames
# of the rule, [unknown frames] for the C functions it could not see, and
# [anon] as its leaf.  rspamd's own regular expressions, run from C with
# no Lua running, are cut there: a stack rooted at [truncated].  Those are
# counted apart; the rest is held to the bars.
leaf_anon='{ st = $0; sub(/ [0-9]+$/, "", st); n = split(st, f, ";")
	for (i = n; i > 1 && f[i] ~ /_\[k\]$/; i--) ; anon = f[i] == "[anon]" }'
awk "$leaf_anon"' !(anon && f[1] == "[truncated]")' $TMP/rs.folded >$TMP/rs.walked.folded
awk "$leaf_anon"' anon && f[1] == "[truncated]"' $TMP/rs.folded >$TMP/rs.pcre.folded
check_num "samples cut in JIT code not LuaJIT's, of all" \
	"$(share $(folded_total $TMP/rs.pcre.folded) $(folded_total $TMP/rs.folded))" "<=" 0.3
read -r lua_re gap_re < <(awk -v rule=" ($W:" "$leaf_anon"' anon && index(st, rule) {
		re += $NF; if (f[1] != "[truncated]" && f[i - 1] == "[unknown frames]") gap += $NF }
	END { print re + 0, gap + 0 }' $TMP/rs.folded)
check_num "samples in JIT code under the rule's Lua frames" "$lua_re" ">=" 20
check_num "of those, the share rooted with [unknown frames] above the JIT code" \
	"$(share $gap_re $lua_re)" ">=" 0.95
check_app_stacks "rspamd" $TMP/rs.walked.folded

# The main process reloading: its configuration's Lua runs in a VM made
# anew while recorded (some 20 samples of 500, most of its time going to
# hyperscan and the language detector).
$LUAPROF report --format folded --pid $MAIN -o $TMP/rs.main.folded $TMP/rs.lp 2>/dev/null
check_num "the main process, reloading: samples with rspamd's Lua frames" \
	"$(grep -F ' (/usr/share/rspamd/' $TMP/rs.main.folded | folded_total /dev/stdin)" ">=" 3

# Each generation of workers: the rule under the worker's event loop and
# rspamd's lua_pcall, with the share of the workers' samples it measured
# itself (within 15%): the old workers', from their first message to their
# last while recorded; the new workers', from their birth, which the
# recording saw (fork), to their last message: the CPU they spend starting
# is in their samples (it was some 17% of them once under load, and the
# rule's share then read 0.44 of the samples against 0.52 of the CPU
# after the first message),
# and the share of its regular expression's matches, which end at PCRE2's
# JIT code (within 25%: before the sampler knew that code for no trace's,
# it stepped over it to the VM's C frame, and the matches' time went to
# the C function regexp:match itself).
burn="? ($W:$(line 'local function burn'))"
# truth BORN PID... : "burned matched cpu" over the scans, summed; from
# the first scan, or with BORN 1 from the process's birth (os.clock() and
# the rule's sums start at 0 in a forked worker).
truth() {
	local born=$1
	shift
	sed -nE 's/.*LUAPROF_BURN \(0\.00\)\[([0-9]+) ([0-9.]+) ([0-9.]+) ([0-9.]+)\].*/\1 \2 \3 \4/p' $D/scans |
		awk -v pids=" $* " -v born=$born 'index(pids, " " $1 " ") {
			p = $1
			if (born) { b0[p] = 0; m0[p] = 0; c0[p] = 0 }
			else if (!(p in b0) || $2 < b0[p]) { b0[p] = $2; m0[p] = $3; c0[p] = $4 }
			if ($2 >= b1[p]) { b1[p] = $2; m1[p] = $3; c1[p] = $4 } }
		END { for (p in b0) { b += b1[p] - b0[p]; m += m1[p] - m0[p]; c += c1[p] - c0[p] }
			print b + 0, m + 0, c + 0 }'
}
off() { awk -v a="$1" -v b="$2" 'BEGIN { d = b ? a / b - 1 : 1; printf "%.3f", d < 0 ? -d : d }'; }
for gen in old new; do
	if [ $gen = old ]; then pids=${WORKERS[*]} born=0; else pids=${NEW[*]} born=1; fi
	f=$TMP/rs.$gen.folded
	$LUAPROF report --format folded --pid ${pids// /,} -o $f $TMP/rs.lp 2>/dev/null
	check "$gen workers: the rule runs under lua_pcall, from ev_run in rspamd_fork_worker" \
		grep -qE "^[^;]+;__libc_start_main;.*;rspamd_fork_worker;.*;ev_run;.*;lua_pcall;$(printf '%s;' "$burn" | sed 's/[.()?]/\\&/g')" $f
	total=$(folded_total $f)
	read -r burned matched cpu < <(truth $born $pids)
	rule=$(folded_incl $f "$burn")
	inre=$(awk "$leaf_anon"' anon' $f | grep -F ";$burn;" | folded_total /dev/stdin)
	echo "# $gen workers: $total samples; the rule $rule, its regular expression $inre;" \
		"measured: ${burned} s and ${matched} s of ${cpu} s"
	check_num "$gen workers: the rule's share of their samples, off the share of their CPU time it measured" \
		"$(off $(share $rule $total) $(share $burned $cpu))" "<=" 0.15
	check_num "$gen workers: the share of their samples in the rule's regular expression (JIT code), off the measured" \
		"$(off $(share $inre $total) $(share $matched $cpu))" "<=" 0.25
done

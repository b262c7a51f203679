# tests/nginx.sh - the nginx scenario for the end-to-end scripts, sourced
# after tests/lib.sh (it uses $TMP, CLEANUP_PIDS and wait_for):
#
#   nginx_start       copies samples/nginx/nginx.conf into $TMP/nginx (port
#                     and app directory substituted), starts nginx (master
#                     + 2 workers, in the foreground as a child of the
#                     test) on a free port of 127.0.0.1, waits until it
#                     answers a request and both workers run; sets
#                     NGINX_MASTER (the master's pid), NGINX_PORT and
#                     NGINX_PREFIX.  Returns 1 (with nginx's error log on
#                     stderr) if nginx does not come up.
#   nginx_workers     prints the worker pids, one per line, sorted.
#   nginx_load SECS   runs wrk -t2 -c8 against it for SECS seconds and
#                     prints wrk's output.
#   nginx_stop        stops nginx (SIGQUIT to the master: graceful) and
#                     waits until the master and its workers have exited
#                     (SIGKILL if that takes over 20 s).
#
#   nginx_recorder OUT ARGS...
#                     starts luaprof record -p MASTER with ARGS into OUT.lp
#                     (stderr in OUT.err) in the background, sets REC to
#                     its pid, and returns once it records; 1 (its stderr's
#                     end on stderr) if it exits first.  nginx_recorder_stop
#                     ends it with SIGINT and waits.
#   nginx_record_under_load OUT SECS ARGS...
#                     records the master (luaprof record -p, with ARGS)
#                     for SECS seconds into OUT.lp while wrk loads nginx
#                     for SECS + 1; stderr in OUT.err, wrk's output in
#                     OUT.wrk; returns record's exit status.
#   nginx_record_cpu OUT CPU ARGS...
#                     the same, but records until the workers have had CPU
#                     seconds of CPU between them (at most 120 s), however
#                     busy the machine; the workers' own CPU seconds in the
#                     recording go to NGINX_WORKER_CPU[pid].
#
#   waits_clients N SECS
#                     starts N clients that request /waits
#                     (samples/nginx/waits.lua) one after another for SECS
#                     seconds, each writing the answers to $TMP/times.I; sets
#                     CLIENTS to their pids.  waits_times then prints the
#                     answers' sums, "a b c n" (us each, and how many).
#   nginx_conf_for APP, regex_counts FOLDED APP: below.
#
# NGINX_JIT=off before nginx_start runs the Lua VM without the JIT.

NGINX_CONF_SRC=$PWD/samples/nginx/nginx.conf
NGINX_APPDIR=$PWD/samples/nginx
NGINX_PREFIX=$TMP/nginx
NGINX_MASTER=
NGINX_PORT=

# _nginx_children PID: the pids whose parent is PID (from /proc, no procps).
_nginx_children() {
	local st pid
	for st in /proc/[0-9]*/stat; do
		pid=${st#/proc/}
		pid=${pid%/stat}
		proc_stat $pid || continue
		[ "${PROC_STAT[1]}" = "$1" ] && echo $pid
	done | sort -n
}

# _nginx_gone PID: PID has exited (or is a zombie nobody reaped yet).
_nginx_gone() {
	proc_stat $1 || return 0
	[ "${PROC_STAT[0]}" = Z ]
}

# _nginx_port_free PORT: nothing listens on 127.0.0.1:PORT.
_nginx_port_free() {
	! (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null
}

# _nginx_answers: the port gives a complete HTTP 200 answer.
_nginx_answers() {
	curl -sf -o /dev/null --max-time 2 "http://127.0.0.1:$NGINX_PORT/"
}

# _nginx_up PID: the master PID still runs, its pid file names it, it has
# 2 workers, and it answers.  Returns 2 when the master has exited.
_nginx_up() {
	_nginx_gone "$1" && return 2
	[ "$(cat "$NGINX_PREFIX/logs/nginx.pid" 2>/dev/null)" = "$1" ] || return 1
	[ "$(_nginx_children "$1" | wc -l)" -eq 2 ] || return 1
	_nginx_answers
}

nginx_start() {
	local try port pid i rc init
	for try in 1 2 3 4 5; do
		# A port below the ephemeral range (32768-60999 by default), so
		# that no outgoing connection holds it.
		port=$((20000 + RANDOM % 10000))
		_nginx_port_free $port || continue
		rm -rf "$NGINX_PREFIX"
		mkdir -p "$NGINX_PREFIX/logs" "$NGINX_PREFIX/tmp"
		# NGINX_JIT=off: the master's VM, which the workers inherit,
		# runs with the JIT compiler off (interpreter only).
		init=
		[ "${NGINX_JIT:-on}" = off ] && init='init_by_lua_block { require("jit").off() }'
		sed -e "s|@PORT@|$port|g" -e "s|@APPDIR@|$NGINX_APPDIR|g" \
			-e "s|@INIT_LUA@|$init|" \
			"$NGINX_CONF_SRC" >"$NGINX_PREFIX/nginx.conf"
		NGINX_PORT=$port
		nginx -p "$NGINX_PREFIX" -c "$NGINX_PREFIX/nginx.conf" \
			</dev/null >"$NGINX_PREFIX/logs/stdout.log" 2>&1 &
		pid=$!
		CLEANUP_PIDS+=($pid)
		# Poll until up, or until the master has exited (bad config,
		# port taken meanwhile): up to 20 s.
		rc=1
		for i in $(seq 200); do
			_nginx_up $pid
			rc=$?
			[ $rc -ne 1 ] && break
			sleep 0.1
		done
		if [ $rc -eq 0 ]; then
			NGINX_MASTER=$pid
			return 0
		fi
		kill -KILL $pid $(_nginx_children $pid) 2>/dev/null
		wait $pid 2>/dev/null
		if grep -q "Address already in use" "$NGINX_PREFIX"/logs/*.log 2>/dev/null; then
			continue
		fi
		break
	done
	echo "nginx_start: nginx did not come up on 127.0.0.1:$NGINX_PORT" >&2
	cat "$NGINX_PREFIX"/logs/*.log >&2 2>/dev/null
	NGINX_MASTER=
	return 1
}

nginx_workers() {
	[ -n "$NGINX_MASTER" ] && _nginx_children "$NGINX_MASTER"
}

nginx_recorder() {
	local out=$1
	shift
	$LUAPROF record -p $NGINX_MASTER -o $out.lp "$@" 2>$out.err &
	REC=$!
	wait_for eval "grep -qs recording $out.err || ! kill -0 $REC 2>/dev/null"
	grep -qs recording $out.err && return 0
	echo "nginx_recorder: luaprof record $* did not start: $(tail -c 300 $out.err)" >&2
	return 1
}

nginx_recorder_stop() {
	kill -INT $REC
	wait $REC
	REC=
}

nginx_load() {
	wrk -t2 -c8 -d"${1:-3}s" "http://127.0.0.1:$NGINX_PORT/"
}

waits_clients() {
	local i
	CLIENTS=()
	for i in $(seq $1); do
		( end=$((SECONDS + $2))
		  while [ $SECONDS -lt $end ]; do
			curl -s --max-time 20 "http://127.0.0.1:$NGINX_PORT/waits"
		  done >$TMP/times.$i ) &
		CLIENTS+=($!)
	done
}

waits_times() {
	cat $TMP/times.* | awk 'NF == 3 { a += $1; b += $2; c += $3; n++ }
		END { print a + 0, b + 0, c + 0, n + 0 }'
}

# nginx_conf_for APP: a copy of samples/nginx/nginx.conf whose handler is
# samples/nginx/APP.lua's, in $TMP; prints its path, for NGINX_CONF_SRC.
nginx_conf_for() {
	sed "s/require(\"app\").handle()/require(\"$1\").handle()/" \
		"$PWD/samples/nginx/nginx.conf" >$TMP/nginx-$1.conf
	echo $TMP/nginx-$1.conf
}

# regex_counts FOLDED APP: regex.lua's samples (APP its path) by where
# they ran, "scan native self rooted anon burn banon bself".  Under scan:
# a native leaf (PCRE's code, anonymous, or the C functions that run it)
# or a Lua frame (scan itself, resty's find, a trace); of the native
# ones, those with PCRE's code as their leaf, and of those, the ones with
# the gap right above it and nginx's root.  Under burn: a leaf in
# anonymous code (a trace taken for another JIT's code) or burn itself.
regex_counts() {
	awk -v app="($2:" '
	{
		n = $NF; s = $0; sub(/ [0-9]+$/, "", s)
		k = split(s, f, ";"); leaf = f[k]
	}
	index(s, ";scan " app) {
		scan += n
		if (leaf ~ /^(\[anon\]|pcre|libpcre|ngx_http_lua_ffi_exec_regex|ngx_http_lua_module)/) {
			native += n
			if (leaf == "[anon]" && f[k - 1] == "[unknown frames]" && f[1] == "_start")
				rooted += n
			if (leaf == "[anon]")
				anon += n
		} else if (index(leaf, app) || leaf ~ /^(find \(|\[trace)/) {
			self += n
		}
	}
	index(s, ";burn " app) {
		burn += n
		if (leaf ~ /^\[anon\]/)
			banon += n
		if (index(leaf, "burn " app))
			bself += n
	}
	END { print scan + 0, native + 0, self + 0, rooted + 0, anon + 0, burn + 0, banon + 0,
		    bself + 0 }' "$1"
}

nginx_stop() {
	local m=$NGINX_MASTER w workers
	[ -n "$m" ] || return 0
	workers=$(nginx_workers)
	kill -QUIT "$m" 2>/dev/null
	if ! wait_for _nginx_gone "$m"; then
		kill -KILL "$m" $workers 2>/dev/null
		wait_for _nginx_gone "$m"
	fi
	wait "$m" 2>/dev/null # reap it: the master is our child
	for w in $workers; do
		wait_for _nginx_gone "$w"
	done
	NGINX_MASTER=
}

nginx_record_under_load() {
	local out=$1 secs=$2 rec rc
	shift 2
	$LUAPROF record -d $secs -p $NGINX_MASTER -o $out.lp "$@" 2>$out.err &
	rec=$!
	CLEANUP_PIDS+=($rec)
	# Load once the recorder samples (or has failed), for longer than
	# it records, so that the load covers the whole recording.
	wait_for eval "grep -q recording $out.err || ! kill -0 $rec 2>/dev/null"
	nginx_load $((secs + 1)) >$out.wrk 2>&1
	wait $rec
	rc=$?
	return $rc
}

# _nginx_cpu_of PIDS...: "pid seconds" lines, one per pid.
_nginx_cpu_of() {
	local p
	for p in "$@"; do echo "$p $(cpu_seconds $p)"; done
}

# _nginx_cpu_delta BEFORE AFTER: "pid seconds" lines, the CPU each pid of
# BEFORE had until AFTER (both _nginx_cpu_of's output).
_nginx_cpu_delta() {
	awk 'NR == FNR { a[$1] = $2; next } ($1 in a) { print $1, $2 - a[$1] }' \
		<(echo "$1") <(echo "$2")
}

nginx_record_cpu() {
	local out=$1 cpu=$2 rec rc wrk i w start now
	shift 2
	declare -gA NGINX_WORKER_CPU=()
	$LUAPROF record -p $NGINX_MASTER -o $out.lp "$@" 2>$out.err &
	rec=$!
	CLEANUP_PIDS+=($rec)
	wait_for eval "grep -q recording $out.err || ! kill -0 $rec 2>/dev/null"
	start=$(_nginx_cpu_of $(nginx_workers))
	nginx_load 130 >$out.wrk 2>&1 &
	wrk=$!
	CLEANUP_PIDS+=($wrk)
	# Polls the condition: the load must cover the whole recording.
	for i in $(seq 1200); do
		kill -0 $rec 2>/dev/null || break
		now=$(_nginx_cpu_of $(nginx_workers))
		_nginx_cpu_delta "$start" "$now" |
			awk -v c=$cpu '{ t += $2 } END { exit !(t >= c) }' && break
		sleep 0.1
	done
	kill -INT $rec 2>/dev/null
	wait $rec
	rc=$?
	now=$(_nginx_cpu_of $(nginx_workers))
	kill $wrk 2>/dev/null
	wait $wrk 2>/dev/null
	while read -r w i; do
		NGINX_WORKER_CPU[$w]=$i
	done < <(_nginx_cpu_delta "$start" "$now")
	return $rc
}

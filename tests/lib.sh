# tests/lib.sh - shared by the end-to-end scripts in tests/e2e/: paths, a
# scratch directory removed at exit, and the check helpers.  Each check
# prints "ok NAME" or "FAIL NAME: why" for tests/run to count.

LUAPROF=${LUAPROF:-$PWD/build/luaprof}
SAMPLES=$PWD/build/samples
TEST=$(basename "$0" .sh)
TMP=$(mktemp -d /tmp/luaprof-e2e.XXXXXX)
CLEANUP_PIDS=()

cleanup() {
	for p in "${CLEANUP_PIDS[@]}"; do
		kill "$p" 2>/dev/null
	done
	rm -rf "$TMP"
}
trap cleanup EXIT

ok() { echo "ok $TEST: $1"; }
fail() { echo "FAIL $TEST: $1${2:+: $2}"; }

# check NAME COMMAND... : passes when COMMAND exits 0.
check() {
	local name=$1
	shift
	if "$@"; then ok "$name"; else fail "$name" "'$*' failed"; fi
}

# check_num NAME VALUE OP BOUND : numeric comparison with awk (floats).
check_num() {
	if awk -v v="$2" -v b="$4" "BEGIN { exit !(v $3 b) }"; then
		ok "$1 ($2 $3 $4)"
	else
		fail "$1" "$2 is not $3 $4"
	fi
}

# wait_for COMMAND... : polls until COMMAND succeeds, up to 20 s.  For a
# condition that will become true, never to pace a test.
wait_for() {
	local i
	for i in $(seq 200); do
		"$@" && return 0
		sleep 0.1
	done
	return 1
}

# folded_total FILE : the sum of the counts of a folded file.
folded_total() { awk '{ n += $NF } END { print n + 0 }' "$1"; }

# lua_truncated FILE : samples whose stack holds a Lua frame, NAME
# (CHUNK:LINE), and [truncated]: a Lua stack cut short, or a native one
# cut where Lua ran.  A native stack cut before any Lua ran (the first
# moments of a process, before its tables are loaded) is not counted.
lua_truncated() {
	awk '/\[truncated\]/ && / \([^;]*:[0-9]+\)(;| [0-9]+$)/ { n += $NF }
		END { print n + 0 }' "$1"
}

# folded_incl FILE FRAME : samples whose stack holds FRAME (once each).
# Frames may hold spaces (Lua frames do): the count is after the last one.
folded_incl() {
	awk -v f="$2" '{ st = $0; sub(/ [0-9]+$/, "", st); n = split(st, fr, ";");
		for (i = 1; i <= n; i++) if (fr[i] == f) { s += $NF; break } }
		END { print s + 0 }' "$1"
}

# wait_line FILE REGEX : waits until FILE has a line matching REGEX.
wait_line() { wait_for grep -qE "$2" "$1"; }

# share A B : A / B as a decimal, 0 when B is 0.
share() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.4f", b ? a / b : 0 }'; }

# proc_stat PID: the fields of /proc/PID/stat after the command name into
# the array PROC_STAT (PROC_STAT[0] is field 3, the state; [1] the ppid;
# [11], [12] utime and stime), found from the last ')' since the name may
# hold spaces and parentheses.  Fails when PID is gone.
proc_stat() {
	local line
	read -r line 2>/dev/null <"/proc/$1/stat" || return 1
	read -ra PROC_STAT <<<"${line##*) }"
}

# cpu_seconds PID: the CPU time PID has had (user + system), from /proc.
# What a profiler at R Hz must account for is R x this, not R x the wall
# clock: on a busy machine a busy target gets less than a whole CPU.
cpu_seconds() {
	proc_stat $1 || { echo 0; return; }
	awk -v t=$((PROC_STAT[11] + PROC_STAT[12])) -v hz="$(getconf CLK_TCK)" \
		'BEGIN { printf "%.2f", t / hz }'
}

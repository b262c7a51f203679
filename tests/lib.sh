# tests/lib.sh - shared by the end-to-end scripts in tests/e2e/: paths, a
# scratch directory removed at exit (kept, and named, with
# LUAPROF_E2E_KEEP=1: traces and folded files to look at), and the check
# helpers.  Each check prints "ok NAME" or "FAIL NAME: why" for tests/run
# to count.

LUAPROF=${LUAPROF:-$PWD/build/luaprof}
SAMPLES=$PWD/build/samples
# The LuaJIT layouts luaprof derives from code, kept per build: the
# tests' own, not the user's ~/.cache (record/luajit_cache.c).
export LUAPROF_CACHE_DIR=${LUAPROF_CACHE_DIR:-$PWD/build/test-cache/luajit}
TEST=$(basename "$0" .sh)
TMP=$(mktemp -d /tmp/luaprof-e2e.XXXXXX)
CLEANUP_PIDS=()

cleanup() {
	for p in "${CLEANUP_PIDS[@]}"; do
		kill "$p" 2>/dev/null
	done
	if [ -n "${LUAPROF_E2E_KEEP:-}" ]; then
		echo "# $TEST: kept $TMP"
	else
		rm -rf "$TMP"
	fi
}
trap cleanup EXIT

# container ROOT COMMAND... : runs COMMAND in the root of another system
# as a container runtime does: in mount and pid namespaces of its own,
# the root pivoted to ROOT and the rest unmounted, so that its files exist
# only there and /proc/PID/maps names them as the container sees them
# (/usr/bin/luajit, which here is another build).  The network is
# shared: a server in it listens on this machine's loopback.
container() {
	local root=$1
	shift
	unshare --mount --pid --fork --propagation private /bin/sh -c '
		root=$1; shift
		mount --bind "$root" "$root" && cd "$root" && mkdir -p .oldroot &&
		pivot_root . .oldroot && cd / && mount -t proc proc /proc &&
		umount -l /.oldroot && exec "$@"' container "$root" "$@"
}
export -f container # for `luaprof record -- bash -c "container ..."`

# container_pid PID : the pid of the command a container started in the
# background as PID ($!) runs as (unshare's child); empty until it runs.
container_pid() {
	local u
	u=$(pgrep -P "$1" -x unshare | head -1)
	[ -n "$u" ] && pgrep -P "$u" | head -1
}

ok() { echo "ok $TEST: $1"; }
fail() { echo "FAIL $TEST: $1${2:+: $2}"; }

# check NAME COMMAND... : passes when COMMAND exits 0.
check() {
	local name=$1
	shift
	if "$@"; then ok "$name"; else fail "$name" "'$*' failed"; fi
}

# check_num NAME VALUE OP BOUND : numeric comparison with awk (floats).
# Returns the comparison's result, so that a caller can say more on failure.
check_num() {
	if awk -v v="$2" -v b="$4" "BEGIN { exit !(v $3 b) }"; then
		ok "$1 ($2 $3 $4)"
	else
		fail "$1" "$2 is not $3 $4"
		return 1
	fi
}

# wait_for COMMAND... : polls until COMMAND succeeds, up to 20 s.  For a
# condition that will become true, never to pace a test.
# The CPU time a process has used so far, in clock ticks (utime + stime);
# 0 once gone.
cpu_ticks() { ticks_of "$1"; }

# ticks_of PID... : the CPU time of the PIDs, summed, in clock ticks; in
# bash alone, as it is polled (a process started in a guest costs tens of
# milliseconds, and CPU the targets would have had).
ticks_of() {
	local p n=0
	for p in "$@"; do
		proc_stat $p && n=$((n + PROC_STAT[11] + PROC_STAT[12]))
	done
	echo $n
}

# vcsw_of PID... : their voluntary context switches, summed.
vcsw_of() {
	local p
	for p in "$@"; do cat /proc/$p/status; done 2>/dev/null |
		awk '/^voluntary_ctxt_switches/ { s += $2 } END { print s + 0 }'
}

# rooted FOLDED: the share of samples whose stack starts at _start and
# holds main (a walk that stopped early starts elsewhere).
rooted() {
	awk '{ n += $NF } /^_start;(__libc_start_main|__libc_start_call_main)[^ ]*;.*main[; ]/ { r += $NF }
		END { printf "%.4f", n ? r / n : 0 }' $1
}

wait_for() {
	local i
	for i in $(seq 200); do
		"$@" && return 0
		sleep 0.1
	done
	return 1
}

# trace_samples FILE [LUAPROF] : the samples the trace FILE holds, as
# `luaprof info` says (with another build's luaprof when given).
trace_samples() { "${2:-$LUAPROF}" info "$1" 2>/dev/null | awk '/^samples/ { print $2; exit }'; }

# record_summary FILE WHAT : from record's summary line in FILE (its
# stderr), "luaprof record: N samples, M lost, ...": N for WHAT samples,
# M for lost; nothing when FILE has no such line.
record_summary() {
	sed -nE 's/^luaprof record: ([0-9]+) samples, ([0-9]+) lost.*/\1 \2/p' "$1" |
		awk -v w="$2" 'NR == 1 { print w == "lost" ? $2 : $1 }'
}

# folded_total FILE : the sum of the counts of a folded file.
folded_total() { awk '{ n += $NF } END { print n + 0 }' "$1"; }
# info_pids TRACE : the pids of info's process table, one a line; nothing
# when info fails.
info_pids() {
	$LUAPROF info "$1" 2>/dev/null |
		awk '/^processes:/ { on = 1; next } on && $1 == "PID" { next }
			on && $1 ~ /^[0-9]+$/ { print $1; next } on { exit }'
}

# lua_truncated FILE : samples whose stack holds a Lua frame, NAME
# (CHUNK:LINE), and [truncated]: a Lua stack cut short, or a native one
# cut where Lua ran.  A native stack cut before any Lua ran (the first
# moments of a process, before its tables are loaded) is not counted.
# (A Lua walk that stopped puts its [truncated] among the frames, where
# its VM entry's Lua frames go, or first when no native frame is kept; a
# native walk cut at the root puts it first, before native frames, and
# the rooted shares count that.)
lua_truncated() {
	awk '/ \([^;]*:[0-9]+\)(;| [0-9]+$)/ && (/;\[truncated\]/ || /^\[truncated\];[^;]* \([^;]*:[0-9]+\)(;| [0-9]+$)/) { n += $NF }
		END { print n + 0 }' "$1"
}

# share_with FILE A B : among samples whose stack holds frame A, the
# share that also holds frame B.
share_with() {
	awk -v a="$2" -v b="$3" '{ st = $0; sub(/ [0-9]+$/, "", st);
		n = split(st, fr, ";"); ha = hb = 0;
		for (i = 1; i <= n; i++) { if (fr[i] == a) ha = 1; if (fr[i] == b) hb = 1 }
		if (ha) { t += $NF; if (hb) m += $NF } }
		END { printf "%.4f", t ? m / t : 0 }' "$1"
}

# folded_incl FILE FRAME : samples whose stack holds FRAME (once each).
# Frames may hold spaces (Lua frames do): the count is after the last one.
folded_incl() {
	awk -v f="$2" '{ st = $0; sub(/ [0-9]+$/, "", st); n = split(st, fr, ";");
		for (i = 1; i <= n; i++) if (fr[i] == f) { s += $NF; break } }
		END { print s + 0 }' "$1"
}

# lua_self_shares FOLDED CHUNK: each function's share of the samples
# whose leafmost Lua frame is one of CHUNK's (its path as frames print
# it), by that frame's name, a "name share" line each: jit.p's self time
# (it charges builtins and C to the calling Lua function).
lua_self_shares() {
	awk -v f=" ($2:" '{ c = $NF; st = $0; sub(/ [0-9]+$/, "", st); n = split(st, fr, ";");
		for (i = n; i >= 1; i--) if (index(fr[i], f)) break;
		if (i < 1) next;
		name = fr[i]; sub(/ \(.*/, "", name); self[name] += c; tot += c }
		END { for (k in self) printf "%s %.4f\n", k, self[k] / tot }' "$1" | sort
}

# jp_shares FILE: jit.p's raw counts (-jp=frm0...) as the same lines.
jp_shares() {
	awk '$1 ~ /^[0-9]+$/ { c[$2] += $1; tot += $1 }
		END { for (k in c) printf "%s %.4f\n", k, c[k] / tot }' "$1" | sort
}

# shares_overlap A B: the sum over functions of the smaller of the two
# shares.
shares_overlap() {
	awk 'NR == FNR { a[$1] = $2; next } { b[$1] = $2 }
		END { for (k in a) if (k in b) s += a[k] < b[k] ? a[k] : b[k]; printf "%.4f\n", s }' "$1" "$2"
}

# folded_under WHO FOLDED: the count of FOLDED's stacks through a Lua
# function WHO of samples/lua/.
folded_under() { grep -E ";$1 \(samples/lua/[a-z]+.lua:[0-9]+\)" "$2" | folded_total /dev/stdin; }

# share_dev G S W T: how far the share G/S is from the share W/T (the
# truth), as a decimal; a share of nothing is 0, and of a truth of
# nothing 1, so that an empty side fails a bound rather than dividing by 0.
share_dev() {
	awk -v g="$1" -v s="$2" -v w="$3" -v t="$4" \
		'BEGIN { d = (s ? g / s : 0) - (t ? w / t : 1); printf "%.4f", d < 0 ? -d : d }'
}

# check_abc_shares NAME BOUND GA GB GC TA TB TC: a's, b's and c's shares
# of GA + GB + GC each within BOUND of their shares of TA + TB + TC, the
# truth (share_dev), a check each, named NAME with %s for a, b or c.
check_abc_shares() {
	local name=$1 bound=$2 sum truth i=0 f
	local -a g=("${3:-0}" "${4:-0}" "${5:-0}") t=("${6:-0}" "${7:-0}" "${8:-0}")
	sum=$(awk -v a="${g[0]}" -v b="${g[1]}" -v c="${g[2]}" 'BEGIN { print a + b + c }')
	truth=$(awk -v a="${t[0]}" -v b="${t[1]}" -v c="${t[2]}" 'BEGIN { print a + b + c }')
	for f in a b c; do
		check_num "${name//%s/$f}" "$(share_dev "${g[i]}" "$sum" "${t[i]}" "$truth")" \
			"<=" "$bound"
		i=$((i + 1))
	done
}

# compiled_placed LP [ARGS...]: the share of compiled samples that their
# trace's snapshots placed, from the report header (ARGS: report's, as
# --pid): in a function, or in inlined code marked as not told apart
# ([inlined: ...]); not those of traces gone before they were read, nor
# those no snapshot covers.
compiled_placed() {
	local lp=$1
	shift
	$LUAPROF report -n 1 "$@" "$lp" 2>/dev/null |
		awk '/^# compiled code:/ { gsub(/[(%)]/, "", $7); p = $7
			if (match($0, /, [0-9]+ \([0-9.]+%\) in inlined code/)) {
				m = substr($0, RSTART, RLENGTH); sub(/^, [0-9]+ \(/, "", m); p += m + 0 }
			print p / 100; f = 1 } END { if (!f) print 0 }'
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

# ---- Real applications: the bars every stack is held to ----------------
#
# A folded file (`report --format folded`, without --lines) is checked
# stack by stack; a stack's first frame is its root, its last user frame
# (before the kernel's "_[k]" frames) its leaf.
#
# Rooted: the root is where a thread of the program really starts: _start
# (the main thread), __clone3 or clone (other threads: start_thread
# follows), or a root the application adds (a fiber's first frame); or,
# stripped and printed as MODULE+0x..., the executable's _start calling
# __libc_start_main, or the dynamic loader's _start calling _dl_start or
# _dl_init (before main, when the process starts).
#
# Garbage: a frame that is not a frame of the program but data read as
# one.  A stack holds garbage when one of its frames is
#   - "[unmapped]" (or "[unmapped ...]"): an address in no mapping;
#   - "[anon]" ("[anon]+0x..." with --lines): code in an anonymous
#     mapping, which in a LuaJIT application is a compiled trace: a
#     sample there names its trace and Lua frames, and the native walk
#     steps over trace code, so the raw frame, root or between, means
#     the walk went wrong.  As the leaf
#     (the last user frame; kernel frames may follow) it is the
#     interrupted pc itself, read from the registers, not from memory:
#     true, if without its Lua frames (a tick the Lua walk could not tie
#     to its trace: seen 1 to 3 times in 3000), which the Lua bar counts;
#   - "[stack]", "[heap]", "[vvar...]": an address in a mapping that holds
#     no code;
#   - "[unknown Lua function]": a Lua frame whose function could not be
#     read, i.e. not a function;
#   - "[unknown frames]" but right above "[anon]": the walk leaves that gap
#     only where it stepped over another JIT's code to the VM's C frame;
#   - a root frame (above) anywhere but first, or __libc_start_main or
#     _dl_start anywhere but second: nothing calls _start, a thread's or
#     a fiber's first function, so what stands above it was read from
#     beyond the stack's end.  But for a parent in clone3's system call:
#     __clone3 as its last user frame, only kernel frames after it.
# A stack the walker could not follow to its end ends in "[truncated]":
# not garbage, but counted (its own bar).
#
# In Lua: a sample that has a Lua frame, "NAME (CHUNK:LINE)", or whose
# native frames show a call into the VM (lua_pcall, lua_call, lua_resume,
# lua_cpcall, or a VM entry the application adds).  The Lua bar is the
# share of those that have Lua frames.

APP_ROOTS="_start __clone3 clone __clone"
APP_VM_ENTRIES="lua_pcall lua_call lua_resume lua_cpcall"

# stack_bars FOLDED EXTRA_ROOTS EXTRA_ENTRIES : prints "total rooted
# garbage truncated inlua withlua" (samples) and writes the offending
# stacks, "COUNT WHY: STACK" lines, to FOLDED.unrooted, .garbage,
# .truncated and .nolua.
stack_bars() {
	awk -v roots="$APP_ROOTS $2" -v entries="$APP_VM_ENTRIES $3" -v out="$1" '
	BEGIN {
		n = split(roots, r, " "); for (i = 1; i <= n; i++) isroot[r[i]] = 1
		n = split(entries, e, " "); for (i = 1; i <= n; i++) isentry[e[i]] = 1
		printf "" >(out ".unrooted"); printf "" >(out ".garbage")
		printf "" >(out ".truncated"); printf "" >(out ".nolua")
	}
	# Only kernel frames after frame i: a parent in clone3 system
	# call, whose stack ends there, not a stack read past its end.
	function kernel_after(i,   j) {
		for (j = i + 1; j <= n; j++) if (fr[j] !~ /_\[k\]$/) return 0
		return 1
	}
	function garbage(f, i) {
		if (f ~ /^\[unmapped( [^]]*)?\]$/) return "an address in no mapping"
		if (f ~ /^\[anon\](\+0x[0-9a-f]+)?$/ && !kernel_after(i))
			return "trace or stack data as a native frame"
		if (f ~ /^\[(stack|heap|vvar)[^]]*\]$/) return "an address in a mapping of data"
		if (f == "[unknown frames]" && fr[i + 1] !~ /^\[anon\](\+0x[0-9a-f]+)?$/)
			return "a gap not above another JIT'"'"'s code"
		if (f == "[unknown Lua function]") return "a Lua frame that is no function"
		if (i > 1 && (f in isroot) && !kernel_after(i)) return "frames above a root (" f ")"
		if (i > 2 && (f == "__libc_start_main" || f == "_dl_start"))
			return "frames above a root (" f ")"
		return ""
	}
	{
		c = $NF; st = $0; sub(/ [0-9]+$/, "", st)
		n = split(st, fr, ";")
		total += c
		if ((fr[1] in isroot) || (fr[1] !~ /^\[/ && (fr[2] == "__libc_start_main" ||
		    fr[2] == "_dl_start" || fr[2] == "_dl_init")))
			rooted += c
		else print c " root " fr[1] ": " st >>(out ".unrooted")
		why = ""; lua = 0; entry = 0; trunc = 0
		for (i = 1; i <= n; i++) {
			if (why == "") why = garbage(fr[i], i)
			if (fr[i] ~ / \([^()]*:[0-9]+\)$/) lua = 1
			if (fr[i] in isentry) entry = 1
			if (fr[i] == "[truncated]") trunc = 1
		}
		if (why != "") { garbage_n += c; print c " " why ": " st >>(out ".garbage") }
		if (trunc) { truncated += c; print c " truncated: " st >>(out ".truncated") }
		if (lua || entry) inlua += c
		if (lua) withlua += c
		else if (entry) print c " no Lua frames: " st >>(out ".nolua")
	}
	END { print total + 0, rooted + 0, garbage_n + 0, truncated + 0, inlua + 0, withlua + 0 }
	' "$1"
}

# show_stacks FILE : the 5 heaviest offending stacks of FILE, indented
# (not counted as results by tests/run), long ones cut in the middle.
show_stacks() {
	sort -t' ' -k1,1nr "$1" | head -5 | awk '{
		if (length($0) > 700) $0 = substr($0, 1, 300) " ... " substr($0, length($0) - 349)
		print "    " $0 }'
}

# check_app_stacks LABEL FOLDED [EXTRA_ROOTS [EXTRA_ENTRIES [MIN_SAMPLES]]] :
# the bars every real application's test holds (docs/support.md): at least MIN_SAMPLES
# (default 200) samples, >= 99% rooted, no garbage frame, <= 0.5%
# truncated, >= 97% of the samples in Lua with Lua frames.  Each failure
# shows the stacks that failed it.
check_app_stacks() {
	local label=$1 f=$2 total rooted garbage truncated inlua withlua
	read -r total rooted garbage truncated inlua withlua < <(stack_bars "$f" "${3:-}" "${4:-}")
	check_num "$label: samples" "$total" ">=" "${5:-200}"
	check_num "$label: share of samples rooted at a thread's or fiber's start" \
		"$(share $rooted $total)" ">=" 0.99 || show_stacks $f.unrooted
	check_num "$label: samples with a garbage frame" "$garbage" "==" 0 ||
		show_stacks $f.garbage
	check_num "$label: share of samples truncated" "$(share $truncated $total)" "<=" 0.005 ||
		show_stacks $f.truncated
	check_num "$label: samples in Lua" "$inlua" ">=" $((${5:-200} / 2))
	check_num "$label: share of the samples in Lua with Lua frames" \
		"$(share $withlua $inlua)" ">=" 0.97 || show_stacks $f.nolua
}

# app_lua_functions : two local Lua functions the application tests run:
# fib(n), deep recursion, and strs(n), strings built with builtins, which
# allocates (the GC runs).
app_lua_functions() {
	cat <<'LUA'
local function fib(n)
  if n < 2 then return n end
  return fib(n - 1) + fib(n - 2)
end
local function strs(n)
  local t = {}
  for i = 1, n do t[#t + 1] = ('x'):rep(i % 50) .. tostring(i) end
  return #table.concat(t)
end
LUA
}

# prog_names PID: "fdinfo-file name" of the BPF programs PID holds open
# (a recorder's), into $TMP/progs; bpf_stats then prints "name run_cnt
# run_time_ns" of each (kernel.bpf_stats_enabled=1 for the counts).
prog_names() {
	local f id
	: >$TMP/progs
	for f in $(grep -lP '^prog_type:' /proc/$1/fdinfo/* 2>/dev/null); do
		id=$(awk '$1 == "prog_id:" { print $2 }' $f)
		echo "$f $(bpftool prog show id $id 2>/dev/null | awk '{ for (i = 1; i < NF; i++) if ($i == "name") print $(i + 1) }')"
	done >$TMP/progs
}
bpf_stats() {
	local f n
	while read -r f n; do
		awk -v n=$n '$1 == "run_cnt:" { c = $2 } $1 == "run_time_ns:" { t = $2 } END { print n, c + 0, t + 0 }' $f
	done <$TMP/progs
}

# lua_inlined.sh - compiled time placed in the functions a trace inlined,
# from the trace's snapshots (record 19, trace_snaps), with the JIT on.
# inlined.lua: f's loop calls g and h, which LuaJIT inlines; the self
# shares of f, g and h must agree with LuaJIT's own profiler (-jp, run on
# its own, not beside luaprof: its hooks change the traces) on both
# LuaJITs, GC64 or not, and --by line and --annotate must put the time on
# g's and h's lines.  jitmix.lua: side traces, pcall, varargs,
# metamethods, stitched traces, a trace calling C that calls back into
# Lua, and jit.flush() reusing trace numbers: every Lua call chain seen
# with the JIT on must be one the program has (as -joff shows), and
# compiled samples must be placed.
. tests/lib.sh

tests/deps.sh || { fail "test dependencies (tests/deps.sh)"; exit 1; }
tests/luajit-variants.sh || { fail "non-GC64 LuaJIT builds (tests/luajit-variants.sh)"; exit 1; }

LJ2=/usr/bin/luajit
LJ1=$PWD/build/luajit-upstream/usr/bin/luajit
NOGC2=$PWD/build/luajit-variants/openresty-nogc64/luajit
NOGC1=$PWD/build/luajit-variants/upstream-nogc64/luajit
# jit.* modules for -jp: luajit2's are installed; upstream's are unpacked.
UPATH="$PWD/build/luajit-upstream/usr/share/luajit-2.1.0-beta3/?.lua;;"
S=samples/lua

# A Lua frame of S/FILE as the report prints it: NAME (S/FILE:LINE).
lua_frame() { echo "$1 ($S/$2:$(grep -n "$3" $S/$2 | head -1 | cut -d: -f1))"; }

# recheck_share ERR: record's count of known traces looked at again, over
# one look per trace per 100 ms of the recording (and two more each: the
# last samples are handled just after it ends).
recheck_share() {
	awk '/compiled traces:/ { met = $5; for (i = 1; i < NF; i++) if ($i == "again") re = $(i + 1) }
		/ samples, [0-9]+ lost, / { for (i = 2; i <= NF; i++) if ($i == "s,") secs = $(i - 1) }
		END { printf "%.4f\n", met ? re / (met * (10 * secs + 2)) : 0 }' "$1"
}

# check_inlined LABEL NAME LUAJIT [LUA_PATH]: f, g and h against jit.p;
# the files are $TMP/inl-NAME.*.
check_inlined() {
	local label=$1 lj=$3 path=${4:-} out=$TMP/inl-$2 ov
	$LUAPROF record -F 999 -o $out.lp -- $lj $S/inlined.lua 2 2>$out.err
	check "$label: record exits 0" test $? -eq 0
	check "$label: traces with their snapshots" grep -qE "compiled traces: [0-9]+ met, read [0-9]+ times: with their snapshots [1-9]" $out.err
	# A known trace is looked at again at most every 100 ms (a read of
	# the target each time), not at each of its samples.
	check_num "$label: known traces looked at again at most 10 times a second each" \
		"$(recheck_share $out.err)" "<=" 1
	$LUAPROF report --format folded -o $out.folded $out.lp 2>/dev/null
	env ${path:+LUA_PATH=$path} $lj -jp=frm0i1,$out.jp $S/inlined.lua 2
	lua_self_shares $out.folded $S/inlined.lua >$out.ours
	jp_shares $out.jp >$out.theirs
	echo "  $label: luaprof $(tr '\n' ' ' <$out.ours)| jit.p $(tr '\n' ' ' <$out.theirs)"
	ov=$(shares_overlap $out.ours $out.theirs)
	check_num "$label: self shares of f, g, h overlap jit.p's" "$ov" ">=" 0.8
	check_num "$label: share of compiled samples placed" "$(compiled_placed $out.lp)" ">=" 0.95
	check "$label: g runs under f, named" \
		grep -qF "$(lua_frame f inlined.lua '^local function f');$(lua_frame g inlined.lua '^local function g')" $out.folded
	check "$label: h runs under f, named" \
		grep -qF "$(lua_frame f inlined.lua '^local function f');$(lua_frame h inlined.lua '^local function h')" $out.folded
}

check_inlined "luajit2" lj2 $LJ2
check_inlined "upstream" lj1 $LJ1 "$UPATH"
check_inlined "luajit2 non-GC64" nogc2 $NOGC2
check_inlined "upstream non-GC64" nogc1 $NOGC1 "$UPATH"

# Lines: compiled time is on lines inside g and h, not on f's loop; each of
# h's three lines (and g's one) has about a fifth of it, so g's may rank
# fourth.
out=$TMP/inl-lj2
$LUAPROF report --by line -n 6 -o $out.lines $out.lp 2>/dev/null
$LUAPROF report --annotate -n 0 -o $out.annotate $out.lp 2>/dev/null
h_first=$(grep -n '^local function h' $S/inlined.lua | cut -d: -f1)
g_first=$(grep -n '^local function g' $S/inlined.lua | cut -d: -f1)
check "--by line: the hottest line is one of h's" \
	grep -qE "^ +[0-9]+ +[0-9.]+% .*inlined\.lua:($((h_first + 1))|$((h_first + 2))|$((h_first + 3))|$((h_first + 4)))  h: " \
	<(grep -E '^ +[0-9]' $out.lines | head -1)
check "--by line: one of g's lines is ranked" grep -qE "inlined\.lua:($((g_first + 1))|$((g_first + 2)))  g: " $out.lines
check "--annotate: g's and h's source are shown with samples" \
	bash -c "grep -qE '^g \($S/inlined.lua:$g_first' $out.annotate && grep -qE '^h \($S/inlined.lua:$h_first' $out.annotate"
check "--lines: h's time is on a line of h" \
	bash -c "$LUAPROF report --format folded --lines $out.lp 2>/dev/null | grep -qE ';h \($S/inlined.lua:($((h_first + 1))|$((h_first + 2))|$((h_first + 3))|$((h_first + 4)))\) [0-9]+$'"

# chains FOLDED: the distinct chains of jitmix.lua's functions, by name,
# root first, with their sample counts.
chains() {
	awk -v f=" ($S/jitmix.lua:" '{ st = $0; sub(/ [0-9]+$/, "", st); n = split(st, fr, ";"); c = "";
		for (i = 1; i <= n; i++) if (index(fr[i], f)) { x = fr[i]; sub(/ \(.*/, "", x); c = c ">" x }
		if (c != "") w[c] += $NF }
		END { for (k in w) print k, w[k] }' "$1" | sort
}

# unknown_share JIT INT: the share of JIT's chained samples whose chain
# INT never shows.
unknown_share() {
	awk 'NR == FNR { seen[$1] = 1; next } { t += $2; if (!($1 in seen)) u += $2 }
		END { printf "%.4f\n", t ? u / t : 1 }' "$2" "$1"
}

out=$TMP/mix
$LUAPROF record -F 999 -o $out-int.lp -- $LJ2 -joff $S/jitmix.lua 3 2>/dev/null
$LUAPROF report --format folded -o $out-int.folded $out-int.lp 2>/dev/null
chains $out-int.folded >$out-int.chains
for run in "jit:0" "flush:3"; do
	name=${run%%:*}
	$LUAPROF record -F 999 -o $out-$name.lp -- $LJ2 $S/jitmix.lua 3 ${run#*:} 2>$out-$name.err
	check "jitmix.lua, $name: record exits 0" test $? -eq 0
	$LUAPROF report --format folded -o $out-$name.folded $out-$name.lp 2>/dev/null
	chains $out-$name.folded >$out-$name.chains
	check_num "jitmix.lua, $name: share of samples on a chain the program does not have" \
		"$(unknown_share $out-$name.chains $out-int.chains)" "<=" 0.02
	check_num "jitmix.lua, $name: samples on Lua chains" \
		"$(awk '{ n += $2 } END { print n + 0 }' $out-$name.chains)" ">=" 1000
done
check_num "jitmix.lua: share of compiled samples placed" "$(compiled_placed $out-jit.lp)" ">=" 0.9
# Flushing every 3 calls of loop: traces are compiled again and again
# under the numbers they had; many are gone before the recorder reads
# them, and those are counted, not placed.  How many depends on how soon
# the recorder reads (half of them idle; fewer on a busy machine, where
# this share of placed samples fell to 0.49): a figure of the machine,
# not of the code.  What is the code's: every compiled sample is placed
# or counted, and those of traces read with their snapshots are placed.
# How many traces a run compiles varies as much: 833 to 1,611 in four
# runs on an idle machine, 445 at load 6, 54 (and 35 compiled samples)
# in one full `make test` beside a kernel guest; the floors only keep the
# checks from passing on nothing.
traces=$($LUAPROF info $out-flush.lp | awk '/^compiled traces:/ { sub(",", "", $3); print $3 }')
check_num "jitmix.lua, flush: trace records (numbers reused)" "${traces:-0}" ">=" 30
$LUAPROF report -n 1 $out-flush.lp >$out-flush.top 2>&1
# "compiled code: N samples, P (x%) placed ..., I (y%) in inlined code",
# "note: G of N ... without their snapshots", "note: U of N ... not placed".
read -r ncomp nplaced ngone nunplaced < <(awk '
	/^# compiled code:/ { n = $4; p = $6
		if (match($0, /, [0-9]+ \([0-9.]+%\) in inlined code/)) { m = substr($0, RSTART + 2); p += m + 0 } }
	/without their snapshots/ { g = $4 } /were not placed/ { u = $4 }
	END { print n + 0, p + 0, g + 0, u + 0 }' $out-flush.top)
check "jitmix.lua, flush: every compiled sample placed or counted ($nplaced + $ngone + $nunplaced of $ncomp)" \
	test $((nplaced + ngone + nunplaced)) -eq "$ncomp" -a "$ncomp" -gt 0
check_num "jitmix.lua, flush: samples placed (traces read in time)" "$nplaced" ">=" 20
check_num "jitmix.lua, flush: share placed of those in traces read with their snapshots" \
	"$(share $nplaced $((ncomp - ngone)))" ">=" 0.9
check "jitmix.lua, flush: report says how many were not placed" \
	bash -c "$LUAPROF report -n 1 $out-flush.lp 2>&1 >/dev/null | grep -qE 'note: [0-9]+ of [0-9]+ samples in compiled code'"

# lua_walk.sh - the Lua walk where the VM's registers say little: programs
# that live in C called from Lua (the global state must come from the VM's
# C frame on the native stack), a frame sampled while the VM returns from
# it (its slots half overwritten), the JIT compiler's and the error
# unwinder's C code beside the Lua frames, and short-lived LuaJIT children
# of a shell loop (each VM checked while its process lives).
. tests/lib.sh

tests/deps.sh || { fail "test dependencies (tests/deps.sh)"; exit 1; }

LJ2=/usr/bin/luajit
LIB1=$(ls $PWD/build/luajit-upstream/usr/lib/x86_64-linux-gnu/libluajit-5.1.so.2.* | head -1)
S=samples/lua

# samples of FOLDED whose stack holds a frame of CHUNK ("NAME (CHUNK:N)")
chunk_samples() { awk -v c="($2:" 'index($0, c) { n += $NF } END { print n + 0 }' "$1"; }
# samples of FOLDED whose stack holds the string STR
str_samples() { awk -v c="$2" 'index($0, c) { n += $NF } END { print n + 0 }' "$1"; }
line_of() { grep -n "$2" $S/$1 | head -1 | cut -d: -f1; }

# On a failed check of truncated stacks: the stacks, and why the walk
# stopped at each (record -v prints the first few).
show_truncated() {
	grep -F '[truncated]' "$1" | cut -c1-400 | head -5 | sed 's/^/    /'
	grep -F 'Lua stack truncated' "$2" | head -5 | sed 's/^/    /'
}

# 1. C called from Lua, from the first sample: string.gsub over 4 MB.
# Hardly a tick lands in the interpreter, so G comes from the VM's C frame,
# which every sample's native walk crosses.  A program of one second of
# CPU time, start-up included.  Its first moments have no Lua frames:
# the loader, and, for a LuaJIT the host loads with dlopen, the time the
# recorder takes to read the new library and locate its VM (6 to 12
# samples idle, 24 once with CI busy).  Past its first 0.2 s, all but
# lua_close's have them.
# without_lua FOLDED: its first stacks without cside.lua's frames, indented.
without_lua() { grep -vF "($S/cside.lua:" "$1" | head -5 | cut -c1-300 | sed 's/^/    /'; }
cside() { # LABEL OUT COMMAND...
	local label=$1 out=$2 total lua
	shift 2
	$LUAPROF record -F 999 -o $out -- "$@" $S/cside.lua 1 2>$out.err
	check "$label: record exits 0" test $? -eq 0
	$LUAPROF report --format folded -o $out.folded $out 2>/dev/null
	$LUAPROF report --format folded --from 0.2 -o $out.late.folded $out 2>/dev/null
	total=$(folded_total $out.folded)
	lua=$(chunk_samples $out.folded $S/cside.lua)
	check_num "$label: samples" "$total" ">=" 500
	check_num "$label: share of samples with Lua frames" "$(share $lua $total)" ">=" 0.95 ||
		without_lua $out.folded
	check_num "$label: past its first 0.2 s, share of samples with Lua frames" \
		"$(share $(chunk_samples $out.late.folded $S/cside.lua) $(folded_total $out.late.folded))" ">=" 0.99 ||
		without_lua $out.late.folded
	check "$label: string.gsub runs under rewrite, under main" \
		grep -qF "main ($S/cside.lua:0);rewrite ($S/cside.lua:$(line_of cside.lua '^function rewrite'));string.gsub" $out.folded
	check "$label: no warning that the offsets are wrong" \
		bash -c "! grep -q 'offsets are probably wrong' $out.err"
}
cside "C from Lua, luajit2 executable" $TMP/cside2.lp $LJ2
cside "C from Lua, upstream shared library" $TMP/cside1.lp $SAMPLES/luahost -joff $LIB1

# 2. Frames sampled while the VM returns from them: unpack and
# string.find return several results over their own frame.  Interpreter
# only, as in lua_nginx.sh (string.gsub's two results there).
out=$TMP/multret.lp
$LUAPROF record -v -F 999 -o $out -- $LJ2 -joff $S/multret.lua 3 2>$out.err
check "multret.lua: record exits 0" test $? -eq 0
$LUAPROF report --format folded -o $out.folded $out 2>/dev/null
total=$(folded_total $out.folded)
check_num "multret.lua: share of samples with Lua frames" \
	"$(share $(chunk_samples $out.folded $S/multret.lua) $total)" ">=" 0.98
# (A native stack cut before any Lua ran, in the process's first
# moments, is no truncated Lua stack.)
check_num "multret.lua: truncated Lua stacks" "$(lua_truncated $out.folded)" "==" 0 ||
	show_truncated $out.folded $out.err
# The interpreter calls vm_mod (i % 30) as a helper of its own: its
# frame goes on the leaf side, never between the host and the Lua frames.
main=$(str_samples $out.folded "main ($S/multret.lua:0)")
check_num "multret.lua: share of main chunk samples right under lua_pcall" \
	"$(share $(str_samples $out.folded "lua_pcall;main ($S/multret.lua:0)") $main)" ">=" 0.995

# 3. The JIT compiler and the error unwinder: their native frames on the
# leaf side of the Lua frames, which stand right on the host's lua_pcall.
out=$TMP/jitcomp.lp
$LUAPROF record -F 999 -o $out -- $LJ2 $S/jitcomp.lua 3 2>$out.err
check "jitcomp.lua: record exits 0" test $? -eq 0
$LUAPROF report --format folded -o $out.folded $out 2>/dev/null
grep -F '[JIT compiler]' $out.folded >$out.jit
jit=$(folded_total $out.jit)
check_num "jitcomp.lua: samples in the JIT compiler" "$jit" ">=" 20
check_num "jitcomp.lua: share of JIT compiler samples with the Lua frames right under lua_pcall" \
	"$(share $(str_samples $out.jit "lua_pcall;main ($S/jitcomp.lua:0)") $jit)" ">=" 0.99
check "jitcomp.lua: the compiler's native frames follow the Lua frames" \
	grep -qE "lua_pcall;main \($S/jitcomp.lua:0\);[^;]*\);luajit\+0x[0-9a-f]+;.*\[JIT compiler\]" $out.jit
check "jitcomp.lua: error unwinds from throw (named ? by pcall), under pcall" \
	grep -qF "pcall;? ($S/jitcomp.lua:$(line_of jitcomp.lua '^function throw'));error;" $out.folded
check_num "jitcomp.lua: samples in the unwinder" \
	"$(str_samples $out.folded '_Unwind_RaiseException')" ">=" 20
# Not all: the native walk of some samples stops early (at trace code in
# an area the recorder has not read yet, or in libgcc while it installs
# the catching frame's registers), and their Lua frames follow its leaf.
main=$(str_samples $out.folded "main ($S/jitcomp.lua:0)")
check_num "jitcomp.lua: share of main chunk samples right under lua_pcall" \
	"$(share $(str_samples $out.folded "lua_pcall;main ($S/jitcomp.lua:0)") $main)" ">=" 0.97
# Each chunk loadstring made is garbage once it ran: the recorder, woken
# by the first sample of a new Lua stack, reads its prototype while it
# lives (a prototype read after the GC freed it is unknown, not named).
named=$(str_samples $out.folded "main ($S/jitcomp.lua:0);main ([string \"local a = 0 for i")
unknown=$(str_samples $out.folded "main ($S/jitcomp.lua:0);[unknown Lua function]")
check_num "jitcomp.lua: share of samples in loadstring's chunks that name them" \
	"$(share $named $((named + unknown)))" ">=" 0.8

# 4. Helpers and traces entered from the interpreter: jloop.lua's
# interpreted loop calls vm_mod (a helper, rsp 8 below the VM's C frame)
# and enters compiled loops (JLOOP lowers rsp by 16 before it jumps), and
# leaves them again at once.  A helper's frame is one of its own, the
# interpreter's JLOOP is not: one more VM frame on the native side than
# the Lua walk says, or one fewer, puts Lua frames above the root.
out=$TMP/jloop.lp
$LUAPROF record -F 999 -o $out -- $LJ2 $S/jloop.lua 2 2>$out.err
check "jloop.lua: record exits 0" test $? -eq 0
$LUAPROF report --format folded -o $out.folded $out 2>/dev/null
read -r total rooted garbage truncated inlua withlua < <(stack_bars $out.folded)
check_num "jloop.lua: samples" "$total" ">=" 1000
check_num "jloop.lua: samples with a garbage frame" "$garbage" "==" 0 || show_stacks $out.folded.garbage
main=$(str_samples $out.folded "main ($S/jloop.lua:0)")
check_num "jloop.lua: share of main chunk samples right under lua_pcall" \
	"$(share $(str_samples $out.folded "lua_pcall;main ($S/jloop.lua:0)") $main)" ">=" 0.995

# 5. Short-lived children: a shell loop runs CHILDREN luajit processes of
# 20 to 100 ms of CPU each (a random amount: no fixed period; by os.clock,
# not by a count of iterations, which a faster host ran in so little time
# that fewer than 20 children reached the 50 samples the checks below
# need), JIT on, each through a link of its own (ljN), so that its name
# tells its samples apart.
# A child's Lua frames need the BPF walker to know its layout (at exec,
# for an executable the recorder validated in another process), and the
# recorder to check its VM and read its prototypes while it lives: it is
# woken at once for those samples, and has a few ms.  Also while it
# embeds the symbols and source lines of an object for the first time
# (libc's take 100 to 400 ms): another thread reads them, and children
# start from the first moment, so that some run during the first flush.
# The first child of a build luaprof never read would wait the 10 ms the
# reading of its code takes, with no Lua frames: the build is read once
# before (record/luajit_cache.c keeps it), as any recording of it would.
$LUAPROF check --luajit $LJ2 >/dev/null
CHILDREN=80
mkdir -p $TMP/bin
for i in $(seq $CHILDREN); do ln -s $LJ2 $TMP/bin/lj$i; done
work='local function f(n) local s = 0 for i = 1, n do s = s + math.sin(i) * (i % 7) end return s end'
cat >$TMP/children.sh <<EOF
for i in \$(seq $CHILDREN); do
	ms=\$(( RANDOM % 81 + 20 ))
	$TMP/bin/lj\$i -e "$work local stop, t = os.clock() + \$ms / 1000, {}
		repeat t[#t % 4 + 1] = f(50000) until os.clock() >= stop"
done
EOF
out=$TMP/children.lp
$LUAPROF record -F 999 -o $out -- bash $TMP/children.sh 2>$out.err
check "children: record exits 0" test $? -eq 0
check "children: no sample lost" grep -qE "samples, 0 lost" $out.err
$LUAPROF info $out >$out.info
check_num "children: every child followed" "$(grep -cE '^ +[0-9]+ +[0-9]+ +lj[0-9]+ ' $out.info)" "==" $CHILDREN
check "children: no VM said not to validate" bash -c "! grep -q 'did not validate' $out.err"
$LUAPROF report --format folded --comm -o $out.folded $out 2>/dev/null
# Per child: samples, and samples with Lua frames.  Those it ran before
# the recorder first heard of it (a few ms) have none.
awk '$1 ~ /^lj[0-9]+;/ { c = substr($1, 1, index($1, ";") - 1); n[c] += $NF;
	if (index($0, "(=(command line):")) l[c] += $NF }
	END { for (c in n) print c, n[c], l[c] + 0 }' $out.folded >$out.children
check_num "children: children that ran 50 ms or more" "$(awk '$2 >= 50' $out.children | wc -l)" ">=" 20
check_num "children: of those, children with under 75% of their samples with Lua frames" \
	"$(awk '$2 >= 50 && $3 < 0.75 * $2' $out.children | wc -l)" "==" 0
awk '$2 >= 50 && $3 < 0.75 * $2 { print "    " $0 }' $out.children | head -5
check_num "children: share of their samples with Lua frames" \
	"$(awk '$2 >= 50 { n += $2; l += $3 } END { printf "%.4f", n ? l / n : 0 }' $out.children)" ">=" 0.9
# Samples in compiled code without Lua frames show the trace's code.
all=$(awk '$1 ~ /^lj[0-9]+;/ { n += $NF } END { print n + 0 }' $out.folded)
anon=$(awk '$1 ~ /^lj[0-9]+;/ && /\[anon\]/ { n += $NF } END { print n + 0 }' $out.folded)
check_num "children: share of their samples in trace code without Lua frames" "$(share $anon $all)" "<=" 0.02

# 6. VMs being born: births.lua creates and closes states in a loop.  A
# new G holds vmstate 0 (no trace has that number) until the VM first
# runs, and the state's stack is made after the register that names G is
# set: such a tick was walked as "trace 0" from base 0, and its trace's
# code came out as a raw [anon] frame under a cut stack.
out=$TMP/births
$LUAPROF record -v -F 999 -o $out.lp -- $LJ2 $S/births.lua 2 >/dev/null 2>$out.err
check "births: record exits 0" test $? -eq 0
$LUAPROF report --format folded -o $out.folded $out.lp 2>/dev/null
set -- $(stack_bars $out.folded "" "")
check_num "births: a few thousand samples" "${1:-0}" ">=" 1000
check_num "births: samples with a garbage frame" "${3:-1}" "==" 0
head -3 $out.folded.garbage | cut -c1-300 | sed 's/^/    /'
# Such a tick is in C code that births.lua's loop called through the FFI
# (luaL_newstate, lua_close): the Lua frames are the loop's, on the VM
# that runs it.  Where r14 named the newborn's G, or the thread's cache
# held it (or held it freed), the walk gave none: 21 to 22% of the
# samples, 27 to 29% of luaL_newstate's.  (The few ticks before the
# recorder located the VM have none either.)
total=${1:-0}
check_num "births: share of samples with births.lua's Lua frames" \
	"$(share $(chunk_samples $out.folded $S/births.lua) $total)" ">=" 0.98
newstate=$(folded_incl $out.folded luaL_newstate)
check_num "births: samples in luaL_newstate" "$newstate" ">=" 200
check_num "births: share of luaL_newstate's samples right under births.lua's loop" \
	"$(share $(str_samples $out.folded "main ($S/births.lua:0);luaL_newstate;lua_newstate") $newstate)" \
	">=" 0.98
# The new state's lj_vm_cpcall of cpluaopen is a VM frame of its own, not
# the running VM's: stepped over with that VM's C frame, it cut
# lua_newstate and luaL_newstate from the stack, whose code makes the new
# state's memory and takes nearly all of the page faults that show
# births.lua's frames (80 to 85% of them were under it, and 69% once the
# newborn's G no longer hid the running VM's).
grep -F "($S/births.lua:" $out.folded | grep -F ';asm_exc_page_fault_[k]' >$out.faults
check_num "births: share of births.lua's page faults under lua_newstate" \
	"$(share $(str_samples $out.faults ';lua_newstate;') $(folded_total $out.faults))" ">=" 0.97 ||
	grep -vF ';lua_newstate;' $out.faults | head -3 | cut -c1-300 | sed 's/^/    /'

# 7. C functions of libraries just loaded: newlibs.lua loads NLIBS copies
# of a C module one after another (package.loadlib: a new mapping each)
# and calls its function, which copies memory for 20 to 60 ms of CPU.  A
# tick in libc's memcpy has the module's code as its caller, where the
# native walk stops until the recorder reads the new mapping, and the Lua
# walk a C frame at the module's function.  That frame printed as
# [unmapped] when the recorder had not re-read the mappings by then (it
# does so for the native walk at most every 100 ms): 57 and 64 samples in
# two recordings of six here, and kresd's require of its ahocorasick
# module made app_kresd fail so in one run of two.  A race: ROUNDS
# recordings.
NLIBS=16
ROUNDS=4
cat >$TMP/copier.c <<'C'
#include <string.h>
#include <time.h>
static char a[1 << 20], b[1 << 20];
int copier(void *L)
{
	/* 20 to 60 ms of CPU, by the clock: no fixed count of copies. */
	clock_t stop = clock() + (clock_t)(20 + (unsigned long)L % 41) * CLOCKS_PER_SEC / 1000;

	while (clock() < stop) {
		memcpy(a, b, sizeof(a));
		b[(unsigned char)a[7]]++;
	}
	return 0;
}
C
cc -O1 -g -shared -fPIC -o $TMP/copier0.so $TMP/copier.c || fail "newlibs: cc the module"
cat >$TMP/newlibs.lua <<LUA
local dir = ...
for i = 1, $NLIBS do
	local copy = assert(package.loadlib(dir .. "/copier" .. i .. ".so", "copier"))
	copy()
end
LUA
total=0 garbage=0 under=0
for r in $(seq $ROUNDS); do
	out=$TMP/newlibs$r
	mkdir -p $out.d
	for i in $(seq $NLIBS); do cp $TMP/copier0.so $out.d/copier$i.so; done
	$LUAPROF record -F 999 -o $out.lp -- $LJ2 $TMP/newlibs.lua $out.d >/dev/null 2>$out.err ||
		fail "newlibs: record exits 0 (round $r)"
	$LUAPROF report --format folded -o $out.folded $out.lp 2>/dev/null
	set -- $(stack_bars $out.folded "" "")
	total=$((total + ${1:-0})) garbage=$((garbage + ${3:-1}))
	under=$((under + $(folded_incl $out.folded copier)))
	head -2 $out.folded.garbage | cut -c1-300 | sed 's/^/    /'
done
check_num "newlibs: samples" "$total" ">=" 800
check_num "newlibs: samples with a garbage frame" "$garbage" "==" 0
# Cut, not named, only until the recorder has read each new mapping.
check_num "newlibs: share of samples under the modules' copier" "$(share $under $total)" ">=" 0.8

# ---- the host's own collections: G, not host code ------------------------
# luahost -gc: the script keeps a large table alive, then the host runs
# full collections through lua_gc() with no Lua frame, as uwsgi does
# between requests.  The GC's time is the G state (jit.p's letters), as
# when Lua's allocations run it; before, it read as host code.
cat >$TMP/keep.lua <<'LUA'
keep = {}
for i = 1, 200000 do keep[i] = { i, tostring(i) } end
LUA
$LUAPROF record -F 999 -o $TMP/hostgc.lp -- $SAMPLES/luahost -gc 2 \
	/usr/lib/x86_64-linux-gnu/libluajit-5.1.so.2 $TMP/keep.lua >/dev/null 2>$TMP/hostgc.err
check "host GC: record exits 0" test $? -eq 0
$LUAPROF report --vmstate -o $TMP/hostgc.vm $TMP/hostgc.lp 2>/dev/null
gc=$(awk '$2 == "G" { print $NF }' $TMP/hostgc.vm)
all=$(awk '/^# samples:/ { sub(/,$/, "", $3); print $3 }' $TMP/hostgc.vm)
check_num "host GC: share of the samples in state G (2 s of lua_gc after a short script)" \
	"$(share ${gc:-0} ${all:-0})" ">=" 0.8

# ---- a builtin written in C is one frame --------------------------------
# os.clock is lj_cf_os_clock, which calls libc's clock: in a stripped
# LuaJIT its own code read MODULE+0x... beside its name, the one function
# twice (os.clock;luajit+0x13198;clock).  The function holding that
# native frame starts where the builtin's C function does: one frame.
echo 'local t = os.clock() + 1 while os.clock() < t do end' >$TMP/clock.lua
for how in exe lib; do
	if [ $how = exe ]; then
		set -- $LJ2 -joff $TMP/clock.lua
	else
		set -- $SAMPLES/luahost -joff /usr/lib/x86_64-linux-gnu/libluajit-5.1.so.2 $TMP/clock.lua
	fi
	$LUAPROF record -F 999 -o $TMP/clock-$how.lp -- "$@" >/dev/null 2>&1
	$LUAPROF report --format folded -o $TMP/clock-$how.folded $TMP/clock-$how.lp 2>/dev/null
	check_num "os.clock, stripped LuaJIT ($how): samples in os.clock, called from main" \
		"$(str_samples $TMP/clock-$how.folded ';os.clock')" ">=" 200
	check_num "os.clock, stripped LuaJIT ($how): samples whose os.clock is followed by its own code" \
		"$(awk '/;os\.clock;(luajit|libluajit-5\.1\.so\.2[^;]*)\+0x/ { n += $NF } END { print n + 0 }' \
		   $TMP/clock-$how.folded)" "==" 0
	check_num "os.clock, stripped LuaJIT ($how): os.clock calls libc's clock" \
		"$(str_samples $TMP/clock-$how.folded ';os.clock;clock')" ">=" 100
done

# The same for a C function of a stripped C module: named by its entry
# (burnmod.so+0x...), its frame beside the VM's was the same function at
# a return address (MODULE+0x1139;MODULE+0x1160;clock).
cat >$TMP/burnmod.c <<'C'
#include <time.h>
typedef struct lua_State lua_State;
extern double lua_tonumber(lua_State *L, int idx);
extern void lua_pushcclosure(lua_State *L, int (*fn)(lua_State *), int n);
static int burn(lua_State *L)
{
	clock_t end = clock() + (clock_t)(lua_tonumber(L, 1) * CLOCKS_PER_SEC);

	while (clock() < end)
		;
	return 0;
}
int luaopen_burnmod(lua_State *L)
{
	lua_pushcclosure(L, burn, 0);
	return 1;
}
C
cc -shared -fPIC -O1 -s -o $TMP/burnmod.so $TMP/burnmod.c
check "a stripped C module builds" test -f $TMP/burnmod.so
echo "package.cpath = '$TMP/?.so;' .. package.cpath; require('burnmod')(1)" >$TMP/cmod.lua
$LUAPROF record -F 999 -o $TMP/cmod.lp -- $LJ2 $TMP/cmod.lua >/dev/null 2>&1
$LUAPROF report --format folded -o $TMP/cmod.folded $TMP/cmod.lp 2>/dev/null
check_num "stripped C module: samples in its C function, then in libc's clock" \
	"$(awk '/;burnmod\.so\+0x[0-9a-f]+;clock/ { n += $NF } END { print n + 0 }' $TMP/cmod.folded)" ">=" 200
# (Its call of clock through the PLT may be sampled in the PLT's stub: a
# frame of its own, not the function again.)
read -r plo phi < <(readelf -SW $TMP/burnmod.so | awk '$2 ~ /^\.plt/ { print $4, $6 }' |
	while read -r a z; do echo $((16#$a)) $((16#$a + 16#$z)); done |
	sort -n | awk 'NR == 1 { lo = $1 } { hi = $2 } END { print lo + 0, hi + 0 }')
twice=0
while read -r a c; do
	[ $((16#$a)) -ge "$plo" ] && [ $((16#$a)) -lt "$phi" ] || twice=$((twice + c))
done < <(grep -oE ';burnmod\.so\+0x[0-9a-f]+;burnmod\.so\+0x[0-9a-f]+.* [0-9]+$' $TMP/cmod.folded |
	sed -E 's/^;burnmod\.so\+0x[0-9a-f]+;burnmod\.so\+0x([0-9a-f]+).* ([0-9]+)$/\1 \2/')
check_num "stripped C module: samples with its function twice" "$twice" "==" 0

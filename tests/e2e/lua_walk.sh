# lua_walk.sh - the Lua walk where the VM's registers say little: programs
# that live in C called from Lua (the global state must come from the VM's
# C frame on the native stack), a frame sampled while the VM returns from
# it (its slots half overwritten), the JIT compiler's and the error
# unwinder's C code beside the Lua frames.
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
# CPU time, start-up included.
cside() { # LABEL OUT COMMAND...
	local label=$1 out=$2 total lua
	shift 2
	$LUAPROF record -F 999 -o $out -- "$@" $S/cside.lua 1 2>$out.err
	check "$label: record exits 0" test $? -eq 0
	$LUAPROF report --format folded -o $out.folded $out 2>/dev/null
	total=$(folded_total $out.folded)
	lua=$(chunk_samples $out.folded $S/cside.lua)
	check_num "$label: samples" "$total" ">=" 500
	check_num "$label: share of samples with Lua frames" "$(share $lua $total)" ">=" 0.98
	check "$label: string.gsub runs under rewrite, under main" \
		grep -qF "main ($S/cside.lua:0);rewrite ($S/cside.lua:$(line_of cside.lua '^function rewrite'));string.gsub" $out.folded
	check "$label: no warning that the offsets are wrong" \
		bash -c "! grep -q 'offsets are probably wrong' $out.err"
}
cside "C from Lua, luajit2 executable" $TMP/cside2.lp $LJ2

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
if grep -qF '[truncated]' $out.folded; then
	fail "multret.lua: no truncated Lua stacks" \
		"$(str_samples $out.folded '[truncated]') of $total samples"
	show_truncated $out.folded $out.err
else
	ok "multret.lua: no truncated Lua stacks"
fi
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

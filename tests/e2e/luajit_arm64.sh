# luajit_arm64.sh - arm64 LuaJIT objects read on this x86-64 machine, as
# a trace recorded on arm64 will need them read: Debian's own arm64
# luajit and libluajit packages (bookworm's two, trixie's) and the same
# sources cross-built with DWARF (tests/luajit-arm64.sh makes them once,
# into build/luajit-arm64/).
#
# 1. The unit tests that hold each object's derived layout to its DWARF,
#    to lj_frame.h and to its twin run here with the objects present
#    (without them the unit run skips them, saying so).
# 2. luaprof check --luajit on each object, as a user would run it: it
#    walks every one, with every field, and on the DWARF twins every
#    field DWARF has agrees with the code.
. tests/lib.sh

tests/deps.sh || { fail "test dependencies (tests/deps.sh)"; exit 1; }
tests/luajit-arm64.sh || { fail "arm64 LuaJIT objects (tests/luajit-arm64.sh)"; exit 1; }

LIST=$PWD/build/luajit-arm64/builds.txt

# ---- 1. the unit tests, with their material ------------------------------
build/unit_tests lj_arm64_cross_builds_are_their_dwarf lj_arm64_debian_objects >$TMP/unit 2>&1
sed 's/^/    /' $TMP/unit
check "the arm64 unit tests ran, none skipped" bash -c "[ \$(grep -c '^ok ' $TMP/unit) -eq 2 ]"

# ---- 2. luaprof check --luajit ------------------------------------------
n=0
while read -r name exe debug rest; do
	out=$TMP/$name.check
	$LUAPROF check --luajit "$exe" >$out 2>&1
	check "$name ($rest): luaprof check --luajit walks it" test $? -eq 0
	check "$name: its layout is complete" bash -c "! awk '\$2 == \"-\"' $out | grep -q ."
	check "$name: arm64's C frame (208 bytes, PC at 8, L at 16) from its code" \
		bash -c "grep -Eq '^cf_size +208 +lua_call' $out && grep -Eq '^cf_pc +8 +its interpreter' $out &&
			 grep -Eq '^cf_l +16 +lua_call' $out"
	n=$((n + 1))
	[ "$debug" = - ] && continue
	$LUAPROF check --luajit "$debug" >$out.dwarf 2>&1
	check "$name: DWARF agrees with the code on every field" \
		bash -c "[ \$(grep -c ' same\$' $out.dwarf) -ge 55 ] && ! grep -q DIFFERS $out.dwarf"
done <"$LIST"
check_num "arm64 objects read" "$n" ">=" 12

# dwz.sh - a program whose debug file went through dwz, as Debian's
# -dbgsym packages' do (dh_dwz): samples/dwz/'s two programs, which share
# the inline mix() of a header, built -O2 -g, stripped, their DWARF split
# into debug files found through .gnu_debuglink (in .debug/ beside them),
# then `dwz -m` on both, which moves what they share (mix's declaration,
# types, the strings of names such as main) to one shared file named in
# each debug file's .gnu_debugaltlink by path and build-id, as Debian's
# /usr/lib/debug/.dwz/<triplet>/<package>.debug.  Recorded, the program's
# frames must be named as without dwz: mix [inlined] inside step at the
# call's line, main, churn called from step.  With the shared file gone
# they keep their lines and lose those names (? [inlined], prog+0x...),
# which is what every dwz'ed debug file gave before luaprof read the
# shared file (the names checked then fail).  A trace recorded --no-embed
# gets the same names from the local files, and under --symfs, with the
# shared file at its absolute path there.
. tests/lib.sh

tests/deps.sh || { fail "test dependencies (tests/deps.sh)"; exit 1; }

APP=$TMP/app
S=samples/dwz
SHARED=$TMP/usr/lib/debug/.dwz/x86_64-linux-gnu/luaprof-test.debug
mkdir -p $APP/.debug $(dirname $SHARED)
# Built in their directory, as a package's programs are: their units
# name prog.c and mix.h, and mix's declaration is the same in both.
for name in prog other; do
	(cd $S && cc -O2 -g -fno-omit-frame-pointer -fno-optimize-sibling-calls -Wall -Wextra \
		-o $TMP/$name.full $name.c) &&
		objcopy --only-keep-debug $TMP/$name.full $APP/.debug/$name.debug ||
		{ fail "build $name and split its debug file"; exit 1; }
done
(cd $APP/.debug && dwz -m $SHARED -M $SHARED prog.debug other.debug) 2>$TMP/dwz.err
check "dwz -m made the shared file" test -s $SHARED
check "the debug file names it in .gnu_debugaltlink" \
	bash -c "readelf -p .gnu_debugaltlink $APP/.debug/prog.debug 2>/dev/null | grep -qF '$SHARED'"
for name in prog other; do
	# The link's CRC is the dwz'ed file's: linked after dwz.
	objcopy --strip-debug --strip-unneeded --add-gnu-debuglink=$APP/.debug/$name.debug \
		$TMP/$name.full $APP/$name
done

src_line() { grep -n "LINE:$1" $S/$2 | cut -d: -f1; }
l_mix=$(src_line mix mix.h) l_cmix=$(src_line call-mix prog.c)
l_churn=$(src_line churn prog.c) l_cchurn=$(src_line call-churn prog.c)
MIX=";step \(prog\.c:$l_cmix\);mix \[inlined\] \(mix\.h:$l_mix\) [0-9]+$"
CHURN=";run \(prog\.c:[0-9]+\);step \(prog\.c:$l_cchurn\);churn \(prog\.c:$l_churn\) [0-9]+$"

# named LABEL FOLDED: prog's frames, named, at their lines.
named() {
	check "$1: mix [inlined] inside step, at the call's line" grep -qE "$MIX" $2
	check "$1: churn called from step, named" grep -qE "$CHURN" $2
	check "$1: main named" grep -qE ";main \(prog\.c:[0-9]+\);run " $2
	check "$1: no unnamed inlined frame" bash -c "! grep -qF '? [inlined]' $2"
}

$LUAPROF record -F 999 -o $TMP/dwz.lp -- $APP/prog 1 2>$TMP/dwz.rec
check "record exits 0" test $? -eq 0
$LUAPROF report --format folded --lines -o $TMP/dwz.folded $TMP/dwz.lp 2>/dev/null
named "embedded" $TMP/dwz.folded

$LUAPROF record -q -F 999 --no-embed -o $TMP/ne.lp -- $APP/prog 1 2>/dev/null
check "record --no-embed exits 0" test $? -eq 0
$LUAPROF report --format folded --lines -o $TMP/ne.folded $TMP/ne.lp 2>/dev/null
named "--no-embed, local files" $TMP/ne.folded

# The shared file gone: lines stay, the names it held go.
mv $SHARED $SHARED.away
$LUAPROF record -q -F 999 -o $TMP/gone.lp -- $APP/prog 1 2>/dev/null
$LUAPROF report --format folded --lines -o $TMP/gone.folded $TMP/gone.lp 2>/dev/null
check "shared file gone: mix's frame at its line, unnamed" \
	grep -qE ";step \(prog\.c:$l_cmix\);\? \[inlined\] \(mix\.h:$l_mix\) [0-9]+$" $TMP/gone.folded
check "shared file gone: main's frame at its line, unnamed" \
	grep -qE ";prog\+0x[0-9a-f]+ \(prog\.c:[0-9]+\);run " $TMP/gone.folded
check "shared file gone: no mix, no main" bash -c "! grep -qE ';(mix|main) ' $TMP/gone.folded"

# --symfs: the program, its debug files and the shared file at its
# absolute path, all under another root.
mkdir -p $TMP/symfs$APP $TMP/symfs$(dirname $SHARED)
cp -a $APP/. $TMP/symfs$APP/
mv $SHARED.away $TMP/symfs$SHARED
rm -rf $APP
$LUAPROF report --format folded --lines --symfs $TMP/symfs -o $TMP/sf.folded $TMP/ne.lp 2>/dev/null
named "--no-embed, --symfs" $TMP/sf.folded

top=$(awk '{ c = $NF; $NF = ""; print c, $0 }' $TMP/dwz.folded | sort -rn | head -1)
echo "  embedded, hottest stack: $top"

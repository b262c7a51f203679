# self_contained.sh - a trace reports the same without the binaries it
# names: programs copied into a directory are recorded from
# there, the directory is deleted, and the report, which then reads the
# symbol tables embedded in the trace, is byte for byte the same, symbols
# included.  With `record --no-embed` a deleted binary prints as
# module+offset with a warning, `--symfs` with a copy of it names its
# frames again, and a binary replaced by another build is refused, loudly.
# The Lua script's source is embedded too: `report --annotate` and
# `--by line` show its lines with samples, the same without the file; a
# Lua file changed after the process started is not embedded, and says so.
# A program built -O2 -g (samples/inline) gets the source lines of the
# addresses samples hit embedded, resolved from its DWARF by record: its
# native frames show file:line with --lines and its inlined function as a
# frame of its own, the same before and after the deletion.  libc's
# lines come from its debug file (libc6-dbg, 8.6 MiB of DWARF), of which
# a dd that spends its time in read and write embeds a few hundred
# bytes, and its libc frames get file:line.
. tests/lib.sh

tests/deps.sh || { fail "test dependencies (tests/deps.sh)"; exit 1; }

APP=$(mktemp -d /tmp/luaprof-app.XXXXXX)
CLEANUP_DIRS=$APP
trap 'cleanup; rm -rf "$CLEANUP_DIRS"' EXIT
cp $SAMPLES/hot $APP/hot
cp /usr/bin/luajit $APP/luajit
cp samples/lua/abc.lua $APP/abc.lua
cp $SAMPLES/inline $APP/inline

(cd $APP && $LUAPROF record -F 999 -o $TMP/hot.lp -- ./hot 2 2>$TMP/hot.err)
check "record -- hot from a scratch directory exits 0" test $? -eq 0
(cd $APP && $LUAPROF record -q -F 999 -o $TMP/lua.lp -- ./luajit -joff abc.lua 2 2>$TMP/lua.err)
check "record -- luajit -joff abc.lua exits 0" test $? -eq 0
(cd $APP && $LUAPROF record -q -F 999 --no-embed -o $TMP/noembed.lp -- ./hot 1 2>/dev/null)
check "record --no-embed exits 0" test $? -eq 0
(cd $APP && $LUAPROF record -F 999 -o $TMP/inl.lp -- ./inline 2 2>$TMP/inl.err)
check "record -- inline (-O2 -g) exits 0" test $? -eq 0
check "record says it embedded source lines" \
	grep -qE "source lines of [1-9][0-9]* objects embedded \([1-9][0-9]* addresses" $TMP/inl.err
(cd $APP && $LUAPROF record -q -F 999 --no-embed -o $TMP/inl-ne.lp -- ./inline 2 2>/dev/null)
check "record --no-embed -- inline exits 0" test $? -eq 0

$LUAPROF report --format folded -o $TMP/hot1.folded $TMP/hot.lp 2>$TMP/hot1.err
$LUAPROF report --format folded -o $TMP/lua1.folded $TMP/lua.lp 2>/dev/null
$LUAPROF report --annotate -o $TMP/lua1.annotate $TMP/lua.lp 2>/dev/null
$LUAPROF report --by line -o $TMP/lua1.lines $TMP/lua.lp 2>/dev/null
$LUAPROF info $TMP/lua.lp >$TMP/luainfo.txt
check "info: abc.lua's source is embedded" \
	grep -qE "^Lua sources: 1 files embedded \([0-9]+ bytes\), 0 of them cut short; not embedded: 0 changed" $TMP/luainfo.txt
echo "  abc.lua: trace $(stat -c %s $TMP/lua.lp) bytes; $(grep '^Lua sources:' $TMP/luainfo.txt)"

# A Lua file rewritten after the process started: compiled (loadfile),
# then touched, then run, so the recorder only ever meets it changed.
cat >$APP/lib.lua <<'LUA'
function spin(n) local x = 0; for i = 1, n do x = (x + i) % 7 end; return x end
LUA
cat >$APP/driver.lua <<'LUA'
local f = assert(loadfile("lib.lua"))
os.execute("touch -d '+2 seconds' lib.lua")
f()
local t = os.clock() + 1
while os.clock() < t do spin(100000) end
LUA
(cd $APP && $LUAPROF record -q -F 999 -o $TMP/changed.lp -- ./luajit -joff driver.lua 2>/dev/null)
$LUAPROF info $TMP/changed.lp >$TMP/chinfo.txt
check "a Lua file changed since its load is not embedded, and counted" \
	grep -qE "^Lua sources: 1 files embedded .*not embedded: 1 changed since loaded" $TMP/chinfo.txt
$LUAPROF report --annotate -o $TMP/changed.annotate $TMP/changed.lp 2>/dev/null
check "annotate: the changed file's function has no source, and says why" \
	grep -qF "(source not available: the file changed since it was loaded)" \
	<(grep -A1 -E "^spin \(lib\.lua:1-1\)" $TMP/changed.annotate)
check "annotate: the unchanged driver.lua is shown" grep -qF "while os.clock() < t do spin(100000) end" $TMP/changed.annotate
inline_reports() { # SUFFIX: the inline trace in each form the test compares
	$LUAPROF report --format folded --lines -o $TMP/inl-lines$1.folded $TMP/inl.lp 2>>$TMP/inl$1.err
	$LUAPROF report --format folded -o $TMP/inl$1.folded $TMP/inl.lp 2>>$TMP/inl$1.err
	$LUAPROF report -n 0 -o $TMP/inl$1.top $TMP/inl.lp 2>>$TMP/inl$1.err
	$LUAPROF report --format callgraph --percent-limit 0 -o $TMP/inl$1.cg $TMP/inl.lp 2>>$TMP/inl$1.err
}
inline_reports 1
$LUAPROF info $TMP/hot.lp >$TMP/info.txt
check "info lists hot's embedded symbols by build-id" \
	grep -qE "build-id [0-9a-f]{40} $APP/hot: file [0-9]+ bytes, [0-9]+ symbols" $TMP/info.txt
check "info lists libc's embedded symbols" grep -qE "build-id [0-9a-f]+ .*libc\.so\.6: " $TMP/info.txt
check "info says how many objects are embedded" \
	grep -qE "^objects: [0-9]+ mapped, symbols of [1-9][0-9]* embedded" $TMP/info.txt
$LUAPROF info $TMP/noembed.lp >$TMP/info2.txt
check "info: --no-embed embeds no symbols" grep -qE "^objects: [0-9]+ mapped, symbols of 0 embedded" $TMP/info2.txt
emb=$(stat -c %s $TMP/hot.lp)
echo "  hot: trace $emb bytes; $(grep '^objects:' $TMP/info.txt)"
$LUAPROF info $TMP/inl.lp >$TMP/inl-info.txt
check "info lists inline's embedded lines, addresses and bytes" \
	grep -A1 -E "build-id [0-9a-f]{40} $APP/inline: " $TMP/inl-info.txt | grep -qE "^    lines: [1-9][0-9]* addresses, [1-9][0-9]* bytes$"
check "info counts the objects with lines" \
	grep -qE "^objects: .*, lines from DWARF of [1-9][0-9]* \([1-9][0-9]* bytes\) for [1-9][0-9]* addresses" $TMP/inl-info.txt
$LUAPROF info $TMP/inl-ne.lp >$TMP/inl-ne-info.txt
check "info: --no-embed embeds no lines" \
	grep -qE "^objects: .*, lines from DWARF of 0 \(0 bytes\) for 0 addresses" $TMP/inl-ne-info.txt
echo "  inline: trace $(stat -c %s $TMP/inl.lp) bytes, $(stat -c %s $TMP/inl-ne.lp) with --no-embed (2 s each); $(grep '^objects:' $TMP/inl-info.txt)"

# libc: the lines of the addresses hit, a few hundred bytes where its
# DWARF is 8.6 MiB, and libc frames with lines (read.c, write.c and the
# like).
$LUAPROF record -F 999 -o $TMP/dd.lp -- dd if=/dev/zero of=/dev/null bs=64k count=400000 \
	2>$TMP/dd.err
check "record -- dd exits 0" test $? -eq 0
$LUAPROF info $TMP/dd.lp >$TMP/dd-info.txt
libc_lines=$(grep -A1 -E "/libc\.so\.6: " $TMP/dd-info.txt | awk '/^    lines: [0-9]+ addresses, [0-9]+ bytes$/ { print $4 }')
check "dd: libc's lines are embedded" test -n "$libc_lines"
check_num "dd: libc's lines embedded, bytes (of 8.6 MB of DWARF)" "${libc_lines:-0}" "<" 20000
check "dd: libc's lines are not cut by a bound" bash -c "! grep -A2 -E '/libc\.so\.6: ' $TMP/dd-info.txt | grep -q 'not embedded'"
$LUAPROF report --format folded --lines -o $TMP/dd.folded $TMP/dd.lp 2>/dev/null
check "dd --lines: a libc frame has file.c:N from the embedded lines" \
	grep -qE "(^|;)(__libc_)?(read|write|__GI___libc_read|__GI___libc_write) \([a-z_]+\.c:[0-9]+\)" $TMP/dd.folded
echo "  dd: trace $(stat -c %s $TMP/dd.lp) bytes, libc lines ${libc_lines:-0} bytes; $(grep -o 'source lines of.*' $TMP/dd.err)"

rm -rf "$APP"
check "the binaries are gone" test ! -e "$APP/hot"

$LUAPROF report --format folded -o $TMP/hot2.folded $TMP/hot.lp 2>$TMP/hot2.err
check "report without the binaries exits 0" test $? -eq 0
check "hot: byte-identical report without the binary" cmp -s $TMP/hot1.folded $TMP/hot2.folded
check "hot: no warning about files" bash -c "! grep -q 'build-id\|not found\|cannot read' $TMP/hot2.err"
for f in main run work_a work_b work_c spin __libc_start_main; do
	check "hot: $f named from the embedded symbols" grep -qE "(^|;)$f(;| )" $TMP/hot2.folded
done
$LUAPROF report --format folded -o $TMP/lua2.folded $TMP/lua.lp 2>/dev/null

# inline: source lines and inlined frames from the embedded DWARF.
inline_reports 2
for f in inl-lines.folded inl.folded inl.top inl.cg; do
	check "inline: $f byte-identical without the binary" cmp -s $TMP/${f%%.*}1.${f#*.} $TMP/${f%%.*}2.${f#*.}
done
check "inline: no warning about files" bash -c "! grep -q 'build-id\|not found\|cannot read' $TMP/inl2.err"
inline_reports 3
check "inline: a second report is byte-identical" cmp -s $TMP/inl-lines2.folded $TMP/inl-lines3.folded
src_line() { grep -n "LINE:$1" samples/inline.c | cut -d: -f1; }
l_churn=$(src_line churn) l_mix=$(src_line 'mix\b') l_cmix=$(src_line call-mix) l_cchurn=$(src_line call-churn)
check "inline --lines: churn at its hot line, called from step's call line" \
	grep -qE ";run \(inline\.c:[0-9]+\);step \(inline\.c:$l_cchurn\);churn \(inline\.c:$l_churn\) [0-9]+$" $TMP/inl-lines2.folded
check "inline --lines: mix is an inlined frame at its line, inside step at the call" \
	grep -qE ";step \(inline\.c:$l_cmix\);mix \[inlined\] \(inline\.c:$l_mix\) [0-9]+$" $TMP/inl-lines2.folded
check "inline --lines: main and run show file:line" grep -qE ";main \(inline\.c:[0-9]+\);run \(inline\.c:[0-9]+\);" $TMP/inl-lines2.folded
check_num "inline: share of samples in mix [inlined], leaf of step" \
	"$(share $(awk '/;main;run;step;mix \[inlined\] [0-9]+$/ { n += $NF } END { print n + 0 }' $TMP/inl2.folded) \
		$(folded_total $TMP/inl2.folded))" ">=" 0.2
check "inline: without --lines, native frames have no file:line" bash -c "! grep -qE 'inline\.c:' $TMP/inl2.folded"
check "inline: churn is not marked inlined" grep -qE ";main;run;step;churn [0-9]+$" $TMP/inl2.folded
check "inline: top lists mix [inlined] by self" grep -qE "^ +[0-9]+ +[0-9.]+%  mix \[inlined\]$" $TMP/inl2.top
check "inline: callgraph has mix [inlined] under step" \
	awk '/step$/ { s = 1; next } s && /mix \[inlined\]$/ { found = 1 } END { exit !found }' $TMP/inl2.cg
check "luajit: byte-identical report without the binary" cmp -s $TMP/lua1.folded $TMP/lua2.folded
check "luajit: Lua frames are there" grep -qF "work (" $TMP/lua2.folded
check "luajit: a native frame of luajit is named from its symbols" \
	grep -qE "(^|;)lua_[a-z]+(;| )" $TMP/lua2.folded

# Lua source from the trace alone: the same bytes without abc.lua, and
# work's loop body, the hottest line, with its samples.
$LUAPROF report --annotate -o $TMP/lua2.annotate $TMP/lua.lp 2>/dev/null
$LUAPROF report --by line -o $TMP/lua2.lines $TMP/lua.lp 2>/dev/null
check "annotate: byte-identical without abc.lua" cmp -s $TMP/lua1.annotate $TMP/lua2.annotate
check "by line: byte-identical without abc.lua" cmp -s $TMP/lua1.lines $TMP/lua2.lines
hot=$(grep -n 'x = (x + i \* 7) % 1000003' samples/lua/abc.lua | cut -d: -f1)
hot_src=$(sed -n "${hot}p" samples/lua/abc.lua)
check "by line: the hottest line is work's loop body, with its source" \
	grep -qE "^ +[0-9]+ +[0-9.]+% +[0-9]+ +[0-9.]+%  abc\.lua:$hot  work: x = \(x \+ i \* 7\) % 1000003$" \
	<(grep -E '^ +[0-9]' $TMP/lua2.lines | head -1)
check "annotate: work's header, then the file's real lines" \
	grep -qE "^work \(abc\.lua:[0-9]+-[0-9]+\): self [0-9]+ \([0-9.]+%\), total" $TMP/lua2.annotate
check_num "annotate: self samples on work's loop body" \
	"$(grep -F "$hot_src" $TMP/lua2.annotate | awk -v l=$hot '$5 == l { print $1; exit }')" ">=" 100
# The driver loop's lines (the while, and the calls of a, b and c) hold
# nearly all samples as main's total.  Their self columns are not looked
# at: main's own time (its bytecode, os.clock charged to it) is a few
# self samples on one of them in most runs, on both in one in three.
loop_share=$(awk -v l1="$(grep -n '^while os.clock() < deadline do' samples/lua/abc.lua | cut -d: -f1)" \
	-v l2="$(grep -n 'sum = sum + a() + b() + c()' samples/lua/abc.lua | cut -d: -f1)" '
	/^main \(abc\.lua:/ { inmain = 1; all = $0; sub(/.* of /, "", all); sub(/ .*/, "", all); next }
	/^[^ ]/ { inmain = 0 }
	inmain && ($5 == l1 || $5 == l2) && $3 != "." { t += $3 }
	END { printf "%.4f\n", all ? t / all : 0 }' $TMP/lua2.annotate)
check_num "annotate: the driver loop's lines have main's total samples" "$loop_share" ">=" 0.9

# --no-embed: the deleted binary prints as module+offset, with a warning.
$LUAPROF report --format folded -o $TMP/ne.folded $TMP/noembed.lp 2>$TMP/ne.err
check "--no-embed, binary deleted: frames as module+offset" grep -qE "(^|;)hot\+0x[0-9a-f]+" $TMP/ne.folded
check "--no-embed, binary deleted: no symbol of hot" bash -c "! grep -qE '(^|;)work_c(;| )' $TMP/ne.folded"
check "--no-embed, binary deleted: a warning names it" grep -q "$APP/hot: not embedded in the trace and not found" $TMP/ne.err
check "--no-embed, binary deleted: warned once" test "$(grep -c "$APP/hot" $TMP/ne.err)" -eq 1

# --symfs with a copy of the very binary: symbols again.
mkdir -p $TMP/symfs$APP
cp $SAMPLES/hot $TMP/symfs$APP/hot
$LUAPROF report --format folded --symfs $TMP/symfs -o $TMP/sf.folded $TMP/noembed.lp 2>$TMP/sf.err
check "--symfs: symbols of hot again" grep -qE "(^|;)main;run;work_c;spin " $TMP/sf.folded
check "--symfs: no warning about hot" bash -c "! grep -q '$APP/hot' $TMP/sf.err"
# --no-embed inline: no lines while the binary is gone; its DWARF from
# the --symfs copy, or from a separate debug file under --symfs found by
# build-id, once it is there.
rm -f $TMP/ine.folded
$LUAPROF report --format folded --lines -o $TMP/ine.folded $TMP/inl-ne.lp 2>/dev/null
check_num "--no-embed inline, binary deleted: the report has the samples" \
	"$(folded_total $TMP/ine.folded 2>/dev/null)" ">" 0
check "--no-embed inline, binary deleted: no inlined frame, no lines" \
	bash -c "! grep -qE 'mix \[inlined|inline\.c:' $TMP/ine.folded"
cp $SAMPLES/inline $TMP/symfs$APP/inline
$LUAPROF report --format folded --lines --symfs $TMP/symfs -o $TMP/isf.folded $TMP/inl-ne.lp 2>/dev/null
check "--symfs inline: lines and the inlined frame from the copy's DWARF" \
	grep -qE ";step \(inline\.c:$l_cmix\);mix \[inlined\] \(inline\.c:$l_mix\) " $TMP/isf.folded
bid=$(LC_ALL=C readelf -n $SAMPLES/inline | awk '/Build ID/ { print $3 }')
if [ -n "$bid" ] && command -v objcopy >/dev/null; then
	mkdir -p $TMP/symfs/usr/lib/debug/.build-id/${bid:0:2}
	objcopy --only-keep-debug $SAMPLES/inline $TMP/symfs/usr/lib/debug/.build-id/${bid:0:2}/${bid:2}.debug
	objcopy --strip-debug $SAMPLES/inline $TMP/symfs$APP/inline
	$LUAPROF report --format folded --lines --symfs $TMP/symfs -o $TMP/idbg.folded $TMP/inl-ne.lp 2>/dev/null
	check "--symfs inline, stripped copy: lines from the debug file by build-id" \
		grep -qE ";step \(inline\.c:$l_cmix\);mix \[inlined\] \(inline\.c:$l_mix\) " $TMP/idbg.folded
fi

# Another build at the recorded path: refused, loudly.
mkdir -p $APP
CLEANUP_DIRS="$APP"
cc -O1 -g -fno-omit-frame-pointer -fno-inline -DOTHER_BUILD=1 -o $APP/hot samples/hot.c 2>/dev/null ||
	cp $SAMPLES/tree $APP/hot
$LUAPROF report --format folded -o $TMP/ob.folded $TMP/noembed.lp 2>$TMP/ob.err
check "another build: the build-id warning" \
	grep -q "luaprof report: $APP/hot: build-id differs from the recorded one; its frames print as module+offset" $TMP/ob.err
check "another build: frames as module+offset" grep -qE "(^|;)hot\+0x[0-9a-f]+" $TMP/ob.folded
check "another build: its symbols are not used" bash -c "! grep -qE '(^|;)work_c(;| )' $TMP/ob.folded"
# The embedded trace ignores the impostor: still identical.
$LUAPROF report --format folded -o $TMP/hot3.folded $TMP/hot.lp 2>/dev/null
check "embedded symbols win over another build at the path" cmp -s $TMP/hot1.folded $TMP/hot3.folded

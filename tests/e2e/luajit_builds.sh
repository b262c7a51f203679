# luajit_builds.sh - every LuaJIT build of tests/luajit-builds.sh read as
# users run them: stripped, with no DWARF and no offsets file.
#
# 1. What luaprof reads from each stripped build's code is, field by field
#    and builtin by builtin, what the same build's DWARF says (luaprof
#    check --luajit on the stripped file and on its unstripped twin).
# 2. abc.lua (a, b and c burn 1:2:3) on each executable, interpreted and
#    compiled: the ratios within 5% of 1:2:3 (or within 4 standard errors
#    where a run's samples cannot tell 5% apart; the whole matrix pooled
#    within 5%), and 99% of LuaJIT's samples with their Lua frames.
# 3. inlined.lua's compiled code placed in the functions its traces
#    inlined as with DWARF, on the builds whose snapshots say where their
#    machine code stands (LuaJIT since 2021): f's, g's and h's self shares
#    from the stripped build within 0.05 of those from its DWARF twin.
# 4. Debian's own binary packages (bullseye's here; trixie's, sid's and
#    experimental's, which need a newer glibc, in a trixie root, as a
#    container runs them): the same abc.lua checks.
# The builds and the root are made once and kept in build/.
. tests/lib.sh

tests/deps.sh || { fail "test dependencies (tests/deps.sh)"; exit 1; }
tests/luajit-builds.sh || { fail "LuaJIT builds (tests/luajit-builds.sh)"; exit 1; }
tests/trixie-root.sh || { fail "a Debian trixie root (tests/trixie-root.sh)"; exit 1; }

LIST=$PWD/build/luajit-builds/builds.txt
ROOT=$PWD/build/trixie-root/root
S=samples/lua
RATE=1999

# "field value" of every field luaprof check printed, and its builtins.
layout_of() { awk '$1 != "field" && NF >= 3 && $2 ~ /^[0-9-]+$/ { print $1, $2 } /^builtins:/' "$1"; }

# ---- 1. the code's offsets are DWARF's ---------------------------------
nstatic=0
while read -r name exe debug refs rest; do
	out=$TMP/$name.check
	$LUAPROF check --luajit "$exe" >$out 2>&1
	check "$name ($rest): luaprof check --luajit walks the stripped build" test $? -eq 0
	check "$name: its layout is complete" bash -c "! awk '\$2 == \"-\" && \$1 !~ /^(tr_|sn_|j_|g2j)/' $out | grep -q ."
	[ "$debug" = - ] && continue
	$LUAPROF check --luajit "$debug" >$out.dwarf 2>&1
	check "$name: DWARF agrees with the code on every field" \
		bash -c "[ \$(grep -c ' same\$' $out.dwarf) -ge 55 ] && ! grep -q DIFFERS $out.dwarf"
	check "$name: the stripped build's offsets and builtins are its DWARF twin's" \
		cmp -s <(layout_of $out) <(layout_of $out.dwarf)
	nstatic=$((nstatic + 1))
done <"$LIST"
check_num "builds held to their DWARF" "$nstatic" ">=" 25

# ---- 2. abc.lua on each executable --------------------------------------
# ratio_ok NAME X WANT N: X (a measured ratio, from N samples of the
# smaller side) within 5% of WANT, or within 4 standard errors of it.
ratio_ok() {
	awk -v x="$2" -v w="$3" -v n="$4" 'BEGIN {
		se = w * sqrt(1 / n + 1 / (n * w)); tol = 0.05 * w;
		if (4 * se > tol) tol = 4 * se;
		exit !(x >= w - tol && x <= w + tol) }'
}

# abc LABEL OUT COMMAND...: records abc.lua, checks its frames and ratios.
# Pools a, b and c in POOL_A, POOL_B, POOL_C.
POOL_A=0 POOL_B=0 POOL_C=0
abc() {
	local label=$1 out=$2 total lua a b c rb rc chunk
	shift 2
	chunk=${ABC:-$S/abc.lua}
	$LUAPROF record -F $RATE -o $out -- "$@" 2>$out.err
	check "$label: record exits 0" test $? -eq 0
	$LUAPROF report --format folded -o $out.folded $out 2>/dev/null
	# The share is of LuaJIT's own samples: a container's setup (unshare,
	# mount, a shell) burns 20 to 60 ms of CPU before it, more under load.
	$LUAPROF report --format folded --comm -o $out.comm $out 2>/dev/null
	total=$(awk '/^luajit/ { n += $NF } END { print n + 0 }' $out.comm)
	lua=$(awk -v f="($chunk:" '/^luajit/ && index($0, f) { n += $NF } END { print n + 0 }' $out.comm)
	check_num "$label: LuaJIT's samples with Lua frames" "$(share $lua $total)" ">=" 0.99 ||
		grep -E "LuaJIT|Lua:" $out.err | cut -c1-300 | sed 's/^/    /'
	a=$(folded_incl $out.folded "a ($chunk:$(grep -n '^function a()' $S/abc.lua | cut -d: -f1))")
	b=$(folded_incl $out.folded "b ($chunk:$(grep -n '^function b()' $S/abc.lua | cut -d: -f1))")
	c=$(folded_incl $out.folded "c ($chunk:$(grep -n '^function c()' $S/abc.lua | cut -d: -f1))")
	rb=$(awk -v a=$a -v b=$b 'BEGIN { printf "%.3f", a ? b / a : 0 }')
	rc=$(awk -v a=$a -v c=$c 'BEGIN { printf "%.3f", a ? c / a : 0 }')
	echo "# $label: a:b:c = 1:$rb:$rc ($a, $b, $c samples)"
	check "$label: b/a = $rb, 2 within 5% (or 4 s.e.)" ratio_ok "$label" "$rb" 2 "${a:-0}"
	check "$label: c/a = $rc, 3 within 5% (or 4 s.e.)" ratio_ok "$label" "$rc" 3 "${a:-0}"
	POOL_A=$((POOL_A + a)) POOL_B=$((POOL_B + b)) POOL_C=$((POOL_C + c))
}

nexe=0
while read -r name exe debug refs rest; do
	case $name in *-lib) continue ;; deb-trixie|deb-sid|deb-experimental) continue ;; esac
	abc "$name interpreted" $TMP/$name-i.lp "$exe" -joff $S/abc.lua 3
	abc "$name JIT on" $TMP/$name-j.lp "$exe" $S/abc.lua 3
	nexe=$((nexe + 1))
done <"$LIST"
check_num "executables profiled" "$nexe" ">=" 27

# ---- 4. Debian's packages that need trixie's glibc, in a trixie root ---
# Run as a container runs them (tests/lib.sh's container): the root's files
# only, named as it names them: /usr/bin/luajit there is trixie's, here
# bookworm's luajit2, another build at the same path.
cp $S/abc.lua $ROOT/tmp/abc.lua
for exe in /usr/bin/luajit /opt/luajit-sid /opt/luajit-experimental; do
	label="Debian $(basename $exe | sed 's/luajit-//; s/^luajit$/trixie/')"
	for mode in -joff ""; do
		ABC=/tmp/abc.lua abc "$label ${mode:-JIT on}" $TMP/root$(basename $exe)$mode.lp \
			bash -c "container $ROOT $exe $mode /tmp/abc.lua 3"
	done
	check "$label: record read the build's layout from its code, by its path in the root" \
		grep -q "LuaJIT in $exe; offsets derived" $TMP/root$(basename $exe).lp.err
done

# A process in the root is read through its own files: the layout of the
# LuaJIT it maps is the root's trixie build's, not that of the host's
# /usr/bin/luajit (bookworm's luajit2), which has the same path.
container $ROOT /usr/bin/luajit /tmp/abc.lua 30 &
CT=$!
CLEANUP_PIDS+=($CT)
wait_for container_pid $CT >/dev/null
inner=$(container_pid $CT)
check "the root's luajit runs" test -n "$inner"
$LUAPROF check --luajit "$inner" >$TMP/inner.check 2>&1
check "luaprof check --luajit PID of a process in the root exits 0" test $? -eq 0
$LUAPROF check --luajit $ROOT/usr/bin/luajit >$TMP/rootfile.check 2>&1
$LUAPROF check --luajit /usr/bin/luajit >$TMP/hostfile.check 2>&1
check "the process's layout is its root's luajit's" \
	cmp -s <(layout_of $TMP/inner.check) <(layout_of $TMP/rootfile.check)
layout_of $TMP/inner.check >$TMP/inner.layout
layout_of $TMP/hostfile.check >$TMP/hostfile.layout
check "which is not the host's file of the same path" \
	bash -c "grep -q g2disp $TMP/hostfile.layout && ! cmp -s $TMP/inner.layout $TMP/hostfile.layout"
kill $inner 2>/dev/null
wait $CT 2>/dev/null

# Debian's packages are amalgamated builds, whose lazily registered
# builtins (table.new, OpenResty's table.isempty, jit.util's) no library
# table names: they take the names of the known build that numbers the
# rest alike, and no other function passes for a helper (_aux).
for f in /usr/bin/luajit /usr/lib/x86_64-linux-gnu/libluajit-5.1.so.2 $ROOT/usr/bin/luajit; do
	[ -e "$f" ] || continue
	$LUAPROF check -v --luajit "$f" >$TMP/ff.check 2>&1
	check_num "$f: builtins without a name" \
		"$(awk '$1 ~ /^[0-9]+$/ && NF == 1' $TMP/ff.check | wc -l)" "==" 0
	check "$f: the helpers are ipairs_aux, coroutine.wrap_aux, string.gmatch_aux" \
		test "$(awk '$1 ~ /^[0-9]+$/ && $2 ~ /_aux$/ { print $2 }' $TMP/ff.check | sort | xargs)" \
		= "coroutine.wrap_aux ipairs_aux string.gmatch_aux"
done

awk -v a=$POOL_A -v b=$POOL_B -v c=$POOL_C 'BEGIN {
	printf "# pooled: a:b:c = 1:%.3f:%.3f (%d, %d, %d samples)\n", b / a, c / a, a, b, c }'
check "pooled over the matrix: b/a within 5% of 2" \
	awk -v a=$POOL_A -v b=$POOL_B 'BEGIN { exit !(b / a >= 1.9 && b / a <= 2.1) }'
check "pooled over the matrix: c/a within 5% of 3" \
	awk -v a=$POOL_A -v c=$POOL_C 'BEGIN { exit !(c / a >= 2.85 && c / a <= 3.15) }'

# ---- 3. inlined frames placed as with DWARF ------------------------------
# self_shares FOLDED: f's, g's and h's self shares among inlined.lua's.
self_shares() {
	lua_self_shares "$1" $S/inlined.lua |
		awk '{ s[$1] = $2 } END { printf "%.4f %.4f %.4f\n", s["f"], s["g"], s["h"] }'
}
ninl=0
while read -r name exe debug refs rest; do
	case $name in *-gcc) ;; *) continue ;; esac
	[ "$debug" = - ] && continue
	grep -q '^sn_size .* declared' $TMP/$name.check || continue
	for v in stripped dwarf; do
		bin=$exe
		[ $v = dwarf ] && bin=$debug
		$LUAPROF record -F $RATE -o $TMP/$name-inl-$v.lp -- $bin $S/inlined.lua 3 2>$TMP/$name-inl-$v.err
		$LUAPROF report --format folded -o $TMP/$name-inl-$v.folded $TMP/$name-inl-$v.lp 2>/dev/null
	done
	check "$name: inlined.lua recorded from the DWARF twin with DWARF's offsets" \
		grep -q "offsets from DWARF" $TMP/$name-inl-dwarf.err
	read -r fs gs hs < <(self_shares $TMP/$name-inl-stripped.folded)
	read -r fd gd hd < <(self_shares $TMP/$name-inl-dwarf.folded)
	echo "# $name: inlined.lua self shares f g h: stripped $fs $gs $hs, DWARF $fd $gd $hd"
	for pair in "f $fs $fd" "g $gs $gd" "h $hs $hd"; do
		read -r fn x y <<<"$pair"
		check_num "$name: $fn's self share in compiled code, stripped against DWARF" \
			"$(awk -v x=$x -v y=$y 'BEGIN { d = x - y; printf "%.4f", d < 0 ? -d : d }')" "<=" 0.05
	done
	check_num "$name: g is placed (its self share)" "$gs" ">=" 0.05
	ninl=$((ninl + 1))
done <"$LIST"
check_num "builds whose inlined frames were compared" "$ninl" ">=" 8

# deb.sh - the Debian package as a user installs it: `make deb`, then
# `apt-get install ./luaprof_*.deb` in a fresh bookworm root
# (tests/bookworm-root.sh, seen through a copy-on-write overlay so that it
# stays fresh), which pulls its Depends from the mirror; there, `luaprof
# --help`, `man -l` on each page, `luaprof check`, and a short recording
# of a LuaJIT program with its report.
. tests/lib.sh

make --no-print-directory deb >$TMP/make.log 2>&1
check "make deb exits 0" test $? -eq 0
deb=$(ls build/luaprof_*_$(dpkg --print-architecture).deb 2>/dev/null | head -1)
check "the package is built" test -f "$deb"
check "its Depends name libbpf and libdw (dpkg-shlibdeps)" \
	sh -c "dpkg-deb -f $deb Depends | grep -q libbpf1 && dpkg-deb -f $deb Depends | grep -q libdw1"
tests/bookworm-root.sh
check "a fresh bookworm root (debootstrap)" test $? -eq 0
mkdir -p $TMP/up $TMP/work $TMP/merged
cp "$deb" $TMP/luaprof.deb
cat >$TMP/inside.sh <<'INSIDE'
set -u
out=/tmp/out
mkdir -p $out
export DEBIAN_FRONTEND=noninteractive
{ apt-get -o DPkg::Lock::Timeout=600 update -qq &&
  apt-get -o DPkg::Lock::Timeout=600 install -y -qq /tmp/luaprof.deb; } >$out/apt.log 2>&1
echo $? >$out/apt.rc
luaprof --help >$out/help.txt 2>&1; echo $? >$out/help.rc
for page in luaprof luaprof-record luaprof-report luaprof-diff luaprof-info luaprof-check; do
	MANWIDTH=120 man -l /usr/share/man/man1/$page.1 >$out/$page.man 2>/dev/null
done
luaprof check >$out/check.txt 2>&1; echo $? >$out/check.rc
cat >/tmp/spin.lua <<'LUA'
local function spin(t) local x = 0 while os.clock() < t do x = x + 1 end return x end
spin(os.clock() + 4)
LUA
luaprof record -q -o /tmp/spin.lp -- luajit /tmp/spin.lua >$out/rec.txt 2>&1; echo $? >$out/rec.rc
luaprof report --format folded /tmp/spin.lp >$out/spin.folded 2>$out/rep.err; echo $? >$out/rep.rc
INSIDE
unshare --mount --propagation private sh -c '
	t=$1; r=$2
	mount -t overlay overlay -o lowerdir=$r,upperdir=$t/up,workdir=$t/work $t/merged &&
	mount --bind /proc $t/merged/proc && mount --rbind /sys $t/merged/sys &&
	mount --bind /dev $t/merged/dev &&
	cp /etc/resolv.conf $t/merged/etc/resolv.conf &&
	cp $t/luaprof.deb $t/inside.sh $t/merged/tmp/ &&
	chroot $t/merged /bin/bash /tmp/inside.sh' deb $TMP $PWD/build/bookworm-root/root
out=$TMP/up/tmp/out
check "apt-get install ./luaprof_*.deb in the root exits 0" test "$(cat $out/apt.rc 2>/dev/null)" = 0 ||
	tail -n 20 $out/apt.log 2>/dev/null | sed 's/^/  | /'
check "luaprof --help runs there" test "$(cat $out/help.rc 2>/dev/null)" = 0
for page in luaprof luaprof-record luaprof-report luaprof-diff luaprof-info luaprof-check; do
	check "man -l $page.1 renders there" grep -q "^NAME" $out/$page.man
done
check "luaprof check there: luaprof will run here" grep -q "^luaprof will run here" $out/check.txt
check "luaprof record -- luajit there exits 0" test "$(cat $out/rec.rc 2>/dev/null)" = 0
check "... and its report names the Lua function" grep -qF ";spin (/tmp/spin.lua:" $out/spin.folded
check_num "... in most samples" "$(awk '/;spin \(\/tmp\/spin.lua:/ { s += $NF } { n += $NF }
	END { printf "%.3f", n ? s / n : 0 }' $out/spin.folded)" ">=" 0.9

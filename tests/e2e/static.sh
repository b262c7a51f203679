# static.sh - the one binary for a production host (`make static`): it
# records, reports and checks in a root that holds nothing but itself
# (and the kernel's /proc, /sys and /dev), as on a host without libbpf,
# libdw, libelf, zlib, lz4 or capstone; and its report of the trace is
# the dynamic build's, byte for byte.
. tests/lib.sh

make --no-print-directory static >$TMP/make.log 2>&1
check "make static exits 0" test $? -eq 0
bin=$PWD/build/luaprof-static
check "build/luaprof-static is statically linked" \
	sh -c "! ldd $bin >/dev/null 2>&1"
root=$TMP/bare
mkdir -p $root/proc $root/sys $root/dev $root/tmp
cp $bin $root/luaprof
check "the bare root holds no library" sh -c "! find $root -name '*.so*' | grep -q ."
# bare COMMAND...: COMMAND chrooted in the bare root, with the machine's
# /proc (targets are the machine's processes), /sys (BTF, BPF) and /dev
# mounted in a mount namespace of its own.
bare() {
	unshare --mount --propagation private sh -c 'r=$1; shift
		mount --bind /proc $r/proc && mount --rbind /sys $r/sys &&
		mount --bind /dev $r/dev && exec chroot $r "$@"' bare $root "$@"
}
bare /luaprof check >$TMP/check.txt 2>&1
check "luaprof check in the bare root exits 0" test $? -eq 0
check "... and says luaprof will run here" grep -q "^luaprof will run here" $TMP/check.txt

luajit samples/lua/abc.lua 20 >/dev/null 2>&1 &
target=$!
CLEANUP_PIDS+=($target)
bare /luaprof record -d 3 -p $target -o /tmp/s.lp >$TMP/rec.out 2>$TMP/rec.err
check "record -p in the bare root exits 0" test $? -eq 0
kill $target 2>/dev/null
bare /luaprof report --format folded -o /tmp/s.folded /tmp/s.lp 2>$TMP/rep.err
check "report in the bare root exits 0" test $? -eq 0
folded=$root/tmp/s.folded
check_num "samples recorded (a share of a CPU, however busy)" "$(folded_total $folded)" ">=" 30
check "the Lua functions are named (abc.lua's c)" grep -qF ";c (samples/lua/abc.lua:" $folded
$LUAPROF report --format folded -o $TMP/dyn.folded $root/tmp/s.lp 2>/dev/null
check "the dynamic build's report of the same trace is the same" cmp -s $folded $TMP/dyn.folded
echo "# static binary: $(stat -c %s $bin) bytes ($(strip -o $TMP/stripped $bin && stat -c %s $TMP/stripped) stripped)"

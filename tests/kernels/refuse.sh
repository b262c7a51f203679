# tests/kernels/refuse.sh - runs in a guest whose kernel luaprof does not
# support (tests/kernels.sh): luaprof must say so and say why, naming what
# the kernel lacks and the Linux version that brings it, from `check` and
# from `record`, rather than fail with a bare errno.
. tests/lib.sh

echo "  kernel $(uname -r), $(nproc) CPUs"
$LUAPROF check >$TMP/check.txt 2>&1
rc=$?
sed 's/^/  | /' $TMP/check.txt
check "luaprof check exits 1" test $rc -eq 1
check "luaprof check: will not run, naming what is missing and the version that brings it" \
	grep -qE "^luaprof will not run here: this kernel has no .+ \(Linux [0-9.]+\)$" $TMP/check.txt

$LUAPROF record -o $TMP/refused.lp -- true >/dev/null 2>$TMP/record.err
rc=$?
sed 's/^/  | /' $TMP/record.err
check "record exits 1" test $rc -eq 1
check "record names what the kernel lacks and the version that brings it" \
	grep -qE "^luaprof record: this kernel \(Linux [^)]+\) has no .+ \(Linux [0-9.]+\).*; Linux [0-9.]+ brings (it|them all)$" $TMP/record.err
check "record leaves no trace behind" test ! -e $TMP/refused.lp

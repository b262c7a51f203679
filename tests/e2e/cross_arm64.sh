# cross_arm64.sh - `make ARCH=arm64` (mk/arm64.mk) on this x86_64 host:
# build/arm64/luaprof-static is an AArch64 executable that needs no
# library, and it carries BPF built for arm64's registers: the object's
# perf context is arm64's user_pt_regs, and its CO-RE relocations, matched
# against the arm64 kernel's BTF, name arm64's pt_regs (regs[31], pc),
# which x86_64's has not.  Run only where the cross compiler is installed
# (`make ARCH=arm64 deps`): it fetches the arm64 sysroot and kernel BTF
# into build/arm64/ the first time.
. tests/lib.sh

if ! command -v aarch64-linux-gnu-gcc >/dev/null; then
	echo "# $TEST: no aarch64-linux-gnu-gcc (make ARCH=arm64 deps installs it): not run"
	exit 0
fi
make --no-print-directory ARCH=arm64 -j"$(nproc)" >$TMP/make.log 2>&1
rc=$?
check "make ARCH=arm64 exits 0" test $rc -eq 0
[ $rc -eq 0 ] || tail -n 20 $TMP/make.log | sed 's/^/  | /'
bin=build/arm64/luaprof-static
obj=build/arm64/bpf/sampler.bpf.o

file -b $bin >$TMP/file.txt 2>&1
check "file says luaprof-static is an AArch64 executable" grep -q 'ELF 64-bit LSB executable, ARM aarch64' $TMP/file.txt
check "... statically linked" grep -q 'statically linked' $TMP/file.txt
readelf -h -l -d $bin >$TMP/readelf.txt 2>&1
check "readelf: machine AArch64" grep -qE 'Machine: +AArch64' $TMP/readelf.txt
check "readelf: no interpreter, no needed library" \
	sh -c "grep -q 'Machine:' $TMP/readelf.txt && ! grep -qE 'INTERP|NEEDED' $TMP/readelf.txt"
check "build/arm64/luaprof links arm64's libbpf" \
	sh -c "readelf -h -d build/arm64/luaprof | grep -qE 'Machine: +AArch64' &&
	       readelf -d build/arm64/luaprof | grep -q 'NEEDED.*libbpf.so'"

check "the BPF object's ELF machine is BPF" sh -c "readelf -h $obj | grep -qE 'Machine: +Linux BPF'"
bpftool btf dump file $obj >$TMP/btf.txt 2>&1
check "its perf context's registers are arm64's (bpf_user_pt_regs_t is user_pt_regs)" \
	sh -c "id=\$(awk '/^\\[[0-9]+\\] STRUCT .user_pt_regs. /{ gsub(/[][]/, \"\", \$1); print \$1 }' $TMP/btf.txt) &&
	       [ -n \"\$id\" ] && grep -q \"TYPEDEF 'bpf_user_pt_regs_t' type_id=\$id\$\" $TMP/btf.txt"
# What the relocations select from the arm64 kernel's types: only the
# fields the programs read, so the register array is there only if they
# read arm64's registers.
bpftool gen min_core_btf build/arm64/kernel/vmlinux.btf $TMP/min.btf $obj >$TMP/min.log 2>&1 &&
	bpftool btf dump file $TMP/min.btf format c >$TMP/min.h 2>>$TMP/min.log
check "its CO-RE relocations read arm64's pt_regs (regs[31], pc)" \
	sh -c "sed -n '/^struct pt_regs {/,/^};/p' $TMP/min.h | grep -q 'regs\\[31\\];' &&
	       sed -n '/^struct pt_regs {/,/^};/p' $TMP/min.h | grep -qw 'pc'"
check "luaprof-static carries that BPF object, byte for byte" python3 -c '
import sys
sys.exit(open(sys.argv[2], "rb").read().find(open(sys.argv[1], "rb").read()) < 0)' $obj $bin
aarch64-linux-gnu-strip -o $TMP/stripped $bin 2>/dev/null
echo "# arm64 static binary: $(stat -c %s $bin) bytes ($(stat -c %s $TMP/stripped 2>/dev/null) stripped)"

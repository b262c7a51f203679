# errors.sh - bad input gets one clear line and a non-zero exit, and what
# was already recorded is never lost.
. tests/lib.sh

# expect_fail NAME STATUS REGEX COMMAND... : exits STATUS, stderr matches.
expect_fail() {
	local name=$1 want=$2 re=$3 rc
	shift 3
	"$@" >$TMP/out 2>$TMP/err
	rc=$?
	if [ $rc -ne "$want" ]; then
		fail "$name" "exit $rc, want $want; stderr: $(head -c 300 $TMP/err)"
	elif ! grep -qiE "$re" $TMP/err; then
		fail "$name" "stderr does not match /$re/: $(head -c 300 $TMP/err)"
	else
		ok "$name"
	fi
}

expect_fail "no arguments is misuse" 2 "usage" $LUAPROF
expect_fail "unknown command is misuse" 2 "unknown command" $LUAPROF frobnicate
expect_fail "record with no target is misuse" 2 "nothing to record" $LUAPROF record
expect_fail "record -p and -- together is misuse" 2 "not both" $LUAPROF record -p 1 -- true
expect_fail "bad frequency is misuse" 2 "bad frequency" $LUAPROF record -F 0 -p 1
expect_fail "bad codec is misuse" 2 "unknown codec" $LUAPROF record --compress xz -p 1
check "--help exits 0 and is complete" bash -c "$LUAPROF record --help | grep -q -- --no-children"

expect_fail "a pid that does not exist" 1 "no process with pid 999999" \
	$LUAPROF record -p 999999 -o $TMP/x.lp
expect_fail "a command that cannot be executed" 1 "cannot execute /nonexistent/cmd: No such file" \
	$LUAPROF record -o $TMP/noexec.lp -- /nonexistent/cmd
check "no trace is left when nothing was recorded" test ! -e $TMP/noexec.lp
expect_fail "an unwritable output path" 1 "cannot create $TMP/no/such/dir/x.lp" \
	$LUAPROF record -o $TMP/no/such/dir/x.lp -- true
chmod 755 $TMP
mkdir -m 777 $TMP/nobody
expect_fail "not root" 1 "needs root" \
	setpriv --reuid=65534 --regid=65534 --clear-groups \
	$LUAPROF record -o $TMP/nobody/x.lp -- true

# A disk that fills: recording stops with the reason, exits 1, and the
# chunks written before the disk filled still report.  The disk fills at
# the first write of the symbol tables, 0.5 s after record starts: how
# many samples come before depends on how soon the target got the CPU
# (a count of them per wall second, > 100, failed on a busy machine), so
# the bar is that every sample record says it wrote is there.
mkdir $TMP/small
if mount -t tmpfs -o size=16k tmpfs $TMP/small; then
	expect_fail "a disk that fills stops the recording" 1 "No space left on device" \
		$LUAPROF record -F 999 -d 30 -o $TMP/small/t.lp -- $SAMPLES/hot 30
	written=$(sed -n 's/.*the trace keeps what was written before: \([0-9]*\) samples.*/\1/p' $TMP/err)
	$LUAPROF report --format folded -o $TMP/full.folded $TMP/small/t.lp 2>$TMP/full.err
	check "the filled trace still reports" test $? -eq 0
	check_num "record says it wrote samples before the disk filled" "${written:-0}" ">" 0
	check_num "the samples written before the disk filled are kept" \
		"$(folded_total $TMP/full.folded)" "==" "${written:-0}"
	umount $TMP/small
else
	fail "a disk that fills" "cannot mount a tmpfs"
fi

# Damaged traces: a clear line, exit 1, never a crash.
: >$TMP/empty.lp
expect_fail "report on an empty file" 1 "empty" $LUAPROF report $TMP/empty.lp
expect_fail "info on an empty file" 1 "empty" $LUAPROF info $TMP/empty.lp
head -c 5000 /dev/urandom >$TMP/garbage.lp
expect_fail "report on garbage" 1 "not a luaprof trace" $LUAPROF report $TMP/garbage.lp
expect_fail "report on a missing file" 1 "No such file" $LUAPROF report $TMP/missing.lp

$LUAPROF record -q -F 999 -o $TMP/good.lp -- $SAMPLES/hot 1
size=$(stat -c %s $TMP/good.lp)
head -c $((size * 2 / 3)) $TMP/good.lp >$TMP/cut.lp
$LUAPROF report --format folded -o $TMP/cut.folded $TMP/cut.lp 2>$TMP/cut.err
check "report on a truncated trace exits 0" test $? -eq 0
check "report on a truncated trace says it was cut short" grep -qi "cut short" $TMP/cut.err

# A newer version: patch the version field and recompute the header CRC.
python3 - "$TMP/good.lp" "$TMP/newer.lp" <<'PY'
import struct, sys, zlib
data = bytearray(open(sys.argv[1], "rb").read())
data[8:10] = struct.pack("<H", 2)
data[20:24] = struct.pack("<I", zlib.crc32(bytes(data[0:20])))
open(sys.argv[2], "wb").write(data)
PY
expect_fail "report on a newer-version trace" 1 "version 2.*newer" $LUAPROF report $TMP/newer.lp

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

# A trace is private and never written through a symbolic link; a new
# recording keeps the old trace of the same name as NAME.old.
echo keep >$TMP/victim
ln -s $TMP/victim $TMP/link.lp
expect_fail "record refuses a symbolic link at -o" 1 "symbolic link" \
	$LUAPROF record -o $TMP/link.lp -- true
check "the link's target is untouched" grep -qx keep $TMP/victim
ln -s $TMP/nowhere $TMP/dangling.lp
expect_fail "record refuses a dangling symbolic link at -o" 1 "symbolic link" \
	$LUAPROF record -o $TMP/dangling.lp -- true
check "nothing is created where a dangling link points" test ! -e $TMP/nowhere
(umask 022; $LUAPROF record -q -F 199 -o $TMP/priv.lp -- $SAMPLES/hot 0.3 >/dev/null)
check "a trace is created 0600 under umask 022" test "$(stat -c %a $TMP/priv.lp)" = 600
cp $TMP/priv.lp $TMP/first.copy
$LUAPROF record -F 199 -o $TMP/priv.lp -- $SAMPLES/hot 0.3 >/dev/null 2>$TMP/again.err
check "a second recording keeps the first trace as NAME.old" cmp -s $TMP/priv.lp.old $TMP/first.copy
check "and says so" grep -q "kept as $TMP/priv.lp.old" $TMP/again.err
check "the new trace is private too" test "$(stat -c %a $TMP/priv.lp)" = 600
cp $TMP/priv.lp $TMP/second.copy
$LUAPROF record -q -o $TMP/priv.lp -- /nonexistent/cmd 2>/dev/null
check "a recording that never starts leaves the last trace where it was" \
	cmp -s $TMP/priv.lp $TMP/second.copy

# A disk that fills: recording stops with the reason, exits 1, and the
# chunks written before the disk filled still report.  The disk (8 KiB)
# fills after a few flushes (a second's samples and the symbols they hit
# share a chunk): how many samples come before depends on how soon the
# target got the CPU (a count of them per wall second, > 100, failed on a
# busy machine), so the bar is that every sample record says it wrote is
# there.  At 3 bytes a sample, 16 KiB did not fill in 30 s when hot got
# a tenth of a CPU under others' load; 8 KiB holds a second's chunk at
# full speed (sampling faster makes the first chunk outgrow the disk:
# then nothing is kept), and fills in 4 s idle, 6 s beside four CPU
# hogs.  hot runs at nice -5 so that others' work starves it less.
mkdir $TMP/small
if mount -t tmpfs -o size=8k tmpfs $TMP/small; then
	# hot runs before recording starts, so that the seconds before the
	# disk fills are all its own however busy the machine, and what it
	# got of the CPU is what must be kept.
	nice -n -5 $SAMPLES/hot 30 &
	hot=$!
	CLEANUP_PIDS+=($hot)
	C0=$(cpu_seconds $hot)
	expect_fail "a disk that fills stops the recording" 1 "No space left on device" \
		$LUAPROF record -F 999 -d 30 -p $hot -o $TMP/small/t.lp
	C1=$(cpu_seconds $hot)
	kill $hot 2>/dev/null; wait $hot 2>/dev/null
	$LUAPROF report --format folded -o $TMP/full.folded $TMP/small/t.lp 2>$TMP/full.err
	check "the filled trace still reports" test $? -eq 0
	check_num "samples written before the disk filled are kept (hot had $(awk -v a=$C0 -v b=$C1 'BEGIN { printf "%.2f", b - a }') s of CPU)" \
		"$(folded_total $TMP/full.folded)" ">" 0
	# The summary counts what the file holds; what was taken but not
	# written is counted lost, and said.
	said=$(record_summary $TMP/err samples)
	check "the summary counts the samples the file holds" \
		test "$said" = "$(folded_total $TMP/full.folded)"
	read -r dropped taken < <(sed -n 's/.*after the write error, \([0-9]*\) of the \([0-9]*\) samples taken were not written.*/\1 \2/p' $TMP/err)
	check "samples not written after the error are said to be lost" \
		test -n "$taken" -a "$((${dropped:-0} + ${said:-0}))" = "${taken:-x}"
	lost=$(record_summary $TMP/err lost)
	check_num "and counted in the summary's lost" "${lost:-0}" ">=" "${dropped:-999999999}"
	umount $TMP/small
else
	fail "a disk that fills" "cannot mount a tmpfs"
fi

# Damaged traces: a clear line, exit 1, never a crash.
: >$TMP/empty.lp
# -n is parsed once for report and diff (report_parse_rows): the same
# answer from both, before any trace is opened.
for n in -1 x 1e3 1000000001 ""; do
	expect_fail "report -n '$n' is misuse" 2 "bad row count" $LUAPROF report -n "$n" $TMP/empty.lp
	expect_fail "diff -n '$n' is misuse" 2 "bad row count" $LUAPROF diff -n "$n" $TMP/empty.lp $TMP/empty.lp
done
expect_fail "report on an empty file" 1 "empty" $LUAPROF report $TMP/empty.lp
expect_fail "info on an empty file" 1 "empty" $LUAPROF info $TMP/empty.lp
head -c 5000 /dev/urandom >$TMP/garbage.lp
expect_fail "report on garbage" 1 "not a luaprof trace" $LUAPROF report $TMP/garbage.lp
expect_fail "report on a missing file" 1 "No such file" $LUAPROF report $TMP/missing.lp

# Three seconds: a chunk a second and the last two, enough chunks to take
# one out or repeat it below.
$LUAPROF record -q -F 999 -o $TMP/good.lp -- $SAMPLES/hot 3
size=$(stat -c %s $TMP/good.lp)
head -c $((size * 2 / 3)) $TMP/good.lp >$TMP/cut.lp
$LUAPROF report --format folded -o $TMP/cut.folded $TMP/cut.lp 2>$TMP/cut.err
check "report on a truncated trace exits 0" test $? -eq 0
check "report on a truncated trace says it was cut short" grep -qi "cut short" $TMP/cut.err

# A chunk deleted or repeated is said, with the figures, and a repeated
# one is not counted twice (format.md §2.3).
python3 - "$TMP/good.lp" "$TMP/gap.lp" "$TMP/twice.lp" <<'PY'
import struct, sys
data = open(sys.argv[1], "rb").read()
chunks, at = [], 24
while at < len(data):
    size = 20 + struct.unpack_from("<I", data, at + 12)[0]
    chunks.append(data[at:at + size])
    at += size
assert len(chunks) >= 3, len(chunks)
open(sys.argv[2], "wb").write(data[:24] + b"".join(chunks[:1] + chunks[2:]))
open(sys.argv[3], "wb").write(data[:24] + b"".join(chunks[:2] + chunks[1:]))
PY
$LUAPROF report --format folded -o $TMP/good.folded $TMP/good.lp 2>$TMP/good.err
for t in gap twice; do
	$LUAPROF report --format folded -o $TMP/$t.folded $TMP/$t.lp 2>$TMP/$t.err
	$LUAPROF info $TMP/$t.lp >/dev/null 2>$TMP/$t.ierr
done
check "an intact trace gets no warning" test ! -s $TMP/good.err
check "report says a chunk is missing" grep -q "1 chunk missing from the trace's sequence" $TMP/gap.err
check "info says a chunk is missing" grep -q "1 chunk missing from the trace's sequence" $TMP/gap.ierr
check "and the footer's figures" grep -q "the footer counts [0-9]* samples in [0-9]* chunks, but" $TMP/gap.err
check "report says a chunk came twice" grep -q "1 chunk repeated or out of order, skipped" $TMP/twice.err
check "info says a chunk came twice" grep -q "1 chunk repeated or out of order, skipped" $TMP/twice.ierr
check "a repeated chunk is not counted twice" \
	test "$(folded_total $TMP/twice.folded)" = "$(folded_total $TMP/good.folded)"

# A newer version: patch the version field and recompute the header CRC.
python3 - "$TMP/good.lp" "$TMP/newer.lp" <<'PY'
import struct, sys, zlib
data = bytearray(open(sys.argv[1], "rb").read())
data[8:10] = struct.pack("<H", 2)
data[20:24] = struct.pack("<I", zlib.crc32(bytes(data[0:20])))
open(sys.argv[2], "wb").write(data)
PY
expect_fail "report on a newer-version trace" 1 "version 2.*newer" $LUAPROF report $TMP/newer.lp

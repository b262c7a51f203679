#!/usr/bin/env bash
# tests/fuzz/seeds.sh DIR - records the seed corpus of the trace fuzzer
# (tests/fuzz/fuzz_trace.c) into DIR: small real traces, made on this
# machine by this build's `luaprof record` (so it needs root), each
# written as one input per command of the harness (a selector byte, 0 to
# the number of its modes less one, then the trace).  Nothing here is committed: seeds are made fresh,
# so they follow the format as it is.
#
#   native      build/samples/hot, --compress none --no-embed: samples,
#               stacks, maps, objects, kernel symbols, the footer
#   lz4, zlib   the native trace compressed, for the decompressors
#   lua         LuaJIT running samples/lua/abc.lua (protos, Lua stacks,
#               luajit, lua_source, traces), --compress none
#   old         the native trace as a luaprof before chunk numbers wrote
#               it (compat 0, no chunk record, incompat 0): the reader's
#               older paths
#   kitchen     tests/fuzz/seedgen.c's trace: every record type a report
#               uses (stacks whole and as branches), symbol tables, source lines and a compiled trace's
#               snapshots included, in 1 KB
#               (a recording embeds libc's whole table: 40 KB)
#
# Each recording is a fraction of a second at a high rate, so the traces
# stay a few KB to 15 KB: libFuzzer mutates small inputs best.
set -eu
cd "$(dirname "$0")/../.."

dir=${1:?usage: tests/fuzz/seeds.sh DIR}
LUAPROF=${LUAPROF:-$PWD/build/luaprof}
raw=$(mktemp -d /tmp/luaprof-seeds.XXXXXX)
trap 'rm -rf "$raw"' EXIT
[ "$(id -u)" -eq 0 ] || { echo "tests/fuzz/seeds.sh: recording seeds needs root" >&2; exit 1; }

rec() { # NAME OPTIONS... -- COMMAND...
	local name=$1
	shift
	$LUAPROF record -q -F 997 -o "$raw/$name.lp" "$@" >/dev/null 2>"$raw/$name.err" ||
		{ cat "$raw/$name.err" >&2; echo "tests/fuzz/seeds.sh: recording $name failed" >&2; exit 1; }
}

rec native --compress none --no-embed -- build/samples/hot 0.15
rec lz4 --compress lz4 --no-embed -- build/samples/hot 0.1
rec zlib --compress zlib --no-embed -- build/samples/hot 0.1
if [ -x /usr/bin/luajit ]; then
	rec lua --compress none --no-embed -- /usr/bin/luajit samples/lua/abc.lua 0.3
else
	echo "tests/fuzz/seeds.sh: no /usr/bin/luajit (tests/deps.sh installs it): no Lua seed" >&2
fi

# The native trace without chunk numbers (docs/format.md §2.3): each
# uncompressed chunk loses its leading chunk record, the header its bit.
# Its incompat bits go too (a trace from before stack branches, §3.5.1):
# its stack records read as before, its stack_branch records are bad.
python3 - "$raw/native.lp" "$raw/old.lp" <<'PY'
import re, struct, sys, zlib
chunk_rec = int(re.search(r"_\(CHUNK, chunk, (\d+),", open("format/trace.h").read()).group(1))  # LP_RECDEF
data = open(sys.argv[1], "rb").read()
head = bytearray(data[:24])
head[12:20] = struct.pack("<II", 0, 0)
head[20:24] = struct.pack("<I", zlib.crc32(bytes(head[:20])))
out, at = [bytes(head)], 24
while at + 20 <= len(data):
    stored = struct.unpack_from("<I", data, at + 12)[0]
    pay = data[at + 20:at + 20 + stored]
    assert pay[0] == chunk_rec, "a chunk record first"
    pay = pay[2 + pay[1]:]
    h = bytearray(data[at:at + 20])
    h[8:16] = struct.pack("<II", len(pay), len(pay))
    h[16:20] = struct.pack("<I", zlib.crc32(bytes(h[4:16]) + pay))
    out += [bytes(h), pay]
    at += 20 + stored
open(sys.argv[2], "wb").write(b"".join(out))
PY

cc -std=gnu11 -D_GNU_SOURCE -I. -Ibuild -o "$raw/seedgen" tests/fuzz/seedgen.c \
	build/format/*.o build/lib/*.o -llz4 -lz -ldw -lelf -liberty
"$raw/seedgen" "$raw/kitchen.lp"

# The harness's modes: the rows of its table, one a line.
nmodes=$(sed -n '/^static const char \*const modes/,/^};/p' tests/fuzz/fuzz_trace.c | grep -c '^	{ "')
mkdir -p "$dir"
for f in "$raw"/*.lp; do
	name=$(basename "$f" .lp)
	for mode in $(seq 0 $((nmodes - 1))); do
		{ printf "\\$(printf %03o $mode)"; cat "$f"; } >"$dir/$name-$mode"
	done
done
echo "tests/fuzz/seeds.sh: $(ls "$dir" | wc -l) seeds in $dir ($(du -sh "$dir" | cut -f1))"

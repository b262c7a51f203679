#!/usr/bin/env bash
# bench/heap.sh - what `luaprof heap` costs the target and itself: the
# pause (the target stopped while its memory is copied, as heap prints
# it), the whole command's wall time (the walk and the trace come after
# the target runs on) and its peak RSS (the copy), at heaps of growing
# size, by bytes and by objects:
#   bytes    samples/lua/leak.lua preloaded with MB of users (~4 KB strings:
#            few objects, many bytes): 10, 100 and 300 MB by default
#   objects  a program holding N small tables ({i, "k" .. i}: 3 objects
#            each): 100 k, 1 M and 3 M tables
# RUNS snapshots of each (default 3), each line one run.  Needs root (or
# ptrace rights) and /usr/bin/luajit.
set -eu
cd "$(dirname "$0")/.."
RUNS=${RUNS:-3}
SIZES_MB=${SIZES_MB:-"10 100 300"}
SIZES_OBJ=${SIZES_OBJ:-"100000 1000000 3000000"}
LUAJIT=${LUAJIT:-/usr/bin/luajit}
LUAPROF=build/luaprof
TMP=$(mktemp -d /tmp/luaprof-bench-heap.XXXXXX)
target=
trap '[ -n "$target" ] && kill $target 2>/dev/null; rm -rf "$TMP"' EXIT
make --no-print-directory -s $LUAPROF

cat >$TMP/small.lua <<'LUA'
-- N small tables, each with a string, kept; then sleeps in C.
local n = tonumber(arg[1])
keep = {}
for i = 1, n do keep[i] = { i, "k" .. i } end
io.open(arg[2], "w"):close()
while true do os.execute("sleep 1") end
LUA

# snap LABEL: RUNS snapshots of $target, one line each.
snap() {
	local i out pause mib objs bytes wall rss
	for i in $(seq "$RUNS"); do
		/usr/bin/time -f "%e %M" -o $TMP/time $LUAPROF heap -p $target -o $TMP/h.lp >$TMP/out 2>&1
		out=$(cat $TMP/out)
		pause=$(sed -n 's/.* stopped \([0-9.]*\) ms.*/\1/p' <<<"$out")
		mib=$(sed -n 's/.*threads; \([0-9.]*\) MiB copied.*/\1/p' <<<"$out")
		read -r objs bytes < <(sed -n 's/^luaprof heap: \([0-9]*\) objects, \([0-9]*\) bytes.*/\1 \2/p' <<<"$out")
		read -r wall rss <$TMP/time
		printf "%-14s %9s %10s %9s %8s %8.0f %8.0f %7.1f %8.0f\n" "$1" "$objs" "$bytes" \
			"$mib" "$pause" "$(awk -v w="$wall" 'BEGIN { print w * 1000 }')" \
			"$(awk -v r="$rss" 'BEGIN { print r / 1024 }')" \
			"$(awk -v p="$pause" -v m="$mib" 'BEGIN { print m ? p / m : 0 }')" \
			"$(awk -v p="$pause" -v o="$objs" 'BEGIN { print o ? p / o * 1e5 : 0 }')"
	done
}

printf "%-14s %9s %10s %9s %8s %8s %8s %7s %8s\n" heap objects bytes "MiB copy" "pause ms" \
	"wall ms" "RSS MiB" "ms/MiB" "ms/100k"
for mb in $SIZES_MB; do
	$LUAJIT samples/lua/leak.lua 3600 $TMP/count $mb >/dev/null 2>&1 &
	target=$!
	while [ ! -s $TMP/count ]; do sleep 0.2; done
	sleep 1
	snap "leak ${mb}MB"
	kill $target
	wait $target 2>/dev/null || true
	rm -f $TMP/count
done
for n in $SIZES_OBJ; do
	$LUAJIT $TMP/small.lua $n $TMP/ready >/dev/null 2>&1 &
	target=$!
	while [ ! -e $TMP/ready ]; do sleep 0.2; done
	sleep 0.5
	snap "tables $n"
	kill $target 2>/dev/null || true
	wait $target 2>/dev/null || true
	rm -f $TMP/ready
done
target=

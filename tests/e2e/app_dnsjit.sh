# app_dnsjit.sh - dnsjit (libluajit-5.1.so.2), whose programs are LuaJIT
# scripts over its FFI modules: one with the JIT off, in which a, b and c
# (1:2:3) store to and load from an FFI struct, as dnsjit's own modules
# do with their cdata.  Each store and load runs a metamethod of the
# cdata's (ffi.meta.__newindex, __index) that the interpreter calls
# through a continuation frame; a tick between its call and the store of
# its frame's link (the link still in the PC register, the slot holding
# nil) cut the Lua stack there (0.3% of the samples before).  Checks the
# bars every real application is held to (tests/lib.sh), the 1:2:3, and
# that the header counts every [truncated] frame of the folded stacks.
. tests/lib.sh

tests/deps.sh || { fail "test dependencies (tests/deps.sh)"; exit 1; }

W=$TMP/burn.lua
cat >$W <<'LUA'
jit.off()
local ffi = require("ffi")
local clock = require("dnsjit.lib.clock")
ffi.cdef("struct burn_pt { int x; int y; double z; };")
local p = ffi.new("struct burn_pt")
local function work(n)
  for i = 1, n do p.x = i; p.y = p.x + 1; p.z = p.y * 0.5 end
end
local function a(u) work(u) end
local function b(u) work(2 * u) end
local function c(u) work(3 * u) end
local stop = clock:monotonic() + tonumber(arg[2])
-- A unit drawn each round: no part of the loop runs at a fixed period
-- that the sampling rate could alias with.
while clock:monotonic() < stop do
  local u = 500 + math.random(1000)
  a(u); b(u); c(u)
end
LUA
line() { grep -n "$1" $W | head -1 | cut -d: -f1; }

$LUAPROF record -F 999 -o $TMP/dj.lp -- dnsjit $W 4 >$TMP/dj.out 2>$TMP/dj.err
check "record exits 0" test $? -eq 0
$LUAPROF report --format folded -o $TMP/dj.folded $TMP/dj.lp 2>/dev/null
check_app_stacks "dnsjit" $TMP/dj.folded "" "" 1000

# The cut this test is for: a Lua walk stopped above the metamethod
# (0.15 to 0.3% of the samples before).
lcut=$(awk '/;\[truncated\];ffi\.meta\.__newindex/ { n += $NF } END { print n + 0 }' $TMP/dj.folded)
check_num "samples with a Lua stack cut at ffi.meta.__newindex" "$lcut" "==" 0

# a, b and c by their total: each runs work, 1:2:3.
incl() { grep -F "$1 ($W:$(line "local function $1("))" $TMP/dj.folded | folded_total /dev/stdin; }
na=$(incl a) nb=$(incl b) nc=$(incl c)
echo "# a b c: $na $nb $nc samples"
# (Shares of a + b + c, not ratios to a: a, the smallest, is the noisiest.)
check_abc_shares "%s's share of a, b and c, against 1:2:3" 0.04 "$na" "$nb" "$nc" 1 2 3

# The header's cut counts, native and Lua, are the [truncated] frames.
$LUAPROF report -o $TMP/dj.top $TMP/dj.lp 2>/dev/null
cuts=$(grep '^# samples:' $TMP/dj.top | grep -oE 'stack cut: [0-9]+' |
	awk '{ n += $3 } END { print n + 0 }')
marks=$(awk '{ c = $NF; n += c * gsub(/\[truncated\]/, "") } END { print n + 0 }' $TMP/dj.folded)
check_num "the header's stack cuts are the folded [truncated] frames" "$cuts" "==" "$marks"

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
local function a() work(1000) end
local function b() work(2000) end
local function c() work(3000) end
local stop = clock:monotonic() + tonumber(arg[2])
while clock:monotonic() < stop do a(); b(); c() end
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
incl() { grep -F "$1 ($W:$(line "local function $1()"))" $TMP/dj.folded | folded_total /dev/stdin; }
na=$(incl a) nb=$(incl b) nc=$(incl c)
echo "# a b c: $na $nb $nc samples"
off() { awk -v x="$1" -v y="$2" 'BEGIN { d = x - y; printf "%.3f", d < 0 ? -d : d }'; }
check_num "b against a, off 2 by" "$(off $(share $nb $na) 2)" "<=" 0.3
check_num "c against a, off 3 by" "$(off $(share $nc $na) 3)" "<=" 0.45

# The header's cut counts, native and Lua, are the [truncated] frames.
$LUAPROF report -o $TMP/dj.top $TMP/dj.lp 2>/dev/null
cuts=$(grep '^# samples:' $TMP/dj.top | grep -oE 'stack cut: [0-9]+' |
	awk '{ n += $3 } END { print n + 0 }')
marks=$(awk '{ c = $NF; n += c * gsub(/\[truncated\]/, "") } END { print n + 0 }' $TMP/dj.folded)
check_num "the header's stack cuts are the folded [truncated] frames" "$cuts" "==" "$marks"

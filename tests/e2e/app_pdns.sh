# app_pdns.sh - PowerDNS Recursor (pdns_recursor, libluajit-5.1.so.2) on
# 127.0.0.1: a --lua-dns-script whose preresolve() burns CPU in Lua and
# answers every query itself (root hints on 127.0.0.2, never asked), run
# by each of its 2 worker threads on a Boost.Context fiber per query.
# Recorded from its start until it has used 2 s of CPU time, under kdig's
# queries.  A fiber's first frame returns into make_fcontext, which has
# no CFI: the walk ends there, as at a thread's clone, so the stacks are
# rooted at make_fcontext and not cut ([truncated] before, on 98% of the
# samples).  Checks the bars every real application is held to
# (tests/lib.sh) with make_fcontext as a root.
. tests/lib.sh

tests/deps.sh || { fail "test dependencies (tests/deps.sh)"; exit 1; }

PORT=$((20000 + RANDOM % 20000))
D=$TMP/pdns
mkdir -p $D/run
touch $D/recursor.conf
printf '. 3600000 NS a.root.\na.root. 3600000 A 127.0.0.2\n' >$D/root.hints
W=$D/burn.lua
{ app_lua_functions; cat <<'LUA'; } >$W
burned = 0
function preresolve(dq)
  burned = burned + fib(14 + math.random(4)) + strs(100 + math.random(200))
  dq:addAnswer(pdns.A, "192.0.2.1")
  return true
end
LUA
line() { grep -n "$1" $W | head -1 | cut -d: -f1; }

$LUAPROF record -F 999 -d 60 -o $TMP/pdns.lp -- pdns_recursor --config-dir=$D \
	--socket-dir=$D/run --local-address=127.0.0.1 --local-port=$PORT \
	--lua-dns-script=$W --daemon=no --setuid= --setgid= --threads=2 \
	--disable-syslog --hint-file=$D/root.hints --query-local-address=127.0.0.1 \
	--packetcache-ttl=0 >$D/pdns.log 2>$TMP/pdns.err </dev/null &
REC=$!
CLEANUP_PIDS+=($REC)
answers() { kdig @127.0.0.1 -p $PORT +notcp +timeout=1 +retry=0 +short "$@" 2>/dev/null; }
ready() { answers ready.example A | grep -q 192.0.2.1; }
wait_for ready
check "pdns_recursor answers on 127.0.0.1:$PORT" ready || { sed 's/^/    /' $D/pdns.log | tail -5; exit 1; }
PDNS=$(pgrep -P $REC -x pdns_recursor)
CLEANUP_PIDS+=($PDNS)

# Queries until the recorder is done; it is told to stop (SIGINT) once
# pdns_recursor has used 2 s of CPU time.
ticks=$((2 * $(getconf CLK_TCK)))
while kill -0 $REC 2>/dev/null; do
	i=$((${i:-0} + 1))
	answers $(for j in $(seq 20); do echo "q$i-$j.example A"; done) >/dev/null
	[ -z "${stopping:-}" ] && [ "$(cpu_ticks $PDNS)" -ge $ticks ] &&
		{ kill -INT $REC; stopping=1; }
done
wait $REC
check "record exits 0" test $? -eq 0
check "the recorder stopped pdns_recursor" bash -c "! kill -0 $PDNS 2>/dev/null"
$LUAPROF report --format folded -o $TMP/pdns.folded $TMP/pdns.lp 2>/dev/null
check_app_stacks "pdns_recursor" $TMP/pdns.folded make_fcontext

# pdns_recursor loads the script as a string chunk named "chunk"; it
# calls preresolve from C, by no name a frame could give.
chunk='[string "chunk"]'
fib="fib ($chunk:$(line 'local function fib'))"
pre="? ($chunk:$(line '^function preresolve'))"
check "fib runs under preresolve, on a fiber: make_fcontext first" \
	grep -qE "^make_fcontext;.*;lua_pcall;$(printf '%s;%s;' "$pre" "$fib" | sed 's/[.()?[]/\\&/g')" \
	$TMP/pdns.folded
fibers=$(grep '^make_fcontext;' $TMP/pdns.folded | grep -F "$pre" | folded_total /dev/stdin)
lua=$(grep -F "$pre" $TMP/pdns.folded | folded_total /dev/stdin)
check_num "share of preresolve's samples on a fiber's stack" "$(share $fibers $lua)" ">=" 0.99

# A C++ host: its names demangled in every view, as perf and pprof show
# them (std::basic_ios<...>::init(...), not _ZNSt9basic_ios...).
check_num "C++ names among pdns_recursor's frames (demangled: with ::)" \
	"$(tr ';' '\n' <$TMP/pdns.folded | grep -c '::')" ">=" 1
for fmt in folded top callgraph flamegraph speedscope pprof; do
	$LUAPROF report --format $fmt -o $TMP/pdns.$fmt $TMP/pdns.lp 2>/dev/null
	[ $fmt = pprof ] && { gzip -dc $TMP/pdns.$fmt >$TMP/pdns.pprof.raw; mv $TMP/pdns.pprof.raw $TMP/pdns.$fmt; }
	check_num "report --format $fmt: mangled C++ names (_Z...)" \
		"$(grep -aoE '(^|[^A-Za-z0-9_])_Z[A-Z0-9][A-Za-z0-9_]{3,}' $TMP/pdns.$fmt | wc -l)" "==" 0
done

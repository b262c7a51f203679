#!/usr/bin/env bash
# docs/img/alloc-nginx.sh - `make docs-img`: regenerates
# docs/img/alloc-nginx.svg, the README's allocation flame graph: nginx +
# lua module (2 workers, JIT on) running samples/nginx/app.lua under load
# (wrk -t1 -c2), recorded with -e alloc for SECONDS (default 5), drawn with
# `luaprof report --kind alloc --format flamegraph`.  Needs root and
# tests/deps.sh's nginx packages and wrk.
set -u
cd "$(dirname "$0")/../.."
SECONDS_=${1:-5}
OUT=${OUT:-docs/img/alloc-nginx.svg}
. tests/lib.sh
. tests/nginx.sh
LUAPROF=$PWD/build/luaprof
command -v wrk >/dev/null || DEBIAN_FRONTEND=noninteractive apt-get install -y -qq wrk >/dev/null
WRK=
trap '[ -n "$WRK" ] && kill $WRK 2>/dev/null; nginx_stop >/dev/null 2>&1; cleanup' EXIT
NGINX_JIT=on nginx_start || exit 1
wrk -t1 -c2 -d$((SECONDS_ + 30))s http://127.0.0.1:$NGINX_PORT/ >/dev/null 2>&1 &
WRK=$!
sleep 2 # the JIT compiles the handler's traces
$LUAPROF record -q -e alloc -d $SECONDS_ -p $NGINX_MASTER -o $TMP/alloc.lp || exit 1
kill $WRK; wait $WRK 2>/dev/null; WRK=
# The repository's absolute path is the reader's own checkout's: shown
# relative (samples/nginx/...), as the README's text names it.
$LUAPROF report --kind alloc --format flamegraph -o $TMP/alloc.svg $TMP/alloc.lp || exit 1
sed "s|$PWD/||g" $TMP/alloc.svg >$OUT
echo "docs/img/alloc-nginx.sh: $OUT, $(stat -c %s $OUT) bytes"

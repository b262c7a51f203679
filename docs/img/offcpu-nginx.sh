#!/usr/bin/env bash
# docs/img/offcpu-nginx.sh - `make docs-img`: regenerates
# docs/img/offcpu-nginx.svg, the README's off-CPU flame graph: nginx + lua
# module (2 workers, JIT on) running samples/nginx/audit.lua (CPU work,
# then an fdatasync'd audit line) under a little load (wrk -t1 -c2),
# recorded with -e cpu,off-cpu for SECONDS (default 5), drawn with
# `luaprof report --kind off-cpu --format flamegraph`.  Needs root and
# tests/deps.sh's nginx packages and wrk.
set -u
cd "$(dirname "$0")/../.."
SECONDS_=${1:-5}
OUT=${OUT:-docs/img/offcpu-nginx.svg}
. tests/lib.sh
. tests/nginx.sh
LUAPROF=$PWD/build/luaprof
command -v wrk >/dev/null || DEBIAN_FRONTEND=noninteractive apt-get install -y -qq wrk >/dev/null
WRK=
trap '[ -n "$WRK" ] && kill $WRK 2>/dev/null; nginx_stop >/dev/null 2>&1; cleanup' EXIT
sed 's/require("app").handle()/require("audit").handle()/' samples/nginx/nginx.conf >$TMP/nginx.conf
NGINX_CONF_SRC=$TMP/nginx.conf
NGINX_JIT=on nginx_start || exit 1
wrk -t1 -c2 -d$((SECONDS_ + 30))s http://127.0.0.1:$NGINX_PORT/ >/dev/null 2>&1 &
WRK=$!
sleep 2 # the JIT compiles the handler's traces
$LUAPROF record -q -e cpu,off-cpu -d $SECONDS_ -p $NGINX_MASTER -o $TMP/offcpu.lp || exit 1
kill $WRK; wait $WRK 2>/dev/null; WRK=
# The repository's absolute path is the reader's own checkout's: shown
# relative (samples/nginx/...), as the README's text names it.
$LUAPROF report --kind off-cpu --format flamegraph -o $TMP/offcpu.svg $TMP/offcpu.lp || exit 1
sed "s|$PWD/||g" $TMP/offcpu.svg >$OUT
echo "docs/img/offcpu-nginx.sh: $OUT, $(stat -c %s $OUT) bytes"

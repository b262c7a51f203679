#!/usr/bin/env bash
# docs/img/nginx.sh IMAGE [SECONDS] - `make docs-img`: regenerates one of
# the README's flame graphs of nginx + lua module (2 workers, JIT on)
# under a little load (wrk -t1 -c2), recorded for SECONDS (default 5)
# and drawn with `luaprof report --kind KIND --format flamegraph`:
#   offcpu  docs/img/offcpu-nginx.svg: samples/nginx/audit.lua (CPU work,
#           then an fdatasync'd audit line), -e cpu,off-cpu, off-CPU time
#   alloc   docs/img/alloc-nginx.svg: samples/nginx/app.lua, -e alloc,
#           the bytes allocated
# Needs root and tests/deps.sh's nginx packages and wrk.
set -u
cd "$(dirname "$0")/../.."
IMAGE=${1:-}
SECONDS_=${2:-5}
case $IMAGE in
offcpu) HANDLER=audit KINDS=cpu,off-cpu KIND=off-cpu ;;
alloc) HANDLER=app KINDS=alloc KIND=alloc ;;
*) echo "usage: docs/img/nginx.sh offcpu|alloc [SECONDS]" >&2; exit 2 ;;
esac
OUT=${OUT:-docs/img/$IMAGE-nginx.svg}
. tests/lib.sh
. tests/nginx.sh
LUAPROF=$PWD/build/luaprof
command -v wrk >/dev/null || DEBIAN_FRONTEND=noninteractive apt-get install -y -qq wrk >/dev/null
WRK=
trap '[ -n "$WRK" ] && kill $WRK 2>/dev/null; nginx_stop >/dev/null 2>&1; cleanup' EXIT
sed "s/require(\"app\").handle()/require(\"$HANDLER\").handle()/" samples/nginx/nginx.conf >$TMP/nginx.conf
NGINX_CONF_SRC=$TMP/nginx.conf
NGINX_JIT=on nginx_start || exit 1
wrk -t1 -c2 -d$((SECONDS_ + 30))s http://127.0.0.1:$NGINX_PORT/ >/dev/null 2>&1 &
WRK=$!
sleep 2 # the JIT compiles the handler's traces
$LUAPROF record -q -e $KINDS -d $SECONDS_ -p $NGINX_MASTER -o $TMP/$IMAGE.lp || exit 1
kill $WRK; wait $WRK 2>/dev/null; WRK=
# The repository's absolute path is the reader's own checkout's: shown
# relative (samples/nginx/...), as the README's text names it.
$LUAPROF report --kind $KIND --format flamegraph -o $TMP/$IMAGE.svg $TMP/$IMAGE.lp || exit 1
sed "s|$PWD/||g" $TMP/$IMAGE.svg >$OUT
echo "docs/img/nginx.sh: $OUT, $(stat -c %s $OUT) bytes"

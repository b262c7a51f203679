#!/usr/bin/env bash
# tests/demo.sh - `make demo`: records the bundled samples/lua/abc.lua
# under LuaJIT for a few seconds, prints the top of the report, and leaves
# demo.lp and demo.folded behind for you to look at.
set -eu
cd "$(dirname "$0")/.."
if [ "$(id -u)" -ne 0 ]; then
	echo "make demo: recording needs root (BPF); run it as root" >&2
	exit 1
fi
tests/deps.sh # LuaJIT (OpenResty's luajit2), quiet when present
echo "== luaprof record -F 999 -d 5 -o demo.lp -- luajit samples/lua/abc.lua 3"
build/luaprof record -F 999 -d 5 -o demo.lp -- luajit samples/lua/abc.lua 3
echo
echo "== luaprof report --format top -n 8 demo.lp"
build/luaprof report --format top -n 8 demo.lp
echo
echo "== luaprof report --vmstate -n 4 demo.lp"
build/luaprof report --vmstate -n 4 demo.lp | sed -n '/VM state/,$p'
build/luaprof report --format folded -o demo.folded demo.lp
echo
echo "== the hottest stacks in demo.folded"
# The count is the last field; frames may hold spaces.
awk '{ print $NF "\t" $0 }' demo.folded | sort -t"$(printf '\t')" -k1,1nr | head -5 | cut -f2-
echo
echo "Left behind: demo.lp (the trace; try 'build/luaprof info demo.lp')"
echo "             demo.folded (folded stacks, for flamegraph.pl or speedscope)"

#!/bin/sh
# man/man.sh LUAPROF OUTDIR VERSION - the man pages, made by help2man from
# the --help of luaprof and of each command, so that `man luaprof-record`
# and `luaprof record --help` never disagree: luaprof.1 and
# luaprof-COMMAND.1 for each command `luaprof --help` lists.  help2man
# runs a program by its name, so each command gets a two-line wrapper
# named luaprof-COMMAND in a scratch directory.  `make man` runs this;
# tests/e2e/install.sh checks every option of every --help is on its page.
set -eu
luaprof=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
out=$2
version=$3
tmp=$(mktemp -d /tmp/luaprof-man.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$out"
# "  record   sample processes ..." lines under "Commands:".
"$luaprof" --help | awk '/^Commands:/ { on = 1; next } on && /^  [a-z]/ { print } on && /^$/ { exit }' |
while read -r cmd what; do
	printf '#!/bin/sh\nexec "%s" %s "$@"\n' "$luaprof" "$cmd" >"$tmp/luaprof-$cmd"
	chmod +x "$tmp/luaprof-$cmd"
	help2man -N --no-discard-stderr --version-string="$version" -n "$what" \
		-S luaprof -m "luaprof manual" "$tmp/luaprof-$cmd" >"$out/luaprof-$cmd.1"
done
printf '#!/bin/sh\nexec "%s" "$@"\n' "$luaprof" >"$tmp/luaprof"
chmod +x "$tmp/luaprof"
# luaprof.1 names the commands' pages.
{
	echo "[SEE ALSO]"
	for page in "$out"/luaprof-*.1; do
		page=$(basename "$page" .1)
		printf '.BR %s (1)\n' "$page"
	done
} >"$tmp/see-also"
help2man -N --no-discard-stderr --version-string="$version" -i "$tmp/see-also" \
	-n "a sampling profiler for LuaJIT programs" -S luaprof -m "luaprof manual" \
	"$tmp/luaprof" >"$out/luaprof.1"

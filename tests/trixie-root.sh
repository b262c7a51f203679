#!/usr/bin/env bash
# tests/trixie-root.sh - a root of Debian trixie (today's stable) with its
# own luajit, nginx-light and the nginx Lua module, made with debootstrap
# from this machine's mirror, as a container image would hold them: its
# glibc is newer than bookworm's, so trixie's binaries run only there.
# The executables of sid's and experimental's luajit packages (unpacked by
# tests/luajit-builds.sh; they need glibc 2.38, which trixie has) are
# copied in as /opt/luajit-sid and /opt/luajit-experimental.
#
#   build/trixie-root/root     the root (some 250 MB), made once
#
# The tests run in it with `unshare --mount --pid --fork --root=...`, as a
# container runtime does.  Quiet on success; on failure, the end of the
# log, and a non-zero exit.
set -euo pipefail
cd "$(dirname "$0")/.."
. tests/debian-mirror.sh

OUT=$PWD/build/trixie-root
ROOT=$OUT/root
BUILDS=$PWD/build/luajit-builds
LOG=$OUT/debootstrap.log

die() {
	echo "trixie-root: $*" >&2
	exit 1
}

mkdir -p "$OUT"
exec 9>"$OUT/.lock"
flock 9

if [ ! -f "$OUT/.done" ]; then
	command -v debootstrap >/dev/null || die "debootstrap is missing: apt-get install debootstrap"
	[ "$(id -u)" -eq 0 ] || die "debootstrap needs root"
	mirror=$(debian_mirror)
	rm -rf "$ROOT"
	if ! debootstrap --variant=minbase --include=luajit,nginx-light,libnginx-mod-http-lua \
		trixie "$ROOT" "$mirror" >"$LOG" 2>&1; then
		tail -n 15 "$LOG" >&2
		die "debootstrap failed, see $LOG"
	fi
	touch "$OUT/.done"
fi
for suite in sid experimental; do
	src=$BUILDS/deb-$suite/usr/bin/luajit
	dst=$ROOT/opt/luajit-$suite
	[ -x "$dst" ] && cmp -s "$src" "$dst" && continue
	[ -x "$src" ] || die "$src is missing: run tests/luajit-builds.sh first"
	mkdir -p "$ROOT/opt"
	cp "$src" "$dst"
done

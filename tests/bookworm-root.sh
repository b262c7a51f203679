#!/usr/bin/env bash
# tests/bookworm-root.sh - a fresh root of Debian bookworm, as a user's
# host would be before luaprof is installed: minbase, with luajit (a
# target to record) and man-db (to read the pages), made with debootstrap
# from this machine's mirror, once.  Nothing of luaprof's is in it:
# tests/e2e/deb.sh installs the package into a copy-on-write view of it.
#
#   build/bookworm-root/root     the root (some 200 MB), made once
#
# Quiet on success; on failure, the end of the log, and a non-zero exit.
set -euo pipefail
cd "$(dirname "$0")/.."
. tests/debian-mirror.sh

OUT=$PWD/build/bookworm-root
ROOT=$OUT/root
LOG=$OUT/debootstrap.log

die() {
	echo "bookworm-root: $*" >&2
	exit 1
}

mkdir -p "$OUT"
exec 9>"$OUT/.lock"
flock 9
[ -f "$OUT/.done" ] && exit 0
command -v debootstrap >/dev/null || die "debootstrap is missing: apt-get install debootstrap"
[ "$(id -u)" -eq 0 ] || die "debootstrap needs root"
mirror=$(debian_mirror)
rm -rf "$ROOT"
if ! debootstrap --variant=minbase --include=luajit,man-db \
	bookworm "$ROOT" "$mirror" >"$LOG" 2>&1; then
	tail -n 20 "$LOG" >&2
	die "debootstrap failed (log: $LOG)"
fi
touch "$OUT/.done"

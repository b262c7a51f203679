#!/usr/bin/env bash
# mk/arm64-sysroot.sh - the root `make ARCH=arm64` compiles and links
# against (gcc --sysroot): Debian's arm64 development packages of what
# luaprof links, and every package they depend on, unpacked with dpkg-deb
# (never installed).  The -dev packages give the headers and the static
# libraries luaprof-static is linked from; their dependencies give the
# shared libraries the dynamic build links against.  Packages come from
# the host's own suite through private apt state (mk/arm64-apt.sh).
#
#   mk/arm64-sysroot.sh SYSROOT
#
# Idempotent: SYSROOT/.packages lists what was unpacked; when it was made
# from the same packages asked for, nothing is fetched (the stamp is
# touched, for make).  Else the root is made anew beside and moved into
# place whole, so a failed run leaves no half root.  apt's output goes to
# SYSROOT.log, shown on failure.
set -u
cd "$(dirname "$0")/.." || exit 1

# What the Makefile's LDLIBS and STATIC_LDLIBS name, and libc.
WANT="libc6-dev libbpf-dev libelf-dev libdw-dev zlib1g-dev liblz4-dev
      libcapstone-dev libiberty-dev liblzma-dev libbz2-dev"

root=$(realpath -m "${1:?usage: mk/arm64-sysroot.sh SYSROOT}")
stamp=$root/.packages
ARM64_APT=$(dirname "$root")/apt
ARM64_LOG=$root.log
. mk/arm64-apt.sh

die() {
	tail -n 20 "$ARM64_LOG" >&2
	echo "arm64-sysroot: $*" >&2
	exit 1
}

# shellcheck disable=SC2086,SC2116 # the names on one line
want_line="# asked: $(echo $WANT)"
if [ -f "$stamp" ] && [ "$(head -n 1 "$stamp")" = "$want_line" ]; then
	touch "$stamp"
	exit 0
fi

: >"$ARM64_LOG"
arm64_apt_init || die "cannot read the arm64 package lists"
# The closure of their dependencies (virtual packages, <name>, are met by
# a real one the closure holds: libc-dev by libc6-dev).
# shellcheck disable=SC2086 # WANT and pkgs are lists of names
pkgs=$(arm64_apt_cache depends --recurse --no-recommends --no-suggests \
	--no-conflicts --no-breaks --no-replaces --no-enhances $WANT 2>>"$ARM64_LOG" |
	grep -v -e '^ ' -e '^<' | sort -u) || die "apt-cache depends failed"
[ -n "$pkgs" ] || die "no packages to fetch"
echo "arm64-sysroot: fetching $(echo "$pkgs" | wc -l) arm64 packages into $root:"
echo "$pkgs" | paste -sd' ' | fold -s -w 76 | sed 's/^/  /'

tmp=$root.tmp
rm -rf "$tmp" "$tmp-debs"
# shellcheck disable=SC2086
arm64_download "$tmp-debs" $pkgs || die "apt-get download failed"
mkdir -p "$tmp"
{
	echo "$want_line"
	for deb in "$tmp-debs"/*.deb; do
		dpkg-deb -x "$deb" "$tmp" || die "dpkg-deb -x $deb failed"
		dpkg-deb -f "$deb" Package Version | paste -sd' ' | sed 's/^Package: \(.*\) Version: /\1 /'
	done
} >"$tmp/.packages.new" || exit 1
# Links to absolute paths (libbz2.so -> /lib/...) would name the host's
# files: they are made relative, to the same file inside the root.
find "$tmp" -type l -lname '/*' | while read -r l; do
	ln -sfn "$(realpath -m -s --relative-to="$(dirname "$l")" "$tmp$(readlink "$l")")" "$l"
done
# A link needs neither the documentation nor gconv's character sets
# (20 MB).
rm -rf "$tmp"/usr/share/doc "$tmp"/usr/share/man "$tmp"/usr/share/locale \
	"$tmp"/usr/share/lintian "$tmp"/usr/share/info "$tmp-debs" \
	"$tmp"/usr/lib/aarch64-linux-gnu/gconv
mv "$tmp/.packages.new" "$tmp/.packages"
rm -rf "$root"
mv "$tmp" "$root"
echo "arm64-sysroot: $(du -sh "$root" | cut -f1) in $root"

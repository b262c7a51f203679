#!/usr/bin/env bash
# tests/luajit-arm64.sh - arm64 (AArch64) LuaJIT objects, for the unit
# tests that derive a layout from arm64 code on this x86_64 machine:
#
#   deb-SUITE/usr/...  Debian's own arm64 packages, unpacked, stripped as
#                      they ship: bookworm's luajit and libluajit-5.1-2
#                      (upstream 2.1.0~beta3+git20220320), bookworm's
#                      luajit2 and libluajit2-5.1-2 (OpenResty 2.1-20230119),
#                      trixie's luajit and libluajit-5.1-2 (OpenResty
#                      2.1.0+openresty20250117)
#   NAME/luajit.debug  the same three sources cross-built for arm64 with
#   NAME/libluajit.so.debug  gcc-aarch64-linux-gnu and -g: their DWARF is
#                      the truth the derived offsets are held to
#   NAME/luajit        ... and stripped, as distributions ship them
#   builds.txt         one line per object: NAME, the object, its DWARF
#                      twin or "-", what it is
#
# The packages come through apt with a private state directory whose
# architecture is arm64 (APT::Architecture), so neither the system's apt
# configuration nor dpkg's architectures change.  The sources are the
# packages' .orig tarballs: those tests/luajit-builds.sh unpacked into
# build/luajit-builds/src when it did, else fetched the same way, into
# src/NAME.  Everything is kept in build/luajit-arm64/ once made.
# Quiet on success; a failure says what failed and exits non-zero.
set -euo pipefail
cd "$(dirname "$0")/.."
. tests/debian-mirror.sh

OUT=$PWD/build/luajit-arm64
SRC=$PWD/build/luajit-builds/src
APT=$OUT/apt
# NAME:SUITE:VERSION:SOURCE:PACKAGES (NAME as build/luajit-builds/src has it)
PKGS=(
	"bookworm:bookworm:2.1.0~beta3+git20220320+dfsg-4.1+deb12u1:luajit:luajit libluajit-5.1-2"
	"bookworm2:bookworm:2.1-20230119-1:luajit2:luajit2 libluajit2-5.1-2"
	"trixie:trixie:2.1.0+openresty20250117-2:luajit:luajit libluajit-5.1-2"
)

die() {
	echo "luajit-arm64: $*" >&2
	exit 1
}

mkdir -p "$OUT" "$APT/lists/partial" "$APT/cache/archives/partial"
exec 9>"$OUT/.lock"
flock 9

APTO=(-o "Dir::Etc::sourcelist=$APT/sources.list" -o Dir::Etc::sourceparts=-
      -o "Dir::State::Lists=$APT/lists" -o "Dir::Cache=$APT/cache"
      -o "Dir::State::status=$APT/status" -o APT::Architecture=arm64
      -o APT::Architectures=arm64 -o APT::Sandbox::User=root -o Acquire::Retries=3)
apt_update() {
	local m s
	[ -f "$APT/updated" ] && return 0
	m=$(debian_mirror)
	: >"$APT/status"
	: >"$APT/sources.list"
	for s in bookworm trixie; do
		echo "deb $m $s main" >>"$APT/sources.list"
		echo "deb-src $m $s main" >>"$APT/sources.list"
	done
	apt-get "${APTO[@]}" update >"$APT/update.log" 2>&1 ||
		die "apt-get update failed, see $APT/update.log"
	touch "$APT/updated"
}

# src/NAME: the upstream tree of SOURCE at VERSION: luajit-builds.sh's
# when it has it, else the .orig tarball fetched and unpacked.
fetch_source() { # name source version
	local name=$1 dir=$OUT/src/$1 uri file hash
	[ -f "$dir/src/Makefile" ] && return 0
	mkdir -p "$OUT/src"
	if [ -f "$SRC/$name/src/Makefile" ]; then
		ln -sfn "$SRC/$name" "$dir"
		return 0
	fi
	apt_update
	read -r uri file _ hash < <(apt-get "${APTO[@]}" source --print-uris "$2=$3" 2>/dev/null |
		awk -F"'" '$2 ~ /\.orig\.tar\./ { split($3, a, " "); print $2, a[1], a[2], a[3] }') ||
		die "apt knows no source $2=$3"
	/usr/lib/apt/apt-helper download-file "$uri" "$OUT/src/$file" "$hash" \
		>"$OUT/src/$name.fetch.log" 2>&1 || die "cannot fetch $uri, see $OUT/src/$name.fetch.log"
	rm -rf "$dir" "$dir.tmp"
	mkdir -p "$dir.tmp"
	tar -xf "$OUT/src/$file" -C "$dir.tmp"
	rm -f "$OUT/src/$file"
	# Most tarballs hold one directory, some (bookworm's) the tree itself.
	if [ ! -f "$dir.tmp/Makefile" ] && [ "$(ls -A "$dir.tmp" | wc -l)" -eq 1 ]; then
		mv "$dir.tmp" "$dir.top"
		mkdir "$dir.tmp"
		find "$dir.top" -mindepth 2 -maxdepth 2 -exec mv -t "$dir.tmp" {} +
		rm -rf "$dir.top"
	fi
	[ -f "$dir.tmp/src/Makefile" ] || die "$file holds no LuaJIT tree"
	mv "$dir.tmp" "$dir"
}

# Debian's arm64 packages of one source, unpacked into deb-NAME.
fetch_debs() { # name version packages
	local name=$1 version=$2 dir=$OUT/deb-$1 tmp p specs=()
	[ -f "$dir/.version" ] && return 0
	apt_update
	for p in $3; do specs+=("$p=$version"); done
	tmp=$(mktemp -d "$OUT/debs.XXXXXX")
	chmod 755 "$tmp"
	(cd "$tmp" && apt-get "${APTO[@]}" download "${specs[@]}") >"$OUT/deb-$name.log" 2>&1 ||
		{ rm -rf "$tmp"; die "cannot download $name's arm64 packages, see $OUT/deb-$name.log"; }
	rm -rf "$dir"
	mkdir -p "$dir"
	for f in "$tmp"/*.deb; do dpkg-deb -x "$f" "$dir"; done
	echo "$version" >"$dir/.version"
	rm -rf "$tmp"
}

# One cross-build of a source: NAME/luajit(.debug), NAME/libluajit.so(.debug).
cross_build() { # name
	local name=$1 dest=$OUT/$1 work=$OUT/work/$1 log=$OUT/$1.log
	[ -f "$dest/luajit.debug" ] && [ -f "$dest/libluajit.so.debug" ] && return 0
	rm -rf "$work" "$dest"
	mkdir -p "$OUT/work" "$dest"
	cp -a "$OUT/src/$name/." "$work"
	{
		make -C "$work/src" -j2 HOST_CC=gcc CROSS=aarch64-linux-gnu- TARGET_SYS=Linux \
			CCOPT="-O2 -fomit-frame-pointer" CCDEBUG=-g BUILDMODE=mixed Q= E=@: &&
		cp "$work/src/luajit" "$dest/luajit.debug" &&
		cp "$work/src/libluajit.so" "$dest/libluajit.so.debug" &&
		aarch64-linux-gnu-strip --strip-all -o "$dest/luajit" "$dest/luajit.debug" &&
		aarch64-linux-gnu-strip --strip-unneeded -o "$dest/libluajit.so" \
			"$dest/libluajit.so.debug"
	} >"$log" 2>&1 || { tail -n 15 "$log" >&2; die "the arm64 build of $name failed, see $log"; }
	rm -rf "$work"
}

command -v aarch64-linux-gnu-gcc >/dev/null ||
	die "aarch64-linux-gnu-gcc is missing: apt-get install gcc-aarch64-linux-gnu libc6-dev-arm64-cross"
[ -f /usr/aarch64-linux-gnu/include/stdio.h ] ||
	die "arm64 libc headers are missing: apt-get install libc6-dev-arm64-cross"

for p in "${PKGS[@]}"; do
	IFS=: read -r name suite version source pkgs <<<"$p"
	fetch_debs "$name" "$version" "$pkgs"
	fetch_source "$name" "$source" "$version"
	cross_build "$name"
done
rmdir "$OUT/work" 2>/dev/null || true

{
	for p in "${PKGS[@]}"; do
		IFS=: read -r name suite version source pkgs <<<"$p"
		echo "$name-arm64 $OUT/$name/luajit $OUT/$name/luajit.debug $version gcc -O2"
		echo "$name-arm64-lib $OUT/$name/libluajit.so $OUT/$name/libluajit.so.debug $version gcc -O2 shared"
		echo "deb-$name-arm64 $OUT/deb-$name/usr/bin/luajit - $version Debian $suite"
		for l in "$OUT/deb-$name"/usr/lib/aarch64-linux-gnu/libluajit-5.1.so.2.*; do
			echo "deb-$name-arm64-lib $l - $version Debian $suite shared"
		done
	done
} >"$OUT/builds.txt.tmp"
mv "$OUT/builds.txt.tmp" "$OUT/builds.txt"

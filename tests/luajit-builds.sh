#!/usr/bin/env bash
# tests/luajit-builds.sh - the LuaJIT builds users run, made here: the
# `luajit` source packages of Debian bullseye (2.1.0~beta3, as Ubuntu
# 20.04 and 22.04 ship it), bookworm (`luajit` and OpenResty's `luajit2`),
# trixie, sid and experimental (OpenResty's luajit2 since trixie), each
# built with 64-bit references (GC64) and with 32-bit ones, by gcc and by
# clang, plus gcc at -O0 and -Os and a build against musl (as Alpine
# images are; it unwinds errors itself, LUAJIT_NO_UNWIND) of trixie's; and Debian's own binary packages of bullseye,
# trixie, sid and experimental as they ship, stripped.  The tests derive
# each build's offsets with no DWARF (tests/e2e/luajit_builds.sh) and
# profile them.
#
# Sources are the packages' upstream tarballs (.orig), fetched through apt
# with a private state directory and a sources list written from this
# machine's own mirror, so the system's apt configuration is not touched;
# sid and experimental are whatever they hold today, the stable suites
# are pinned.  Each build is kept, once made, in build/luajit-builds/:
#
#   NAME/luajit         stripped, as distributions ship it
#   NAME/luajit.debug   the same executable with its DWARF (the truth the
#                       derived offsets are held to)
#   NAME/libluajit.so   and .so.debug, for the builds listed with "so"
#   deb-SUITE/usr/...   Debian's binary packages, unpacked (no DWARF)
#   builds.txt          one line per build: NAME, its executable (or
#                       library), its DWARF file or "-", GC64 or not,
#                       what it is
#
# Quiet on success; a failure says what failed, with the end of its log,
# and exits non-zero.  `tests/luajit-builds.sh --list` prints builds.txt.
set -euo pipefail
cd "$(dirname "$0")/.."
. tests/debian-mirror.sh

OUT=$PWD/build/luajit-builds
APT=$OUT/apt
# NAME:PACKAGE:SUITE:PIN (PIN "-": the suite's current version)
SOURCES=(
	"bullseye:luajit:bullseye:2.1.0~beta3+dfsg-5.3"
	"bookworm:luajit:bookworm:2.1.0~beta3+git20220320+dfsg-4.1+deb12u1"
	"bookworm2:luajit2:bookworm:2.1-20230119-1"
	"trixie:luajit:trixie:2.1.0+openresty20250117-2"
	"sid:luajit:sid:-"
	"experimental:luajit:experimental:-"
)
# SOURCE:REFS:CC:OPT:KIND ("so": also the shared library)
EXTRA=(
	"trixie:gc64:gcc:-O0:"
	"trixie:gc64:gcc:-Os:"
	"trixie:gc64:musl-gcc:-O2:"
	"trixie:gc64:gcc:-O2:so"
	"bullseye:nogc64:gcc:-O2:so"
)
DEB_SUITES=(bullseye trixie sid experimental)

die() {
	echo "luajit-builds: $*" >&2
	exit 1
}

if [ "${1:-}" = --list ]; then
	cat "$OUT/builds.txt"
	exit 0
fi

mkdir -p "$OUT" "$APT/lists/partial" "$APT/cache/archives/partial"
exec 9>"$OUT/.lock"
flock 9

# apt with its own state: the suites above, deb and deb-src, from the
# mirror this machine's sources name (debian_mirror).
APTO=(-o "Dir::Etc::sourcelist=$APT/sources.list" -o Dir::Etc::sourceparts=-
      -o "Dir::State::Lists=$APT/lists" -o "Dir::Cache=$APT/cache"
      -o Dir::State::status=/var/lib/dpkg/status -o APT::Sandbox::User=root
      -o Acquire::Retries=3)
apt_update() {
	local m s
	[ -f "$APT/updated" ] && [ -n "$(find "$APT/updated" -mmin -720)" ] && return 0
	m=$(debian_mirror)
	: >"$APT/sources.list"
	for s in bullseye bookworm trixie sid experimental; do
		echo "deb $m $s main" >>"$APT/sources.list"
		echo "deb-src $m $s main" >>"$APT/sources.list"
	done
	apt-get "${APTO[@]}" update >"$APT/update.log" 2>&1 ||
		die "apt-get update failed, see $APT/update.log"
	touch "$APT/updated"
}

# Unpacks the upstream tarball of PACKAGE in SUITE (at PIN) into
# $OUT/src/NAME; prints the version.  The .orig tarball is all a build
# needs (and all some mirrors keep of an old source).
fetch_source() { # name package suite pin
	local name=$1 pkg=$2 suite=$3 pin=$4 dir=$OUT/src/$1 spec uri file hash
	if [ -f "$dir/.version" ] && [ -f "$dir/src/Makefile" ]; then
		cat "$dir/.version"
		return
	fi
	apt_update
	if [ "$pin" = - ]; then spec=$pkg/$suite; else spec=$pkg=$pin; fi
	read -r uri file _ hash < <(apt-get "${APTO[@]}" source --print-uris "$spec" 2>/dev/null |
		awk -F"'" '$2 ~ /\.orig\.tar\./ { split($3, a, " "); print $2, a[1], a[2], a[3] }') ||
		die "apt knows no source $spec"
	mkdir -p "$OUT/src"
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
	echo "${file%.orig.tar.*}" | sed 's/^[^_]*_//' >"$dir.tmp/.version"
	mv "$dir.tmp" "$dir"
	cat "$dir/.version"
}

# One build from a copy of its source; NAME/luajit and NAME/luajit.debug.
build_one() { # name source refs cc opt kind
	local name=$1 src=$OUT/src/$2 refs=$3 cc=$4 opt=$5 kind=$6
	local dest=$OUT/$name work=$OUT/work/$name log=$OUT/$name.log def want mode=static
	[ -x "$dest/luajit" ] && [ -f "$dest/luajit.debug" ] && return 0
	if [ "$refs" = gc64 ]; then def=-DLUAJIT_ENABLE_GC64; want=true
	else def=-DLUAJIT_DISABLE_GC64; want=false; fi
	[ "$kind" = so ] && mode=mixed
	# Debian's libgcc_eh (gcc 12) finds unwind tables with glibc's
	# _dl_find_object, which musl lacks: a musl build here unwinds Lua
	# errors itself (LUAJIT_NO_UNWIND, a C frame of 96 bytes, not 80),
	# where Alpine's libgcc lets it use the system's unwinder.
	[ "$cc" = musl-gcc ] && def="$def -DLUAJIT_NO_UNWIND"
	rm -rf "$work" "$dest"
	mkdir -p "$OUT/work" "$dest"
	cp -a "$src" "$work"
	{
		make -C "$work/src" -j2 CC="$cc" CCOPT="$opt -fomit-frame-pointer" \
			CCDEBUG=-g XCFLAGS="$def" BUILDMODE=$mode Q= E=@: &&
		cp "$work/src/luajit" "$dest/luajit.debug" &&
		strip --strip-all -o "$dest/luajit.tmp" "$dest/luajit.debug" &&
		if [ "$kind" = so ]; then
			cp "$work/src/libluajit.so" "$dest/libluajit.so.debug" &&
			strip --strip-unneeded -o "$dest/libluajit.so" "$dest/libluajit.so.debug"
		fi &&
		# It must run, with the references asked for, and compile.
		"$dest/luajit.tmp" -e "assert(require('ffi').abi('gc64') == $want)
			local s = 0 for i = 1, 1e5 do s = s + i % 7 end assert(s > 0)"
	} >"$log" 2>&1 || return 1
	mv "$dest/luajit.tmp" "$dest/luajit"
	rm -rf "$work"
}

# Debian's binary packages of SUITE, unpacked into deb-SUITE.
fetch_debs() { # suite
	local suite=$1 dir=$OUT/deb-$1 tmp
	[ -f "$dir/.version" ] && return 0
	apt_update
	tmp=$(mktemp -d "$OUT/debs.XXXXXX")
	(cd "$tmp" && apt-get "${APTO[@]}" download "luajit/$suite" "libluajit-5.1-2/$suite") \
		>"$OUT/deb-$suite.log" 2>&1 || { rm -rf "$tmp"; die "cannot download $suite's luajit, see $OUT/deb-$suite.log"; }
	rm -rf "$dir"
	mkdir -p "$dir"
	for f in "$tmp"/*.deb; do dpkg-deb -x "$f" "$dir"; done
	basename "$tmp"/luajit_*.deb .deb | cut -d_ -f2 >"$dir/.version"
	rm -rf "$tmp"
}

command -v clang >/dev/null || die "clang is missing: apt-get install clang"
command -v musl-gcc >/dev/null || die "musl-gcc is missing: apt-get install musl-tools"

declare -A version
jobs=()
for s in "${SOURCES[@]}"; do
	IFS=: read -r name pkg suite pin <<<"$s"
	version[$name]=$(fetch_source "$name" "$pkg" "$suite" "$pin") || exit 1
	for refs in gc64 nogc64; do
		for cc in gcc clang; do
			jobs+=("$name-$refs-$cc $name $refs $cc -O2 -")
		done
	done
done
for e in "${EXTRA[@]}"; do
	IFS=: read -r src refs cc opt kind <<<"$e"
	n=$src-$refs-$cc
	[ "$opt" = -O2 ] || n=$n$opt
	[ "$kind" = so ] && n=$n-so
	jobs+=("$n $src $refs $cc $opt ${kind:--}")
done
for suite in "${DEB_SUITES[@]}"; do fetch_debs "$suite"; done

# Two builds at a time (each make -j2 is mostly serial in buildvm).
failed=0
printf '%s\n' "${jobs[@]}" | (
	export -f build_one
	export OUT
	xargs -P 2 -L 1 bash -c 'build_one "$1" "$2" "$3" "$4" "$5" "$6" ||
		{ echo "luajit-builds: $1 failed; end of $OUT/$1.log:" >&2; tail -n 15 "$OUT/$1.log" >&2; exit 1; }' _
) || failed=1
rmdir "$OUT/work" 2>/dev/null || true
[ "$failed" -eq 0 ] || die "a build failed"

{
	for j in "${jobs[@]}"; do
		read -r name src refs cc opt kind <<<"$j"
		what="${version[$src]} $cc $opt"
		echo "$name $OUT/$name/luajit $OUT/$name/luajit.debug $refs $what"
		[ "$kind" = so ] &&
			echo "$name-lib $OUT/$name/libluajit.so $OUT/$name/libluajit.so.debug $refs $what shared"
	done
	for suite in "${DEB_SUITES[@]}"; do
		v=$(cat "$OUT/deb-$suite/.version")
		refs=gc64
		case $v in 2.1.0~beta3+dfsg*) refs=nogc64 ;; esac
		echo "deb-$suite $OUT/deb-$suite/usr/bin/luajit - $refs $v Debian $suite"
		for l in "$OUT/deb-$suite"/usr/lib/*/libluajit-5.1.so.2.*; do
			echo "deb-$suite-lib $l - $refs $v Debian $suite shared"
		done
	done
} >"$OUT/builds.txt.tmp"
mv "$OUT/builds.txt.tmp" "$OUT/builds.txt"

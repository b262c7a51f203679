#!/usr/bin/env bash
# tests/luajit-variants.sh - builds the LuaJIT executables that Debian does
# not ship but luaprof must walk: upstream LuaJIT 2.1 (Debian `luajit`) and
# OpenResty's luajit2 (Debian `luajit2`) with 32-bit references
# (-DLUAJIT_DISABLE_GC64).  The end-to-end tests call it before profiling
# them; record/luajit_layouts.c has their offsets.
#
# Sources come from `apt-get source` (deb-src is enabled first if needed),
# pinned to the versions the layout table was derived from, and are built
# as debian/rules does (`make amalg` with dpkg-buildflags' flags) so that
# the code matches Debian's apart from the GC64 switch.  BUILDMODE=static
# skips the shared library; the luajit executable has LuaJIT linked in
# statically either way, as Debian's has.  Outputs:
#
#   build/luajit-variants/{upstream,openresty}-nogc64/luajit
#       stripped as dh_strip does (no .symtab, .comment or .note)
#   build/luajit-variants/{upstream,openresty}-nogc64/luajit-unstripped
#       the same executable with its symbols and -g debug info
#
# Quiet on success; a variant whose two executables exist is not rebuilt.
# On failure, says what failed on stderr (with the end of the build log)
# and exits non-zero.
set -euo pipefail
cd "$(dirname "$0")/.."

OUT=$PWD/build/luajit-variants
SRC=$OUT/src
# name:package:version
VARIANTS=(
	"upstream:luajit:2.1.0~beta3+git20220320+dfsg-4.1+deb12u1"
	"openresty:luajit2:2.1-20230119-1"
)

die() {
	echo "luajit-variants: $*" >&2
	exit 1
}

# Sources are found through deb-src entries; Debian's deb822 file lists
# them as "Types: deb deb-src", a classic sources.list as deb-src lines.
enable_deb_src() {
	local f=/etc/apt/sources.list.d/debian.sources

	local list=/etc/apt/sources.list

	[ "$(id -u)" -eq 0 ] || die "deb-src is off, and enabling it needs root"
	if [ -f "$f" ] && grep -q '^Types: *deb *$' "$f"; then
		sed -i 's/^Types: *deb *$/Types: deb deb-src/' "$f"
	elif [ -f "$list" ] && grep -q '^deb ' "$list"; then
		sed -n 's/^deb /deb-src /p' "$list" \
			>/etc/apt/sources.list.d/luaprof-deb-src.list
	fi
	apt-get update -qq >"$OUT/apt-update.log" 2>&1 ||
		die "apt-get update failed, see $OUT/apt-update.log"
}

have_source() { # package
	apt-cache showsrc "$1" 2>/dev/null | grep -q '^Package:'
}

# Unpacks package's source into $SRC once; prints the tree's path.
fetch_source() { # package version
	local pkg=$1 ver=$2 stamp=$SRC/$1.dir log=$SRC/$1.log dir

	if [ -f "$stamp" ] && [ -d "$SRC/$(cat "$stamp")/src" ]; then
		echo "$SRC/$(cat "$stamp")"
		return
	fi
	command -v dpkg-source >/dev/null ||
		die "dpkg-source is missing: apt-get install dpkg-dev"
	if ! have_source "$pkg"; then
		enable_deb_src
		have_source "$pkg" || die "apt knows no source package $pkg"
	fi
	mkdir -p "$SRC"
	rm -rf "${SRC:?}/$pkg"-[0-9]*
	# The pinned version may have left the archive after a point release;
	# the newest one of the suite then stands in, and the tests validate
	# the table against it.
	if ! (cd "$SRC" && apt-get source -qq "$pkg=$ver") >"$log" 2>&1; then
		echo "luajit-variants: no $pkg $ver, using the current $pkg" >&2
		(cd "$SRC" && apt-get source -qq "$pkg") >>"$log" 2>&1 ||
			die "apt-get source $pkg failed, see $log"
	fi
	for dir in "$SRC/$pkg"-[0-9]*; do
		if [ -f "$dir/src/Makefile" ]; then
			basename "$dir" >"$stamp"
			echo "$dir"
			return
		fi
	done
	die "apt-get source $pkg left no LuaJIT tree in $SRC"
}

# Builds one variant from a copy of the unpacked source, so that the
# source stays clean for other variants.
build_variant() { # name source-tree
	local name=$1 tree=$2 dest=$OUT/$1-nogc64 work=$OUT/work/$1-nogc64
	local log=$OUT/$1-nogc64.log multiarch gnu_type

	multiarch=$(dpkg-architecture -qDEB_HOST_MULTIARCH) || return 1
	gnu_type=$(dpkg-architecture -qDEB_HOST_GNU_TYPE) || return 1

	rm -rf "$work"
	mkdir -p "$OUT/work" "$dest"
	cp -a "$tree" "$work"
	# set -e does not apply left of ||, hence the && chain.
	{
		# Debian's flags, exported the way dh does for debian/rules.
		eval "$(dpkg-buildflags --export=sh)" &&
		make -C "$work" amalg BUILDMODE=static PREFIX=/usr \
			MULTILIB="lib/$multiarch" CROSS="$gnu_type-" \
			Q= E=@: XCFLAGS=-DLUAJIT_DISABLE_GC64 &&
		cp "$work/src/luajit" "$dest/luajit-unstripped.tmp" &&
		strip --remove-section=.comment --remove-section=.note \
			-o "$dest/luajit.tmp" "$dest/luajit-unstripped.tmp" &&
		# It must run, and really be the non-GC64 VM.
		"$dest/luajit.tmp" -e 'assert(not require("ffi").abi("gc64"))'
	} >"$log" 2>&1 || return 1
	mv "$dest/luajit-unstripped.tmp" "$dest/luajit-unstripped"
	mv "$dest/luajit.tmp" "$dest/luajit"
	rm -rf "$work"
}

mkdir -p "$OUT"
exec 9>"$OUT/.lock"
flock 9

pids=()
names=()
for v in "${VARIANTS[@]}"; do
	IFS=: read -r name pkg ver <<<"$v"
	dest=$OUT/$name-nogc64
	[ -x "$dest/luajit" ] && [ -x "$dest/luajit-unstripped" ] && continue
	tree=$(fetch_source "$pkg" "$ver") || exit 1
	build_variant "$name" "$tree" &
	pids+=($!)
	names+=("$name")
done

failed=0
for i in "${!pids[@]}"; do
	if ! wait "${pids[$i]}"; then
		log=$OUT/${names[$i]}-nogc64.log
		echo "luajit-variants: ${names[$i]} failed; end of $log:" >&2
		tail -n 20 "$log" >&2
		failed=1
	fi
done
[ "$failed" -eq 0 ] || die "build failed"
rmdir "$OUT/work" 2>/dev/null || true
exit 0

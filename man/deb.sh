#!/bin/sh
# man/deb.sh BUILD VERSION - `make deb`: luaprof_VERSION_ARCH.deb in BUILD,
# made with Debian's own tools from what `make install` puts in a staging
# root (PREFIX=/usr): the binary, the man pages, bash completion, and a
# copyright file.  Its Depends are what dpkg-shlibdeps finds the binary
# needs, so that the package asks for this distribution's libbpf, libdw
# and capstone, whatever their package names.  Install it with
# `apt-get install ./BUILD/luaprof_VERSION_ARCH.deb` (tests/e2e/deb.sh does,
# in a fresh bookworm root).
set -eu
build=$(cd "$1" && pwd)
version=$2
arch=$(dpkg --print-architecture)
stage=$build/deb
rm -rf "$stage"
make --no-print-directory install DESTDIR="$stage" PREFIX=/usr >/dev/null
mkdir -p "$stage/DEBIAN" "$stage/usr/share/doc/luaprof"
printf 'luaprof %s\n\nA sampling profiler for LuaJIT programs (GPL-2.0 BPF programs).\n' \
	"$version" >"$stage/usr/share/doc/luaprof/copyright"
# dpkg-shlibdeps reads debian/control from the directory it runs in.
tmp=$(mktemp -d /tmp/luaprof-deb.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/debian"
printf 'Source: luaprof\n\nPackage: luaprof\nArchitecture: any\n' >"$tmp/debian/control"
depends=$(cd "$tmp" && dpkg-shlibdeps -O "$stage/usr/bin/luaprof" 2>/dev/null |
	sed -n 's/^shlibs:Depends=//p')
size=$(du -sk "$stage/usr" | cut -f1)
cat >"$stage/DEBIAN/control" <<CONTROL
Package: luaprof
Version: $version
Architecture: $arch
Maintainer: luaprof maintainers <luaprof@localhost>
Installed-Size: $size
Depends: $depends
Section: devel
Priority: optional
Description: sampling profiler for LuaJIT programs
 Samples running LuaJIT programs (OpenResty/nginx, Kong, rspamd,
 knot-resolver, plain luajit) with eBPF: mixed native, Lua and kernel
 stacks, on and off the CPU, without restarting them; reports as top,
 folded stacks, call graphs, flame graphs, pprof and speedscope.
CONTROL
dpkg-deb --root-owner-group --build "$stage" "$build/luaprof_${version}_$arch.deb" >/dev/null
echo "$build/luaprof_${version}_$arch.deb"

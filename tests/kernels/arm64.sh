# tests/kernels/arm64.sh - what the kernel matrix's arm64 lane needs on
# this x86_64 host besides the kernel, sourced by tests/kernels.sh (which
# defines CACHE, TMP, LOG and apt_opts/apt_update): the guest's root and
# its samples, and luaprof for arm64.  The host's / cannot serve as an
# arm64 guest's root, so the root is Debian's arm64 packages unpacked
# with dpkg-deb -x (no maintainer script runs, nothing is installed, the
# host's architectures are not changed), their dependency closure computed by apt in the lane's own apt
# state against an empty dpkg status.  It is built once into
# $CACHE/arm64-root and rebuilt when its package list changes.  The
# samples are this tree's C samples cross-built static (the root has no
# arm64 libc6-dev) into build/arm64/samples/.
#
#   arm64_root SUITE      builds $CACHE/arm64-root (once); 0 or 1
#   arm64_samples         builds build/arm64/samples/nofp; 0 or 1
#   arm64_luaprof         builds build/arm64/luaprof-static; 0 or 1

# What the smoke test runs: bash and the tools tests/lib.sh and
# tests/nginx.sh use, bpftool, curl and wrk, OpenResty's LuaJIT (luajit2,
# which lua-nginx-module prefers) and nginx with the Lua module.
# usr-is-merged stands for usrmerge, which would pull in perl.
ARM64_ROOT_PKGS="bash coreutils libc-bin grep sed mawk findutils util-linux mount procps
	diffutils iproute2 bpftool curl wrk busybox-static usr-is-merged
	luajit2 libluajit2-5.1-2 nginx-light libnginx-mod-http-lua"
# Upstream LuaJIT conflicts with luajit2 (the same paths): it goes to
# /opt/luajit-upstream in the root, as build/luajit-upstream on the host.
# Its executable has the VM linked in.
ARM64_UPSTREAM_PKGS="luajit libluajit-5.1-2 libluajit-5.1-common"
ARM64_ROOT=$CACHE/arm64-root

# arm64_unpack DIR DEST: unpacks every .deb in DIR into DEST.
arm64_unpack() {
	local deb
	for deb in "$1"/*.deb; do
		dpkg-deb -x "$deb" "$2" 2>>"$LOG" || return 1
	done
}

# arm64_fixups ROOT: what maintainer scripts would have made and the
# guest needs: the alternatives' links, root's account (nginx runs its
# workers as root), the mount points and an ld.so cache-less search.
arm64_fixups() {
	local r=$1
	[ -e "$r/usr/bin/awk" ] || ln -s mawk "$r/usr/bin/awk"
	[ -e "$r/bin/sh" ] || ln -s bash "$r/bin/sh"
	mkdir -p "$r/etc" "$r/proc" "$r/sys" "$r/dev" "$r/tmp" "$r/run" "$r/root" \
		"$r/var/log/nginx" "$r/var/lib/nginx" "$r/luaprof-results"
	chmod 1777 "$r/tmp"
	echo "root:x:0:0:root:/root:/bin/bash" >"$r/etc/passwd"
	echo "root:x:0:" >"$r/etc/group"
	printf '127.0.0.1 localhost\n' >"$r/etc/hosts"
}

arm64_root() {
	local suite=$1 dl=$TMP/arm64-root-dl want
	want=$(echo "$suite" $ARM64_ROOT_PKGS / $ARM64_UPSTREAM_PKGS | tr -s ' \t\n' ' ')
	[ "$(cat "$ARM64_ROOT/.packages" 2>/dev/null)" = "$want" ] && return 0
	apt_update "$suite" arm64
	mkdir -p "$dl/main/partial" "$dl/upstream" "$dl/dpkg"
	: >"$dl/dpkg/status"
	chmod -R 755 "$dl"
	if id _apt >/dev/null 2>&1; then chown -R _apt "$dl"; fi
	# The closure: what installing them on an empty arm64 system takes.
	# shellcheck disable=SC2046
	apt-get $(apt_opts "$suite" arm64) -o Dir::State::status="$dl/dpkg/status" \
		-o Dir::Cache::Archives="$dl/main" -o Debug::NoLocking=1 \
		install --download-only -y -q --no-install-recommends $ARM64_ROOT_PKGS \
		>>"$LOG" 2>&1 || return 1
	# shellcheck disable=SC2046
	(cd "$dl/upstream" && apt-get $(apt_opts "$suite" arm64) download $ARM64_UPSTREAM_PKGS) \
		>>"$LOG" 2>&1 || return 1
	rm -rf "$ARM64_ROOT.tmp"
	mkdir -p "$ARM64_ROOT.tmp/opt/luajit-upstream"
	arm64_unpack "$dl/main" "$ARM64_ROOT.tmp" &&
		arm64_unpack "$dl/upstream" "$ARM64_ROOT.tmp/opt/luajit-upstream" || return 1
	arm64_fixups "$ARM64_ROOT.tmp"
	echo "$want" >"$ARM64_ROOT.tmp/.packages"
	rm -rf "$dl" "$ARM64_ROOT"
	mv "$ARM64_ROOT.tmp" "$ARM64_ROOT"
}

# The cross compiler tests/deps.sh installs.
ARM64_CC=aarch64-linux-gnu-gcc

# arm64_luaprof: this tree's luaprof for arm64 (make ARCH=arm64: a static
# binary, so that the guest's root needs no libbpf); 0 or 1.
arm64_luaprof() {
	make --no-print-directory ARCH=arm64 -j2 build/arm64/luaprof-static >>"$LOG" 2>&1
}

# arm64_samples: nofp as the Makefile builds it for x86_64 (no frame
# pointers, .eh_frame the only way up), static.  Rebuilt when older than
# its source.
arm64_samples() {
	local out=build/arm64/samples/nofp
	[ "$out" -nt samples/nofp.c ] && return 0
	mkdir -p build/arm64/samples
	$ARM64_CC -static -O2 -g -fomit-frame-pointer -fno-inline -Wall -Wextra \
		-o "$out.tmp" samples/nofp.c -lpthread 2>>"$LOG" && mv "$out.tmp" "$out"
}

#!/usr/bin/env bash
# tests/deps.sh - installs what the end-to-end tests need beyond the build
# (`make deps`): the Debian packages for the Lua and nginx scenarios (and
# libc6-dbg, libc's DWARF, which self_contained.sh embeds in part; qemu and
# busybox for the kernel matrix; dwz for dwz.sh), the
# real applications of tests/e2e/app_*.sh (sysbench, knot-resolver with
# kdig, neovim, tarantool, python3-lupa, rspamd, pdns-recursor, dnsjit;
# redis-server, haproxy and the PUC
# Lua interpreters, which luaprof must say it does not walk), the
# consumers of the report's formats (golang-go for `go tool pprof`,
# chromium, and node with the npm packages speedscope and playwright-core
# in build/node_modules/, for views.sh), and upstream LuaJIT unpacked into
# build/luajit-upstream/ (it cannot be installed beside luajit2: the
# packages conflict).  Quick and silent when everything is present; apt's
# and npm's chatter goes to /tmp/luaprof-test-deps.log and is shown only
# on failure.  Needs root only when something is missing.
#
# Upstream LuaJIT, once unpacked:
#   build/luajit-upstream/usr/bin/luajit                       (the VM is
#       linked into the executable)
#   build/luajit-upstream/usr/lib/x86_64-linux-gnu/libluajit-5.1.so.2
#   build/luajit-upstream/usr/share/luajit-2.1.0-beta3/jit/    (jit.* modules,
#       from libluajit-5.1-common: `-jp`, `-jv` need these, not luajit2's, as
#       builtin numbering differs; run with
#       LUA_PATH="$PWD/build/luajit-upstream/usr/share/luajit-2.1.0-beta3/?.lua;;")
set -eu
cd "$(dirname "$0")/.."

# qemu-system-x86, busybox-static, cpio, xz-utils, zstd: the kernel matrix
# (tests/kernels.sh) boots Debian's kernels under qemu; qemu-system-arm
# its arm64 lane, and gcc-aarch64-linux-gnu builds that lane's arm64
# samples (static: the guest's root has no arm64 libc6-dev).  dwz: debug files
# as Debian's -dbgsym packages have them (tests/e2e/dwz.sh).  musl-tools:
# a LuaJIT built against musl (tests/luajit-builds.sh); debootstrap: a
# trixie root (tests/trixie-root.sh).  libc6-dev-arm64-cross: arm64
# LuaJITs with DWARF too (tests/luajit-arm64.sh).
PKGS="luajit2 nginx-light libnginx-mod-http-lua wrk curl libc6-dbg
	sysbench knot-resolver knot-dnsutils neovim tarantool python3-lupa rspamd
	redis-server haproxy lua5.1 lua5.3 golang-go chromium pdns-recursor dnsjit
	qemu-system-x86 qemu-system-arm gcc-aarch64-linux-gnu libc6-dev-arm64-cross
	busybox-static cpio xz-utils zstd dwz musl-tools debootstrap"
# Node.js as the machine has it, else Debian's.
command -v node >/dev/null && command -v npm >/dev/null || PKGS="$PKGS nodejs npm"
# The browser checks' npm packages, pinned: the real speedscope app, and
# playwright-core to drive Debian's Chromium (it downloads no browser).
NPM_PKGS="speedscope@1.25.0 playwright-core@1.65.1"
UPSTREAM_PKGS="luajit libluajit-5.1-2 libluajit-5.1-common"
UPSTREAM=build/luajit-upstream
LOG=/tmp/luaprof-test-deps.log

die() {
	[ -s "$LOG" ] && cat "$LOG" >&2
	echo "tests/deps.sh: $*" >&2
	exit 1
}

need_root() {
	[ "$(id -u)" -eq 0 ] || die "needs root to $1"
}

# The servers among PKGS (nginx, redis, haproxy, rspamd, knot-resolver) are
# for the tests, which start them on loopback in temp prefixes: Debian's
# packages would also start each as a system service, and enable it at
# boot.  While apt installs, a policy-rc.d that answers "no" (exit 101)
# keeps them from starting; after, where systemd runs, the units the
# install enabled are disabled again.  A workstation that runs `make test`
# is left with no new daemon.  A policy-rc.d that is there already is the
# machine's own (a container's) and is left as it is.
POLICY=/usr/sbin/policy-rc.d
policy_added= dl=
cleanup() {
	[ -z "$policy_added" ] || rm -f $POLICY
	policy_added=
	[ -z "$dl" ] || rm -rf "$dl"
}
trap cleanup EXIT

enabled_units() {
	[ -d /run/systemd/system ] || return 0
	systemctl list-unit-files --state=enabled --no-legend 2>/dev/null |
		awk '{ print $1 }' | sort
}

apt_install_quietly() {
	local before after new
	before=$(enabled_units)
	if [ ! -e $POLICY ]; then
		printf '#!/bin/sh\n# tests/deps.sh: no service starts while it installs\nexit 101\n' >$POLICY
		chmod 755 $POLICY
		policy_added=1
	fi
	# The lock timeout: two test runs installing at once wait, not fail.
	DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 \
		install -y -qq --no-install-recommends "$@" >>"$LOG" 2>&1 ||
		die "apt-get install $* failed"
	cleanup
	after=$(enabled_units)
	new=$(comm -13 <(echo "$before") <(echo "$after") | grep . || true)
	if [ -n "$new" ]; then
		echo "tests/deps.sh: disabling the services the install enabled:" $new
		systemctl disable --quiet $new >>"$LOG" 2>&1 || true
	fi
}

apt_updated=
apt_update() {
	[ -n "$apt_updated" ] && return 0
	apt-get -o DPkg::Lock::Timeout=600 update -qq >>"$LOG" 2>&1 ||
		die "apt-get update failed"
	apt_updated=1
}

: >"$LOG"

# Debian packages: install the missing ones.
missing=
for p in $PKGS; do
	st=$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true)
	case "$st" in *" installed") ;; *) missing="$missing $p" ;; esac
done
if [ -n "$missing" ]; then
	need_root "install$missing"
	echo "tests/deps.sh: installing$missing"
	apt_update
	apt_install_quietly $missing
fi

# npm packages, into build/node_modules (never global).
npm_missing=
for p in $NPM_PKGS; do
	name=${p%@*} version=${p##*@}
	grep -qs "\"version\": \"$version\"" build/node_modules/$name/package.json ||
		npm_missing="$npm_missing $p"
done
if [ -n "$npm_missing" ]; then
	echo "tests/deps.sh: npm install$npm_missing into build/node_modules"
	mkdir -p build
	PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 npm install --prefix build --no-save --no-audit \
		--no-fund --no-package-lock --loglevel=error $npm_missing >>"$LOG" 2>&1 ||
		die "npm install$npm_missing failed"
fi

# Upstream LuaJIT, unpacked (never installed).
if [ ! -x $UPSTREAM/usr/bin/luajit ] ||
   [ ! -f $UPSTREAM/usr/share/luajit-2.1.0-beta3/jit/vmdef.lua ]; then
	need_root "download upstream LuaJIT"
	echo "tests/deps.sh: unpacking upstream LuaJIT into $UPSTREAM"
	dl=$(mktemp -d /tmp/luaprof-luajit.XXXXXX) # (removed by cleanup)
	# apt's download sandbox user must be able to write there.
	chmod 755 "$dl"
	if id _apt >/dev/null 2>&1; then chown _apt "$dl"; fi
	if ! (cd "$dl" && apt-get download $UPSTREAM_PKGS) >>"$LOG" 2>&1; then
		apt_update
		(cd "$dl" && apt-get download $UPSTREAM_PKGS) >>"$LOG" 2>&1 ||
			die "apt-get download $UPSTREAM_PKGS failed"
	fi
	rm -rf $UPSTREAM.tmp
	mkdir -p $UPSTREAM.tmp
	for deb in "$dl"/*.deb; do
		dpkg -x "$deb" $UPSTREAM.tmp >>"$LOG" 2>&1 || die "dpkg -x $deb failed"
	done
	rm -rf $UPSTREAM
	mv $UPSTREAM.tmp $UPSTREAM
	$UPSTREAM/usr/bin/luajit -e 'assert(jit.version_num >= 20100)' ||
		die "$UPSTREAM/usr/bin/luajit does not run"
fi
rm -f "$LOG"

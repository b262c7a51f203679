#!/usr/bin/env bash
# tests/kernels.sh - the kernel matrix: luaprof on the kernels users run,
# not only on this machine's.  For each kernel of the matrix it takes
# Debian's own kernel package (apt-get download + dpkg-deb, never
# installed, /boot untouched; cached in build/kernels/), builds an
# initramfs of busybox-static and that kernel's virtio, 9p and overlay
# modules, and boots it under qemu with TCG (this machine's /dev/kvm runs
# only paravirtual guests).  The guest sees the host's / read-only over
# 9p under a tmpfs overlay (tests/kernels/init), runs the smoke subset of
# the end-to-end tests, tests/kernels/smoke.sh, with the binaries of this
# tree, and leaves its output on a second, writable 9p share.  This script
# prints the guest's "ok"/"FAIL" lines as "ok kernels/NAME: ..." for
# tests/run to count; a guest that does not finish within its timeout is
# killed and reported as a FAIL with the tail of its console.
#
#   tests/kernels.sh            every kernel of the matrix
#   tests/kernels.sh 6.1        one of them
#
# LUAPROF_KERNEL_TIMEOUT (seconds, default 420) bounds the CPU time each
# guest's emulator may take, and three times that its wall-clock time (a
# guest on a busy host gets a fraction of a CPU: at a load of 9 on this
# 2-core host, the 6.12 smoke test took over 360 s of wall-clock time and
# about 100 s of the emulator's CPU, where it takes 120 s idle);
# LUAPROF_KERNEL_KEEP=DIR keeps each guest's console, output and traces in
# DIR/NAME; LUAPROF_KERNEL_SCRIPT=FILE (a path in this tree) runs FILE in
# the guests instead of the smoke test, to look into something.
set -u
cd "$(dirname "$0")/.."

# The matrix: NAME, the Debian suite and meta-package whose kernel it
# boots, and what the guest runs.  A meta-package depends on the current
# build of its series (security updates move it), so the matrix follows
# what `apt-get install linux-image-amd64` gives a user today: bookworm's
# stock 6.1 and the 6.12 bookworm also carries must run everything;
# bullseye's 5.10 lacks what luaprof needs and must be refused, saying
# why (a suite other than this machine's is read through apt state of its
# own in build/kernels/apt-SUITE; /etc/apt is not touched).
MATRIX="
6.1   bookworm  linux-image-amd64       tests/kernels/smoke.sh
6.12  bookworm  linux-image-6.12-amd64  tests/kernels/smoke.sh
5.10  bullseye  linux-image-amd64       tests/kernels/refuse.sh
"
# The modules the guest loads, in this order; one missing from a package
# is built into that kernel (fscache is part of netfs since 6.4).
MODULES="virtio_ring virtio virtio_pci_modern_dev virtio_pci_legacy_dev virtio_pci
	 netfs fscache 9pnet 9pnet_virtio 9p overlay"
CACHE=$PWD/build/kernels
TIMEOUT=${LUAPROF_KERNEL_TIMEOUT:-420}
WALL_TIMEOUT=$((3 * TIMEOUT))
LOG=/tmp/luaprof-kernels.$$.log
TMP=$(mktemp -d /tmp/luaprof-kernels.XXXXXX)
QEMU_PID=
trap '[ -n "$QEMU_PID" ] && kill -9 "$QEMU_PID" 2>/dev/null; rm -rf "$TMP" "$LOG"' EXIT

say_fail() { echo "FAIL kernels/$1: $2"; }
# watch_guest PID: kills the emulator PID once it has taken TIMEOUT
# seconds of CPU or run WALL_TIMEOUT seconds; returns when it has exited.
watch_guest() {
	local pid=$1 start=$SECONDS cpu
	while kill -0 "$pid" 2>/dev/null; do
		# utime and stime, fields 14 and 15 of /proc/PID/stat, in ticks.
		cpu=$(awk -v hz="$(getconf CLK_TCK)" '{ sub(/^.*\) /, ""); print int(($12 + $13) / hz) }' \
			/proc/"$pid"/stat 2>/dev/null)
		if [ "${cpu:-0}" -ge "$TIMEOUT" ] || [ $((SECONDS - start)) -ge "$WALL_TIMEOUT" ]; then
			kill -9 "$pid" 2>/dev/null
			return
		fi
		sleep 2
	done
}

HOST_SUITE=$(. /etc/os-release && echo "$VERSION_CODENAME")

# apt_opts SUITE: apt's options for SUITE: none for this machine's own,
# else a sources list and package lists of its own under $CACHE.
apt_opts() {
	[ "$1" = "$HOST_SUITE" ] && return 0
	local d=$CACHE/apt-$1
	echo "-o Dir::Etc::SourceList=$d/sources.list -o Dir::Etc::SourceParts=/dev/null" \
	     "-o Dir::State::Lists=$d/lists -o Dir::Cache::pkgcache=$d/pkgcache.bin" \
	     "-o Dir::Cache::srcpkgcache=$d/srcpkgcache.bin"
}

# apt_update SUITE: once per run.
apt_updated=
apt_update() {
	case " $apt_updated " in *" $1 "*) return 0 ;; esac
	apt_updated="$apt_updated $1"
	if [ "$1" != "$HOST_SUITE" ]; then
		mkdir -p "$CACHE/apt-$1/lists/partial"
		echo "deb http://deb.debian.org/debian $1 main" >"$CACHE/apt-$1/sources.list"
	fi
	# shellcheck disable=SC2046
	apt-get $(apt_opts "$1") -o DPkg::Lock::Timeout=600 update -qq >>"$LOG" 2>&1
}

# resolve_package SUITE META: the kernel package META depends on in SUITE.
resolve_package() {
	local pkg try
	for try in cached updated; do
		# shellcheck disable=SC2046
		pkg=$(apt-cache $(apt_opts "$1") depends "$2" 2>/dev/null |
			awk '$1 == "Depends:" && $2 ~ /^linux-image-/ { print $2; exit }')
		[ -n "$pkg" ] && break
		[ $try = cached ] && apt_update "$1"
	done
	[ -n "$pkg" ] && echo "$pkg"
}

# fetch_kernel SUITE PKG: unpacks vmlinuz, config and the guest's modules
# of PKG into $CACHE/PKG (once).
fetch_kernel() {
	local suite=$1 pkg=$2 dir=$CACHE/$2 dl deb m f
	[ -f "$dir/vmlinuz" ] && return 0
	dl=$TMP/dl-$pkg
	mkdir -p "$dl"
	chmod 755 "$dl"
	if id _apt >/dev/null 2>&1; then chown _apt "$dl"; fi
	# shellcheck disable=SC2046
	if ! (cd "$dl" && apt-get $(apt_opts "$suite") download "$pkg") >>"$LOG" 2>&1; then
		apt_update "$suite"
		# shellcheck disable=SC2046
		(cd "$dl" && apt-get $(apt_opts "$suite") download "$pkg") >>"$LOG" 2>&1 || return 1
	fi
	deb=$(ls "$dl"/*.deb) || return 1
	mkdir -p "$dl/x"
	# Only the members needed: the image, its config and the modules.
	dpkg-deb --fsys-tarfile "$deb" | tar -t 2>>"$LOG" | grep -E \
		'^\./boot/(vmlinuz|config)-|/kernel/(drivers/virtio|net/9p|fs/(9p|netfs|fscache|overlayfs))/[^/]+$' \
		>"$dl/members" || return 1
	dpkg-deb --fsys-tarfile "$deb" | tar -x -C "$dl/x" -T "$dl/members" 2>>"$LOG" || return 1
	rm -rf "$dir.tmp"
	mkdir -p "$dir.tmp/modules"
	cp "$dl"/x/boot/vmlinuz-* "$dir.tmp/vmlinuz" || return 1
	cp "$dl"/x/boot/config-* "$dir.tmp/config" || return 1
	local i=10
	for m in $MODULES; do
		f=$(find "$dl/x/lib/modules" -name "$m.ko" -o -name "$m.ko.xz" -o -name "$m.ko.zst" | head -1)
		i=$((i + 1))
		case "$f" in
		"") continue ;;
		*.xz) xz -dc "$f" >"$dir.tmp/modules/$i-$m.ko" ;;
		*.zst) zstd -qdc "$f" >"$dir.tmp/modules/$i-$m.ko" ;;
		*) cp "$f" "$dir.tmp/modules/$i-$m.ko" ;;
		esac || return 1
	done
	vmlinux_h "$dir.tmp/vmlinuz" "$dl/vmlinux" >"$dir.tmp/vmlinux.h" || return 1
	rm -rf "$dl" "$dir"
	mv "$dir.tmp" "$dir"
}

# vmlinux_h VMLINUZ SCRATCH: the kernel's types as C, as the Makefile makes
# build/vmlinux.h on a machine running that kernel: from the BTF of the
# vmlinux compressed inside VMLINUZ (xz, zstd or gzip, found by its magic).
vmlinux_h() {
	local off
	off=$(python3 -c '
import sys
d = open(sys.argv[1], "rb").read()
for m in (b"\xfd7zXZ\x00", b"\x28\xb5\x2f\xfd", b"\x1f\x8b\x08\x00"):
    i = d.find(m)
    if i >= 0:
        print(i, m[0])
        break' "$1") || return 1
	set -- "$1" "$2" ${off}
	case "$4" in
	253) tail -c +$(($3 + 1)) "$1" | xz -dcq --single-stream >"$2" 2>/dev/null ;;
	40) tail -c +$(($3 + 1)) "$1" | zstd -dcq >"$2" 2>/dev/null ;;
	31) tail -c +$(($3 + 1)) "$1" | gzip -dcq >"$2" 2>/dev/null ;;
	*) return 1 ;;
	esac
	bpftool btf dump file "$2" format c 2>>"$LOG"
}

# compiles NAME PKG: the BPF code builds against PKG's own types, as it
# must on a machine running that kernel (build/vmlinux.h is made from the
# running kernel's BTF: a field only newer kernels have breaks the build).
compiles() {
	if clang -O2 -g -Wall -target bpf -D__TARGET_ARCH_x86 -I. -I"$CACHE/$2" \
		-c bpf/sampler.bpf.c -o "$TMP/sampler-$1.bpf.o" 2>"$TMP/clang-$1.err"; then
		echo "ok kernels/$1: the BPF code compiles against this kernel's vmlinux.h"
	else
		say_fail "$1" "the BPF code does not compile against this kernel's vmlinux.h:"
		grep error: "$TMP/clang-$1.err" | head -n 5 | sed 's/^/  | /'
	fi
}

# make_initramfs PKG OUT: busybox, tests/kernels/init and PKG's modules.
make_initramfs() {
	local root=$TMP/initramfs-$1
	rm -rf "$root"
	mkdir -p "$root/bin" "$root/modules"
	cp /bin/busybox "$root/bin/busybox" &&
	cp tests/kernels/init "$root/init" &&
	cp "$CACHE/$1"/modules/*.ko "$root/modules/" &&
	(cd "$root" && find . | cpio -o -H newc --quiet) | gzip -1 >"$2"
}

# boot NAME PKG SCRIPT: runs SCRIPT in the guest; prints its lines,
# prefixed.
boot() {
	local name=$1 pkg=$2 script=$3 res=$TMP/res-$1 rc n
	mkdir -p "$res"
	make_initramfs "$pkg" "$TMP/initramfs-$name.gz" ||
		{ say_fail "$name" "cannot build the initramfs"; return; }
	# no_timer_check: under load, TCG runs the guest's IO-APIC timer
	# check too slowly and the kernel panics at boot ("IO-APIC + timer
	# doesn't work"), before any test.  thread=single: one host thread
	# runs both CPUs in turn.  With a thread each (thread=multi), 6.12
	# died once in some thirty boots ("Oops: int3" in sched_clock_cpu,
	# 1.9 s in, before any test): the kernel patches its code with int3
	# (text_poke_bp: static keys, which boot flips by the hundred and a
	# BPF tracepoint's attach flips too) while the other CPU runs it, and
	# that CPU's thread still ran the int3 after the patch was done.  One
	# thread sees every code write before the other CPU runs again; the
	# smoke test takes some 120 s in a 6.12 guest, not 88.
	qemu-system-x86_64 -nodefaults -no-reboot -display none \
		-accel tcg,thread=single -cpu max -smp 2 -m 4G \
		-kernel "$CACHE/$pkg/vmlinuz" -initrd "$TMP/initramfs-$name.gz" \
		-append "console=ttyS0 panic=-1 loglevel=4 tsc=reliable no_timer_check LUAPROF_DIR=$PWD LUAPROF_GUEST_TIMEOUT=$((WALL_TIMEOUT - 60)) LUAPROF_KEEP=${LUAPROF_KERNEL_KEEP:+1} LUAPROF_SCRIPT=${LUAPROF_KERNEL_SCRIPT:-$script}" \
		-serial "file:$res/console.log" \
		-virtfs local,path=/,mount_tag=hostroot,security_model=none,readonly=on,multidevs=remap \
		-virtfs "local,path=$res,mount_tag=results,security_model=none" \
		</dev/null >>"$LOG" 2>&1 &
	QEMU_PID=$!
	watch_guest $QEMU_PID
	wait $QEMU_PID
	rc=$?
	QEMU_PID=
	if [ -f "$res/out" ]; then
		sed -E "s#^(ok|FAIL) [^:]*: #\\1 kernels/$name: #; /^(ok|FAIL) /!s/^/  /" "$res/out"
	fi
	n=$(grep -cE '^(ok|FAIL) ' "$res/out" 2>/dev/null)
	if [ -n "${LUAPROF_KERNEL_KEEP:-}" ]; then
		mkdir -p "$LUAPROF_KERNEL_KEEP" && rm -rf "${LUAPROF_KERNEL_KEEP:?}/$name" &&
			cp -r "$res" "$LUAPROF_KERNEL_KEEP/$name"
	fi
	if [ ! -f "$res/done" ]; then
		if [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then
			say_fail "$name" "the guest did not finish in ${TIMEOUT}s of CPU or ${WALL_TIMEOUT}s (killed); its console ends:"
		else
			say_fail "$name" "the guest stopped before the end (qemu exited $rc); its console ends:"
		fi
		tail -n 25 "$res/console.log" 2>/dev/null | sed 's/^/  | /'
	elif ! grep -qx "exit 0" "$res/done"; then
		# 124: the guest's own timeout cut the script short, after the
		# checks above (which passed, or said FAIL themselves).
		say_fail "$name" "the smoke script did not run to its end ($(head -c 40 "$res/done")); its console ends:"
		tail -n 25 "$res/console.log" 2>/dev/null | sed 's/^/  | /'
	elif [ "${n:-0}" -eq 0 ]; then
		say_fail "$name" "the guest ran no check; its console ends:"
		tail -n 25 "$res/console.log" 2>/dev/null | sed 's/^/  | /'
	fi
}

# The guests run this tree's binaries and the tests' dependencies, from
# the host's disk: both must be there first.
[ -x build/luaprof ] && [ -x build/samples/nofp ] ||
	{ say_fail all "build/luaprof and the samples are not built (make all)"; exit 1; }
tests/deps.sh || { say_fail all "test dependencies (tests/deps.sh)"; exit 1; }

want=("$@")
while read -r name suite meta script; do
	[ -n "$name" ] || continue
	if [ ${#want[@]} -gt 0 ] && [[ " ${want[*]} " != *" $name "* ]]; then
		continue
	fi
	if ! pkg=$(resolve_package "$suite" "$meta"); then
		# Only a suite older than this machine's may leave the mirror;
		# say so, but this one is not what users run.
		if [ "$suite" != "$HOST_SUITE" ]; then
			echo "  kernel $name: $suite's $meta is not on deb.debian.org any more: not tested"
			continue
		fi
		say_fail "$name" "apt knows no kernel for $meta in $suite"
		continue
	fi
	fetch_kernel "$suite" "$pkg" ||
		{ say_fail "$name" "cannot fetch $pkg:"; tail -n 5 "$LOG" | sed 's/^/  /'; continue; }
	echo "  kernel $name: $pkg ($suite)"
	[ "$script" = tests/kernels/smoke.sh ] && compiles "$name" "$pkg"
	boot "$name" "$pkg" "$script"
done <<<"$MATRIX"
# Failures are FAIL lines, counted by tests/run.
exit 0

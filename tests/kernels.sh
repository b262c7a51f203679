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
# tree, and leaves its output on a second, writable 9p share.  The arm64
# lane boots Debian's arm64 kernel under qemu-system-aarch64 instead: its
# root is Debian's arm64 packages unpacked (tests/kernels/arm64.sh), this
# tree a third 9p share at the same path, and it runs
# tests/kernels/smoke_arm64.sh with the cross-built luaprof; the report of
# each trace it brings back is read again here, on x86_64, and must be the
# same.  This script prints the guest's "ok"/"FAIL" lines as "ok
# kernels/NAME: ..." for tests/run to count, and what each guest took; a
# guest that does not finish within its timeout is killed and reported as
# a FAIL with the tail of its console.
#
#   tests/kernels.sh            every kernel of the matrix
#   tests/kernels.sh 6.1        one of them
#   tests/kernels.sh arm64      the arm64 lane
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

# The matrix: NAME, the Debian suite, architecture and meta-package whose
# kernel it boots, and what the guest runs.  A meta-package depends on the
# current build of its series (security updates move it), so the matrix
# follows what `apt-get install linux-image-amd64` gives a user today:
# bookworm's stock 6.1 and the 6.12 bookworm also carries must run
# everything; bullseye's 5.10 lacks what luaprof needs and must be
# refused, saying why (a suite other than this machine's is read through
# apt state of its own in build/kernels/apt-SUITE; /etc/apt is not
# touched).  The arm64 lane runs bookworm's arm64 kernel (apt state of
# its own in build/kernels/apt-bookworm-arm64, the host's architectures
# untouched).
MATRIX="
6.1   bookworm  amd64  linux-image-amd64       tests/kernels/smoke.sh
6.12  bookworm  amd64  linux-image-6.12-amd64  tests/kernels/smoke.sh
5.10  bullseye  amd64  linux-image-amd64       tests/kernels/refuse.sh
arm64 bookworm  arm64  linux-image-arm64       tests/kernels/smoke_arm64.sh
"
# The modules the guest loads, in this order; one missing from a package
# is built into that kernel (fscache is part of netfs since 6.4; arm64's
# virtio and virtio_pci are built in).
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
HOST_ARCH=$(dpkg --print-architecture)

# apt_dir SUITE ARCH: the directory of apt's own state for SUITE's ARCH
# packages; nothing for this machine's own.
apt_dir() {
	[ "$1" = "$HOST_SUITE" ] && [ "$2" = "$HOST_ARCH" ] && return 0
	if [ "$2" = "$HOST_ARCH" ]; then echo "$CACHE/apt-$1"; else echo "$CACHE/apt-$1-$2"; fi
}

# apt_opts SUITE ARCH: apt's options for SUITE's ARCH packages: none for
# this machine's own, else a sources list and package lists of its own
# under $CACHE, and for another architecture, that one alone (and none of
# this machine's pins).
apt_opts() {
	local d
	d=$(apt_dir "$1" "$2")
	[ -n "$d" ] || return 0
	echo "-o Dir::Etc::SourceList=$d/sources.list -o Dir::Etc::SourceParts=/dev/null" \
	     "-o Dir::State::Lists=$d/lists -o Dir::Cache::pkgcache=$d/pkgcache.bin" \
	     "-o Dir::Cache::srcpkgcache=$d/srcpkgcache.bin"
	[ "$2" = "$HOST_ARCH" ] && return 0
	echo "-o APT::Architecture=$2 -o APT::Architectures::=$2" \
	     "-o Dir::Etc::Preferences=$d/preferences -o Dir::Etc::PreferencesParts=$d/preferences.d"
}

# apt_sources SUITE ARCH: the sources list of apt's own state.  Another
# architecture of this machine's suite follows its updates and security
# updates, as this machine's apt does.
apt_sources() {
	if [ "$2" = "$HOST_ARCH" ]; then
		echo "deb http://deb.debian.org/debian $1 main"
		return
	fi
	local o="[arch=$2 signed-by=/usr/share/keyrings/debian-archive-keyring.gpg]"
	echo "deb $o http://deb.debian.org/debian $1 main"
	echo "deb $o http://deb.debian.org/debian $1-updates main"
	echo "deb $o http://deb.debian.org/debian-security $1-security main"
}

# apt_update SUITE ARCH: once per run.
apt_updated=
apt_update() {
	local d
	case " $apt_updated " in *" $1/$2 "*) return 0 ;; esac
	apt_updated="$apt_updated $1/$2"
	d=$(apt_dir "$1" "$2")
	if [ -n "$d" ]; then
		mkdir -p "$d/lists/partial" "$d/preferences.d"
		apt_sources "$1" "$2" >"$d/sources.list"
	fi
	# shellcheck disable=SC2046
	apt-get $(apt_opts "$1" "$2") -o DPkg::Lock::Timeout=600 update -qq >>"$LOG" 2>&1
}

# resolve_package SUITE ARCH META: the kernel package META depends on.
resolve_package() {
	local pkg try
	for try in cached updated; do
		# shellcheck disable=SC2046
		pkg=$(apt-cache $(apt_opts "$1" "$2") depends "$3" 2>/dev/null |
			awk '$1 == "Depends:" && $2 ~ /^linux-image-/ { print $2; exit }')
		[ -n "$pkg" ] && break
		[ $try = cached ] && apt_update "$1" "$2"
	done
	[ -n "$pkg" ] && echo "$pkg"
}

# fetch_kernel SUITE ARCH PKG: unpacks vmlinuz, config and the guest's
# modules of PKG into $CACHE/PKG (once).
fetch_kernel() {
	local suite=$1 arch=$2 pkg=$3 dir=$CACHE/$3 dl deb m f
	[ -f "$dir/vmlinuz" ] && return 0
	dl=$TMP/dl-$pkg
	mkdir -p "$dl"
	chmod 755 "$dl"
	if id _apt >/dev/null 2>&1; then chown _apt "$dl"; fi
	# shellcheck disable=SC2046
	if ! (cd "$dl" && apt-get $(apt_opts "$suite" "$arch") download "$pkg") >>"$LOG" 2>&1; then
		apt_update "$suite" "$arch"
		# shellcheck disable=SC2046
		(cd "$dl" && apt-get $(apt_opts "$suite" "$arch") download "$pkg") >>"$LOG" 2>&1 || return 1
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
# vmlinux compressed inside VMLINUZ (xz, zstd or gzip, found by its magic),
# or of an arm64 Image, which is not compressed and not ELF ("ARM\x64" at
# 56): its BTF is cut out of it, where the BTF magic starts a header
# whose lengths add up (byte for byte the guest's /sys/kernel/btf/vmlinux).
vmlinux_h() {
	local off
	off=$(python3 -c '
import struct, sys
d = open(sys.argv[1], "rb").read()
if d[56:60] == b"ARM\x64":
    i = d.find(b"\x9f\xeb\x01\x00")
    while i >= 0:
        hl, to, tl, so, sl = struct.unpack_from("<5I", d, i + 4)
        if hl == 24 and to == 0 and so == tl and sl > 0:
            open(sys.argv[2], "wb").write(d[i:i + hl + so + sl])
            print(0, "btf")
            break
        i = d.find(b"\x9f\xeb\x01\x00", i + 1)
    sys.exit(0)
for m in (b"\xfd7zXZ\x00", b"\x28\xb5\x2f\xfd", b"\x1f\x8b\x08\x00"):
    i = d.find(m)
    if i >= 0:
        print(i, m[0])
        break' "$1" "$2") || return 1
	set -- "$1" "$2" ${off}
	case "$4" in
	btf) ;;
	253) tail -c +$(($3 + 1)) "$1" | xz -dcq --single-stream >"$2" 2>/dev/null ;;
	40) tail -c +$(($3 + 1)) "$1" | zstd -dcq >"$2" 2>/dev/null ;;
	31) tail -c +$(($3 + 1)) "$1" | gzip -dcq >"$2" 2>/dev/null ;;
	*) return 1 ;;
	esac
	bpftool btf dump file "$2" format c 2>>"$LOG"
}

# compiles NAME PKG ARCH: the BPF code builds against PKG's own types, as
# it must on a machine running that kernel (build/vmlinux.h is made from
# the running kernel's BTF: a field only newer kernels have breaks the
# build), for ARCH's registers.
compiles() {
	local target=x86
	[ "$3" = arm64 ] && target=arm64
	if clang -O2 -g -Wall -target bpf -D__TARGET_ARCH_$target -I. -I"$CACHE/$2" \
		-c bpf/sampler.bpf.c -o "$TMP/sampler-$1.bpf.o" 2>"$TMP/clang-$1.err"; then
		echo "ok kernels/$1: the BPF code compiles against this kernel's vmlinux.h"
	else
		say_fail "$1" "the BPF code does not compile against this kernel's vmlinux.h:"
		grep error: "$TMP/clang-$1.err" | head -n 5 | sed 's/^/  | /'
	fi
}

# make_initramfs PKG OUT BUSYBOX: BUSYBOX (static, of the guest's
# architecture), tests/kernels/init and PKG's modules.
make_initramfs() {
	local root=$TMP/initramfs-$1
	rm -rf "$root"
	mkdir -p "$root/bin" "$root/modules"
	cp "$3" "$root/bin/busybox" &&
	cp tests/kernels/init "$root/init" &&
	cp "$CACHE/$1"/modules/*.ko "$root/modules/" &&
	(cd "$root" && find . | cpio -o -H newc --quiet) | gzip -1 >"$2"
}

# qemu_x86 PKG INITRAMFS APPEND RES: the x86_64 guest; / is the host's.
# (Run in the background: exec makes $! the emulator's pid.)
qemu_x86() {
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
	exec qemu-system-x86_64 -nodefaults -no-reboot -display none \
		-accel tcg,thread=single -cpu max -smp 2 -m 4G \
		-kernel "$CACHE/$1/vmlinuz" -initrd "$2" \
		-append "console=ttyS0 panic=-1 loglevel=4 tsc=reliable no_timer_check $3" \
		-serial "file:$4/console.log" \
		-virtfs local,path=/,mount_tag=hostroot,security_model=none,readonly=on,multidevs=remap \
		-virtfs "local,path=$4,mount_tag=results,security_model=none"
}

# qemu_arm64 PKG INITRAMFS APPEND RES: the arm64 guest; / is the arm64
# root, this tree is mounted at its own path (LUAPROF_TREE=1).
# pauth-impdef=on: the architected pointer-authentication algorithm
# (QARMA) is very slow to emulate, and the kernel signs every return.
# thread=single, as for x86_64: the smoke script runs one thing at a time,
# and on this busy 2-core host a thread per CPU cost more and finished no
# sooner (the script's checks before luaprof: 93 s and 73 s of the
# emulator's CPU at a load of 7, against 73 s and 54 s with one thread at
# 7 to 9); so the CPU bound means the same as for the x86_64 guests.
qemu_arm64() {
	exec qemu-system-aarch64 -nodefaults -no-reboot -display none \
		-M virt -accel tcg,thread=single -cpu max,pauth-impdef=on -smp 2 -m 2G \
		-kernel "$CACHE/$1/vmlinuz" -initrd "$2" \
		-append "console=ttyAMA0 panic=-1 loglevel=4 LUAPROF_TREE=1 $3" \
		-serial "file:$4/console.log" \
		-virtfs "local,path=$ARM64_ROOT,mount_tag=hostroot,security_model=none,readonly=on,multidevs=remap" \
		-virtfs "local,path=$PWD,mount_tag=tree,security_model=none,readonly=on,multidevs=remap" \
		-virtfs "local,path=$4,mount_tag=results,security_model=none"
}

# children_cpu: the CPU time, in seconds, of the script's children that
# have exited and been waited for (fields 16 and 17 of /proc/PID/stat).
children_cpu() {
	awk -v hz="$(getconf CLK_TCK)" '{ sub(/^.*\) /, ""); printf "%.1f", ($14 + $15) / hz }' \
		/proc/$$/stat
}

# boot NAME PKG SCRIPT ARCH: runs SCRIPT in the guest; prints its lines,
# prefixed, and what the guest took.
boot() {
	local name=$1 pkg=$2 script=$3 arch=$4 res=$TMP/res-$1 rc n busybox=/bin/busybox
	local append cpu0 wall0 load0
	mkdir -p "$res"
	[ "$arch" = arm64 ] && busybox=$ARM64_ROOT/bin/busybox
	make_initramfs "$pkg" "$TMP/initramfs-$name.gz" "$busybox" ||
		{ say_fail "$name" "cannot build the initramfs"; return; }
	append="LUAPROF_DIR=$PWD LUAPROF_GUEST_TIMEOUT=$((WALL_TIMEOUT - 60)) LUAPROF_KEEP=${LUAPROF_KERNEL_KEEP:+1} LUAPROF_SCRIPT=${LUAPROF_KERNEL_SCRIPT:-$script}"
	cpu0=$(children_cpu) wall0=$SECONDS load0=$(cut -d' ' -f1 /proc/loadavg)
	local qemu=qemu_x86
	[ "$arch" = arm64 ] && qemu=qemu_arm64
	$qemu "$pkg" "$TMP/initramfs-$name.gz" "$append" "$res" </dev/null >>"$LOG" 2>&1 &
	QEMU_PID=$!
	watch_guest $QEMU_PID
	wait $QEMU_PID
	rc=$?
	QEMU_PID=
	echo "  kernel $name: the guest ran $((SECONDS - wall0)) s, the emulator took" \
		"$(awk -v a="$cpu0" -v b="$(children_cpu)" 'BEGIN { printf "%.0f", b - a }') s of CPU;" \
		"host load $load0 before, $(cut -d' ' -f1 /proc/loadavg) after"
	if [ -f "$res/out" ]; then
		sed -E "s#^(ok|FAIL) [^:]*: #\\1 kernels/$name: #; /^(ok|FAIL) /!s/^/  /" "$res/out"
	fi
	n=$(grep -cE '^(ok|FAIL) ' "$res/out" 2>/dev/null)
	[ "$arch" != "$HOST_ARCH" ] && [ -f "$res/done" ] && same_reports "$name" "$res"
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

# same_reports NAME RES: a trace recorded on another architecture reports
# the same here: each RES/cmp/T.lp the guest brought back, with its own
# `luaprof report` (RES/cmp/T.top) and folded stacks (RES/cmp/T.folded),
# both read there as T.lp in that directory, is read again by this tree's
# build/luaprof.  No trace is a failure: the guest's smoke script brings
# them back whenever it records.
same_reports() {
	local name=$1 luaprof=$PWD/build/luaprof lp t v
	if ! ls "$2"/cmp/*.lp >/dev/null 2>&1; then
		say_fail "$name" "no trace came back to read on $HOST_ARCH"
		return
	fi
	for lp in "$2"/cmp/*.lp; do
		t=${lp%.lp}
		for v in top folded; do
			if [ "$v" = top ]; then
				(cd "$2/cmp" && $luaprof report "${lp##*/}") >"$t.host-$v" 2>"$t.host-$v.err"
			else
				(cd "$2/cmp" && $luaprof report --format folded "${lp##*/}") \
					>"$t.host-$v" 2>"$t.host-$v.err"
			fi
			if [ -s "$t.$v" ] && cmp -s "$t.$v" "$t.host-$v"; then
				echo "ok kernels/$name: ${t##*/}'s report ($v) read on $HOST_ARCH is the guest's"
			else
				say_fail "$name" "${t##*/}'s report ($v) read on $HOST_ARCH differs from the guest's ($(wc -l <"$t.$v" 2>/dev/null) lines there):"
				diff "$t.$v" "$t.host-$v" 2>&1 | head -n 10 | sed 's/^/  | /'
			fi
		done
	done
}

# The guests run this tree's binaries and the tests' dependencies, from
# the host's disk: both must be there first.
[ -x build/luaprof ] && [ -x build/samples/nofp ] ||
	{ say_fail all "build/luaprof and the samples are not built (make all)"; exit 1; }
tests/deps.sh || { say_fail all "test dependencies (tests/deps.sh)"; exit 1; }
. tests/kernels/arm64.sh

want=("$@")
while read -r name suite arch meta script; do
	[ -n "$name" ] || continue
	if [ ${#want[@]} -gt 0 ] && [[ " ${want[*]} " != *" $name "* ]]; then
		continue
	fi
	if ! pkg=$(resolve_package "$suite" "$arch" "$meta"); then
		# Only a suite older than this machine's may leave the mirror;
		# say so, but this one is not what users run.
		if [ "$suite" != "$HOST_SUITE" ]; then
			echo "  kernel $name: $suite's $meta is not on deb.debian.org any more: not tested"
			continue
		fi
		say_fail "$name" "apt knows no kernel for $meta in $suite"
		continue
	fi
	fetch_kernel "$suite" "$arch" "$pkg" ||
		{ say_fail "$name" "cannot fetch $pkg:"; tail -n 5 "$LOG" | sed 's/^/  /'; continue; }
	if [ "$arch" = arm64 ]; then
		arm64_root "$suite" ||
			{ say_fail "$name" "cannot build the arm64 root:"; tail -n 5 "$LOG" | sed 's/^/  /'; continue; }
		# Without it the guest still runs what needs no sample.
		arm64_samples ||
			{ say_fail "$name" "cannot cross-build build/arm64/samples/nofp:"; tail -n 5 "$LOG" | sed 's/^/  /'; }
		arm64_luaprof ||
			{ say_fail "$name" "cannot cross-build build/arm64/luaprof-static:"; tail -n 5 "$LOG" | sed 's/^/  /'; }
	fi
	echo "  kernel $name: $pkg ($suite, $arch)"
	case "$script" in tests/kernels/smoke*.sh) compiles "$name" "$pkg" "$arch" ;; esac
	boot "$name" "$pkg" "$script" "$arch"
done <<<"$MATRIX"
# Failures are FAIL lines, counted by tests/run.
exit 0

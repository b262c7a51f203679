#!/usr/bin/env bash
# mk/arm64-vmlinux.sh - the arm64 kernel's types as C (vmlinux.h), for the
# BPF objects of `make ARCH=arm64`: an x86_64 host has no arm64
# /sys/kernel/btf/vmlinux to dump.  They come from the BTF inside the
# Image of the host suite's stock arm64 kernel (linux-image-arm64's
# current build, through private apt state: mk/arm64-apt.sh), the same
# bytes an arm64 host running it shows as /sys/kernel/btf/vmlinux.
#
#   mk/arm64-vmlinux.sh OUT
#
# An arm64 vmlinuz is no ELF file that bpftool could read: it is the raw
# Image (bookworm's as it is, "ARMd" at byte 56; other builds gzip it).
# Its .BTF section is found by its header (below) and cut
# out; bpftool must parse the cut, and it must hold the arm64 register
# set, or nothing is written.  The cut and the package's name are kept in
# OUT's directory, kernel/, so that OUT is made again without a download.
set -u
cd "$(dirname "$0")/.." || exit 1

out=$(realpath -m "${1:?usage: mk/arm64-vmlinux.sh OUT}")
kdir=$(dirname "$out")/kernel
ARM64_APT=$(dirname "$out")/apt
ARM64_LOG=$kdir.log
BPFTOOL=${BPFTOOL:-bpftool}
. mk/arm64-apt.sh

die() {
	[ -s "$ARM64_LOG" ] && tail -n 20 "$ARM64_LOG" >&2
	echo "arm64-vmlinux: $*" >&2
	exit 1
}

# cut_btf IMAGE BLOB: the BTF blob in IMAGE.  Its header (linux/btf.h):
# magic 0xeB9F, version 1, flags 0, hdr_len 24, then the type and string
# sections' offsets and lengths, from the header's end; the types come
# first, the strings right after them.  The largest such blob is the
# kernel's .BTF (other matches would be bytes that only look like one).
cut_btf() {
	python3 - "$1" "$2" <<-'PY'
	import struct, sys
	img = open(sys.argv[1], "rb").read()
	best = None
	i = img.find(b"\x9f\xeb\x01\x00\x18\x00\x00\x00")
	while i >= 0:
	    t_off, t_len, s_off, s_len = struct.unpack_from("<4I", img, i + 8)
	    size = 24 + s_off + s_len
	    if t_off == 0 and s_off == t_len and i + size <= len(img) and \
	       (best is None or size > best[1]):
	        best = (i, size)
	    i = img.find(b"\x9f\xeb\x01\x00\x18\x00\x00\x00", i + 1)
	if best is None:
	    sys.exit("no BTF header in " + sys.argv[1])
	open(sys.argv[2], "wb").write(img[best[0]:best[0] + best[1]])
	print("arm64-vmlinux: BTF at offset %#x of the Image, %d bytes" % best)
	PY
}

# fetch_btf: kernel/vmlinux.btf and kernel/package, from the kernel package.
fetch_btf() {
	local pkg dl deb
	: >"$ARM64_LOG"
	arm64_apt_init || die "cannot read the arm64 package lists"
	pkg=$(arm64_apt_cache depends linux-image-arm64 2>>"$ARM64_LOG" |
		awk '$1 == "Depends:" && $2 ~ /^linux-image-/ { print $2; exit }')
	[ -n "$pkg" ] || die "apt knows no linux-image-arm64"
	echo "arm64-vmlinux: fetching $pkg (arm64) for its BTF"
	dl=$kdir.tmp
	rm -rf "$dl"
	arm64_download "$dl" "$pkg" || die "apt-get download $pkg failed"
	deb=$(ls "$dl"/*.deb) || die "no .deb downloaded"
	dpkg-deb --fsys-tarfile "$deb" | tar -x -C "$dl" --wildcards './boot/vmlinuz-*' \
		2>>"$ARM64_LOG" || die "no boot/vmlinuz in $deb"
	mv "$dl"/boot/vmlinuz-* "$dl/vmlinuz" || die "no boot/vmlinuz in $deb"
	if [ "$(head -c 2 "$dl/vmlinuz" | od -An -tx1 | tr -d ' ')" = 1f8b ]; then
		gzip -dc "$dl/vmlinuz" >"$dl/Image" 2>>"$ARM64_LOG" || die "bad gzip: $pkg's vmlinuz"
	else
		mv "$dl/vmlinuz" "$dl/Image"
	fi
	[ "$(tail -c +57 "$dl/Image" | head -c 4)" = ARMd ] ||
		die "$pkg's vmlinuz is no arm64 Image"
	cut_btf "$dl/Image" "$dl/vmlinux.btf" 2>>"$ARM64_LOG" || die "no BTF in $pkg's Image"
	mkdir -p "$kdir" &&
	mv "$dl/vmlinux.btf" "$kdir/vmlinux.btf" && echo "$pkg" >"$kdir/package" &&
	rm -rf "$dl"
}

if [ ! -s "$kdir/vmlinux.btf" ] || [ ! -s "$kdir/package" ]; then
	fetch_btf
fi
# Well-formed: bpftool reads every type, and arm64's user_pt_regs (the
# registers perf hands a BPF program there) is among them.
"$BPFTOOL" btf dump file "$kdir/vmlinux.btf" format c >"$out.tmp" 2>>"$ARM64_LOG" ||
	die "bpftool cannot parse $kdir/vmlinux.btf"
grep -q '^struct user_pt_regs {' "$out.tmp" ||
	die "$kdir/vmlinux.btf has no struct user_pt_regs: not an arm64 kernel's"
mv "$out.tmp" "$out"
echo "arm64-vmlinux: $out from $(cat "$kdir/package")"

#!/bin/bash
# tests/kernels/guest.sh DIR - PID 1 of a kernel-matrix guest once it runs
# in the host's tree (tests/kernels/init switch_roots here).  Mounts what
# a system has (a fresh /tmp and /run, /sys/fs/bpf, debugfs is not
# needed), runs tests/kernels/smoke.sh from DIR with its output in
# /luaprof-results/out, then a "done" line, and powers the guest off.  The
# smoke test runs under a timeout of its own, so that a stuck recording
# still leaves the lines before it; the host has its own timeout for a
# guest that hangs altogether.
dir=$1
res=/luaprof-results
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
export HOME=/root LANG=C.UTF-8

# A checkout under /tmp (a CI's clone, say) would vanish under a fresh
# tmpfs there: then the overlay's /tmp, writable already, serves.
case "$dir/" in
/tmp/*) ;;
*) mount -t tmpfs -o mode=1777 tmpfs /tmp ;;
esac
mount -t tmpfs -o mode=755 tmpfs /run
mount -t devpts devpts /dev/pts 2>/dev/null
mount -t bpf bpf /sys/fs/bpf 2>/dev/null
mount -t tracefs tracefs /sys/kernel/tracing 2>/dev/null
ln -sf /proc/self/fd /dev/fd 2>/dev/null

echo "luaprof-guest: a shell in the guest's root, $(cut -d' ' -f1 /proc/uptime) s after boot"
cd "$dir" || { echo "FAIL guest: no directory $dir" >$res/out; echo o >/proc/sysrq-trigger; }
[ -n "${LUAPROF_KEEP:-}" ] && export LUAPROF_SMOKE_KEEP=$res/traces
timeout -k 10 "${LUAPROF_GUEST_TIMEOUT:-600}" bash "${LUAPROF_SCRIPT:-tests/kernels/smoke.sh}" >$res/out 2>&1
echo "exit $?" >$res/done
sync
echo o >/proc/sysrq-trigger
sleep 60

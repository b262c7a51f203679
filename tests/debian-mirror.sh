# tests/debian-mirror.sh - sourced by the scripts that fetch Debian
# packages or make a root with debootstrap (luajit-builds.sh,
# trixie-root.sh, bookworm-root.sh):
#
#   debian_mirror     prints this machine's Debian mirror, as apt uses it
#                     (deb822 sources first, then sources.list), else
#                     deb.debian.org's.
debian_mirror() {
	local m
	m=$(awk '/^URIs:/ { print $2; exit }' /etc/apt/sources.list.d/*.sources 2>/dev/null || true)
	[ -n "$m" ] || m=$(awk '$1 == "deb" && $2 ~ /^http/ { print $2; exit }' \
		/etc/apt/sources.list 2>/dev/null || true)
	echo "${m:-http://deb.debian.org/debian}"
}

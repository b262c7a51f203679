# mk/arm64-apt.sh - sourced: Debian's arm64 packages, downloaded on an
# x86_64 host without making arm64 one of its architectures.  apt reads
# everything from private state under $ARM64_APT (a sources list of the
# host's suite, package lists, caches, an empty dpkg status), with
# APT::Architecture arm64, so `dpkg --add-architecture` is never run and
# /etc/apt is never written.  The cross build's sysroot (arm64-sysroot.sh)
# and its vmlinux.h (arm64-vmlinux.sh) fetch through it.
#
#   ARM64_APT   the state's directory (required)
#   ARM64_LOG   where apt's chatter goes (default /dev/null)

ARM64_LOG=${ARM64_LOG:-/dev/null}
ARM64_SUITE=$(. /etc/os-release && echo "$VERSION_CODENAME")

# arm64_apt_opts: apt's options for the private state.  The status file is
# empty: what the host has installed (amd64) is not the target's.
arm64_apt_opts() {
	local d=$ARM64_APT
	echo "-o APT::Architecture=arm64 -o APT::Architectures::=arm64" \
	     "-o Dir::Etc::SourceList=$d/sources.list -o Dir::Etc::SourceParts=/dev/null" \
	     "-o Dir::Etc::Preferences=$d/preferences -o Dir::Etc::PreferencesParts=$d/preferences.d" \
	     "-o Dir::State::Lists=$d/lists -o Dir::State::status=$d/status" \
	     "-o Dir::Cache::pkgcache=$d/pkgcache.bin -o Dir::Cache::srcpkgcache=$d/srcpkgcache.bin" \
	     "-o DPkg::Lock::Timeout=600"
}

# arm64_apt_init: the state's files; the package lists once (an update is
# what a cached state lacks when arm64_apt_update is called again).  The
# caller holds the state's lock from then on: `make -j` runs both scripts
# at once, and two apt-get updates of the same lists fail.
arm64_apt_init() {
	mkdir -p "$ARM64_APT/lists/partial" "$ARM64_APT/preferences.d" || return 1
	exec 9>>"$ARM64_APT/lock" && flock 9 || return 1
	[ -f "$ARM64_APT/status" ] || : >"$ARM64_APT/status"
	# The host's suite with its updates and security fixes, as its own
	# sources have them: the target runs what the host's suite ships.
	cat >"$ARM64_APT/sources.list" <<-SRC
	deb http://deb.debian.org/debian $ARM64_SUITE main
	deb http://deb.debian.org/debian $ARM64_SUITE-updates main
	deb http://deb.debian.org/debian-security $ARM64_SUITE-security main
	SRC
	ls "$ARM64_APT"/lists/*_Packages* >/dev/null 2>&1 || arm64_apt_update
}

arm64_apt_update() {
	# shellcheck disable=SC2046
	apt-get $(arm64_apt_opts) update -qq >>"$ARM64_LOG" 2>&1
}

# arm64_apt_cache ARGS...: apt-cache in the private state.
arm64_apt_cache() {
	# shellcheck disable=SC2046
	apt-cache $(arm64_apt_opts) "$@"
}

# arm64_download DIR PKG...: the .debs of PKG... into DIR.
# After a failure the lists are brought up to date and the download tried
# again: a cached state may name versions the mirror no longer has.
arm64_download() {
	local dir=$1
	shift
	mkdir -p "$dir" && chmod 755 "$dir" || return 1
	# apt-get drops root to _apt to download: the directory must be its.
	if id _apt >/dev/null 2>&1; then chown _apt "$dir"; fi
	# shellcheck disable=SC2046
	(cd "$dir" && apt-get $(arm64_apt_opts) download "$@") >>"$ARM64_LOG" 2>&1 && return 0
	arm64_apt_update || return 1
	# shellcheck disable=SC2046
	(cd "$dir" && apt-get $(arm64_apt_opts) download "$@") >>"$ARM64_LOG" 2>&1
}

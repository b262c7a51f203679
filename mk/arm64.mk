# mk/arm64.mk - `make ARCH=arm64`: luaprof for arm64 hosts, cross-built on
# an x86_64 Debian host.  Included by the Makefile before anything reads
# BUILD or CC; everything it changes is a variable the x86_64 build leaves
# empty or at its default, so that build is the same without it.
#
# Objects go to build/arm64/ (the x86_64 build's own stay in build/).
# Userspace is compiled by gcc-aarch64-linux-gnu (installed by `make
# ARCH=arm64 deps`, which the sysroot's rule runs) against a sysroot of
# Debian's arm64 packages (mk/arm64-sysroot.sh), the BPF objects by the
# host's clang for arm64's pt_regs against the arm64 kernel's types
# (mk/arm64-vmlinux.sh).  The product is build/arm64/luaprof-static, the
# one file to copy to an arm64 host; build/arm64/luaprof is linked against
# the sysroot's shared libraries, as Debian's arm64 packages install them.
# Downloads are cached under build/arm64/ and kept by `make ARCH=arm64
# clean`; `make clean` (x86_64) removes them with the rest of build/.

# This file's rules come before the Makefile's first: all stays the goal.
.DEFAULT_GOAL := all

BUILD     ?= build/arm64
SYSROOT   := $(BUILD)/sysroot
CC        := aarch64-linux-gnu-gcc --sysroot=$(abspath $(SYSROOT))
BPF_ARCH  := arm64
ARCH_DEPS := gcc-aarch64-linux-gnu

# What `make ARCH=arm64` builds.  The samples, not the unit tests (which
# include x86_64 code to test against): they run in an arm64 guest.  nofp
# the kernel matrix's arm64 lane builds static itself (tests/kernels/arm64.sh:
# the guest's root has no arm64 libc to link it against).
ARCH_ALL         := $(BUILD)/luaprof-static
ARCH_NOT_SAMPLES := $(BUILD)/samples/nofp

# The kernel's types: the BTF of Debian's arm64 kernel, not this host's.
VMLINUX_DEPS := mk/arm64-vmlinux.sh mk/arm64-apt.sh
VMLINUX_RULE := mk/arm64-vmlinux.sh $(BUILD)/vmlinux.h

# Every object and link needs the sysroot and the cross compiler first.
ARCH_PREREQ := $(SYSROOT)/.packages
$(SYSROOT)/.packages: mk/arm64-sysroot.sh mk/arm64-apt.sh
	@$(MAKE) --no-print-directory ARCH=arm64 deps
	mk/arm64-sysroot.sh $(SYSROOT)

# `make ARCH=arm64 clean` removes what was built, not what was fetched.
ARCH_CACHES := $(SYSROOT) $(BUILD)/apt $(BUILD)/kernel
CLEAN_FILES  = $(filter-out $(ARCH_CACHES),$(wildcard $(BUILD)/*))

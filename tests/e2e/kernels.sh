# kernels.sh - the kernel matrix (tests/kernels.sh): the smoke subset of
# these tests inside Debian's own kernels, booted under qemu.
exec tests/kernels.sh

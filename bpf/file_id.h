/*
 * file_id.h - a file as the kernel names it, shared by bpf/ and record/:
 * the device its inode's superblock holds, the inode number, and the
 * size, against an inode number that another file took since.  The
 * sampler knows a file this way when it meets it through a task or a
 * mapping (lp_file_id_of()), and the recorder names it from stat()
 * (lp_kernel_dev()).  Key of two BPF maps: lj_images (a LuaJIT executable
 * whose VM was validated, bpf/luajit_layout.h) and unwind_files (a loaded
 * object's rows, bpf/unwind_maps.h).
 *
 * The device number is the kernel's own dev_t, MAJOR << 20 | MINOR, not
 * user space's encoding of st_dev.
 */
#ifndef LUAPROF_BPF_FILE_ID_H
#define LUAPROF_BPF_FILE_ID_H

#ifndef __VMLINUX_H__
#include <linux/types.h>
#endif

struct lp_file_id {
	__u64 dev;
	__u64 ino;
	__u64 size;
};

_Static_assert(sizeof(struct lp_file_id) == 24, "lp_file_id layout");

/* The kernel's dev_t for a major and minor number (MINORBITS 20). */
static inline __u64 lp_kernel_dev(__u64 major, __u64 minor)
{
	return major << 20 | minor;
}

#ifdef __VMLINUX_H__
/* The id of the file behind inode ino. */
static __always_inline void lp_file_id_of(struct inode *ino, struct lp_file_id *id)
{
	id->dev = BPF_CORE_READ(ino, i_sb, s_dev);
	id->ino = BPF_CORE_READ(ino, i_ino);
	id->size = BPF_CORE_READ(ino, i_size);
}
#endif

#endif

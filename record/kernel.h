/*
 * kernel.h - what the kernel offers luaprof, and loading the BPF sampler
 * with a clear error when it lacks something (kernel.c).
 */
#ifndef LUAPROF_RECORD_KERNEL_H
#define LUAPROF_RECORD_KERNEL_H

#include <stddef.h>

/* Something luaprof needs of the kernel, and the version that brought it. */
struct kernel_feature {
	const char *what;  /* "bpf_loop()" */
	const char *since; /* "5.17" */
	const char *use;   /* what luaprof needs it for */
	int (*probe)(int arg);
	int arg;
};

extern const struct kernel_feature kernel_features[];
extern const int kernel_nfeatures;

/* 1: the kernel has it; 0: it does not; -errno: cannot tell (no root). */
int kernel_feature_probe(const struct kernel_feature *f);
/* How many features the kernel lacks; their names and versions into out
 * ("bpf_loop() (Linux 5.17), ..."), *newest the index of the one of the
 * most recent Linux version (-1 if none). */
int kernel_missing_features(char *out, size_t cap, int *newest);

struct sampler;
/*
 * Opens and loads the BPF sampler (bpf/sampler.bpf.c) with follow_children
 * in its config; size (if not NULL) sizes its maps between open and load
 * (0 or -errno).  libbpf's messages go to stderr as they come if verbose.
 * On failure, with who ("luaprof record") as the prefix, says what the
 * kernel lacks, or which field or verifier check failed.  0 or -errno.
 */
int sampler_load(struct sampler **out, int follow_children,
		 int (*size)(struct sampler *skel, void *arg), void *arg,
		 int verbose, const char *who);

#endif

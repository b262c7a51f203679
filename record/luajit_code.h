/*
 * luajit_code.h - a LuaJIT build's struct offsets derived from its code
 * (luajit_code.c) and completed from LuaJIT 2.1's declarations
 * (luajit_struct.c), with where each field came from.
 */
#ifndef LUAPROF_RECORD_LUAJIT_CODE_H
#define LUAPROF_RECORD_LUAJIT_CODE_H

#include <stdint.h>

#include "record/luajit.h"
#include "record/luajit_layouts.h"

/* Where a field's value came from. */
enum lj_from {
	LJ_FROM_NONE = 0,
	LJ_FROM_CODE,   /* a rule read it from the build's code (via: where) */
	LJ_FROM_STRUCT, /* LuaJIT 2.1's declaration, for the reference width */
};

struct lj_code_result {
	struct lj_layout layout;
	uint8_t from[LJF__N];     /* enum lj_from */
	const char *via[LJF__N];  /* LJ_FROM_CODE: the function or code read */
	char conflict[192];       /* two sources disagreed: which and how */
	uint64_t vm_start, vm_end; /* the interpreter's code (ELF vaddrs),
				    * from its CFI; 0 when not found */
	unsigned steps;           /* instructions read */
	struct lj_ffnames ff;     /* builtins by id (luajit_libs.c); free
				   * with lj_ffnames_free() */
};

/*
 * Reads a layout from the ELF object open at fd (not closed): what its
 * code shows, the rest from LuaJIT 2.1's declarations, and its builtins'
 * names.  0 with r filled as far as that goes (from[] says which fields
 * have a value and whence; r->conflict, if set, says what disagreed),
 * or -errno: -ENOEXEC not an ELF object, -ENOTSUP another instruction
 * set.  Free r->ff with lj_ffnames_free().
 */
int lj_code_derive(int fd, struct lj_code_result *r);

/* luajit_libs.c: the names of the builtins of the build in im, by fast
 * function id, from its library descriptions (like: the known build of
 * its variant, for the libraries registered without a name, or NULL);
 * *resume and *wrap_aux the ids of coroutine.resume and
 * coroutine.wrap_aux, -1 if not seen.  0, -ENOENT if no library was
 * found, -ENOMEM. */
struct elf_image;
struct sx_ctx;
int lj_ffnames_from_code(struct elf_image *im, struct sx_ctx *sx,
			 const struct lj_build_desc *like, struct lj_ffnames *out,
			 int *resume, int *wrap_aux);

/* luajit_cache.c: a derivation kept on disk for the object open at fd,
 * by its identity.  load: 0 with r filled (free r->ff after), or -errno
 * when there is none this luaprof can believe.  store: keeps r, complete
 * and without conflict, for the next time (quietly does nothing when it
 * cannot). */
int lj_cache_load(int fd, struct lj_code_result *r);
void lj_cache_store(int fd, const struct lj_code_result *r);

/* luajit_struct.c: fills the fields r does not have from LuaJIT 2.1's
 * declarations for r's reference width (which must be known), with
 * `from` LJ_FROM_STRUCT; the C frame as lj_frame.h has it on arch; the
 * snapshot group only if `snapshots`, for a build whose SnapShot has its
 * machine-code offset. */
struct lj_arch;
void lj_struct_complete(struct lj_code_result *r, int snapshots, const struct lj_arch *arch);

#endif

/*
 * stale.c - libstale.so, the library samples/nofp's "dlopens" mode loads:
 * a leaf whose own stack slot holds a code pointer, in a library mapped
 * after the recorder last read the process's mappings.
 *
 * stale_run(n, stale) calls stale_spin(n, stale), which spins n rounds
 * with a frame of its own whose lowest word, [rsp] (on arm64 the link
 * register, a leaf's return address), is `stale`: a return address into
 * the program, as old stack data so often is.  Both have true CFI, and
 * stale_spin's return address follows a call in stale_run.  A walk that
 * does not yet know this library's mapping must not take stale_spin for
 * a frameless leaf and `stale` for its caller.
 *
 *   main;run_dlopens;stale_run;stale_spin     (right)
 *   ...;main;stale_spin                       (wrong: stack data)
 */
unsigned long stale_run(unsigned long n, unsigned long stale);

#if defined(__x86_64__)
__asm__(".text\n"
	".type stale_spin, @function\n"
	"stale_spin:\n"
	".cfi_startproc\n"
	"	sub $8, %rsp\n"
	".cfi_def_cfa_offset 16\n"
	"	mov %rsi, (%rsp)\n"
	"	mov %rdi, %rax\n"
	"1:	dec %rax\n"
	"	jnz 1b\n"
	"	add $8, %rsp\n"
	".cfi_def_cfa_offset 8\n"
	"	ret\n"
	".cfi_endproc\n"
	".size stale_spin, .-stale_spin\n"
	".globl stale_run\n"
	".type stale_run, @function\n"
	"stale_run:\n"
	".cfi_startproc\n"
	"	sub $8, %rsp\n"
	".cfi_def_cfa_offset 16\n"
	"	call stale_spin\n"
	"	add $8, %rsp\n"
	".cfi_def_cfa_offset 8\n"
	"	ret\n"
	".cfi_endproc\n"
	".size stale_run, .-stale_run\n");
#elif defined(__aarch64__)
/* A frame record (x29, x30) pushed, and popped to return. */
#define A64_PUSH                                                      \
	"	stp x29, x30, [sp, #-16]!\n"                                \
	".cfi_def_cfa_offset 16\n"                                    \
	".cfi_offset x29, -16\n"                                      \
	".cfi_offset x30, -8\n"
#define A64_POP                                                       \
	"	ldp x29, x30, [sp], #16\n"                                  \
	".cfi_def_cfa_offset 0\n"                                     \
	".cfi_restore x29\n"                                          \
	".cfi_restore x30\n"                                          \
	"	ret\n"
__asm__(".text\n"
	".type stale_spin, %function\n"
	"stale_spin:\n"
	".cfi_startproc\n"
	A64_PUSH
	"	mov x30, x1\n"
	"1:	subs x0, x0, #1\n"
	"	b.ne 1b\n"
	A64_POP
	".cfi_endproc\n"
	".size stale_spin, .-stale_spin\n"
	".globl stale_run\n"
	".type stale_run, %function\n"
	"stale_run:\n"
	".cfi_startproc\n"
	A64_PUSH
	"	mov x29, sp\n"
	"	bl stale_spin\n"
	A64_POP
	".cfi_endproc\n"
	".size stale_run, .-stale_run\n");
#else
#error "stale_spin: no assembly for this architecture"
#endif

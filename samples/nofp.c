/*
 * nofp.c - a program whose stacks are known in advance, built WITHOUT
 * frame pointers (-O2 -fomit-frame-pointer, a Makefile rule of its own),
 * as Debian builds everything: only an unwinder that reads .eh_frame gets
 * its stacks right.  tests/e2e/native_unwind.sh records each mode and
 * checks that the chains below come out whole, down to main.
 *
 *   usage: nofp [chains|libc|signal|realign|lies|threads] [SECONDS]   (default: chains 3)
 *          SECONDS of CPU time
 *          nofp execs N
 *          nofp dlopens N LIB
 *
 *   chains  main;run_chains;chain_a;level1;level2;level3;spin_leaf
 *           main;run_chains;chain_b;vla_frame;level3;spin_leaf
 *           (chain_b:chain_a about 1:1; vla_frame keeps a variable-length
 *           array, so its CFA is rbp-based while the others' are rsp-based)
 *   libc    main;run_libc;sort_once;qsort;...;cmp_ints: time inside libc,
 *           which calls back into this program
 *   signal  main;run_signal;wait_loop, and a SIGPROF handler (every 2 ms
 *           of CPU time) that spins:
 *           ...;wait_loop;<__restore_rt>;on_alarm;spin_leaf
 *   realign main;run_realign;realigned;level3;spin_leaf
 *           main;run_realign;realigned_spin
 *           main;run_realign;realigned_tiny
 *           (each realigned* function keeps a 64-byte aligned local and
 *           a variable-length array: GCC realigns its stack through a
 *           DRAP register, and its CFI says CFA = *(rbp - N), rbp saved
 *           at rbp: DWARF expressions.  realigned_spin is the sampled
 *           frame itself; realigned_tiny is so short that its prologue
 *           and epilogue, where CFA = r10, get samples of their own)
 *   lies    main;run_lies;lying_spin, a leaf whose CFI lies: it says the
 *           return address is where the leaf wrote 0x1010503, an address
 *           in no mapping, and the leaf points rbp at a chain of fake
 *           frames (stack data a frame-pointer walk would take for
 *           frames).  No frame may be made of either: the stack ends at
 *           lying_spin, cut, and says so.
 *   threads main;run_threads;pthread_create;...;__clone3 (the parent, in
 *           the system call that makes a thread: glibc's CFI leaves that
 *           instruction out) and __clone3;start_thread;thread_body;
 *           spin_leaf (the thread, which spins a varying while)
 *   execs N lying_spin for a moment, then exec itself as "execs N-1":
 *           after each exec the recorder needs a moment to load the new
 *           image's tables, and a walk then must not follow rbp
 *   dlopens N LIB  loads LIB (build/samples/libstale.so) and spins in
 *           its stale_spin for a moment, then execs itself as "dlopens
 *           N-1 LIB": main;run_dlopens;stale_run;stale_spin, in a library
 *           the recorder knows (the last image mapped it) before each new
 *           image's mappings list holds it; stale_spin's [rsp] (arm64:
 *           x30) is a return address into main (samples/lib/stale.c)
 *
 * Every function is noipa: no inlining, cloning or tail calls, so each
 * named function is one real frame.
 */
#include <dlfcn.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#define NOIPA __attribute__((noipa))
#define UNIT 100000ul

/* The CPU time this process has had: each mode runs for SECONDS of it,
 * so that a busy machine makes the run longer, not its profile thinner. */
static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

NOIPA unsigned long spin_leaf(unsigned long n)
{
	volatile unsigned long x = 0;

	for (unsigned long i = 0; i < n; i++)
		x += i;
	return x;
}

/* Each level keeps a buffer, so its frame (and CFA offset) differs, and
 * uses its callee's result, so the call is not a tail call. */
NOIPA unsigned long level3(unsigned long n)
{
	volatile char buf[40];

	buf[n % sizeof(buf)] = 1;
	return spin_leaf(n) + buf[0];
}

NOIPA unsigned long level2(unsigned long n)
{
	volatile char buf[200];

	buf[n % sizeof(buf)] = 2;
	return level3(n) + buf[1];
}

NOIPA unsigned long level1(unsigned long n)
{
	volatile char buf[1000];

	buf[n % sizeof(buf)] = 3;
	return level2(n) + buf[2];
}

NOIPA unsigned long vla_frame(unsigned long n)
{
	/* A variable-length array makes GCC address the frame from rbp,
	 * even with -fomit-frame-pointer: CFA = rbp + 16 here. */
	volatile char vla[16 + n % 64];

	vla[0] = 4;
	return level3(n) + vla[0];
}

NOIPA unsigned long chain_a(void)
{
	return level1(3 * UNIT) + 1;
}

NOIPA unsigned long chain_b(void)
{
	return vla_frame(3 * UNIT) + 1;
}

NOIPA unsigned long run_chains(double seconds)
{
	double end = now() + seconds;
	unsigned long sum = 0;

	while (now() < end) {
		sum += chain_a();
		sum += chain_b();
	}
	return sum;
}

NOIPA int cmp_ints(const void *a, const void *b)
{
	int x = *(const int *)a, y = *(const int *)b;

	return (x > y) - (x < y);
}

NOIPA unsigned long sort_once(int *v, size_t n, unsigned int seed)
{
	for (size_t i = 0; i < n; i++) {
		seed = seed * 1103515245u + 12345u;
		v[i] = (int)(seed >> 8);
	}
	qsort(v, n, sizeof(*v), cmp_ints);
	return (unsigned long)v[n / 2];
}

NOIPA unsigned long run_libc(double seconds)
{
	enum { N = 20000 };
	static int v[N];
	double end = now() + seconds;
	unsigned long sum = 0;
	unsigned int seed = 1;

	while (now() < end)
		sum += sort_once(v, N, seed++);
	return sum;
}

static volatile unsigned long sink;

NOIPA void on_alarm(int sig)
{
	(void)sig;
	sink = spin_leaf(UNIT); /* a use: not a tail call */
}

NOIPA unsigned long wait_loop(double end)
{
	volatile unsigned long n = 0;

	/* The clock is a system call: looked at once in 1024 rounds. */
	do {
		for (int i = 0; i < 1024; i++)
			n++;
	} while (now() < end);
	return n;
}

NOIPA unsigned long run_signal(double seconds)
{
	struct itimerval it = { { 0, 2000 }, { 0, 2000 } };
	struct sigaction sa;
	unsigned long n;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_alarm;
	sa.sa_flags = SA_RESTART;
	sigaction(SIGPROF, &sa, NULL);
	setitimer(ITIMER_PROF, &it, NULL); /* every 2 ms of CPU time */
	n = wait_loop(now() + seconds);
	memset(&it, 0, sizeof(it));
	setitimer(ITIMER_PROF, &it, NULL);
	return n;
}

/* The DRAP frames described at the top; each uses its local and its
 * array, so that neither is optimised away. */
NOIPA unsigned long realigned(unsigned long n)
{
	volatile char aligned[64] __attribute__((aligned(64)));
	volatile char vla[16 + n % 64];

	aligned[n % 64] = 5;
	vla[0] = 6;
	return level3(n) + aligned[0] + vla[0];
}

NOIPA unsigned long realigned_spin(unsigned long n)
{
	volatile char aligned[64] __attribute__((aligned(64)));
	volatile char vla[16 + n % 64];
	unsigned long x = 0;

	aligned[0] = 7;
	vla[0] = 8;
	for (unsigned long i = 0; i < n; i++)
		x += i ^ (unsigned long)aligned[i % 64];
	return x + vla[0];
}

NOIPA unsigned long realigned_tiny(unsigned long n)
{
	volatile char aligned[64] __attribute__((aligned(64)));
	volatile char vla[16 + n % 64];

	aligned[n % 64] = 9;
	vla[n % 16] = 10;
	return aligned[n % 64] + vla[n % 16];
}

NOIPA unsigned long run_realign(double seconds)
{
	double end = now() + seconds;
	unsigned long sum = 0, k = 0;

	/* The share of each varies with k: no fixed period. */
	while (now() < end) {
		k++;
		sum += realigned(UNIT + k % 1000);
		sum += realigned_spin(UNIT + (k * 7) % 1000);
		for (unsigned long i = 0; i < 20000 + k % 3000; i++)
			sum += realigned_tiny(i);
	}
	return sum;
}

/*
 * lying_spin(n): spins n rounds under CFI that lies.  Its frame is 64
 * bytes (return address, rbp, 48 of its own), but from the sub on the CFI
 * says CFA = rsp + 48, so the return address would be at rsp + 40: there
 * it writes 0x1010503.  rbp points at fake_frames, a chain of (next rbp,
 * return address) pairs that lead nowhere.  On arm64 the same: a 64-byte
 * frame with x29 and x30 at its top (sp + 48), which the CFI says is 48
 * bytes with x30 at sp + 40, where 0x1010503 is; x29 points at
 * fake_frames.
 */
unsigned long fake_frames[8] = {
	(unsigned long)&fake_frames[2], 0x1010503,
	(unsigned long)&fake_frames[4], 0x2020604,
	(unsigned long)&fake_frames[6], 0x3030705,
	0, 0,
};
unsigned long lying_spin(unsigned long n);
#if defined(__x86_64__)
__asm__(".text\n"
	".globl lying_spin\n"
	".type lying_spin, @function\n"
	"lying_spin:\n"
	".cfi_startproc\n"
	"	push %rbp\n"
	".cfi_def_cfa_offset 16\n"
	".cfi_offset %rbp, -16\n"
	"	sub $48, %rsp\n"
	".cfi_def_cfa_offset 48\n" /* the lie: 64 */
	"	movq $0x1010503, 40(%rsp)\n"
	"	lea fake_frames(%rip), %rbp\n"
	"	mov %rdi, %rax\n"
	"1:	dec %rax\n"
	"	jnz 1b\n"
	"	add $48, %rsp\n"
	".cfi_def_cfa_offset 16\n"
	"	pop %rbp\n"
	".cfi_def_cfa_offset 8\n"
	"	ret\n"
	".cfi_endproc\n"
	".size lying_spin, .-lying_spin\n");
#elif defined(__aarch64__)
__asm__(".text\n"
	".globl lying_spin\n"
	".type lying_spin, %function\n"
	"lying_spin:\n"
	".cfi_startproc\n"
	"	sub sp, sp, #64\n"
	".cfi_def_cfa_offset 64\n"
	"	stp x29, x30, [sp, #48]\n"
	".cfi_def_cfa_offset 48\n" /* the lie: 64 */
	".cfi_offset x29, -16\n"
	".cfi_offset x30, -8\n"
	"	mov x9, #0x0503\n"
	"	movk x9, #0x101, lsl #16\n"
	"	str x9, [sp, #40]\n"
	"	adrp x29, fake_frames\n"
	"	add x29, x29, :lo12:fake_frames\n"
	"1:	subs x0, x0, #1\n"
	"	b.ne 1b\n"
	"	ldp x29, x30, [sp, #48]\n"
	"	add sp, sp, #64\n"
	".cfi_def_cfa_offset 0\n"
	".cfi_restore x29\n"
	".cfi_restore x30\n"
	"	ret\n"
	".cfi_endproc\n"
	".size lying_spin, .-lying_spin\n");
#else
#error "lying_spin: no assembly for this architecture"
#endif

NOIPA unsigned long run_lies(double seconds)
{
	double end = now() + seconds;
	unsigned long n = 0, k = 0;

	while (now() < end)
		n += lying_spin(UNIT + (k++ % 777) * 100);
	return n;
}

NOIPA void *thread_body(void *arg)
{
	return (void *)spin_leaf((unsigned long)arg);
}

/* Threads made and joined one after the other, each spinning a little. */
NOIPA unsigned long run_threads(double seconds)
{
	double end = now() + seconds;
	unsigned long n = 0, k = 0;

	while (now() < end) {
		pthread_t t;
		void *r;

		if (pthread_create(&t, NULL, thread_body, (void *)(UNIT / 20 + (k++ % 97) * 50)))
			break;
		pthread_join(t, &r);
		n += (unsigned long)r;
	}
	return n;
}

/* Each image spins for 30 ms, then replaces itself; the last returns. */
/* Replaces this image with self run as "MODE LEFT-1 [LIB]", unless LEFT
 * is 0; returns if it does not (or the exec failed: stop here). */
static void exec_again(const char *self, const char *mode, int left, const char *lib)
{
	char arg[16];

	if (left <= 0)
		return;
	snprintf(arg, sizeof(arg), "%d", left - 1);
	execl(self, self, mode, arg, lib, (char *)NULL);
}

NOIPA unsigned long run_execs(const char *self, int left)
{
	unsigned long n = run_lies(0.03);

	exec_again(self, "execs", left, NULL);
	return n;
}

/* Each image loads lib and spins in it for 30 ms, then replaces itself;
 * the last returns. */
NOIPA unsigned long run_dlopens(const char *self, int left, const char *lib)
{
	unsigned long (*run)(unsigned long, unsigned long);
	unsigned long stale = (unsigned long)__builtin_return_address(0), n = 0, k = 0;
	void *h = dlopen(lib, RTLD_NOW);
	double end = now() + 0.03;

	if (!h || !(run = (unsigned long (*)(unsigned long, unsigned long))dlsym(h, "stale_run"))) {
		fprintf(stderr, "nofp: %s\n", dlerror());
		exit(1);
	}
	while (now() < end)
		n += run(UNIT + (k++ % 777) * 100, stale);
	exec_again(self, "dlopens", left, lib);
	return n;
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "chains";
	double seconds = argc > 2 ? atof(argv[2]) : 3.0;
	unsigned long r;

	if (!strcmp(mode, "libc"))
		r = run_libc(seconds);
	else if (!strcmp(mode, "signal"))
		r = run_signal(seconds);
	else if (!strcmp(mode, "realign"))
		r = run_realign(seconds);
	else if (!strcmp(mode, "lies"))
		r = run_lies(seconds);
	else if (!strcmp(mode, "threads"))
		r = run_threads(seconds);
	else if (!strcmp(mode, "dlopens") && argc > 3)
		r = run_dlopens("/proc/self/exe", atoi(argv[2]), argv[3]);
	else if (!strcmp(mode, "execs"))
		r = run_execs("/proc/self/exe", argc > 2 ? atoi(argv[2]) : 0);
	else
		r = run_chains(seconds);
	return r == 42; /* uses r: keeps the work */
}

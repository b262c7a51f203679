# luaprof build.  `make` builds build/luaprof; `make test` runs every test;
# `make demo` records a bundled sample and prints its report; `make deps`
# installs missing Debian packages (quick and silent when all are present).
# Objects go to build/, never next to the sources.  `make ARCH=arm64`
# cross-builds for arm64 hosts into build/arm64/ (mk/arm64.mk).

ifeq ($(ARCH),arm64)
include mk/arm64.mk
endif

CC       ?= gcc
CLANG    ?= clang
BPFTOOL  ?= bpftool
BUILD    ?= build
VERSION  := 0.1.0

# CFLAGS and LDFLAGS are the user's: `make CFLAGS='-O1 -g -fsanitize=address'`
# replaces them whole.  What the project needs to compile at all lives in
# LP_CFLAGS, which the command line does not override.
CFLAGS   ?= -O2 -g
LDFLAGS  ?=
LP_CFLAGS := -Wall -Wextra -std=gnu11 -D_GNU_SOURCE -DLUAPROF_VERSION='"$(VERSION)"' \
            -I. -I$(BUILD)
LDLIBS   := -lbpf -ldw -lelf -lz -llz4 -lcapstone -liberty

# Debian packages the build and the tests need.
DEPS := clang llvm libbpf-dev bpftool libelf-dev libdw-dev zlib1g-dev liblz4-dev \
        libcapstone-dev libiberty-dev pkg-config make gcc python3 util-linux \
        libclang-rt-14-dev help2man liblzma-dev libbz2-dev libc6-arm64-cross
# A cross build's toolchain too (mk/arm64.mk).
DEPS += $(ARCH_DEPS)

FORMAT_SRC := $(wildcard format/*.c)
LIB_SRC    := $(wildcard lib/*.c)
RECORD_SRC := $(wildcard record/*.c)
REPORT_SRC := $(wildcard report/*.c)
FORMAT_OBJ := $(FORMAT_SRC:%.c=$(BUILD)/%.o)
LIB_OBJ    := $(LIB_SRC:%.c=$(BUILD)/%.o)
RECORD_OBJ := $(RECORD_SRC:%.c=$(BUILD)/%.o)
REPORT_OBJ := $(REPORT_SRC:%.c=$(BUILD)/%.o)
UNIT_SRC   := $(wildcard tests/unit/*.c)
UNIT_OBJ   := $(UNIT_SRC:%.c=$(BUILD)/%.o)
SAMPLES    := $(filter-out $(ARCH_NOT_SAMPLES),\
	      $(patsubst samples/%.c,$(BUILD)/samples/%,$(wildcard samples/*.c))) \
	      $(BUILD)/samples/libstale.so

.PHONY: all deps test unit demo clean bench docs-img sanitize sanitize-build fuzz fuzz-build \
	man install static deb
.SECONDARY:
all: $(BUILD)/luaprof $(SAMPLES) $(ARCH_ALL)

# Man pages from --help (man/man.sh), and `make install` as GNU and
# Debian expect: PREFIX (default /usr/local) and DESTDIR.
PREFIX ?= /usr/local
MANPAGES := luaprof luaprof-record luaprof-report luaprof-diff luaprof-info luaprof-heap luaprof-check

man: $(BUILD)/man/luaprof.1
$(BUILD)/man/luaprof.1: $(BUILD)/luaprof man/man.sh
	man/man.sh $(BUILD)/luaprof $(BUILD)/man $(VERSION)

install: $(BUILD)/luaprof $(BUILD)/man/luaprof.1
	install -D -m 0755 $(BUILD)/luaprof $(DESTDIR)$(PREFIX)/bin/luaprof
	for p in $(MANPAGES); do \
		install -D -m 0644 $(BUILD)/man/$$p.1 $(DESTDIR)$(PREFIX)/share/man/man1/$$p.1 || exit 1; \
	done
	install -D -m 0644 man/luaprof.bash \
		$(DESTDIR)$(PREFIX)/share/bash-completion/completions/luaprof

deps:
	@missing=$$(dpkg-query -W -f='$${Package} $${Status}\n' $(DEPS) 2>/dev/null | \
		awk '$$NF=="installed"{print $$1}' | sort > $(BUILD).deps-have; \
		for p in $(DEPS); do grep -qx "$$p" $(BUILD).deps-have || echo $$p; done); \
	rm -f $(BUILD).deps-have; \
	if [ -n "$$missing" ]; then \
		echo "make deps: installing $$missing"; \
		export DEBIAN_FRONTEND=noninteractive; \
		{ apt-get update -qq && apt-get install -y -qq --no-install-recommends $$missing; } \
			>/tmp/luaprof-deps.log 2>&1 \
		|| { cat /tmp/luaprof-deps.log >&2; echo "make deps: apt-get install failed" >&2; exit 1; }; \
	fi

# The kernel's types, of the running kernel unless the architecture's
# makefile says how else; BPF_ARCH names its pt_regs for bpf_tracing.h.
VMLINUX_RULE ?= $(BPFTOOL) btf dump file /sys/kernel/btf/vmlinux format c > $@.tmp && mv $@.tmp $@
BPF_ARCH     ?= x86
$(BUILD)/vmlinux.h: $(VMLINUX_DEPS)
	@mkdir -p $(@D)
	$(VMLINUX_RULE)

$(BUILD)/bpf/%.bpf.o: bpf/%.bpf.c bpf/*.h format/kinds.h $(BUILD)/vmlinux.h
	@mkdir -p $(@D)
	$(CLANG) -O2 -g -Wall -target bpf -D__TARGET_ARCH_$(BPF_ARCH) -I. -I$(BUILD) -c $< -o $@
	llvm-strip -g $@ 2>/dev/null || true

$(BUILD)/%.skel.h: $(BUILD)/bpf/%.bpf.o
	$(BPFTOOL) gen skeleton $< name $* > $@.tmp && mv $@.tmp $@

# The flame graph's script, a C string for report/out_flamegraph.c: the
# SVG carries it, so it is kept as JavaScript in report/flamegraph.js.
$(BUILD)/report/flamegraph_js.h: report/flamegraph.js
	@mkdir -p $(@D)
	sed -e 's/\\/\\\\/g' -e 's/"/\\"/g' -e 's/^/"/' -e 's/$$/\\n"/' $< > $@.tmp && mv $@.tmp $@
$(BUILD)/report/out_flamegraph.o: $(BUILD)/report/flamegraph_js.h

# Unit tests link the report and format libraries and the parts of record/
# that need neither BPF nor root.
UNIT_RECORD_OBJ := $(BUILD)/record/luajit_layouts.o $(BUILD)/record/unwind_table.o \
		   $(BUILD)/record/unwind_cfa.o \
		   $(BUILD)/record/unwind_buckets.o $(BUILD)/record/srclines.o \
		   $(BUILD)/record/addrset.o $(BUILD)/record/symtab.o \
		   $(BUILD)/record/sample_event.o $(BUILD)/record/procmaps.o \
		   $(BUILD)/record/say.o $(BUILD)/record/symexec.o \
		   $(BUILD)/record/symexec_x86.o $(BUILD)/record/symexec_arm64.o \
		   $(BUILD)/record/symexec_decoder.o \
		   $(BUILD)/record/luajit_arch.o $(BUILD)/record/elfimage.o \
		   $(BUILD)/record/luajit_code.o $(BUILD)/record/luajit_struct.o \
		   $(BUILD)/record/luajit_libs.o $(BUILD)/record/luajit_cfi.o \
		   $(BUILD)/record/luajit_cache.o $(BUILD)/record/luajit_place.o \
		   $(BUILD)/record/luajit_path.o $(BUILD)/record/luajit_irmatch.o \
		   $(BUILD)/record/luajit_mcmatch.o $(BUILD)/record/luajit_mcmatch_x86.o \
		   $(BUILD)/record/luajit_mcmatch_arm64.o $(BUILD)/record/luajit_alloc_x86.o \
		   $(BUILD)/record/heap_walk.o $(BUILD)/record/heap_image.o \
		   $(BUILD)/record/heap_layout.o $(BUILD)/record/luajit_jit_traces.o \
		   $(BUILD)/record/luajit_alloc_arm64.o

# record/ includes the generated skeleton: an explicit prerequisite, so a
# clean tree builds it first.  The parts the unit tests link need no BPF,
# so a sanitizer build of the unit tests compiles no BPF either.
$(filter-out $(UNIT_RECORD_OBJ),$(RECORD_OBJ)): $(BUILD)/sampler.skel.h

# ARCH_PREREQ: what a cross build compiles with (its sysroot), first.
$(BUILD)/%.o: %.c | $(ARCH_PREREQ)
	@mkdir -p $(@D)
	$(CC) $(LP_CFLAGS) $(CFLAGS) -MMD -MP -c $< -o $@

$(BUILD)/luaprof: $(BUILD)/luaprof.o $(RECORD_OBJ) $(REPORT_OBJ) $(FORMAT_OBJ) $(LIB_OBJ)
	$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $^ $(LDLIBS)

# A Debian package of what make install installs (man/deb.sh).
deb: $(BUILD)/luaprof $(BUILD)/man/luaprof.1
	man/deb.sh $(BUILD) $(VERSION)

# One binary for the production host, which often lacks libbpf, libdw and
# a compiler: the same objects, linked with Debian's static libraries
# (libdw's own compression libraries too).  Records, reports and checks in
# a root holding nothing else (tests/e2e/static.sh).
STATIC_LDLIBS := $(LDLIBS) -llzma -lbz2
static: $(BUILD)/luaprof-static
$(BUILD)/luaprof-static: $(BUILD)/luaprof.o $(RECORD_OBJ) $(REPORT_OBJ) $(FORMAT_OBJ) $(LIB_OBJ)
	$(CC) $(CFLAGS) $(LDFLAGS) -static -o $@ $^ $(STATIC_LDLIBS)

$(BUILD)/unit_tests: $(UNIT_OBJ) $(UNIT_RECORD_OBJ) $(REPORT_OBJ) $(FORMAT_OBJ) $(LIB_OBJ)
	$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $^ $(LDLIBS)

# Samples keep frame pointers and distinct functions so that stacks name
# them; issue-level tests depend on their hot functions being visible.
$(BUILD)/samples/%: samples/%.c | $(ARCH_PREREQ)
	@mkdir -p $(@D)
	$(CC) -O1 -g -fno-omit-frame-pointer -fno-inline -fno-optimize-sibling-calls \
		-Wall -Wextra -o $@ $< 

# nofp is built as distributions build code, without frame pointers: the
# native unwinder's test (tests/e2e/native_unwind.sh) needs .eh_frame to be
# the only way up its stack.
$(BUILD)/samples/nofp: samples/nofp.c | $(ARCH_PREREQ)
	@mkdir -p $(@D)
	$(CC) -O2 -g -fomit-frame-pointer -fno-inline -Wall -Wextra -o $@ $<

# libstale.so, which nofp's "dlopens" mode loads: CFI and code of its own
# (samples/lib/stale.c).
$(BUILD)/samples/libstale.so: samples/lib/stale.c | $(ARCH_PREREQ)
	@mkdir -p $(@D)
	$(CC) -O1 -g -shared -fPIC -Wall -Wextra -o $@ $<

# inline is built as releases are, -O2 with inlining, for the source lines
# and inlined frames of tests/e2e/self_contained.sh; frame pointers keep
# its stack walkable whatever the unwinder does.
$(BUILD)/samples/inline: samples/inline.c | $(ARCH_PREREQ)
	@mkdir -p $(@D)
	$(CC) -O2 -g -fno-omit-frame-pointer -fno-optimize-sibling-calls -Wall -Wextra -o $@ $<

# bench/views.sh's synthetic traces, written with the format library.
$(BUILD)/bench/synth: $(BUILD)/bench/synth.o $(FORMAT_OBJ) $(LIB_OBJ)
	$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $^ $(LDLIBS)

# bench/pertask.c, a probe: which ticks a per-task cpu-clock event runs
# the BPF program on, and what such an event costs a context switch.
$(BUILD)/bench/pertask.bpf.o: bench/pertask.bpf.c $(BUILD)/vmlinux.h
	@mkdir -p $(@D)
	$(CLANG) -O2 -g -Wall -target bpf -D__TARGET_ARCH_$(BPF_ARCH) -I$(BUILD) -c $< -o $@
$(BUILD)/bench/pertask.skel.h: $(BUILD)/bench/pertask.bpf.o
	$(BPFTOOL) gen skeleton $< name pertask > $@.tmp && mv $@.tmp $@
$(BUILD)/bench/pertask: bench/pertask.c $(BUILD)/bench/pertask.skel.h
	$(CC) $(LP_CFLAGS) -I$(BUILD)/bench $(CFLAGS) -o $@ $< -lbpf -lpthread

unit: $(BUILD)/unit_tests
	$(BUILD)/unit_tests

# The unit tests built again with AddressSanitizer (leaks included) and
# UndefinedBehaviorSanitizer, in a build directory of their own, through
# the user's CFLAGS as anyone would: tests/run runs them and any report
# fails the run.  `make sanitize` builds and runs them alone.  clang, as
# for the fuzzer: its UBSan also catches arithmetic on a NULL pointer.
SAN_BUILD  := $(BUILD)/san
SAN_CFLAGS := -O1 -g -fno-omit-frame-pointer -fsanitize=address,undefined \
	      -fno-sanitize-recover=all
# luaprof itself too, for tests/e2e/sanitized.sh: record and report as
# users run them, on real targets, where the unit tests cannot reach.
sanitize-build:
	@$(MAKE) --no-print-directory BUILD=$(SAN_BUILD) CC=$(CLANG) CFLAGS='$(SAN_CFLAGS)' \
		$(SAN_BUILD)/unit_tests $(SAN_BUILD)/luaprof

# Reports go to files: a test that captures standard error (rt_run)
# would swallow them.
sanitize: sanitize-build
	@rm -f $(SAN_BUILD)/report.*
	ASAN_OPTIONS=detect_leaks=1:exitcode=23:log_path=$(SAN_BUILD)/report \
	UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1:log_path=$(SAN_BUILD)/report \
		$(SAN_BUILD)/unit_tests || { cat $(SAN_BUILD)/report.* 2>/dev/null; exit 1; }

# libFuzzer on the trace reader, every report mode and info (tests/fuzz/):
# clang's -fsanitize=fuzzer with ASan and UBSan, and the reader built to
# skip its CRC checks (FUZZING_BUILD_MODE_UNSAFE_FOR_PRODUCTION) so that
# mutations reach the records.  `make fuzz` records a seed corpus and runs
# for FUZZ_SECONDS on every core (FUZZ_JOBS); tests/e2e/fuzz_smoke.sh runs a
# short, fixed-seed pass inside `make test`.
FUZZ_BUILD   := $(BUILD)/fuzz
FUZZ_CFLAGS  := -O1 -g -fno-omit-frame-pointer \
		-fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=all \
		-DFUZZING_BUILD_MODE_UNSAFE_FOR_PRODUCTION
FUZZ_SECONDS ?= 600
FUZZ_JOBS    ?= $(shell nproc 2>/dev/null || echo 1)

$(BUILD)/fuzz_trace: $(BUILD)/tests/fuzz/fuzz_trace.o $(REPORT_OBJ) $(FORMAT_OBJ) $(LIB_OBJ)
	$(CC) $(CFLAGS) -fsanitize=fuzzer -o $@ $^ $(LDLIBS)

fuzz-build:
	@$(MAKE) --no-print-directory BUILD=$(FUZZ_BUILD) CC=$(CLANG) \
		CFLAGS='$(FUZZ_CFLAGS)' $(FUZZ_BUILD)/fuzz_trace

fuzz: deps
	@$(MAKE) --no-print-directory all fuzz-build
	@tests/fuzz/run.sh $(FUZZ_SECONDS) $(FUZZ_JOBS)

test: deps
	@$(MAKE) --no-print-directory all $(BUILD)/unit_tests sanitize-build fuzz-build
	@tests/run

demo: deps
	@$(MAKE) --no-print-directory all
	@tests/demo.sh

bench: deps
	@$(MAKE) --no-print-directory all
	@bench/run.sh
	@bench/nginx.sh
	@bench/nginx_size.sh
	@bench/ticks.sh
	@bench/views.sh

# The README's flame graphs of nginx + lua (docs/img/offcpu-nginx.svg,
# alloc-nginx.svg), redrawn from new recordings: root, a few seconds each.
docs-img: deps
	@$(MAKE) --no-print-directory all
	@docs/img/nginx.sh offcpu
	@docs/img/nginx.sh alloc

# A cross build's CLEAN_FILES keep its downloads (mk/arm64.mk).
CLEAN_FILES ?= $(BUILD) demo.lp demo.lp.old demo.folded
clean:
	rm -rf $(CLEAN_FILES)

# Dependency files of this build's own objects, by directory: build/ also
# holds trees the tests unpack (a root's /etc/rc2.d, an arm64 root's
# /usr/sbin/invoke-rc.d are no make dependency files), and the sanitizer,
# fuzzing and arm64 builds below it keep their own.
-include $(wildcard $(BUILD)/*.d $(patsubst %,$(BUILD)/%/*.d,record report format lib \
	bench samples tests/unit tests/fuzz))

# rrr - storage protocols over RDMA, in user space.
#
#   make            build librrr.so, librrr.a and the programs into $(BUILD)/
#   make test       install missing Debian packages, build, run every test
#   make demo       install missing Debian packages, run the soft-provider demo
#   make help       list every target
#
# GNU make only. Sources are discovered by directory (see "Layout" below), so
# adding a file needs no Makefile change.

SHELL := /bin/bash
.DEFAULT_GOAL := all

VERSION_MAJOR := 2
VERSION := 2.0.0

CC ?= cc
ifeq ($(origin CC),default)
CC := gcc
endif
CLANG ?= clang
BUILD ?= build
PREFIX ?= /usr/local
DESTDIR ?=
LIBDIR ?= $(PREFIX)/lib
INCLUDEDIR ?= $(PREFIX)/include
BINDIR ?= $(PREFIX)/bin
MANDIR ?= $(PREFIX)/share/man
# the sample config goes to $(SYSCONFDIR)/rrr/ (never over an existing one)
SYSCONFDIR ?= /etc
SYSTEMDUNITDIR ?= $(PREFIX)/lib/systemd/system

WARN := -Wall -Wextra -Wshadow -Wstrict-prototypes -Wmissing-prototypes -Wformat=2
ifneq ($(WERROR)$(CI),)
WARN += -Werror
endif

OPT ?= -O2 -g
SANITIZE ?=
SANFLAGS :=
ifneq ($(SANITIZE),)
SANFLAGS := -fsanitize=$(SANITIZE) -fno-omit-frame-pointer
# tests scale their timing under any sanitizer (GCC defines no macro for
# -fsanitize=undefined, unlike address and thread)
CPPFLAGS += -DRRR_UNDER_SANITIZER=1
ifeq ($(SANITIZE),undefined)
SANFLAGS += -fno-sanitize-recover=undefined
endif
OPT := -O1 -g
endif

CPPFLAGS += -Iinclude -I. -D_GNU_SOURCE
CFLAGS += -std=c11 $(OPT) $(WARN) -fPIC -fvisibility=hidden -pthread $(SANFLAGS) \
	  -MMD -MP $(EXTRA_CFLAGS)
LDFLAGS += -pthread $(SANFLAGS)
LIBS := -libverbs -lrdmacm -lurcu-memb -lurcu-common -lisal -lm
# What rrr-server's own code needs beyond the library's (server/fs/drc.c:
# libxxhash's XXH3); its tests link it too.
PROG_LIBS := -lxxhash

# ---------------------------------------------------------------- layout
# Library: common/, xdr/, transport/ (+ soft/, verbs/), server/*.c, client/*.c
# Override LIB_DIRS/TEST_DIRS/PROGRAMS to build a subset while other parts
# are being written (e.g. make BUILD=build-xdr LIB_DIRS=xdr TEST_DIRS=xdr test-unit).
LIB_DIRS ?= common xdr transport transport/soft transport/verbs server client
LIB_SRCS := $(sort $(foreach d,$(LIB_DIRS),$(wildcard $(d)/*.c)))
LIB_OBJS := $(LIB_SRCS:%.c=$(BUILD)/obj/%.o)

# Programs: one directory each.
PROG_rrr-server := server/fs
PROG_rrr-client := client/cli
PROG_rrr-bench := bench
PROG_rrr-devcheck := transport/verbs/devcheck
PROGRAMS ?= rrr-server rrr-client rrr-bench rrr-devcheck
define prog_srcs
$(sort $(wildcard $(PROG_$(1))/*.c))
endef
PROG_BINS := $(foreach p,$(PROGRAMS),$(if $(call prog_srcs,$(p)),$(BUILD)/$(p)))

# Tests: every directory under tests/ except fuzz/, vm/, tsan/ and lib/
# becomes one Criterion binary $(BUILD)/tests/<dir>; tests/<dir>/helpers/*.c
# (if any) are linked in too. Every suite links the shared test helpers
# (tests/lib/*.c -> $(BUILD)/tests/libtests.a: servers, processes, mounts)
# and, for the programs' own code under test, archives of the programs'
# objects without main() ($(BUILD)/tests/libprog-<program>.a): built once,
# never an #include of a .c file.
TEST_DIRS ?= $(filter-out fuzz vm tsan lib,$(notdir $(patsubst %/,%,$(wildcard tests/*/))))
TEST_BINS := $(foreach d,$(TEST_DIRS),$(if $(wildcard tests/$(d)/*.c),$(BUILD)/tests/$(d)))
TEST_LIB := $(BUILD)/tests/libtests.a
TEST_LIB_OBJS := $(patsubst %.c,$(BUILD)/obj/%.o,$(sort $(wildcard tests/lib/*.c)))
TEST_PROGS := rrr-server rrr-bench
TEST_PROG_LIBS := $(TEST_PROGS:%=$(BUILD)/tests/libprog-%.a)

SONAME := librrr.so.$(VERSION_MAJOR)
SO := $(BUILD)/librrr.so.$(VERSION)
AR_LIB := $(BUILD)/librrr.a

# ---------------------------------------------------------------- build
.PHONY: all lib programs tests
all: lib programs fio-engine
lib: $(SO) $(AR_LIB)
programs: $(PROG_BINS)
tests: $(TEST_BINS)

# Optional headers decide what an object holds (<sys/sdt.h>: the USDT notes
# of common/probes.h). $(BUILD)/features records which are present and is
# rewritten only when that changes; every object depends on it, so objects
# built before `make deps` installed a header are rebuilt with it.
FEATURES := sdt=$(shell $(CC) $(CPPFLAGS) -E -include sys/sdt.h -x c /dev/null >/dev/null 2>&1 && echo 1 || echo 0)
.PHONY: FORCE
$(BUILD)/features: FORCE
	@mkdir -p $(@D)
	@echo '$(FEATURES)' | cmp -s - $@ || echo '$(FEATURES)' > $@

$(BUILD)/obj/%.o: %.c $(BUILD)/features
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) $(CFLAGS) -c $< -o $@

$(AR_LIB): $(LIB_OBJS)
	@mkdir -p $(@D)
	rm -f $@
	ar rcs $@ $^

$(SO): $(LIB_OBJS) librrr.map
	@mkdir -p $(@D)
	$(CC) -shared -Wl,-soname,$(SONAME) -Wl,--version-script=librrr.map \
		-Wl,--no-undefined $(LDFLAGS) -o $@ $(LIB_OBJS) $(LIBS)
	ln -sf librrr.so.$(VERSION) $(BUILD)/$(SONAME)
	ln -sf $(SONAME) $(BUILD)/librrr.so

define prog_rule
$(BUILD)/$(1): $$(patsubst %.c,$(BUILD)/obj/%.o,$$(call prog_srcs,$(1))) $(AR_LIB)
	$$(CC) $$(LDFLAGS) -o $$@ $$(filter %.o,$$^) $(AR_LIB) $$(LIBS) $$(PROG_LIBS)
endef
$(foreach p,$(PROGRAMS),$(eval $(call prog_rule,$(p))))

# Under SANITIZE=thread Criterion needs tests/tsan/shim/*.c (they say why).
TSAN_SHIM := $(if $(filter thread,$(SANITIZE)),$(patsubst %.c,$(BUILD)/obj/%.o,$(wildcard tests/tsan/shim/*.c)))
define test_rule
$(BUILD)/tests/$(1): $$(patsubst %.c,$(BUILD)/obj/%.o,$$(sort $$(wildcard tests/$(1)/*.c tests/$(1)/helpers/*.c))) $(TSAN_SHIM) $(TEST_LIB) $(TEST_PROG_LIBS) $(AR_LIB)
	@mkdir -p $$(@D)
	$$(CC) $$(LDFLAGS) -o $$@ $$(filter %.o,$$^) $(TEST_LIB) $(TEST_PROG_LIBS) $(AR_LIB) -lcriterion $$(LIBS) $$(PROG_LIBS)
endef
$(foreach d,$(TEST_DIRS),$(eval $(call test_rule,$(d))))

$(TEST_LIB): $(TEST_LIB_OBJS)
	@mkdir -p $(@D)
	rm -f $@
	ar rcs $@ $^

# libprog-P.a: program P's objects but the one with main()
define test_prog_rule
$(BUILD)/tests/libprog-$(1).a: $$(patsubst %.c,$(BUILD)/obj/%.o,$$(filter-out $(PROG_$(1))/main.c,$$(call prog_srcs,$(1))))
	@mkdir -p $$(@D)
	rm -f $$@
	ar rcs $$@ $$^
endef
$(foreach p,$(TEST_PROGS),$(eval $(call test_prog_rule,$(p))))

-include $(shell find $(BUILD)/obj -name '*.d' 2>/dev/null)

# ---------------------------------------------------------------- fio engine
# fio/rrr_engine.c -> $(BUILD)/rrr-fio.so, fio's external ioengine "rrr",
# compiled against the headers of fio's own source (Debian's source package
# of the installed fio, fetched by `make deps-fio` into $(FIO_DEPS)/, with
# config-host.h generated as Debian's build did: fio/fio-config.sh). Without
# that tree, or in a sanitizer build (fio cannot load an instrumented
# object), the engine is not built and tests/fio skips.
FIO_DEPS ?= .deps
FIO_SRC ?= $(FIO_DEPS)/fio-src
FIO_VERSION_FILE := $(wildcard $(FIO_SRC)/rrr-fio-version)
FIO_ENGINE := $(if $(SANITIZE),,$(if $(FIO_VERSION_FILE),$(BUILD)/rrr-fio.so))
FIO_CFLAGS_ENGINE := -std=gnu11 $(OPT) $(WARN) -fPIC -fvisibility=hidden -pthread -MMD -MP \
	-Iinclude -D_GNU_SOURCE -isystem $(FIO_SRC) -include $(FIO_SRC)/config-host.h \
	-DRRR_FIO_VERSION='"$(if $(FIO_VERSION_FILE),$(shell cat $(FIO_VERSION_FILE)))"'
.PHONY: fio-engine
fio-engine: $(FIO_ENGINE)
	@$(if $(FIO_ENGINE),:,echo "rrr: rrr-fio.so not built: $(if $(SANITIZE),sanitizer build,no fio source in $(FIO_SRC) (make deps-fio))")

$(BUILD)/obj/fio/rrr_engine.o: fio/rrr_engine.c $(FIO_VERSION_FILE)
	@mkdir -p $(@D)
	$(CC) $(FIO_CFLAGS_ENGINE) -c $< -o $@

# fio's symbols (log_err, fio_version_string, ...) come from the fio binary
# at dlopen(); only `ioengine` is exported.
$(BUILD)/rrr-fio.so: $(BUILD)/obj/fio/rrr_engine.o $(AR_LIB) fio/rrr-fio.map
	$(CC) -shared -Wl,--version-script=fio/rrr-fio.map $(LDFLAGS) -o $@ $< $(AR_LIB) $(LIBS)

# ---------------------------------------------------------------- set-up
# Debian packages the project needs; `make deps` installs the missing ones.
DEB_PKGS := gcc make pkg-config libibverbs-dev librdmacm-dev liburcu-dev libisal-dev libxxhash-dev \
	    libcriterion-dev rdma-core clang libclang-rt-14-dev valgrind tshark \
	    libnfs-utils gnuplot-nox groff-base systemtap-sdt-dev
DEB_PKGS_VM := qemu-system-x86 busybox-static cpio kmod rdma-core ibverbs-utils \
	       nfs-kernel-server nfs-common rpcbind sqlite3 python3 fio e2fsprogs xfsprogs btrfs-progs
# fio, and what fio's configure needs to describe Debian's fio build.
DEB_PKGS_FIO := fio dpkg-dev libaio-dev libnuma-dev
# The peer `make bench-peer` measures rrr against: NFS-Ganesha + libnfs nfs-cp.
DEB_PKGS_PEER := nfs-ganesha nfs-ganesha-vfs libnfs-utils rpcbind

# tests/net/netns.sh: ip netns, veth, tc netem.
DEB_PKGS_NETNS := iproute2 kmod nftables

.PHONY: deps deps-vm deps-peer deps-netns deps-fio
deps:
	@scripts/deps.sh $(DEB_PKGS)
deps-netns:
	@scripts/deps.sh $(DEB_PKGS_NETNS)
# Never fails: without root or network it says why and the engine is skipped.
deps-fio:
	@scripts/deps-fio.sh $(FIO_DEPS) $(DEB_PKGS_FIO)
deps-vm:
	@scripts/deps.sh $(DEB_PKGS_VM)
deps-peer:
	@scripts/deps.sh $(DEB_PKGS_PEER)

# ---------------------------------------------------------------- tests
# RRR_BUILD tells integration tests where the programs are.
CRITERION_OPTS ?= --jobs 2
.PHONY: test check test-unit test-example
test: deps deps-fio
	$(MAKE) all tests
	$(MAKE) check

check: test-includes test-help test-contracts test-log test-unit test-install test-example test-man test-probes

# The layer rule of docs/design.md: no #include crosses it (no file above
# transport/ sees a provider's private header; xdr/ does not use transport/);
# the same at link level; and the soft provider's files call each other one
# way (docs/soft-provider.md, Files).
.PHONY: test-includes
test-includes: lib
	@scripts/check-includes.sh
	@scripts/check-layers-nm.sh $(BUILD)
	@scripts/check-soft-layers.sh $(BUILD)

# `make help` names every target of this Makefile.
.PHONY: test-help
test-help:
	@scripts/check-help.sh

# Every exported function in include/rrr/*.h has a contract comment.
.PHONY: test-contracts
test-contracts:
	@scripts/check-contracts.sh

# The library prints nothing itself: operator lines go through <rrr/log.h>.
.PHONY: test-log
test-log:
	@scripts/check-log.sh

# Man pages: groff (and mandoc -Tlint when installed) without warnings, and
# every option of each program's --help documented in its page.
MAN_PAGES := $(sort $(wildcard man/*.[158]))
.PHONY: test-man
test-man: programs
	@scripts/check-man.sh $(BUILD)

# USDT probes: every probe of docs/tracing.md is in the built library
# (readelf -n); skipped with the reason without readelf or <sys/sdt.h>.
.PHONY: test-probes
test-probes: lib
	@scripts/check-probes.sh $(BUILD) $(CC)

# Install into a temporary DESTDIR and link an outside program via pkg-config.
.PHONY: test-install
test-install: all
	@scripts/check-install.sh $(BUILD)

# Each binary's output is kept in $(BUILD)/test-logs/; when one fails, its
# failing tests and assertions are repeated last, where a truncated CI log
# still shows them.
test-unit: all tests
	@set -e; mkdir -p $(BUILD)/test-logs; for t in $(TEST_BINS); do \
		echo "== $$t"; log=$(BUILD)/test-logs/$$(basename $$t).log; \
		if ! RRR_BUILD=$(abspath $(BUILD)) \
		LSAN_OPTIONS=suppressions=$(abspath tests/lsan.supp):print_suppressions=0 \
		UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
		$$t $(CRITERION_OPTS) > $$log 2>&1; then \
			cat $$log; echo "== $$t FAILED; its failures (all output: $$log):"; \
			grep -E '\[(FAIL|----)\]|Assertion|Crash|Timeout|ThreadSanitizer|AddressSanitizer|runtime error' $$log | tail -n 40; \
			exit 1; \
		fi; tail -n 1 $$log; \
	done

# The embedding examples (kvstore, blkstore), built only against an installed librrr.
test-example: all
	@scripts/test-example.sh $(BUILD)
	@scripts/test-blkstore.sh $(BUILD)

# ---------------------------------------------------------------- sanitizers
.PHONY: asan ubsan tsan
asan:
	$(MAKE) BUILD=build-asan SANITIZE=address test-unit
ubsan:
	$(MAKE) BUILD=build-ubsan SANITIZE=undefined test-unit
# make tsan: every Criterion suite plus the plain stress programs
# tests/tsan/*.c (-> $(BUILD)/tsan/<name>); any TSan report fails the target.
# soft_capture (wire format via tshark) is skipped: under TSan's slowdown short
# writes split FPDUs across TCP segments and its counts assume they do not.
# nfs_nlm's callback-and-restart case is skipped too: its grace period, GRANTED
# callback and SM_NOTIFY run in real time, and under TSan's slowdown they take
# longer than the test's bound (it runs in make test, asan and ubsan).
TSAN_TEST_DIRS ?= $(TEST_DIRS)
TSAN_FILTER ?= !(soft_capture/*|nfs_nlm/a_blocked_lock_is_granted_by_callback_and_a_restart_is_notified)
TSAN_OPTS := halt_on_error=1 exitcode=66 die_after_fork=0 second_deadlock_stack=1
TSAN_PROGS := $(patsubst tests/tsan/%.c,$(BUILD)/tsan/%,$(wildcard tests/tsan/*.c))
.SECONDARY: $(TSAN_PROGS:$(BUILD)/tsan/%=$(BUILD)/obj/tests/tsan/%.o)
tsan:
	TSAN_OPTIONS="$(TSAN_OPTS)" $(MAKE) BUILD=build-tsan SANITIZE=thread \
		TEST_DIRS="$(TSAN_TEST_DIRS)" CRITERION_OPTS="--jobs 1 --filter '$(TSAN_FILTER)'" \
		test-unit tsan-stress
.PHONY: tsan-stress
tsan-stress: $(TSAN_PROGS)
	@set -e; for p in $^; do echo "== $$p"; RRR_BUILD=$(abspath $(BUILD)) $$p; done
$(BUILD)/tsan/%: $(BUILD)/obj/tests/tsan/%.o $(TEST_LIB) $(AR_LIB)
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS) -o $@ $< $(TEST_LIB) $(AR_LIB) $(LIBS)

# ---------------------------------------------------------------- fuzzing
FUZZ_TIME ?= 30
FUZZ_SRCS := $(sort $(wildcard tests/fuzz/fuzz_*.c))
FUZZ_BINS := $(FUZZ_SRCS:tests/fuzz/%.c=build-fuzz/%)
FUZZ_LIB_OBJS := $(LIB_SRCS:%.c=build-fuzz/obj/%.o)
FUZZ_CFLAGS := -std=c11 -O1 -g $(WARN) -pthread -fsanitize=fuzzer-no-link,address,undefined

.SECONDARY: $(FUZZ_LIB_OBJS)
.PHONY: fuzz fuzz-build
fuzz-build: $(FUZZ_BINS)
fuzz: fuzz-build
	@set -e; for f in $(FUZZ_BINS); do \
		n=$$(basename $$f); c=tests/fuzz/corpus/$${n#fuzz_}; \
		mkdir -p build-fuzz/corpus/$$n; \
		echo "== $$n for $(FUZZ_TIME)s"; \
		$$f -max_total_time=$(FUZZ_TIME) -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
			-artifact_prefix=build-fuzz/$$n- build-fuzz/corpus/$$n $$c 2>&1 | tail -n 4; \
		test $${PIPESTATUS[0]} -eq 0; \
	done

build-fuzz/obj/%.o: %.c
	@mkdir -p $(@D)
	$(CLANG) $(CPPFLAGS) $(FUZZ_CFLAGS) -MMD -MP -c $< -o $@
-include $(shell find build-fuzz/obj -name '*.d' 2>/dev/null)

# a harness may add program objects (server/fs) as prerequisites: linked in
build-fuzz/%: tests/fuzz/%.c $(FUZZ_LIB_OBJS)
	$(CLANG) $(CPPFLAGS) $(FUZZ_CFLAGS) -fsanitize=fuzzer $< $(filter build-fuzz/obj/server/fs/%,$^) $(FUZZ_LIB_OBJS) -o $@ $(LIBS) $(PROG_LIBS)
# fuzz_config links rrr-server's parser (it is not in the library)
build-fuzz/fuzz_config: build-fuzz/obj/server/fs/config.o build-fuzz/obj/server/fs/log.o
# fuzz_nlm links rrr-server's NLM/NSM codecs
build-fuzz/fuzz_nlm: build-fuzz/obj/server/fs/nlm_xdr.o

# ---------------------------------------------------------------- demo, bench, vm
.PHONY: demo bench bench-peer test-vm bench-vm
demo: deps
	$(MAKE) all
	scripts/demo.sh $(BUILD)

# bench.sh runs scripts/bench-peer.sh too (hence deps-peer).
bench: deps deps-peer
	$(MAKE) all
	scripts/bench.sh $(BUILD)

# rrr-client (soft RDMA and TCP) vs NFS-Ganesha + nfs-cp, one 256 MiB file:
# docs/bench/peer.{txt,json}. PEER_SIZE_MIB, PEER_REPS, PEER_QUICK=1: see the script.
bench-peer: deps deps-peer
	$(MAKE) all
	scripts/bench-peer.sh $(BUILD) $${BENCH_OUT:-docs/bench}

# The soak of docs/reliability.md: SOAK_CLIENTS x SOAK_QD for SOAK_SECONDS on one
# rrr-server, injected connection drops, a server restart halfway; exit 0 when
# no byte was corrupted or lost and no operation failed (the clients re-send every
# outstanding call after a reconnect). SOAK_OPTS adds options (e.g. --fail-fast,
# --seed N).
SOAK_CLIENTS ?= 64
SOAK_QD ?= 32
SOAK_SECONDS ?= 600
.PHONY: soak
soak: deps
	$(MAKE) all
	$(BUILD)/rrr-bench soak --clients $(SOAK_CLIENTS) --qd $(SOAK_QD) \
		--seconds $(SOAK_SECONDS) $(SOAK_OPTS)

# Two network namespaces, veth + netem delay and 1 % loss (root; skips without).
.PHONY: test-netns
test-netns: deps deps-netns
	$(MAKE) all
	tests/net/netns.sh $(BUILD)

test-vm: deps deps-vm deps-fio
	$(MAKE) all tests
	tests/vm/run.sh $(BUILD)
	tests/vm/run.sh --siw $(BUILD)

bench-vm: deps deps-vm deps-fio
	$(MAKE) all
	tests/vm/run.sh --bench $(BUILD)
	tests/vm/run.sh --bench --siw $(BUILD)

# ---------------------------------------------------------------- install
.PHONY: install uninstall
install: lib programs fio-engine
	install -d $(DESTDIR)$(LIBDIR)/pkgconfig $(DESTDIR)$(INCLUDEDIR)/rrr $(DESTDIR)$(BINDIR)
	install -m 0755 $(SO) $(DESTDIR)$(LIBDIR)/
	ln -sf librrr.so.$(VERSION) $(DESTDIR)$(LIBDIR)/$(SONAME)
	ln -sf $(SONAME) $(DESTDIR)$(LIBDIR)/librrr.so
	install -m 0644 $(AR_LIB) $(DESTDIR)$(LIBDIR)/
	install -m 0644 include/rrr/*.h $(DESTDIR)$(INCLUDEDIR)/rrr/
	sed -e 's|@PREFIX@|$(PREFIX)|' -e 's|@LIBDIR@|$(LIBDIR)|' \
	    -e 's|@INCLUDEDIR@|$(INCLUDEDIR)|' -e 's|@VERSION@|$(VERSION)|' \
	    rrr.pc.in > $(DESTDIR)$(LIBDIR)/pkgconfig/rrr.pc
	for p in $(PROG_BINS); do install -m 0755 $$p $(DESTDIR)$(BINDIR)/; done
	install -d $(DESTDIR)$(MANDIR)/man1 $(DESTDIR)$(MANDIR)/man5 $(DESTDIR)$(MANDIR)/man8
	for m in $(MAN_PAGES); do install -m 0644 $$m $(DESTDIR)$(MANDIR)/man$${m##*.}/; done
	install -d $(DESTDIR)$(SYSTEMDUNITDIR) $(DESTDIR)$(SYSCONFDIR)/rrr
	sed -e 's|@BINDIR@|$(BINDIR)|g' -e 's|@SYSCONFDIR@|$(SYSCONFDIR)|g' \
	    dist/rrr-server.service.in > $(DESTDIR)$(SYSTEMDUNITDIR)/rrr-server.service
	chmod 0644 $(DESTDIR)$(SYSTEMDUNITDIR)/rrr-server.service
	@if [ -e $(DESTDIR)$(SYSCONFDIR)/rrr/rrr-server.conf ]; then \
		echo "keeping $(DESTDIR)$(SYSCONFDIR)/rrr/rrr-server.conf (the sample is dist/rrr-server.conf)"; \
	else install -m 0644 dist/rrr-server.conf $(DESTDIR)$(SYSCONFDIR)/rrr/rrr-server.conf; fi
	$(if $(FIO_ENGINE),install -d $(DESTDIR)$(LIBDIR)/rrr)
	$(if $(FIO_ENGINE),install -m 0755 $(FIO_ENGINE) $(DESTDIR)$(LIBDIR)/rrr/rrr-fio.so)

uninstall:
	rm -f $(DESTDIR)$(LIBDIR)/librrr.so* $(DESTDIR)$(LIBDIR)/librrr.a
	rm -f $(DESTDIR)$(LIBDIR)/pkgconfig/rrr.pc
	rm -rf $(DESTDIR)$(INCLUDEDIR)/rrr
	for p in $(PROGRAMS); do rm -f $(DESTDIR)$(BINDIR)/$$p; done
	for m in $(MAN_PAGES); do rm -f $(DESTDIR)$(MANDIR)/man$${m##*.}/$${m#man/}; done
	rm -f $(DESTDIR)$(SYSTEMDUNITDIR)/rrr-server.service
	@# the config only when it is still the sample (an edited one is the operator's)
	@if cmp -s dist/rrr-server.conf $(DESTDIR)$(SYSCONFDIR)/rrr/rrr-server.conf; then \
		rm -f $(DESTDIR)$(SYSCONFDIR)/rrr/rrr-server.conf; \
		rmdir $(DESTDIR)$(SYSCONFDIR)/rrr 2>/dev/null || true; fi
	rm -f $(DESTDIR)$(LIBDIR)/rrr/rrr-fio.so
	rmdir $(DESTDIR)$(LIBDIR)/rrr 2>/dev/null || true

# ---------------------------------------------------------------- housekeeping
FORMAT_FILES = $(shell git ls-files '*.c' '*.h' 2>/dev/null)
.PHONY: format format-check clean help
format:
	clang-format -i $(FORMAT_FILES)
format-check:
	clang-format --dry-run -Werror $(FORMAT_FILES)

clean:
	rm -rf build build-asan build-ubsan build-tsan build-fuzz

help:
	@echo "rrr: make TARGET [VAR=value ...]"
	@echo ""
	@echo "build"
	@echo "  all            library, programs and the fio engine (the default)"
	@echo "  lib            librrr.so and librrr.a only"
	@echo "  programs       rrr-server, rrr-client, rrr-bench, rrr-devcheck"
	@echo "  tests          the Criterion test binaries (build/tests/<dir>)"
	@echo "  fio-engine     build/rrr-fio.so (needs fio's source: make deps-fio)"
	@echo "  install        into DESTDIR/PREFIX (config never overwritten)"
	@echo "  uninstall      remove what install put there"
	@echo "  clean          remove every build folder"
	@echo "set-up (Debian packages, as root)"
	@echo "  deps           build and test packages"
	@echo "  deps-fio       fio's source for the engine"
	@echo "  deps-vm        qemu and the guest kernel's packages"
	@echo "  deps-peer      peers for comparison (Ganesha, knfsd tools)"
	@echo "  deps-netns     what the two-namespace test needs"
	@echo "run"
	@echo "  demo           rrr-server and rrr-client on the soft provider"
	@echo "tests"
	@echo "  test           deps, build, then every check below (what CI runs first)"
	@echo "  check          every check without deps or build"
	@echo "  test-unit      every Criterion binary"
	@echo "  test-includes  the layer rule: includes and link-level references; soft calls one way"
	@echo "  test-contracts a contract comment on every public function"
	@echo "  test-log       the library prints only through its log hook"
	@echo "  test-install   install into a temporary root, link through pkg-config"
	@echo "  test-example   the examples built against the installed library"
	@echo "  test-man       man pages: groff warnings, every --help option"
	@echo "  test-probes    the documented USDT probes are in the library"
	@echo "  test-help      this list names every target of the Makefile"
	@echo "  asan ubsan tsan  the tests under a sanitizer (build-asan/ ...)"
	@echo "  tsan-stress    only the ThreadSanitizer stress programs"
	@echo "  fuzz           every libFuzzer harness for FUZZ_TIME seconds"
	@echo "  fuzz-build     build the harnesses only"
	@echo "  soak           SOAK_CLIENTS x SOAK_QD for SOAK_SECONDS under faults: nothing lost"
	@echo "  test-netns     two network namespaces with delay and loss (root)"
	@echo "  test-vm        the verbs provider and kernel peers in qemu (rxe and siw)"
	@echo "benchmarks"
	@echo "  bench          rrr-bench's suite and the peer comparison (scripts/bench.sh)"
	@echo "  bench-peer     rrr-client against NFS-Ganesha on this host"
	@echo "  bench-vm       the kernel client against rrr-server and knfsd in qemu (rxe, siw)"
	@echo "style"
	@echo "  format         clang-format the tree"
	@echo "  format-check   fail on any formatting difference"
	@echo "  help           this list"
	@echo ""
	@echo "vars: BUILD=$(BUILD) PREFIX=$(PREFIX) DESTDIR= WERROR=1 (CI=1) FUZZ_TIME=$(FUZZ_TIME)"
	@echo "      SANITIZE=address|undefined|thread TEST_DIRS=\"...\" CRITERION_OPTS=\"...\""

# SPDX-License-Identifier: GPL-2.0
#
# exfat2: an out-of-tree exFAT driver, tested only inside QEMU.
#
#   make                 install missing packages, build exfat2/exfat2.ko
#   make check [T=...]   what CI runs: strict build (W=1, no warnings),
#                        lint, sparse, then tests/check-all.sh: all tests on
#                        the packaged kernel, then the debug kernel (built
#                        once, cached), KUnit and the debug pass; the last
#                        line is "N passed, N failed".  DEBUG=0: packaged only
#   make test [T=...]    only the VM tests on the packaged kernel (T: name
#                        substrings or globs)
#   make debug-test [T=...]  the KUnit suites and the debug pass only
#   make kunit           the KUnit suites under the debug kernel
#   make bench [QUICK=1] benchmarks against the in-tree driver (BENCHMARKS.md)
#   make fuzz [N=1000] [START=1] [JOBS=1] [DEBUG=1]  N corrupted images
#                        (tests/guest/corrupt.py) mounted and used in JOBS
#                        VMs (tests/fuzz.sh); DEBUG=1: the debug kernel
#   make patches         the upstream patch series (scripts/mkpatches.sh),
#                        applied to a fresh linux-source-6.12 tree, each
#                        patch built with W=1 and checkpatch'ed
#   make lint            checkpatch.pl --strict on the C sources
#   make sparse          sparse (C=2) on exfat2, fails on its warnings
#   make run             mount an image with exfat2 in a VM:
#                        [IMG=file [RW=1]] [SIZE=256M] [CMD="ls -la /mnt"]
#   make clean
#
# KVER=release or KDIR=tree builds against another kernel; KERNEL=bzImage
# (with KDIR= its build tree) boots another kernel for test and run.

SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c
.DEFAULT_GOAL := all
.NOTPARALLEL:
MAKEFLAGS += --no-print-directory

# The packaged 6.12 kernel that has a build tree (evaluated only when used,
# i.e. after scripts/setup.sh has installed it).
KVER ?= $(shell ls -d /lib/modules/6.12.*-amd64/build 2>/dev/null | sort -V | tail -n1 | cut -d/ -f4)
KDIR ?= /lib/modules/$(KVER)/build
MOD := $(CURDIR)/exfat2
CACHE := $(or $(XDG_CACHE_HOME),$(or $(HOME),/tmp)/.cache)/exfat2-vm
LOGS := $(CACHE)/logs$(subst /,_,$(CURDIR))
CHECKPATCH := $(CACHE)/checkpatch/scripts/checkpatch.pl
KSRC_TAR := $(lastword $(wildcard /usr/src/linux-source-6.12.tar.xz))
LINT_FILES = $(filter-out %.mod.c,$(wildcard exfat2/*.[ch])) tests/selftest/warn/warn_on_load.c \
	tests/kmod/race_hold.c
USER_LINT_FILES = tests/tools/fsx-lite.c tests/tools/io-verify.c
# Test tools built on the host (the guest sees the checkout read-only).
TOOLS := tests/tools/fsx-lite tests/tools/io-verify
TEST_ARGS = $(if $(KERNEL),--kernel $(KERNEL)) --kdir $(KDIR) $(T)

.PHONY: all setup build build-strict lint sparse test check run clean kdir _lint _sparse _test \
	debug-test kunit bench patches fuzz _check

# Each public target first runs setup, then a sub-make, so that KVER is
# discovered after any missing package was installed.
all: setup
	@$(MAKE) build

check: setup
	@$(MAKE) build-strict _lint _sparse _check

_check: $(TOOLS)
	@tests/check-all.sh --kdir $(KDIR) $(T)

debug-test: setup
	@$(MAKE) build $(TOOLS)
	@tests/check-all.sh --skip-packaged $(T)

kunit: setup
	@tests/kunit.sh

patches: setup
	@tests/patches.sh

N ?= 1000
START ?= 1
FUZZ_OUT := $(CACHE)/fuzz
fuzz: setup
	@$(MAKE) build
	@tests/fuzz.sh --count $(N) --start $(START) --jobs $(or $(JOBS),1) \
		$(if $(filter 1,$(DEBUG)),--debug) --out $(FUZZ_OUT)

bench: setup
	@$(MAKE) build
	@KERNEL='$(KERNEL)' bench/run-bench.sh $(if $(filter 1,$(QUICK)),--quick) $(BENCH_ARGS)

run: setup
	@$(MAKE) build
	@tools/vm/run-image.sh

test lint sparse: setup
	@$(MAKE) _$@

setup:
	@scripts/setup.sh

build: kdir
	$(MAKE) -C $(KDIR) M=$(MOD) W=1 modules

# Rebuild from scratch so that no warning hides in an up-to-date object.
build-strict: kdir
	@$(MAKE) -C $(KDIR) M=$(MOD) clean >/dev/null
	@$(MAKE) -C $(KDIR) M=$(MOD) W=1 modules 2>&1 | tee $(LOGS)/build.log
	@if grep -E '(warning|WARNING):' $(LOGS)/build.log | grep -F '$(MOD)/'; then \
		echo "build: the warnings above must be fixed"; exit 1; fi

_sparse: kdir
	@$(MAKE) -C $(KDIR) M=$(MOD) W=1 C=2 CHECK=sparse modules 2>&1 | tee $(LOGS)/sparse.log
	@if grep -E ': (warning|error):' $(LOGS)/sparse.log | grep -F '$(MOD)/'; then \
		echo "sparse: the warnings above must be fixed"; exit 1; fi

_lint: $(CHECKPATCH)
	@mkdir -p $(LOGS)
	@$(CHECKPATCH) --strict --no-tree -q --show-types -f $(LINT_FILES) \
		>$(LOGS)/lint.log 2>&1 || true
	@# userspace C: no kernel attribute macros, <inttypes.h> names
	@$(CHECKPATCH) --strict --no-tree -q --show-types \
		--ignore PREFER_DEFINED_ATTRIBUTE_MACRO,CAMELCASE \
		-f $(USER_LINT_FILES) >>$(LOGS)/lint.log 2>&1 || true
	@cat $(LOGS)/lint.log
	@if grep -qE '^(ERROR|WARNING|CHECK)' $(LOGS)/lint.log; then \
		echo "lint: checkpatch found the problems above"; exit 1; fi
	@echo "lint: $(words $(LINT_FILES) $(USER_LINT_FILES)) files clean"
	@# the layers of exfat.h: no call up but the ones allowed
	@python3 scripts/callgraph.py >$(LOGS)/callgraph.log || \
		{ cat $(LOGS)/callgraph.log; exit 1; }
	@tail -n 1 $(LOGS)/callgraph.log
	@python3 scripts/callgraph.py --self-test

$(CHECKPATCH):
	@test -n "$(KSRC_TAR)" || { echo "no /usr/src/linux-source-6.12.tar.xz (scripts/setup.sh)"; exit 1; }
	@echo "extracting checkpatch.pl from $(KSRC_TAR) (once)"
	@rm -rf $(CACHE)/checkpatch && mkdir -p $(CACHE)/checkpatch
	@tar -xJf $(KSRC_TAR) -C $(CACHE)/checkpatch --strip-components=1 --wildcards \
		'*/scripts/checkpatch.pl' '*/scripts/spelling.txt' '*/scripts/const_structs.checkpatch'

tests/tools/fsx-lite: tests/tools/fsx-lite.c
	gcc -O2 -Wall -Wextra -o $@ $<

tests/tools/io-verify: tests/tools/io-verify.c
	gcc -O2 -Wall -Wextra -o $@ $< -luring -lpthread

# faults: needs fault injection, which only the debug kernel has
_test: $(TOOLS)
	@tests/run-tests.sh $(TEST_ARGS) $(if $(KERNEL),,'!faults:')

kdir:
	@mkdir -p $(LOGS)
	@test -d "$(KDIR)" || \
		{ echo "no kernel build tree '$(KDIR)' (KVER=$(KVER)); run scripts/setup.sh"; exit 1; }
	@test -d exfat2 || { echo "no exfat2/ directory"; exit 1; }

clean:
	@if [ -d exfat2 ] && [ -d "$(KDIR)" ]; then $(MAKE) -C $(KDIR) M=$(MOD) clean; fi
	rm -rf $(LOGS)

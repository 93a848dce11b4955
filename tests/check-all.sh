#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# Every test, in phases, each timed; the last line is the total
# "N passed, N failed" and the exit status is 0 iff nothing failed.
#
#   1. packaged   all tests (tests/run-tests.sh) on Debian's 6.12 kernel
#   2. debug-kernel  build (once, cached) the debug kernel and exfat2.ko
#                 against it with W=1 (scripts/debug-kernel.sh --module)
#   3. kunit      exfat2's KUnit suites and a kmemleak scan (tests/kunit.sh)
#   4. debug      the debug pass: DEBUG_TESTS under the debug kernel
#                 (KASAN, UBSAN, KFENCE, lockdep, kmemleak, hung task)
#
# Usage: tests/check-all.sh [--kdir DIR] [--skip-packaged] [FILTER...]
#   FILTER limits phase 1 to those tests and phase 4 to those of DEBUG_TESTS
#   that match.  DEBUG=0 skips phases 2-4, --skip-packaged phase 1.  Environment: KERNEL (phase 1
#   boots it instead of the packaged kernel).
set -uo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(dirname "$here")

# The debug pass: the read, write and namespace tests, the random
# exerciser (write:fsx_*, the stress run), the ioctls, a smaller crash
# replay (crash:replay_short takes REPLAY_DEBUG there) and 300 hostile
# images (hostile:batch and small_batch) with the chain-versus-bitmap cases, the
# fault-injection sweeps (faults:, debug kernel only; races: needs kprobes,
# which the debug kernel lacks: packaged pass only), the foreign-volume
# cases with the namespace exerciser on two of its layouts, but not the
# four that mostly repeat other tests at a larger scale (many geometries,
# a 20,000-entry directory, a 4 TiB volume, many sync patterns): under
# the debug kernel they alone would take most of CI's time.  Timeouts are
# scaled: the debug kernel runs the tests 2-4 times slower than the
# packaged one.
DEBUG_TESTS=(smoke: read: data: ns: write: ioctl: crash:replay_short
	hostile:batch hostile:small_batch hostile:used hostile:chain hostile:directory
	hostile:vendor faults: foreign:rename foreign:root foreign:lone
	foreign:nfs foreign:nsx_judge foreign:nsx_crafted_s512_c512
	foreign:nsx_intree_written_c4k)
DEBUG_SKIP=('!read:cluster_and_sector_sizes' '!read:big_directory'
	'!read:sparse_4tib' '!data:small_files_survive_sync')
DEBUG_SCALE=${DEBUG_SCALE:-6}

kdir='' packaged=1
filters=()
while [ $# -gt 0 ]; do
	case "$1" in
	--kdir) kdir=$2; shift 2 ;;
	--skip-packaged) packaged=0; shift ;;
	-h|--help) sed -n '4,/^set -u/p' "$0" | sed -e '$d' -e 's/^# \{0,1\}//'; exit 0 ;;
	*) filters+=("$1"); shift ;;
	esac
done

passed=0 failed=0
summary=()
count() {	# count PHASE LOGFILE RC: add the phase's "N passed, N failed"
	local last p f
	last=$(grep -E '^[0-9]+ passed, [0-9]+ failed$' "$2" | tail -n1)
	if [ -z "$last" ]; then
		p=0 f=1
		echo "FAIL $1: no result line (exit status $3)"
	else
		p=${last%% passed*}
		f=${last#*passed, }
		f=${f%% failed*}
		if [ "$3" != 0 ] && [ "$f" = 0 ]; then
			f=1
			echo "FAIL $1: exit status $3"
		fi
	fi
	passed=$((passed + p))
	failed=$((failed + f))
	summary+=("$(printf '%-13s %4d passed, %d failed, %5ds' "$1" "$p" "$f" $(($(date +%s) - start)))")
}

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# 1. Packaged kernel
if [ $packaged = 1 ]; then
	start=$(date +%s)
	echo "=== phase packaged: all tests on the packaged kernel"
	args=()
	[ -z "${KERNEL:-}" ] || args+=(--kernel "$KERNEL")
	[ -z "$kdir" ] || args+=(--kdir "$kdir")
	# faults: needs fault injection, which only the debug kernel has
	"$here/run-tests.sh" "${args[@]}" "${filters[@]}" '!faults:' 2>&1 | tee "$tmp/packaged"
	count packaged "$tmp/packaged" "${PIPESTATUS[0]}"
fi

if [ "${DEBUG:-1}" != 0 ]; then
	# 2. Debug kernel and module
	start=$(date +%s)
	echo "=== phase debug-kernel: build or reuse (scripts/debug-kernel.sh)"
	if "$repo/scripts/debug-kernel.sh" --module >"$tmp/paths"; then
		cat "$tmp/paths"
		echo "PASS debug:build_kernel_and_module" >"$tmp/dk"
		echo "1 passed, 0 failed" >>"$tmp/dk"
		count debug-kernel "$tmp/dk" 0
		eval "$(grep -E '^(KERNEL|MODULES_DIR|KDIR|EXFAT2_KO)=' "$tmp/paths")"

		# 3. KUnit
		start=$(date +%s)
		echo "=== phase kunit: KUnit suites under the debug kernel"
		"$here/kunit.sh" --kernel "$KERNEL" --modules-dir "$MODULES_DIR" \
			--ko "$EXFAT2_KO" 2>&1 | tee "$tmp/kunit"
		count kunit "$tmp/kunit" "${PIPESTATUS[0]}"

		# 4. Debug pass
		start=$(date +%s)
		# DEBUG_TESTS less DEBUG_SKIP, narrowed by the user's filters
		# (runner.py: "+F" narrows, "!F" excludes)
		sel=("${DEBUG_TESTS[@]}")
		if [ ${#filters[@]} -eq 0 ]; then
			sel+=("${DEBUG_SKIP[@]}")
		else
			for f in "${filters[@]}"; do
				case "$f" in
				'!'*) sel+=("$f") ;;
				*) sel+=("+$f") ;;
				esac
			done
		fi
		if [ -n "$(python3 -B "$here/guest/runner.py" --list \
				--no-selftest "${sel[@]}")" ]; then
			echo "=== phase debug: ${sel[*]} under the debug kernel"
			# the whole VM's limit: about 2,500 s of work on a quiet
			# host, each test bounded by its own (scaled) timeout
			TEST_TIMEOUT=${TEST_TIMEOUT:-4200} \
			TIMEOUT_SCALE=$DEBUG_SCALE "$here/run-tests.sh" \
				--kernel "$KERNEL" --modules-dir "$MODULES_DIR" \
				--kdir "$KDIR" --ko "$EXFAT2_KO" "${sel[@]}" 2>&1 |
				tee "$tmp/debug"
			count debug "$tmp/debug" "${PIPESTATUS[0]}"
		fi
	else
		echo "FAIL debug:build_kernel_and_module" | tee "$tmp/dk"
		echo "0 passed, 1 failed" >>"$tmp/dk"
		count debug-kernel "$tmp/dk" 1
	fi
fi

echo "=== summary"
printf '%s\n' "${summary[@]}"
echo "$passed passed, $failed failed"
[ "$failed" = 0 ]

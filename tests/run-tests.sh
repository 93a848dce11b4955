#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# Run every test in one VM boot and print one PASS/FAIL line per test; the
# last line is "N passed, N failed".  Exit status 0 iff nothing failed.
#
# Usage: tests/run-tests.sh [--kernel BZIMAGE] [--modules-dir DIR]
#                           [--kdir DIR] [--ko EXFAT2_KO] [--list] [FILTER...]
#
#   FILTER         test name substring or glob (several: any may match;
#                  !FILTER excludes what it matches); the harness
#                  self-tests always run
#   --kernel       boot this kernel instead of the packaged 6.12 one
#   --modules-dir  its modules (default: /lib/modules/RELEASE)
#   --kdir         kernel build tree for the self-test module (default: the
#                  one of the booted kernel)
#   --ko           our module, built for that kernel (default:
#                  exfat2/exfat2.ko, built for the packaged one)
#   --list         print the test names and exit (no VM)
#
# exfat2/exfat2.ko must already be built (the top Makefile does it).
# Results and logs: ${XDG_CACHE_HOME:-~/.cache}/exfat2-vm/runs/, the newest
# also as .../exfat2-vm/last-run.
# TEST_TIMEOUT (seconds, default 3000) bounds the whole VM run;
# TIMEOUT_SCALE (default 1) multiplies each test's own timeout (debug kernels).
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(dirname "$here")
cache=${XDG_CACHE_HOME:-${HOME:-/tmp}/.cache}/exfat2-vm
EXPECTED_SPLAT="exfat2 harness self-test"	# the text of the self-test WARN

kernel='' moddir='' kdir='' ko_ours='' list=0
filters=()
while [ $# -gt 0 ]; do
	case "$1" in
	--kernel) kernel=$2; shift 2 ;;
	--modules-dir) moddir=$2; shift 2 ;;
	--kdir) kdir=$2; shift 2 ;;
	--ko) ko_ours=$2; shift 2 ;;
	--list) list=1; shift ;;
	-h|--help) sed -n '4,/^set -e/p' "$0" | sed -e '$d' -e 's/^# \{0,1\}//'; exit 0 ;;
	-*) echo "run-tests.sh: unknown option $1" >&2; exit 2 ;;
	*) filters+=("$1"); shift ;;
	esac
done

t0=$(date +%s.%N)
phase_start=$t0
phase() {	# phase NAME: print how long the phase that just ended took
	local now
	now=$(date +%s.%N)
	printf 'time: %-18s %6.1fs\n' "$1" "$(echo "$now - $phase_start" | bc)"
	phase_start=$now
}

if [ $list = 1 ]; then
	exec python3 -B "$here/guest/runner.py" --list "${filters[@]}"
fi
if [ ${#filters[@]} -gt 0 ] &&
	[ -z "$(python3 -B "$here/guest/runner.py" --list --no-selftest "${filters[@]}")" ]; then
	echo "run-tests.sh: no test matches: ${filters[*]}" >&2
	exit 2
fi

# Kernel build tree for the self-test module.
if [ -z "$kdir" ]; then
	if [ -n "$kernel" ]; then
		off=$(od -An -tu2 -j 526 -N 2 "$kernel" | tr -d ' ')
		rel=$(dd if="$kernel" bs=1 skip=$((off + 512)) count=200 status=none |
			tr '\0' '\n' | head -n1 | cut -d' ' -f1)
		tree=$(cd "$(dirname "$kernel")/../../.." && pwd)
		if [ -n "$moddir" ] && [ -d "$moddir/build" ]; then
			kdir=$moddir/build
		elif [ -d "/lib/modules/$rel/build" ]; then
			kdir=/lib/modules/$rel/build
		elif [ -f "$tree/Module.symvers" ]; then
			kdir=$tree
		fi
	else
		for d in /lib/modules/6.12.*-amd64; do
			[ -d "$d/build" ] && kdir=$d/build
		done
	fi
fi

results=()	# "PASS name ..." / "FAIL name: ..." lines added on the host

# 1. The self-test module (cached by source, kernel tree and release).
ko=
if [ -z "$kdir" ] || [ ! -d "$kdir" ]; then
	results+=("FAIL selftest:build_warn_module: no kernel build tree (use --kdir)")
else
	src=$repo/tests/selftest/warn
	key=$(cat "$src/warn_on_load.c" "$src/leak_on_load.c" "$src/Kbuild" \
		"$kdir/include/config/kernel.release" \
		<(readlink -f "$kdir") 2>/dev/null | sha256sum | cut -c1-16)
	bdir=$cache/selftest-warn-$key
	if [ ! -f "$bdir/warn_on_load.ko" ]; then
		mkdir -p "$cache"
		tmp=$(mktemp -d "$cache/selftest-build.XXXXXX")
		cp "$src/warn_on_load.c" "$src/leak_on_load.c" "$src/Kbuild" "$tmp/"
		if make -C "$kdir" M="$tmp" modules >"$tmp/build.log" 2>&1; then
			rm -rf "$bdir"
			mv "$tmp" "$bdir" 2>/dev/null || rm -rf "$tmp"	# lost a race: fine
		else
			cat "$tmp/build.log" >&2
			results+=("FAIL selftest:build_warn_module: see $tmp/build.log")
		fi
	fi
	[ ! -f "$bdir/warn_on_load.ko" ] || ko=$bdir/warn_on_load.ko
fi
# The helper modules of the races: tests (tests/kmod), cached the same way.
kmod=
if [ -n "$kdir" ] && [ -d "$kdir" ]; then
	src=$repo/tests/kmod
	key=$(cat "$src"/*.c "$src/Kbuild" "$kdir/include/config/kernel.release" \
		<(readlink -f "$kdir") 2>/dev/null | sha256sum | cut -c1-16)
	kdst=$cache/kmod-$key
	if [ ! -f "$kdst/race_hold.ko" ]; then
		mkdir -p "$cache"
		tmp=$(mktemp -d "$cache/kmod-build.XXXXXX")
		cp "$src"/*.c "$src/Kbuild" "$tmp/"
		if make -C "$kdir" M="$tmp" modules >"$tmp/build.log" 2>&1; then
			rm -rf "$kdst"
			mv "$tmp" "$kdst" 2>/dev/null || rm -rf "$tmp"
		else
			cat "$tmp/build.log" >&2
		fi
	fi
	[ ! -f "$kdst/race_hold.ko" ] || kmod=$kdst
fi
phase "selftest module"

# 2. One VM boot runs all the tests.
# Each run has its own directory (runs may overlap); last-run points to
# the newest.  Kept: the 5 newest, the 5 newest of the older ones with a
# failure (a rare failure's logs must outlive the reruns that follow it),
# and runs still going (marked .active, unless that is more than a day
# old).
mkdir -p "$cache/runs"
out=$(mktemp -d "$cache/runs/$(date +%Y%m%d-%H%M%S).XXXX")
touch "$out/.active"
trap 'rm -f "$out/.active"' EXIT
ln -sfn "$out" "$cache/last-run"
failed_kept=0
# shellcheck disable=SC2012 # our own names, no odd characters
ls -1dt "$cache"/runs/*/ | tail -n +6 | while read -r d; do
	if [ -n "$(find "$d.active" -mmin -1440 2>/dev/null)" ]; then
		continue
	fi
	if [ $failed_kept -lt 5 ] && grep -qs '^FAIL ' "$d/results.txt"; then
		failed_kept=$((failed_kept + 1))
		continue
	fi
	rm -rf "$d"
done
mkdir -p "$out/selftest"
[ -z "$ko" ] || cp "$ko" "${ko%/*}/leak_on_load.ko" "$out/selftest/"
# without them, the races: tests fail ("no race_hold.ko")
[ -z "$kmod" ] || { mkdir -p "$out/kmod" && cp "$kmod"/*.ko "$out/kmod/"; }
guestenv=()
if [ -n "$ko_ours" ]; then
	cp "$ko_ours" "$out/exfat2.ko"
	guestenv=(EXFAT2_KO=/run/out/exfat2.ko)
fi
vmopts=(--out "$out" --timeout "${TEST_TIMEOUT:-3000}" --expect-splat "$EXPECTED_SPLAT")
[ -z "$kernel" ] || vmopts+=(--kernel "$kernel")
[ -z "$moddir" ] || vmopts+=(--modules-dir "$moddir")

start_vm() {
	"$repo/tools/vm/vm.sh" "${vmopts[@]}" -- \
		env "${guestenv[@]}" python3 -B tests/guest/runner.py --timeout-scale="${TIMEOUT_SCALE:-1}" "${filters[@]}" &
	vmpid=$!
}
start_vm

# Print the guest's results as they arrive.
shown=0
show_new() {
	local n
	[ -f "$out/results.txt" ] || return 0
	n=$(wc -l <"$out/results.txt")	# complete lines only
	if [ "$n" -gt "$shown" ]; then
		sed -n "$((shown + 1)),${n}p" "$out/results.txt"
		shown=$n
	fi
}
wait_vm() {
	while kill -0 "$vmpid" 2>/dev/null; do
		show_new
		sleep 1
	done
	vmrc=0
	wait "$vmpid" || vmrc=$?
	show_new
}
wait_vm
# A guest kernel that dies while booting, before the command starts (no
# module of ours is loaded yet: seen once under TCG, an int3 Oops in
# hrtimer code at 1.2 s), is not a test result: boot once more.
if [ "$vmrc" != 0 ] && [ ! -f "$out/planned.txt" ] &&
	! grep -qs 'guest-init: running command' "$out/console.log"; then
	mv "$out/console.log" "$out/console-boot-failure.log" 2>/dev/null || true
	rm -f "$out/host-splats" "$out/host-expected-splat"
	echo "run-tests.sh: the VM died while booting (exit $vmrc, see $out/console-boot-failure.log); booting again"
	start_vm
	wait_vm
fi

# 3. What the guest could not report itself.
if [ -f "$out/planned.txt" ]; then
	running=$(cat "$out/running.txt" 2>/dev/null || true)
	while read -r name; do
		if grep -qsE "^(PASS|FAIL) $name( |:)" "$out/results.txt"; then
			continue
		elif [ "$name" = "$running" ]; then
			results+=("FAIL $name: did not finish: the VM stopped while it ran")
		else
			results+=("FAIL $name: not run (the VM stopped first)")
		fi
	done <"$out/planned.txt"
else
	results+=("FAIL vm:runner: the test runner did not start (see $out/console.log)")
fi
case $vmrc in
124) results+=("FAIL vm:timeout: the VM ran out of time (TEST_TIMEOUT=${TEST_TIMEOUT:-3000})") ;;
126) results+=("FAIL vm:died: the VM stopped without reporting (see $out/console.log)") ;;
esac
if [ -s "$out/host-splats" ]; then
	first=$(grep -vm1 'Call Trace:' "$out/host-splats" || head -n1 "$out/host-splats")
	results+=("FAIL vm:kernel-splat: $first")
fi
if grep -qs '^expected-splat: detected' "$out/host-expected-splat"; then
	results+=("PASS selftest:host_splat_detected [$(cat "$out/host-expected-splat")]")
else
	results+=("FAIL selftest:host_splat_detected: $(cat "$out/host-expected-splat" 2>/dev/null ||
		echo 'no report from vm.sh')")
fi
if [ "$vmrc" != 0 ] && [ "$vmrc" != 124 ] && [ "$vmrc" != 125 ] && [ "$vmrc" != 126 ] &&
	! grep -qs '^FAIL' "$out/results.txt"; then
	results+=("FAIL vm:runner: exit status $vmrc without a failed test (see $out/console.log)")
fi
for r in "${results[@]}"; do
	echo "$r"
done

boot=$(cat "$out/runner-start-uptime" 2>/dev/null || echo '?')
phase "vm (runner at ${boot}s)"
printf 'time: %-18s %6.1fs\n' total "$(echo "$(date +%s.%N) - $t0" | bc)"
echo "results and logs: $out"

passed=$(( $(grep -c '^PASS' "$out/results.txt" 2>/dev/null || true) +
	$(printf '%s\n' "${results[@]}" | grep -c '^PASS' || true) ))
failed=$(( $(grep -c '^FAIL' "$out/results.txt" 2>/dev/null || true) +
	$(printf '%s\n' "${results[@]}" | grep -c '^FAIL' || true) ))
echo "$passed passed, $failed failed"
[ "$failed" = 0 ]

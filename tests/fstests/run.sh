#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# Run fstests (xfstests) against exfat2 and against the in-tree exfat
# driver, each in its own QEMU VM, and print a table side by side.
#
# Usage: tests/fstests/run.sh --fstests DIR [options] [TEST...]
#
#   --fstests DIR      an fstests tree already built (make) outside this
#                      repository; this project never fetches or builds it
#   --drivers LIST     ours,intree (default), or one of them
#   --list FILE        tests to run (default tests/fstests/generic.list);
#                      TEST arguments (generic/013 ...) replace the list
#   --limit SECONDS    per-test time limit (default 900): a test still
#                      running then is killed and counted as "timeout"
#   --kernel BZIMAGE --modules-dir DIR --ko KO
#                      boot another kernel (e.g. the debug one) with that
#                      exfat2 module; default: packaged kernel, exfat2/exfat2.ko
#   --out DIR          results (default ~/.cache/exfat2-vm/fstests/<time>)
#
# Each VM gets two 8 GiB virtio disks, sparse files on the host (TEST and
# SCRATCH).  TEST is made anew (mkfs.exfat) before each test, so that one
# test filling it (exFAT has no sparse files: a write at a large offset
# allocates everything before it) does not fail the ones after; fstests
# makes SCRATCH itself, checks both with fsck.exfat after each test and
# fails a test that left a kernel warning in dmesg.
# Results per driver: OUT/<driver>/results (fstests' own files) and
# OUT/<driver>/summary (test, status, seconds); the table is OUT/table.txt.
# Status: pass, fail, notrun, timeout.  Expected results and the reason
# for each remaining failure: tests/fstests/expected.txt.
set -euo pipefail

REPO=$(cd "$(dirname "$0")/../.." && pwd)
fstests= drivers=ours,intree list=$REPO/tests/fstests/generic.list limit=900
kernel= moddir= ko=$REPO/exfat2/exfat2.ko out=
tests=()
die() { echo "fstests: $*" >&2; exit 2; }
while [ $# -gt 0 ]; do
	case $1 in
	--fstests) fstests=$(cd "$2" && pwd); shift 2 ;;
	--drivers) drivers=$2; shift 2 ;;
	--list) list=$2; shift 2 ;;
	--limit) limit=$2; shift 2 ;;
	--kernel) kernel=$2; shift 2 ;;
	--modules-dir) moddir=$2; shift 2 ;;
	--ko) ko=$(readlink -f "$2"); shift 2 ;;
	--out) out=$2; shift 2 ;;
	-h|--help) sed -n '4,/^set -e/p' "$0" | sed -e '$d' -e 's/^# \{0,1\}//'; exit 0 ;;
	-*) die "unknown option $1 (try --help)" ;;
	*) tests+=("$1"); shift ;;
	esac
done
[ -n "$fstests" ] && [ -x "$fstests/check" ] ||
	die "--fstests DIR: a built fstests tree is needed (see README.md)"
[ -x "$fstests/ltp/fsstress" ] || die "$fstests is not built (no ltp/fsstress)"
case $fstests in "$REPO"/*) die "the fstests tree must live outside the repository" ;; esac
[ ${#tests[@]} -gt 0 ] || mapfile -t tests < <(grep -v '^#' "$list")
[ ${#tests[@]} -gt 0 ] || die "no tests"
out=${out:-${XDG_CACHE_HOME:-$HOME/.cache}/exfat2-vm/fstests/$(date +%Y%m%d-%H%M%S)}
mkdir -p "$out"
printf '%s\n' "${tests[@]}" >"$out/tests"

vmargs=(--mem 2048 --allow-splat)
[ -n "$kernel" ] && vmargs+=(--kernel "$kernel")
[ -n "$moddir" ] && vmargs+=(--modules-dir "$moddir")
# the whole VM: every test at its limit, plus boot
vmtimeout=$(( (limit + 30) * ${#tests[@]} + 300 ))

for drv in ${drivers//,/ }; do
	case $drv in ours|intree) ;; *) die "unknown driver $drv" ;; esac
	rm -rf "$out/$drv/results"
	mkdir -p "$out/$drv"
	cp "$out/tests" "$out/$drv/tests"
	# sparse disks on the host: exFAT has no sparse files, so a test
	# that writes at large offsets really fills its volume
	rm -f "$out/$drv/test.img" "$out/$drv/scratch.img"
	truncate -s 8G "$out/$drv/test.img"
	truncate -s 8G "$out/$drv/scratch.img"
	echo "fstests: ${#tests[@]} tests with $drv (limit ${limit}s each), results in $out/$drv"
	"$REPO/tools/vm/vm.sh" "${vmargs[@]}" --timeout "$vmtimeout" \
		--disk "$out/$drv/test.img" --disk "$out/$drv/scratch.img" \
		--out "$out/$drv" -- \
		env FSTESTS="$fstests" DRIVER="$drv" KO="$ko" LIMIT="$limit" \
		"$REPO/tests/fstests/guest.sh" || echo "fstests: $drv VM exited with $?"
	rm -f "$out/$drv/test.img" "$out/$drv/scratch.img"
done

python3 "$REPO/tests/fstests/table.py" "$out" "$REPO/tests/fstests/expected.txt" |
	tee "$out/table.txt"

#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# Mount and use N corrupted images (tests/guest/corrupt.py, seeds START to
# START+N-1) with exfat2, split over JOBS VMs that run side by side, each
# one boot for its share of the seeds (tests/guest/fuzz.py).  What
# `make fuzz` runs.
#
# Usage: tests/fuzz.sh [--debug] [--count N] [--start S] [--jobs J]
#                      [--out DIR] [--exfatprogs TREE]
#
#   --debug    boot the debug kernel (KASAN, lockdep, kmemleak...; built
#              once and cached by scripts/debug-kernel.sh) with exfat2.ko
#              built for it; default: the packaged kernel and exfat2/exfat2.ko
#   --count    images (default 1000)       --start  first seed (default 1)
#   --jobs     VMs at once (default 1); each gets one guest CPU when J > 1
#   --out      results (default ${XDG_CACHE_HOME:-~/.cache}/exfat2-vm/fuzz):
#              DIR/jobK/fuzz/summary.txt and results.jsonl per VM, with the
#              image and log of each problem seed
#   --exfatprogs TREE
#              instead of corrupt.py's seeds, the corrupted images of an
#              exfatprogs source tree (TREE/tests/*/exfat.img.tar.xz, made
#              by its authors for fsck.exfat; a git checkout, since its
#              release tarballs leave them out; this project keeps no
#              copy), in one VM, strict (fuzz.py --files); images over
#              1 GiB are left out
#
# Prints each VM's summary; exit status 0 iff every VM ended cleanly (no
# splat, hang or VM death, no problem seed).
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/.." && pwd -P)
debug=0 count=1000 start=1 jobs=1 exfatprogs=
out=${XDG_CACHE_HOME:-$HOME/.cache}/exfat2-vm/fuzz
while [ $# -gt 0 ]; do
	case $1 in
	--debug) debug=1; shift ;;
	--count) count=$2; shift 2 ;;
	--start) start=$2; shift 2 ;;
	--jobs) jobs=$2; shift 2 ;;
	--out) out=$2; shift 2 ;;
	--exfatprogs) exfatprogs=$(cd "$2" && pwd); shift 2 ;;
	*) echo "usage: $0 [--debug] [--count N] [--start S] [--jobs J] [--out DIR]" \
		"[--exfatprogs TREE]" >&2
	   exit 2 ;;
	esac
done
[ "$jobs" -ge 1 ] && [ "$count" -ge 1 ] || { echo "fuzz.sh: bad --jobs/--count" >&2; exit 2; }

vmargs=() ko=$repo/exfat2/exfat2.ko per_image=5
if [ "$debug" = 1 ]; then
	eval "$("$repo/scripts/debug-kernel.sh" --module)"
	vmargs=(--kernel "$KERNEL" --modules-dir "$MODULES_DIR")
	ko=$EXFAT2_KO per_image=15
fi
[ "$jobs" -gt 1 ] && vmargs+=(--smp 1)

rm -rf "$out" && mkdir -p "$out"
if [ -n "$exfatprogs" ]; then
	d=$out/job0
	mkdir -p "$d/images"
	files=()
	for t in "$exfatprogs"/tests/*/exfat.img.tar.xz; do
		[ -f "$t" ] || continue
		name=$(basename "$(dirname "$t")")
		# the guest copies each image to its tmpfs, reading every byte
		# over 9p: a 2 TiB sparse one (2tb_disk) would take hours
		size=$(tar -tvJf "$t" exfat.img | awk '{print $3}')
		if [ "$size" -gt $((1 << 30)) ]; then
			echo "fuzz: $name left out: $size bytes (over 1 GiB)"
			continue
		fi
		mkdir -p "$d/x" && tar -C "$d/x" -xJf "$t" exfat.img
		mv "$d/x/exfat.img" "$d/images/$name.img"
		files+=("/run/out/images/$name.img")
	done
	rmdir "$d/x" 2>/dev/null || true
	[ ${#files[@]} -gt 0 ] || { echo "fuzz.sh: no tests/*/exfat.img.tar.xz in $exfatprogs" >&2; exit 2; }
	cp "$ko" "$d/exfat2.ko"
	echo "fuzz: ${#files[@]} exfatprogs images, log $d/console.log"
	r=0
	"$repo/tools/vm/vm.sh" --out "$d" "${vmargs[@]}" \
		--timeout $(( ${#files[@]} * per_image * 4 + 600 )) -- \
		env EXFAT2_KO=/run/out/exfat2.ko \
		python3 -B tests/guest/fuzz.py --files "${files[@]}" \
		>"$d/vm.log" 2>&1 || r=$?
	echo "=== exit status $r"
	cat "$d/fuzz/summary.txt" 2>/dev/null || tail -20 "$d/vm.log"
	exit $(( r != 0 ))
fi
per=$(( (count + jobs - 1) / jobs ))
pids=()
for ((j = 0; j < jobs; j++)); do
	s=$(( start + j * per ))
	n=$(( count - j * per < per ? count - j * per : per ))
	[ "$n" -gt 0 ] || break
	d=$out/job$j
	mkdir -p "$d"
	# A copy: rebuilding the module during a long run does not change it.
	cp "$ko" "$d/exfat2.ko"
	echo "fuzz: VM $j: seeds $s-$(( s + n - 1 )), log $d/console.log"
	"$repo/tools/vm/vm.sh" --out "$d" "${vmargs[@]}" \
		--timeout $(( n * per_image + 600 )) -- \
		env EXFAT2_KO=/run/out/exfat2.ko \
		python3 -B tests/guest/fuzz.py --start "$s" --count "$n" -q \
		>"$d/vm.log" 2>&1 &
	pids+=($!)
done
rc=0
for j in "${!pids[@]}"; do
	r=0
	wait "${pids[$j]}" || r=$?
	echo "=== VM $j: exit status $r"
	cat "$out/job$j/fuzz/summary.txt" 2>/dev/null || tail -20 "$out/job$j/vm.log"
	[ "$r" = 0 ] || rc=1
done
echo "fuzz: images and logs of problem seeds in $out/job*/fuzz"
exit $rc

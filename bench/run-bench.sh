#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# Benchmark exfat2 against the in-tree exfat driver, ext4 and the raw
# device, in ONE VM boot (tools/vm/vm.sh); see BENCHMARKS.md.
#
# Usage: bench/run-bench.sh [--quick] [--only GROUP,...] [--profile GROUP,...]
#                           [--reps N] [--doc]
#
#   --quick      small sizes, one repetition: a smoke run (about 8 minutes
#                on a shared 2-CPU host)
#   --only       run only these groups (seq rand fsync conc frag meta1k
#                meta10k meta50k tree mount)
#   --profile    perf record -a the steps of these groups; the reports land
#                in the results directory's perf/ (under TCG the guest's
#                cpu-clock sampling yields few samples: see BENCHMARKS.md)
#   --reps N     repetitions (default 3, quick 1)
#   --doc        write BENCHMARKS.md from this run (the default for a full
#                run with no --only)
#
# Environment: KERNEL=bzImage boots another kernel; EXFAT2_KO=path measures
# that module instead of exfat2/exfat2.ko (an older build, for a before and
# after); BENCH_MEM (MiB, default 2048), BENCH_DISK_MB (main disk, default
# 4096, quick 1024).
#
# exfat2/exfat2.ko must be built (make bench builds it).  It is copied into
# the results directory first, so a rebuild during the run changes nothing.
# Results: bench/results/<date>[-quick]/ (results.jsonl, report.md, plots,
# console.log); bench/results/latest points at the newest.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(dirname "$here")
cache=${XDG_CACHE_HOME:-${HOME:-/tmp}/.cache}/exfat2-vm/bench

quick=0 only='' profile='' reps='' doc=''
while [ $# -gt 0 ]; do
	case "$1" in
	--quick) quick=1; shift ;;
	--only) only=$2; shift 2 ;;
	--profile) profile=$2; shift 2 ;;
	--reps) reps=$2; shift 2 ;;
	--doc) doc=1; shift ;;
	-h|--help) sed -n '4,/^set -e/p' "$0" | sed -e '$d' -e 's/^# \{0,1\}//'; exit 0 ;;
	*) echo "run-bench.sh: unknown option $1 (try --help)" >&2; exit 2 ;;
	esac
done
[ -n "$doc" ] || { [ $quick = 0 ] && [ -z "$only" ] && doc=1 || doc=0; }

ko=${EXFAT2_KO:-$repo/exfat2/exfat2.ko}
[ -f "$ko" ] || { echo "run-bench.sh: $ko is not built (make)" >&2; exit 2; }
for t in fio gnuplot mkfs.exfat fsck.exfat mkfs.ext4 filefrag; do
	command -v "$t" >/dev/null || { echo "run-bench.sh: $t missing (scripts/setup.sh)" >&2; exit 2; }
done

# The source trees, cut once out of Debian's linux-source tarball.
ksrc=/usr/src/linux-source-6.12.tar.xz
[ -f "$ksrc" ] || ksrc=
if [ ! -f "$cache/linux-fs1k.md5" ] || [ ! -f "$cache/linux-small.md5" ]; then
	[ -n "$ksrc" ] || { echo "run-bench.sh: no /usr/src/linux-source-6.12.tar.xz (scripts/setup.sh)" >&2; exit 2; }
	echo "run-bench.sh: extracting parts of fs/ from $ksrc into $cache (once)"
	python3 "$here/mksrc.py" "$ksrc" "$cache"
fi
tree=$cache/linux-fs1k.tar
[ $quick = 0 ] || tree=$cache/linux-small.tar

stamp=$(date +%Y%m%d-%H%M%S)
[ $quick = 0 ] || stamp+=-quick
res=$here/results/$stamp
mkdir -p "$res"
ln -sfn "$stamp" "$here/results/latest"
cp "$ko" "$res/exfat2.ko"

# The disks: files in the host's /dev/shm (RAM), so every contender sees
# the same fast, quiet device; the main one fully allocated up front so
# that no run pays for the host allocating its pages.
disk_mb=${BENCH_DISK_MB:-$([ $quick = 1 ] && echo 1024 || echo 4096)}
shm=/dev/shm
avail=$(df -Pm "$shm" | awk 'NR==2 {print $4}')
[ "$avail" -gt $((disk_mb + 1024)) ] ||
	{ echo "run-bench.sh: need $((disk_mb + 1024)) MiB free in $shm, have $avail" >&2; exit 2; }
disk=$(mktemp "$shm/exfat2-bench.XXXXXX")
big=$(mktemp "$shm/exfat2-bench-big.XXXXXX")
sampler=
trap 'rm -f "$disk" "$big"; [ -z "$sampler" ] || kill "$sampler" 2>/dev/null' EXIT
fallocate -l "${disk_mb}M" "$disk"
truncate -s 512G "$big"

{
	echo "date: $(date '+%Y-%m-%d %H:%M:%S %Z')"
	echo "mode: $([ $quick = 1 ] && echo quick || echo full)"
	echo "host_kernel: $(uname -r)"
	echo "host_cpu: $(lscpu | sed -n 's/^Model name: *//p' | head -n1)"
	echo "host_cpus: $(nproc)"
	echo "host_mem_mib: $(free -m | awk '/^Mem:/ {print $2}')"
	echo "host_load: $(cut -d' ' -f1-3 /proc/loadavg)"
	echo "qemu: $(qemu-system-x86_64 --version | head -n1)"
	echo "accel: $([ -e /sys/module/kvm_pvm ] || ! grep -qwE 'vmx|svm' /proc/cpuinfo && echo TCG || echo KVM)"
	echo "guest_mem_mib: ${BENCH_MEM:-2048}"
	echo "disk_mib: $disk_mb"
	echo "git: $(git -C "$repo" describe --always --dirty 2>/dev/null || echo unknown)"
	echo "exfat2_ko_md5: $(md5sum "$ko" | cut -d' ' -f1)"
	echo "fio: $(fio --version)"
	echo "exfatprogs: $(mkfs.exfat -V 2>&1 | sed -n 's/.*version : //p' | head -n1)"
} >"$res/meta.txt"

echo "run-bench.sh: results in $res"
args=(--disk disk0 --big disk1 --ko "$res/exfat2.ko" --src "$tree" --out /run/out)
[ $quick = 0 ] || args+=(--quick)
[ -z "$only" ] || args+=(--only "$only")
[ -z "$profile" ] || args+=(--profile "$profile")
[ -z "$reps" ] || args+=(--reps "$reps")
vmargs=(--mem "${BENCH_MEM:-2048}" --smp 2 --timeout "$([ $quick = 1 ] && echo 1800 || echo 5400)"
	--allow-splat --out "$res" --disk "$disk" --disk "$big")
[ -z "${KERNEL:-}" ] || vmargs+=(--kernel "$KERNEL")

# The host's load during the run (other VMs and builds share the CPUs).
while :; do echo "$(date +%s) $(cut -d' ' -f1-3 /proc/loadavg)"; sleep 15; done >"$res/host-load.txt" &
sampler=$!

t0=$(date +%s)
rc=0
"$repo/tools/vm/vm.sh" "${vmargs[@]}" -- python3 -B bench/guest/bench.py "${args[@]}" || rc=$?
echo "run-bench.sh: VM finished in $(($(date +%s) - t0))s with status $rc"
kill "$sampler" 2>/dev/null || true
sampler=
rm -f "$res/exfat2.ko"

# perf profiles (--profile): reported here, natively, with the guest's symbols
if [ -d "$res/perf" ]; then
	for d in "$res"/perf/*.data; do
		[ -e "$d" ] || continue
		perf report -i "$d" --kallsyms="$res/perf/kallsyms" --stdio --no-children \
			--sort sym -g none --percent-limit 0.5 >"${d%.data}.txt" 2>/dev/null || true
		perf report -i "$d" --kallsyms="$res/perf/kallsyms" --stdio --no-children \
			--sort sym -G --percent-limit 3 >"${d%.data}.callers.txt" 2>/dev/null || true
	done
	echo "run-bench.sh: perf reports in $res/perf/"
fi

rargs=("$res")
[ "$doc" = 0 ] || rargs+=(--doc "$repo/BENCHMARKS.md")
python3 "$here/report.py" "${rargs[@]}"
if [ -s "$res/host-splats" ]; then
	echo "run-bench.sh: kernel splats on the console (see $res/console.log):"
	head -n 20 "$res/host-splats"
fi
exit "$rc"

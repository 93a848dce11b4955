#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# Run a command as root inside a throw-away QEMU VM that sees the host's
# root file system read-only.  Never loads anything into the host kernel.
#
# Usage: tools/vm/vm.sh [options] -- COMMAND...
#
#   --kernel BZIMAGE     kernel to boot (default: the packaged 6.12 kernel)
#   --modules-dir DIR    its module directory (default: /lib/modules/RELEASE,
#                        RELEASE read from the bzImage header)
#   --mem MiB            guest memory (default 2048)
#   --smp N              guest CPUs (default 2)
#   --timeout SECONDS    kill the VM after that long, exit 124 (default 3000;
#                        0 = none, the default with --interactive)
#   --disk FILE[,ro]     attach FILE as a virtio disk (/dev/vda, vdb, ...)
#   --out DIR            output directory, shared read-write with the guest at
#                        /run/out (default: a temporary one, removed unless
#                        the run failed); the console log is DIR/console.log
#   --interactive        console on this terminal with a tty in the guest
#                        (Ctrl-A X quits QEMU)
#   --allow-splat        do not fail the run on kernel warnings/oopses
#   --expect-splat TEXT  the run triggers one splat on purpose; it is the
#                        one whose message contains TEXT.  Not finding it is
#                        an error (this proves the detector works).
#
# COMMAND runs in the guest with bash, cwd = the repo, environment:
# EXFAT2_REPO (repo path), EXFAT2_OUT (/run/out), HOME=/tmp.
#
# Exit status: the command's, or 124 timeout, 125 kernel splat on the
# console (see SPLAT_RE), 126 VM died without reporting a status.
# VERBOSE=1 shows the console while the VM runs.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd -P)

# Kernel messages that mean something went wrong.  Only kernel lines
# (those with a printk timestamp) are scanned.
SPLAT_RE='BUG:|WARNING:|Oops|general protection fault|KASAN:|UBSAN:|KFENCE:|kernel BUG'
SPLAT_RE+='|possible circular locking|possible recursive locking|inconsistent lock state'
SPLAT_RE+='|lockdep|DEBUG_LOCKS_WARN_ON|INFO: task .* blocked for more than|soft lockup'
SPLAT_RE+='|hard LOCKUP|rcu_sched self-detected stall|rcu: INFO:'
SPLAT_RE+='|kmemleak:.*(unreferenced object|suspected memory leak)|unreferenced object 0x'
SPLAT_RE+='|Kernel panic|Call Trace:'
KLINE_RE='\[ *[0-9]+\.[0-9]+\]'

die() { echo "vm.sh: $*" >&2; exit 2; }

kernel='' moddir='' mem=2048 smp=2 timeout='' out='' interactive=0 allow_splat=0 expect_splat=''
disks=()
while [ $# -gt 0 ]; do
	case "$1" in
	--kernel) kernel=$2; shift 2 ;;
	--modules-dir) moddir=$2; shift 2 ;;
	--mem) mem=$2; shift 2 ;;
	--smp) smp=$2; shift 2 ;;
	--timeout) timeout=$2; shift 2 ;;
	--disk) disks+=("$2"); shift 2 ;;
	--out) out=$2; shift 2 ;;
	--interactive) interactive=1; shift ;;
	--allow-splat) allow_splat=1; shift ;;
	--expect-splat) expect_splat=$2; shift 2 ;;
	--) shift; break ;;
	-h|--help) sed -n '4,/^set -e/p' "$0" | sed -e '$d' -e 's/^# \{0,1\}//'; exit 0 ;;
	*) die "unknown option $1 (try --help)" ;;
	esac
done
[ $# -gt 0 ] || die "no command given (usage: vm.sh [options] -- COMMAND...)"
if [ -z "$timeout" ]; then
	timeout=3000
	[ $interactive = 0 ] || timeout=0
fi
[[ $timeout =~ ^[0-9]+$ ]] || die "--timeout wants seconds, got '$timeout'"

# Kernel release from a bzImage's setup header (offset of the version
# string at 0x20e, relative to 0x200).
kernel_release() {
	local off
	off=$(od -An -tu2 -j 526 -N 2 "$1" | tr -d ' ')
	dd if="$1" bs=1 skip=$((off + 512)) count=200 status=none | tr '\0' '\n' |
		head -n1 | cut -d' ' -f1
}

if [ -z "$kernel" ]; then
	for d in /lib/modules/6.12.*-amd64; do
		[ -d "$d/kernel" ] || [ -d "$d/build" ] || continue
		rel=$(basename "$d")
		[ -f "/boot/vmlinuz-$rel" ] && kernel=/boot/vmlinuz-$rel
	done
	[ -n "$kernel" ] || die "no packaged 6.12 kernel found (run scripts/setup.sh)"
fi
[ -r "$kernel" ] || die "cannot read kernel $kernel"
if [ -z "$moddir" ]; then
	moddir=/lib/modules/$(kernel_release "$kernel")
fi
[ -f "$moddir/modules.dep" ] || die "no modules.dep in $moddir (use --modules-dir)"
moddir=$(cd "$moddir" && pwd -P)	# the guest cannot follow host symlinks

initrd=$("$here/mkinitramfs.sh" "$moddir")

keep_out=1
if [ -z "$out" ]; then
	out=$(mktemp -d "${TMPDIR:-/tmp}/exfat2-vm.XXXXXX")
	keep_out=0
fi
mkdir -p "$out"
out=$(cd "$out" && pwd)
rm -f "$out/status" "$out/console.log" "$out/cmd.sh" "$out/vm.env"
log=$out/console.log

{
	echo "cd \"\$EXFAT2_REPO\" || exit 1"
	printf '%q ' "$@"
	echo
} >"$out/cmd.sh"
{
	printf 'VM_REPO=%q\n' "$repo"
	printf 'VM_MODDIR=%q\n' "$moddir"
	printf 'VM_INTERACTIVE=%q\n' "$interactive"
	printf 'VM_TERM=%q\n' "${TERM:-linux}"
	if [ $interactive = 1 ] && size=$(stty size 2>/dev/null); then
		printf 'VM_ROWS=%q\nVM_COLS=%q\n' "${size% *}" "${size#* }"
	fi
} >"$out/vm.env"

accel=(-accel kvm -cpu host)
if [ -e /sys/module/kvm_pvm ] || ! grep -qwE 'vmx|svm' /proc/cpuinfo || [ ! -w /dev/kvm ]; then
	accel=(-accel 'tcg,thread=multi,tb-size=512' -cpu max)
fi

# no_timer_check: under TCG on a loaded host the IO-APIC timer check can
# miss its ticks and panic the boot ("IO-APIC + timer doesn't work!").
cmdline="console=ttyS0,115200 loglevel=5 printk.time=1 printk.devkmsg=on panic=-1 no_timer_check"
cmdline+=" 8250.nr_uarts=1 rdinit=/init"

# QEMU option values escape a comma by doubling it.
qesc() { printf '%s' "${1//,/,,}"; }

qemu=(qemu-system-x86_64 -M q35 "${accel[@]}" -m "$mem" -smp "$smp"
	-nodefaults -no-user-config -display none -no-reboot
	-kernel "$kernel" -initrd "$initrd" -append "$cmdline"
	-virtfs 'local,path=/,mount_tag=hostroot,security_model=none,readonly=on,multidevs=remap'
	-virtfs "local,path=$(qesc "$out"),mount_tag=out,security_model=none"
	-virtfs "local,path=$(qesc "$repo"),mount_tag=repo,security_model=none,readonly=on"
	-device virtio-rng-pci)
if [ $interactive = 1 ]; then
	qemu+=(-chardev "stdio,id=con,mux=on,signal=off,logfile=$(qesc "$log")"
		-serial chardev:con -mon "chardev=con,mode=readline")
else
	qemu+=(-chardev "file,id=con,path=$(qesc "$log")" -serial chardev:con)
fi
i=0
for d in "${disks[@]}"; do
	ro=off
	case "$d" in *,ro) d=${d%,ro}; ro=on ;; esac
	[ -e "$d" ] || die "no such disk image: $d"
	qemu+=(-drive "file=$(qesc "$d"),if=none,id=disk$i,format=raw,cache=unsafe,aio=threads,readonly=$ro"
		-device "virtio-blk-pci,drive=disk$i,serial=disk$i")
	i=$((i + 1))
done

# Run QEMU, enforcing the timeout.
start=$(date +%s)
: >"$log"
tailpid=
if [ $interactive = 0 ] && [ "${VERBOSE:-0}" = 1 ]; then
	tail -n +1 -f "$log" &
	tailpid=$!
fi
qrc=0
if [ $interactive = 1 ]; then
	if [ "$timeout" -gt 0 ]; then
		timeout --foreground -k 5 "$timeout" "${qemu[@]}" || qrc=$?
	else
		"${qemu[@]}" || qrc=$?
	fi
	stty sane 2>/dev/null || true
else
	if [ "$timeout" -gt 0 ]; then
		timeout -k 5 "$timeout" "${qemu[@]}" </dev/null || qrc=$?
	else
		"${qemu[@]}" </dev/null || qrc=$?
	fi
fi
if [ -n "$tailpid" ]; then
	sleep 0.3
	kill "$tailpid" 2>/dev/null || true
	wait "$tailpid" 2>/dev/null || true
fi
elapsed=$(($(date +%s) - start))

# Find kernel splats.  Prints "LINENO:text" for every matching kernel line.
find_splats() {
	grep -naE "^$KLINE_RE.*($SPLAT_RE)" "$log" || true
}

# Line range of the one expected splat: from the line holding the expected
# text to the next "---[ end trace" line.
expected_range() {
	local first last
	first=$(grep -naF -- "$expect_splat" "$log" | grep -E "^[0-9]+:$KLINE_RE" |
		head -n1 | cut -d: -f1)
	[ -n "$first" ] || return 1
	last=$(tail -n "+$first" "$log" | grep -naF -- '---[ end trace' | head -n1 | cut -d: -f1)
	[ -n "$last" ] || return 1
	echo "$first $((first + last - 1))"
}

show_context() {	# show_context LINENO...
	local n shown=0
	for n in "$@"; do
		[ $shown -lt 3 ] || { echo "  ... (more in $log)"; break; }
		echo "---- console.log around line $n:"
		sed -n "$((n > 5 ? n - 5 : 1)),$((n + 25))p" "$log"
		shown=$((shown + 1))
	done
}

fail_out() { keep_out=1; }

rc=0
if [ "$qrc" = 124 ] || [ "$qrc" = 137 ]; then
	echo "vm.sh: TIMEOUT after ${timeout}s; console tail:" >&2
	tail -n 40 "$log" >&2
	rc=124
elif [ ! -s "$out/status" ]; then
	echo "vm.sh: the VM died without reporting a status (qemu exit $qrc); console tail:" >&2
	tail -n 60 "$log" >&2
	rc=126
else
	rc=$(cat "$out/status")
fi

splats=$(find_splats)
if [ -n "$expect_splat" ]; then
	if range=$(expected_range); then
		read -r lo hi <<<"$range"
		inside=$(awk -F: -v lo="$lo" -v hi="$hi" '$1 >= lo && $1 <= hi' <<<"$splats")
		if [ -n "$inside" ]; then
			echo "expected-splat: detected at console.log:$lo-$hi" >"$out/host-expected-splat"
			splats=$(awk -F: -v lo="$lo" -v hi="$hi" '$1 < lo || $1 > hi' <<<"$splats")
		else
			echo "expected-splat: text found but the detector did not flag it" >"$out/host-expected-splat"
		fi
	else
		echo "expected-splat: not found on the console" >"$out/host-expected-splat"
	fi
	if ! grep -q '^expected-splat: detected' "$out/host-expected-splat"; then
		echo "vm.sh: $(cat "$out/host-expected-splat") ('$expect_splat')" >&2
		[ "$rc" = 0 ] && rc=125
	fi
fi
if [ -n "$splats" ]; then
	cut -d: -f2- <<<"$splats" >"$out/host-splats"
	if [ $allow_splat = 0 ]; then
		echo "vm.sh: kernel splat(s) on the console:" >&2
		cut -d: -f2- <<<"$splats" | head -n 20 >&2
		mapfile -t lines < <(cut -d: -f1 <<<"$splats")
		show_context "${lines[@]}" >&2
		[ "$rc" = 124 ] || [ "$rc" = 126 ] || rc=125
	fi
fi

echo "$elapsed" >"$out/vm-seconds"
[ "$rc" = 0 ] || fail_out
if [ $keep_out = 0 ]; then
	rm -rf "$out"
elif [ "$rc" != 0 ]; then
	echo "vm.sh: logs in $out" >&2
fi
exit "$rc"

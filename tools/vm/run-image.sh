#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# "make run": mount an exFAT image with exfat2 in a VM, then run a command
# or give an interactive shell.  Settings come from the environment:
#
#   IMG=FILE      image to mount (default: a fresh SIZE image, mkfs.exfat'ed)
#   RW=1          attach IMG read-write (default: read-only, mounted -o ro)
#   SIZE=256M     size of the fresh image
#   CMD="..."     command to run in /mnt; its status is the exit status.
#                 Without CMD: a shell on the console if stdin is a
#                 terminal, else "ls -la /mnt".
#   KERNEL=FILE   boot this kernel instead of the packaged one
#
# If the mount fails, the kernel's last exfat line is printed and the exit
# status is non-zero.  Inside the VM this script runs again with --guest.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)
ko=exfat2/exfat2.ko

if [ "${1:-}" = --guest ]; then
	ro=$2 cmd=$3
	kreason() {	# last kernel line about exfat, without the timestamp
		dmesg | grep -i exfat | grep -vE 'taints kernel|module verification' |
			tail -n1 | sed 's/^\[[^]]*\] //'
	}
	rmmod exfat 2>/dev/null || true
	if ! err=$(insmod "$EXFAT2_REPO/$ko" 2>&1); then
		echo "run: cannot load $ko: $err; $(dmesg | tail -n1)" >&2
		exit 1
	fi
	opts=()
	[ "$ro" = 1 ] && opts=(-o ro)
	if ! err=$(mount -t exfat "${opts[@]}" /dev/vda /mnt 2>&1); then
		reason=$(kreason)
		echo "run: mount failed: ${reason:-$err}" >&2
		exit 1
	fi
	echo "run: /dev/vda mounted on /mnt with exfat2${opts[*]:+ (${opts[*]})}"
	rc=0
	if [ -n "$cmd" ]; then
		(cd /mnt && bash -c "$cmd") || rc=$?
	else
		echo "run: shell in the VM; exit (or Ctrl-D) to unmount and quit, Ctrl-A X kills the VM"
		(cd /mnt && PS1='exfat2-vm:\w# ' bash --norc -i) || rc=$?
	fi
	if ! err=$(umount /mnt 2>&1); then
		echo "run: umount failed: $err; $(kreason)" >&2
		[ "$rc" != 0 ] || rc=1
	fi
	exit "$rc"
fi

[ -f "$repo/$ko" ] || { echo "run: $ko is not built (make)" >&2; exit 1; }
vmopts=()
[ -z "${KERNEL:-}" ] || vmopts+=(--kernel "$KERNEL")
ro=0
if [ -n "${IMG:-}" ]; then
	[ -f "$IMG" ] || { echo "run: no such image: $IMG" >&2; exit 1; }
	if [ "${RW:-0}" = 1 ]; then
		vmopts+=(--disk "$IMG")
	else
		vmopts+=(--disk "$IMG,ro")
		ro=1
	fi
else
	tmp=$(mktemp "${TMPDIR:-/tmp}/exfat2-run.XXXXXX.img")
	trap 'rm -f "$tmp"' EXIT
	truncate -s "${SIZE:-256M}" "$tmp"
	mkfs.exfat "$tmp" >/dev/null
	vmopts+=(--disk "$tmp")
fi
cmd=${CMD:-}
if [ -z "$cmd" ]; then
	if [ -t 0 ] && [ -t 1 ]; then
		vmopts+=(--interactive)
	else
		cmd="ls -la /mnt"
	fi
fi
# Show the console (the command's output and kernel messages) as it runs.
export VERBOSE=${VERBOSE:-1}
rc=0
"$here/vm.sh" "${vmopts[@]}" -- bash tools/vm/run-image.sh --guest "$ro" "$cmd" || rc=$?
exit "$rc"

#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# /init of the test VM (runs from the initramfs built by mkinitramfs.sh).
#
# Mounts the host's root read-only over virtio-9p (tag "hostroot"), the
# run's output directory read-write (tag "out", at /run/out) and the repo
# (tag "repo", at its host path), puts tmpfs where the guest needs to write,
# then chroots into the host root and runs "/bin/bash /run/out/cmd.sh"
# (written by vm.sh).  The command's exit status goes to /run/out/status,
# then the VM powers off.  Settings come from /run/out/vm.env:
#   VM_REPO         repo path (same on host and guest)
#   VM_INTERACTIVE  1: run the command on the console with a controlling tty
#   VM_MODDIR       module directory to use as /lib/modules/$(uname -r)
#   VM_TERM, VM_ROWS, VM_COLS   terminal type and size for interactive use

/bin/busybox --install -s /bin
export PATH=/bin

mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev

halt_vm() {
	sync
	poweroff -f
	echo o >/proc/sysrq-trigger
	sleep 10
}

die() {
	echo "guest-init: FATAL: $*" >/dev/console
	halt_vm
}

while read -r m; do
	insmod "/lib/modules/$m.ko" || die "insmod $m failed"
done </lib/modules/load-order

p9opts=trans=virtio,version=9p2000.L,msize=512000
mount -t 9p -o "$p9opts,ro,cache=loose" hostroot /newroot || die "cannot mount hostroot"
mount -t 9p -o "$p9opts" out /out || die "cannot mount the out share"
[ -r /out/vm.env ] || die "no vm.env in the out share"
# shellcheck source=/dev/null
. /out/vm.env

# Modules of a kernel that is not installed on the host: grab the directory
# now, before tmpfs mounts may hide it, and put it in place further down.
krel=$(uname -r)
if [ -n "${VM_MODDIR:-}" ] && [ "$VM_MODDIR" != "/lib/modules/$krel" ]; then
	mount --bind "/newroot$VM_MODDIR" /moddir || die "no module dir $VM_MODDIR"
else
	VM_MODDIR=
fi

# Writable places (the host root is read-only).
for d in tmp run mnt var/tmp var/log; do
	[ -d "/newroot/$d" ] && mount -t tmpfs -o mode=1777 tmpfs "/newroot/$d"
done
mkdir -p /newroot/run/out
mount --move /out /newroot/run/out

# The repo gets its own share so it is visible even if it lives under one
# of the tmpfs mounts above (e.g. a checkout in /tmp).
if [ -n "${VM_REPO:-}" ]; then
	mkdir -p "/newroot$VM_REPO" 2>/dev/null
	mount -t 9p -o "$p9opts,ro,cache=loose" repo "/newroot$VM_REPO" ||
		die "cannot mount the repo share at $VM_REPO"
fi

if [ -n "$VM_MODDIR" ]; then
	mount -t tmpfs tmpfs /newroot/lib/modules
	mkdir -p "/newroot/lib/modules/$krel"
	mount --move /moddir "/newroot/lib/modules/$krel"
fi

mount -t proc proc /newroot/proc
mount -t sysfs sysfs /newroot/sys
mount -t devtmpfs devtmpfs /newroot/dev
mkdir -p /newroot/dev/pts /newroot/dev/shm
mount -t devpts -o gid=5,mode=620,ptmxmode=666 devpts /newroot/dev/pts
mount -t tmpfs -o mode=1777 tmpfs /newroot/dev/shm
mount -t debugfs debugfs /newroot/sys/kernel/debug 2>/dev/null
mount -t tracefs tracefs /newroot/sys/kernel/tracing 2>/dev/null

# Report hung tasks quickly; keep the VM alive on warnings so that the
# harness can detect and report them.
echo 60 2>/dev/null >/proc/sys/kernel/hung_task_timeout_secs
echo 0 2>/dev/null >/proc/sys/kernel/panic_on_warn
hostname exfat2-vm

echo "guest-init: running command at $(cut -d' ' -f1 /proc/uptime)s uptime" >/dev/console

set -- env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
	HOME=/tmp TERM="${VM_TERM:-linux}" LANG=C.UTF-8 \
	EXFAT2_REPO="${VM_REPO:-/}" EXFAT2_OUT=/run/out \
	chroot /newroot /bin/bash /run/out/cmd.sh
if [ "${VM_INTERACTIVE:-0}" = 1 ]; then
	[ -n "${VM_ROWS:-}" ] && stty -F /dev/ttyS0 rows "$VM_ROWS" cols "$VM_COLS" 2>/dev/null
	setsid cttyhack "$@"
else
	"$@" </dev/null >/dev/console 2>&1
fi
rc=$?

echo "$rc" >/newroot/run/out/status
echo "guest-init: command exited with status $rc" >/dev/console
umount /newroot/run/out 2>/dev/null
halt_vm

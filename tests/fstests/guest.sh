#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# In the VM (tests/fstests/run.sh starts it): load one exFAT driver, set
# up TEST and SCRATCH, run each fstests test alone under a
# time limit, and write /run/out/summary.  Environment: FSTESTS (the built
# tree, read-only here, seen through an overlay), DRIVER (ours|intree),
# KO (exfat2.ko), LIMIT.
set -uo pipefail

OUT=/run/out
work=/tmp/fstests
mkdir -p $work/test $work/scratch $work/results
: >"$OUT/summary"
: >"$OUT/check.log"

# what udev would have made: bash process substitution needs /dev/fd
[ -e /dev/fd ] || ln -s /proc/self/fd /dev/fd
for i in 0:stdin 1:stdout 2:stderr; do
	[ -e /dev/${i#*:} ] || ln -s /proc/self/fd/${i%%:*} /dev/${i#*:}
done

# generic/131's lock test talks to itself over TCP on localhost
ip link set lo up 2>>"$OUT/check.log"

# udev: fstests waits for device nodes with "udevadm wait" (_udev_wait
# after every dmsetup create and remove), which without a udev daemon
# blocks until the time limit: every dm test (dm-error, dm-thin, ...)
# was a timeout
# (the VM runs the tests chrooted: without SYSTEMD_IGNORE_CHROOT udevadm
# ignores trigger and settle, and says so in the tests' output)
export SYSTEMD_IGNORE_CHROOT=1
if [ -x /lib/systemd/systemd-udevd ]; then
	/lib/systemd/systemd-udevd --daemon 2>>"$OUT/check.log"
	udevadm trigger --action=add 2>>"$OUT/check.log"
	udevadm settle --timeout=60 2>>"$OUT/check.log"
fi

# device-mapper up front: _require_dm_target modprobes dm-$target, and
# the error target is built into dm-mod (there is no dm-error module), so
# without this the dm-error tests ran or not depending on whether an
# earlier test had loaded another target
modprobe dm-mod 2>>"$OUT/check.log"
# LVM (generic/081, 108, 459) writes its metadata backups under
# /etc/lvm, read-only here: lvcreate failed ("status code 5") and the
# test then waited for a volume that never came, to the time limit
mkdir -p /tmp/lvm
export LVM_SYSTEM_DIR=/tmp/lvm
# and the SCSI disk driver, which udev would load when scsi_debug makes
# a disk (generic/704 and other scsi_debug tests look for /sys/block/sd*)
modprobe sd_mod 2>>"$OUT/check.log"

case $DRIVER in
ours) insmod "$KO" || { echo "insmod $KO failed"; exit 1; } ;;
intree) modprobe exfat || { echo "modprobe exfat failed"; exit 1; } ;;
esac

# run.sh attaches TEST and SCRATCH as the first two virtio disks
test_dev=/dev/vda
scratch_dev=/dev/vdb
[ -b $test_dev ] && [ -b $scratch_dev ] || { echo "no $test_dev, $scratch_dev"; exit 1; }

cat >$work/config <<EOF
export FSTYP=exfat
export TEST_DEV=$test_dev
export TEST_DIR=$work/test
export SCRATCH_DEV=$scratch_dev
export SCRATCH_MNT=$work/scratch
export RESULT_BASE=$work/results
EOF

# the tree is read-only here; a few tests link their expected output
# into it (_link_out_file): give it a writable layer in memory
mkdir -p /tmp/ovl/upper /tmp/ovl/work /tmp/ovl/tree
modprobe overlay 2>>"$OUT/check.log"
if mount -t overlay overlay -o "lowerdir=$FSTESTS,upperdir=/tmp/ovl/upper,workdir=/tmp/ovl/work" \
	/tmp/ovl/tree 2>>"$OUT/check.log"; then
	FSTESTS=/tmp/ovl/tree
fi
cd "$FSTESTS" || exit 1
uname -r >"$OUT/kernel"
while read -r t; do
	[ -n "$t" ] || continue
	start=$(date +%s)
	echo "== $t" >>"$OUT/check.log"
	# a fresh TEST volume for each test (see run.sh)
	umount $work/test 2>/dev/null
	mkfs.exfat "$test_dev" >/dev/null
	HOST_OPTIONS=$work/config timeout -k 30 "$LIMIT" ./check "$t" \
		>>"$OUT/check.log" 2>&1
	rc=$?
	secs=$(( $(date +%s) - start ))
	base=$work/results/$t
	if [ $rc -eq 124 ] || [ $rc -eq 137 ]; then
		status=timeout
		# whatever the test left running or mounted
		pkill -9 -f "$FSTESTS/(ltp|src)/" 2>/dev/null
		umount -l $work/scratch $work/test 2>/dev/null
	elif [ -f "$base.notrun" ]; then
		status=notrun
	elif [ $rc -eq 0 ] && [ ! -f "$base.out.bad" ] && [ ! -f "$base.dmesg" ]; then
		status=pass
	else
		status=fail
	fi
	echo -e "$t\t$status\t$secs" >>"$OUT/summary"
	echo "$t $status ${secs}s"
	mkdir -p "$OUT/results/$(dirname "$t")"
	cp -a "$base".* "$OUT/results/$(dirname "$t")/" 2>/dev/null
done <"$OUT/tests"
umount $work/scratch $work/test 2>/dev/null
exit 0

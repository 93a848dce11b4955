# SPDX-License-Identifier: GPL-2.0
"""Harness self-tests: each must be FAILED by the harness for the stated
reason, which the runner then counts as a PASS (see lib.test(expect=)).
They run last in every run; the WARNING one must be the very last because
it taints the kernel.  run-tests.sh also asks tools/vm/vm.sh to find this
WARNING on the console (the host-side detector), see selftest:host_splat.
"""

import os

import lib
from lib import OUT, sh, test, fail


def _damaged_volume(damage):
    """A 16 MiB volume holding one file, damaged with rawfs after exfat2
    wrote it; the Image's end (writes=True) runs lib.fsck_clean()."""
    import rawfs
    from lib import Image, mount
    with Image(size_mb=16) as img:
        with mount(img.dev) as mnt:
            with open(f"{mnt}/f", "wb") as f:
                f.write(os.urandom(10000))
        v = rawfs.Volume(img.dev)
        try:
            damage(v)
        finally:
            v.close()


@test(timeout=120, expect="fail:fsck.exfat -n")
def fsck_finding_detected():
    """A volume fsck.exfat finds damaged (a File entry's SetChecksum
    broken) at the end of a writing test must fail it."""
    def damage(v):
        s, cl = v.lookup("f")
        off = v.entry_off(cl, s.eidx) + 2
        v.write(off, bytes([v.read(off, 1)[0] ^ 0x10]))
    _damaged_volume(damage)


@test(timeout=120, expect="fail:xcheck.py")
def strict_checker_finding_detected():
    """A leaked cluster (a bitmap bit no chain owns), which fsck.exfat -n
    does not report, must fail a writing test through xcheck.py."""
    _damaged_volume(lambda v: v.set_in_use(v.free_clusters(1)[0]))


@test(timeout=60, writes=False, expect="leak")
def leftover_mount_detected():
    """A test that leaves a mount behind must be failed (and the mount
    removed)."""
    from lib import Image, use_driver
    use_driver("ours")
    img = Image(size_mb=16).__enter__()
    os.makedirs("/mnt/selftest-left", exist_ok=True)
    sh(f"mount -t exfat {img.dev} /mnt/selftest-left")


@test(timeout=2, writes=False, expect="timeout")
def timeout_detected():
    """A test that overruns its timeout must be killed and reported."""
    sh("sleep 1000")


@test(timeout=120, writes=False, expect="splat")
def hung_task_detected():
    """A task blocked in the kernel for longer than hung_task_timeout_secs
    must fail the test: a write to a frozen file system waits
    uninterruptibly for the thaw (sb_start_write) while the timeout is
    2 s.  The file system is ext4: exFAT drivers (exfat2, like the
    in-tree one) do not implement FIFREEZE.  The report is kept off the
    serial console (console log level 3 meanwhile): the host's detector
    accepts only the WARNING of warn_detected there."""
    import subprocess
    import time
    from lib import Image, dmesg_this_test
    knob = "/proc/sys/kernel/hung_task_timeout_secs"
    with open(knob) as f:
        old = f.read().strip()
    with open("/proc/sys/kernel/printk") as f:
        printk = f.read().split()
    mnt = "/mnt/selftest-hung"
    os.makedirs(mnt, exist_ok=True)
    with Image(size_mb=16) as img:
        sh(f"modprobe ext4 2>/dev/null; mkfs.ext4 -q -F {img.dev} && "
           f"mount -t ext4 {img.dev} {mnt}")
        writer = None
        try:
            sh(f"fsfreeze -f {mnt}")
            with open("/proc/sys/kernel/printk", "w") as f:
                f.write("3")
            writer = subprocess.Popen(["sh", "-c", f"echo x > {mnt}/f"])
            with open(knob, "w") as f:
                f.write("2")
            deadline = time.monotonic() + 60
            # the whole report, to the end of its stack dump
            while "</TASK>" not in \
                    dmesg_this_test().partition("blocked for more than")[2]:
                if time.monotonic() > deadline:
                    fail("no hung-task report within 60 s")
                time.sleep(0.5)
        finally:
            with open(knob, "w") as f:
                f.write(old)
            sh(f"fsfreeze -u {mnt}", check=False)
            with open("/proc/sys/kernel/printk", "w") as f:
                f.write(printk[0])
            if writer:
                writer.wait(30)
            sh(f"umount {mnt}", check=False)


if os.path.exists(lib.KMEMLEAK) or lib.kmemleak_built_in():
    @test(timeout=120, writes=False,
          expect="fail+splat:kmemleak: unreferenced objects")
    def kmemleak_report_detected():
        """An object leaked in the kernel must fail the run: the check the
        runner makes at the end of the tests (runner:kmemleak, which runs
        before the self-tests) on a module that leaks sixteen 1 KiB
        objects when loaded; kmemleak's own "new suspected memory leaks"
        line in the kernel log is a splat too.  The report is then cleared.  Only on kernels
        with kmemleak."""
        ko = os.path.join(OUT, "selftest", "leak_on_load.ko")
        if not os.path.exists(ko):
            fail(f"{ko} missing (run-tests.sh builds it)")
        sh(f"insmod {ko}")
        sh("rmmod leak_on_load")
        try:
            lib.kmemleak_check(keep="kmemleak-selftest.txt")
        finally:
            with open(lib.KMEMLEAK, "w") as f:
                f.write("clear")


@test(timeout=60, writes=False, expect="splat")
def warn_detected():
    """A kernel WARNING during a test must fail that test."""
    ko = os.path.join(OUT, "selftest", "warn_on_load.ko")
    if not os.path.exists(ko):
        fail(f"{ko} missing (run-tests.sh builds it)")
    sh(f"insmod {ko}")
    sh("rmmod warn_on_load")


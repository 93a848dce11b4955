# SPDX-License-Identifier: GPL-2.0
"""Harness self-tests: each must be FAILED by the harness for the stated
reason, which the runner then counts as a PASS (see lib.test(expect=)).
They run last in every run; the WARNING one must be the very last because
it taints the kernel.  run-tests.sh also asks tools/vm/vm.sh to find this
WARNING on the console (the host-side detector), see selftest:host_splat.
"""

import os

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


@test(timeout=60, writes=False, expect="splat")
def warn_detected():
    """A kernel WARNING during a test must fail that test."""
    ko = os.path.join(OUT, "selftest", "warn_on_load.ko")
    if not os.path.exists(ko):
        fail(f"{ko} missing (run-tests.sh builds it)")
    sh(f"insmod {ko}")
    sh("rmmod warn_on_load")


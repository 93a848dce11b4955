# SPDX-License-Identifier: GPL-2.0
"""Data path writes with exfat2 on files the in-tree driver created; the
in-tree driver then reads the result back as the oracle, and fsck.exfat
must find the volume clean."""

import mmap
import os

from lib import Image, assert_eq, assert_true, mount, sh, test
from tree import diff_manifests, manifest, pattern, write_file


def apply_ops(mnt, cluster):
    """Appends, overwrites, truncates, mmap and direct writes."""
    # append to a small file, crossing cluster boundaries
    with open(f"{mnt}/small", "ab") as f:
        f.write(pattern(3 * cluster + 17, 11))
    # overwrite in the middle of a large file
    with open(f"{mnt}/large", "r+b") as f:
        f.seek(cluster + 100)
        f.write(pattern(2 * cluster, 12))
    # write past EOF: the gap must read as zeros
    with open(f"{mnt}/gap", "r+b") as f:
        f.seek(5 * cluster + 333)
        f.write(b"tail")
    # truncate down and up again
    os.truncate(f"{mnt}/shrink", cluster + 5)
    os.truncate(f"{mnt}/shrink", 4 * cluster)
    os.truncate(f"{mnt}/empty-me", 0)
    # grow an empty file
    with open(f"{mnt}/was-empty", "wb") as f:
        f.write(pattern(cluster * 2 + 1, 13))
    # mmap write inside the file
    with open(f"{mnt}/mapped", "r+b") as f:
        with mmap.mmap(f.fileno(), 0) as m:
            m[10:20] = b"0123456789"
            m[-5:] = b"ABCDE"
            m.flush()
    # O_DIRECT write, block aligned
    fd = os.open(f"{mnt}/direct", os.O_RDWR | os.O_DIRECT)
    try:
        buf = mmap.mmap(-1, 8192)
        buf[:] = pattern(8192, 14)
        assert_eq(os.pwritev(fd, [buf], 4096), 8192, "direct write")
        os.fsync(fd)
    finally:
        os.close(fd)
    # a file with ValidDataLength < DataLength written in the middle
    with open(f"{mnt}/vdl", "r+b") as f:
        f.seek(3 * cluster + 7)
        f.write(b"middle")


def setup_files(mnt, cluster):
    write_file(f"{mnt}/small", 100, 1)
    write_file(f"{mnt}/large", 6 * cluster, 2)
    write_file(f"{mnt}/gap", 10, 3)
    write_file(f"{mnt}/shrink", 3 * cluster + 50, 4)
    write_file(f"{mnt}/empty-me", 2 * cluster, 5)
    write_file(f"{mnt}/was-empty", 0, 6)
    write_file(f"{mnt}/mapped", cluster + 100, 7)
    write_file(f"{mnt}/direct", 4 * cluster, 8)
    write_file(f"{mnt}/vdl", 100, 9)
    os.truncate(f"{mnt}/vdl", 5 * cluster)


@test(timeout=600, writes=True)
def modify_intree_files():
    """Writes of every kind read back identically with the in-tree driver."""
    for cluster in (4096, 512, 65536):
        with Image(size_mb=64, cluster=cluster) as img:
            with mount(img.dev, driver="intree") as mnt:
                setup_files(mnt, cluster)
            with mount(img.dev, driver="ours") as mnt:
                apply_ops(mnt, cluster)
                ours = manifest(mnt, attrs=False)
                # the page cache view: check it before unmounting
                with open(f"{mnt}/gap", "rb") as f:
                    data = f.read()
                assert_eq(len(data), 5 * cluster + 337, "gap size")
                assert_true(data[10:5 * cluster + 333] ==
                            bytes(5 * cluster + 323), "gap reads zeros")
            sh(f"fsck.exfat -n {img.dev}")
            with mount(img.dev, driver="intree", opts="ro") as mnt:
                theirs = manifest(mnt, attrs=False)
            for m in (ours, theirs):
                for e in m.values():
                    e.pop("atime", None)
            diff_manifests(ours, theirs, "exfat2 (before unmount)",
                           "in-tree (after)")
            with mount(img.dev, driver="ours", opts="ro") as mnt:
                again = manifest(mnt, attrs=False)
            for e in again.values():
                e.pop("atime", None)
            diff_manifests(ours, again, "exfat2 (before unmount)",
                           "exfat2 (after remount)")


@test(timeout=300, writes=True)
def fill_file_to_enospc():
    """A file grows until the volume is full; then truncation frees it all."""
    with Image(size_mb=16, cluster=4096) as img:
        with mount(img.dev, driver="intree") as mnt:
            write_file(f"{mnt}/f", 0)
        with mount(img.dev) as mnt:
            st = os.statvfs(mnt)
            free0 = st.f_bfree
            r = sh(f"dd if=/dev/zero of={mnt}/f bs=64k status=none", check=False)
            assert_true("No space left" in r.stderr, r.stderr)
            assert_eq(os.statvfs(mnt).f_bfree, 0, "no free clusters left")
            size = os.stat(f"{mnt}/f").st_size
            assert_eq(size, free0 * 4096, "file took every free cluster")
            os.truncate(f"{mnt}/f", 0)
            assert_eq(os.statvfs(mnt).f_bfree, free0, "all clusters freed")


@test(timeout=300, writes=False)
def fsync_survives_shutdown():
    """What fsync returned for survives a shutdown without sync (unplug)."""
    import fcntl
    import struct
    with Image(size_mb=32, fsck=False) as img:
        with mount(img.dev) as mnt:
            os.mkdir(f"{mnt}/d")
            for i in range(8):
                fd = os.open(f"{mnt}/d/f{i}", os.O_CREAT | os.O_WRONLY, 0o644)
                os.write(fd, pattern(3000 * (i + 1), i))
                os.fsync(fd)
                os.close(fd)
            write_file(f"{mnt}/d/not-synced", 50000, seed=99)
            fd = os.open(mnt, os.O_RDONLY)
            fcntl.ioctl(fd, 0x8004587d, struct.pack("I", 2))   # NOLOGFLUSH
            os.close(fd)
        r = sh(f"fsck.exfat -n {img.dev}", check=False)
        out = r.stdout + r.stderr
        with mount(img.dev, opts="ro") as mnt:
            for i in range(8):
                with open(f"{mnt}/d/f{i}", "rb") as f:
                    assert_eq(f.read(), pattern(3000 * (i + 1), i),
                              f"fsynced f{i}\n{out}")


@test(timeout=600, writes=True)
def small_files_survive_sync():
    """Sizes and contents of many small files reach the disk whatever the
    sync pattern (the ValidDataLength update after writeback must not be
    lost); checked after remount by both drivers."""
    patterns = ["sync; sync", "sync", "sync; sleep 1; sync", "", "sync -f {m}",
                "sync {m}/d/*"]
    nfiles = 24
    for cluster in (512, 4096):
        for pat in patterns:
            with Image(size_mb=32, cluster=cluster) as img:
                with mount(img.dev) as mnt:
                    os.mkdir(f"{mnt}/d")
                    for i in range(nfiles):
                        with open(f"{mnt}/d/f{i}", "w") as f:
                            f.write(f"hello{i}\n" * (1 + i % 7))
                    if pat:
                        sh(pat.format(m=mnt))
                for drv in ("ours", "intree"):
                    with mount(img.dev, driver=drv, opts="ro") as mnt:
                        for i in range(nfiles):
                            with open(f"{mnt}/d/f{i}") as f:
                                got = f.read()
                            assert_eq(got, f"hello{i}\n" * (1 + i % 7),
                                      f"{drv}: d/f{i} after '{pat}' "
                                      f"({cluster} B clusters)")

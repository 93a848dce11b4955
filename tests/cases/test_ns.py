# SPDX-License-Identifier: GPL-2.0
"""Namespace operations with exfat2, checked by fsck.exfat and by the
in-tree driver reading the result."""

import errno
import os

from lib import Image, assert_eq, assert_true, expect_errno, mount, test
from tree import NAMES, diff_manifests, manifest, pattern, write_file


def strip_atime(m):
    for e in m.values():
        e.pop("atime", None)
    return m


@test(timeout=600, writes=True)
def build_tree_read_by_intree():
    """A tree made by exfat2 (growing directories) reads the same in-tree."""
    for cluster in (512, 4096):
        with Image(size_mb=64, cluster=cluster) as img:
            with mount(img.dev) as mnt:
                os.mkdir(f"{mnt}/d")
                for i in range(150):          # several directory clusters
                    write_file(f"{mnt}/d/file-{i:03d}-" + "x" * (i % 40),
                               i * 37, seed=i)
                os.makedirs(f"{mnt}/a/b/c/d")
                write_file(f"{mnt}/a/b/c/d/deep", 3 * cluster + 1, seed=7)
                os.mkdir(f"{mnt}/names")
                for i, name in enumerate(NAMES):
                    write_file(f"{mnt}/names/{name}", i * 11, seed=i)
                # deletes and renames leave holes and move sets
                for i in range(0, 150, 4):
                    os.unlink(f"{mnt}/d/file-{i:03d}-" + "x" * (i % 40))
                os.rename(f"{mnt}/d/file-001-x", f"{mnt}/a/moved")
                os.rename(f"{mnt}/d/file-002-xx",
                          f"{mnt}/d/a-much-longer-name-than-before-" + "y" * 30)
                os.rename(f"{mnt}/a/b/c", f"{mnt}/names/c-moved")
                os.mkdir(f"{mnt}/empty")
                os.rmdir(f"{mnt}/empty")
                ours = strip_atime(manifest(mnt, attrs=False))
                assert_eq(os.stat(f"{mnt}/a").st_nlink, 3, "nlink of a")
            with mount(img.dev, driver="intree", opts="ro") as mnt:
                theirs = strip_atime(manifest(mnt, attrs=False))
            diff_manifests(ours, theirs, "exfat2", "in-tree")


@test(timeout=300, writes=True)
def errors_and_replace():
    """ENOTEMPTY, EEXIST, EINVAL for bad names, rename over files/dirs."""
    with Image(size_mb=32) as img:
        with mount(img.dev) as mnt:
            os.mkdir(f"{mnt}/full")
            write_file(f"{mnt}/full/f", 10)
            expect_errno(errno.ENOTEMPTY, os.rmdir, f"{mnt}/full")
            expect_errno(errno.EEXIST, os.mkdir, f"{mnt}/FULL")
            for bad in ("a:b", "q?", "st*r", 'qu"ote', "l<t", "g>t", "p|pe",
                        "b\\s"):
                expect_errno(errno.EINVAL, os.open, f"{mnt}/{bad}",
                             os.O_CREAT | os.O_WRONLY)
            expect_errno(errno.ENAMETOOLONG, os.open, f"{mnt}/" + "n" * 256,
                         os.O_CREAT | os.O_WRONLY)
            write_file(f"{mnt}/src", 1000, seed=1)
            write_file(f"{mnt}/dst", 5000, seed=2)
            free = os.statvfs(mnt).f_bfree
            os.rename(f"{mnt}/src", f"{mnt}/dst")
            with open(f"{mnt}/dst", "rb") as f:
                assert_eq(f.read(), pattern(1000, 1), "replaced content")
            assert_true(os.statvfs(mnt).f_bfree > free,
                        "the replaced file's clusters were freed")
            os.mkdir(f"{mnt}/edir")
            os.mkdir(f"{mnt}/sdir")
            write_file(f"{mnt}/sdir/x", 10)
            os.rename(f"{mnt}/sdir", f"{mnt}/edir")
            assert_eq(os.listdir(f"{mnt}/edir"), ["x"], "moved over empty dir")
            expect_errno(errno.ENOTEMPTY, os.rename, f"{mnt}/edir",
                         f"{mnt}/full")
            # an open unlinked file keeps its data until closed
            fd = os.open(f"{mnt}/dst", os.O_RDONLY)
            os.unlink(f"{mnt}/dst")
            assert_eq(os.pread(fd, 10, 0), pattern(10, 1), "unlinked read")
            os.close(fd)
            assert_true("dst" not in os.listdir(mnt), "unlinked name gone")


def renameat2(old, new, flags):
    import ctypes
    libc = ctypes.CDLL(None, use_errno=True)
    AT_FDCWD = -100
    r = libc.syscall(316, AT_FDCWD, old.encode(), AT_FDCWD, new.encode(),
                     flags)
    if r != 0:
        e = ctypes.get_errno()
        raise OSError(e, os.strerror(e))


@test(timeout=300, writes=True)
def rename_flags_and_attrs():
    """RENAME_NOREPLACE, RENAME_EXCHANGE, attribute ioctls, fallocate."""
    import fcntl
    import struct
    with Image(size_mb=32) as img:
        with mount(img.dev) as mnt:
            write_file(f"{mnt}/a", 100, seed=1)
            os.mkdir(f"{mnt}/d")
            write_file(f"{mnt}/d/b-with-a-much-longer-name-" + "z" * 40, 200,
                       seed=2)
            b = f"{mnt}/d/b-with-a-much-longer-name-" + "z" * 40
            expect_errno(errno.EEXIST, renameat2, f"{mnt}/a", b, 1)
            renameat2(f"{mnt}/a", b, 2)            # RENAME_EXCHANGE
            with open(b, "rb") as f:
                assert_eq(f.read(), pattern(100, 1), "exchanged b")
            with open(f"{mnt}/a", "rb") as f:
                assert_eq(f.read(), pattern(200, 2), "exchanged a")
            renameat2(f"{mnt}/d", f"{mnt}/a", 2)   # a dir with a file
            assert_true(os.path.isdir(f"{mnt}/a"), "a is now the dir")
            fd = os.open(f"{mnt}/d", os.O_RDWR)
            try:
                fcntl.ioctl(fd, 0x40047211, struct.pack("<I", 0x02 | 0x20))
                got = struct.unpack("<I", fcntl.ioctl(fd, 0x80047210,
                                                      b"\0" * 4))[0]
                assert_eq(got & 0x37, 0x22, "hidden|archive set")
                os.posix_fallocate(fd, 0, 1 << 20)
            finally:
                os.close(fd)
            assert_eq(os.stat(f"{mnt}/d").st_size, 1 << 20, "fallocated")
            with open(f"{mnt}/d", "rb") as f:
                assert_eq(f.read(300), pattern(200, 2) + bytes(100),
                          "fallocate keeps data and reads zeros")
            ours = strip_atime(manifest(mnt))
        with mount(img.dev, driver="intree", opts="ro") as mnt:
            theirs = strip_atime(manifest(mnt))
        diff_manifests(ours, theirs, "exfat2", "in-tree")

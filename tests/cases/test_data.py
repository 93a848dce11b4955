# SPDX-License-Identifier: GPL-2.0
"""Data path writes with exfat2 on files the in-tree driver created; the
in-tree driver then reads the result back as the oracle, and fsck.exfat
must find the volume clean."""

import errno
import mmap
import os
import resource

from lib import (Image, assert_eq, assert_true, expect_errno, mount, sh,
                 test)
from tree import diff_manifests, manifest, pattern, write_file
from wtree import io_verify_binary


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


def _survivors(dev, want, what):
    """fsck verdict (only leaks and the dirty flag allowed) and the files
    of want (name -> bytes) as both drivers read them on dev; returns
    the names in d/ each driver lists."""
    import crashlib
    ok, out = crashlib.fsck_verdict(dev)
    assert_true(ok, f"{what}: fsck.exfat:\n{out}")
    seen = {}
    for drv in ("ours", "intree"):
        with mount(dev, opts="ro", driver=drv) as mnt:
            for name, data in want.items():
                with open(f"{mnt}/d/{name}", "rb") as f:
                    assert_eq(f.read(), data, f"{what}: {drv}: fsynced "
                              f"{name}\n{out}")
            seen[drv] = sorted(os.listdir(f"{mnt}/d"))
    return seen


@test(timeout=300, writes=False)
def fsync_survives_shutdown():
    """What fsync returned for survives a shutdown without sync, for
    exfat2 and the in-tree driver, with nothing worse than leaked clusters
    and the dirty flag for fsck.exfat (the crash harness's verdict): on
    the disk as it was when the shutdown returned (a copy of the loop
    device's backing file: a power cut there), where the file that was
    never synced must be absent (else the test would prove nothing), and
    on the volume after the unmount that follows."""
    import fcntl
    import struct
    want = {f"f{i}": pattern(3000 * (i + 1), i) for i in range(8)}
    with Image(size_mb=32, fsck=False) as img:
        with mount(img.dev) as mnt:
            os.mkdir(f"{mnt}/d")
            for name, data in want.items():
                fd = os.open(f"{mnt}/d/{name}", os.O_CREAT | os.O_WRONLY,
                             0o644)
                os.write(fd, data)
                os.fsync(fd)
                os.close(fd)
            write_file(f"{mnt}/d/not-synced", 50000, seed=99)
            fd = os.open(mnt, os.O_RDONLY)
            fcntl.ioctl(fd, 0x8004587d, struct.pack("I", 2))   # NOLOGFLUSH
            os.close(fd)
            with open(img.path, "rb") as f:
                cut = f.read()
        _survivors(img.dev, want, "after the unmount")
        with Image(size_mb=32, mkfs=False, fsck=False) as snap:
            with open(snap.dev, "r+b") as f:
                f.write(cut)
            seen = _survivors(snap.dev, want, "at the shutdown")
            for drv, names in seen.items():
                assert_true("not-synced" not in names,
                            f"{drv}: the file never synced is on the disk "
                            "at the shutdown")


@test(timeout=300)
def remount_ro_writes_dirty_data():
    """mount -o remount,ro with dirty data in the page cache (appends,
    new files, a truncate up, none synced) writes it all: the disk as it
    is right after the remount (a copy of the loop device's backing
    file, taken while still mounted) holds every file, read by the
    in-tree driver, with VolumeDirty clear."""
    files = {f"n{i}": pattern(5000 * i + 17, 40 + i) for i in range(6)}
    with Image(size_mb=32, cluster=4096) as img:
        with mount(img.dev) as mnt:
            write_file(f"{mnt}/grown", 3000, seed=50)
            os.sync()
            for name, data in files.items():
                with open(f"{mnt}/{name}", "wb") as f:
                    f.write(data)
            with open(f"{mnt}/grown", "ab") as f:
                f.write(pattern(70000, 51))
            os.truncate(f"{mnt}/grown", 90000)
            sh(f"mount -o remount,ro {mnt}")
            with open(img.dev, "rb") as f:
                flags = int.from_bytes(f.read(512)[106:108], "little")
            assert_eq(flags & 2, 0, "VolumeDirty after remount,ro")
            expect_errno(errno.EROFS, os.open, f"{mnt}/x",
                         os.O_CREAT | os.O_WRONLY)
            with open(img.path, "rb") as f:
                cut = f.read()
    files["grown"] = (pattern(3000, 50) + pattern(70000, 51) +
                      bytes(90000 - 73000))
    with Image(size_mb=32, mkfs=False) as snap:
        with open(snap.dev, "r+b") as f:
            f.write(cut)
        with mount(snap.dev, driver="intree", opts="ro") as mnt:
            for name, data in files.items():
                with open(f"{mnt}/{name}", "rb") as f:
                    assert_true(f.read() == data, f"in-tree, the disk "
                                f"after remount,ro: {name}")


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


def dirty_free_space(mnt, mb):
    """Fill mb MiB of the volume with non-zero data and delete it, so
    clusters handed out next held other data: "reads as zero" can fail."""
    with open(f"{mnt}/.stale", "wb") as f:
        for i in range(mb):
            f.write(os.urandom(1 << 20).replace(b"\0", b"\x01"))
    os.unlink(f"{mnt}/.stale")
    sh("sync")


@test(timeout=900, writes=True)
def aio_dio_extending_writes():
    """Asynchronous O_DIRECT writes (io_submit and io_uring) that extend
    the file, two at once into the same cluster (fstests generic/538), and
    appends with eight in flight while two threads read back what has
    completed (generic/465): every byte is a function of its offset, on
    clusters that held other data; then in-tree reads the files too."""
    tool = io_verify_binary()
    for cluster in (4096, 32768):
        with Image(size_mb=48, cluster=cluster) as img:
            with mount(img.dev) as mnt:
                dirty_free_space(mnt, 24)
                for eng in ("aio", "uring"):
                    sh(f"{tool} pairs {mnt}/pairs-{eng} {cluster} {eng}")
                    sh(f"{tool} append {mnt}/append-{eng} {6 << 20} "
                       f"{3 * 4096} 8 {eng}")
                sums = sh(f"cd {mnt} && md5sum append-* pairs-*").stdout
            with mount(img.dev, driver="intree", opts="ro") as mnt:
                assert_eq(sh(f"cd {mnt} && md5sum append-* pairs-*").stdout,
                          sums, "in-tree reads what exfat2 wrote")


@test(timeout=900, writes=True)
def mmap_races_with_writes():
    """Stores through a shared mapping racing the file's growth: a file
    grown byte by byte by fallocate with each byte stored through the
    mapping while fdatasync loops (fstests generic/438), and page faults
    on folios an append is still filling (zeroing up to ValidDataLength
    must never reach data a write put there); every byte checked, on
    clusters that held other data."""
    tool = io_verify_binary()
    for cluster, sector in ((4096, 512), (32768, 512), (4096, 4096)):
        with Image(size_mb=64, cluster=cluster, sector=sector) as img:
            with mount(img.dev) as mnt:
                dirty_free_space(mnt, 24)
                sh(f"{tool} mmap-falloc {mnt}/falloc {8 << 10}")
                for i in range(2):
                    sh(f"{tool} mmap-write {mnt}/mw{i} {6 << 20} {192 << 10}")
                sums = sh(f"cd {mnt} && md5sum falloc mw*").stdout
            with mount(img.dev, driver="intree", opts="ro") as mnt:
                assert_eq(sh(f"cd {mnt} && md5sum falloc mw*").stdout,
                          sums, "in-tree reads what exfat2 wrote")


@test(timeout=600, writes=True)
def truncate_races_writeback():
    """A file written and truncated in a loop while fdatasync runs on it
    and another file takes the freed clusters: writeback must never send
    the first file's data to clusters a truncate freed (the second file,
    read with O_DIRECT, would show it)."""
    tool = io_verify_binary()
    for cluster in (4096, 65536):
        with Image(size_mb=48, cluster=cluster) as img:
            with mount(img.dev) as mnt:
                sh(f"{tool} trunc-race {mnt}/a {mnt}/b 200")


@test(timeout=900, writes=True)
def mixed_io_on_one_file():
    """Buffered writes, O_DIRECT writes and stores through a shared
    mapping, from three processes into their own stripes of one file,
    while two more read it (buffered and O_DIRECT) and run fdatasync
    with page cache drops: every read finds the data of each write done
    before it began and nothing but zeros elsewhere, on clusters that
    held other data; then in-tree reads the file too.  The checker's
    self-test (one byte written wrong on purpose) must fail."""
    tool = io_verify_binary()
    p = sh(f"IO_VERIFY_SELFTEST=1 {tool} mixed /tmp/io-verify-selftest "
           f"{1 << 20} 200", check=False)
    os.unlink("/tmp/io-verify-selftest")
    assert_true(p.returncode == 1 and "expected" in p.stderr,
                f"io-verify's self-test must fail: {p.returncode} "
                f"{p.stderr.strip()}")
    for cluster in (4096, 65536):
        with Image(size_mb=48, cluster=cluster) as img:
            with mount(img.dev) as mnt:
                dirty_free_space(mnt, 24)
                sh(f"{tool} mixed {mnt}/mixed {6 << 20} 1500")
                sums = sh(f"md5sum {mnt}/mixed").stdout.split()[0]
            with mount(img.dev, driver="intree", opts="ro") as mnt:
                assert_eq(sh(f"md5sum {mnt}/mixed").stdout.split()[0],
                          sums, "in-tree reads what exfat2 wrote")


@test(timeout=300, writes=True)
def size_limits_blocks_and_seek():
    """fallocate past RLIMIT_FSIZE fails with EFBIG (fstests generic/228),
    and a write past the size of the cluster heap too; fallocate of more
    than is free is ENOSPC and allocates nothing (generic/213);
    st_blocks counts clusters before writeback (generic/615); SEEK_DATA
    and SEEK_HOLE see the whole file as data, as the in-tree driver does,
    even past ValidDataLength (generic/285, 490, 436)."""
    with Image(size_mb=32, cluster=4096) as img:
        with mount(img.dev) as mnt:
            path = f"{mnt}/f"
            write_file(path, 0)
            pid = os.fork()
            if pid == 0:
                code = 3
                try:
                    resource.setrlimit(resource.RLIMIT_FSIZE,
                                       (1 << 20, 1 << 20))
                    fd = os.open(path, os.O_RDWR)
                    try:
                        os.posix_fallocate(fd, 0, 2 << 20)
                        code = 1
                    except OSError as e:
                        code = 0 if e.errno == errno.EFBIG else 2
                finally:
                    os._exit(code)
            _, status = os.waitpid(pid, 0)
            assert_eq(os.waitstatus_to_exitcode(status), 0,
                      "fallocate past RLIMIT_FSIZE: EFBIG (1: it succeeded)")
            assert_eq(os.stat(path).st_size, 0, "size unchanged")
            # no holes: a file never outgrows the cluster heap (EFBIG, as
            # in-tree; seek_sanity_test then skips its 8 GiB file)
            fd = os.open(path, os.O_RDWR)
            try:
                expect_errno(errno.EFBIG, os.pwrite, fd, b"x", 40 << 20)
                # more than is free but less than the heap: ENOSPC, and
                # nothing allocated (generic/213 asks more than the heap,
                # which the VFS answers with EFBIG first)
                st = os.statvfs(mnt)
                free = st.f_bfree * st.f_bsize
                expect_errno(errno.ENOSPC, os.posix_fallocate, fd, 0,
                             free + 2 * 4096)
                assert_eq(os.fstat(fd).st_size, 0, "size after ENOSPC")
                assert_eq(os.statvfs(mnt).f_bfree, st.f_bfree,
                          "free clusters after ENOSPC")
            finally:
                os.close(fd)

            with open(f"{mnt}/buffered", "wb") as f:
                f.write(pattern(3 * 4096 + 10, 3))
                st = os.fstat(f.fileno())
                assert_eq(st.st_blocks * 512, 4 * 4096,
                          "st_blocks of data not yet written back")

            write_file(path, 5000, 4)
            os.truncate(path, 3 << 20)
            fd = os.open(path, os.O_RDONLY)
            try:
                assert_eq(os.lseek(fd, 0, os.SEEK_HOLE), 3 << 20,
                          "SEEK_HOLE: the end of the file")
                assert_eq(os.lseek(fd, 1 << 20, os.SEEK_DATA), 1 << 20,
                          "SEEK_DATA past ValidDataLength")
                expect_errno(errno.ENXIO, os.lseek, fd, 3 << 20,
                             os.SEEK_DATA)
            finally:
                os.close(fd)

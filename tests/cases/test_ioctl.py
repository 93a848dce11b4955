# SPDX-License-Identifier: GPL-2.0
"""ioctls and remount: each test fails if its feature is removed."""

import array
import ctypes
import errno
import fcntl
import os
import random
import struct

from lib import (Image, TestFailure, assert_eq, assert_true,
                 dmesg_this_test, expect_errno, fork_on_go, log, mount,
                 name_to_handle, open_by_handle, read_by_handle, sh, test,
                 umount)
from tree import pattern, write_file
from xcheck import check as xcheck_problems

FS_IOC_GETFSLABEL = 0x81009431
FS_IOC_SETFSLABEL = 0x41009432
FS_IOC_GETFSUUID = 0x80111500
FS_IOC_GETFSSYSFSPATH = 0x80811501     # _IOR(0x15, 1, struct fs_sysfs_path)
FS_IOC_GETFLAGS = 0x80086601
FS_IOC_FSGETXATTR = 0x801c581f
FITRIM = 0xc0185879
EXFAT_IOC_SHUTDOWN = 0x8004587d


def get_label(mnt):
    fd = os.open(mnt, os.O_RDONLY)
    try:
        buf = fcntl.ioctl(fd, FS_IOC_GETFSLABEL, b"\0" * 256)
    finally:
        os.close(fd)
    return buf.split(b"\0", 1)[0].decode()


def set_label(mnt, label):
    fd = os.open(mnt, os.O_RDONLY)
    try:
        fcntl.ioctl(fd, FS_IOC_SETFSLABEL, label.encode().ljust(256, b"\0"))
    finally:
        os.close(fd)


@test(timeout=300, writes=True)
def volume_label():
    """FS_IOC_GET/SETFSLABEL, with and without an existing label entry."""
    for initial in ("CARD", None):
        with Image(size_mb=32, label=initial) as img:
            with mount(img.dev) as mnt:
                assert_eq(get_label(mnt), initial or "", "label at mount")
                set_label(mnt, "Ünïcode-11")
                assert_eq(get_label(mnt), "Ünïcode-11", "label after set")
                expect_errno(errno.EINVAL, set_label, mnt, "x" * 12)
            out = sh(f"exfatlabel {img.dev}").stdout
            assert_true("Ünïcode-11" in out, f"exfatlabel says: {out}")
            with mount(img.dev, opts="ro") as mnt:
                assert_eq(get_label(mnt), "Ünïcode-11", "label after remount")


@test(timeout=120, writes=False)
def uuid_as_blkid():
    """FS_IOC_GETFSUUID returns the volume serial as blkid shows it;
    FS_IOC_GETFSSYSFSPATH names the file system type and the device."""
    with Image(size_mb=16) as img:
        want = sh(f"blkid -o value -s UUID {img.dev}").stdout.strip()
        with mount(img.dev, opts="ro") as mnt:
            fd = os.open(mnt, os.O_RDONLY)
            try:
                buf = fcntl.ioctl(fd, FS_IOC_GETFSUUID, b"\0" * 17)
                path = fcntl.ioctl(fd, FS_IOC_GETFSSYSFSPATH, b"\0" * 129)
            finally:
                os.close(fd)
        n = buf[0]
        got = buf[1:1 + n].hex().upper()
        assert_eq(f"{got[:4]}-{got[4:]}", want, "uuid")
        n = path[0]
        assert_eq(path[1:1 + n].decode(),
                  "exfat/" + os.path.basename(img.dev), "sysfs path")


@test(timeout=300, writes=True)
def fitrim_and_fileattr():
    """FITRIM trims free space (range honoured); lsattr works."""
    with Image(size_mb=64) as img:
        with mount(img.dev) as mnt:
            write_file(f"{mnt}/f", 1 << 20)
            fd = os.open(mnt, os.O_RDONLY)
            try:
                rng = struct.pack("QQQ", 0, 1 << 62, 0)
                out = fcntl.ioctl(fd, FITRIM, rng)
                trimmed = struct.unpack("QQQ", out)[1]
                assert_true(trimmed > 50 << 20, f"trimmed {trimmed}")
                out = fcntl.ioctl(fd, FITRIM, struct.pack("QQQ", 0, 8 << 20, 0))
                small = struct.unpack("QQQ", out)[1]
                assert_true(small < trimmed and small <= 8 << 20,
                            f"range honoured: {small}")
                flags = array.array("l", [0])
                fcntl.ioctl(fd, FS_IOC_GETFLAGS, flags)
                assert_eq(flags[0], 0, "no inode flags")
                fcntl.ioctl(fd, FS_IOC_FSGETXATTR, b"\0" * 28)
            finally:
                os.close(fd)
            sh(f"lsattr -d {mnt}")


@test(timeout=600, writes=True)
def trim_and_discard_under_fill_delete_refill():
    """FITRIM, and -o discard, on a volume being filled, half deleted and
    refilled three times: what is trimmed is really gone from the loop
    device's backing file (it punches holes: its allocated blocks drop),
    and every file that was kept or written after a trim reads back
    whole, for exfat2 and for the in-tree driver."""
    from tree import pattern
    for opts in ("", "discard"):
        with Image(size_mb=64, cluster=4096) as img:
            model = {}
            blocks = [os.stat(img.path).st_blocks]
            with mount(img.dev, opts=opts) as mnt:
                for r in range(3):
                    for i in range(8):
                        name = f"r{r}-{i}"
                        model[name] = pattern((2 << 20) + 4096 * i + r,
                                              1000 * r + i)
                        with open(f"{mnt}/{name}", "wb") as f:
                            f.write(model[name])
                    os.sync()
                    for name in sorted(model)[::2]:
                        os.unlink(f"{mnt}/{name}")
                        del model[name]
                    if not opts:
                        fd = os.open(mnt, os.O_RDONLY)
                        try:
                            fcntl.ioctl(fd, FITRIM, struct.pack(
                                "QQQ", 0, (1 << 64) - 1, 0))
                        finally:
                            os.close(fd)
                    os.sync()
                    blocks.append(os.stat(img.path).st_blocks)
                    for name, data in model.items():
                        with open(f"{mnt}/{name}", "rb") as f:
                            assert_true(f.read() == data,
                                        f"{opts or 'FITRIM'}: round {r}: "
                                        f"{name}")
            log(f"{opts or 'FITRIM'}: the backing file's 512-byte blocks "
                f"at the start and after each round: {blocks}")
            # at least the first round's deleted files (8 MiB) punched
            assert_true(blocks[0] - min(blocks[1:]) >= (8 << 20) // 512,
                        f"{opts or 'FITRIM'}: the backing file's blocks "
                        f"{blocks}: too little was trimmed")
            with mount(img.dev, driver="intree", opts="ro") as mnt:
                for name, data in model.items():
                    with open(f"{mnt}/{name}", "rb") as f:
                        assert_true(f.read() == data,
                                    f"{opts or 'FITRIM'}: in-tree: {name}")


@test(timeout=300, writes=True)
def fitrim_arguments():
    """FITRIM ranges as ext4 and xfs take them (fstests generic/260, 288):
    a start at or past the end of the volume, a zero length and a length
    below a cluster fail with EINVAL; a start with the default length
    (ULLONG_MAX, as fstrim -o passes it) trims up to the end; a length
    past the end is cut there."""
    with Image(size_mb=64, cluster=4096) as img:
        with mount(img.dev) as mnt:
            size = 64 << 20
            fd = os.open(mnt, os.O_RDONLY)

            def trim(start, length, minlen=0):
                out = fcntl.ioctl(fd, FITRIM,
                                  struct.pack("QQQ", start, length, minlen))
                return struct.unpack("QQQ", out)[1]
            try:
                for start, length in ((size * 2, (1 << 64) - 1),
                                      (size * 2, 1 << 20),
                                      ((1 << 64) - 1, (1 << 64) - 1),
                                      ((1 << 64) - 1, 1 << 20),
                                      (0, 0), (0, 100), (0, 4095)):
                    expect_errno(errno.EINVAL, trim, start, length)
                whole = trim(0, (1 << 64) - 1)
                assert_true(whole > 50 << 20, f"whole volume: {whole}")
                tail = trim(10 << 20, (1 << 64) - 1)
                assert_true(40 << 20 < tail < whole,
                            f"from 10 MiB, default length: {tail}")
                assert_eq(trim(10 << 20, size * 4), tail,
                          "a length past the end is cut there")
            finally:
                os.close(fd)


@test(timeout=300, writes=False)
def shutdown_modes():
    """EXFAT_IOC_SHUTDOWN in all three modes: later operations fail."""
    for mode in (0, 1, 2):
        with Image(size_mb=32, fsck=(mode != 2)) as img:
            with mount(img.dev) as mnt:
                write_file(f"{mnt}/keep", 5000, seed=1)
                fd = os.open(f"{mnt}/keep", os.O_RDWR)
                fcntl.ioctl(fd, EXFAT_IOC_SHUTDOWN, struct.pack("I", mode))
                expect_errno(errno.EIO, os.pread, fd, 10, 0)
                expect_errno(errno.EIO, os.pwrite, fd, b"x", 0)
                os.close(fd)
                expect_errno(errno.EIO, os.listdir, mnt)
                expect_errno(errno.EIO, os.open, f"{mnt}/new",
                             os.O_CREAT | os.O_WRONLY)
                expect_errno(errno.EIO, os.mkdir, f"{mnt}/d")
            if mode != 2:
                with mount(img.dev, opts="ro") as mnt:
                    assert_eq(os.stat(f"{mnt}/keep").st_size, 5000,
                              f"mode {mode}: synced file survives")


@test(timeout=300, writes=True)
def remount_options():
    """Remount applies what is safe, refuses the rest, ro clears dirty."""
    with Image(size_mb=32) as img:
        with mount(img.dev) as mnt:
            write_file(f"{mnt}/f", 10)
            with open(img.dev, "rb") as f:
                f.seek(106)
                assert_true(f.read(1)[0] & 2, "VolumeDirty while dirty")
            sh(f"mount -o remount,errors=continue {mnt}")
            opts = sh(f"grep ' {mnt} ' /proc/mounts").stdout
            assert_true("errors=continue" in opts, opts)
            r = sh(f"mount -o remount,uid=1234 {mnt}", check=False)
            assert_true(r.returncode != 0, "uid change refused")
            assert_true("uid" in dmesg_this_test(),
                        "refusal explained")
            sh(f"mount -o remount,ro {mnt}")
            with open(img.dev, "rb") as f:
                f.seek(106)
                assert_eq(f.read(1)[0] & 2, 0, "ro remount clears VolumeDirty")
            sh(f"mount -o remount,rw {mnt}")
            write_file(f"{mnt}/g", 10)


@test(timeout=300, writes=True)
def nfs_file_handles():
    """File handles survive cache eviction, writes to an empty file and
    an O_TRUNC rewrite; a renamed file's is stale, and so is a deleted
    one's when a new file takes its slot."""
    with Image(size_mb=32) as img:
        with mount(img.dev) as mnt:
            os.makedirs(f"{mnt}/a/b")
            write_file(f"{mnt}/a/b/f", 7000, seed=3)
            write_file(f"{mnt}/g", 100, seed=4)
            hf = name_to_handle(f"{mnt}/a/b/f")
            hd = name_to_handle(f"{mnt}/a/b")
            hg = name_to_handle(f"{mnt}/g")
            sh("sync; echo 3 > /proc/sys/vm/drop_caches")
            from tree import pattern
            assert_eq(read_by_handle(mnt, hf), pattern(7000, 3),
                      "file by handle")
            fd = open_by_handle(mnt, hd)
            try:
                assert_eq(os.listdir(fd), ["f"], "directory by handle")
            finally:
                os.close(fd)
            os.rename(f"{mnt}/g", f"{mnt}/a/g2")
            sh("sync; echo 3 > /proc/sys/vm/drop_caches")
            expect_errno(errno.ESTALE, open_by_handle, mnt, hg)

            # What NFS does: create empty, then write through the handle;
            # an O_TRUNC rewrite moves the data; neither is a new file.
            data = random.Random(8).randbytes(9000)
            open(f"{mnt}/e", "wb").close()
            he = name_to_handle(f"{mnt}/e")
            for step in ("written", "rewritten"):
                with open(f"{mnt}/e", "wb") as f:
                    f.write(data)
                for evict in (False, True):
                    if evict:
                        sh("sync; echo 3 > /proc/sys/vm/drop_caches")
                    got = read_by_handle(mnt, he)
                    assert_eq(got, data, f"empty file's handle, {step}, "
                              f"{'after' if evict else 'before'} eviction")
                data = data[::-1]

            # A new file in a deleted one's slot is another file: its
            # handle differs (created at least 10 ms later; retried until
            # so) and the old one is stale.
            old = name_to_handle(f"{mnt}/e")
            for _ in range(100):
                os.unlink(f"{mnt}/e")
                open(f"{mnt}/e", "wb").close()
                new = name_to_handle(f"{mnt}/e")
                if new.raw != old.raw:
                    break
            assert_eq(new.raw[8:16], old.raw[8:16], "the slot reused")
            assert_true(new.raw != old.raw, "a different creation time")
            sh("sync; echo 3 > /proc/sys/vm/drop_caches")
            expect_errno(errno.ESTALE, open_by_handle, mnt, old)
            os.close(open_by_handle(mnt, new))


_libc = ctypes.CDLL(None, use_errno=True)
_SYS_OPEN_TREE, _SYS_MOVE_MOUNT, _SYS_MOUNT_SETATTR = 428, 429, 442


def _syscall(nr, *args):
    ret = _libc.syscall(nr, *args)
    if ret < 0:
        e = ctypes.get_errno()
        raise OSError(e, os.strerror(e))
    return ret


def _userns_child(outside):
    """A child in a new user namespace mapping 0 to `outside`; returns the
    fd of that namespace."""
    up_r, up_w = os.pipe()          # child -> parent: unshared
    down_r, down_w = os.pipe()      # parent -> child: done, exit
    pid = os.fork()
    if pid == 0:
        try:
            # The VM runs the tests chrooted (tools/vm/guest-init.sh) and a
            # chrooted process may not create a user namespace: step out
            # to the real root first (cwd is outside the new root).
            os.makedirs("/tmp/userns-chroot", exist_ok=True)
            os.chroot("/tmp/userns-chroot")
            for _ in range(64):
                os.chdir("..")
            os.chroot(".")
            if _libc.unshare(0x10000000) == 0:      # CLONE_NEWUSER
                os.write(up_w, b"x")
                os.read(down_r, 1)
        finally:
            os._exit(0)
    os.close(up_w)
    os.close(down_r)
    try:
        assert_eq(os.read(up_r, 1), b"x", "child in a new user namespace")
        for f in ("uid_map", "gid_map"):
            with open(f"/proc/{pid}/{f}", "w") as m:
                m.write(f"0 {outside} 1\n")
        fd = os.open(f"/proc/{pid}/ns/user", os.O_RDONLY)
    finally:
        try:
            os.write(down_w, b"x")
        except BrokenPipeError:
            pass
        os.waitpid(pid, 0)
        os.close(up_r)
        os.close(down_w)
    return fd


def _as_user(uid, fn):
    """Run fn() in a child with all ids = uid; its return value (an
    errno or 0) comes back."""
    pid = os.fork()
    if pid == 0:
        code = 99
        try:
            os.setgroups([])
            os.setresgid(uid, uid, uid)
            os.setresuid(uid, uid, uid)
            code = fn()
        finally:
            os._exit(code)
    return os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])


def _try_create(path):
    try:
        os.close(os.open(path, os.O_CREAT | os.O_WRONLY, 0o644))
        return 0
    except OSError as e:
        return e.errno


@test(timeout=300, writes=True)
def idmapped_mount():
    """An idmapped mount shows and checks owners through its map."""
    with Image(size_mb=16) as img:
        with mount(img.dev) as mnt:
            write_file(f"{mnt}/a", 100)
            idm = "/mnt/idm"
            os.makedirs(idm, exist_ok=True)
            ns = _userns_child(1000)
            tree = _syscall(_SYS_OPEN_TREE, -100, mnt.encode(),
                            1 | os.O_CLOEXEC)           # OPEN_TREE_CLONE
            try:
                attr = struct.pack("QQQQ", 0x00100000, 0, 0, ns)
                _syscall(_SYS_MOUNT_SETATTR, tree, b"", 0x1000,  # EMPTY_PATH
                         attr, len(attr))
                _syscall(_SYS_MOVE_MOUNT, tree, b"", -100, idm.encode(),
                         0x4)                           # F_EMPTY_PATH
            finally:
                os.close(tree)
                os.close(ns)
            try:
                assert_eq(os.stat(f"{mnt}/a").st_uid, 0, "owner, plain")
                assert_eq(os.stat(f"{idm}/a").st_uid, 1000, "owner, idmapped")
                assert_eq(os.stat(f"{idm}/a").st_gid, 1000, "group, idmapped")
                assert_eq(_as_user(1000, lambda: _try_create(f"{idm}/b")), 0,
                          "uid 1000 creates through the idmapped mount")
                assert_eq(_as_user(1000, lambda: _try_create(f"{mnt}/c")),
                          errno.EACCES, "uid 1000 on the plain mount")
                assert_eq(os.stat(f"{mnt}/b").st_uid, 0, "new file, plain")
                assert_eq(os.stat(f"{idm}/b").st_uid, 1000,
                          "new file, idmapped")
            finally:
                umount(idm)


def _blocked_in_freeze(pid):
    """Wait until process pid sleeps on the freeze: None; or exits: its
    exit code."""
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            return os.waitstatus_to_exitcode(status)
        try:
            with open(f"/proc/{pid}/stack") as f:
                if "percpu_rwsem" in f.read():
                    return None
        except OSError:
            pass
        os.sched_yield()


@test(timeout=300, writes=True)
def freeze_and_thaw():
    """FIFREEZE (fsfreeze, LVM snapshots) syncs the volume and holds every
    change back until FITHAW: the frozen device is a clean volume
    (fsck.exfat clean, VolumeDirty clear) with the data written before,
    and stays byte for byte the same while a write waits and while the
    last close of an unlinked file, whose clusters are freed on evict,
    waits.  Before exfat2 had freeze_fs, FIFREEZE failed with
    EOPNOTSUPP (fstests generic/068, 085, 390, 491, 738 were not run)."""
    with Image(size_mb=32, cluster=4096) as img, mount(img.dev) as mnt:
        write_file(f"{mnt}/kept", 300000, 21)
        write_file(f"{mnt}/doomed", 200000, 22)
        os.mkdir(f"{mnt}/d")
        write_file(f"{mnt}/d/inner", 5000, 23)
        fd = os.open(f"{mnt}/doomed", os.O_RDONLY)
        os.unlink(f"{mnt}/doomed")
        snap = f"{img.path}.frozen"
        try:
            sh(f"fsfreeze -f {mnt}")
            try:
                sh(f"cp --sparse=always {img.path} {snap}")
                # the writer and the closer each hold fd; the writer
                # drops its copy first: the closer's close is the last
                writer, go = fork_on_go(lambda: (
                    os.close(fd), write_file(f"{mnt}/late", 9000, 24)))
                go()
                assert_eq(_blocked_in_freeze(writer), None,
                          "a write waits while the volume is frozen")
                closer, go = fork_on_go(lambda: os.close(fd))
                os.close(fd)
                go()
                assert_eq(_blocked_in_freeze(closer), None,
                          "the last close of an unlinked file (its clusters"
                          " freed on evict) waits while frozen")
                with open(img.path, "rb") as a, open(snap, "rb") as b:
                    same = a.read() == b.read()
                assert_true(same, "the frozen device is unchanged")
            finally:
                sh(f"fsfreeze -u {mnt}")
            for pid in (writer, closer):
                _, status = os.waitpid(pid, 0)
                assert_eq(os.waitstatus_to_exitcode(status), 0,
                          "after thaw")
            # clean but for the unlinked file still open: its set is
            # gone, its clusters are freed on evict (exFAT has no list
            # of orphans; fsck.exfat -n says nothing, xcheck.py sees it)
            p = sh(f"fsck.exfat -n {snap}", check=False)
            assert_eq(p.returncode, 0, f"fsck.exfat -n of the frozen "
                      f"image\n{p.stdout}{p.stderr}")
            with open(snap, "rb") as f:
                f.seek(106)
                assert_eq(int.from_bytes(f.read(2), "little") & 2, 0,
                          "VolumeDirty in the frozen image")
            leak = f"{-(-200000 // 4096)} clusters marked in use that no " \
                "chain owns (leak)"
            problems = [x for x in xcheck_problems(snap)
                        if not x.startswith(leak)]
            assert_eq(problems, [], "xcheck.py of the frozen image")
            with mount(snap, "/mnt/frozen", opts="ro,loop") as m2:
                for name, n, seed in (("kept", 300000, 21),
                                      ("d/inner", 5000, 23)):
                    with open(f"{m2}/{name}", "rb") as f:
                        if f.read() != pattern(n, seed):
                            raise TestFailure(f"{name} in the frozen image")
                assert_true(not os.path.exists(f"{m2}/doomed"),
                            "the unlinked file is gone in the frozen image")
        finally:
            if os.path.exists(snap):
                os.unlink(snap)
        with open(f"{mnt}/late", "rb") as f:
            assert_eq(f.read() == pattern(9000, 24), True, "late written")

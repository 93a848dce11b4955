# SPDX-License-Identifier: GPL-2.0
"""Write path: data and namespace operations by the driver under test,
checked by fsck.exfat, by the in-tree driver and by exfat-fuse.

The driver under test is wtree.WRITE_DRIVER: "ours" (exfat2) unless
tests/cases/write_driver.txt says "intree" (which validates these tests
against the in-tree driver).  Where the in-tree driver does not do what the
write path must do, EXPECT below records both behaviours.

Every test writes, so lib checks each volume with fsck.exfat -n (and the
VolumeDirty flag) when its Image is released.
"""

import contextlib
import errno
import mmap
import os
import random
import shutil
import subprocess
import sys
import time
import zlib

from lib import (OUT, Image, TestFailure, assert_eq, assert_true,
                 expect_errno, fail, fsck_clean, log, mount, sh, test,
                 umount, xcheck_clean)
from tree import (ATTR_ARCHIVE, ATTR_DIR, ATTR_HIDDEN, ATTR_READONLY,
                  ATTR_SYSTEM, get_attr, pattern, set_attr, write_file)
from wtree import (ALL_FIELDS, FUSE_FIELDS, RENAME_EXCHANGE,
                   RENAME_NOREPLACE, RENAME_WHITEOUT, WRITE_DRIVER,
                   bitmap_free, compare, dump_free, fsx_binary, fuse_mount,
                   fuse_view, manifest, model_tree, model_view,
                   modify_tree, mount_rw, renameat2, write_tree)

X = WRITE_DRIVER

# Behaviour the write path must have where the in-tree driver (6.12)
# differs; the in-tree column is what it was measured to do.
_EXPECT = {
    # rename("a", "A"): in-tree returns 0 and changes nothing (the VFS
    # finds the same dentry through the case-insensitive d_compare).
    "case_only_rename": {"intree": "no-op", "ours": "renamed"},
    # renameat2(RENAME_EXCHANGE): in-tree rejects every flag but
    # RENAME_NOREPLACE with EINVAL.
    "rename_exchange": {"intree": errno.EINVAL, "ours": 0},
    # chmod u+w of a file whose read-only attribute was read from disk:
    # in-tree shows mode 0755 until the next mount but never clears the
    # attribute on disk (exfat_make_attr() only ever adds ATTR_READONLY to
    # the attributes it loaded).
    "chmod_clears_disk_readonly": {"intree": False, "ours": True},
    # After concurrent mkdir/rmdir/rename of directories (namespace_stress
    # with 2 or 4 processes, not with 1) the in-tree driver's in-memory
    # link count of a parent directory can be one too high; the volume is
    # right (a remount shows 2 + subdirectories).
    "dir_nlink_exact_under_concurrency": {"intree": False, "ours": True},
    # fallocate(mode 0): in-tree (6.12) has no fallocate at all (every mode
    # is EOPNOTSUPP); the write path must support mode 0.  Other modes may
    # be EOPNOTSUPP for both: fsx-lite skips what it finds unsupported.
    "fallocate_mode0": {"intree": False, "ours": True},
}
EXPECT = {k: v[X] for k, v in _EXPECT.items()}

# Comparing two manifests both taken on read-write mounts: atime is left
# out, because reading a file (as manifest() does) moves atime whenever its
# 2 s-truncated value is older than mtime (relatime).
NO_ATIME = tuple(f for f in ALL_FIELDS if f != "atime")

# fsx-lite: operations per file, and its files' size limits.
FSX_OPS = 3000
FSX_ARGS = ["-l", "2M", "-o", "128K", "-c", "500", "-d", "97"]


@contextlib.contextmanager
def volume(size_mb=16, cluster=None, sector=512):
    """A fresh volume mounted read-write by the driver under test."""
    with Image(size_mb=size_mb, cluster=cluster, sector=sector) as img:
        with mount_rw(img.dev) as mnt:
            yield img, mnt


def read(path):
    with open(path, "rb") as f:
        return f.read()


def listing(d):
    return sorted(os.listdir(d))


# --- fsx-lite ---------------------------------------------------------------

def run_fsx(cluster, sector, seeds, size_mb=64, remount_run=False,
            dio_align=4096):
    """fsx-lite on len(seeds) files at once, then each file compared with
    the model fsx-lite saved: after a remount with the driver under test
    and under the in-tree driver.  remount_run: one more file, alone, with
    a remount every 1000 operations.  O_DIRECT is done at dio_align (and
    must work: fsx-lite fails otherwise)."""
    fsx = fsx_binary()
    fsx_args = FSX_ARGS + ["-A", str(dio_align)]
    models = []
    with Image(size_mb=size_mb, cluster=cluster, sector=sector) as img:
        with mount_rw(img.dev) as mnt:
            procs = []
            for i, seed in enumerate(seeds):
                model = f"/tmp/fsx-model-{os.getpid()}-{i}"
                models.append((f"fsx-{i}", model))
                args = [fsx, "-S", str(seed), "-N", str(FSX_OPS)] + \
                    fsx_args + ["-s", model, f"{mnt}/fsx-{i}"]
                log(" ".join(args))
                procs.append(subprocess.Popen(
                    args, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                    encoding="utf-8", errors="replace"))
            failed = []
            for p in procs:
                out = p.communicate()[0]
                print(out, flush=True)
                if p.returncode:
                    failed.append(f"exit {p.returncode}: "
                                  + "\n".join(out.splitlines()[:40]))
                unsupported = [line for line in out.splitlines()
                               if line.startswith("unsupported:")]
                if unsupported:
                    log(f"fsx-lite {unsupported[0]}")
                    if EXPECT["fallocate_mode0"] and \
                            " falloc(" in unsupported[0]:
                        failed.append("fallocate mode 0 is not supported")
            if failed:
                fail("fsx-lite failed:\n" + "\n".join(failed))
        if remount_run:
            seed = seeds[0] + 1000
            model = f"/tmp/fsx-model-{os.getpid()}-r"
            models.append(("fsx-r", model))
            with mount_rw(img.dev) as mnt:
                cmd = (f"umount {mnt} && mount -t exfat {img.dev} {mnt}")
                args = [fsx, "-S", str(seed), "-N", str(FSX_OPS)] + \
                    fsx_args + ["-m", "1000", "-M", cmd, "-s", model,
                                f"{mnt}/fsx-r"]
                log(" ".join(args))
                p = subprocess.run(args, capture_output=True,
                                   encoding="utf-8", errors="replace")
                print(p.stdout + p.stderr, flush=True)
                if p.returncode:
                    fail(f"fsx-lite with remounts failed (exit "
                         f"{p.returncode}):\n"
                         + "\n".join(p.stdout.splitlines()[:40]))
        for drv in (X, "intree"):
            with mount(img.dev, driver=drv, opts="ro") as mnt:
                for name, model in models:
                    if read(f"{mnt}/{name}") != read(model):
                        fail(f"{name} after remount ({drv}) differs from "
                             f"fsx-lite's model")
            if drv == X:
                fsck_clean(img.dev)
    for _, model in models:
        os.unlink(model)


@test(timeout=900)
def fsx_512_clusters():
    """fsx-lite, two files at once, 512 B clusters, O_DIRECT aligned to
    512 bytes; files checked after a remount by both drivers."""
    run_fsx("512", 512, [5121, 5122], dio_align=512)


@test(timeout=900)
def fsx_4k_clusters():
    """fsx-lite, two files at once, 4 KiB clusters, then one more file with
    a remount every 1000 operations."""
    run_fsx("4K", 512, [4091, 4092], remount_run=True)


@test(timeout=900)
def fsx_1m_clusters_4k_sectors():
    """fsx-lite, two files at once, 1 MiB clusters on 4 KiB sectors."""
    run_fsx("1M", 4096, [1021, 1022], size_mb=128)


# --- cross-driver -------------------------------------------------------------

def check_by_intree_and_fuse(dev, want, what, model):
    """The volume, fsck-clean, reads as manifest `want` under the in-tree
    driver (all fields) and under exfat-fuse (FUSE_FIELDS; contents past
    ValidDataLength excepted, see wtree.FUSE_FIELDS); and its names, sizes
    and contents under the in-tree driver are those of `model`
    (wtree.model_tree(): the same operations on tmpfs), so that the
    driver under test is not the only source of what is expected."""
    fsck_clean(dev)
    with mount(dev, driver="intree", opts="ro") as mnt:
        intree = manifest(mnt)
        data = {rel: read(f"{mnt}/{rel}") for rel, e in intree.items()
                if "sha256" in e}
    compare(model, model_view(intree), "the model (tmpfs)", "in-tree",
            ("type", "size", "sha256"))
    compare(want, intree, what, "in-tree")
    with fuse_mount(dev) as mnt:
        fuse = manifest(mnt, attrs=False)
        fields = tuple(f for f in FUSE_FIELDS if f != "sha256")
        compare(fuse_view(intree), fuse_view(fuse), "in-tree", "exfat-fuse",
                fields)
        stale = []
        for rel, e in fuse.items():
            if "sha256" not in e or e["sha256"] == intree[rel]["sha256"]:
                continue
            got, ref = read(f"{mnt}/{rel}"), data[rel]
            i = next(i for i in range(len(ref)) if got[i] != ref[i])
            if ref[i:].count(0) != len(ref) - i:
                fail(f"exfat-fuse reads {rel} differently at {i}, before "
                     f"what can be past ValidDataLength")
            stale.append(f"{rel} from {i}")
    if stale:
        log("exfat-fuse shows stale data past ValidDataLength in: "
            + ", ".join(stale))
    return intree


@test(timeout=900)
def cross_written_and_modified():
    """A tree written and then modified by the driver under test reads
    the same (bytes, names, sizes, times, attributes, modes, link counts)
    with the in-tree driver as it did under the driver before unmount, and
    the same with exfat-fuse on what exfat-fuse reports faithfully."""
    cluster = 4096
    with Image(size_mb=64, cluster=cluster) as img:
        with mount_rw(img.dev) as mnt:
            write_tree(mnt, cluster)
            modify_tree(mnt, cluster)
            want = manifest(mnt)
        got = check_by_intree_and_fuse(img.dev, want, X,
                                       model_tree(cluster))
        assert_true(len(got) > 80, f"only {len(got)} entries")


@test(timeout=900)
def cross_intree_tree_modified():
    """A tree written by the in-tree driver and modified by the driver
    under test (renames incl. cross-directory and case-only, appends,
    truncates up and down, deletes, mkdir/rmdir, attributes, chmod,
    utimes) reads back with the in-tree driver as the driver showed it
    before unmount; exfat-fuse agrees on what it reports."""
    cluster = 512
    with Image(size_mb=64, cluster=cluster) as img:
        with mount(img.dev, driver="intree") as mnt:
            write_tree(mnt, cluster)
        with mount_rw(img.dev) as mnt:
            modify_tree(mnt, cluster,
                        chmod_clears_ro=EXPECT["chmod_clears_disk_readonly"])
            want = manifest(mnt)
        check_by_intree_and_fuse(img.dev, want, X, model_tree(cluster))


# --- namespace stress -----------------------------------------------------------

STRESS_WORKERS = 4
STRESS_OPS = 2000
STRESS_TOP = ["d0", "d1", "d2"]
STRESS_OK = {errno.ENOENT, errno.EEXIST, errno.ENOTEMPTY}


def _stress_content(tag, n):
    head = f"{tag}:{n}\n".encode()
    return head + pattern(n, seed=zlib.crc32(tag.encode()))


def _check_content(data, path):
    """A file of the stress test holds 'tag:n\\n' + pattern(n, ...), or a
    prefix of it while its writer is still at work."""
    if not data:
        return
    head, sep, _ = data.partition(b"\n")
    if not sep:
        return      # still being written
    tag, n = head.decode().rsplit(":", 1)
    want = _stress_content(tag, int(n))
    if not want.startswith(data):
        raise TestFailure(f"{path}: content is not {tag}'s "
                          f"({len(data)} bytes)")


def _stress_worker(mnt, wid, ops, seed, trace):
    """ops random operations; each one's paths and outcome go to trace
    (kept with the image when the test fails)."""
    rnd = random.Random(seed)
    errs = {}
    used = []

    def case(c):    # names are looked up and collide case-insensitively
        return c.upper() if rnd.random() < 0.2 else c

    def fpath():
        d = rnd.choice(STRESS_TOP)
        if rnd.random() < 0.4:
            d += f"/{case('s')}{rnd.randrange(4)}"
        used.append(f"{d}/{case('f')}{rnd.randrange(12)}")
        return f"{mnt}/{used[-1]}"

    def dpath():
        used.append(f"{rnd.choice(STRESS_TOP)}/{case('s')}"
                    f"{rnd.randrange(4)}")
        return f"{mnt}/{used[-1]}"

    def create():
        p = fpath()
        fd = os.open(p, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
        try:
            n = rnd.choice((0, 1, 100, 4000, 9000))
            used.append(f"w{wid}-{i}:{n}")
            os.write(fd, _stress_content(f"w{wid}-{i}", n))
        finally:
            os.close(fd)

    def readdir():
        d = rnd.choice([dpath(), f"{mnt}/{rnd.choice(STRESS_TOP)}"])
        for name in os.listdir(d):
            p = f"{d}/{name}"
            try:
                if name.lower().startswith("f"):
                    _check_content(read(p), p)
                else:
                    os.lstat(p)
            except OSError as e:
                if e.errno not in STRESS_OK:
                    raise

    actions = [
        (30, "create", create),
        (12, "unlink", lambda: os.unlink(fpath())),
        (20, "rename", lambda: os.rename(fpath(), fpath())),
        (6, "mkdir", lambda: os.mkdir(dpath())),
        (6, "rmdir", lambda: os.rmdir(dpath())),
        (6, "rename", lambda: os.rename(dpath(), dpath())),
        (15, "readdir", readdir),
        (5, "stat", lambda: os.stat(fpath())),
    ]
    weights = [w for w, _, _ in actions]
    for i in range(ops):
        _, what, fn = rnd.choices(actions, weights)[0]
        used.clear()
        t = time.monotonic()
        try:
            fn()
            trace.append(f"{t:.6f} w{wid} {i} {what} {' '.join(used)}: ok")
        except OSError as e:
            trace.append(f"{t:.6f} w{wid} {i} {what} {' '.join(used)}: "
                         f"{errno.errorcode.get(e.errno, e.errno)}")
            if e.errno not in STRESS_OK:
                print(f"worker {wid} op {i}: unexpected {e!r}", flush=True)
                return 1
            errs[e.errno] = errs.get(e.errno, 0) + 1
        except TestFailure as e:
            print(f"worker {wid} op {i}: {e}", flush=True)
            return 1
    print(f"worker {wid}: {ops} ops, expected errors: "
          + ", ".join(f"{errno.errorcode[k]} {v}"
                      for k, v in sorted(errs.items())), flush=True)
    return 0


def dir_nlink_errors(root):
    """Directories whose link count is not 2 + their subdirectories."""
    bad = []
    for dirpath, dirnames, _ in os.walk(root):
        n = os.stat(dirpath).st_nlink
        if dirpath != root and n != 2 + len(dirnames):
            bad.append(f"{os.path.relpath(dirpath, root)}: nlink {n}, "
                       f"{len(dirnames)} subdirectories")
    return bad


def _fork_workers(mnt):
    pids = []
    for w in range(STRESS_WORKERS):
        pid = os.fork()
        if pid == 0:
            status, trace = 1, []
            try:
                status = _stress_worker(mnt, w, STRESS_OPS, 7000 + w, trace)
            finally:
                with open(f"{OUT}/namespace_stress.w{w}.txt", "w") as f:
                    f.write("\n".join(trace) + "\n")
                os._exit(status)
        pids.append(pid)
    bad = []
    for w, pid in enumerate(pids):
        _, st = os.waitpid(pid, 0)
        if st:
            bad.append(f"worker {w}: wait status {st}")
    return bad


@test(timeout=900)
def namespace_stress():
    """Four processes create, rename (within and across directories, names
    differing in case too), unlink, list, mkdir and rmdir in three shared
    directories; the only errors are ENOENT, EEXIST and ENOTEMPTY, every
    file holds what its creator wrote, no name appears twice, the volume is
    fsck-clean, and the in-tree driver lists the same tree."""
    keep = [f"{OUT}/namespace_stress.w{w}.txt"
            for w in range(STRESS_WORKERS)]
    keep.append(f"{OUT}/namespace_stress.ours.txt")
    with Image(size_mb=32, cluster=512) as img:
        try:
            _namespace_stress(img)
        except TestFailure:
            # the workers' operations, the image and what each driver
            # sees, for the one who reads the failure
            shutil.copy(img.path, f"{OUT}/namespace_stress.img")
            log(f"kept {', '.join(keep)} and {OUT}/namespace_stress.img")
            raise
    for p in keep:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(p)


def _namespace_stress(img):
    """The body of namespace_stress."""
    with mount_rw(img.dev) as mnt:
        for d in STRESS_TOP:
            os.mkdir(f"{mnt}/{d}")
        t0 = time.monotonic()
        bad = _fork_workers(mnt)
        log(f"{STRESS_WORKERS} x {STRESS_OPS} ops in "
            f"{time.monotonic() - t0:.1f}s")
        if bad:
            fail("namespace stress: " + "; ".join(bad))
        for dirpath, dirnames, filenames in os.walk(mnt):
            names = [n.upper() for n in dirnames + filenames]
            assert_eq(len(names), len(set(names)),
                      f"{dirpath}: duplicate names")
            for name in filenames:
                p = f"{dirpath}/{name}"
                data = read(p)
                _check_content(data, p)
                head = data.partition(b"\n")[0].decode()
                assert_eq(len(data), len(head) + 1 +
                          int(head.rsplit(":", 1)[1]), f"{p}: size")
        want = manifest(mnt)
        nlink_bad = dir_nlink_errors(mnt)
    log(f"{len(want)} entries at the end")
    with open(f"{OUT}/namespace_stress.ours.txt", "w") as f:
        f.write("".join(f"{k!a} {v!a}\n" for k, v in sorted(want.items())))
    fields = ALL_FIELDS
    if nlink_bad:
        if EXPECT["dir_nlink_exact_under_concurrency"]:
            fail(f"{X}: wrong directory link counts: {nlink_bad}")
        log(f"{X}: wrong directory link counts (known): {nlink_bad}")
        fields = tuple(f for f in ALL_FIELDS if f != "nlink")
    fsck_clean(img.dev)
    with mount(img.dev, driver="intree", opts="ro") as mnt:
        compare(want, manifest(mnt), X, "in-tree", fields)
        assert_eq(dir_nlink_errors(mnt), [], "link counts on disk")


# --- ENOSPC ---------------------------------------------------------------------

class Filler:
    """Writes files until ENOSPC; remembers what each must contain."""

    def __init__(self, mnt):
        self.mnt = mnt
        self.files = {}     # relpath -> (seed, size)
        self.seq = 0

    def write(self, rel, size, chunk=1 << 20):
        """Write up to size bytes; True if all were written."""
        self.seq += 1
        seed = self.seq
        data = pattern(size, seed)
        try:
            fd = os.open(f"{self.mnt}/{rel}",
                         os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
        except OSError as e:
            if e.errno != errno.ENOSPC:
                raise
            expect_errno(errno.ENOENT, os.stat, f"{self.mnt}/{rel}")
            return False
        done = 0
        try:
            while done < size:
                try:
                    n = os.write(fd, data[done:done + chunk])
                except OSError as e:
                    if e.errno != errno.ENOSPC:
                        raise
                    break
                done += n
        finally:
            os.close(fd)
        self.files[rel] = (seed, done)
        return done == size

    def check(self, mnt=None):
        mnt = mnt or self.mnt
        for rel, (seed, size) in self.files.items():
            data = read(f"{mnt}/{rel}")
            if data != pattern(size, seed):
                fail(f"{rel}: {len(data)} bytes, want {size} of pattern "
                     f"{seed}")

    def fill_small(self, tag, dirs=4):
        """Small files until three creates/writes in a row hit ENOSPC."""
        rnd = random.Random(tag)
        misses = n = 0
        while misses < 3:
            rel = f"{tag}{n % dirs}/s{n:05d}"
            if not os.path.isdir(f"{self.mnt}/{tag}{n % dirs}"):
                os.mkdir(f"{self.mnt}/{tag}{n % dirs}")   # before ENOSPC
            misses = 0 if self.write(rel, rnd.choice(
                (1, 700, 4096, 5000, 9000, 16000))) else misses + 1
            n += 1
        # the last free clusters, a byte at a time
        while self.write(f"{tag}0/t{n:05d}", 1):
            n += 1
        return n


def statfs_free(mnt):
    st = os.statvfs(mnt)
    return st.f_bfree, st.f_bavail, st.f_frsize


def check_free_counts(img, what):
    """After unmount: statfs free blocks of a fresh mount == the bitmap's
    free cluster count == dump.exfat's."""
    fsck_clean(img.dev)
    count, free = bitmap_free(img.dev)
    dumped = dump_free(img.dev)
    with mount_rw(img.dev) as mnt:
        bfree, bavail, frsize = statfs_free(mnt)
    log(f"{what}: {count} clusters, bitmap free {free}, dump.exfat "
        f"{dumped}, statfs bfree {bfree} bavail {bavail} bsize {frsize}")
    assert_eq(dumped, free, f"{what}: dump.exfat vs bitmap free clusters")
    assert_eq(bfree, free, f"{what}: statfs f_bfree vs bitmap")
    assert_eq(bavail, free, f"{what}: statfs f_bavail vs bitmap")
    return free


@test(timeout=900)
def enospc_fill_delete_refill():
    """Fill the volume to ENOSPC with a few large and many small files,
    delete half, refill: every file holds what was written (short files
    where ENOSPC hit), fsck is clean, and statfs free blocks match the
    allocation bitmap (and dump.exfat) each time."""
    with Image(size_mb=24, cluster=4096) as img:
        with mount_rw(img.dev) as mnt:
            f = Filler(mnt)
            for i in range(3):
                assert_true(f.write(f"large{i}", 4 << 20),
                            f"large{i}: early ENOSPC")
            n = f.fill_small("a")
            bfree = statfs_free(mnt)[0]
            log(f"filled: {n} small files, statfs bfree {bfree}")
            assert_eq(bfree, 0, "free blocks after filling to ENOSPC")
            f.check()
            mid = manifest(mnt)
        free = check_free_counts(img, "full")
        assert_eq(free, 0, "free clusters after filling to ENOSPC")
        with mount(img.dev, driver=X, opts="ro") as mnt:
            compare(mid, manifest(mnt), "before remount", "after")
        with mount_rw(img.dev) as mnt:
            before = statfs_free(mnt)[0]
            for i, rel in enumerate(sorted(f.files)):
                if i % 2 or rel == "large1":
                    os.unlink(f"{mnt}/{rel}")
                    del f.files[rel]
            after = statfs_free(mnt)[0]
            log(f"deleted half: bfree {before} -> {after}")
            assert_true(after > before + (4 << 20) // 4096,
                        "free blocks grew by the deleted files")
        assert_eq(check_free_counts(img, "half deleted"), after,
                  "free clusters after deleting vs statfs before unmount")
        with mount_rw(img.dev) as mnt:
            os.mkdir(f"{mnt}/b0")
            os.mkdir(f"{mnt}/b1")
            half = statfs_free(mnt)[0] * 4096 // 2
            assert_true(f.write("large-new", half), "large-new fits")
            f.fill_small("b", dirs=2)
            assert_true(not f.write("large-last", 64 << 20),
                        "large-last does not fit")
            assert_eq(statfs_free(mnt)[0], 0, "free blocks after refill")
            f.check()
            want = manifest(mnt)
        assert_eq(check_free_counts(img, "refilled"), 0,
                  "free clusters after refill")
        with mount(img.dev, driver="intree", opts="ro") as mnt:
            compare(want, manifest(mnt), X, "in-tree")


# --- namespace semantics --------------------------------------------------------

@test(timeout=300)
def rmdir_not_empty():
    """rmdir of a non-empty directory fails with ENOTEMPTY, also when its
    only entry is a directory, and works once it is empty again (also
    after a remount, with only deleted entries left on disk)."""
    with Image(size_mb=16) as img:
        with mount_rw(img.dev) as mnt:
            os.makedirs(f"{mnt}/d/sub")
            expect_errno(errno.ENOTEMPTY, os.rmdir, f"{mnt}/d")
            write_file(f"{mnt}/d/sub/f", 10)
            expect_errno(errno.ENOTEMPTY, os.rmdir, f"{mnt}/d/sub")
            expect_errno(errno.ENOTDIR, os.rmdir, f"{mnt}/d/sub/f")
            expect_errno(errno.EISDIR, os.unlink, f"{mnt}/d/sub")
            expect_errno(errno.ENOENT, os.rmdir, f"{mnt}/nope")
            os.unlink(f"{mnt}/d/sub/f")
            os.rmdir(f"{mnt}/d/sub")
            os.rmdir(f"{mnt}/d")
            os.mkdir(f"{mnt}/big")
            for i in range(40):
                write_file(f"{mnt}/big/file-{i:02d}", i)
        with mount_rw(img.dev) as mnt:
            assert_eq(listing(mnt), ["big"], "root after rmdir")
            for i in range(39):
                os.unlink(f"{mnt}/big/file-{i:02d}")
            expect_errno(errno.ENOTEMPTY, os.rmdir, f"{mnt}/big")
        with mount_rw(img.dev) as mnt:
            expect_errno(errno.ENOTEMPTY, os.rmdir, f"{mnt}/big")
            os.unlink(f"{mnt}/big/file-39")
        with mount_rw(img.dev) as mnt:
            os.rmdir(f"{mnt}/big")
            assert_eq(listing(mnt), [], "root at the end")


@test(timeout=300)
def rename_over_existing():
    """rename replaces an existing file (its clusters are freed) and an
    empty directory; file over directory is EISDIR, directory over file
    ENOTDIR, over a non-empty directory ENOTEMPTY, into itself EINVAL;
    the result survives a remount."""
    with Image(size_mb=16) as img:
        with mount_rw(img.dev) as mnt:
            write_file(f"{mnt}/src", 3000, seed=1)
            write_file(f"{mnt}/dst", 1 << 20, seed=2)
            free0 = statfs_free(mnt)[0]
            os.rename(f"{mnt}/src", f"{mnt}/dst")
            assert_eq(read(f"{mnt}/dst"), pattern(3000, 1), "replaced")
            expect_errno(errno.ENOENT, os.stat, f"{mnt}/src")
            assert_true(statfs_free(mnt)[0] >= free0 + (1 << 20) // 4096,
                        "the replaced file's clusters are free")
            os.mkdir(f"{mnt}/e1")
            os.mkdir(f"{mnt}/e2")
            os.makedirs(f"{mnt}/full/sub")
            os.mkdir(f"{mnt}/srcdir")
            write_file(f"{mnt}/srcdir/inner", 100, seed=3)
            expect_errno(errno.EISDIR, os.rename, f"{mnt}/dst", f"{mnt}/e1")
            expect_errno(errno.ENOTDIR, os.rename, f"{mnt}/e1",
                         f"{mnt}/dst")
            expect_errno(errno.ENOTEMPTY, os.rename, f"{mnt}/srcdir",
                         f"{mnt}/full")
            expect_errno(errno.EINVAL, os.rename, f"{mnt}/full",
                         f"{mnt}/full/sub/x")
            os.rename(f"{mnt}/srcdir", f"{mnt}/e1")      # over empty dir
            os.rename(f"{mnt}/e2", f"{mnt}/full/sub")    # cross-dir, over
            os.rename(f"{mnt}/dst", f"{mnt}/dst")        # itself: no-op
            write_file(f"{mnt}/x", 10, seed=4)
            os.rename(f"{mnt}/x", f"{mnt}/e1/inner")     # cross-dir, over
            want = manifest(mnt)
        with mount(img.dev, driver=X, opts="ro") as mnt:
            assert_eq(listing(mnt), ["dst", "e1", "full"], "root")
            assert_eq(listing(f"{mnt}/e1"), ["inner"], "e1")
            assert_eq(read(f"{mnt}/e1/inner"), pattern(10, 4), "e1/inner")
            assert_eq(listing(f"{mnt}/full"), ["sub"], "full")
            compare(want, manifest(mnt), "before remount", "after")


@test(timeout=300)
def renameat2_noreplace():
    """renameat2(RENAME_NOREPLACE) fails with EEXIST on an existing file or
    directory and changes nothing; to a free name it renames;
    RENAME_WHITEOUT is EINVAL."""
    with volume() as (img, mnt):
        write_file(f"{mnt}/a", 100, seed=1)
        write_file(f"{mnt}/b", 200, seed=2)
        os.mkdir(f"{mnt}/d")
        expect_errno(errno.EEXIST, renameat2, f"{mnt}/a", f"{mnt}/b",
                     RENAME_NOREPLACE)
        expect_errno(errno.EEXIST, renameat2, f"{mnt}/a", f"{mnt}/d",
                     RENAME_NOREPLACE)
        expect_errno(errno.EEXIST, renameat2, f"{mnt}/a", f"{mnt}/B",
                     RENAME_NOREPLACE)      # b, case-insensitively
        assert_eq(read(f"{mnt}/a"), pattern(100, 1), "a unchanged")
        assert_eq(read(f"{mnt}/b"), pattern(200, 2), "b unchanged")
        renameat2(f"{mnt}/a", f"{mnt}/d/c", RENAME_NOREPLACE)
        assert_eq(read(f"{mnt}/d/c"), pattern(100, 1), "renamed")
        expect_errno(errno.ENOENT, os.stat, f"{mnt}/a")
        expect_errno(errno.EINVAL, renameat2, f"{mnt}/b", f"{mnt}/w",
                     RENAME_WHITEOUT)
        assert_eq(listing(mnt), ["b", "d"], "root")


@test(timeout=300)
def renameat2_exchange():
    """renameat2(RENAME_EXCHANGE) swaps two files (and a file with a
    directory, across directories) atomically; the swap survives a remount.
    The in-tree driver rejects it with EINVAL and changes nothing."""
    with Image(size_mb=16) as img:
        with mount_rw(img.dev) as mnt:
            write_file(f"{mnt}/a", 100, seed=1)
            write_file(f"{mnt}/b", 5000, seed=2)
            os.makedirs(f"{mnt}/d/sub")
            write_file(f"{mnt}/d/sub/f", 7, seed=3)
            set_attr(f"{mnt}/a", ATTR_HIDDEN | ATTR_ARCHIVE)
            before = manifest(mnt)
            want_err = EXPECT["rename_exchange"]
            if want_err:
                expect_errno(want_err, renameat2, f"{mnt}/a", f"{mnt}/b",
                             RENAME_EXCHANGE)
                compare(before, manifest(mnt), "before", "after EXCHANGE",
                        NO_ATIME)
                log("RENAME_EXCHANGE: rejected with "
                    f"{errno.errorcode[want_err]} (as expected for {X})")
                return
            renameat2(f"{mnt}/a", f"{mnt}/b", RENAME_EXCHANGE)
            renameat2(f"{mnt}/b", f"{mnt}/d/sub", RENAME_EXCHANGE)
            expect_errno(errno.ENOENT, renameat2, f"{mnt}/a", f"{mnt}/zz",
                         RENAME_EXCHANGE)
            expect_errno(errno.EINVAL, renameat2, f"{mnt}/a", f"{mnt}/b",
                         RENAME_EXCHANGE | RENAME_NOREPLACE)
            after = manifest(mnt)
        swapped = {"a": before["b"], "b": before["d/sub"],
                   "b/f": before["d/sub/f"], "d": before["d"],
                   "d/sub": before["a"]}
        compare(swapped, after, "the swap", X, ("type", "size", "sha256",
                                                "btime"))
        assert_eq(after["d/sub"]["attr"] & ATTR_HIDDEN, ATTR_HIDDEN,
                  "attributes move with the file")
        with mount(img.dev, driver=X, opts="ro") as mnt:
            compare(after, manifest(mnt), "before remount", "after")


@test(timeout=300)
def case_only_rename():
    """rename("abc", "ABC") of a file and of a directory: the listing shows
    the new case, before and after a remount and under the in-tree driver.
    (The in-tree driver returns 0 and keeps the old name.)"""
    with Image(size_mb=16) as img:
        with mount_rw(img.dev) as mnt:
            write_file(f"{mnt}/abc", 1000, seed=1)
            os.mkdir(f"{mnt}/dir")
            write_file(f"{mnt}/dir/x", 10, seed=2)
            os.rename(f"{mnt}/abc", f"{mnt}/ABC")
            os.rename(f"{mnt}/dir", f"{mnt}/Dir")
            os.rename(f"{mnt}/dir/x", f"{mnt}/DIR/X")
            got = listing(mnt) + listing(f"{mnt}/dir")
        want = ["ABC", "Dir", "X"]
        if EXPECT["case_only_rename"] == "no-op":
            want = ["abc", "dir", "x"]
        assert_eq(got, want, "listing after the case-only renames")
        for drv in (X, "intree"):
            with mount(img.dev, driver=drv, opts="ro") as mnt:
                assert_eq(listing(mnt) + listing(f"{mnt}/Dir"), want,
                          f"listing after remount ({drv})")
                assert_eq(read(f"{mnt}/abc"), pattern(1000, 1), "content")


# run in a mount namespace of its own: mounts on @D@/mp, @D@/fp and
# @D@/t/sub, then renames onto them and onto t, by case and not; prints each
# rename's outcome (errno name or "renamed") and how many mounts lie below @D@
MOUNT_POINT_RENAMES = """
import errno, os, subprocess
D = "@D@"
def mounts():
    with open("/proc/self/mountinfo") as f:
        return sum(line.split()[4].startswith(D + "/") for line in f)
subprocess.run(["mount", "-t", "tmpfs", "none", D + "/mp"], check=True)
subprocess.run(["mount", "-o", "bind", D + "/g", D + "/fp"], check=True)
subprocess.run(["mount", "-t", "tmpfs", "none", D + "/t/sub"], check=True)
for a, b in (("y", "MP"), ("y", "mp"), ("g", "FP"), ("g", "fp"),
             ("y", "t"), ("y", "T"), ("t", "T")):
    try:
        os.rename(D + "/" + a, D + "/" + b)
        r = "renamed"
    except OSError as e:
        r = errno.errorcode[e.errno]
    print(a, b, r, mounts())
"""


@test(timeout=300)
def rename_over_directory_by_case():
    """rename("x", "S3") where "s3" is an empty directory replaces it (the
    VFS sees no target: the name differs in case).  Like any replaced
    directory, it must then be dead: a create in it through an open
    descriptor fails with ENOENT and writes nothing into its freed
    cluster (which exfat2 did, leaking the file's cluster).  A directory
    named by case that holds the source fails with ENOTEMPTY.  No rename
    detaches a mount on its target or below it."""
    with Image(size_mb=16, cluster=512) as img:
        with mount_rw(img.dev) as mnt:
            os.makedirs(f"{mnt}/d/s3")
            os.makedirs(f"{mnt}/d/x")
            write_file(f"{mnt}/d/x/inx", 700, seed=1)
            fd = os.open(f"{mnt}/d/s3", os.O_RDONLY | os.O_DIRECTORY)
            try:
                os.rename(f"{mnt}/d/x", f"{mnt}/d/S3")
                expect_errno(errno.ENOENT, os.open, "f",
                             os.O_CREAT | os.O_WRONLY, 0o644, dir_fd=fd)
                expect_errno(errno.ENOENT, os.mkdir, "sub", dir_fd=fd)
            finally:
                os.close(fd)
            assert_eq(listing(f"{mnt}/d"), ["S3"], "d after the rename")
            assert_eq(listing(f"{mnt}/d/S3"), ["inx"], "the moved directory")
            # onto its own parent or grandparent, named by case
            os.makedirs(f"{mnt}/a/b/c")
            expect_errno(errno.ENOTEMPTY, os.rename, f"{mnt}/a/b",
                         f"{mnt}/A")
            expect_errno(errno.ENOTEMPTY, os.rename, f"{mnt}/a/b/c",
                         f"{mnt}/A")
            assert_eq(listing(f"{mnt}/a/b"), ["c"], "a/b unchanged")
            # a rename onto a mount point, by case or not, is EBUSY (the
            # VFS's errno), onto a directory with a mount below ENOTEMPTY,
            # and none detaches the mounts (exfat2 did); the case of a
            # directory with a mount below does not change.  The mounts
            # live in a mount namespace of their own, which ends with its
            # process even where a rename wrongly succeeded.
            os.makedirs(f"{mnt}/m/y")
            os.makedirs(f"{mnt}/m/mp")
            os.makedirs(f"{mnt}/m/t/sub")
            write_file(f"{mnt}/m/g", 300, seed=2)
            write_file(f"{mnt}/m/fp", 400, seed=3)
            code = MOUNT_POINT_RENAMES.replace("@D@", f"{mnt}/m")
            got = sh("unshare -m --propagation private "
                     f"{sys.executable} -c '{code}'").stdout.splitlines()
            assert_eq(got, ["y MP EBUSY 3", "y mp EBUSY 3", "g FP EBUSY 3",
                            "g fp EBUSY 3", "y t ENOTEMPTY 3",
                            "y T ENOTEMPTY 3", "t T renamed 3"],
                      "renames onto mount points (outcome, mounts left)")
            assert_eq(listing(f"{mnt}/m"), ["fp", "g", "mp", "t", "y"],
                      "m after the refused renames")
            assert_eq(read(f"{mnt}/m/fp"), pattern(400, 3), "m/fp")
        xcheck_clean(img.dev)
        with mount(img.dev, driver="intree", opts="ro") as mnt:
            assert_eq(read(f"{mnt}/d/S3/inx"), pattern(700, 1),
                      "the moved file (in-tree driver)")


@test(timeout=300)
def link_symlink_mknod_refused():
    """Hard links, symlinks, FIFOs, sockets and device nodes fail with
    EPERM (the in-tree driver's errno) and leave nothing behind; mknod of
    a regular file creates one."""
    with volume() as (img, mnt):
        write_file(f"{mnt}/f", 10)
        expect_errno(errno.EPERM, os.link, f"{mnt}/f", f"{mnt}/hard")
        expect_errno(errno.EPERM, os.symlink, "f", f"{mnt}/sym")
        expect_errno(errno.EPERM, os.mkfifo, f"{mnt}/fifo")
        for name, mode in (("chr", 0o20644), ("blk", 0o60644),
                           ("sock", 0o140644)):
            expect_errno(errno.EPERM, os.mknod, f"{mnt}/{name}", mode,
                         os.makedev(1, 3))
        os.mknod(f"{mnt}/reg", 0o100644)
        assert_eq(listing(mnt), ["f", "reg"], "listing")
        assert_eq(os.stat(f"{mnt}/reg").st_size, 0, "mknod'ed file size")


FORBIDDEN = ':*?"<>|\\' + "".join(chr(c) for c in range(1, 32))


@test(timeout=300)
def forbidden_characters():
    """Names with : * ? " < > | \\ or a control character give EINVAL from
    create, mkdir and rename, and nothing is created; DEL (0x7f) is a valid
    name character."""
    with volume() as (img, mnt):
        write_file(f"{mnt}/f", 10)
        for c in FORBIDDEN:
            name = f"x{c}y"
            expect_errno(errno.EINVAL, os.open, f"{mnt}/{name}",
                         os.O_CREAT | os.O_WRONLY)
            expect_errno(errno.EINVAL, os.mkdir, f"{mnt}/{name}")
            expect_errno(errno.EINVAL, os.rename, f"{mnt}/f",
                         f"{mnt}/{name}")
        assert_eq(listing(mnt), ["f"], "nothing created")
        write_file(f"{mnt}/del\x7fname", 5)
        assert_eq(listing(mnt), ["del\x7fname", "f"], "DEL in a name")


@test(timeout=300)
def trailing_dots():
    """Trailing dots are dropped from new names (the in-tree driver's rule
    without keep_last_dots); trailing spaces are kept."""
    with volume() as (img, mnt):
        write_file(f"{mnt}/dot.", 1)
        write_file(f"{mnt}/dots...", 2)
        os.mkdir(f"{mnt}/dir.")
        write_file(f"{mnt}/space ", 3)
        assert_eq(listing(mnt), ["dir", "dot", "dots", "space "], "listing")


@test(timeout=300)
def name_length():
    """Names are limited to 255 UTF-16 units, not 255 bytes: 255 ASCII,
    255 CJK (765 bytes) and 127 emoji + 1 (255 units) work; 256 units give
    ENAMETOOLONG from create, mkdir and rename.  The names survive a
    remount."""
    ok = ["a" * 255, "\u65e5" * 255, "\U0001F4C1" * 127 + "a",
          "\u00e9" * 200 + ".txt"]
    long = ["b" * 256, "\u65e5" * 256, "\U0001F4C1" * 128,
            "\U0001F4C1" * 127 + "ab"]
    with Image(size_mb=16) as img:
        with mount_rw(img.dev) as mnt:
            for i, name in enumerate(ok):
                write_file(f"{mnt}/{name}", i + 1, seed=i)
            os.mkdir(f"{mnt}/d")
            write_file(f"{mnt}/f", 1)
            for name in long:
                expect_errno(errno.ENAMETOOLONG, os.open, f"{mnt}/{name}",
                             os.O_CREAT | os.O_WRONLY)
                expect_errno(errno.ENAMETOOLONG, os.mkdir, f"{mnt}/{name}")
                expect_errno(errno.ENAMETOOLONG, os.rename, f"{mnt}/f",
                             f"{mnt}/d/{name}")
            expect_errno(errno.ENAMETOOLONG, os.stat, f"{mnt}/{long[0]}")
        with mount_rw(img.dev) as mnt:
            assert_eq(listing(mnt), sorted(ok + ["d", "f"]), "listing")
            assert_eq(listing(f"{mnt}/d"), [], "d")
            for i, name in enumerate(ok):
                assert_eq(read(f"{mnt}/{name}"), pattern(i + 1, i), name)


@test(timeout=300)
def chmod_readonly():
    """chmod a-w sets the read-only attribute, also after a remount, and
    chmod u+w clears it again (the in-tree driver does not clear it on disk
    when it was loaded from disk); chmod that changes r or x bits is
    silently ignored and setuid is EPERM (both in-tree behaviour); a
    directory keeps its w bits."""
    with Image(size_mb=16) as img:
        with mount_rw(img.dev) as mnt:
            write_file(f"{mnt}/f", 10)
            write_file(f"{mnt}/g", 10)
            os.mkdir(f"{mnt}/d")
            assert_eq(os.stat(f"{mnt}/f").st_mode & 0o777, 0o755, "mode")
            os.chmod(f"{mnt}/f", 0o555)
            assert_eq(get_attr(f"{mnt}/f") & ATTR_READONLY, ATTR_READONLY,
                      "read-only attribute after chmod a-w")
            assert_eq(os.stat(f"{mnt}/f").st_mode & 0o777, 0o555, "mode")
            os.chmod(f"{mnt}/g", 0o555)
            os.chmod(f"{mnt}/g", 0o644)     # r/x bits change: ignored
            assert_eq(os.stat(f"{mnt}/g").st_mode & 0o777, 0o555,
                      "mode after a chmod that changes x bits")
            expect_errno(errno.EPERM, os.chmod, f"{mnt}/g", 0o4555)
            os.chmod(f"{mnt}/d", 0o555)
            assert_eq(os.stat(f"{mnt}/d").st_mode & 0o777, 0o755,
                      "directory mode after chmod a-w")
            assert_eq(get_attr(f"{mnt}/d"), ATTR_DIR, "directory attr")
        with mount_rw(img.dev) as mnt:
            assert_eq(get_attr(f"{mnt}/f") & ATTR_READONLY, ATTR_READONLY,
                      "read-only attribute after remount")
            assert_eq(os.stat(f"{mnt}/f").st_mode & 0o777, 0o555,
                      "mode after remount")
            os.chmod(f"{mnt}/f", 0o755)
            assert_eq(os.stat(f"{mnt}/f").st_mode & 0o777, 0o755,
                      "mode after chmod u+w")
        ro = 0 if EXPECT["chmod_clears_disk_readonly"] else ATTR_READONLY
        with mount(img.dev, driver="intree", opts="ro") as mnt:
            assert_eq(get_attr(f"{mnt}/f") & ATTR_READONLY, ro,
                      "read-only attribute on disk after chmod u+w")
            assert_eq(get_attr(f"{mnt}/g") & ATTR_READONLY, ATTR_READONLY,
                      "g still read-only on disk")


@test(timeout=300)
def utimes_precision():
    """utimes: mtime in 10 ms units round-trips (in memory, after a
    remount and under the in-tree driver); finer parts are truncated;
    atime is kept in 2 s units; btime is not changed.  Times outside what
    exFAT can hold are clamped, and read back as the driver showed them."""
    NS = 1_000_000_000
    cases = {   # name: ((atime, mtime) set, (atime, mtime) expected)
        "a": ((1234567891 * NS + 130000000, 1300000001 * NS + 990000000),
              (1234567890 * NS, 1300000001 * NS + 990000000)),
        "b": ((1234567890 * NS + 123456789, 1300000000 * NS + 987654321),
              (1234567890 * NS, 1300000000 * NS + 980000000)),
        "c": ((1600000000 * NS, 1600000000 * NS + 10000000),
              (1600000000 * NS, 1600000000 * NS + 10000000)),
        "dir": ((1400000000 * NS, 1500000000 * NS + 500000000),
                (1400000000 * NS, 1500000000 * NS + 500000000)),
    }
    # Out of range: 1970 and 2200.  The in-tree driver clamps to
    # 1980-01-01 00:00:00 and 2107-12-31 23:59:59 UTC (atime ...58); with
    # the UTC offset field (-16:00..+15:45) exFAT can hold from
    # 1979-12-31 08:15 to 2108-01-01 15:59:59 UTC, so accept any clamp in
    # [1979-12-31 08:00, 1980-01-01 00:00] and
    # [2107-12-31 23:59:58, 2108-01-01 16:00].
    clamped = {"old": ((0, 0), (315475200 * NS, 315532800 * NS)),
               "new": ((7258118400 * NS, 7258118400 * NS),
                       (4354819198 * NS, 4354876800 * NS))}
    names = list(cases) + list(clamped)
    with Image(size_mb=16) as img:
        with mount_rw(img.dev) as mnt:
            for name in names:
                if name == "dir":
                    os.mkdir(f"{mnt}/{name}")
                else:
                    write_file(f"{mnt}/{name}", 10)
            bt = manifest(mnt)
            for name, (set_, _) in list(cases.items()) + \
                    list(clamped.items()):
                os.utime(f"{mnt}/{name}", ns=set_)
            got = {n: (os.stat(f"{mnt}/{n}").st_atime_ns,
                       os.stat(f"{mnt}/{n}").st_mtime_ns) for n in names}
        log(f"{X}: 1970 reads as {got['old']}, 2200 as {got['new']}")
        assert_eq({n: got[n] for n in cases},
                  {n: exp for n, (_, exp) in cases.items()},
                  "times in memory")
        for n, (_, (lo, hi)) in clamped.items():
            for t in got[n]:
                assert_true(lo <= t <= hi, f"{n}: {t} not clamped into "
                            f"[{lo}, {hi}]")
        for drv in (X, "intree"):
            with mount(img.dev, driver=drv, opts="ro") as mnt:
                m = manifest(mnt)
            assert_eq({n: (m[n]["atime"], m[n]["mtime"]) for n in names},
                      got, f"times after remount ({drv})")
            assert_eq({n: m[n]["btime"] for n in names},
                      {n: bt[n]["btime"] for n in names},
                      f"btime unchanged by utimes ({drv})")


@test(timeout=300)
def set_attributes_ioctl():
    """FAT_IOCTL_SET_ATTRIBUTES: hidden, system, archive and combinations
    round-trip (also after a remount and under the in-tree driver);
    reserved and directory bits are ignored on files, the directory bit
    stays on directories, the read-only bit maps to the mode, and the root
    directory takes nothing but the directory bit (EINVAL)."""
    combos = {"h": ATTR_HIDDEN, "s": ATTR_SYSTEM, "a": ATTR_ARCHIVE,
              "hsa": ATTR_HIDDEN | ATTR_SYSTEM | ATTR_ARCHIVE, "none": 0,
              "ro": ATTR_READONLY | ATTR_ARCHIVE}
    with Image(size_mb=16) as img:
        with mount_rw(img.dev) as mnt:
            for name, attr in combos.items():
                write_file(f"{mnt}/{name}", 10)
                set_attr(f"{mnt}/{name}", attr)
                assert_eq(get_attr(f"{mnt}/{name}"), attr, name)
            write_file(f"{mnt}/reserved", 10)
            set_attr(f"{mnt}/reserved", 0x08 | 0x10 | 0x40 | 0x80 | 0x100
                     | ATTR_HIDDEN)
            assert_eq(get_attr(f"{mnt}/reserved"), ATTR_HIDDEN,
                      "reserved and directory bits on a file")
            assert_eq(os.stat(f"{mnt}/ro").st_mode & 0o777, 0o555,
                      "mode of a file set read-only by ioctl")
            os.mkdir(f"{mnt}/d")
            set_attr(f"{mnt}/d", ATTR_HIDDEN)
            assert_eq(get_attr(f"{mnt}/d"), ATTR_DIR | ATTR_HIDDEN, "dir")
            expect_errno(errno.EINVAL, set_attr, mnt, ATTR_HIDDEN)
            set_attr(mnt, ATTR_DIR)
        combos["reserved"] = ATTR_HIDDEN
        combos["d"] = ATTR_DIR | ATTR_HIDDEN
        for drv in (X, "intree"):
            with mount(img.dev, driver=drv, opts="ro") as mnt:
                got = {n: get_attr(f"{mnt}/{n}") for n in combos}
            assert_eq(got, combos, f"attributes after remount ({drv})")


@test(timeout=300)
def archive_on_modification():
    """New files get the archive attribute, new directories do not; a
    write (pwrite and O_APPEND) sets it again after it was cleared, and so
    does a rename (as the in-tree driver does); it is on disk after a
    remount."""
    with Image(size_mb=16) as img:
        with mount_rw(img.dev) as mnt:
            write_file(f"{mnt}/w", 10)
            write_file(f"{mnt}/ap", 10)
            write_file(f"{mnt}/r", 10)
            os.mkdir(f"{mnt}/d")
            assert_eq(get_attr(f"{mnt}/w"), ATTR_ARCHIVE, "new file")
            assert_eq(get_attr(f"{mnt}/d"), ATTR_DIR, "new directory")
            for n in ("w", "ap", "r"):
                set_attr(f"{mnt}/{n}", 0)
                assert_eq(get_attr(f"{mnt}/{n}"), 0, f"{n} cleared")
        with mount_rw(img.dev) as mnt:
            assert_eq(get_attr(f"{mnt}/w"), 0, "cleared on disk")
            fd = os.open(f"{mnt}/w", os.O_WRONLY)
            os.pwrite(fd, b"x", 3)
            os.close(fd)
            with open(f"{mnt}/ap", "ab") as f:
                f.write(b"more")
            os.rename(f"{mnt}/r", f"{mnt}/d/r2")
            got = {n: get_attr(f"{mnt}/{n}") for n in ("w", "ap", "d/r2")}
        want = {"w": ATTR_ARCHIVE, "ap": ATTR_ARCHIVE, "d/r2": ATTR_ARCHIVE}
        assert_eq(got, want, "archive set by modification")
        with mount(img.dev, driver="intree", opts="ro") as mnt:
            assert_eq({n: get_attr(f"{mnt}/{n}") for n in want}, want,
                      "archive on disk")


# --- data path odds and ends ------------------------------------------------------

@test(timeout=300)
def mmap_and_direct_write_visible_to_intree():
    """Data written through mmap (MAP_SHARED + msync) and O_DIRECT, past
    EOF with holes in between, reads back with the in-tree driver."""
    with Image(size_mb=32) as img:
        with mount_rw(img.dev) as mnt:
            p = f"{mnt}/m"
            write_file(p, 10000, seed=1)
            os.truncate(p, 300000)
            with open(p, "r+b") as f:
                with mmap.mmap(f.fileno(), 300000) as m:
                    m[5000:5000 + 70000] = pattern(70000, 2)
                    m.flush()
            fd = os.open(p, os.O_RDWR | os.O_DIRECT)
            buf = mmap.mmap(-1, 65536)
            buf[:] = pattern(65536, 3)
            assert_eq(os.pwritev(fd, [buf], 1 << 20), 65536, "direct write")
            os.close(fd)
            want = bytearray(pattern(10000, 1) + bytes(290000))
            want[5000:75000] = pattern(70000, 2)
            want += bytes((1 << 20) - len(want)) + pattern(65536, 3)
            assert_eq(read(p) == bytes(want), True, "content (driver)")
        with mount(img.dev, driver="intree", opts="ro") as mnt:
            assert_true(read(f"{mnt}/m") == bytes(want), "content (in-tree)")



@test(timeout=300)
def vendor_entries_kept_and_freed():
    """Benign secondaries (Vendor Extension, Vendor Allocation) survive a
    rename and an update; a deleted file's Vendor Allocation clusters are
    freed, a kept one's stay allocated.  (fsck.exfat 1.2.0 does not know
    Vendor Allocation entries: the volume is checked once both are gone.)"""
    import rawfs
    guid = bytes(range(16))
    with Image(size_mb=32, cluster=4096) as img:
        with mount(img.dev) as mnt:
            for d in ("d1", "d2"):
                os.mkdir(f"{mnt}/{d}")
                write_file(f"{mnt}/{d}/f", 5000, seed=len(d))
        v = rawfs.Volume(img.dev)
        extra = {}
        for d in ("d1", "d2"):
            s, parent = v.lookup(f"{d}/f")
            clus = v.free_clusters(2)
            for c in clus:
                v.set_in_use(c)
            extra[d] = ([rawfs.vendor_ext_entry(guid, d.encode() * 7),
                         rawfs.vendor_alloc_entry(guid, clus[0], 2 * 4096)],
                        clus)
            v.write_set(parent, s.eidx, s.entries + extra[d][0])
        v.close()
        with mount(img.dev) as mnt:
            os.rename(f"{mnt}/d1/f", f"{mnt}/d1/renamed")
            with open(f"{mnt}/d1/renamed", "ab") as f:
                f.write(b"more")
            os.unlink(f"{mnt}/d2/f")
        v = rawfs.Volume(img.dev)
        try:
            s, _ = v.lookup("d1/renamed")
            assert_eq(s.entries[-2:], extra["d1"][0],
                      "benign secondaries after rename and append")
            assert_eq(s.stream[3], 5004, "size")
            for c in extra["d1"][1]:
                assert_true(v.in_use(c), f"kept file's cluster {c} in use")
            for c in extra["d2"][1]:
                assert_true(not v.in_use(c),
                            f"deleted file's vendor cluster {c} freed")
        finally:
            v.close()
        with mount(img.dev, driver="intree", opts="ro") as mnt:
            with open(f"{mnt}/d1/renamed", "rb") as f:
                assert_eq(len(f.read()), 5004, "in-tree reads the file")
        with mount(img.dev) as mnt:
            os.unlink(f"{mnt}/d1/renamed")
        v = rawfs.Volume(img.dev)
        try:
            for c in extra["d1"][1]:
                assert_true(not v.in_use(c), f"vendor cluster {c} freed")
        finally:
            v.close()


@test(timeout=300)
def sets_never_straddle_sectors():
    """Write-ordering rule 7: an entry set that fits in a sector is placed
    inside one (a power cut cannot tear it), the end-of-directory entries
    only ever start at a sector boundary, and nothing in use follows them;
    also after deletes and renames reuse the freed slots.  The in-tree
    driver lists the same names."""
    import rawfs
    rng = random.Random(7)
    with Image(size_mb=16, cluster=4096) as img:
        names = set()
        with mount(img.dev) as mnt:
            os.mkdir(f"{mnt}/d")
            for i in range(120):
                n = f"f{i}" + "x" * rng.choice([0, 14, 15, 29, 44, 60, 100])
                with open(f"{mnt}/d/{n}", "wb") as f:
                    f.write(b"a")
                names.add(n)
                if i % 3 == 2:
                    victim = rng.choice(sorted(names))
                    os.unlink(f"{mnt}/d/{victim}")
                    names.discard(victim)
                if i % 5 == 4:
                    old = rng.choice(sorted(names))
                    new = old + "r" * rng.choice([1, 20, 40])
                    os.rename(f"{mnt}/d/{old}", f"{mnt}/d/{new}")
                    names.discard(old)
                    names.add(new)
        v = rawfs.Volume(img.dev)
        try:
            s, _ = v.lookup("d")
            clusters = v.dir_clusters(s)
            per = v.sect // 32
            ents = list(v.entries(clusters))
            eod = next((i for i, e in ents if e[0] == 0), len(ents))
            assert_eq(eod % per, 0, "end of directory at a sector boundary")
            assert_true(all(e[0] == 0 for _, e in ents[eod:]),
                        "nothing after the end of the directory")
            found = set()
            for st in v.sets(clusters):
                n = len(st.entries)
                if n <= per:
                    assert_eq(st.eidx // per, (st.eidx + n - 1) // per,
                              f"set {st.name!r} at {st.eidx}, {n} entries, "
                              f"inside one sector")
                found.add(st.name)
            assert_eq(found, names, "names on disk")
        finally:
            v.close()
        with mount(img.dev, driver="intree", opts="ro") as mnt:
            assert_eq(set(os.listdir(f"{mnt}/d")), names, "in-tree listing")


@test(timeout=300)
def renames_in_one_sector_are_one_write():
    """A rename within a directory whose new entry set needs more slots
    than the old one had takes free slots in the old set's sector when
    there are some: the new set and the removal of the old one are then
    one sector write, which a power cut leaves whole or not at all.  Also
    over an existing name in that sector.  The in-tree driver agrees."""
    import rawfs
    longer = "g0" + "x" * 29                # 5 entries instead of 3
    want = {"f0": 0, "f3": 0, "f4": 0, longer: 1, "u": 1, "g4": 1}
    with Image(size_mb=16, cluster=4096) as img:
        with mount(img.dev) as mnt:
            os.mkdir(f"{mnt}/d")
            # 3 entries each, 5 sets a sector: f* in sector 0, the rest 1
            for n in ("f0", "f1", "f2", "f3", "f4", "g0", "g1", "t", "u",
                      "g4"):
                with open(f"{mnt}/d/{n}", "wb") as f:
                    f.write(n.encode() * 100)
            for n in ("f1", "f2", "g1"):    # the first free run: sector 0
                os.unlink(f"{mnt}/d/{n}")
            os.rename(f"{mnt}/d/g0", f"{mnt}/d/{longer}")
            os.rename(f"{mnt}/d/t", f"{mnt}/d/u")   # over u
        v = rawfs.Volume(img.dev)
        try:
            s, _ = v.lookup("d")
            per = v.sect // 32
            sets = {st.name: st for st in v.sets(v.dir_clusters(s))}
            assert_eq(sorted(sets), sorted(want), "names on disk")
            for name, st in sets.items():
                assert_eq(st.eidx // per, want[name],
                          f"sector of set {name!r} (entry {st.eidx})")
        finally:
            v.close()
        with mount(img.dev, driver="intree", opts="ro") as mnt:
            assert_eq(sorted(os.listdir(f"{mnt}/d")), sorted(want),
                      "in-tree listing")
            with open(f"{mnt}/d/u", "rb") as f:
                assert_eq(f.read(), b"t" * 100, "u holds t's data")
            with open(f"{mnt}/d/{longer}", "rb") as f:
                assert_eq(f.read(), b"g0" * 100, "the renamed file's data")


@test(timeout=300)
def freed_slots_reused_first():
    """Creates search for free slots from where the last search ended,
    but slots freed before that point are found again: a file deleted
    near the start of a directory leaves slots the next create takes,
    and the directory does not grow while it has room."""
    import rawfs
    with Image(size_mb=16, cluster=4096) as img:
        with mount(img.dev) as mnt:
            os.mkdir(f"{mnt}/d")
            # 3 entries a set, 5 sets a 512-byte sector (rule 7): 7 of
            # the cluster's 8 sectors
            for i in range(35):
                open(f"{mnt}/d/f{i:02d}", "wb").close()
            os.unlink(f"{mnt}/d/f00")
            os.unlink(f"{mnt}/d/f17")
            for n in ("g0", "g1", "g2", "g3"):   # two holes, then the end
                open(f"{mnt}/d/{n}", "wb").close()
            size = os.stat(f"{mnt}/d").st_size
        assert_eq(size, 4096, "directory size: it had room")
        v = rawfs.Volume(img.dev)
        try:
            s, _ = v.lookup("d")
            where = {st.name: st.eidx for st in v.sets(v.dir_clusters(s))}
        finally:
            v.close()
        assert_eq((where["g0"], where["g1"]), (0, 54),
                  "the freed slots taken first, in order")
        assert_eq(sorted((where["g2"], where["g3"])), [112, 115],
                  "then the end of the directory")


def _dev_stat(dev):
    """(writes, flushes) the block layer completed for dev."""
    with open(f"/sys/block/{os.path.basename(dev)}/stat") as f:
        v = f.read().split()
    return int(v[4]), int(v[15])


@test(timeout=300)
def long_set_rewritten_in_one_sector_write():
    """A set of more than a sector's worth of entries (a name of 230
    characters: 18 entries, 512-byte sectors) spans two sectors.  exfat2
    keeps its File and Stream entries in one, even when the free run
    starts at a sector's last entry, and rewriting the set (new times,
    fsync) writes only that sector: a power cut cannot tear a set that
    was durable: the rewrite costs as many block-layer writes as one of a
    three-entry set.  The in-tree driver reads the file back."""
    import rawfs
    long_name = "L" + "".join(chr(97 + i * 7 % 26) for i in range(229))
    with Image(size_mb=16, cluster=4096) as img:
        with mount(img.dev) as mnt:
            os.mkdir(f"{mnt}/d")
            for i in range(5):          # 15 entries: the run starts at 15
                open(f"{mnt}/d/f{i}", "wb").close()
            path = f"{mnt}/d/{long_name}"
            with open(path, "wb") as f:
                f.write(pattern(3000, seed=5))
                f.flush()
                os.fsync(f.fileno())
            fd = os.open(f"{mnt}/d", os.O_RDONLY)
            os.fsync(fd)
            os.close(fd)

            def rewrite(p):
                """Block-layer writes of a new mtime and an fsync."""
                w0, _ = _dev_stat(img.dev)
                os.utime(p, (1_600_000_000, 1_600_000_000))
                fd = os.open(p, os.O_RDONLY)
                os.fsync(fd)
                os.close(fd)
                return _dev_stat(img.dev)[0] - w0
            short = rewrite(f"{mnt}/d/f0")
            long_ = rewrite(path)
        v = rawfs.Volume(img.dev)
        try:
            s, _ = v.lookup("d")
            per = v.sect // 32
            st = next(x for x in v.sets(v.dir_clusters(s))
                      if x.name == long_name)
        finally:
            v.close()
        assert_eq(len(st.entries), 18, "entries of the long set")
        assert_eq(st.eidx // per, (st.eidx + 1) // per,
                  f"File and Stream in one sector (entry {st.eidx})")
        log(f"writes of a rewrite + fsync: short set {short}, long {long_}")
        assert_eq(long_, short, "writes of the long set's rewrite, as many "
                  "as of a short one's")
        with mount(img.dev, driver="intree", opts="ro") as mnt:
            with open(f"{mnt}/d/{long_name}", "rb") as f:
                assert_eq(f.read() == pattern(3000, seed=5), True,
                          "the in-tree driver reads the file")
            assert_eq(int(os.stat(f"{mnt}/d/{long_name}").st_mtime),
                      1_600_000_000, "the new mtime")


@test(timeout=300)
def mkdir_flushes_batched():
    """A new directory's cluster must be zero and allocated on disk
    before its entry points to it: a write and a cache flush.  exfat2
    prepares a batch of such clusters at a time (up to 256 KiB), so 40
    mkdirs cost a handful of flushes, not 40.  sync gives the unused
    ones back: the free count after a remount is the one before it."""
    with Image(size_mb=64, cluster=4096) as img:
        with mount(img.dev) as mnt:
            w0, f0 = _dev_stat(img.dev)
            for i in range(40):
                os.mkdir(f"{mnt}/d{i}")
            w1, f1 = _dev_stat(img.dev)
            log(f"40 mkdirs: {w1 - w0} writes, {f1 - f0} flushes")
            assert_true(f1 - f0 <= 8, f"40 mkdirs: {f1 - f0} flushes")
            os.sync()
            free = os.statvfs(mnt).f_bfree
            umount(mnt)
        with mount(img.dev) as mnt:
            assert_eq(os.statvfs(mnt).f_bfree, free,
                      "free blocks after the remount")
            assert_eq(len(os.listdir(mnt)), 40, "directories")
            os.mkdir(f"{mnt}/d0/sub")
            assert_eq(os.listdir(f"{mnt}/d0"), ["sub"], "a new subdirectory")


def _make_two_fats(dev, active, media_failure):
    """Turn a fresh mkfs.exfat volume into one with NumberOfFats = 2: a
    copy of the FAT after the first, a second allocation bitmap (its
    clusters chained in both FATs and marked in both bitmaps), ActiveFat and MediaFailure as asked, both
    boot regions rewritten with their checksum.  Returns the geometry."""
    import struct

    import corrupt
    import rawfs
    v = rawfs.Volume(dev)
    try:
        bs = bytearray(v.read(0, 512))
        sect = v.sect
        fat_off, fat_len, heap = struct.unpack_from("<III", bs, 80)
        assert_true(fat_off + 2 * fat_len <= heap,
                    f"room for a second FAT: {fat_off}+2*{fat_len} <= {heap}")
        nbm = -(-v.bitmap_len // v.clu)
        bm2 = v.free_clusters(nbm)
        for i, c in enumerate(bm2):
            v.set_in_use(c)
            v.set_fat(c, bm2[i + 1] if i + 1 < nbm else rawfs.EOC)
        bitmap = v.read(v.clu_off(v.bitmap_clu), v.bitmap_len)
        v.write(v.clu_off(bm2[0]), bitmap)
        fat = v.read(fat_off * sect, fat_len * sect)
        v.write((fat_off + fat_len) * sect, fat)
        root = v.chain(v.root)
        eod = next(i for i, e in v.entries(root) if e[0] == 0)
        ent = bytearray(32)
        ent[0], ent[1] = 0x81, 1
        struct.pack_into("<IQ", ent, 20, bm2[0], v.bitmap_len)
        v.write(v.entry_off(root, eod), bytes(ent))
        flags = (1 if active else 0) | (4 if media_failure else 0)
        for base in (0, 12 * sect):
            region = bytearray(v.read(base, 12 * sect))
            region[110] = 2
            struct.pack_into("<H", region, 106, flags)
            csum = corrupt.boot_checksum(region, sect)
            region[11 * sect:] = struct.pack("<I", csum) * (sect // 4)
            v.write(base, bytes(region))
        return {"sect": sect, "fat": [fat_off * sect, (fat_off + fat_len) * sect],
                "fat_bytes": fat_len * sect, "clu": v.clu,
                "bitmap": [v.clu_off(v.bitmap_clu), v.clu_off(bm2[0])],
                "bitmap_len": v.bitmap_len}
    finally:
        v.close()


@test(timeout=300, writes=False)
def two_fats_use_active_only():
    """NumberOfFats = 2 (TexFAT layout): the FAT and bitmap ActiveFat
    names are the ones used; the inactive pair is stale by the
    specification and left byte for byte as it was; ActiveFat and
    MediaFailure survive mount, writes and unmount; files written read
    back after a remount, statfs agrees with the active bitmap, and
    xcheck.py finds the chains of the active FAT and the active bitmap
    consistent."""
    for active in (1, 0):
        with Image(size_mb=16, cluster=4096, fsck=False) as img:
            g = _make_two_fats(img.dev, active, media_failure=True)

            def snap(which):
                with open(img.dev, "rb") as f:
                    f.seek(g["fat"][which])
                    fat = f.read(g["fat_bytes"])
                    f.seek(g["bitmap"][which])
                    return fat, f.read(g["bitmap_len"])
            inactive = snap(active ^ 1)
            with mount(img.dev) as mnt:
                os.mkdir(f"{mnt}/d")
                # interleaved appends fragment both files: FAT chains
                for i in range(6):
                    for n in ("a", "d/b"):
                        with open(f"{mnt}/{n}", "ab") as f:
                            f.write(pattern(g["clu"], i))
                            f.flush()
                            os.fsync(f.fileno())
                write_file(f"{mnt}/big", 40 * g["clu"], seed=3)
                os.unlink(f"{mnt}/big")
                write_file(f"{mnt}/c", 3 * g["clu"] + 5, seed=4)
            assert_true(snap(active ^ 1) == inactive,
                        f"inactive FAT and bitmap (ActiveFat {active}) "
                        f"untouched")
            with open(img.dev, "rb") as f:
                boot = f.read(512)
            flags = int.from_bytes(boot[106:108], "little")
            assert_eq(flags & 7, (1 if active else 0) | 4,
                      "VolumeFlags: ActiveFat and MediaFailure kept, "
                      "VolumeDirty clear")
            fat, bitmap = snap(active)
            used = sum(bin(b).count("1") for b in bitmap)
            with mount(img.dev, opts="ro") as mnt:
                want = b"".join(pattern(g["clu"], i) for i in range(6))
                for n in ("a", "d/b"):
                    with open(f"{mnt}/{n}", "rb") as f:
                        assert_eq(f.read(), want, f"{n} read back")
                st = os.statvfs(mnt)
                assert_eq(st.f_blocks - st.f_bfree, used,
                          "used clusters = bits set in the active bitmap")
            # an independent reader: the strict checker walks the chains
            # through the active FAT against the active bitmap
            xcheck_clean(img.dev)


def _extents(path):
    """(physical start, length) of each extent FIEMAP gives for path."""
    import fcntl
    import struct
    fd = os.open(path, os.O_RDONLY)
    try:
        buf = bytearray(struct.pack("<QQIIII", 0, 2**64 - 1, 1, 0, 256, 0)
                        + bytes(256 * 56))
        fcntl.ioctl(fd, 0xC020660B, buf, True)     # FS_IOC_FIEMAP, sync
    finally:
        os.close(fd)
    n = struct.unpack_from("<I", buf, 20)[0]
    return [struct.unpack_from("<QQQ", buf, 32 + 56 * i)[1:3]
            for i in range(n)]


@test(timeout=600, writes=True)
def writers_side_by_side_get_runs_of_their_own():
    """Files written side by side, each kept open (as copies, downloads
    and recorders do), get a run of clusters each (allocation windows),
    not an extent per write; files written one after another still follow
    each other with no gap between them; the data reads back the same
    through the in-tree driver."""
    c = 4096
    size, chunk = 3 << 20, 64 << 10
    want = [pattern(size, seed=50 + j) for j in range(4)]
    with Image(size_mb=64, cluster=c) as img:
        with mount(img.dev) as mnt:
            paths = [f"{mnt}/w{j}" for j in range(4)]
            fds = [os.open(p, os.O_WRONLY | os.O_CREAT, 0o644)
                   for p in paths]
            try:
                for off in range(0, size, chunk):
                    for j, fd in enumerate(fds):
                        os.pwrite(fd, want[j][off:off + chunk], off)
            finally:
                for fd in fds:
                    os.close(fd)
            for k in range(3):
                write_file(f"{mnt}/s{k}", 3 * c - 100, seed=60 + k)
            os.sync()
            for p in paths:
                ext = _extents(p)
                assert_true(len(ext) <= 2, f"{p}: {len(ext)} extents "
                            f"(written side by side in {chunk} byte "
                            f"writes): {ext[:6]}...")
            first = [_extents(f"{mnt}/s{k}")[0][0] for k in range(3)]
            assert_eq([b - a for a, b in zip(first, first[1:])],
                      [3 * c, 3 * c],
                      "distance between files written one after another")
        with mount(img.dev, driver="intree", opts="ro") as mnt:
            for j in range(4):
                with open(f"{mnt}/w{j}", "rb") as f:
                    assert_true(f.read() == want[j],
                                f"w{j} read by the in-tree driver")

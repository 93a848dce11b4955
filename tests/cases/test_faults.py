# SPDX-License-Identifier: GPL-2.0
"""Failing memory and devices: a write workload runs while the kernel's
fault injection fails a share of what the driver asks for, swept over
probabilities:

  failslab          slab allocations (kmalloc, kmem_cache_alloc)
  fail_page_alloc   page allocations (page cache folios, buffer pages)
  fail_make_request every bio to the test's loop device: read and write
                    errors, data and metadata alike
  dm_dust           bad blocks (dm-dust, 4 KiB blocks, a share of the
                    device): reads of them fail until they are written,
                    and the first 0-2 writes fail too (a drive remapping
                    sectors); caches are dropped between operations so
                    that metadata is read again
  dm_flakey         a device that fails for a while and recovers: before
                    each operation, with that probability, the dm-flakey
                    table in front of the disk is switched to fail every
                    bio, only writes or only reads, or back to working

Memory failures are limited, with the stack-trace filter, to allocations
made with exfat2's code on the stack (the workload, its writeback and the
driver's own allocations; not the test runner's or fsck's).

Required: no kernel splat (the runner fails the test on any), no leak
(runner:kmemleak at the end of the debug pass), every failure reaches the
caller as an errno, the errors= policy is honoured (errors=remount-ro
rounds must end read-only when the driver reported corruption or a
metadata write error), and once the faults stop and the volume is
unmounted: fsck.exfat -n finds it clean or only leaked clusters
(crashlib.fsck_verdict), or finds a file under two names after a rename
that failed with EIO (the write deleting the old name lost: the window
of write-ordering rule 5, repaired with fsck.exfat -y), the driver
mounts it, and every file whose last operation was a successful fsync
holds exactly what it held then, read by exfat2 and by the in-tree
driver.

Needs CONFIG_FAULT_INJECTION_DEBUG_FS and the stack-trace filter: the
debug kernel (make check runs these in its debug pass only).
"""

import errno
import os
import random
import re
import sys

import crashlib
from lib import (Image, TestFailure, assert_eq, assert_true, fail, log, mount,
                 sh, test, umount)

DEBUGFS = "/sys/kernel/debug"
KINDS = ("failslab", "fail_page_alloc", "fail_make_request", "dm_dust",
         "dm_flakey")
PROBS = (2, 10, 40)       # percent
OPS = 50


def _w(path, value):
    with open(path, "w") as f:
        f.write(f"{value}\n")


def _module_range(name="exfat2"):
    with open("/proc/modules") as f:
        for ln in f:
            p = ln.split()
            if p[0] == name:
                base = int(p[5], 16)
                return base, base + int(p[1])
    fail(f"{name} is not loaded")


def _need_debugfs():
    if not os.path.isdir(f"{DEBUGFS}/failslab"):
        sh(f"mount -t debugfs none {DEBUGFS}", check=False)
    if not os.path.isdir(f"{DEBUGFS}/failslab"):
        fail("no fault injection in this kernel (CONFIG_FAULT_INJECTION_"
             "DEBUG_FS): these tests run under the debug kernel")


class Faults:
    """Arm one kind of fault injection for the duration of a with block.
    dev is the test's loop device; for the dm_ kinds, dm names the
    device-mapper device over it that the volume is mounted from (see
    DmDisk)."""

    def __init__(self, kind, prob, dev, dm=None, rng=None, space=0,
                 times=-1):
        self.kind, self.prob, self.dev = kind, prob, dev
        self.dm, self.rng = dm, rng
        self.space, self.times = space, times
        self.d = f"{DEBUGFS}/{kind}"

    def __enter__(self):
        if self.dm:
            self.dm.arm(self.prob, self.rng)
            return self
        d = self.d
        _w(f"{d}/times", self.times)
        _w(f"{d}/interval", 1)
        _w(f"{d}/verbose", 0)
        _w(f"{d}/space", self.space)
        if self.kind == "fail_make_request":
            _w(f"/sys/block/{os.path.basename(self.dev)}/make-it-fail", 1)
        else:
            lo, hi = _module_range()
            _w(f"{d}/task-filter", "N")
            _w(f"{d}/ignore-gfp-wait", "N")
            _w(f"{d}/require-start", lo)
            _w(f"{d}/require-end", hi)
            _w(f"{d}/stacktrace-depth", 32)
            if self.kind == "fail_page_alloc":
                _w(f"{d}/ignore-gfp-highmem", "N")
                _w(f"{d}/min-order", 0)
        _w(f"{d}/probability", self.prob)
        return self

    def __exit__(self, *exc):
        if self.dm:
            self.dm.disarm()
            return False
        _w(f"{self.d}/probability", 0)
        _w(f"{self.d}/times", -1)
        _w(f"{self.d}/space", 0)
        if self.kind == "fail_make_request":
            _w(f"/sys/block/{os.path.basename(self.dev)}/make-it-fail", 0)
        else:
            _w(f"{self.d}/require-start", 0)
            _w(f"{self.d}/require-end", 0)
        return False


DUST_BLOCK = 4096
FLAKEY_MODES = ("", "1 error_writes", "1 error_reads")


class DmDisk:
    """A device-mapper device over the loop device dev: dm-dust for
    dm_dust, a table switched between linear and dm-flakey for dm_flakey.
    step() runs before each operation of the workload while armed."""

    def __init__(self, kind, dev):
        self.kind, self.lower = kind, dev
        self.name = f"faults{os.getpid()}"
        self.len = crashlib.devsize(dev)
        self.armed = self.failing = False
        self.rng, self.prob = None, 0
        self.switches = 0
        sh("modprobe dm-mod; modprobe dm-flakey; modprobe dm-dust",
           check=False)
        if kind == "dm_dust":
            table = f"0 {self.len} dust {dev} 0 {DUST_BLOCK}"
        else:
            table = f"0 {self.len} linear {dev} 0"
        sh(f"dmsetup create {self.name} --table '{table}' && "
           f"dmsetup mknodes {self.name}")
        self.dev = f"/dev/mapper/{self.name}"

    def arm(self, prob, rng):
        self.rng, self.prob, self.armed = rng, prob, True
        if self.kind == "dm_dust":
            nblocks = self.len * 512 // DUST_BLOCK
            bad = rng.sample(range(nblocks), max(1, nblocks * prob // 100))
            crashlib.dm_message(self.name, "quiet")
            for b in bad:
                # the first 0-2 writes of a bad block fail too
                crashlib.dm_message(self.name,
                                    f"addbadblock {b} {rng.randrange(3)}")
            crashlib.dm_message(self.name, "enable")
            self.drop()

    @staticmethod
    def drop():
        _w("/proc/sys/vm/drop_caches", 3)

    def step(self):
        """Before an operation: dust drops the caches (clean pages and
        buffers go; dirty ones stay) so that what is read next comes from
        the failing disk; flakey may switch between working and failing."""
        if not self.armed:
            return
        if self.kind == "dm_dust":
            if self.rng.random() < 0.3:
                self.drop()
        elif self.rng.randrange(100) < self.prob or (
                self.failing and self.rng.random() < 0.3):
            self.set_failing(not self.failing)

    def set_failing(self, on):
        if on:
            mode = self.rng.choice(FLAKEY_MODES)
            params = f"{self.lower} 0 0 1" + (f" {mode}" if mode else "")
            crashlib.dm_swap(self.name, self.len, "flakey", params)
        else:
            crashlib.dm_swap(self.name, self.len, "linear",
                             f"{self.lower} 0")
        self.failing = on
        self.switches += 1

    def disarm(self):
        self.armed = False
        if self.kind == "dm_dust":
            crashlib.dm_message(self.name, "disable")
        elif self.failing:
            self.set_failing(False)

    def close(self):
        for _ in range(20):
            if sh(f"dmsetup remove {self.name}", check=False).returncode == 0:
                break
        if os.path.lexists(self.dev):
            os.unlink(self.dev)


def _data(rng, n):
    return rng.randbytes(n)


class Workload:
    """Seeded operations on mnt.  model[path] = (content at the last
    successful fsync, clean since then); files whose state is uncertain
    (an operation on them failed, or ran after their fsync) are dropped
    from model or marked not clean."""

    def __init__(self, mnt, seed, clu):
        self.mnt, self.rng, self.clu = mnt, random.Random(seed), clu
        self.files = {}       # path -> believed content (None: unknown)
        self.model = {}       # path -> fsynced content, if still clean
        self.errnos = {}
        self.ok = 0
        self.dirs = [""]
        self.before_op = None   # called before each operation, if set
        self.fsync_failed = set()
        self.renames_failed = []    # (old, new) of renames failing with EIO

    def _err(self, op, e):
        key = f"{op}:{errno.errorcode.get(e.errno, e.errno)}"
        self.errnos[key] = self.errnos.get(key, 0) + 1

    def _dirty(self, p):
        self.model.pop(p, None)

    def run(self, n):
        ops = [self.create, self.create, self.append, self.overwrite,
               self.fsync, self.fsync, self.rename, self.truncate,
               self.unlink, self.mkdir]
        for _ in range(n):
            op = self.rng.choice(ops)
            if self.before_op:
                self.before_op()
            try:
                op()
                self.ok += 1
            except OSError as e:
                self._err(op.__name__, e)
                if e.errno not in (errno.ENOMEM, errno.EIO, errno.EUCLEAN,
                                   errno.EROFS, errno.ENOSPC, errno.ENOENT,
                                   errno.EEXIST):
                    fail(f"{op.__name__}: unexpected {e!r}")

    def durable(self, n):
        """n new files, fsynced and never touched again: the model holds
        at least these (the workload's own files come and go)."""
        for i in range(n):
            rel = f"keep{i}"
            data = _data(self.rng, (i + 1) * self.clu - 5)
            with open(self._path(rel), "wb") as f:
                f.write(data)
                f.flush()           # out of Python's buffer first
                os.fsync(f.fileno())
            self.model[rel] = data

    def _pick(self):
        if not self.files:
            raise OSError(errno.ENOENT, "no file yet")
        return self.rng.choice(sorted(self.files))

    def _path(self, rel):
        return f"{self.mnt}/{rel}"

    def create(self):
        d = self.rng.choice(self.dirs)
        rel = f"{d}/f{self.rng.randrange(10**6)}".lstrip("/")
        data = _data(self.rng, self.rng.choice([0, 100, self.clu + 7,
                                                 3 * self.clu]))
        self.files[rel] = None
        self._dirty(rel)
        with open(self._path(rel), "wb") as f:
            f.write(data)
        self.files[rel] = data

    def append(self):
        rel = self._pick()
        self._dirty(rel)
        old, self.files[rel] = self.files[rel], None
        add = _data(self.rng, self.rng.choice([10, self.clu]))
        with open(self._path(rel), "ab") as f:
            f.write(add)
        if old is not None:
            self.files[rel] = old + add

    def overwrite(self):
        rel = self._pick()
        self._dirty(rel)
        old, self.files[rel] = self.files[rel], None
        if not old:
            return
        off = self.rng.randrange(len(old))
        new = _data(self.rng, min(64, len(old) - off))
        with open(self._path(rel), "r+b") as f:
            f.seek(off)
            f.write(new)
        self.files[rel] = old[:off] + new + old[off + len(new):]

    def fsync(self):
        rel = self._pick()
        try:
            with open(self._path(rel), "rb+") as f:
                os.fsync(f.fileno())
        except OSError:
            # Data whose write failed is gone from the page cache's dirty
            # set (reported to this fsync, once): a later fsync returning
            # 0 does not bring it back, so the content is unknown until
            # the file is written whole again.
            self.fsync_failed.add(rel)
            self.files[rel] = None
            self._dirty(rel)
            raise
        if self.files[rel] is not None:
            self.model[rel] = self.files[rel]

    def rename(self):
        rel = self._pick()
        d = self.rng.choice(self.dirs)
        new = f"{d}/r{self.rng.randrange(10**6)}".lstrip("/")
        content = self.files.pop(rel)
        self._dirty(rel)
        self._dirty(new)
        try:
            os.rename(self._path(rel), self._path(new))
        except OSError as e:
            if e.errno == errno.EIO:
                self.renames_failed.append((rel, new))
            raise
        self.files[new] = content

    def truncate(self):
        rel = self._pick()
        self._dirty(rel)
        old, self.files[rel] = self.files[rel], None
        n = self.rng.choice([0, 1, self.clu + 1])
        os.truncate(self._path(rel), n)
        if old is not None:
            self.files[rel] = (old + bytes(n))[:n]

    def unlink(self):
        rel = self._pick()
        self._dirty(rel)
        self.files.pop(rel)
        os.unlink(self._path(rel))

    def mkdir(self):
        rel = f"d{self.rng.randrange(10**6)}"
        os.mkdir(self._path(rel))
        self.dirs.append(rel)


def _round(kind, prob, seed, clu, opts):
    """One image, one kind at one probability.  Returns a summary line."""
    with Image(size_mb=8, cluster=clu, fsck=False) as img:
        dm = DmDisk(kind, img.dev) if kind.startswith("dm_") else None
        try:
            return _round_on(kind, prob, seed, clu, opts, img.dev, dm)
        finally:
            if dm:
                dm.close()


# What exfat2 says when it applies the errors= policy (exfat_fs_error,
# exfat_meta_check): under errors=remount-ro the volume must then be
# read-only.
_POLICY_RE = re.compile(r"exfat2 \((\S+)\): (corruption|lost a metadata "
                        r"write)")


def _kmsg_since(t=None):
    """(kernel log lines stamped after t, the last stamp)."""
    out, last = [], t or 0.0
    for ln in sh("dmesg", check=False).stdout.splitlines():
        m = re.match(r"\[\s*(\d+\.\d+)\]", ln)
        if not m:
            continue
        stamp = float(m.group(1))
        if t is None or stamp > t:
            out.append(ln)
        last = max(last, stamp)
    return out, last


def _fsck_repair(dev):
    """fsck.exfat -y on dev: (exit status, output lines).  The block
    device keeps the error of the write that was lost until someone sees
    it: the first fsync of the device after that, which would be fsck's
    (exit 8), gets it; an fsync here takes it first."""
    fd = os.open(dev, os.O_RDWR)
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)
    return crashlib._fsck(dev, "-y")


def _rename_window(wl, text):
    """Whether fsck's findings of entries sharing clusters (text, of
    crashlib.fsck_classify's "dup") are all names of renames that failed
    with EIO.  A rename that must write a new entry set writes it, then
    deletes the old one (write-ordering rule 5): when the second write is
    lost the file keeps both names on disk, as after a power cut between
    the two, and exFAT offers no order without such a window (the other
    one loses the file).  fsck.exfat repairs it."""
    names = {p for pair in wl.renames_failed for p in pair}
    dups = crashlib.fsck_dup_paths(text)
    if not dups or not all(d.lstrip("/") in names for d in dups):
        return False
    log(f"the rename window after a lost write: {', '.join(dups)} "
        f"(renames that failed with EIO: {wl.renames_failed}); "
        "repaired with fsck.exfat -y")
    return True


def _round_on(kind, prob, seed, clu, opts, lower, dm):
    dev = dm.dev if dm else lower
    _, before = _kmsg_since()
    with mount(dev, opts=opts) as mnt:
        wl = Workload(mnt, seed, clu)
        wl.run(5)                       # something to start from
        wl.durable(3)                   # fsynced before the faults
        with Faults(kind, prob, lower, dm=dm,
                    rng=random.Random(seed * 7919 + prob)):
            if dm:
                wl.before_op = dm.step
            wl.run(OPS)
            wl.before_op = None
        ro = "ro" in sh(f"findmnt -no OPTIONS {mnt}").stdout.split(",")
        policy = [ln for ln in _kmsg_since(before)[0]
                  if _POLICY_RE.search(ln)]
        if policy and "errors=continue" not in opts and not ro:
            fail(f"{kind} {prob}% seed {seed}: errors=remount-ro, the "
                 f"driver reported '{policy[0].strip()}' but the volume "
                 "is still read-write")
        # with the faults gone the volume must still take writes
        # (unless it went read-only) and write back
        if not ro:
            try:
                wl.run(5)
                os.sync()
            except OSError as e:
                fail(f"after the faults stopped: {e!r}")
        umount(mnt)
    verdict, text = crashlib.fsck_classify(dev)
    if verdict == "dup" and _rename_window(wl, text):
        # repaired (a copy was, by fsck_classify), then judged as usual
        rc, rep = _fsck_repair(dev)
        verdict, text = crashlib.fsck_classify(dev)
        text += f"\n-- after fsck.exfat -y (exit {rc}): {rep}"
    if verdict not in ("clean", "benign"):
        fail(f"{kind} {prob}% seed {seed}: fsck.exfat after the "
             f"faults:\n{text}")
    # the fsynced files, read by exfat2 and by the in-tree driver
    for drv in ("ours", "intree"):
        with mount(dev, opts="ro", driver=drv) as mnt:
            for rel, data in sorted(wl.model.items()):
                with open(f"{mnt}/{rel}", "rb") as f:
                    got = f.read()
                assert_eq(len(got), len(data), f"{drv}: {rel}: size after "
                          "fsync")
                assert_true(got == data, f"{drv}: {rel}: content after fsync"
                            f" (an fsync of it failed before: "
                            f"{rel in wl.fsync_failed})")
    extra = f", {dm.switches} table switches" if dm and dm.switches else ""
    line = (f"{kind} {prob}% seed {seed} clu {clu} {opts or 'default'}: "
            f"{wl.ok} ok, failed {wl.errnos or '-'}, "
            f"{len(wl.model)} fsynced files intact"
            f"{', went read-only' if ro else ''}{extra}")
    log(line)
    return line


def _sweep(kind, seeds=1):
    _need_debugfs()
    n, failed = 0, []
    for s in range(seeds):
        for prob in PROBS:
            for clu, opts in ((4096, ""), (512, "errors=continue")):
                n += 1
                try:
                    _round(kind, prob, n, clu, opts)
                except TestFailure as e:
                    log(f"FAILED round: {e}")
                    failed.append(str(e).splitlines()[0])
    log(f"{kind}: {n - len(failed)} of {n} rounds passed")
    if failed:
        fail(f"{len(failed)} of {n} rounds failed: " + "; ".join(failed))


@test(timeout=300)
def lost_dir_write_not_reread():
    """A directory sector whose write was lost is not read back from the
    disk: memory holds the newer entries.  (The block layer marks such a
    buffer not up to date; reading it again used to bring back the old
    sector, so a new file took a live directory's slot and opening it
    failed with EISDIR.)  Once a metadata write is lost, fsync fails; the
    file it failed on may be empty after remount but nothing else."""
    _need_debugfs()
    with Image(size_mb=8, cluster=4096, fsck=False) as img:
        with mount(img.dev, opts="errors=continue") as mnt:
            os.mkdir(f"{mnt}/d1")
            with Faults("fail_make_request", 100, img.dev):
                os.sync()               # every write fails: all lost
            data = os.urandom(5000)
            fd = os.open(f"{mnt}/f1", os.O_WRONLY | os.O_CREAT, 0o644)
            try:
                os.write(fd, data)
                try:
                    os.fsync(fd)
                    fail("fsync succeeded after a lost metadata write")
                except OSError as e:
                    assert_eq(e.errno, errno.EIO, "fsync's errno")
            finally:
                os.close(fd)
            assert_eq(sorted(os.listdir(mnt)), ["d1", "f1"],
                      "directory after the lost write")
            assert_true(os.path.isdir(f"{mnt}/d1"), "d1 is a directory")
            with open(f"{mnt}/f1", "rb") as f:
                assert_true(f.read() == data, "f1 read back before unmount")
            umount(mnt)
        with mount(img.dev, opts="ro") as mnt:
            assert_eq(sorted(os.listdir(mnt)), ["d1", "f1"],
                      "directory after remount")
            assert_true(os.path.isdir(f"{mnt}/d1"), "d1 after remount")
            assert_eq(os.listdir(f"{mnt}/d1"), [], "d1's entries")
            with open(f"{mnt}/f1", "rb") as f:
                got = f.read()
            umount(mnt)
        assert_true(got in (b"", data),
                    f"f1 after remount: {len(got)} bytes, neither empty "
                    "nor what was written")
        ok, text = crashlib.fsck_verdict(img.dev)
        assert_true(ok, f"fsck.exfat after the lost write:\n{text}")


class _Renames:
    """What _rename_window() reads of a Workload."""

    def __init__(self, pairs):
        self.renames_failed = pairs


@test(timeout=300)
def lost_rename_write_sweep():
    """A rename into another directory writes the new entry set, then
    deletes the old one (write-ordering rule 5).  Each of its writes is
    lost in turn (fail_make_request's space: bios pass until their bytes
    reach it; the writes before are 512-byte sectors, the first is
    VolumeDirty's), until one the rename does not make: the volume must
    go read-only, the rename succeed or fail with EIO, and the disk must
    then be clean, or, when the deletion was the write lost and the
    rename failed, hold the file under both names, which fsck.exfat
    reports as two files sharing clusters.  The fault sweeps accept that
    for renames that failed with EIO and nothing else (_rename_window;
    their fail_make_request 2% round once lost such a write), and
    fsck.exfat -y repairs it keeping the data under one of the names."""
    _need_debugfs()
    data = random.Random(5).randbytes(3 * 4096 + 11)
    windows = 0
    for k in range(1, 9):
        with Image(size_mb=8, cluster=4096, fsck=False) as img:
            with mount(img.dev) as mnt:
                os.mkdir(f"{mnt}/a")
                os.mkdir(f"{mnt}/b")
                with open(f"{mnt}/a/f1", "wb") as f:
                    f.write(data)
                os.sync()
                with Faults("fail_make_request", 100, img.dev,
                            space=512 * (k - 1) + 1, times=1):
                    try:
                        os.rename(f"{mnt}/a/f1", f"{mnt}/b/r1")
                        res = "ok"
                    except OSError as e:
                        assert_eq(e.errno, errno.EIO,
                                  f"write {k} lost: rename's errno")
                        res = "EIO"
                ro = "ro" in sh(f"findmnt -no OPTIONS {mnt}").stdout \
                    .split(",")
                umount(mnt)
            if not ro and res == "ok":
                log(f"the rename made {k - 1} writes")
                break
            assert_true(ro, f"write {k} lost: read-write")
            verdict, text = crashlib.fsck_classify(img.dev)
            if verdict == "dup":
                assert_eq(res, "EIO", f"write {k} lost: both names after "
                          "a rename that succeeded")
                windows += 1
                assert_true(not _rename_window(_Renames([("a/x", "b/y")]),
                                               text),
                            "the rename window accepted for other names")
                assert_true(_rename_window(_Renames([("a/f1", "b/r1")]),
                                           text),
                            f"write {k} lost: not the window: {text}")
                rc, rep = _fsck_repair(img.dev)
                verdict, text = crashlib.fsck_classify(img.dev)
                text += f"\n-- after fsck.exfat -y (exit {rc}): {rep}"
            assert_true(verdict in ("clean", "benign"),
                        f"write {k} lost: fsck.exfat:\n{text}")
            with mount(img.dev, opts="ro") as mnt:
                got = []
                for p in ("a/f1", "b/r1"):
                    if os.path.exists(f"{mnt}/{p}"):
                        with open(f"{mnt}/{p}", "rb") as f:
                            got.append(f.read())
                umount(mnt)
            log(f"write {k} lost: rename {res}, fsck {verdict}, "
                f"{len(got)} name(s) after repair")
            assert_true(data in got, f"write {k} lost: the data under "
                        f"neither name ({[len(g) for g in got]} bytes)")
    assert_true(windows, "no lost write left the rename window: the sweep "
                "did not reach the deletion")


# Only filters naming fault tests count (see test_crash.py's _FILTERS).
_FILTERS = [a.lstrip("+!") for a in sys.argv[1:] if not a.startswith("-")
            and a.lstrip("+!").startswith("faults:")]
LONG = 8        # seeds per probability and configuration in the long form


@test(timeout=900)
def failslab_sweep():
    """failslab at 2, 10 and 40% on exfat2's allocations (see module doc)."""
    _sweep("failslab")


@test(timeout=900)
def fail_page_alloc_sweep():
    """fail_page_alloc at 2, 10 and 40% on exfat2's allocations."""
    _sweep("fail_page_alloc")


@test(timeout=900)
def fail_make_request_sweep():
    """fail_make_request at 2, 10 and 40% of the test device's bios."""
    _sweep("fail_make_request")


@test(timeout=900)
def dm_dust_sweep():
    """dm-dust: 2, 10 and 40% of the device's 4 KiB blocks fail reads."""
    _sweep("dm_dust")


@test(timeout=900)
def dm_flakey_sweep():
    """dm-flakey: the disk fails (all, writes or reads) and recovers."""
    _sweep("dm_flakey")


# The long form (8 times the rounds), only when a filter asks for it:
#   tests/run-tests.sh --kernel ... faults:long
if any("long" in f for f in _FILTERS):
    @test(timeout=7200)
    def failslab_sweep_long():
        _sweep("failslab", LONG)

    @test(timeout=7200)
    def fail_page_alloc_sweep_long():
        _sweep("fail_page_alloc", LONG)

    @test(timeout=7200)
    def fail_make_request_sweep_long():
        _sweep("fail_make_request", LONG)

    @test(timeout=7200)
    def dm_dust_sweep_long():
        _sweep("dm_dust", LONG)

    @test(timeout=7200)
    def dm_flakey_sweep_long():
        _sweep("dm_flakey", LONG)

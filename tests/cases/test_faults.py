# SPDX-License-Identifier: GPL-2.0
"""Failing memory and devices: a write workload runs while the kernel's
fault injection fails a share of what the driver asks for, swept over
probabilities:

  failslab          slab allocations (kmalloc, kmem_cache_alloc)
  fail_page_alloc   page allocations (page cache folios, buffer pages)
  fail_make_request every bio to the test's loop device: read and write
                    errors, data and metadata alike

Memory failures are limited, with the stack-trace filter, to allocations
made with exfat2's code on the stack (the workload, its writeback and the
driver's own allocations; not the test runner's or fsck's).

Required: no kernel splat (the runner fails the test on any), no leak
(runner:kmemleak at the end of the debug pass), every failure reaches the
caller as an errno, the errors= policy is honoured (errors=remount-ro
rounds must end read-only when the driver reported corruption or a
metadata write error), and once the faults stop and the volume is
unmounted: fsck.exfat -n finds it clean or only leaked clusters
(crashlib.fsck_verdict), the driver mounts it, and every file whose last
operation was a successful fsync holds exactly what it held then.

Needs CONFIG_FAULT_INJECTION_DEBUG_FS and the stack-trace filter: the
debug kernel (make check runs these in its debug pass only).
"""

import errno
import os
import random
import sys

import crashlib
from lib import (Image, TestFailure, assert_eq, assert_true, fail, log, mount,
                 sh, test, umount)

DEBUGFS = "/sys/kernel/debug"
KINDS = ("failslab", "fail_page_alloc", "fail_make_request")
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
    """Arm one kind of fault injection for the duration of a with block."""

    def __init__(self, kind, prob, dev):
        self.kind, self.prob, self.dev = kind, prob, dev
        self.d = f"{DEBUGFS}/{kind}"

    def __enter__(self):
        d = self.d
        _w(f"{d}/times", -1)
        _w(f"{d}/interval", 1)
        _w(f"{d}/verbose", 0)
        _w(f"{d}/space", 0)
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
        _w(f"{self.d}/probability", 0)
        if self.kind == "fail_make_request":
            _w(f"/sys/block/{os.path.basename(self.dev)}/make-it-fail", 0)
        else:
            _w(f"{self.d}/require-start", 0)
            _w(f"{self.d}/require-end", 0)
        return False


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
        with open(self._path(rel), "rb+") as f:
            os.fsync(f.fileno())
        if self.files[rel] is not None:
            self.model[rel] = self.files[rel]

    def rename(self):
        rel = self._pick()
        d = self.rng.choice(self.dirs)
        new = f"{d}/r{self.rng.randrange(10**6)}".lstrip("/")
        content = self.files.pop(rel)
        self._dirty(rel)
        self._dirty(new)
        os.rename(self._path(rel), self._path(new))
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
        with mount(img.dev, opts=opts) as mnt:
            wl = Workload(mnt, seed, clu)
            wl.run(5)                       # something to start from
            wl.durable(3)                   # fsynced before the faults
            with Faults(kind, prob, img.dev):
                wl.run(OPS)
            ro = "ro" in sh(f"findmnt -no OPTIONS {mnt}").stdout.split(",")
            # with the faults gone the volume must still take writes
            # (unless it went read-only) and write back
            if not ro:
                try:
                    wl.run(5)
                    os.sync()
                except OSError as e:
                    fail(f"after the faults stopped: {e!r}")
            umount(mnt)
        ok, text = crashlib.fsck_verdict(img.dev)
        if not ok:
            fail(f"{kind} {prob}% seed {seed}: fsck.exfat after the "
                 f"faults:\n{text}")
        with mount(img.dev, opts="ro") as mnt:
            for rel, data in sorted(wl.model.items()):
                with open(f"{mnt}/{rel}", "rb") as f:
                    got = f.read()
                assert_eq(len(got), len(data), f"{rel}: size after fsync")
                assert_true(got == data, f"{rel}: content after fsync")
        line = (f"{kind} {prob}% seed {seed} clu {clu} {opts or 'default'}: "
                f"{wl.ok} ok, failed {wl.errnos or '-'}, "
                f"{len(wl.model)} fsynced files intact"
                f"{', went read-only' if ro else ''}")
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


_FILTERS = [a for a in sys.argv[1:] if not a.startswith("-")]
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

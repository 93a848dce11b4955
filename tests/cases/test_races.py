# SPDX-License-Identifier: GPL-2.0
"""Races with a window a few instructions wide, made seconds wide.

tests/kmod/race_hold.ko (built by run-tests.sh) holds one function of
the driver at its entry, on the call whose argument matches, while the
test runs a whole sequence of operations in the window; the held task
spins (a kprobe cannot sleep) until the test lets it go.  It needs
kprobes, which the packaged kernel has and the debug kernel not: these
tests run in the packaged pass only.  Each failed on the module before
the fix it guards (see its doc).
"""

import ctypes
import mmap
import os
import time

from lib import (OUT, Image, TestFailure, assert_eq, assert_true,
                 fork_on_go, mount, sh, test)
from rawfs import Volume
from tree import pattern

PARAMS = "/sys/module/race_hold/parameters"
SYNC_FILE_RANGE_WRITE = 2


class Hold:
    """with Hold(symbol, arg, match) as h: h.arm(); ...; h.wait_held(pid);
    ...; h.release()

    Holds the next calls of symbol (arm(count, pid): count of them, by
    process pid or any) whose argument number arg (from 0; -1: any)
    equals match, one at a time."""

    def __init__(self, symbol, arg=-1, match=0, max_ms=20000, symbol2=None):
        self.args = f"symbol={symbol} arg={arg} match={match} max_ms={max_ms}"
        if symbol2:
            self.args += f" symbol2={symbol2}"

    def __enter__(self):
        ko = os.path.join(OUT, "kmod", "race_hold.ko")
        if not os.path.exists(ko):
            raise TestFailure(f"no {ko}: run-tests.sh builds it from "
                              "tests/kmod (no kernel build tree?)")
        sh(f"insmod {ko} {self.args}")
        return self

    def __exit__(self, *exc):
        self.set("armed", 0)
        self.set("held", 0)
        sh("rmmod race_hold", check=False)

    def set(self, name, value):
        with open(f"{PARAMS}/{name}", "w") as f:
            f.write(f"{value}\n")

    def get(self, name):
        with open(f"{PARAMS}/{name}") as f:
            return int(f.read())

    def arm(self, count=1, pid=0):
        self.set("pid", pid)
        self.set("armed", count)

    def wait_held(self, pid, hit=1, seconds=60):
        """Wait until call number hit is held; fail if pid exits first."""
        end = time.monotonic() + seconds
        while not (self.get("held") and self.get("hits") >= hit):
            done, _ = os.waitpid(pid, os.WNOHANG)
            if done or time.monotonic() > end:
                raise TestFailure(f"race window {hit} was never reached "
                                  f"(race_hold hits={self.get('hits')})")
            time.sleep(0.01)

    def release(self):
        """Let the held call go; fail if it went by itself (max_ms)."""
        if self.get("expired"):
            raise TestFailure("the hold ended before the test let it go "
                              "(max_ms): the window was not covered")
        self.set("held", 0)


def _pin(cpu):
    os.sched_setaffinity(0, {cpu})


def _child(func):
    """Run func in a child on CPU 1 (the held task spins there; the test
    goes on on CPU 0) once go() is called; return (pid, go)."""
    return fork_on_go(func, cpu=1)


def _write(path, off, data, flags=0):
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | flags, 0o644)
    try:
        if flags & os.O_DIRECT:
            buf = mmap.mmap(-1, len(data))     # page aligned
            buf[:] = data
            data = buf
        assert_eq(os.pwritev(fd, [data], off), len(data), f"write {path}")
        if flags & os.O_DIRECT:
            os.fsync(fd)
    finally:
        os.close(fd)


def _read(path):
    with open(path, "rb") as f:
        return f.read()


@test(timeout=300, writes=True)
def writeback_after_truncate():
    """Writeback maps a run of clusters for one folio and reuses it for
    the next ones.  Held between two folios (exfat_map_blocks for the
    second), the file is truncated, its freed clusters go to another
    file that writes them, and the file grows again with new data into
    other clusters; writeback then goes on with the new folios.  They
    must go to the file's new clusters, not through the mapping cached
    before the truncate into the other file's.  Failed before map_seq
    (13c2aaf): the other file read the first one's data."""
    clu = 4096
    n = 64
    old = os.sched_getaffinity(0)
    with open("/proc/sys/vm/dirty_writeback_centisecs") as f:
        period = f.read().strip()
    with Image(size_mb=8, cluster=clu) as img, mount(img.dev) as mnt:
        a, b, g = f"{mnt}/a", f"{mnt}/b", f"{mnt}/g"
        libc = ctypes.CDLL(None, use_errno=True)
        _write(a, 0, pattern(n * clu, 1))
        _write(g, 0, pattern(n * clu, 2))
        sh("sync")
        fd = os.open(f"{mnt}/fill", os.O_WRONLY | os.O_CREAT, 0o644)
        try:
            os.posix_fallocate(fd, 0, os.statvfs(mnt).f_bavail * clu)
        finally:
            os.close(fd)
        assert_eq(os.statvfs(mnt).f_bavail, 0, "volume full")
        sh("sync")
        # a, dirty again; the periodic flusher stays out of the way
        _write(a, 0, pattern(n * clu, 3))
        try:
            with open("/proc/sys/vm/dirty_writeback_centisecs", "w") as f:
                f.write("0\n")
            _pin(0)
            with Hold("exfat_map_blocks", 2, clu) as hold:
                hold.arm()
                fd = os.open(a, os.O_RDONLY)

                def flush():
                    if libc.sync_file_range(fd, ctypes.c_longlong(0),
                                            ctypes.c_longlong(0),
                                            SYNC_FILE_RANGE_WRITE):
                        raise OSError(ctypes.get_errno(), "sync_file_range")

                pid, go = _child(flush)
                go()
                os.close(fd)
                hold.wait_held(pid)
                # folio 1 is held with the run of all 64 clusters mapped
                os.truncate(a, 2 * clu)
                free = os.statvfs(mnt).f_bavail
                assert_eq(free, n - 2, "clusters the truncate freed")
                _write(b, 0, pattern(free * clu, 4), os.O_DIRECT)
                os.unlink(g)
                _write(a, 2 * clu, pattern(n * clu, 5)[2 * clu:])
                hold.release()
                _, status = os.waitpid(pid, 0)
                assert_eq(os.waitstatus_to_exitcode(status), 0,
                          "sync_file_range")
        finally:
            os.sched_setaffinity(0, old)
            with open("/proc/sys/vm/dirty_writeback_centisecs", "w") as f:
                f.write(f"{period}\n")
        sh("sync; echo 3 > /proc/sys/vm/drop_caches")
        want_b = pattern((n - 2) * clu, 4)
        got_b = _read(b)
        if got_b != want_b:
            bad = [i for i in range(n - 2)
                   if got_b[i * clu:(i + 1) * clu] !=
                   want_b[i * clu:(i + 1) * clu]]
            raise TestFailure(f"b: {len(bad)} of {n - 2} clusters hold "
                              f"other data (first: cluster {bad[0]}): "
                              "writeback used a mapping from before the "
                              "truncate")
        want_a = pattern(2 * clu, 3) + pattern(n * clu, 5)[2 * clu:]
        assert_eq(_read(a) == want_a, True, "a reads what was written")


@test(timeout=300, writes=True)
def entry_set_after_its_bitmap():
    """Write-ordering rule 3: an entry set reaches the disk only after the
    FAT and bitmap of every cluster it names.  fsync's write_inode makes
    them durable up to the allocation it read, then reads and writes the
    set; held when it reads the set (exfat_get_entry_set), another
    process extends the file, allocating clusters whose bitmap stays in
    the cache.  At fsync's next barrier (exfat_meta_barrier, held too)
    the set on disk must not name them.  Failed on the module before the
    set was capped to the chain read before the barrier (a crash there
    left a file over clusters free on disk, which the next allocation
    hands out again)."""
    clu = 4096
    old = os.sched_getaffinity(0)
    with open("/proc/sys/vm/dirty_writeback_centisecs") as f:
        period = f.read().strip()
    with Image(size_mb=16, cluster=clu) as img, mount(img.dev) as mnt:
        f = f"{mnt}/f"
        _write(f"{mnt}/other", 0, pattern(3 * clu, 6))
        sh("sync")
        _write(f, 0, pattern(8 * clu, 7))
        try:
            with open("/proc/sys/vm/dirty_writeback_centisecs", "w") as w:
                w.write("0\n")
            _pin(0)
            with Hold("exfat_get_entry_set", symbol2="exfat_meta_barrier"
                      ) as hold:
                fd = os.open(f, os.O_WRONLY)
                pid, go = _child(lambda: os.fsync(fd))
                os.close(fd)
                hold.arm(10, pid)
                go()
                extended = seen = False
                for hit in range(1, 11):
                    hold.wait_held(pid, hit)
                    if hold.get("last") == 1 and not extended:
                        # after the barrier for the first 8 clusters
                        _write(f, 8 * clu, pattern(16 * clu, 8)[8 * clu:])
                        extended = True
                    elif hold.get("last") == 2 and extended:
                        seen = True
                        break
                    hold.release()
                assert_true(seen, "a barrier after the set was read")
                # the set is written: what does the disk say?
                vol = Volume(img.path, write=False)
                try:
                    es, _ = vol.lookup("f")
                    flags, first, _, size = es.stream
                    n = -(-size // clu)
                    chain = vol.chain(first, bool(flags & 2), n)
                    free = [c for c in chain[:n] if not vol.in_use(c)]
                    short = len(chain) < n
                finally:
                    vol.close()
                hold.set("armed", 0)
                hold.release()
                _, status = os.waitpid(pid, 0)
                assert_eq(os.waitstatus_to_exitcode(status), 0, "fsync")
        finally:
            os.sched_setaffinity(0, old)
            with open("/proc/sys/vm/dirty_writeback_centisecs", "w") as w:
                w.write(f"{period}\n")
        if free or short:
            raise TestFailure(
                f"the set on disk names {n} clusters (size {size}) of "
                f"which {len(free)} are free in the bitmap on disk"
                + (" and its FAT chain is shorter" if short else "")
                + ": written before the bitmap and FAT of an allocation")
        assert_eq(size in (8 * clu, 16 * clu), True, f"size {size}")
        fd = os.open(f, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
        sh("echo 3 > /proc/sys/vm/drop_caches")
        assert_eq(_read(f) == pattern(16 * clu, 7)[:8 * clu] +
                  pattern(16 * clu, 8)[8 * clu:], True, "f reads back")


def _vol_dirty(path):
    """VolumeDirty (VolumeFlags bit 1) in the main boot sector on disk."""
    with open(path, "rb") as f:
        f.seek(106)
        return bool(int.from_bytes(f.read(2), "little") & 2)


@test(timeout=300, writes=True)
def volume_dirty_during_sync():
    """VolumeDirty is cleared only when every metadata sector is on disk.
    A create is held in mark_buffer_dirty() for its first sector: it found
    the flag set on disk (no write needed), but its sector is not yet
    counted as dirty.  A syncfs that runs then must leave the flag set,
    else the sector reaches the disk later under a clean flag and a crash
    leaves a "clean" volume with a half-made change.  Failed on the module
    before exfat_clear_vol_dirty() looked at writers still dirtying
    (meta_dirtying, 486cb6f)."""
    old = os.sched_getaffinity(0)
    with Image(size_mb=16, cluster=4096) as img, mount(img.dev) as mnt:
        # the create goes into a directory of its own: it holds that
        # directory's entries, which writeback of an inode there needs
        os.mkdir(f"{mnt}/sub")
        _write(f"{mnt}/first", 0, pattern(5000, 9))
        assert_true(_vol_dirty(img.path), "VolumeDirty set by a write")
        try:
            _pin(0)
            with Hold("mark_buffer_dirty") as hold:
                pid, go = _child(
                    lambda: os.close(os.open(f"{mnt}/sub/second",
                                             os.O_CREAT | os.O_WRONLY)))
                hold.arm(1, pid)
                go()
                hold.wait_held(pid)
                sh(f"sync -f {mnt}")
                dirty = _vol_dirty(img.path)
                hold.release()
                _, status = os.waitpid(pid, 0)
                assert_eq(os.waitstatus_to_exitcode(status), 0, "create")
        finally:
            os.sched_setaffinity(0, old)
        assert_true(dirty, "VolumeDirty on disk after a syncfs while a "
                    "create was dirtying its sector: cleared too early")
        sh(f"sync -f {mnt}")
        assert_true(not _vol_dirty(img.path),
                    "VolumeDirty cleared by a syncfs with no writer")
        assert_true(os.path.exists(f"{mnt}/sub/second"), "second created")

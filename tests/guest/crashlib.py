# SPDX-License-Identifier: GPL-2.0
"""Crash-consistency harness: a seeded namespace/data workload, a model of
what each fsync, fdatasync, directory fsync and sync() made durable, and a
checker for crash images (fsck.exfat -n, then a read-only mount with the
driver under test and a content check).

Used by tests/cases/test_crash.py in two ways:

  replay  the workload runs on a dm-log-writes device; after each sync
          point a log mark is inserted.  The log is then replayed onto the
          starting image and every FLUSH/FUA entry (each one a possible
          power-cut state) is checked; with window_rate, so are states
          inside flush windows: the writes logged between two flushes
          were acknowledged but not durable, and a disk's write-back
          cache may persist any subset of them (class Window).  Such a
          state is judged by the sync points durable at the window's
          start.
  unplug  the workload runs on a dm device whose table is swapped to
          dm-flakey drop_writes at a random moment (every later write is
          lost, as on a power cut with a write-through disk); the device
          left behind is checked.

What a check requires (soundness first: anything a crash may legitimately
produce passes):

  * fsck.exfat -n finds nothing but the findings of a leaked cluster (see
    fsck_classify: exfatprogs 1.2.0 says nothing about VolumeDirty nor
    about a bitmap bit without an owner; it does report a FAT chain longer
    than its file's size, which is the same leak, so that passes after a
    -y repair of a copy shows nothing else behind it).  Two entries owning
    the same clusters, where the mounted tree shows one renamed file or
    directory under its old and its new name, is reported as
    "rename-window", soft: exFAT has no journal, a rename that writes a
    new entry set and deletes the old one is exposed between those two
    writes, and a careful driver even flushes between them (the other
    order, or no flush, risks a file with no name at all after a crash,
    which is a "missing" failure here).  It stays soft only if fsck.exfat
    -y repairs a copy so that, mounted, each such file or directory still
    holds all it held under at least one of its names, and only while the
    rename may still be in flight: once a sync() or fsyncs of both
    parents that followed it are durable at this state, both names are a
    failure.
  * the image mounts read-only and every file and directory of the tree
    can be listed and read without error;
  * for every sync point S that is durable at this state (its mark lies
    before the next logged write, i.e. a crash right after S returned would
    leave this state): each file S covered (fsync/fdatasync: that file;
    sync(): every file) exists and holds what it held at S, unless a later
    operation that may have reached the disk changed it; then its size must
    be the size of one of the versions the file had from S on, and each
    512-byte block must equal that block of one of them (zero-padded past
    its end), or else byte by byte come from them, with zeroes allowed only
    from the end of the shortest version on (a ValidDataLength behind
    DataLength).  "May have reached the disk" = the operation started
    before the first mark logged after this state (replay) or before the
    table swap completed (unplug).  A file deleted or replaced by a rename
    after S may be absent.  Paths are followed through renames of the file
    and of its ancestors (old and new names are both accepted).
  * directory fsync(D) and sync() require the entries of D (of every
    directory) to exist;
  * a required file or directory that is missing is a hard failure when
    each of its ancestor directories was itself required (by sync() or by
    an fsync of its parent); otherwise only the parent's entry was never
    made durable, which POSIX allows: it is reported as "soft".
  * every so many states (cross_every), the in-tree driver must read the
    same names and bytes as exfat2.  Names only it lists whose entry sets
    lie past their directory's DataLength, in clusters the directory's
    chain goes on to (a grown directory's new entries before its new size
    is durable, see past_size), are "in-tree-past-size", soft: exfat2 and
    fsck.exfat read a directory up to its DataLength.

Soft findings are listed but do not fail a test; an operation that fails
on the live file system (before any crash) fails the run ("live").
The replay's last state is after a clean unmount: there the whole tree must
equal the model exactly and VolumeDirty must be clear.
"""

import bisect
import ctypes
import json
import os
import random
import re
import struct
import subprocess
import threading
import time

import rawfs
from lib import OUT, log, sh, use_driver
from replaylog import LOG_DISCARD_FLAG

BLOCK = 512
INF = float("inf")

# ---------------------------------------------------------------- syscalls

_libc = ctypes.CDLL(None, use_errno=True)
_libc.mount.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p,
                        ctypes.c_ulong, ctypes.c_char_p]
_libc.umount2.argtypes = [ctypes.c_char_p, ctypes.c_int]
MS_RDONLY = 1
BLKFLSBUF = 0x1261


def sys_mount(dev, mnt, opts="", ro=True):
    r = _libc.mount(dev.encode(), mnt.encode(), b"exfat",
                    MS_RDONLY if ro else 0, opts.encode() or None)
    if r != 0:
        e = ctypes.get_errno()
        raise OSError(e, f"mount {dev}: {os.strerror(e)}")


def sys_umount(mnt):
    if _libc.umount2(mnt.encode(), 0) != 0:
        e = ctypes.get_errno()
        raise OSError(e, f"umount {mnt}: {os.strerror(e)}")


def flushbufs(dev):
    import fcntl
    fd = os.open(dev, os.O_RDONLY)
    try:
        fcntl.ioctl(fd, BLKFLSBUF, 0)
    finally:
        os.close(fd)


def fsync_dev(dev):
    """fsync on a block device issues a cache FLUSH to it."""
    fd = os.open(dev, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def dmesg_tail(n=8):
    return sh(f"dmesg | tail -n {n}", check=False).stdout.strip()


# ------------------------------------------------------------------- model

class Ent:
    """A file ('f') or directory ('d') of the model."""

    def __init__(self, eid, kind, parent, name, seq, content=b""):
        self.id, self.kind = eid, kind
        self.parent, self.name = parent, name
        self.locs = [(seq, parent.id if parent else None, name)]
        self.versions = [(seq, content)] if kind == "f" else []
        self.children = {} if kind == "d" else None
        self.deleted = None      # seq of the unlink/rmdir/replacing rename

    @property
    def content(self):
        return self.versions[-1][1]

    def path(self):
        if self.parent is None:
            return ""
        return self.parent.path() + "/" + self.name


class SyncPoint:
    """A returned fsync/fdatasync/sync()/directory fsync."""

    def __init__(self, idx, seq, kind, what, content_ids, exist_ids):
        self.idx, self.seq, self.kind, self.what = idx, seq, kind, what
        self.name = f"sp{idx}"
        self.content_ids = content_ids     # files whose content is required
        self.exist_ids = exist_ids         # entities that must exist
        self.dir_id = None                 # dirfsync: the directory

    def describe(self):
        return f"{self.name} (op {self.seq}: {self.kind} {self.what})"


class Model:
    def __init__(self):
        self.seq = 0
        self.root = Ent(0, "d", None, "", 0)
        self.ents = {0: self.root}
        self.syncs = []
        self.oplog = []             # (seq, text) of every operation

    def new(self, kind, parent, name, content=b""):
        e = Ent(len(self.ents), kind, parent, name, self.seq, content)
        self.ents[e.id] = e
        parent.children[name] = e
        return e

    def live(self, kind=None):
        return [e for e in self.ents.values()
                if e.deleted is None and e is not self.root
                and (kind is None or e.kind == kind)]

    def set_content(self, e, data):
        e.versions.append((self.seq, data))

    def move(self, e, parent, name):
        del e.parent.children[e.name]
        e.parent, e.name = parent, name
        parent.children[name] = e
        e.locs.append((self.seq, parent.id, name))

    def delete(self, e):
        del e.parent.children[e.name]
        e.deleted = self.seq

    def add_sync(self, kind, what, content_ids, exist_ids):
        sp = SyncPoint(len(self.syncs), self.seq, kind, what, content_ids,
                       exist_ids)
        self.syncs.append(sp)
        return sp

    # ---- queries for the checker

    def paths(self, e, horizon, memo):
        """Every path e may be found at, following the renames of e and of
        its ancestors made by operations with seq <= horizon.

        Over time the parent links can form a cycle (B moved out of A,
        then A moved into B): a path never passes through one entity
        twice, and a result cut short by such a cycle is not memoized,
        since it is only partial for the entity being asked about."""
        return self._paths(e, horizon, memo, set())[0]

    def _paths(self, e, horizon, memo, chain):
        if e is self.root:
            return {""}, False
        if e.id in memo:
            return memo[e.id], False
        if e.id in chain:
            return set(), True
        chain.add(e.id)
        out, cut = set(), False
        for seq, pid, name in e.locs:
            if seq > horizon:
                break
            pps, c = self._paths(self.ents[pid], horizon, memo, chain)
            cut |= c
            for pp in pps:
                out.add(pp + "/" + name)
        chain.discard(e.id)
        if not cut:
            memo[e.id] = out
        return out, cut

    def parent_at(self, e, seq):
        pid = None
        for s, p, _ in e.locs:
            if s > seq:
                break
            pid = p
        return self.ents[pid]

    def versions_from(self, e, seq, horizon):
        """Contents e may have: the one it had at op `seq` and every later
        one made by an operation with seq <= horizon."""
        out = []
        for s, data in e.versions:
            if s <= seq:
                out = [data]
            elif s <= horizon:
                out.append(data)
        return out


# ---------------------------------------------------------------- workload

_ALNUM = "abcdefghijklmnopqrstuvwxyz0123456789_"


class WorkloadError(Exception):
    pass


class Workload:
    """Seeded random operations on `mnt`, mirrored in `model`.  on_sync(sp)
    is called after each sync point returned (the replay test logs a mark
    there)."""

    WEIGHTS = [("create", 10), ("append", 10), ("overwrite", 9),
               ("truncate", 5), ("rename_file", 7), ("rename_dir", 2),
               ("unlink", 5), ("mkdir", 3), ("rmdir", 2), ("fsync", 14),
               ("fdatasync", 8), ("sync", 2), ("dirfsync", 3)]

    def __init__(self, mnt, seed, cluster, model=None, on_sync=None,
                 max_files=40):
        self.mnt, self.seed, self.cluster = mnt, seed, cluster
        self.rng = random.Random(seed)
        self.model = model or Model()
        self.on_sync = on_sync or (lambda sp: None)
        self.max_files = max_files
        self.max_size = max(16384, min(8 * cluster, 65536))
        self.names = 0
        self.recent = []            # recently modified files, newest last
        ops, weights = zip(*self.WEIGHTS)
        self.ops, self.weights = ops, weights
        self.stats = {}
        self.notes = set()

    def p(self, e):
        return self.mnt + e.path()

    def fresh(self, prefix):
        self.names += 1
        # up to 255 characters: sets of up to 19 entries; over 210 they
        # fill more than a 512 B sector (see torn_long) and cross
        # clusters of 512 B, which fsck.exfat misreads in fragmented
        # directories (see fsck_classify)
        base = f"{prefix}{self.names}"
        extra = self.rng.choice([0, 0, 3, 10, 17, 30, 47, 120, 205, 230,
                                 255])
        return base + "".join(self.rng.choice(_ALNUM)
                              for _ in range(min(extra, 255 - len(base))))

    def _note(self, text):
        self.model.oplog.append((self.model.seq, text))

    def _touched(self, e):
        if e in self.recent:
            self.recent.remove(e)
        self.recent.append(e)
        del self.recent[:-4]

    def _data(self, n):
        return self.rng.randbytes(n)

    def _size(self):
        r = self.rng.random()
        if r < 0.15:
            return 0
        if r < 0.5:
            return self.rng.randrange(1, self.cluster + 1)
        return self.rng.randrange(1, self.max_size)

    def _pick_file(self, prefer_recent=False):
        files = self.model.live("f")
        if not files:
            return None
        rec = [e for e in self.recent if e.deleted is None]
        if prefer_recent and rec and self.rng.random() < 0.7:
            return self.rng.choice(rec)
        return self.rng.choice(files)

    def _dirs(self):
        return [self.model.root] + self.model.live("d")

    def _depth(self, d):
        n = 0
        while d.parent is not None:
            d, n = d.parent, n + 1
        return n

    def setup(self, ndirs=3):
        """A few directories and files, made durable by sync()."""
        for _ in range(ndirs):
            self.model.seq += 1
            self.op_mkdir()
        for _ in range(4):
            self.model.seq += 1
            self.op_create()
        self.model.seq += 1
        self.op_sync()

    def step(self):
        """Run one random operation."""
        self.model.seq += 1
        op = self.rng.choices(self.ops, self.weights)[0]
        nfiles = len(self.model.live("f"))
        if op == "create" and nfiles >= self.max_files:
            op = "unlink"
        if op in ("append", "overwrite", "truncate", "rename_file", "unlink",
                  "fsync", "fdatasync") and nfiles == 0:
            op = "create"
        t = time.monotonic()
        getattr(self, "op_" + op)()
        n, secs = self.stats.get(op, (0, 0.0))
        self.stats[op] = (n + 1, round(secs + time.monotonic() - t, 3))
        return op

    # ---- operations; each updates the model right after the syscall

    def _target_dir(self):
        """Half the time the fullest directory, so that directories keep
        growing past cluster boundaries (entry sets then straddle them)."""
        dirs = self._dirs()
        if self.rng.random() < 0.5:
            return max(dirs, key=lambda d: len(d.children))
        return self.rng.choice(dirs)

    def op_create(self):
        d = self._target_dir()
        name = self.fresh("f")
        data = self._data(self._size())
        e = None
        path = self.mnt + d.path() + "/" + name
        fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
        try:
            e = self.model.new("f", d, name, b"")
            self._note(f"create {e.path()}")
            if data:
                self._write_all(fd, data, 0)
                self.model.set_content(e, data)
                self._note(f"write {e.path()} 0+{len(data)}")
        finally:
            os.close(fd)
        self._touched(e)

    def _write_all(self, fd, data, off):
        done = 0
        while done < len(data):
            done += os.pwrite(fd, data[done:], off + done)

    def op_append(self):
        e = self._pick_file(prefer_recent=True)
        old = e.content
        n = self.rng.randrange(1, max(2, min(self.max_size - len(old),
                                              3 * self.cluster)))
        if len(old) + n > 2 * self.max_size:
            return self.op_truncate()
        data = self._data(n)
        fd = os.open(self.p(e), os.O_WRONLY | os.O_APPEND)
        try:
            self._write_all(fd, data, len(old))
        finally:
            os.close(fd)
        self.model.set_content(e, old + data)
        self._note(f"append {e.path()} {len(old)}+{n}")
        self._touched(e)

    def op_overwrite(self):
        e = self._pick_file(prefer_recent=True)
        old = e.content
        off = self.rng.randrange(0, len(old) + 1)
        if self.rng.random() < 0.3:     # block aligned, often a whole page
            off -= off % BLOCK
        n = self.rng.randrange(1, 2 * self.cluster + 2)
        data = self._data(n)
        fd = os.open(self.p(e), os.O_WRONLY)
        try:
            self._write_all(fd, data, off)
        finally:
            os.close(fd)
        new = old[:off] + data + old[off + n:]
        self.model.set_content(e, new)
        self._note(f"overwrite {e.path()} {off}+{n}")
        self._touched(e)

    def op_truncate(self):
        e = self._pick_file(prefer_recent=True)
        old = e.content
        if self.rng.random() < 0.6 or len(old) >= self.max_size:
            n = self.rng.randrange(0, len(old) + 1)
        else:
            n = self.rng.randrange(len(old), self.max_size + 1)
        os.truncate(self.p(e), n)
        self.model.set_content(e, old[:n] + bytes(max(0, n - len(old))))
        self._note(f"truncate {e.path()} {len(old)}->{n}")
        self._touched(e)

    def op_rename_file(self):
        e = self._pick_file()
        others = [f for f in self.model.live("f") if f is not e]
        old = e.path()
        if others and self.rng.random() < 0.2:
            victim = self.rng.choice(others)
            d, name = victim.parent, victim.name
            os.rename(self.p(e), self.p(victim))
            self.model.delete(victim)
            self._note(f"rename {old} over {victim.path()} "
                       f"(replaces file {victim.id})")
        else:
            d = self._target_dir()
            name = self.fresh("r")
            os.rename(self.p(e), self.mnt + d.path() + "/" + name)
        self.model.move(e, d, name)
        self._note(f"rename {old} -> {e.path()}")
        self._touched(e)

    def op_rename_dir(self):
        dirs = self.model.live("d")
        if not dirs:
            return self.op_mkdir()
        d = self.rng.choice(dirs)

        def inside(x):
            while x is not None:
                if x is d:
                    return True
                x = x.parent
            return False
        targets = [t for t in self._dirs() if not inside(t)
                   and self._depth(t) + self._subtree_depth(d) < 6]
        if not targets:
            return self.op_mkdir()
        t = self.rng.choice(targets)
        name = self.fresh("D")
        old = d.path()
        os.rename(self.p(d), self.mnt + t.path() + "/" + name)
        self.model.move(d, t, name)
        self._note(f"rename dir {old} -> {d.path()}")

    def _subtree_depth(self, d):
        kids = [c for c in d.children.values() if c.kind == "d"]
        return 1 + max((self._subtree_depth(c) for c in kids), default=0)

    def op_unlink(self):
        e = self._pick_file()
        if e is None:
            return self.op_create()
        os.unlink(self.p(e))
        self._note(f"unlink {e.path()}")
        self.model.delete(e)

    def op_mkdir(self):
        dirs = [d for d in self._dirs() if self._depth(d) < 4]
        d = self.rng.choice(dirs)
        name = self.fresh("d")
        os.mkdir(self.mnt + d.path() + "/" + name)
        e = self.model.new("d", d, name)
        self._note(f"mkdir {e.path()}")

    def op_rmdir(self):
        empty = [d for d in self.model.live("d") if not d.children]
        if not empty:
            return self.op_mkdir()
        d = self.rng.choice(empty)
        os.rmdir(self.p(d))
        self._note(f"rmdir {d.path()}")
        self.model.delete(d)

    def _check_live(self, e):
        with open(self.p(e), "rb") as f:
            got = f.read()
        if got != e.content:
            raise WorkloadError(
                f"seed {self.seed} op {self.model.seq}: {e.path()} reads "
                f"{len(got)} bytes that differ from the {len(e.content)} "
                f"written (before any crash)")

    def op_fsync(self, data_only=False):
        e = self._pick_file(prefer_recent=True)
        fd = os.open(self.p(e), os.O_RDWR)
        try:
            (os.fdatasync if data_only else os.fsync)(fd)
        finally:
            os.close(fd)
        kind = "fdatasync" if data_only else "fsync"
        self._note(f"{kind} {e.path()}")
        self._check_live(e)
        sp = self.model.add_sync(kind, e.path(), [e.id], [e.id])
        self.on_sync(sp)

    def op_fdatasync(self):
        self.op_fsync(data_only=True)

    def op_sync(self):
        os.sync()
        self._note("sync")
        live = self.model.live()
        sp = self.model.add_sync("sync", "", [e.id for e in live
                                              if e.kind == "f"],
                                 [e.id for e in live])
        self.on_sync(sp)

    def op_dirfsync(self):
        d = self.rng.choice(self._dirs())
        fd = os.open(self.p(d) or self.mnt, os.O_RDONLY | os.O_DIRECTORY)
        try:
            os.fsync(fd)
        except OSError as e:
            # Not a crash-consistency failure; noted in the results.
            self.notes.add(f"fsync on a directory fails: {e}")
            return
        finally:
            os.close(fd)
        self._note(f"fsync dir {d.path() or '/'}")
        sp = self.model.add_sync("dirfsync", d.path() or "/", [],
                                 [c.id for c in d.children.values()])
        sp.dir_id = d.id
        self.on_sync(sp)


# ----------------------------------------------------------------- checker

# What fsck.exfat (exfatprogs 1.2.0) prints, line by line.  -n answers "n"
# to every repair question, -y answers "y".
_FSCK_SUMMARY = re.compile(r"^\S+: (clean|corrupted)\. directories \d+, "
                           r"files \d+$|^\S+: files corrupted \d+, files "
                           r"fixed \d+$")
# A file's or directory's FAT chain longer than its DataLength.  This is
# what a leaked cluster looks like when the file has a FAT chain: a crash
# between linking a new cluster and publishing the larger size (growth), or
# between publishing the smaller size and freeing the tail (shrink), both
# the safe orders, leaves exactly this.  The tail past DataLength holds no
# data of the file.
_FSCK_BENIGN = re.compile(r"^ERROR: .*: more clusters are allocated\. "
                          r"truncate to \d+ bytes at 0x[0-9a-f]+\. "
                          r"Truncate \(y/N\)\? [yn]$")


def fsck_start(dev, mode="-n"):
    """Start fsck.exfat; _fsck(proc=) collects it (it can run while the
    same device is mounted read-only)."""
    return subprocess.Popen(["fsck.exfat", mode, dev],
                            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True,
                            errors="replace")


def _fsck(dev, mode, proc=None):
    p = proc or fsck_start(dev, mode)
    out = p.communicate()[0].strip()
    lines = [ln for ln in out.splitlines()
             if ln and not ln.startswith("exfatprogs version")]
    return p.returncode, lines


# Two entries that own the same clusters: what a cross-directory rename
# (or a rename that needs a bigger entry set) looks like between writing
# the new entry set and deleting the old one.  exFAT has no journal, so a
# driver can only choose this window or one where the file has no name at
# all; see Checker._dup.
_FSCK_DUP = re.compile(r"^ERROR: (.*): cluster is already allocated for "
                       r"the other file\. truncated to \d+ bytes at "
                       r"0x[0-9a-f]+\. Truncate \(y/N\)\? [yn]$")


def fsck_dup_paths(text):
    """The paths of fsck.exfat's _FSCK_DUP findings in text."""
    return [m.group(1) for m in map(_FSCK_DUP.match, text.splitlines())
            if m]


# What -y then also repairs in a file it truncated to 0 bytes: a file
# without clusters must not claim a contiguous (NoFatChain) allocation.
# An entry set whose sectors were not all written: its checksum is wrong,
# and fsck then calls each in-use secondary entry after the File entry an
# unknown entry.  At a flush point this is a driver bug (all of a set is
# written before any flush); after a cut that drops writes at an arbitrary
# moment it can be the cut landing between the two sector writes of a set
# that straddles a sector boundary, which no write order avoids: exfat2
# never places a set of up to 16 entries across one (write-ordering rule
# 7), the in-tree driver does (unplug_run's soft_torn, for it only).
_FSCK_TORN = re.compile(r"^ERROR: .*: (the checksum of a file is wrong|"
                        r"unknown entry type 0xc[01] at [0-9a-f]+) at "
                        r"0x[0-9a-f]+\. Delete \(y/N\)\? [yn]$")


_FSCK_FOLLOWUP = re.compile(r"^ERROR: .*: empty, but has no Fat chain at "
                            r"0x[0-9a-f]+\. Fix \(y/N\)\? y$")


# What the strict checker reports that a crash may leave (rule 4 and
# _FSCK_BENIGN): clusters leaked, a chain longer than its size; and, with
# a _FSCK_DUP finding, a cluster in two chains.
_XCHECK_BENIGN = re.compile(r"clusters marked in use that no chain owns|"
                            r": chain goes on past its ")
_XCHECK_DUP = re.compile(r"^cluster \d+ in two chains: ")
_MISREAD = "-- fsck.exfat findings left out as misreads:"
_OFFSET = re.compile(r"at 0x([0-9a-f]+)\. \S+ \(y/N\)\? [yn]$")


def torn_long(dev, lines):
    """Whether every _FSCK_TORN finding of lines is in an entry set of
    more entries than a sector holds: such a set is written in two sector
    writes (a rename's or an fsync's with FUA each, so a flush point can
    fall between them), and a power cut between them tears it whatever
    the order.  That loses no file that has to survive: one whose set was
    durable is rewritten in one sector write (rule 7: its File and Stream
    entries share a sector), and the caller's model check still requires
    every durable file.  A finding is located by its offset: a File
    entry's, or a secondary's, whose primary is looked for up to 18
    entries before it; a name entry starting a sector is the second half
    of such a set (exfat2 never puts a shorter set across sectors)."""
    torn = [ln for ln in lines if _FSCK_TORN.match(ln)]
    if not torn:
        return False
    with open(dev, "rb") as f:
        ss = 1 << f.read(512)[108]

        def spans(off):
            for k in range(19):
                o = off - 32 * k
                if o < 0:
                    return False
                f.seek(o)
                t, n = f.read(2)
                if t in (0x85, 0x05):
                    return k <= n and o % ss + (n + 1) * 32 > ss
                if t not in (0xC0, 0xC1):
                    return False
                if t == 0xC1 and o % ss == 0:
                    return True
            return False
        for ln in torn:
            m = _OFFSET.search(ln)
            if not m or not spans(int(m.group(1), 16)):
                return False
    return True


def fsck_classify(dev, proc=None,
                  scratch="/tmp/exfat2-images/fsck-scratch.img"):
    """("clean" | "benign" | "dup" | "torn" | "fail", text) for a crash
    image.

    exfatprogs 1.2.0 prints "<dev>: clean. directories N, files M" and
    exits 0 when it finds nothing.  It has no message at all for the
    VolumeDirty flag (it never reads it) nor for clusters marked used in
    the bitmap that no file owns (it only complains about the opposite,
    "cluster %#x is marked as free"), so those two are "clean" by
    construction (crash:fsck_benign proves it on real images).  The one
    finding it does print for a leaked cluster is a FAT chain longer than
    the file's size: "ERROR: <path>: more clusters are allocated. truncate
    to N bytes at 0xOFF. Truncate (y/N)? n" (exit 4): "benign".  "dup":
    the findings also include "cluster is already allocated for the other
    file" (see _FSCK_DUP); "torn": an entry set with a wrong checksum
    (see _FSCK_TORN); the caller decides for both.  With -n fsck stops
    checking a file at its first finding, and does not descend into such
    a directory, so whatever lies behind it is unchecked: for "benign",
    "dup" and "torn" a copy is repaired with -y (which goes on after each
    repair), and must report nothing else.  Any other line, "ERROR: ..." or an
    unknown one, is "fail".

    Findings that are fsck.exfat's misreads of valid sets (a set of a
    long name crossing into a cluster that is not the adjacent one:
    rawfs.fsck_misreads checks each on the raw image) are left out; the
    volume is then judged behind them by the strict checker (xcheck.py)
    instead of a repair, which would delete those sets."""
    rc, lines = _fsck(dev, "-n", proc)
    errors = [ln for ln in lines if not _FSCK_SUMMARY.match(ln)]
    if rc == 0 and not errors and any(": clean." in ln for ln in lines):
        return "clean", "clean"
    text = "\n".join(lines)
    misread = rawfs.fsck_misreads(dev, errors)
    if misread:
        errors = [ln for ln in errors if ln not in misread]
        text = "\n".join([ln for ln in lines if ln not in misread] +
                          [f"{_MISREAD} {len(misread)} (sets across "
                           "clusters; xcheck.py judged the volume)"])

    def known(ln):
        return (_FSCK_BENIGN.match(ln) or _FSCK_DUP.match(ln)
                or _FSCK_TORN.match(ln))
    # fsck.exfat 1.2.0 exits 0, "clean", after some unknown-entry
    # findings in the root
    if rc not in (0, 4) or not (errors or misread) or \
            not all(known(ln) for ln in errors):
        return "fail", text
    ndup = sum(1 for ln in errors if _FSCK_DUP.match(ln))
    ntorn = sum(1 for ln in errors if _FSCK_TORN.match(ln))
    if misread:
        import xcheck
        bad = [p for p in xcheck.check(dev) if not _XCHECK_BENIGN.search(p)
               and not (ndup and _XCHECK_DUP.match(p))]
        if bad:
            return "fail", (text + "\n-- xcheck.py:\n" +
                            "\n".join(bad[:20]))
    else:
        _sparse_copy(dev, scratch)
        try:
            rc2, lines2 = _fsck(scratch, "-y")
        finally:
            os.unlink(scratch)
        bad2 = [ln for ln in lines2 if not _FSCK_SUMMARY.match(ln)
                and not known(ln) and not _FSCK_FOLLOWUP.match(ln)]
        if rc2 not in (0, 1) or bad2:
            return "fail", (text + "\n-- a copy repaired with -y:\n"
                            + "\n".join(lines2))
    if ndup and ntorn:
        return "fail", text
    if ndup:
        return "dup", text
    if ntorn:
        return "torn", text
    if not errors:
        return "clean", text
    return "benign", f"benign: {len(errors)} FAT chains longer than the size"


def fsck_verdict(dev):
    """(ok, text): fsck_classify() says "clean" or "benign"."""
    kind, text = fsck_classify(dev)
    return kind in ("clean", "benign"), text


def _sparse_copy(src, dst, chunk=1 << 20, limit=None):
    with open(src, "rb") as f, open(dst, "wb") as g:
        zero = bytes(chunk)
        left = limit
        while left is None or left > 0:
            b = f.read(chunk if left is None else min(chunk, left))
            if not b:
                break
            if left is not None:
                left -= len(b)
            if b == zero[:len(b)]:
                g.seek(len(b), os.SEEK_CUR)
            else:
                g.write(b)
        g.truncate()


def content_verdict(data, versions):
    """None if `data` is a state a crash may leave the file in, given the
    versions it may have (see the module doc), else the reason.

    Each 512-byte block must equal that block of one version, zero-padded
    past the version's end; or, byte by byte, each byte must be that byte
    of some version, or a zero at or past the end of the shortest version
    (a ValidDataLength that had not caught up with DataLength yet reads as
    zeroes from a byte offset, not from a block boundary)."""
    if any(data == v for v in versions):
        return None
    sizes = sorted({len(v) for v in versions})
    if len(data) not in sizes:
        return f"size {len(data)}, allowed {sizes}"
    n = len(data)
    shortest = sizes[0]
    padded = [v[:n].ljust(n, b"\0") for v in versions]
    for off in range(0, n, BLOCK):
        blk = data[off:off + BLOCK]
        if any(p[off:off + BLOCK] == blk for p in padded):
            continue
        for j in range(off, off + len(blk)):
            b = data[j]
            if b == 0 and j >= shortest:
                continue
            if any(len(v) > j and v[j] == b for v in versions):
                continue
            what = "zeroes" if not blk.strip(b"\0") else "other bytes"
            return (f"size {n} ok, but the block at {off} ({what}; byte {j}"
                    f" = {b:#04x}) matches none of the {len(versions)} "
                    f"allowed versions")
    return None


class Failure(dict):
    def line(self):
        return (f"[{self.get('run')}] {self.get('where')}: {self['kind']}: "
                f"{self['detail']}")


def walk(mnt):
    """{relative path: bytes or None for a directory}; errors -> list."""
    tree, errors = {}, []

    def rec(rel):
        try:
            with os.scandir(mnt + rel) as it:
                ents = list(it)
        except OSError as e:
            errors.append(f"listing {rel or '/'}: {e}")
            return
        for de in ents:
            r = rel + "/" + de.name
            try:
                if de.is_dir(follow_symlinks=False):
                    tree[r] = None
                    rec(r)
                else:
                    with open(mnt + r, "rb") as f:
                        tree[r] = f.read()
            except OSError as e:
                errors.append(f"reading {r}: {e}")
    rec("")
    return tree, errors


def past_size(dev, paths):
    """The paths (names only the in-tree driver lists) whose entry set lies,
    at least in part, past its directory's DataLength, in clusters the
    directory's FAT chain goes on to, and the paths below them.  exfat2
    and fsck.exfat read a directory up to its DataLength, the in-tree
    driver up to the end of its chain.  A crash after a directory grew by
    a linked, zeroed cluster and a new entry set went into it, before the
    larger DataLength in the parent's set reached the disk (the two
    writes share a flush window), leaves exactly this: fsck's _FSCK_BENIGN
    finding on the directory, and a name that was never made durable
    (check_state still requires every durable name of exfat2's view)."""
    found = set()
    if not paths:
        return found
    vol = rawfs.Volume(dev, write=False)
    try:
        for p in sorted(paths):
            parent, _, name = p.rpartition("/")
            if any(parent == q or parent.startswith(q + "/")
                   for q in found):
                found.add(p)
                continue
            if not parent:
                continue            # the root has no DataLength
            try:
                dset, _ = vol.lookup(parent)
                flags, first, _, size = dset.stream
                if flags & 2 or not dset.is_dir:
                    continue
                chain = vol.chain(first)
                if len(chain) * vol.clu <= size:
                    continue
                for es in vol.sets(chain):
                    if es.name == name:
                        if (es.eidx + len(es.entries)) * 32 > size:
                            found.add(p)
                        break
            except (StopIteration, struct.error, ValueError, IndexError):
                continue        # a crash image the walk cannot follow
    finally:
        vol.close()
    return found


_READ_ERROR = re.compile(r"^(?:reading|listing) (.*?): \[Errno ")


def _path_of(err):
    m = _READ_ERROR.match(err)
    return m.group(1) if m else None


def torn_sets(dev, paths):
    """The paths whose entry set, found by name in the raw image (by its
    first 15 characters), has a wrong SetChecksum: a set torn by a crash (a set longer than a sector,
    see torn_long).  exfat2 rejects such a set; the in-tree driver checks
    no checksum, lists the name and may then fail to open it."""
    found = set()
    if not paths:
        return found
    vol = rawfs.Volume(dev, write=False)
    try:
        for p in sorted(paths):
            parent, _, name = p.rpartition("/")
            try:
                if parent:
                    dset, _ = vol.lookup(parent)
                    flags, first, _, _ = dset.stream
                    clusters = (vol.dir_clusters(dset) if flags & 2
                                else vol.chain(first))
                else:
                    clusters = vol.chain(vol.root)
                # a torn set's NameLength and name entries may come from
                # two versions: its first name entry is matched
                for es in vol.sets(clusters):
                    csum = struct.unpack_from("<H", es.entries[0], 2)[0]
                    if es.name[:15] == name[:15] and \
                            csum != rawfs.set_checksum(es.entries):
                        found.add(p)
                        break
            except (StopIteration, struct.error, ValueError, IndexError,
                    UnicodeDecodeError):
                continue
    finally:
        vol.close()
    return found


class Requirements:
    """The sync points durable at a state, accumulated in order."""

    def __init__(self, model):
        self.model = model
        self.content = {}       # entity id -> seq of its latest content req
        self.exists = {}        # entity id -> seq of its latest req
        self.count = 0
        self.points = []        # the sync points, in order

    def add(self, sp):
        self.points.append(sp)
        for i in sp.content_ids:
            self.content[i] = sp.seq
        for i in sp.exist_ids:
            self.exists[i] = sp.seq
        self.count += 1


def check_state(model, reqs, horizon, tree):
    """Failures (kind, detail, soft) of the mounted tree against reqs."""
    out = []
    memo = {}
    for eid, seq in reqs.exists.items():
        e = model.ents[eid]
        if e.deleted is not None and e.deleted <= horizon:
            continue                    # may be gone
        cands = sorted(model.paths(e, horizon, memo))
        found = [p for p in cands if p in tree
                 and (tree[p] is None) == (e.kind == "d")]
        if not found:
            # Hard only if every ancestor's entry was required too.
            soft, a = False, model.parent_at(e, seq)
            while a is not model.root:
                if a.id not in reqs.exists:
                    soft = True
                    break
                a = model.parent_at(a, reqs.exists[a.id])
            kind = "dir" if e.kind == "d" else "file"
            why = ("; an ancestor directory was never made durable, which "
                   "POSIX allows" if soft else "")
            out.append(("missing", f"{kind} {e.id} (required since op "
                        f"{seq}) is at none of {cands}{why}", soft))
            continue
        cseq = reqs.content.get(eid)
        if cseq is None:
            continue
        allowed = model.versions_from(e, cseq, horizon)
        reasons = []
        for p in found:
            why = content_verdict(tree[p], allowed)
            if why is None:
                break
            reasons.append(f"{p}: {why}")
        else:
            out.append(("content", f"file {e.id} (content required since "
                        f"op {cseq}, {len(allowed)} allowed versions): "
                        + "; ".join(reasons), False))
    return out


def check_final(model, tree):
    """The tree after a clean unmount must equal the model."""
    want = {}
    for e in model.live():
        want[e.path()] = None if e.kind == "d" else e.content
    out = []
    for p in sorted(set(want) | set(tree)):
        if p not in tree:
            out.append(f"{p}: missing")
        elif p not in want:
            out.append(f"{p}: unexpected")
        elif (want[p] is None) != (tree[p] is None):
            out.append(f"{p}: wrong type")
        elif want[p] is not None and want[p] != tree[p]:
            out.append(f"{p}: content differs ({len(tree[p])} bytes, "
                       f"want {len(want[p])})")
    return out


class Laps:
    """lap(name) adds the time since the previous lap to `name`."""

    def __init__(self):
        self.t = time.monotonic()
        self.acc = {}

    def __call__(self, name):
        now = time.monotonic()
        self.acc[name] = self.acc.get(name, 0.0) + now - self.t
        self.t = now

    def report(self):
        return {k: round(v, 1) for k, v in self.acc.items()}


def repair_loses(dev, tree, pairs, mnt, opts="",
                 scratch="/tmp/exfat2-images/dup-repair.img"):
    """Repair a copy of dev with fsck.exfat -y and mount it read-only at
    mnt: each file or directory that tree (walk() of dev) shows under the
    names of one of pairs must keep, under at least one of them, what it
    held (the whole subtree, for a directory; a file may come back longer
    by zero bytes, see kept()).  Returns what was lost, or ""."""
    def sub(t, p):
        return {k[len(p):]: v for k, v in t.items()
                if k == p or k.startswith(p + "/")}

    def kept(before, after):
        # fsck.exfat 1.2.0 repairs a FAT chain longer than the file by
        # setting DataLength to the chain it keeps, whole clusters: the
        # file may come back longer, the added bytes zero
        if before.keys() != after.keys():
            return False
        for k, b in before.items():
            a = after[k]
            if (a is None) != (b is None) or (b is not None and (
                    a[:len(b)] != b or a[len(b):].strip(b"\0"))):
                return False
        return True
    _sparse_copy(dev, scratch)
    loop = None
    try:
        rc, lines = _fsck(scratch, "-y")
        if rc not in (0, 1):
            return f"fsck.exfat -y exit status {rc}: {lines}"
        loop = sh(f"losetup -f --show -r {scratch}").stdout.strip()
        os.makedirs(mnt, exist_ok=True)
        sys_mount(loop, mnt, opts, ro=True)
        try:
            rtree, errors = walk(mnt)
        finally:
            sys_umount(mnt)
        if errors:
            return f"reading the repaired copy: {errors[:3]}"
        lost = [" and ".join(ps) for ps in pairs
                if not any(kept(sub(tree, p), sub(rtree, p)) for p in ps)]
        return "; ".join(f"neither of {x} holds all it held" for x in lost)
    finally:
        if loop:
            sh(f"losetup -d {loop}", check=False)
        os.unlink(scratch)


class Checker:
    """Checks crash states of one device (fsck, ro mount, requirements)."""

    def __init__(self, model, dev, mnt, run, driver_opts="", driver=None,
                 cross_every=0):
        self.model, self.dev, self.mnt, self.run = model, dev, mnt, run
        self.opts = driver_opts
        # every cross_every-th state (and the last) is also read by the
        # in-tree driver, whose view must be exfat2's (driver "ours")
        self.driver, self.cross_every = driver, cross_every
        self.crossed = 0
        self.failures = []
        self.checked = 0
        self.fscked = 0
        self.soft = 0
        self.benign = 0         # states whose only fsck finding is benign
        self.misread = 0        # states with fsck.exfat misreads left out
        self.rename_window_soft = True
        self.torn_soft = False      # see _FSCK_TORN
        self._fsck_cache = None

    def _fail(self, where, kind, detail, soft=False):
        f = Failure(run=self.run, where=where, kind=kind, detail=detail,
                    soft=soft)
        if soft:
            self.soft += 1
        self.failures.append(f)
        log(("SOFT " if soft else "FAIL ") + f.line())

    def check(self, where, reqs, horizon, state_changed=True, final=False,
              lap=None):
        lap = lap or Laps()
        self.checked += 1
        # fsck runs while the image is mounted read-only and read.
        proc = None
        if state_changed or self._fsck_cache is None:
            proc = fsck_start(self.dev)
        tree = None
        try:
            sys_mount(self.dev, self.mnt, self.opts, ro=True)
        except OSError as e:
            self._fail(where, "mount", f"{e}\n{dmesg_tail(4)}")
        else:
            try:
                tree, errors = walk(self.mnt)
            finally:
                sys_umount(self.mnt)
        lap("mount+read")
        if proc:
            self._fsck_cache = fsck_classify(self.dev, proc)
            self.fscked += 1
            lap("fsck")
        verdict, out = self._fsck_cache
        self.misread += _MISREAD in out
        if verdict == "fail":
            self._fail(where, "fsck", out)
        elif verdict == "torn":
            self._fail(where, "torn-set", out, soft=self.torn_soft or
                       torn_long(self.dev, out.splitlines()))
        elif verdict == "benign":
            self.benign += 1
        if tree is None:
            return
        if self.driver == "ours" and self.cross_every and \
                (final or (self.checked - 1) % self.cross_every == 0):
            self._cross(where, tree)
            lap("in-tree")
        if verdict == "dup":
            self._dup(where, out, horizon, tree, reqs)
        for err in errors:
            self._fail(where, "read", err)
        for kind, detail, soft in check_state(self.model, reqs, horizon,
                                              tree):
            self._fail(where, kind, detail, soft)
        lap("compare")
        if final:
            for d in check_final(self.model, tree):
                self._fail(where, "final", d)
            with open(self.dev, "rb") as f:
                boot = f.read(512)
            if int.from_bytes(boot[106:108], "little") & 2:
                self._fail(where, "final", "VolumeDirty set after a clean "
                           "unmount")

    def _cross(self, where, tree):
        """The state as the in-tree driver reads it must be exfat2's
        view: the same names, the same bytes."""
        self.crossed += 1
        use_driver("intree")
        try:
            try:
                sys_mount(self.dev, self.mnt, "", ro=True)
            except OSError as e:
                self._fail(where, "in-tree", f"mount: {e}")
                return
            try:
                other, errors = walk(self.mnt)
            finally:
                sys_umount(self.mnt)
        finally:
            use_driver(self.driver)
        diffs = [f"only for exfat2: {p!a}" for p in sorted(set(tree) -
                                                           set(other))]
        extra = sorted(set(other) - set(tree))
        past = past_size(self.dev, extra)
        torn = torn_sets(self.dev, [p for p in extra if p not in past] +
                         [p for p in map(_path_of, errors) if p])
        errors = [e for e in errors if _path_of(e) not in torn]
        diffs += [f"only for the in-tree driver: {p!a}"
                  for p in extra if p not in past and p not in torn]
        if past:
            self._fail(where, "in-tree-past-size", "only for the in-tree "
                       "driver, past their directory's DataLength: " +
                       ", ".join(f"{p!a}" for p in sorted(past)[:4]),
                       soft=True)
        if torn:
            self._fail(where, "in-tree-torn-set", "listed or misread by "
                       "the in-tree driver, their entry sets' checksums "
                       "wrong: " + ", ".join(f"{p!a}"
                                             for p in sorted(torn)[:4]),
                       soft=True)
        diffs += [f"{p!a}: contents differ" for p in sorted(set(tree) &
                                                           set(other))
                  if tree[p] != other[p]]
        if diffs or errors:
            self._fail(where, "in-tree", "; ".join((errors + diffs)[:8]))

    def _settled(self, e, horizon, reqs):
        """The sync point durable at this state that made e's last rename
        (up to horizon) complete: a sync(), or fsyncs of both parents,
        after it.  None while the rename may still be in flight."""
        locs = [loc for loc in e.locs if loc[0] <= horizon]
        if len(locs) < 2:
            return None
        # both names may come from an ancestor's rename still in flight
        a = self.model.ents[locs[-1][1]]
        seen = set()
        while a is not self.model.root and a.id not in seen:
            seen.add(a.id)
            alocs = [loc for loc in a.locs if loc[0] <= horizon]
            if len(alocs) >= 2 and not self._settled(a, horizon, reqs):
                return None
            a = self.model.ents[alocs[-1][1]]
        seq, new_parent, old_parent = locs[-1][0], locs[-1][1], locs[-2][1]
        done = set()
        for sp in reqs.points:
            if sp.seq <= seq:
                continue
            if sp.kind == "sync":
                return sp
            if sp.kind == "dirfsync":
                done.add(sp.dir_id)
                if {old_parent, new_parent} <= done:
                    return sp
        return None

    def _dup(self, where, out, horizon, tree, reqs):
        """fsck found entries sharing clusters.  If the tree shows one
        file or directory under two names it had (an unfinished rename),
        that is the window exFAT cannot avoid (see _FSCK_DUP): soft unless
        self.rename_window_soft is cleared, provided fsck.exfat -y repairs
        it without loss (repair_loses), and only while the rename may be
        in flight: after a durable sync() or fsyncs of both parents that
        followed it, both names are a failure."""
        memo, twice, names, pairs, settled = {}, [], set(), [], []
        for e in self.model.ents.values():
            if e is self.model.root or len(e.locs) < 2:
                continue
            here = [p for p in sorted(self.model.paths(e, horizon, memo))
                    if p in tree and (tree[p] is None) == (e.kind == "d")]
            if len(here) >= 2:
                twice.append(" and ".join(here))
                names.update(here)
                pairs.append(here)
                sp = self._settled(e, horizon, reqs)
                if sp:
                    settled.append(f"{' and '.join(here)} after "
                                   f"{sp.describe()}")
        # Every entry fsck found sharing clusters must be such a name (fsck
        # reports the second one it meets of each pair, and does not look
        # inside a directory it reported).
        dups = fsck_dup_paths(out)
        if not twice or not all(d in names for d in dups):
            self._fail(where, "fsck", out)
            return
        if settled:
            self._fail(where, "rename-window",
                       f"renamed entries under both names although the "
                       f"rename was made durable: {'; '.join(settled)}; "
                       f"fsck: {out}")
            return
        lost = repair_loses(self.dev, tree, pairs, self.mnt + "-repaired",
                            self.opts)
        if lost:
            self._fail(where, "fsck", f"{out}\n-- fsck.exfat -y on a copy "
                       f"loses data: {lost}")
            return
        self._fail(where, "rename-window",
                   f"renamed entries present under both names (fsck.exfat "
                   f"-y repairs a copy without loss): "
                   f"{'; '.join(twice)}; fsck: {out}",
                   soft=self.rename_window_soft)

    def hard(self):
        return [f for f in self.failures if not f["soft"]]


# ------------------------------------------------------------ environment

class Tmp:
    """Sparse files under /tmp/exfat2-images, deleted on close()."""

    def __init__(self):
        self.paths, self.loops, self.dms, self.mounts = [], [], [], []
        os.makedirs("/tmp/exfat2-images", exist_ok=True)

    def file(self, tag, size):
        path = f"/tmp/exfat2-images/crash{os.getpid()}-{tag}.img"
        with open(path, "wb") as f:
            f.truncate(size)
        self.paths.append(path)
        return path

    def loop(self, path, sector=512, ro=False):
        ss = f"--sector-size {sector} " if sector != 512 else ""
        dev = sh(f"losetup -f --show {'-r ' if ro else ''}{ss}{path}"
                 ).stdout.strip()
        self.loops.append(dev)
        return dev

    def unloop(self, dev):
        sh(f"losetup -d {dev}")
        self.loops.remove(dev)

    def dm(self, name, table):
        # No udev in the VM: dmsetup makes and removes the nodes itself.
        sh(f"dmsetup create {name} --table '{table}' && "
           f"dmsetup mknodes {name}")
        self.dms.append(name)
        return f"/dev/mapper/{name}"

    def undm(self, name):
        for i in range(20):
            if sh(f"dmsetup remove {name}", check=False).returncode == 0:
                break
            time.sleep(0.2)
        else:
            sh(f"dmsetup remove {name}")
        self.dms.remove(name)
        _rm_node(name)

    def close(self):
        for m in reversed(self.mounts):
            sh(f"umount {m} 2>/dev/null || umount -l {m}", check=False)
        for d in reversed(self.dms):
            sh(f"dmsetup remove --force {d}", check=False)
            _rm_node(d)
        for d in reversed(self.loops):
            sh(f"losetup -d {d}", check=False)
        for p in self.paths:
            if os.path.exists(p):
                os.unlink(p)
        self.paths, self.loops, self.dms, self.mounts = [], [], [], []


def _rm_node(name):
    if os.path.lexists(f"/dev/mapper/{name}"):
        os.unlink(f"/dev/mapper/{name}")


def modules():
    want = ("loop", "dm_mod", "dm_log_writes", "dm_flakey")
    if not all(os.path.isdir(f"/sys/module/{m}") for m in want):
        sh("modprobe loop && modprobe dm-mod && modprobe dm-log-writes && "
           "modprobe dm-flakey")


def devsize(dev):
    """Size of a block device in 512-byte sectors."""
    fd = os.open(dev, os.O_RDONLY)
    try:
        return os.lseek(fd, 0, os.SEEK_END) >> 9
    finally:
        os.close(fd)


_DM_IOCTL_SIZE = 312               # sizeof(struct dm_ioctl)
_DM_DEV_SUSPEND, _DM_TABLE_LOAD, _DM_TARGET_MSG = 6, 9, 14
_DM_SUSPEND_FLAG, _DM_SKIP_LOCKFS_FLAG = 1 << 1, 1 << 10


def _dm_ioctl(cmd, name, flags=0, data=b"", targets=0):
    """One device-mapper ioctl on /dev/mapper/control (what dmsetup does,
    without a process: dmsetup costs 0.1-1 s under TCG)."""
    import fcntl
    import struct
    size = _DM_IOCTL_SIZE + len(data)
    size += -size % 8
    buf = bytearray(size)
    struct.pack_into("<3I7IQ", buf, 0, 4, 0, 0, size, _DM_IOCTL_SIZE,
                     targets, 0, flags, 0, 0, 0)
    buf[48:48 + len(name)] = name.encode()
    buf[_DM_IOCTL_SIZE:_DM_IOCTL_SIZE + len(data)] = data
    req = (3 << 30) | (_DM_IOCTL_SIZE << 16) | (0xfd << 8) | cmd
    fd = os.open("/dev/mapper/control", os.O_RDWR)
    try:
        fcntl.ioctl(fd, req, buf)
    finally:
        os.close(fd)


def dm_message(name, msg):
    """dmsetup message NAME 0 MSG"""
    import struct
    _dm_ioctl(_DM_TARGET_MSG, name,
              data=struct.pack("<Q", 0) + msg.encode() + b"\0")


def dm_load(name, length, target, params):
    """dmsetup load NAME --table '0 LENGTH TARGET PARAMS' (one target),
    without a process."""
    import struct
    spec = struct.pack("<QQiI16s", 0, length, 0, 0, target.encode())
    body = spec + params.encode() + b"\0"
    body += bytes(-len(body) % 8)
    body = body[:20] + struct.pack("<I", len(body)) + body[24:]
    _dm_ioctl(_DM_TABLE_LOAD, name, data=body, targets=1)


def dm_swap(name, length, target, params):
    """Make '0 LENGTH TARGET PARAMS' the live table of NAME: load it,
    suspend without freezing the file system, resume."""
    dm_load(name, length, target, params)
    dm_suspend(name)
    dm_resume(name)


def dm_suspend(name):
    """dmsetup suspend --nolockfs NAME: in-flight I/O completes, new I/O
    waits; the file system is not frozen (no sync)."""
    _dm_ioctl(_DM_DEV_SUSPEND, name, _DM_SUSPEND_FLAG | _DM_SKIP_LOCKFS_FLAG)


def dm_resume(name):
    """dmsetup resume NAME: the loaded (inactive) table becomes live."""
    _dm_ioctl(_DM_DEV_SUSPEND, name, _DM_SKIP_LOCKFS_FLAG)


def mkfs(dev, cluster):
    sh(f"mkfs.exfat -c {cluster} {dev}")


# ------------------------------------------------------------------ replay

class Window:
    """The writes logged between two flush points, and the states a
    power cut inside that window can leave.

    dm-log-writes logs a plain write when a FLUSH issued after its
    completion completes, so the entries between two checkpoints are
    writes the device had acknowledged but not yet made durable: a disk
    with a write-back cache may persist any subset of them.  The replay
    checks the state at each checkpoint (all of them); this adds states
    with some of them left out.  A driver that needs two writes on the
    media in a given order must put a flush between them, so that they
    land in different windows; otherwise one of these states shows the
    second write without the first.

    Entries are applied to the target as the replay goes (the device
    always holds "everything so far"); `before` keeps, per sector, what
    the target held before the first write of this window touched it, so
    that any subset can be built (restore those sectors, apply the
    subset in log order) and undone (restore, apply the whole window)."""

    def __init__(self, replayer):
        self.r = replayer
        self.ss = replayer.log.sectorsize
        self.writes = []
        self.before = {}
        self.discard = False

    def add(self, e):
        """Record e's old contents, then apply it."""
        if e.flags & LOG_DISCARD_FLAG:
            self.discard = True         # not enumerated (see candidates)
        elif e.changes_data:
            fd, ss = self.r.tfd, self.ss
            old = os.pread(fd, e.nr_sectors * ss, e.sector * ss)
            for i in range(e.nr_sectors):
                self.before.setdefault(e.sector + i, old[i * ss:(i + 1) * ss])
            self.writes.append(e)
        self.r.apply(e)

    def noop(self, e):
        """e writes what its sectors held before the window."""
        data = self.r.read_data(e)
        ss = self.ss
        return all(self.before[e.sector + i] == data[i * ss:(i + 1) * ss]
                   for i in range(e.nr_sectors))

    def _restore(self):
        for sec, old in self.before.items():
            os.pwrite(self.r.tfd, old, sec * self.ss)

    def build(self, keep):
        """The target holds the window's start plus `keep` (log order)."""
        self._restore()
        for e in keep:
            self.r.write_entry(e)
        self.r.sync()

    def undo(self):
        self.build(self.writes)

    def candidates(self, rng, subsets=2):
        """(description, kept writes) of the in-window states worth a
        check: each write left out alone (unless it changes nothing, or
        it is the window's only write: that state is the previous
        checkpoint's), then `subsets` random subsets of windows of three
        writes or more.  Windows with a discard are left alone (the
        workload mounts without -o discard, so there are none)."""
        if self.discard:
            return []
        w = [e for e in self.writes if not self.noop(e)]
        if len(w) < 2:
            return []
        out = [(f"#{e.index} left out", [x for x in w if x is not e])
               for e in w]
        for _ in range(subsets if len(w) >= 3 else 0):
            keep = [e for e in w if rng.random() < 0.5]
            if 0 < len(keep) < len(w) - 1:
                out.append((f"kept only {','.join(f'#{e.index}' for e in keep)}",
                            keep))
        return out

    def reset(self):
        self.writes = []
        self.before = {}
        self.discard = False


def replay_run(driver, seed, cluster, nops, sector=512, size_mb=16,
               mnt="/mnt/crash", window_rate=0.0):
    """One replay run.  Returns a result dict (counts, failures).
    window_rate: the share of in-window states (see Window) checked too,
    drawn with a generator seeded from `seed` (1.0: all of them)."""
    from replaylog import read_log, Replayer
    run = f"replay {driver} seed={seed} cluster={cluster} sector={sector}"
    log(f"== {run}, {nops} operations")
    t0 = time.monotonic()
    lap = Laps()
    modules()
    tmp = Tmp()
    os.makedirs(mnt, exist_ok=True)
    res = {"run": run, "driver": driver, "seed": seed, "cluster": cluster,
           "sector": sector, "ops": nops}
    try:
        data_f = tmp.file("data", size_mb << 20)
        log_f = tmp.file("log", 1 << 30)
        data = tmp.loop(data_f, sector)
        mkfs(data, cluster)
        fsync_dev(data)
        flushbufs(data)
        base_f = tmp.file("base", 0)
        _sparse_copy(data_f, base_f)
        logdev = tmp.loop(log_f, sector)
        nsec = devsize(data)
        lw = tmp.dm(f"crashlw{os.getpid()}",
                    f"0 {nsec} log-writes {data} {logdev}")
        use_driver(driver)
        res["module"] = module_version(driver)
        sys_mount(lw, mnt, ro=False)
        tmp.mounts.append(mnt)
        name = os.path.basename(lw)
        wl = Workload(mnt, seed, cluster,
                      on_sync=lambda sp: dm_message(name, "mark " + sp.name))
        lap("setup")
        live = None
        try:
            wl.setup()
            for _ in range(nops):
                wl.step()
        except (OSError, WorkloadError) as e:
            live = live_failure(run, wl, e)
        lap("workload")
        sys_umount(mnt)
        tmp.mounts.remove(mnt)
        fsync_dev(lw)                   # a last FLUSH: the clean state
        tmp.undm(name)
        tmp.unloop(logdev)
        model = wl.model
        lg = read_log(log_f)
        res["entries"] = len(lg.entries)
        res["stats"] = wl.stats
        res["notes"] = sorted(wl.notes)
        lap("teardown")
        log(f"operations (count, seconds): {wl.stats}; "
            f"{len(model.syncs)} sync points, {len(lg.entries)} log entries")
        if live:
            # The model does not know what the failed operation did: no
            # crash state can be judged.
            res.update(flush_points=0, sync_points=len(model.syncs),
                       failures=[live], hard=1, soft=0, benign=0,
                       total_s=round(time.monotonic() - t0, 1),
                       oplog=[f"{s}: {t}" for s, t in model.oplog])
            keep_artifacts(run, res, base_f, log_f, lg, model)
            return res

        # Replay onto a copy of the starting image, checking each FLUSH/FUA.
        work = tmp.loop(base_f, sector)
        spmark = {sp.name: sp for sp in model.syncs}
        ents = lg.entries
        # next_change[i]: first entry after i that changes data
        next_change = [len(ents)] * (len(ents) + 1)
        for i in range(len(ents) - 1, -1, -1):
            next_change[i] = (i + 1 if i + 1 < len(ents)
                              and ents[i + 1].changes_data
                              else next_change[i + 1])
        marks = [(e.index, spmark[e.mark]) for e in ents
                 if e.mark in spmark]
        missing = len(model.syncs) - len(marks)
        if missing:
            raise WorkloadError(f"{missing} sync point marks are not in "
                                f"the log (logging stopped?)")
        mark_idx = [i for i, _ in marks]
        reqs = Requirements(model)
        mi = 0                        # marks[:mi] are in reqs
        chk = Checker(model, work, mnt, run, driver=driver, cross_every=40)
        changed = True
        last_cp = max((e.index for e in ents if e.is_checkpoint),
                      default=-1)
        wrng = random.Random(seed * 7919 + cluster + sector)
        nwin = 0
        with Replayer(lg, work) as r:
            win = Window(r)
            for e in ents:
                if not e.is_checkpoint:
                    win.add(e)
                    changed |= e.changes_data
                    continue
                # Operations after the first mark past this entry cannot
                # have reached it.
                k = bisect.bisect_right(mark_idx, e.index)
                horizon = marks[k][1].seq if k < len(marks) else INF
                after = marks[k - 1][1].describe() if k else "no mark"
                # States inside the window that this checkpoint closes:
                # only what was durable at the previous checkpoint is
                # required (reqs does not hold this one's marks yet).
                built = False
                for desc, keep in (win.candidates(wrng) if window_rate
                                   else ()):
                    if wrng.random() >= window_rate:
                        continue
                    win.build(keep)
                    r.release()
                    built = True
                    nwin += 1
                    lap("replay")
                    chk.check(f"inside the window closed by {e.describe()}"
                              f" ({desc}), after {after}", reqs, horizon,
                              lap=lap)
                if built:
                    win.undo()
                    changed = True
                win.reset()
                r.apply(e)
                changed |= e.changes_data
                while mi < len(marks) and marks[mi][0] < next_change[e.index]:
                    reqs.add(marks[mi][1])
                    mi += 1
                where = f"flush point {e.describe()}, after {after}"
                # File data is read with bios that bypass the device's page
                # cache, which the replay wrote into: write it back first.
                if changed:
                    r.sync()
                r.release()
                lap("replay")
                chk.check(where, reqs, horizon, state_changed=changed,
                          final=(e.index == last_cp), lap=lap)
                changed = False
        res.update(flush_points=chk.checked - nwin, window_states=nwin,
                   states_fscked=chk.fscked,
                   states_intree=chk.crossed,
                   sync_points=len(model.syncs),
                   failures=[dict(f) for f in chk.failures],
                   hard=len(chk.hard()), soft=chk.soft, benign=chk.benign,
                   misread=chk.misread, seconds=lap.report(),
                   total_s=round(time.monotonic() - t0, 1))
        log(f"seconds per phase: {res['seconds']}")
        if not chk.failures:
            log(f"{run}: {chk.checked - nwin} flush points and {nwin} "
                f"states inside flush windows, all good")
        res["oplog"] = [f"{s}: {t}" for s, t in model.oplog] \
            if chk.failures else []
        if chk.hard():
            keep_artifacts(run, res, base_f, log_f, lg, model)
        return res
    finally:
        for m in list(tmp.mounts):
            sh(f"umount {m}", check=False)
        tmp.close()


_kept = []


def keep_artifacts(run, res, base_f, log_f, lg, model, limit=3):
    """Save what is needed to look at a failing replay on the host: the
    starting image, the log, the log's entries and the operations (at most
    `limit` runs per test process)."""
    if len(_kept) >= limit:
        return
    slug = run.replace(" ", "-").replace("=", "")
    d = os.path.join(OUT, "crash")
    os.makedirs(d, exist_ok=True)
    stem = os.path.join(d, slug)
    _sparse_copy(base_f, stem + ".base.img")
    last = lg.entries[-1] if lg.entries else None
    used = lg.sectorsize
    if last:
        used = last.offset + (0 if last.mark is not None or
                              last.flags & 4 else
                              last.nr_sectors * lg.sectorsize)
    _sparse_copy(log_f, stem + ".log.img", limit=used)
    spmark = {sp.name: sp for sp in model.syncs}
    with open(stem + ".entries.txt", "w") as f:
        for e in lg.entries:
            f.write(e.describe())
            if e.mark in spmark:
                f.write("  " + spmark[e.mark].describe())
            f.write("\n")
    with open(stem + ".ops.txt", "w") as f:
        f.write("\n".join(res["oplog"]) + "\n")
    res["artifacts"] = stem + ".*"
    _kept.append(stem)
    log(f"kept {stem}.{{base.img,log.img,entries.txt,ops.txt}}: replay "
        f"with tests/guest/replaylog.py --log {slug}.log.img --replay "
        f"COPY-OF-base.img --limit N")


# ------------------------------------------------------------------ unplug

def unplug_run(driver, seed, cluster, nops, sector=512, size_mb=16,
               mnt="/mnt/crash", soft_torn=False):
    """One unplug run: the workload's device starts dropping every write at
    a random moment; the device is then checked.  soft_torn: an entry set
    torn by the cut (see _FSCK_TORN) is a soft finding, not a failure."""
    run = f"unplug {driver} seed={seed} cluster={cluster} sector={sector}"
    rng = random.Random(seed * 7919 + 1)
    cut_at = rng.randrange(1, nops)
    delay = rng.random() * 0.05
    log(f"== {run}, {nops} operations, cut at op {cut_at} + {delay:.2f}s")
    t0 = time.monotonic()
    modules()
    tmp = Tmp()
    os.makedirs(mnt, exist_ok=True)
    res = {"run": run, "driver": driver, "seed": seed, "cluster": cluster,
           "sector": sector, "ops": nops, "cut_at": cut_at}
    try:
        data_f = tmp.file("data", size_mb << 20)
        data = tmp.loop(data_f, sector)
        mkfs(data, cluster)
        fsync_dev(data)
        nsec = devsize(data)
        name = f"crashcut{os.getpid()}"
        dev = tmp.dm(name, f"0 {nsec} linear {data} 0")
        use_driver(driver)
        res["module"] = module_version(driver)
        sys_mount(dev, mnt, ro=False)
        tmp.mounts.append(mnt)
        wl = Workload(mnt, seed, cluster)
        model = wl.model
        cut = {}
        # Stage the table that drops writes; the cut only swaps it in.
        sh(f"dmsetup load {name} --table "
           f"'0 {nsec} flakey {data} 0 0 1 1 drop_writes'")

        def cutter():
            time.sleep(delay)
            cut["start"] = model.seq
            dm_suspend(name)
            dm_resume(name)
            cut["end"] = model.seq
        th = None
        err = live = None
        try:
            wl.setup()
        except (OSError, WorkloadError) as e:
            live = live_failure(run, wl, e)
        i = after = 0
        # Keep going until the cut is done and 20 more operations ran.
        while not live and (i < nops or th is None or th.is_alive()
                            or after < 20):
            if i == cut_at or (i >= nops and th is None):
                th = threading.Thread(target=cutter)
                th.start()
            try:
                wl.step()
            except (OSError, WorkloadError) as e:
                if th is None or "start" not in cut:
                    live = live_failure(run, wl, e)
                else:
                    err = f"op {model.seq} failed after the cut: {e}"
                break
            i += 1
            if "end" in cut:
                after += 1
        if th is not None:
            th.join()
        if err:
            log(err)
        sys_umount(mnt)
        tmp.mounts.remove(mnt)
        tmp.undm(name)
        flushbufs(data)
        if live:
            res.update(sync_points=0, failures=[live], hard=1, soft=0,
                       benign=0, total_s=round(time.monotonic() - t0, 1),
                       notes=sorted(wl.notes),
                       oplog=[f"{s}: {t}" for s, t in model.oplog])
            return res
        reqs = Requirements(model)
        for sp in model.syncs:
            if sp.seq < cut["start"]:
                reqs.add(sp)
        horizon = cut["end"]
        log(f"cut between ops {cut['start']} and {cut['end']}; "
            f"{reqs.count} sync points before it")
        chk = Checker(model, data, mnt, run, driver=driver, cross_every=1)
        chk.torn_soft = soft_torn
        chk.check(f"cut between ops {cut['start']} and {cut['end']}", reqs,
                  horizon)
        res["notes"] = sorted(wl.notes)
        res.update(cut_start=cut["start"], cut_end=cut["end"],
                   sync_points=reqs.count, states_intree=chk.crossed,
                   failures=[dict(f) for f in chk.failures],
                   hard=len(chk.hard()), soft=chk.soft, benign=chk.benign,
                   total_s=round(time.monotonic() - t0, 1))
        res["oplog"] = [f"{s}: {t}" for s, t in model.oplog] \
            if chk.failures else []
        return res
    finally:
        for m in list(tmp.mounts):
            sh(f"umount {m}", check=False)
        tmp.close()


def live_failure(run, wl, e):
    """An operation failed on the mounted file system, before any crash."""
    f = Failure(run=run, where=f"operation {wl.model.seq} (live, before any "
                f"crash)", kind="live", detail=f"{e}\n{dmesg_tail(6)}",
                soft=False)
    log("FAIL " + f.line())
    return f


# ---------------------------------------------------------------- reports

def save(name, results):
    """Write the results of a test to $EXFAT2_OUT/crash/NAME.json."""
    d = os.path.join(OUT, "crash")
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, name + ".json"), "w") as f:
        json.dump(results, f, indent=1)


def module_version(driver):
    """What was tested: exfat2.ko's hash and time (as loaded, unless it was
    rebuilt since), or the kernel's release."""
    if driver == "ours":
        import hashlib
        from lib import OURS_KO
        with open(OURS_KO, "rb") as f:
            digest = hashlib.sha256(f.read()).hexdigest()[:12]
        when = time.strftime("%Y-%m-%d %H:%M:%S",
                             time.localtime(os.stat(OURS_KO).st_mtime))
        return f"exfat2.ko sha256:{digest} of {when}"
    return f"in-tree exfat of {os.uname().release}"


def summary(results):
    """(text, hard failure count)."""
    lines, hard = [], 0
    pts = sum(r.get("flush_points") or 0 for r in results)
    mods = sorted({r["module"] for r in results if r.get("module")})
    win = sum(r.get("window_states") or 0 for r in results)
    lines.append(f"{', '.join(mods)}: {len(results)} runs"
                 + (f", {pts} flush points checked" if pts else "")
                 + (f", {win} states inside flush windows" if win else ""))
    for r in results:
        h = r.get("hard", 0)
        hard += h
        pts = r.get("flush_points")
        lines.append(f"{r['run']}: " + (f"{pts} flush points, " if pts
                                        is not None else "")
                     + (f"{r['window_states']} in-window states, "
                        if r.get("window_states") else "")
                     + f"{r.get('sync_points', 0)} sync points, "
                     f"{h} failures, {r.get('soft', 0)} soft, "
                     f"{r.get('benign', 0)} benign fsck, "
                     + (f"{r['states_intree']} read by the in-tree driver "
                        "too, " if r.get("states_intree") else "") +
                     f"{r.get('total_s', '?')}s")
        for n in r.get("notes", []):
            lines.append(f"  note: {n}")
        seen = set()
        for f in r.get("failures", []):
            key = (f["kind"], f["detail"][:60])
            if key in seen:
                continue
            seen.add(key)
            lines.append(("  soft " if f["soft"] else "  FAIL ")
                         + f"{f['where']}: {f['kind']}: "
                         + f["detail"].replace("\n", " | ")[:600])
    return "\n".join(lines), hard


def main(argv):
    """Run one replay or unplug run (in the VM, as root), e.g.
    tools/vm/vm.sh -- python3 -B tests/guest/crashlib.py replay \\
        --driver intree --seed 3 --cluster 512 --ops 300"""
    import argparse
    ap = argparse.ArgumentParser(description=main.__doc__)
    ap.add_argument("mode", choices=("replay", "unplug"))
    ap.add_argument("--driver", default="ours", choices=("ours", "intree"))
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--cluster", type=int, default=4096)
    ap.add_argument("--sector", type=int, default=512)
    ap.add_argument("--ops", type=int, default=300)
    ap.add_argument("--window-rate", type=float, default=0.0,
                    help="replay: share of in-window states checked")
    ap.add_argument("--oplog", action="store_true",
                    help="print the operations of a failing run")
    ap.add_argument("--ko", help="load this exfat2.ko instead of the "
                    "repo's (a snapshot, while the repo's is rebuilt)")
    a = ap.parse_args(argv)
    if a.ko and a.driver == "ours":
        import lib
        sh("rmmod exfat 2>/dev/null; rmmod exfat2 2>/dev/null; "
           f"insmod {a.ko}")
        lib.OURS_KO = a.ko          # what module_version() reports
    fn = replay_run if a.mode == "replay" else unplug_run
    kw = {"window_rate": a.window_rate} if a.mode == "replay" else {}
    r = fn(a.driver, a.seed, a.cluster, a.ops, sector=a.sector, **kw)
    text, hard = summary([r])
    print(text)
    if a.oplog:
        print("\n".join(r.get("oplog", [])))
    return 1 if hard else 0


if __name__ == "__main__":
    import sys
    sys.exit(main(sys.argv[1:]))

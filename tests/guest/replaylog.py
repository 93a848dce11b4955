#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Read and replay a dm-log-writes log (Debian ships no replay tool).

The format is the one of drivers/md/dm-log-writes.c (Linux 6.12) and
Documentation/admin-guide/device-mapper/log-writes.rst:

  block 0                  struct log_write_super (magic, version,
                           nr_entries, sectorsize), one `sectorsize` block
  then nr_entries entries, each:
    one `sectorsize` block  struct log_write_entry {__le64 sector,
                           nr_sectors, flags, data_len}; for a MARK entry
                           the mark's name follows the header inside the
                           same block (data_len bytes)
    nr_sectors * sectorsize bytes of data (none for MARK and DISCARD)

`sector` and `nr_sectors` count `sectorsize` units (the logical block size
of the data device); byte offsets are sector * sectorsize.  Entries are in
the order the target logged them: a write is logged only once a FLUSH that
was issued after it completed has itself completed (the write and its
completed peers come just before that FLUSH entry), a FUA write as soon as
it completes.  So every prefix of the log ending at a FLUSH or FUA entry is
a state the device can be in after a power cut; marks (dmsetup message DEV
0 mark NAME) are logged when the message arrives.

Library use (tests/guest/crashlib.py):

    log = read_log("/tmp/log.img")          # -> Log(sectorsize, entries)
    with Replayer(log, "/dev/loop3") as r:  # target holds the start image
        for e in log.entries:
            r.apply(e)                      # writes, discards (zeroes)

Command line (in the VM, or on the host on image files):

    replaylog.py --log LOG --list
    replaylog.py --log LOG --replay TARGET [--end-mark NAME | --limit N]

--end-mark replays every entry before the mark (and the mark); --limit N
replays entries 0..N-1.  TARGET must already hold the image the log
started from (e.g. a copy taken right after mkfs).
"""

import argparse
import os
import struct
import sys

WRITE_LOG_MAGIC = 0x6a736677736872
WRITE_LOG_VERSION = 1

LOG_FLUSH_FLAG = 1 << 0
LOG_FUA_FLAG = 1 << 1
LOG_DISCARD_FLAG = 1 << 2
LOG_MARK_FLAG = 1 << 3
LOG_METADATA_FLAG = 1 << 4

_SUPER = struct.Struct("<QQQI")     # magic, version, nr_entries, sectorsize
_ENTRY = struct.Struct("<QQQQ")     # sector, nr_sectors, flags, data_len


class LogError(Exception):
    pass


class Entry:
    """One log entry.  `offset` is the byte offset of its data in the log."""
    __slots__ = ("index", "sector", "nr_sectors", "flags", "data_len",
                 "offset", "mark")

    def __init__(self, index, sector, nr_sectors, flags, data_len, offset,
                 mark):
        self.index, self.sector, self.nr_sectors = index, sector, nr_sectors
        self.flags, self.data_len, self.offset = flags, data_len, offset
        self.mark = mark

    @property
    def is_flush(self):
        return bool(self.flags & LOG_FLUSH_FLAG)

    @property
    def is_fua(self):
        return bool(self.flags & LOG_FUA_FLAG)

    @property
    def is_checkpoint(self):
        """A FLUSH or FUA entry: the log up to here is a crash state."""
        return bool(self.flags & (LOG_FLUSH_FLAG | LOG_FUA_FLAG))

    @property
    def changes_data(self):
        return (not self.flags & LOG_MARK_FLAG) and self.nr_sectors > 0

    def describe(self):
        names = [n for f, n in ((LOG_FLUSH_FLAG, "FLUSH"),
                                (LOG_FUA_FLAG, "FUA"),
                                (LOG_DISCARD_FLAG, "DISCARD"),
                                (LOG_MARK_FLAG, "MARK"),
                                (LOG_METADATA_FLAG, "META"))
                 if self.flags & f]
        if self.mark is not None:
            return f"#{self.index} MARK {self.mark}"
        return (f"#{self.index} {'|'.join(names) or 'WRITE'} "
                f"sector {self.sector} +{self.nr_sectors}")


class Log:
    def __init__(self, path, sectorsize, entries):
        self.path, self.sectorsize, self.entries = path, sectorsize, entries

    def marks(self):
        """{mark name: entry index} (the first entry of that name)."""
        out = {}
        for e in self.entries:
            if e.mark is not None:
                out.setdefault(e.mark, e.index)
        return out


def read_log(path):
    """Parse the log on `path` (device or file) into a Log."""
    with open(path, "rb") as f:
        head = f.read(_SUPER.size)
        if len(head) < _SUPER.size:
            raise LogError(f"{path}: too short for a log super block")
        magic, version, nr, ss = _SUPER.unpack(head)
        if magic != WRITE_LOG_MAGIC:
            raise LogError(f"{path}: bad magic {magic:#x}")
        if version != WRITE_LOG_VERSION:
            raise LogError(f"{path}: unsupported version {version}")
        if ss < 512 or ss & (ss - 1):
            raise LogError(f"{path}: bad sectorsize {ss}")
        size = os.fstat(f.fileno()).st_size or _devsize(f)
        entries = []
        pos = ss
        for i in range(nr):
            f.seek(pos)
            blk = f.read(ss)
            if len(blk) < ss:
                raise LogError(f"{path}: entry {i} of {nr} past the end")
            sector, nsec, flags, dlen = _ENTRY.unpack_from(blk)
            mark = None
            if flags & LOG_MARK_FLAG:
                if dlen > ss - _ENTRY.size:
                    raise LogError(f"{path}: entry {i}: mark too long")
                mark = blk[_ENTRY.size:_ENTRY.size + dlen].decode(
                    "utf-8", "replace")
                nsec = 0
            pos += ss
            entries.append(Entry(i, sector, nsec, flags, dlen, pos, mark))
            if not flags & (LOG_DISCARD_FLAG | LOG_MARK_FLAG):
                pos += nsec * ss
            if pos > size:
                raise LogError(f"{path}: entry {i}: data past the end")
    return Log(path, ss, entries)


def _devsize(f):
    return f.seek(0, os.SEEK_END)


class Replayer:
    """Applies log entries, in order, to a target device or image file."""

    def __init__(self, log, target):
        self.log = log
        self.target = target
        self.lfd = os.open(log.path, os.O_RDONLY)
        self._tfd = -1
        self.applied = 0        # number of entries applied so far

    @property
    def tfd(self):
        """The target, opened for writing when first needed."""
        if self._tfd < 0:
            self._tfd = os.open(self.target, os.O_RDWR)
        return self._tfd

    def release(self):
        """Write back and close the target until the next write: a
        kernel without CONFIG_BLK_DEV_WRITE_MOUNTED (the debug kernel)
        refuses to mount a device someone holds open for writing."""
        if self._tfd >= 0:
            os.fsync(self._tfd)
            os.close(self._tfd)
            self._tfd = -1

    def apply(self, e):
        if e.index != self.applied:
            raise LogError(f"entries must be applied in order: got "
                           f"{e.index}, expected {self.applied}")
        ss = self.log.sectorsize
        if e.flags & LOG_MARK_FLAG or e.nr_sectors == 0:
            pass
        elif e.flags & LOG_DISCARD_FLAG:
            # A discarded range reads back as zeroes on a loop device.
            left, off = e.nr_sectors * ss, e.sector * ss
            zero = bytes(min(left, 1 << 20))
            while left:
                n = min(left, len(zero))
                os.pwrite(self.tfd, zero[:n], off)
                off += n
                left -= n
        else:
            self.write_entry(e)
        self.applied += 1

    def read_data(self, e):
        """The bytes a write entry carries."""
        n = e.nr_sectors * self.log.sectorsize
        data = os.pread(self.lfd, n, e.offset)
        if len(data) != n:
            raise LogError(f"entry {e.index}: short read of its data")
        return data

    def write_entry(self, e):
        """Write e's data to the target, whatever was applied before (a
        replay out of order: crashlib.Window builds subsets with it)."""
        data = self.read_data(e)
        if os.pwrite(self.tfd, data, e.sector * self.log.sectorsize) \
                != len(data):
            raise LogError(f"entry {e.index}: short write")

    def sync(self):
        os.fsync(self.tfd)

    def close(self):
        self.release()
        os.close(self.lfd)
        self.lfd = -1

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--log", required=True, help="log device or file")
    ap.add_argument("--replay", help="target device or image file")
    ap.add_argument("--end-mark", help="replay through this mark")
    ap.add_argument("--limit", type=int, help="replay this many entries")
    ap.add_argument("--list", action="store_true", help="print the entries")
    a = ap.parse_args(argv)
    log = read_log(a.log)
    if a.list:
        print(f"sectorsize {log.sectorsize}, {len(log.entries)} entries")
        for e in log.entries:
            print(e.describe())
    if a.replay:
        end = len(log.entries)
        if a.end_mark is not None:
            marks = log.marks()
            if a.end_mark not in marks:
                print(f"no mark {a.end_mark!r} in the log", file=sys.stderr)
                return 1
            end = marks[a.end_mark] + 1
        if a.limit is not None:
            end = min(end, a.limit)
        with Replayer(log, a.replay) as r:
            for e in log.entries[:end]:
                r.apply(e)
            r.sync()
        print(f"replayed {end} of {len(log.entries)} entries")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

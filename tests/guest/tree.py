# SPDX-License-Identifier: GPL-2.0
"""Build rich exFAT trees with any driver and describe them as manifests.

manifest(root) -> {relative path: {type, size, sha256, mtime, atime, btime,
mode, nlink, attr}}, compared across drivers with diff_manifests();
get_attr(path), set_attr(path, attr) and ATTR_*: the FAT attribute ioctls.
"""

import fcntl
import hashlib
import os
import random
import struct

from lib import TestFailure

# The FAT attribute ioctls shared with vfat, and the attribute bits
FAT_IOCTL_GET_ATTRIBUTES = 0x80047210
FAT_IOCTL_SET_ATTRIBUTES = 0x40047211
ATTR_READONLY, ATTR_HIDDEN, ATTR_SYSTEM = 0x01, 0x02, 0x04
ATTR_DIR, ATTR_ARCHIVE = 0x10, 0x20

# Names that exercise the name code: CJK, emoji (surrogate pairs),
# combining marks, a 255-unit name, non-ASCII case.
NAMES = [
    "plain.txt",
    "日本語のファイル名.txt",
    "emoji-\U0001F600\U0001F680.bin",
    "e\u0301cole-combining",
    "Ελληνικά-ΣΊΣΥΦΟΣ",
    "Кириллица",
    "x" * 255,
    "\U0001F4C1" * 127 + "a",          # 255 UTF-16 units
    "spaces and.dots.in.name",
    "ümlaut-ÄÖÜ",
]


def get_attr(path):
    fd = os.open(path, os.O_RDONLY)
    try:
        buf = fcntl.ioctl(fd, FAT_IOCTL_GET_ATTRIBUTES, b"\0" * 4)
        return struct.unpack("<I", buf)[0]
    finally:
        os.close(fd)


def set_attr(path, attr):
    fd = os.open(path, os.O_RDONLY)
    try:
        fcntl.ioctl(fd, FAT_IOCTL_SET_ATTRIBUTES, struct.pack("<I", attr))
    finally:
        os.close(fd)


def _btime(path):
    """Birth time in ns through statx (GNU find's %B is not usable on
    Debian 12: it prints -1)."""
    from wtree import statx
    return statx(path)["btime"]


def manifest(root, content=True, times=True, attrs=True):
    out = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            full = os.path.join(dirpath, name)
            rel = os.path.relpath(full, root)
            st = os.lstat(full)
            e = {"mode": oct(st.st_mode), "size": st.st_size,
                 "nlink": st.st_nlink}
            if times:
                e.update(mtime=st.st_mtime_ns, atime=st.st_atime_ns,
                         btime=_btime(full))
            if attrs:
                e["attr"] = get_attr(full)
            if content and not os.path.isdir(full):
                h = hashlib.sha256()
                with open(full, "rb") as f:
                    while True:
                        b = f.read(1 << 20)
                        if not b:
                            break
                        h.update(b)
                e["sha256"] = h.hexdigest()
            out[rel] = e
    return out


def diff_manifests(a, b, what_a="a", what_b="b", limit=20):
    """Raise TestFailure listing the first differences."""
    diffs = []
    for k in sorted(set(a) | set(b)):
        if k not in a:
            diffs.append(f"only in {what_b}: {k!r}")
        elif k not in b:
            diffs.append(f"only in {what_a}: {k!r}")
        elif a[k] != b[k]:
            fields = [f"{f}: {a[k].get(f)!r} vs {b[k].get(f)!r}"
                      for f in sorted(set(a[k]) | set(b[k]))
                      if a[k].get(f) != b[k].get(f)]
            diffs.append(f"{k!r}: " + ", ".join(fields))
        if len(diffs) >= limit:
            diffs.append("...")
            break
    if diffs:
        raise TestFailure(f"{what_a} and {what_b} differ:\n" + "\n".join(diffs))


def pattern(n, seed=0):
    """n bytes that are a function of (seed, offset) and repeat nowhere:
    4 KiB block j is drawn from a generator seeded with (seed, j), so a
    block read from the wrong offset or the wrong file shows, and
    pattern(m, seed) is a prefix of pattern(n, seed) for m < n."""
    out = bytearray()
    for j in range(-(-n // 4096)):
        out += random.Random(f"{seed}/{j}").randbytes(4096)
    return bytes(out[:n])


def write_file(path, n, seed=0):
    with open(path, "wb") as f:
        f.write(pattern(n, seed))


def interleave(paths, chunk, count, seed=0):
    """Grow several files in turns, chunk bytes at a time, each step an
    open, write, fsync and close of its own, so that their clusters
    interleave on disk (fragmentation: FAT chains).  A file kept open
    would not do with exfat2: its allocation window keeps the others out
    of the clusters after its last one until a writer closes it."""
    for p in paths:
        os.close(os.open(p, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644))
    for i in range(count):
        for j, p in enumerate(paths):
            fd = os.open(p, os.O_WRONLY | os.O_APPEND)
            try:
                os.write(fd, pattern(chunk, seed + i * 131 + j))
                os.fsync(fd)
            finally:
                os.close(fd)

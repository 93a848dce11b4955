# SPDX-License-Identifier: GPL-2.0
"""Helpers of the write-path tests (tests/cases/test_write.py).

WRITE_DRIVER
        the driver under test, "ours" (default) or "intree".  Taken from
        $EXFAT2_WRITE_DRIVER if set, else from the first word of
        tests/cases/write_driver.txt (the guest starts with an empty
        environment, so the file is the way to choose from the host).
mount_rw(dev, driver=WRITE_DRIVER, opts='', mnt='/mnt/t')
        lib.mount that also requires the mount to be read-write (a driver
        that forces read-only fails here, with a clear reason).
manifest(root) -> {relpath: {type, mode, size, nlink, mtime, atime, btime,
        attr, sha256}}, times in ns from statx (btime included, unlike
        tree.manifest whose find %B@ is always -1 on Debian 12's findutils).
        Contents are read before anything is stat'ed, so an atime update
        caused by the reading is already in the recorded atime.
project(m, fields) / compare(a, b, what_a, what_b, fields=ALL)
        compare manifests on some fields only.
FUSE_FIELDS, fuse_view(m)
        what exfat-fuse 1.3.0 reports faithfully (see the comment there).
fuse_mount(dev, mnt='/mnt/fuse')
        context manager: mount.exfat-fuse -o ro.
bitmap_free(dev) -> (cluster_count, free clusters counted in the
        allocation bitmap); dump_free(dev) -> dump.exfat's "Free Clusters".
renameat2(old, new, flags), RENAME_NOREPLACE, RENAME_EXCHANGE,
        RENAME_WHITEOUT
get_attr(path), set_attr(path, attr), ATTR_*: from tree.py
fsx_binary(), io_verify_binary() -> path of tests/tools/fsx-lite or
        io-verify, built into /tmp by the guest's gcc if the prebuilt one
        is missing or older than its source (tool_binary(name, libs)).
write_tree(mnt, cluster, meta=True), modify_tree(mnt, cluster, meta=True)
        build a rich tree, then change it with every kind of namespace and
        data operation (both used by the cross-driver tests); meta=False
        leaves out attributes, modes and times, to build the same tree on
        another file system as a model.
model_tree(cluster, modify=True) -> manifest (type, size, sha256) of
        that tree built on tmpfs: what the exFAT volume must hold,
        computed without any exFAT driver.
"""

import ctypes
import hashlib
import os
import stat
import struct

from lib import REPO, TestFailure, mount, sh
from tree import (ATTR_ARCHIVE, ATTR_HIDDEN, ATTR_SYSTEM, NAMES, get_attr,
                  interleave, pattern, set_attr, write_file)

# --- the driver under test ------------------------------------------------

DRIVER_FILE = os.path.join(REPO, "tests", "cases", "write_driver.txt")


def _write_driver():
    d = os.environ.get("EXFAT2_WRITE_DRIVER", "").strip()
    if not d:
        try:
            with open(DRIVER_FILE) as f:
                words = [w for line in f
                         for w in line.split("#", 1)[0].split()]
            d = words[0] if words else ""
        except OSError:
            d = ""
    d = d or "ours"
    if d not in ("ours", "intree"):
        raise ValueError(f"{DRIVER_FILE}: driver must be ours or intree, "
                         f"not {d!r}")
    return d


WRITE_DRIVER = _write_driver()


class mount_rw(mount):
    """lib.mount(dev, mnt, opts, driver) that must come up read-write."""

    def __init__(self, dev, driver=None, opts="", mnt="/mnt/t"):
        super().__init__(dev, mnt=mnt, opts=opts,
                         driver=driver or WRITE_DRIVER)

    def __enter__(self):
        mnt = super().__enter__()
        with open("/proc/mounts") as f:
            rows = [line.split() for line in f]
        opts = [r[3] for r in rows if r[1] == mnt]
        if not opts or "rw" not in opts[-1].split(","):
            self.__exit__(None, None, None)
            raise TestFailure(
                f"{self.driver} mounted {self.dev} read-only "
                f"({opts[-1] if opts else '?'}): no write support?")
        return mnt


# --- manifests ------------------------------------------------------------

_libc = ctypes.CDLL(None, use_errno=True)
_AT_FDCWD = -100
_AT_SYMLINK_NOFOLLOW = 0x100
_STATX_ALL = 0x0fff          # basic stats and btime


def statx(path):
    """dict: mode, nlink, size, atime, btime, ctime, mtime (ns; btime None
    when the file system does not report it)."""
    buf = ctypes.create_string_buffer(256)
    if _libc.statx(_AT_FDCWD, os.fsencode(path), _AT_SYMLINK_NOFOLLOW,
                   _STATX_ALL, buf) != 0:
        e = ctypes.get_errno()
        raise OSError(e, os.strerror(e), path)
    raw = buf.raw
    mask = struct.unpack_from("<I", raw, 0)[0]
    nlink = struct.unpack_from("<I", raw, 16)[0]
    mode = struct.unpack_from("<H", raw, 28)[0]
    size = struct.unpack_from("<Q", raw, 40)[0]

    def ts(off):
        sec, nsec = struct.unpack_from("<qI", raw, off)
        return sec * 1_000_000_000 + nsec
    return {"mode": mode, "nlink": nlink, "size": size, "atime": ts(64),
            "btime": ts(80) if mask & 0x800 else None, "ctime": ts(96),
            "mtime": ts(112)}


def _sha(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while True:
            b = f.read(1 << 20)
            if not b:
                break
            h.update(b)
    return h.hexdigest()


ALL_FIELDS = ("type", "mode", "size", "nlink", "mtime", "atime", "btime",
              "attr", "sha256")


def manifest(root, attrs=True):
    paths = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames.sort()
        for name in sorted(dirnames + filenames):
            paths.append(os.path.join(dirpath, name))
    sums = {p: _sha(p) for p in paths if not os.path.isdir(p)}
    out = {}
    for p in paths:
        st = statx(p)
        e = {"type": stat.S_IFMT(st["mode"]), "mode": oct(st["mode"]),
             "size": st["size"], "nlink": st["nlink"],
             "mtime": st["mtime"], "atime": st["atime"],
             "btime": st["btime"]}
        if attrs:
            e["attr"] = get_attr(p)
        if p in sums:
            e["sha256"] = sums[p]
        out[os.path.relpath(p, root)] = e
    return out


def project(m, fields):
    return {k: {f: v[f] for f in fields if f in v} for k, v in m.items()}


def compare(a, b, what_a="a", what_b="b", fields=ALL_FIELDS, limit=20):
    """Raise TestFailure listing the first differences on `fields`."""
    a, b = project(a, fields), project(b, fields)
    diffs = []
    for k in sorted(set(a) | set(b)):
        if k not in a:
            diffs.append(f"only in {what_b}: {k!r}")
        elif k not in b:
            diffs.append(f"only in {what_a}: {k!r}")
        elif a[k] != b[k]:
            diffs.append(f"{k!r}: " + ", ".join(
                f"{f}: {a[k].get(f)!r} vs {b[k].get(f)!r}"
                for f in fields if a[k].get(f) != b[k].get(f)))
        if len(diffs) >= limit:
            diffs.append("...")
            break
    if diffs:
        raise TestFailure(f"{what_a} and {what_b} differ:\n"
                          + "\n".join(diffs))


# --- exfat-fuse -------------------------------------------------------------

# exfat-fuse 1.3.0 (Debian 12), measured against the in-tree driver on
# in-tree-written volumes:
#  - names, sizes, file types: faithful
#  - contents: faithful up to ValidDataLength; past it, exfat-fuse returns
#    what is on disk instead of zeros (relan/exfat issue #185), so where the
#    in-tree driver reads a zero tail, exfat-fuse may differ
#  - atime: faithful (2 s units on disk, in-tree truncates the same way)
#  - mtime: whole seconds only (the 10 ms field is ignored), so compared
#    truncated to the second; ctime is reported as mtime
#  - btime: not reported (statx has no STATX_BTIME)
#  - mode: 0777 & ~umask for everything (read-only attribute not mapped)
#  - nlink: 1 for directories
#  - attributes: FAT_IOCTL_GET_ATTRIBUTES gives ENOTTY
#  - dates after 2100-02-28 are read a day late (its leap-year rule treats
#    2100 as a leap year), so trees compared with it stay before 2100
FUSE_FIELDS = ("type", "size", "sha256", "mtime_s", "atime")


def fuse_view(m):
    out = {}
    for k, v in m.items():
        e = {f: v[f] for f in ("type", "size", "atime", "sha256") if f in v}
        e["mtime_s"] = v["mtime"] // 1_000_000_000
        out[k] = e
    return out


class fuse_mount:
    """with fuse_mount(dev) as mnt: exfat-fuse, read-only."""

    def __init__(self, dev, mnt="/mnt/fuse"):
        self.dev, self.mnt = dev, mnt

    def __enter__(self):
        os.makedirs(self.mnt, exist_ok=True)
        sh(f"mount.exfat-fuse -o ro {self.dev} {self.mnt}")
        return self.mnt

    def __exit__(self, etype, e, tb):
        p = sh(f"umount {self.mnt}", check=False)
        if p.returncode:
            sh(f"umount -l {self.mnt}", check=False)
            if etype is None:
                raise TestFailure(f"umount {self.mnt} (fuse): {p.stderr}")
        return False


# --- allocation bitmap ------------------------------------------------------

def bitmap_free(dev):
    """(ClusterCount, free clusters per the allocation bitmap), read from
    the device: boot sector, root directory (FAT chain), bitmap entry."""
    with open(dev, "rb") as f:
        boot = f.read(512)
        if boot[3:11] != b"EXFAT   ":
            raise TestFailure(f"{dev}: not exFAT")
        fat_off, _, heap_off, count, root = struct.unpack_from("<IIIII",
                                                               boot, 80)
        bps = 1 << boot[108]
        bpc = bps << boot[109]

        def chain(first, nbytes=None):
            """The cluster chain from first (FAT chained)."""
            out, c = [], first
            while 2 <= c < count + 2 and len(out) <= count:
                out.append(c)
                if nbytes is not None and len(out) * bpc >= nbytes:
                    break
                f.seek(fat_off * bps + 4 * c)
                c = struct.unpack("<I", f.read(4))[0]
            return out

        def read_chain(clusters):
            data = b""
            for c in clusters:
                f.seek(heap_off * bps + (c - 2) * bpc)
                data += f.read(bpc)
            return data

        rootdir = read_chain(chain(root))
        for i in range(0, len(rootdir), 32):
            e = rootdir[i:i + 32]
            if e[0] == 0x81 and not e[1] & 1:      # first bitmap
                first, length = struct.unpack_from("<IQ", e, 20)
                break
            if e[0] == 0:
                raise TestFailure(f"{dev}: no allocation bitmap entry")
        else:
            raise TestFailure(f"{dev}: no allocation bitmap entry")
        # The bitmap may be contiguous without a FAT chain (NoFatChain is
        # not defined for it, but be lenient): fall back to contiguous.
        clusters = chain(first, length)
        if len(clusters) * bpc < length:
            clusters = list(range(first, first + (length + bpc - 1) // bpc))
        bm = read_chain(clusters)[:length]
    used = sum(bin(b).count("1") for b in bm[:count // 8])
    if count % 8:
        used += bin(bm[count // 8] & ((1 << (count % 8)) - 1)).count("1")
    return count, count - used


def dump_free(dev):
    out = sh(f"dump.exfat {dev}").stdout
    for line in out.splitlines():
        if line.strip().startswith("Free Clusters:"):
            return int(line.split(":")[1])
    raise TestFailure(f"no 'Free Clusters' in dump.exfat output:\n{out}")


# --- syscalls Python lacks ----------------------------------------------------

RENAME_NOREPLACE, RENAME_EXCHANGE, RENAME_WHITEOUT = 1, 2, 4
_SYS_renameat2 = 316        # x86_64


def renameat2(old, new, flags):
    r = _libc.syscall(_SYS_renameat2, _AT_FDCWD, os.fsencode(old),
                      _AT_FDCWD, os.fsencode(new), flags)
    if r != 0:
        e = ctypes.get_errno()
        raise OSError(e, os.strerror(e), old, None, new)


# --- fsx-lite -----------------------------------------------------------------

TOOLS_DIR = os.path.join(REPO, "tests", "tools")


def tool_binary(name, libs=""):
    """tests/tools/NAME, or a copy built into /tmp when the checkout's
    binary is older than its source (the checkout is read-only here)."""
    src = os.path.join(TOOLS_DIR, f"{name}.c")
    prebuilt = os.path.join(TOOLS_DIR, name)
    if os.path.exists(prebuilt) and \
            os.stat(prebuilt).st_mtime >= os.stat(src).st_mtime:
        return prebuilt
    with open(src, "rb") as f:
        key = hashlib.sha256(f.read()).hexdigest()[:12]
    out = f"/tmp/{name}-{key}"
    if not os.path.exists(out):
        sh(f"gcc -O2 -Wall -Wextra -o {out}.tmp {src} {libs} && "
           f"mv {out}.tmp {out}")
    return out


def fsx_binary():
    return tool_binary("fsx-lite")


def io_verify_binary():
    return tool_binary("io-verify", "-luring -lpthread")


# --- trees for the cross-driver tests --------------------------------------

# 10 ms units; before 2100 (exfat-fuse, see above); after 1980.
TIMES = [(1234567890_000000000, 1300000000_990000000),
         (315532800_000000000, 315532800_000000000),       # 1980-01-01
         (4102444798_000000000, 4102444799_990000000),     # 2099-12-31
         (1700000001_000000000, 1700000001_010000000)]


def write_tree(mnt, cluster, meta=True):
    """A rich tree: sizes around the cluster size, every kind of name,
    nesting, fragmented files, attributes, set times, read-only files.
    meta=False: names and data only (no attributes, modes or times), for
    a model of the tree on another file system (names through
    model_name())."""
    for i, n in enumerate([0, 1, 511, 512, cluster - 1, cluster,
                           cluster + 1, 3 * cluster + 5, 200000]):
        write_file(f"{mnt}/size-{n}", n, seed=i)
    os.mkdir(f"{mnt}/names")
    nm = str if meta else model_name
    for i, name in enumerate(NAMES):
        write_file(f"{mnt}/names/{nm(name)}", 97 * i + 3, seed=100 + i)
    d = mnt
    for depth in range(5):
        d = f"{d}/level{depth}"
        os.mkdir(d)
        write_file(f"{d}/f", depth * 1000 + 1, seed=200 + depth)
    os.mkdir(f"{mnt}/frag")
    interleave([f"{mnt}/frag/a", f"{mnt}/frag/b", f"{mnt}/frag/c"],
               cluster, 12, seed=300)
    os.mkdir(f"{mnt}/many")
    for i in range(60):
        write_file(f"{mnt}/many/entry-{i:02d}-" + "m" * (i % 25), i * 13,
                   seed=400 + i)
    os.mkdir(f"{mnt}/attrs")
    for name, attr in (("hidden", ATTR_HIDDEN), ("system", ATTR_SYSTEM),
                       ("hs", ATTR_HIDDEN | ATTR_SYSTEM),
                       ("none", 0), ("archive", ATTR_ARCHIVE)):
        write_file(f"{mnt}/attrs/{name}", 10)
        if meta:
            set_attr(f"{mnt}/attrs/{name}", attr)
    write_file(f"{mnt}/attrs/readonly", 10)
    if meta:
        os.chmod(f"{mnt}/attrs/readonly", 0o555)
    os.mkdir(f"{mnt}/attrs/hidden-dir")
    if meta:
        set_attr(f"{mnt}/attrs/hidden-dir", ATTR_HIDDEN)
    os.mkdir(f"{mnt}/times")
    for i, (at, mt) in enumerate(TIMES):
        write_file(f"{mnt}/times/t{i}", i)
        if meta:
            os.utime(f"{mnt}/times/t{i}", ns=(at, mt))
    os.mkdir(f"{mnt}/times/dir")
    if meta:
        os.utime(f"{mnt}/times/dir", ns=TIMES[0])
    os.mkdir(f"{mnt}/empty")


def _append(path, n, seed):
    with open(path, "ab") as f:
        f.write(pattern(n, seed))


def modify_tree(mnt, cluster, chmod_clears_ro=True, meta=True):
    """Every kind of change to a tree made by write_tree().
    chmod_clears_ro=False: clear the read-only attribute of a file loaded
    from disk with the ioctl, not chmod (works around an in-tree bug).
    meta=False: as for write_tree()."""
    # renames: same directory, across directories, of directories,
    # over an existing file, case-only
    os.rename(f"{mnt}/size-1", f"{mnt}/size-1-renamed")
    os.rename(f"{mnt}/size-512", f"{mnt}/names/moved-512")
    os.rename(f"{mnt}/level0/level1/level2", f"{mnt}/frag/level2-moved")
    os.rename(f"{mnt}/size-511", f"{mnt}/size-0")            # replaces
    os.rename(f"{mnt}/names/plain.txt", f"{mnt}/names/PLAIN.TXT")
    os.rename(f"{mnt}/empty", f"{mnt}/Empty")
    nm = str if meta else model_name
    os.rename(f"{mnt}/many/entry-07-mmmmmmm",
              f"{mnt}/many/" + nm("\u65e5\u672c" * 60))       # longer set
    os.rename(f"{mnt}/many/entry-30-mmmmm", f"{mnt}/many/s")  # shorter set
    # appends, within and across cluster boundaries
    _append(f"{mnt}/size-{cluster - 1}", 1, 600)
    _append(f"{mnt}/size-{cluster}", 3 * cluster + 17, 601)
    _append(f"{mnt}/frag/b", 5000, 602)
    # truncates down and up (up leaves ValidDataLength behind)
    os.truncate(f"{mnt}/size-200000", 70001)
    os.truncate(f"{mnt}/size-{3 * cluster + 5}", cluster)
    os.truncate(f"{mnt}/frag/a", 0)
    os.truncate(f"{mnt}/size-{cluster + 1}", 4 * cluster + 3)
    os.truncate(f"{mnt}/frag/c", 20 * cluster + 1)
    # overwrite in the middle
    with open(f"{mnt}/frag/c", "r+b") as f:
        f.seek(cluster // 2)
        f.write(pattern(cluster * 2, 603))
    # deletes: files, a deep tree, every other entry of a directory
    os.unlink(f"{mnt}/names/spaces and.dots.in.name")
    for i in range(0, 60, 2):
        p = f"{mnt}/many/entry-{i:02d}-" + "m" * (i % 25)
        if os.path.exists(p):
            os.unlink(p)
    os.unlink(f"{mnt}/frag/level2-moved/level3/level4/f")
    os.rmdir(f"{mnt}/frag/level2-moved/level3/level4")
    # mkdir/rmdir, new files in the holes left by the deletes
    os.mkdir(f"{mnt}/new-dir")
    os.mkdir(f"{mnt}/new-dir/sub")
    os.mkdir(f"{mnt}/gone")
    os.rmdir(f"{mnt}/gone")
    for i in range(10):
        write_file(f"{mnt}/many/new-{i}", i * 300, seed=700 + i)
    write_file(f"{mnt}/new-dir/sub/file", 3 * cluster, seed=710)
    if meta:
        _modify_meta(mnt, chmod_clears_ro)


def _modify_meta(mnt, chmod_clears_ro):
    """modify_tree()'s changes of attributes, modes and times."""
    set_attr(f"{mnt}/attrs/hidden", ATTR_SYSTEM | ATTR_ARCHIVE)
    set_attr(f"{mnt}/attrs/none", ATTR_HIDDEN)
    set_attr(f"{mnt}/names/moved-512", ATTR_HIDDEN | ATTR_SYSTEM)
    if chmod_clears_ro:
        os.chmod(f"{mnt}/attrs/readonly", 0o755)
    else:
        set_attr(f"{mnt}/attrs/readonly", ATTR_ARCHIVE)
    os.chmod(f"{mnt}/size-1-renamed", 0o555)
    os.utime(f"{mnt}/times/t1", ns=TIMES[3])
    os.utime(f"{mnt}/new-dir", ns=TIMES[2])
    os.utime(f"{mnt}/size-0", ns=TIMES[0])


def model_tree(cluster, modify=True):
    """The manifest (type, size, sha256) of write_tree() (and
    modify_tree()) done on tmpfs, with no exFAT driver involved."""
    root = "/tmp/exfat2-model"
    sh(f"rm -rf {root}; mkdir -p {root}")
    try:
        write_tree(root, cluster, meta=False)
        if modify:
            modify_tree(root, cluster, meta=False)
        return model_view(manifest(root, attrs=False))
    finally:
        sh(f"rm -rf {root}")


def model_name(name):
    """A name as model_tree() keeps it: exFAT takes 255 UTF-16 units, the
    file systems a model can live on 255 bytes of UTF-8."""
    if len(name.encode("utf-8", "surrogatepass")) <= 255:
        return name
    return "long-" + hashlib.sha256(name.encode("utf-8",
                                                "surrogatepass")).hexdigest()


def model_view(m):
    """What model_tree() knows of a manifest: files' type, size, sha256;
    directories' type (their sizes are each file system's own); names
    through model_name()."""
    return {"/".join(map(model_name, k.split("/"))):
            {f: v[f] for f in ("type", "size", "sha256") if f in v and
             not (f == "size" and stat.S_ISDIR(v["type"]))}
            for k, v in m.items()}

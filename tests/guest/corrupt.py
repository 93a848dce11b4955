#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Structure-aware corruption of exFAT images ("hostile media").

A base image is made by mkfs.exfat and populated by the pure-Python writer
below with a small tree: a few directories (one fragmented across its FAT
chain, one contiguous NoFatChain, one padded with deleted sets so that sets
straddle a cluster boundary), files of several sizes, two interleaved
fragmented files, a contiguous NoFatChain file, a FAT-chained contiguous
file, a file with ValidDataLength < DataLength, a 255-unit name, a volume
label and a root directory of several clusters.  The volume serial is fixed
so that a base is the same on every run.

mutate(bases, seed) then returns (image, one-line description, base): the
image is a pure function of the bases and the seed.  The seed also picks
the base (BASES: 512 B and 4 KiB sectors, 512 B to 4 KiB clusters, 2 to 8
MiB).  The mutations know every metadata structure: boot sectors and their
checksums (recomputed or not, main, backup or both), FAT chains, the
allocation bitmap, the up-case table, directory entry sets (with the
SetChecksum, and the NameHash where a name changes, recomputed so that the
checks behind them run), plus random byte flips in each metadata region.
One seed in five stacks several mutations (two or three; four to eight for
one seed in fifteen); a mutation that changes nothing is followed by
another.

Runs on the host too (Python 3 stdlib and mkfs.exfat from exfatprogs):

    corrupt.py --seed 17 -o /tmp/17.img     write the image of seed 17
    corrupt.py --seeds 1-20                 print the descriptions only
    corrupt.py --base s512-c512 -o b.img    write a base image
    corrupt.py --list-bases

The library API (used by fuzz.py):
    build_bases(workdir=None) -> {name: Base}   (cached in workdir)
    mutate(bases, seed, bufs=None) -> (bytearray, description, Base)
"""

import argparse
import os
import random
import struct
import subprocess
import sys
import tempfile

# ---------------------------------------------------------------------------
# On-disk constants (exfat2/exfat_format.h, spec section numbers)

DENTRY = 32
T_EOD, T_BITMAP, T_UPCASE, T_LABEL, T_FILE = 0x00, 0x81, 0x82, 0x83, 0x85
T_GUID, T_STREAM, T_NAME = 0xA0, 0xC0, 0xC1
T_VENDOR_EXT, T_VENDOR_ALLOC = 0xE0, 0xE1
ATTR_RO, ATTR_HIDDEN, ATTR_SYSTEM, ATTR_VOLUME = 0x01, 0x02, 0x04, 0x08
ATTR_DIR, ATTR_ARCHIVE = 0x10, 0x20
SF_ALLOC, SF_NOFAT = 0x01, 0x02
FAT_BAD, FAT_EOC, FAT_MEDIA = 0xFFFFFFF7, 0xFFFFFFFF, 0xFFFFFFF8
SERIAL = 0x46555A5A             # "ZZUF": fixed, so that bases reproduce

# Boot sector fields: name -> (offset, struct format)
BOOT_FIELDS = {
    "JumpBoot": (0, "3s"),
    "FileSystemName": (3, "8s"),
    "MustBeZero": (11, "53s"),
    "PartitionOffset": (64, "<Q"),
    "VolumeLength": (72, "<Q"),
    "FatOffset": (80, "<I"),
    "FatLength": (84, "<I"),
    "ClusterHeapOffset": (88, "<I"),
    "ClusterCount": (92, "<I"),
    "FirstClusterOfRootDirectory": (96, "<I"),
    "VolumeSerialNumber": (100, "<I"),
    "FileSystemRevision": (104, "<H"),
    "VolumeFlags": (106, "<H"),
    "BytesPerSectorShift": (108, "B"),
    "SectorsPerClusterShift": (109, "B"),
    "NumberOfFats": (110, "B"),
    "DriveSelect": (111, "B"),
    "PercentInUse": (112, "B"),
    "BootSignature": (510, "<H"),
}

# ---------------------------------------------------------------------------
# Checksums and hashes (spec §3.4, §6.3.3, §7.2.2, §7.6.4)


def _ror32_add(s, b):
    return ((((s >> 1) | (s << 31)) & 0xFFFFFFFF) + b) & 0xFFFFFFFF


def boot_checksum(region, sector_size):
    """§3.4: over sectors 0..10 of a boot region, skipping VolumeFlags and
    PercentInUse of the boot sector."""
    s = 0
    for i in range(11 * sector_size):
        if i in (106, 107, 112):
            continue
        s = _ror32_add(s, region[i])
    return s


def upcase_checksum(data):
    s = 0
    for b in data:
        s = _ror32_add(s, b)
    return s


def set_checksum(raw):
    """§6.3.3 over the entries of a set (bytes), skipping bytes 2-3."""
    s = 0
    for i, b in enumerate(raw):
        if i in (2, 3):
            continue
        s = ((((s >> 1) | (s << 15)) & 0xFFFF) + b) & 0xFFFF
    return s


def name_hash(units, upcase):
    h = 0
    for u in units:
        c = upcase[u] if u < len(upcase) else u
        for b in (c & 0xFF, c >> 8):
            h = ((((h >> 1) | (h << 15)) & 0xFFFF) + b) & 0xFFFF
    return h


def expand_upcase(data):
    """§7.2.5 compressed or not -> list of 65536 mappings (lenient)."""
    table = list(range(0x10000))
    vals = struct.unpack(f"<{len(data) // 2}H", data[:len(data) // 2 * 2])
    idx = i = 0
    while i < len(vals) and idx < 0x10000:
        v = vals[i]
        if v == 0xFFFF and idx != 0xFFFF and i + 1 < len(vals):
            idx += vals[i + 1]
            i += 2
            continue
        table[idx] = v
        idx += 1
        i += 1
    return table


def utf16_units(name):
    b = name.encode("utf-16-le", "surrogatepass")
    return list(struct.unpack(f"<{len(b) // 2}H", b))


def timestamp(y, mo, d, h, mi, s):
    return ((y - 1980) << 25) | (mo << 21) | (d << 16) | (h << 11) | \
        (mi << 5) | (s // 2)


# ---------------------------------------------------------------------------
# Geometry and low-level access


class Geo:
    """Geometry of an exFAT image, read from its (trusted) main boot sector."""

    def __init__(self, img):
        bs = img[:512]
        self.sector = 1 << bs[108]
        self.clu = self.sector << bs[109]
        self.vol_len = struct.unpack_from("<Q", bs, 72)[0] * self.sector
        self.fat_off = struct.unpack_from("<I", bs, 80)[0] * self.sector
        self.fat_len = struct.unpack_from("<I", bs, 84)[0] * self.sector
        self.heap_off = struct.unpack_from("<I", bs, 88)[0] * self.sector
        self.clu_count = struct.unpack_from("<I", bs, 92)[0]
        self.root = struct.unpack_from("<I", bs, 96)[0]
        self.num_fats = bs[110]
        self.epc = self.clu // DENTRY      # entries per cluster

    def coff(self, c):
        return self.heap_off + (c - 2) * self.clu

    def foff(self, c):
        return self.fat_off + 4 * c

    def valid(self, c):
        return 2 <= c < self.clu_count + 2


def fat_get(img, geo, c):
    return struct.unpack_from("<I", img, geo.foff(c))[0]


def fat_set(img, geo, c, v):
    struct.pack_into("<I", img, geo.foff(c), v & 0xFFFFFFFF)


def bitmap_get(img, bm_off, c):
    i = c - 2
    return (img[bm_off + i // 8] >> (i % 8)) & 1


def bitmap_put(img, bm_off, c, v):
    i = c - 2
    if v:
        img[bm_off + i // 8] |= 1 << (i % 8)
    else:
        img[bm_off + i // 8] &= ~(1 << (i % 8)) & 0xFF


def chain(img, geo, first, nofat, nclus):
    """Cluster list of a (trusted) stream."""
    if not first:
        return []
    if nofat:
        return list(range(first, first + nclus))
    out, c = [], first
    while geo.valid(c) and len(out) <= geo.clu_count:
        out.append(c)
        c = fat_get(img, geo, c)
    return out


def write_boot_regions(img, sector, boot512=None, regions=(0, 1)):
    """(Re)write the checksum sector of each region in regions; with
    boot512, first lay out the whole region from that boot sector (sector
    size `sector`): ExcessSpace zeroed, extended boot sectors with their
    signature, OEM parameters 0xFF, reserved sector zero."""
    for r in regions:
        base = r * 12 * sector
        if boot512 is not None:
            img[base:base + 12 * sector] = bytes(12 * sector)
            img[base:base + 512] = boot512
            for s in range(1, 9):
                struct.pack_into("<I", img, base + (s + 1) * sector - 4,
                                 0xAA550000)
            img[base + 9 * sector:base + 10 * sector] = b"\xff" * sector
        csum = boot_checksum(img[base:base + 11 * sector], sector)
        img[base + 11 * sector:base + 12 * sector] = \
            struct.pack("<I", csum) * (sector // 4)


# ---------------------------------------------------------------------------
# The populated tree (pure-Python writer on a fresh mkfs.exfat image)

LONG_NAME = ("Long-\u00dcnic\u00f8de-\u65e5\u672c-" + "n" * 300)[:255]
TS = timestamp(2024, 5, 6, 7, 8, 10)


class Writer:
    def __init__(self, img):
        self.img = img
        self.geo = g = Geo(img)
        root = chain(img, g, g.root, False, 0)
        self.root_clusters = root
        self.bm_off = None
        for i in range(len(root) * g.epc):
            off = g.coff(root[i // g.epc]) + (i % g.epc) * DENTRY
            t = img[off]
            if t == T_BITMAP:
                fc, ln = struct.unpack_from("<IQ", img, off + 20)
                self.bm_off = g.coff(fc)
            elif t == T_UPCASE:
                fc, ln = struct.unpack_from("<IQ", img, off + 20)
                data = bytes(b for c in chain(img, g, fc, False, 0)
                             for b in img[g.coff(c):g.coff(c) + g.clu])[:ln]
                self.upcase = expand_upcase(data)
            elif t == T_EOD:
                self.root_used = i
                break

    def free(self, c):
        return not bitmap_get(self.img, self.bm_off, c)

    def take(self, c):
        assert self.free(c)
        bitmap_put(self.img, self.bm_off, c, 1)

    def alloc(self, n, how="contig"):
        """n clusters: 'contig' (first fit run), 'frag' (every other free
        cluster, leaving holes for the next allocations)."""
        g = self.geo
        if how == "contig":
            for s in range(2, g.clu_count + 2 - n + 1):
                if all(self.free(c) for c in range(s, s + n)):
                    out = list(range(s, s + n))
                    break
            else:
                raise RuntimeError("volume full")
        else:
            out, c, skip = [], 2, False
            while len(out) < n:
                if self.free(c):
                    if not skip:
                        out.append(c)
                    skip = not skip
                c += 1
        for c in out:
            self.take(c)
        return out

    def link(self, clusters):
        for a, b in zip(clusters, clusters[1:]):
            fat_set(self.img, self.geo, a, b)
        if clusters:
            fat_set(self.img, self.geo, clusters[-1], FAT_EOC)

    def write_data(self, clusters, data):
        g = self.geo
        for i, c in enumerate(clusters):
            part = data[i * g.clu:(i + 1) * g.clu]
            self.img[g.coff(c):g.coff(c) + len(part)] = part

    def make_set(self, name, attr, first, size, vdl, nofat):
        units = utf16_units(name)
        nnames = (len(units) + 14) // 15
        ents = bytearray(DENTRY * (2 + nnames))
        struct.pack_into("<BBHHHIII", ents, 0, T_FILE, 1 + nnames, 0, attr, 0,
                         TS, TS + 1, TS + 2)
        ents[20:25] = bytes([55, 123, 0x80 | 4, 0x80 | 4, 0x80 | 4])
        flags = (SF_ALLOC if first else 0) | (SF_NOFAT if nofat else 0)
        struct.pack_into("<BBBBHHQIIQ", ents, 32, T_STREAM, flags, 0,
                         len(units), name_hash(units, self.upcase), 0, vdl,
                         0, first, size)
        for k in range(nnames):
            part = units[15 * k:15 * k + 15]
            part += [0] * (15 - len(part))
            struct.pack_into("<BB15H", ents, 64 + 32 * k, T_NAME, 0, *part)
        struct.pack_into("<H", ents, 2, set_checksum(ents))
        return ents


class Dir:
    def __init__(self, w, clusters, nofat):
        self.w, self.clusters, self.nofat = w, clusters, nofat
        self.used = 0

    def slot(self, i):
        g = self.w.geo
        return g.coff(self.clusters[i // g.epc]) + (i % g.epc) * DENTRY

    def add(self, ents):
        for k in range(0, len(ents), DENTRY):
            if self.used >= len(self.clusters) * self.w.geo.epc:
                raise RuntimeError("directory full")
            off = self.slot(self.used)
            self.w.img[off:off + DENTRY] = ents[k:k + DENTRY]
            self.used += 1


def pattern(n, seed):
    r = random.Random(seed)
    return r.randbytes(n) if n else b""


def add_file(w, d, name, size, how="nofat", vdl=None, seed=0, clusters=None):
    g = w.geo
    n = (size + g.clu - 1) // g.clu
    if clusters is None:
        clusters = w.alloc(n, "frag" if how == "frag" else "contig") if n \
            else []
    if how != "nofat":
        w.link(clusters)
    vdl = size if vdl is None else vdl
    w.write_data(clusters, pattern(vdl, seed))
    d.add(w.make_set(name, ATTR_ARCHIVE, clusters[0] if clusters else 0,
                     size, vdl, how == "nofat" and n > 0))
    return clusters


def add_dir(w, parent, name, nclus, how="nofat"):
    clusters = w.alloc(nclus, "frag" if how == "frag" else "contig")
    if how != "nofat":
        w.link(clusters)
    for c in clusters:
        w.img[w.geo.coff(c):w.geo.coff(c) + w.geo.clu] = bytes(w.geo.clu)
    size = nclus * w.geo.clu
    parent.add(w.make_set(name, ATTR_DIR, clusters[0], size, size,
                          how == "nofat"))
    return Dir(w, clusters, how == "nofat")


def populate(img):
    w = Writer(img)
    g = w.geo
    C = g.clu
    # Root: reuse its cluster, grow the chain later.
    root = Dir(w, list(w.root_clusters), False)
    root.used = w.root_used
    # Enough room in the root for everything below; extend its chain with
    # clusters that are not next to its first one.
    need = max(2, (root.used + 12 * 3 + 20 + g.epc - 1) // g.epc)
    spare = w.alloc(1)      # a hole-maker: freed again at the end
    extra = w.alloc(max(0, need - len(root.clusters)) + 1, "frag")
    spare.append(extra.pop(0))
    root.clusters += extra
    w.link(root.clusters)
    for c in extra:
        img[g.coff(c):g.coff(c) + C] = bytes(C)

    add_file(w, root, "readme.txt", 100, seed=1)
    add_file(w, root, "empty", 0)
    add_file(w, root, "contig.bin", 5 * C + 17, seed=2)
    add_file(w, root, "chain.bin", 3 * C, how="chain", seed=3)
    # two files grown in turns: interleaved FAT chains
    both = w.alloc(14, "contig")
    add_file(w, root, "frag1.bin", 7 * C - 9, how="chain", seed=4,
             clusters=both[0::2])
    add_file(w, root, "frag2.bin", 7 * C, how="chain", seed=5,
             clusters=both[1::2])
    add_file(w, root, "vdl.bin", 4 * C, vdl=1000, seed=6)
    add_file(w, root, LONG_NAME, 300, seed=7)

    # dirA: fragmented FAT chain, deleted sets first so that live sets
    # straddle the cluster boundary, many small files.
    a = add_dir(w, root, "dirA", 4, how="frag")
    pad = g.epc - 2
    while pad > 0:
        n = min(pad, 3)
        ents = w.make_set("gone%d" % pad, ATTR_ARCHIVE, 0, 0, 0, False)
        ents = bytearray(ents[:n * DENTRY])
        for k in range(n):
            ents[k * DENTRY] &= 0x7F
        a.add(ents)
        pad -= n
    for i in range(10):
        size = [0, 1, 511, 512, C - 1, C, C + 1, 2 * C + 3, 40, 3000][i]
        add_file(w, a, "f%02d-%s" % (i, "x" * (i * 3)), size,
                 how="chain" if i % 2 else "nofat", seed=100 + i)
    sub = add_dir(w, a, "sub", 1)
    add_file(w, sub, "deep.txt", 700, how="chain", seed=200)
    add_dir(w, sub, "deeper", 1)
    # dirB: contiguous NoFatChain directory of two clusters
    b = add_dir(w, root, "dirB", 2)
    add_file(w, b, "CaseName.TXT", 1234, seed=300)
    add_file(w, b, "x.bin", 2 * C + 100, how="frag", seed=301)
    add_dir(w, root, "emptydir", 1, how="chain")
    # the holes: free, now that everything is placed around them
    for c in spare:
        bitmap_put(w.img, w.bm_off, c, 0)
    return img


# ---------------------------------------------------------------------------
# Bases

# name: (size MiB, sector bytes, cluster bytes, mkfs.exfat -b boundary)
BASES = {
    "s512-c512": (4, 512, 512, "4K"),
    "s512-c4k": (8, 512, 4096, None),
    "s512-c1k": (2, 512, 1024, "4K"),
    "s4k-c4k": (8, 4096, 4096, "128K"),
}


def mkfs_image(size_mb, cluster, boundary, label="FUZZ-VOL"):
    fd, path = tempfile.mkstemp(prefix="exfat2-base-", suffix=".img")
    try:
        os.ftruncate(fd, size_mb << 20)
        os.close(fd)
        cmd = ["mkfs.exfat", "-c", str(cluster), "-L", label]
        if boundary:
            cmd += ["-b", boundary]
        p = subprocess.run(cmd + [path], capture_output=True, text=True)
        if p.returncode:
            raise RuntimeError(f"{' '.join(cmd)} failed: {p.stdout}{p.stderr}")
        with open(path, "rb") as f:
            return bytearray(f.read())
    finally:
        os.unlink(path)


def to_4k_sectors(img):
    """Turn a 512-byte-sector image into the same volume with 4 KiB
    sectors (the regions are 4 KiB aligned by mkfs.exfat -b)."""
    bs = bytearray(img[:512])
    f = {k: struct.unpack_from(BOOT_FIELDS[k][1], bs, BOOT_FIELDS[k][0])[0]
         for k in ("VolumeLength", "FatOffset", "FatLength",
                   "ClusterHeapOffset")}
    for k in ("VolumeLength", "FatOffset", "ClusterHeapOffset"):
        assert f[k] % 8 == 0, k
        struct.pack_into(BOOT_FIELDS[k][1], bs, BOOT_FIELDS[k][0], f[k] // 8)
    struct.pack_into("<I", bs, 84, (f["FatLength"] + 7) // 8)
    assert bs[109] >= 3
    bs[108], bs[109] = 12, bs[109] - 3
    assert f["FatOffset"] // 8 >= 24
    img[:24 * 4096] = bytes(24 * 4096)
    write_boot_regions(img, 4096, boot512=bs)
    return img


class Base:
    """A populated base image and what the mutations need to know of it."""

    def __init__(self, name, img):
        self.name, self.img = name, bytes(img)
        self.model = Model(self.img)
        self.sector = self.model.geo.sector


def make_base(name):
    size_mb, sector, cluster, boundary = BASES[name]
    img = mkfs_image(size_mb, cluster, boundary)
    if sector == 4096:
        img = to_4k_sectors(img)
    bs = bytearray(img[:512])
    struct.pack_into("<I", bs, 100, SERIAL)
    write_boot_regions(img, sector, boot512=bs)
    populate(img)
    return Base(name, img)


def build_bases(workdir=None, names=None):
    """Build (or load from workdir, where they are cached) every base."""
    out = {}
    for name in names or BASES:
        path = os.path.join(workdir, f"base-{name}.img") if workdir else None
        if path and os.path.exists(path):
            with open(path, "rb") as f:
                out[name] = Base(name, f.read())
            continue
        out[name] = make_base(name)
        if path:
            os.makedirs(workdir, exist_ok=True)
            with open(path + ".tmp", "wb") as f:
                f.write(out[name].img)
            os.rename(path + ".tmp", path)
    return out


# ---------------------------------------------------------------------------
# Model: every metadata structure of a (trusted) base, by byte offset


class Set:
    """An entry set of the tree: offs are the byte offsets of its entries."""

    def __init__(self, path, d, offs, img, geo):
        self.path, self.dir, self.offs = path, d, offs
        f, s = offs[0], offs[1]
        self.attr = struct.unpack_from("<H", img, f + 4)[0]
        self.is_dir = bool(self.attr & ATTR_DIR)
        self.flags = img[s + 1]
        self.nofat = bool(self.flags & SF_NOFAT)
        self.name_len = img[s + 3]
        self.vdl, = struct.unpack_from("<Q", img, s + 8)
        self.first, self.size = struct.unpack_from("<IQ", img, s + 20)
        n = (self.size + geo.clu - 1) // geo.clu
        self.clusters = chain(img, geo, self.first, self.nofat, n)
        self.name = path.rsplit("/", 1)[-1]


class DirInfo:
    def __init__(self, path, first, clusters, geo, parent, set_=None):
        self.path, self.first, self.clusters = path, first, clusters
        self.parent, self.set = parent, set_
        self.slots = [geo.coff(clusters[i // geo.epc]) + (i % geo.epc) * DENTRY
                      for i in range(len(clusters) * geo.epc)]
        self.sets = []
        self.free_slots = []        # slot indexes of EOD/unused entries
        self.eod = None             # slot index of the first EOD


class Model:
    def __init__(self, img):
        self.geo = g = Geo(img)
        self.sets, self.dirs = [], []
        self.root = self._scan_dir(img, "", g.root,
                                   chain(img, g, g.root, False, 0), None)

    def _scan_dir(self, img, path, first, clusters, parent, set_=None):
        g = self.geo
        d = DirInfo(path, first, clusters, g, parent, set_)
        self.dirs.append(d)
        i = 0
        while i < len(d.slots):
            off = d.slots[i]
            t = img[off]
            if t == T_EOD:
                if d.eod is None:
                    d.eod = i
                d.free_slots.append(i)
                i += 1
                continue
            if path == "" and t == T_BITMAP:
                self.bitmap_ent = off
                self.bitmap_first, self.bitmap_len = \
                    struct.unpack_from("<IQ", img, off + 20)
                self.bitmap_off = g.coff(self.bitmap_first)
                self.bitmap_clusters = chain(img, g, self.bitmap_first, False,
                                             0)
            elif path == "" and t == T_UPCASE:
                self.upcase_ent = off
                self.upcase_first, self.upcase_len = \
                    struct.unpack_from("<IQ", img, off + 20)
                self.upcase_clusters = chain(img, g, self.upcase_first, False,
                                             0)
                self.upcase_data = b"".join(
                    img[g.coff(c):g.coff(c) + g.clu]
                    for c in self.upcase_clusters)[:self.upcase_len]
            elif path == "" and t == T_LABEL:
                self.label_ent = off
            elif t == T_FILE:
                n = img[off + 1]
                offs = d.slots[i:i + 1 + n]
                units = []
                for o in offs[2:]:
                    units += struct.unpack_from("<15H", img, o + 2)
                nl = img[offs[1] + 3]
                name = struct.pack(f"<{nl}H", *units[:nl]).decode(
                    "utf-16-le", "replace")
                s = Set(f"{path}/{name}", d, offs, img, g)
                d.sets.append(s)
                self.sets.append(s)
                if s.is_dir:
                    self._scan_dir(img, s.path, s.first, s.clusters, d, s)
                i += 1 + n
                continue
            i += 1
        return d

    def dir_of(self, s):
        return next(d for d in self.dirs if d.set is s)


# ---------------------------------------------------------------------------
# Mutations.  Each takes (Mut) and returns a description; they edit m.img.


class Mut:
    def __init__(self, base, img, rng):
        self.base, self.img, self.rng = base, img, rng
        self.m = base.model
        self.g = base.model.geo

    # helpers
    def u8(self, off, v):
        self.img[off] = v & 0xFF

    def u16(self, off, v):
        struct.pack_into("<H", self.img, off, v & 0xFFFF)

    def u32(self, off, v):
        struct.pack_into("<I", self.img, off, v & 0xFFFFFFFF)

    def u64(self, off, v):
        struct.pack_into("<Q", self.img, off, v & (2**64 - 1))

    def get32(self, off):
        return struct.unpack_from("<I", self.img, off)[0]

    def pick(self, seq):
        return self.rng.choice(list(seq))

    def pick_new(self, seq, cur):
        """One of seq that is not cur (cur itself if there is none)."""
        seq = [v for v in seq if v != cur]
        return self.rng.choice(seq) if seq else cur

    def resum(self, s, n=None):
        """Recompute the SetChecksum of set s over its (first n) entries."""
        n = n or 1 + self.img[s.offs[0] + 1]
        offs = self.slots_from(s, n)
        raw = b"".join(bytes(self.img[o:o + DENTRY]) for o in offs)
        self.u16(s.offs[0] + 2, set_checksum(raw))

    def slots_from(self, s, n):
        d = s.dir
        i = d.slots.index(s.offs[0])
        return d.slots[i:i + n]

    def rehash(self, s):
        units = []
        for o in s.offs[2:]:
            units += struct.unpack_from("<15H", self.img, o + 2)
        nl = self.img[s.offs[1] + 3]
        up = self.upcase()
        self.u16(s.offs[1] + 4, name_hash(units[:nl], up))

    def upcase(self):
        if not hasattr(self.base, "_up"):
            self.base._up = expand_upcase(self.m.upcase_data)
        return self.base._up

    def files(self):
        return [s for s in self.m.sets if not s.is_dir]

    def chained(self):
        """(name, cluster list) of every FAT chain of at least one cluster."""
        out = [(s.path, s.clusters) for s in self.m.sets
               if s.clusters and not s.nofat]
        out.append(("root directory", self.m.root.clusters))
        out.append(("allocation bitmap", self.m.bitmap_clusters))
        out.append(("up-case table", self.m.upcase_clusters))
        return out

    def bad_cluster(self):
        g = self.g
        return self.pick([0, 1, g.clu_count + 2, g.clu_count + 3,
                          g.clu_count + 2 + self.rng.randrange(1, 1 << 16),
                          0x0FFFFFFF, 0xFFFFFFF6, 0xFFFFFFF7, 0xFFFFFFF8,
                          0xFFFFFFFF, 0x80000000])

    def used_clusters(self):
        out = set(self.m.bitmap_clusters) | set(self.m.upcase_clusters) | \
            set(self.m.root.clusters)
        for s in self.m.sets:
            out |= set(s.clusters)
        return out

    def free_clusters(self):
        used = self.used_clusters()
        return [c for c in range(2, self.g.clu_count + 2) if c not in used]

    def boot_set(self, field, value, regions):
        off, fmt = BOOT_FIELDS[field]
        for r in regions:
            base = r * 12 * self.g.sector
            if isinstance(value, bytes):
                self.img[base + off:base + off + len(value)] = value
            else:
                size = struct.calcsize(fmt)
                struct.pack_into(fmt, self.img, base + off,
                                 value & ((1 << (8 * size)) - 1))


def _boot_value(mu, field):
    """An interesting wrong (or edge) value for a boot sector field."""
    g, r = mu.g, mu.rng
    sec = g.sector
    cur_off, fmt = BOOT_FIELDS[field]
    cur = struct.unpack_from(fmt, mu.img, cur_off)[0]
    if field == "JumpBoot":
        return mu.pick([b"\xeb\x3c\x90", b"\x00\x00\x00", b"\xe9\x76\x90"])
    if field == "FileSystemName":
        return mu.pick([b"EXFAT\0\0\0", b"exfat   ", b"FAT32   ", b"NTFS    "])
    if field == "MustBeZero":
        k = r.randrange(53)
        return bytes(k) + bytes([r.randrange(1, 256)]) + bytes(52 - k)
    if field == "BootSignature":
        return mu.pick([0, 0x55AA, 0xAA56])
    if field == "BytesPerSectorShift":
        return mu.pick([0, 8, 9, 10, 11, 12, 13, 31, 255])
    if field == "SectorsPerClusterShift":
        shift = g.sector.bit_length() - 1
        return mu.pick([0, 1, 3, 16, 25 - shift, 26 - shift, 255, cur + 1])
    if field == "NumberOfFats":
        return mu.pick([0, 2, 3, 255])
    if field == "FileSystemRevision":
        return mu.pick([0x0000, 0x0200, 0x01FF, 0x0101, 0xFFFF])
    if field == "VolumeFlags":
        return mu.pick([1, 2, 4, 8, 0xFFFF])
    if field == "PercentInUse":
        return mu.pick([101, 0xFE, 0xFF, 0])
    big = [0, 1, cur - 1, cur + 1, cur * 2, cur + r.randrange(1, 1 << 16),
           (1 << (8 * struct.calcsize(fmt))) - 1]
    if field == "VolumeLength":
        return mu.pick(big + [(1 << 20) // sec - 1, g.vol_len // sec * 2,
                              1 << 32, 1 << 40, 1 << 63])
    if field == "FatOffset":
        return mu.pick(big + [23, 24, g.heap_off // sec,
                              g.vol_len // sec - 1])
    if field == "FatLength":
        return mu.pick(big + [(g.clu_count + 2) * 4 // sec - 1,
                              g.heap_off // sec])
    if field == "ClusterHeapOffset":
        return mu.pick(big + [(g.fat_off + g.fat_len) // sec - 1,
                              g.vol_len // sec, g.fat_off // sec])
    if field == "ClusterCount":
        return mu.pick(big + [0xFFFFFFF5, 0xFFFFFFF6, 2, 3,
                              (g.vol_len - g.heap_off) // g.clu + 1,
                              (g.fat_len // 4) - 1])
    if field == "FirstClusterOfRootDirectory":
        return mu.pick([0, 1, g.clu_count + 1, g.clu_count + 2, 0xFFFFFFFF,
                        mu.m.bitmap_first, mu.m.upcase_first,
                        mu.pick(mu.m.sets).first or 2,
                        mu.pick(mu.free_clusters())])
    if field in ("PartitionOffset", "VolumeSerialNumber", "DriveSelect"):
        return r.randrange(1 << (8 * struct.calcsize(fmt)))
    return r.randrange(1 << (8 * struct.calcsize(fmt)))


def mut_boot_field(mu):
    field = mu.pick(BOOT_FIELDS)
    off, fmt = BOOT_FIELDS[field]
    cur = struct.unpack_from(fmt, mu.img, off)[0]
    for _ in range(8):
        val = _boot_value(mu, field)
        if val != cur:
            break
    where = mu.pick(["main", "main", "both", "backup"])
    regions = {"main": (0,), "both": (0, 1), "backup": (1,)}[where]
    mu.boot_set(field, val, regions)
    resum = mu.rng.random() < 0.75
    if resum:
        write_boot_regions(mu.img, mu.g.sector, regions=regions)
    v = val.hex() if isinstance(val, bytes) else hex(val)
    return (f"boot.field: {field}={v} in {where} boot region, checksum "
            f"{'recomputed' if resum else 'stale'}")


def mut_boot_checksum(mu):
    where = mu.pick(["main", "both", "backup"])
    regions = {"main": (0,), "both": (0, 1), "backup": (1,)}[where]
    sec = mu.g.sector
    how = mu.pick(["one word", "whole sector"])
    for r in regions:
        off = r * 12 * sec + 11 * sec
        if how == "one word":
            k = mu.rng.randrange(sec // 4)
            mu.u32(off + 4 * k, mu.get32(off + 4 * k) ^ 1)
        else:
            mu.img[off:off + sec] = bytes(sec)
    return f"boot.checksum: {how} of the checksum sector wrong in {where}"


def mut_boot_sectors(mu):
    """Extended boot sectors, OEM parameters, main region wiped."""
    sec = mu.g.sector
    what = mu.pick(["ext-signature", "oem", "wipe-main", "wipe-both",
                    "backup-differs"])
    if what == "ext-signature":
        s = mu.rng.randrange(1, 9)
        where = mu.pick(["main", "both"])
        for r in ((0,) if where == "main" else (0, 1)):
            mu.u32(r * 12 * sec + (s + 1) * sec - 4, 0x12345678)
        write_boot_regions(mu.img, sec, regions=(0, 1))
        return (f"boot.ext: ExtendedBootSignature of sector {s} wrong in "
                f"{where}, checksum recomputed")
    if what == "oem":
        for r in (0, 1):
            off = r * 12 * sec + 9 * sec
            mu.img[off:off + sec] = mu.rng.randbytes(sec)
        write_boot_regions(mu.img, sec, regions=(0, 1))
        return "boot.oem: random OEM parameters sector, checksum recomputed"
    if what == "wipe-main":
        mu.img[:12 * sec] = bytes(12 * sec)
        return "boot.wipe: main boot region zeroed (backup intact)"
    if what == "wipe-both":
        mu.img[:24 * sec] = bytes(24 * sec)
        return "boot.wipe: main and backup boot regions zeroed"
    # the backup says something else than the main: only main is used
    mu.boot_set("ClusterCount", 7, (1,))
    write_boot_regions(mu.img, sec, regions=(1,))
    return "boot.backup: backup region valid but different (ClusterCount=7)"


def mut_boot_geometry(mu):
    """Consistent-looking geometry changes in both regions, checksums
    recomputed: the field checks and the mount's use of them run."""
    g, sec = mu.g, mu.g.sector
    what = mu.pick(["heap-past-end", "count-up", "fat-overlap-heap",
                    "root-bitmap", "sector-shift", "cluster-shift",
                    "vol-shrink", "fat-into-boot"])
    regions = (0, 1)
    if what == "heap-past-end":
        mu.boot_set("ClusterCount", (g.vol_len - g.heap_off) // g.clu + 1,
                    regions)
    elif what == "count-up":
        n = (g.fat_len // 4) - 2
        mu.boot_set("ClusterCount", n, regions)
        mu.boot_set("VolumeLength", max(g.vol_len // sec, (g.heap_off + n *
                                                           g.clu) // sec),
                    regions)
    elif what == "fat-overlap-heap":
        mu.boot_set("FatOffset", g.heap_off // sec - 1, regions)
    elif what == "root-bitmap":
        mu.boot_set("FirstClusterOfRootDirectory", mu.m.bitmap_first, regions)
    elif what == "sector-shift":
        mu.boot_set("BytesPerSectorShift", 21 - sec.bit_length(), regions)
    elif what == "cluster-shift":
        cs = mu.img[109]
        mu.boot_set("SectorsPerClusterShift", cs + mu.pick([1, -1 if cs else
                                                            2]), regions)
    elif what == "vol-shrink":
        mu.boot_set("VolumeLength", (g.heap_off + g.clu * 4) // sec, regions)
    else:
        mu.boot_set("FatOffset", 12, regions)
    write_boot_regions(mu.img, sec, regions=regions)
    return f"boot.geometry: {what} in both regions, checksums recomputed"


def mut_vol_flags(mu):
    v = mu.pick([EXFAT_VF for EXFAT_VF in (1, 2, 4, 8, 3, 6, 0xFFFF, 0x10)])
    mu.boot_set("VolumeFlags", v, (0,))
    return f"boot.flags: VolumeFlags={v:#x} (outside the checksum)"


# FAT -----------------------------------------------------------------------


def _pick_chain(mu, minlen=1):
    cands = [(n, c) for n, c in mu.chained() if len(c) >= minlen]
    return mu.pick(cands)


def mut_fat(mu):
    g = mu.g
    kind = mu.pick(["loop", "self", "cross", "range", "eoc", "bad", "free",
                    "media", "extend", "shared-tail"])
    if kind == "loop":
        name, cl = _pick_chain(mu, 2)
        i = mu.rng.randrange(1, len(cl))
        j = mu.rng.randrange(0, i)
        fat_set(mu.img, g, cl[i], cl[j])
        return (f"fat.loop: {name} chain[{i}] (clu {cl[i]}) "
                f"-> chain[{j}] (clu {cl[j]})")
    if kind == "self":
        name, cl = _pick_chain(mu)
        i = mu.rng.randrange(len(cl))
        fat_set(mu.img, g, cl[i], cl[i])
        return f"fat.self: {name} chain[{i}] (clu {cl[i]}) -> itself"
    if kind == "cross":
        (na, a), (nb, b) = mu.rng.sample(mu.chained(), 2)
        i = mu.rng.randrange(len(a))
        j = mu.rng.randrange(len(b))
        fat_set(mu.img, g, a[i], b[j])
        return (f"fat.cross: {na} chain[{i}] (clu {a[i]}) "
                f"-> {nb} chain[{j}] (clu {b[j]})")
    if kind in ("range", "eoc", "bad", "free"):
        name, cl = _pick_chain(mu, 1 if kind == "range" else 2)
        i = mu.rng.randrange(len(cl) - (0 if kind == "range" else 1))
        v = {"range": mu.bad_cluster(), "eoc": FAT_EOC, "bad": FAT_BAD,
             "free": 0}[kind]
        if kind == "range" and v in (0, FAT_EOC, FAT_BAD):
            v = g.clu_count + 2
        fat_set(mu.img, g, cl[i], v)
        return f"fat.{kind}: {name} chain[{i}] (clu {cl[i]}) -> {v:#x}"
    if kind == "media":
        k = mu.rng.randrange(2)
        v = mu.pick([0, 2, 0xFFFFFFF7, mu.rng.randrange(1 << 32)])
        fat_set(mu.img, g, k, v)
        return f"fat.media: FatEntry[{k}] = {v:#x}"
    if kind == "extend":
        name, cl = _pick_chain(mu)
        free = mu.free_clusters()
        n = mu.rng.randrange(1, 4)
        ext = mu.rng.sample(free, n)
        for a, b in zip([cl[-1]] + ext, ext):
            fat_set(mu.img, g, a, b)
        fat_set(mu.img, g, ext[-1], FAT_EOC)
        return (f"fat.extend: {name} chain longer than "
                f"its size by {n} free clusters {ext}")
    # two chains end in the same clusters
    (na, a), (nb, b) = mu.rng.sample(mu.chained(), 2)
    fat_set(mu.img, g, a[-1], b[len(b) // 2])
    return (f"fat.shared-tail: {na} last clu {a[-1]} -> "
            f"{nb} clu {b[len(b) // 2]}")


# Allocation bitmap -----------------------------------------------------------


def mut_bitmap(mu):
    m, g = mu.m, mu.g
    bm = m.bitmap_off
    kind = mu.pick(["file-free", "free-used", "own-free", "meta-free",
                    "zeros", "ones", "tail-bits", "entry-len", "entry-first",
                    "entry-gone", "entry-dup", "entry-flags"])
    if kind == "file-free":
        s = mu.pick([s for s in m.sets if s.clusters])
        cl = mu.rng.sample(s.clusters,
                           mu.rng.randrange(1, len(s.clusters) + 1))
        for c in cl:
            bitmap_put(mu.img, bm, c, 0)
        return (f"bitmap.file-free: clusters {sorted(cl)} "
                f"of {s.path} marked free")
    if kind == "free-used":
        cl = mu.rng.sample(mu.free_clusters(), mu.rng.randrange(1, 40))
        for c in cl:
            bitmap_put(mu.img, bm, c, 1)
        return f"bitmap.free-used: {len(cl)} free clusters marked in use"
    if kind == "own-free":
        for c in m.bitmap_clusters:
            bitmap_put(mu.img, bm, c, 0)
        return ("bitmap.own-free: the bitmap's own clusters "
                f"{m.bitmap_clusters} marked free")
    if kind == "meta-free":
        which = mu.pick(["root directory", "up-case table"])
        cl = m.root.clusters if which == "root directory" else \
            m.upcase_clusters
        for c in cl:
            bitmap_put(mu.img, bm, c, 0)
        return f"bitmap.meta-free: clusters of the {which} marked free"
    nbytes = (g.clu_count + 7) // 8
    if kind == "zeros":
        mu.img[bm:bm + nbytes] = bytes(nbytes)
        return "bitmap.zeros: every cluster marked free"
    if kind == "ones":
        mu.img[bm:bm + nbytes] = b"\xff" * nbytes
        return "bitmap.ones: every cluster marked in use"
    if kind == "tail-bits":
        pad = m.bitmap_len - nbytes
        if g.clu_count % 8 == 0 and pad <= 0:
            bitmap_put(mu.img, bm, g.clu_count + 1, 1)
            return ("bitmap.tail-bits: no bit past ClusterCount; "
                    "last cluster marked in use")
        mu.img[bm + nbytes - 1] |= 0xFF & ~((1 << (g.clu_count % 8 or 8)) - 1)
        if pad > 0:
            mu.img[bm + nbytes:bm + m.bitmap_len] = b"\xff" * pad
        return "bitmap.tail-bits: bits past ClusterCount set"
    e = m.bitmap_ent
    if kind == "entry-len":
        v = mu.pick([0, 1, m.bitmap_len - 1, m.bitmap_len + 1, 1 << 32,
                     1 << 40, 2**64 - 1, g.clu * 1000])
        mu.u64(e + 24, v)
        return f"bitmap.entry: DataLength={v:#x}"
    if kind == "entry-first":
        v = mu.pick([mu.bad_cluster(), m.upcase_first, g.root,
                     mu.pick(mu.free_clusters()), g.clu_count + 1])
        mu.u32(e + 20, v)
        return f"bitmap.entry: FirstCluster={v:#x}"
    if kind == "entry-gone":
        mu.u8(e, 0x01)
        return "bitmap.entry: allocation bitmap entry deleted (0x01)"
    if kind == "entry-flags":
        mu.u8(e + 1, mu.pick([1, 0xFF]))
        return "bitmap.entry: BitmapFlags says second bitmap"
    # a second bitmap entry in a free root slot
    slot = mu.m.root.slots[mu.m.root.eod]
    mu.img[slot:slot + DENTRY] = mu.img[e:e + DENTRY]
    if mu.rng.random() < 0.5:
        mu.u32(slot + 20, mu.pick(mu.free_clusters()))
    return "bitmap.entry: a second allocation bitmap entry after the last set"


# Up-case table ---------------------------------------------------------------


def _upcase_write(mu, data, fix_csum=True, length=None):
    """Replace the table's content (within its clusters) and DataLength."""
    m, g = mu.m, mu.g
    room = len(m.upcase_clusters) * g.clu
    data = data[:room]
    buf = data + bytes(room - len(data))
    for i, c in enumerate(m.upcase_clusters):
        mu.img[g.coff(c):g.coff(c) + g.clu] = buf[i * g.clu:(i + 1) * g.clu]
    mu.u64(m.upcase_ent + 24, len(data) if length is None else length)
    if fix_csum:
        mu.u32(m.upcase_ent + 4, upcase_checksum(data))


def mut_upcase(mu):
    m, g = mu.m, mu.g
    e = m.upcase_ent
    data = bytearray(m.upcase_data)
    kind = mu.pick(["csum", "truncate", "truncate-stale", "huge", "zero",
                    "odd", "run-past", "run-cut", "first", "mandatory",
                    "weird-map", "gone", "dup", "all-identity"])
    if kind == "csum":
        mu.u32(e + 4, mu.get32(e + 4) ^ (1 << mu.rng.randrange(32)))
        return "upcase.csum: TableChecksum wrong"
    if kind in ("truncate", "truncate-stale"):
        n = mu.pick([2, 128, 254, 256, len(data) // 2, len(data) - 2])
        if kind == "truncate":
            _upcase_write(mu, bytes(data[:n]))
        else:
            mu.u64(e + 24, n)
        return (f"upcase.{kind}: DataLength={n} (checksum "
                f"{'recomputed' if kind == 'truncate' else 'stale'})")
    if kind == "huge":
        v = mu.pick([1 << 40, 1 << 32, 0x20002, 0x20000, 2**64 - 2,
                     len(m.upcase_clusters) * g.clu + 2])
        mu.u64(e + 24, v)
        return f"upcase.huge: DataLength={v:#x}"
    if kind == "zero":
        mu.u64(e + 24, 0)
        mu.u32(e + 4, 0)
        return "upcase.zero: DataLength=0, checksum 0"
    if kind == "odd":
        _upcase_write(mu, bytes(data[:len(data) - 1]))
        return f"upcase.odd: DataLength={len(data) - 1}, checksum recomputed"
    if kind in ("run-past", "run-cut"):
        # find a run marker (FFFF, n) in the compressed table
        vals = list(struct.unpack(f"<{len(data) // 2}H", data))
        runs = [i for i in range(len(vals) - 1) if vals[i] == 0xFFFF]
        i = mu.pick(runs)
        if kind == "run-past":
            vals[i + 1] = 0xFFFF
            new = struct.pack(f"<{len(vals)}H", *vals)
        else:
            new = struct.pack(f"<{i + 1}H", *vals[:i + 1])
        _upcase_write(mu, new)
        return (f"upcase.{kind}: run at index {i} "
                + ("of 0xFFFF code points" if kind == "run-past" else
                   "cut off after its marker")
                + ", checksum recomputed")
    if kind == "first":
        v = mu.pick([mu.bad_cluster(), m.bitmap_first, g.root,
                     mu.pick(mu.free_clusters())])
        mu.u32(e + 20, v)
        return f"upcase.first: FirstCluster={v:#x}"
    if kind == "mandatory":
        k = mu.rng.randrange(0x61, 0x7B)
        struct.pack_into("<H", data, 2 * k, k)
        _upcase_write(mu, bytes(data))
        return f"upcase.mandatory: {k:#x} maps to itself, checksum recomputed"
    if kind == "weird-map":
        # a valid table mapping many characters onto 'A' or onto '/'
        t = list(range(0x10000))
        for c in range(0x61, 0x7B):
            t[c] = c - 0x20
        tgt = mu.pick([0x41, 0x2F, 0x00, 0x2E])
        for c in range(0x80, 0x10000):
            t[c] = tgt
        _upcase_write(mu, struct.pack("<65536H", *t)[:len(m.upcase_clusters)
                                                        * g.clu // 2 * 2])
        return (f"upcase.weird-map: U+0080.. map to {tgt:#x}, "
                "checksum recomputed")
    if kind == "all-identity":
        _upcase_write(mu, b"\xff\xff\x00\x00")   # run of 0: an empty mapping
        return ("upcase.all-identity: table is one zero-length "
                "run, checksum recomputed")
    if kind == "gone":
        mu.u8(e, 0x02)
        return "upcase.gone: up-case table entry deleted (0x02)"
    slot = m.root.slots[m.root.eod]
    mu.img[slot:slot + DENTRY] = mu.img[e:e + DENTRY]
    mu.u32(e + 4, mu.get32(e + 4) ^ 0x55)
    return ("upcase.dup: two up-case table entries, the "
            "first with a bad checksum")


# Entry sets ------------------------------------------------------------------


def _set(mu, dirs=None, files=None, pred=None):
    c = [s for s in mu.m.sets
         if (dirs is None or s.is_dir == dirs) and (pred is None or pred(s))]
    return mu.pick(c)


def mut_secondary_count(mu):
    s = _set(mu)
    n = mu.img[s.offs[0] + 1]
    v = mu.pick_new([0, 1, n - 1, n + 1, n + 2, 18, 19, 255], n)
    mu.u8(s.offs[0] + 1, v)
    resum = mu.rng.random() < 0.7
    if resum:
        mu.resum(s, min(1 + v, len(s.dir.slots) -
                        s.dir.slots.index(s.offs[0])))
    return (f"set.secondary-count: {s.path} SecondaryCount {n} -> {v}, "
            f"checksum {'recomputed' if resum else 'stale'}")


def mut_name_length(mu):
    s = _set(mu)
    n = s.name_len
    v = mu.pick_new([0, 255, n + 1, n - 1, 15 * (len(s.offs) - 2) + 1, 16,
                     30], n) & 0xFF
    mu.u8(s.offs[1] + 3, v)
    mu.resum(s)
    return (f"set.name-length: {s.path} NameLength {n} "
            f"-> {v}, checksum recomputed")


def mut_set_checksum(mu):
    s = _set(mu)
    mu.u16(s.offs[0] + 2, struct.unpack_from("<H", mu.img, s.offs[0] + 2)[0]
           ^ (1 << mu.rng.randrange(16)))
    return f"set.checksum: {s.path} SetChecksum wrong"


def mut_set_bytes(mu):
    s = _set(mu)
    k = mu.rng.randrange(1, 5)
    where = []
    for _ in range(k):
        o = mu.pick(s.offs)
        b = mu.rng.randrange(DENTRY)
        if o == s.offs[0] and b in (2, 3):
            b = 4
        mu.img[o + b] ^= 1 << mu.rng.randrange(8)
        where.append(f"e{s.offs.index(o)}+{b}")
    mu.resum(s)
    return (f"set.bytes: {s.path} bits flipped at {','.join(where)}, "
            "checksum recomputed")


def mut_first_cluster(mu):
    g, m = mu.g, mu.m
    s = _set(mu)
    others = [t for t in m.sets if t.first and t is not s]
    v = mu.pick([0, 1, g.clu_count + 2, g.clu_count + 1, 0xFFFFFFFF,
                 0xFFFFFFF7, m.bitmap_first, m.upcase_first, g.root,
                 mu.pick(others).first, mu.pick(mu.free_clusters())])
    mu.u32(s.offs[1] + 20, v)
    if v == 0 and not s.size:
        mu.u64(s.offs[1] + 24, g.clu)
    mu.resum(s)
    return (f"set.first-cluster: {s.path} FirstCluster "
            f"{s.first} -> {v:#x}, checksum recomputed")


def mut_data_length(mu):
    g = mu.g
    s = _set(mu)
    heap = g.clu_count * g.clu
    kind = mu.pick(["DataLength", "DataLength", "ValidDataLength", "both"])
    v = mu.pick_new([1 << 40, 2**63 - 1, 2**63, 2**64 - 1, heap + 1,
                     heap * 2, s.size + g.clu, s.size + 1,
                     max(s.size - 1, 0), 0, (256 << 20) + g.clu, 1 << 32],
                    s.size)
    if kind in ("DataLength", "both"):
        mu.u64(s.offs[1] + 24, v)
    if kind in ("ValidDataLength", "both"):
        mu.u64(s.offs[1] + 8, v if kind == "both" else
               max(v, s.size + 1))
    mu.resum(s)
    return (f"set.length: {s.path} {kind}={v:#x} (was "
            f"{s.size}), checksum recomputed")


def mut_nofat(mu):
    g = mu.g
    kind = mu.pick(["set", "clear", "past-heap", "alloc-flag"])
    if kind == "set":
        s = _set(mu, pred=lambda s: s.clusters and not s.nofat)
        mu.img[s.offs[1] + 1] |= SF_NOFAT
        d = "NoFatChain set on a FAT-chained stream"
    elif kind == "clear":
        s = _set(mu, pred=lambda s: s.clusters and s.nofat)
        mu.img[s.offs[1] + 1] &= ~SF_NOFAT
        d = "NoFatChain cleared (its FAT entries are free)"
    elif kind == "past-heap":
        s = _set(mu, pred=lambda s: s.clusters)
        mu.img[s.offs[1] + 1] |= SF_NOFAT | SF_ALLOC
        k = mu.rng.randrange(1, 4)
        first = g.clu_count + 2 - k
        size = max(s.size, (k + mu.rng.randrange(1, 1000)) * g.clu)
        mu.u32(s.offs[1] + 20, first)
        mu.u64(s.offs[1] + 24, size)
        if s.is_dir:
            mu.u64(s.offs[1] + 24, (size // g.clu) * g.clu)
        mu.u64(s.offs[1] + 8, min(s.vdl, size))
        d = f"NoFatChain run from clu {first}, {size} bytes, past the heap"
    else:
        s = _set(mu, pred=lambda s: s.clusters)
        mu.img[s.offs[1] + 1] &= ~SF_ALLOC
        d = "AllocationPossible cleared with a cluster"
    mu.resum(s)
    return f"set.nofat: {s.path} {d}, checksum recomputed"


def mut_attr(mu):
    kind = mu.pick(["file->dir", "dir->file", "volume", "all", "dir->file"])
    if kind == "file->dir":
        s = _set(mu, dirs=False)
        v = ATTR_DIR | (mu.img[s.offs[0] + 4] & 0xFF)
    elif kind == "dir->file":
        s = _set(mu, dirs=True)
        v = ATTR_ARCHIVE
    elif kind == "volume":
        s = _set(mu)
        v = s.attr | ATTR_VOLUME
    else:
        s = _set(mu)
        v = 0xFFFF if s.is_dir else 0xFFEF
    mu.u16(s.offs[0] + 4, v)
    mu.resum(s)
    return (f"set.attr: {s.path} FileAttributes {s.attr:#x} "
            f"-> {v:#x} ({kind}), checksum recomputed")


def mut_dir_cycle(mu):
    """A directory whose FirstCluster is an ancestor's (or a file's)."""
    m, g = mu.m, mu.g
    kind = mu.pick(["parent", "root", "self-sub", "grandparent", "file-data",
                    "file->dir-clusters"])
    if kind == "file->dir-clusters":
        s = _set(mu, dirs=False, pred=lambda s: s.size)
        d = mu.pick([d for d in m.dirs if d.set])
        mu.u32(s.offs[1] + 20, d.first)
        mu.img[s.offs[1] + 1] = (mu.img[s.offs[1] + 1] & ~SF_NOFAT) | \
            (SF_NOFAT if d.set.nofat else 0)
        mu.resum(s)
        return (f"set.cycle: file {s.path} points to directory "
                f"{d.path}'s clusters, checksum recomputed")
    s = _set(mu, dirs=True)
    d = m.dir_of(s)
    if kind == "parent" or (kind == "grandparent" and not d.parent.parent):
        tgt = d.parent
    elif kind == "grandparent":
        tgt = d.parent.parent
    elif kind == "root":
        tgt = m.root
    elif kind == "self-sub":
        subs = [t for t in m.dirs if t.path.startswith(d.path + "/")]
        tgt = subs[0] if subs else d.parent
    else:
        f = _set(mu, dirs=False, pred=lambda f: f.size)
        mu.u32(s.offs[1] + 20, f.first)
        mu.img[s.offs[1] + 1] = (mu.img[s.offs[1] + 1] & ~SF_NOFAT) | \
            (SF_NOFAT if f.nofat else 0)
        mu.resum(s)
        return (f"set.cycle: directory {s.path} points "
                f"to file {f.path}'s data, checksum recomputed")
    mu.u32(s.offs[1] + 20, tgt.first)
    nofat = tgt.set.nofat if tgt.set else False
    mu.img[s.offs[1] + 1] = (mu.img[s.offs[1] + 1] & ~SF_NOFAT) | \
        (SF_NOFAT if nofat else 0)
    size = len(tgt.clusters) * g.clu
    mu.u64(s.offs[1] + 8, size)
    mu.u64(s.offs[1] + 24, size)
    mu.resum(s)
    return (f"set.cycle: directory {s.path} FirstCluster = {kind} "
            f"{tgt.path or '/'} (clu {tgt.first}), checksum recomputed")


def _free_slot_after(mu, s):
    """Index of the slot right after set s if it is free (EOD), else None."""
    d = s.dir
    i = d.slots.index(s.offs[0]) + len(s.offs)
    if i < len(d.slots) and mu.img[d.slots[i]] == T_EOD:
        return i
    return None


def mut_unknown_types(mu):
    m = mu.m
    kind = mu.pick(["critical-primary", "benign-primary", "critical-secondary",
                    "benign-secondary", "vendor-alloc", "critical-primary-set",
                    "guid"])
    r = mu.rng
    if kind in ("critical-primary", "benign-primary", "guid"):
        d = mu.pick([d for d in m.dirs if d.eod is not None])
        slot = d.slots[d.eod]
        if kind == "critical-primary":
            t = mu.pick([0x84, 0x86, 0x87, 0x90, 0x9F])
        elif kind == "benign-primary":
            t = mu.pick([0xA3, 0xA4, 0xB0, 0xBF, 0xA1, 0xA2])
        else:
            t = T_GUID
        ent = bytearray(r.randbytes(DENTRY))
        ent[0] = t
        ent[1] = mu.pick([0, 0, 1, 3])      # SecondaryCount
        if ent[1] == 0:
            struct.pack_into("<H", ent, 2, set_checksum(ent))
        mu.img[slot:slot + DENTRY] = ent
        return (f"set.unknown: {kind} entry {t:#x} in "
                f"{d.path or '/'} at its end of directory")
    if kind == "critical-primary-set":
        s = _set(mu)
        t = mu.pick([0x84, 0x86, 0x9F])
        mu.u8(s.offs[0], t)
        mu.resum(s)
        return (f"set.unknown: {s.path} File entry type "
                f"-> {t:#x}, checksum recomputed")
    # secondaries: append one after a set that is last in its directory
    cands = [s for s in m.sets if _free_slot_after(mu, s) is not None]
    s = mu.pick(cands)
    i = _free_slot_after(mu, s)
    slot = s.dir.slots[i]
    if kind == "critical-secondary":
        t = mu.pick([0xC2, 0xC3, 0xD0, 0xDF])
    elif kind == "benign-secondary":
        t = mu.pick([0xE0, 0xE2, 0xF0, 0xFF])
    else:
        t = T_VENDOR_ALLOC
    ent = bytearray(DENTRY)
    ent[0] = t
    if t == T_VENDOR_ALLOC or r.random() < 0.3:
        ent[1] = SF_ALLOC | (SF_NOFAT if r.random() < 0.5 else 0)
        c = mu.pick([mu.pick(mu.free_clusters()), s.first or 2,
                     mu.bad_cluster(), m.bitmap_first])
        struct.pack_into("<IQ", ent, 20, c,
                         mu.pick([1, mu.g.clu, 1 << 40, 2**64 - 1]))
    mu.img[slot:slot + DENTRY] = ent
    mu.u8(s.offs[0] + 1, len(s.offs))
    s2 = Set.__new__(Set)
    s2.dir, s2.offs = s.dir, s.offs + [slot]
    mu.resum(s2)
    return (f"set.unknown: {s.path} gains a {kind} entry "
            f"{t:#x}, checksum recomputed")


def mut_set_structure(mu):
    kind = mu.pick(["no-stream", "stream-deleted", "eod-in-set",
                    "eod-mid-dir", "name-deleted", "stream-as-name",
                    "two-streams", "past-dir-end", "file-alone"])
    s = _set(mu)
    o = s.offs
    if kind == "no-stream":
        mu.img[o[1]:o[1] + DENTRY] = mu.img[o[2]:o[2] + DENTRY]
        mu.resum(s)
        d = "Stream entry replaced by a Name entry"
    elif kind == "stream-deleted":
        mu.img[o[1]] &= 0x7F
        mu.resum(s)
        d = "Stream entry not in use (0x40)"
    elif kind == "eod-in-set":
        k = mu.rng.randrange(1, len(o))
        mu.img[o[k]] = 0
        resum = mu.rng.random() < 0.5
        if resum:
            mu.resum(s)
        d = (f"entry {k} of the set is end-of-directory "
             f"(checksum {'recomputed' if resum else 'stale'})")
    elif kind == "eod-mid-dir":
        mu.img[o[0]] = 0
        d = "File entry replaced by end-of-directory; later sets follow"
    elif kind == "name-deleted":
        k = mu.rng.randrange(2, len(o))
        mu.img[o[k]] &= 0x7F
        mu.resum(s)
        d = f"Name entry {k} not in use"
    elif kind == "stream-as-name":
        k = mu.rng.randrange(2, len(o))
        mu.img[o[k]] = T_STREAM
        mu.resum(s)
        d = f"entry {k} is a second Stream entry"
    elif kind == "two-streams":
        mu.img[o[2]:o[2] + DENTRY] = mu.img[o[1]:o[1] + DENTRY]
        mu.resum(s)
        d = "the first Name entry is a copy of the Stream entry"
    elif kind == "past-dir-end":
        d_ = s.dir
        last = d_.slots[-1]
        mu.img[last:last + DENTRY] = mu.img[o[0]:o[0] + DENTRY]
        mu.u8(last + 1, mu.pick([2, 3, 17]))
        d = ("a File entry in the last slot of the directory, "
             "secondaries past its end")
        return f"set.structure: {s.dir.path or '/'}: {d}"
    else:
        mu.u8(o[0] + 1, 0)
        mu.resum(s, 1)
        d = "SecondaryCount 0: a File entry alone, checksum recomputed"
    return f"set.structure: {s.path} {d}"


def mut_names(mu):
    kind = mu.pick(["slash", "nul", "dot", "dotdot", "surrogate", "ffff",
                    "dup", "dup-case", "hash", "spaces", "dup-dir"])
    s = _set(mu, pred=lambda s: len(s.offs) == 3)
    o = s.offs
    if kind in ("dup", "dup-case", "dup-dir"):
        sib = [t for t in s.dir.sets if t is not s and len(t.offs) == 3 and
               (kind != "dup-dir" or t.is_dir)]
        if not sib:
            sib = [t for t in s.dir.sets if t is not s and len(t.offs) == 3]
        if sib:
            t = mu.pick(sib)
            mu.img[o[2]:o[2] + DENTRY] = mu.img[t.offs[2]:t.offs[2] + DENTRY]
            mu.u8(o[1] + 3, mu.img[t.offs[1] + 3])
            if kind == "dup-case":
                for k in range(15):
                    off = o[2] + 2 + 2 * k
                    c = struct.unpack_from("<H", mu.img, off)[0]
                    if 0x61 <= c <= 0x7A:
                        mu.u16(off, c - 0x20)
                    elif 0x41 <= c <= 0x5A:
                        mu.u16(off, c + 0x20)
            mu.rehash(s)
            mu.resum(s)
            return (f"set.names: {s.path} renamed to {kind} of sibling "
                    f"{t.path}, hash and checksum recomputed")
    if kind == "hash":
        mu.u16(o[1] + 4,
               struct.unpack_from("<H", mu.img, o[1] + 4)[0] ^ 0x1234)
        mu.resum(s)
        return f"set.names: {s.path} NameHash wrong, checksum recomputed"
    units = {"slash": [0x61, 0x2F, 0x62], "nul": [0x61, 0, 0x62],
             "dot": [0x2E], "dotdot": [0x2E, 0x2E],
             "surrogate": [0x61, 0xD800, 0x62], "ffff": [0xFFFF, 0xFFFE],
             "spaces": [0x20, 0x20]}.get(kind, [0x2A, 0x3F, 0x3A])
    mu.u8(o[1] + 3, len(units))
    struct.pack_into("<15H", mu.img, o[2] + 2,
                     *(units + [0] * (15 - len(units))))
    mu.rehash(s)
    mu.resum(s)
    return (f"set.names: {s.path} name -> {units} ({kind}), "
            "hash and checksum recomputed")


def mut_set_copy(mu):
    """The same set twice: two names for one chain, or a directory with two
    parents."""
    m = mu.m
    s = _set(mu, pred=lambda s: len(s.offs) == 3)
    dst = mu.pick([d for d in m.dirs if d.eod is not None and
                   d.eod + 3 <= len(d.slots)])
    i = dst.eod
    for k, o in enumerate(s.offs):
        so = dst.slots[i + k]
        mu.img[so:so + DENTRY] = mu.img[o:o + DENTRY]
    if dst is s.dir or mu.rng.random() < 0.5:
        # another name, so both can be looked up
        so = dst.slots[i + 2]
        mu.u16(so + 2, 0x5A)    # first character 'Z'
        s2 = Set.__new__(Set)
        s2.dir, s2.offs = dst, dst.slots[i:i + 3]
        mu.rehash(s2)
        mu.resum(s2)
    return (f"set.copy: {s.path} set copied into {dst.path or '/'} "
            "(shared clusters)")


def mut_times(mu):
    s = _set(mu)
    o = s.offs[0]
    for f in (8, 12, 16):
        mu.u32(o + f, mu.rng.randrange(1 << 32))
    for f in range(20, 25):
        mu.u8(o + f, mu.rng.randrange(256))
    mu.resum(s)
    return (f"set.times: {s.path} random timestamps, 10ms "
            "and UTC offsets, checksum recomputed")


def mut_label(mu):
    m = mu.m
    e = m.label_ent
    kind = mu.pick(["count-12", "count-255", "count-0", "deleted", "second",
                    "garbage"])
    if kind.startswith("count"):
        mu.u8(e + 1, int(kind.split("-")[1]))
    elif kind == "deleted":
        mu.u8(e, 0x03)
    elif kind == "second":
        slot = m.root.slots[m.root.eod]
        mu.img[slot:slot + DENTRY] = mu.img[e:e + DENTRY]
        mu.u8(slot + 1, 11)
    else:
        mu.img[e + 1:e + DENTRY] = mu.rng.randbytes(DENTRY - 1)
    return f"label: {kind}"


def mut_dir_size(mu):
    g = mu.g
    s = _set(mu, dirs=True)
    v = mu.pick_new([0, g.clu - 32, max(0, s.size - g.clu), s.size + g.clu,
                     s.size + 1, s.size * 64, (256 << 20) + g.clu, 1 << 32],
                    s.size)
    mu.u64(s.offs[1] + 24, v)
    mu.u64(s.offs[1] + 8, mu.pick([v, s.size, 0]))
    mu.resum(s)
    return (f"set.dir-size: directory {s.path} DataLength "
            f"{s.size} -> {v:#x}, checksum recomputed")


# Random flips --------------------------------------------------------------


def mut_flips(mu):
    m, g = mu.m, mu.g
    dir_ranges = [(g.coff(c), g.coff(c) + g.clu)
                  for d in m.dirs for c in d.clusters]
    fat_used = g.fat_off + 4 * (max(mu.used_clusters()) + 2)
    regions = {
        "boot": [(0, 24 * g.sector)],
        "fat": [(g.fat_off, min(fat_used + 64, g.fat_off + g.fat_len))],
        "bitmap": [(m.bitmap_off, m.bitmap_off + m.bitmap_len)],
        "upcase": [(g.coff(c), g.coff(c) + g.clu) for c in m.upcase_clusters],
        "directories": dir_ranges,
        "root": [(g.coff(c), g.coff(c) + g.clu) for c in m.root.clusters],
        "all-metadata": [(0, 24 * g.sector),
                         (g.fat_off,
                          min(fat_used + 64, g.fat_off + g.fat_len)),
                         (m.bitmap_off, m.bitmap_off + m.bitmap_len)]
        + dir_ranges,
    }
    name = mu.pick(regions)
    rs = regions[name]
    n = mu.pick([1, 2, 4, 8, 16, 64])
    for _ in range(n):
        a, b = mu.pick(rs)
        off = mu.rng.randrange(a, b)
        if name == "boot" or mu.rng.random() < 0.8:
            mu.img[off] ^= 1 << mu.rng.randrange(8)
        else:
            mu.img[off] = mu.rng.randrange(256)
    extra = ""
    if name == "boot" and mu.rng.random() < 0.5:
        write_boot_regions(mu.img, g.sector)
        extra = ", boot checksums recomputed"
    if name == "directories" and mu.rng.random() < 0.5:
        for s in m.sets:
            if 1 + mu.img[s.offs[0] + 1] == len(s.offs) and \
               mu.img[s.offs[0]] == T_FILE:
                mu.resum(s)
        extra = ", set checksums recomputed"
    return f"flips: {n} random byte changes in {name}{extra}"


MUTATIONS = [
    # (weight, function)
    (4, mut_boot_field), (1, mut_boot_checksum), (2, mut_boot_sectors),
    (2, mut_boot_geometry), (1, mut_vol_flags),
    (14, mut_fat),
    (8, mut_bitmap),
    (7, mut_upcase),
    (3, mut_secondary_count), (3, mut_name_length), (1, mut_set_checksum),
    (3, mut_set_bytes), (4, mut_first_cluster), (4, mut_data_length),
    (3, mut_nofat), (3, mut_attr), (4, mut_dir_cycle), (4, mut_unknown_types),
    (4, mut_set_structure), (4, mut_names), (3, mut_set_copy), (1, mut_times),
    (1, mut_label), (2, mut_dir_size),
    (10, mut_flips),
]


def mutate(bases, seed, bufs=None):
    """(image bytearray, description, Base) for seed: a pure function of
    the bases and the seed.  bufs: {base name: bytearray} reused from one
    call to the next (the image returned is then one of them), which saves
    allocating megabytes per image."""
    rng = random.Random(seed)
    names = sorted(bases)
    base = bases[names[rng.randrange(len(names))]]
    if bufs is None:
        img = bytearray(base.img)
    elif base.name in bufs:
        img = bufs[base.name]
        img[:] = base.img
    else:
        img = bufs[base.name] = bytearray(base.img)
    mu = Mut(base, img, rng)
    r = rng.random()
    n = 1 if r < 0.8 else rng.choice([2, 3]) if r < 0.93 else \
        rng.randrange(4, 9)
    descs = []
    funcs = [f for _, f in MUTATIONS]
    weights = [w for w, _ in MUTATIONS]
    for _ in range(n):
        f = rng.choices(funcs, weights)[0]
        descs.append(f(mu))
    while img == base.img:          # that one changed nothing: another
        f = rng.choices(funcs, weights)[0]
        descs.append(f(mu))
    desc = " + ".join(descs).replace(LONG_NAME, LONG_NAME[:16] + "...(255)")
    return img, f"seed={seed} base={base.name}: {desc}", base


# ---------------------------------------------------------------------------


def parse_seeds(spec):
    out = []
    for part in spec.split(","):
        if "-" in part:
            a, b = part.split("-")
            out += range(int(a), int(b) + 1)
        elif part:
            out.append(int(part))
    return out


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seed", type=int)
    ap.add_argument("--seeds", help="e.g. 1-100,200")
    ap.add_argument("--base", choices=sorted(BASES))
    ap.add_argument("--list-bases", action="store_true")
    ap.add_argument("--workdir", help="cache the bases here")
    ap.add_argument("-o", "--output")
    a = ap.parse_args(argv)
    if a.list_bases:
        for k, v in BASES.items():
            print(f"{k}: {v[0]} MiB, {v[1]} B sectors, {v[2]} B clusters")
        return 0
    if a.base and a.seed is None:
        b = build_bases(a.workdir, [a.base])[a.base]
        if a.output:
            with open(a.output, "wb") as f:
                f.write(b.img)
        m = b.model
        print(f"{a.base}: {len(m.sets)} sets, {len(m.dirs)} dirs, "
              f"root {m.root.clusters}")
        for s in m.sets:
            print(f"  {s.path[:60]:60} first={s.first} size={s.size} "
                  f"nofat={int(s.nofat)} clusters={s.clusters[:8]}")
        return 0
    bases = build_bases(a.workdir)
    seeds = parse_seeds(a.seeds) if a.seeds else [a.seed or 0]
    for seed in seeds:
        img, desc, _ = mutate(bases, seed)
        print(desc)
        if a.output:
            with open(a.output, "wb") as f:
                f.write(img)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

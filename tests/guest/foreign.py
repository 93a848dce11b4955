#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Volumes laid out as other implementations leave them, written byte by
byte on a fresh mkfs.exfat image (the writer of corrupt.py), with every
layout the specification allows and exfat2 itself never writes:

- entry sets that cross a sector boundary, and a cluster boundary, in
  FAT-chained (fragmented) and NoFatChain (contiguous) directories;
- deleted sets (0x05/0x40/0x41) and unused entries of other types
  between live sets;
- directories with no end-of-directory entry, filled to the exact end of
  their last cluster;
- benign secondaries: Vendor Extension entries, and Vendor Allocation
  entries with a cluster of their own;
- names of up to 255 units (17 name entries), mixed scripts, characters
  outside the BMP and, in some, a lone surrogate;
- files whose ValidDataLength is below their DataLength;
- in the root: the label, a volume GUID entry and TexFAT padding entries
  before the files, and a root of several fragmented clusters.

build(layout, seed) -> (image bytearray, tree) where tree is the model:
{name: bytes (a file's content as read) or dict (a directory)}.  Names
are str and may hold lone surrogates (encode with "surrogatepass").
Reproducible from (layout, seed); also on the host:

    foreign.py --layout s512-c4k --seed 3 -o /tmp/f.img
"""

import argparse
import random
import struct
import sys

from corrupt import (ATTR_ARCHIVE, ATTR_DIR, DENTRY, SF_ALLOC, SF_NOFAT,
                     T_FILE, T_GUID, T_NAME, T_STREAM, T_VENDOR_ALLOC,
                     T_VENDOR_EXT, TS, Writer, chain, mkfs_image,
                     name_hash, set_checksum, to_4k_sectors, utf16_units)

T_TEXFAT_PAD = 0xA1

# name: (size MiB, sector bytes, cluster bytes, mkfs.exfat -b boundary)
LAYOUTS = {
    "s512-c512": (16, 512, 512, "4K"),
    "s512-c4k": (32, 512, 4096, None),
    "s512-c32k": (64, 512, 32768, None),
    "s4k-c4k": (32, 4096, 4096, "128K"),
}

# Characters names are drawn from: ASCII, Latin-1, Greek, Cyrillic, CJK,
# Hangul, and (two units each) emoji and a CJK extension B ideograph.
_ALPHABETS = [
    "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789",
    "-_ .,;=+!#$%&'()[]{}@^~",
    "\u00e0\u00e9\u00ee\u00f5\u00fc\u00df\u00c7\u00d8\u00e6\u00ff",
    "\u03b1\u03b2\u03b3\u0394\u03a3\u03c9\u0391",
    "\u0430\u0431\u0432\u0416\u042f\u0451\u0401",
    "\u65e5\u672c\u8a9e\u4e2d\u6587\u5b57",
    "\uac00\ud55c\uae00",
    "\U0001F600\U0001F4A9\U00020000",
]


def utf16_len(name):
    return len(name.encode("utf-16-le", "surrogatepass")) // 2


def random_name(rng, maxlen=60, surrogate=0.0):
    """A valid exFAT name of 1..maxlen characters (no trailing dot or
    space, no leading space), a lone surrogate in it with probability
    `surrogate`."""
    while True:
        n = rng.randint(1, maxlen)
        out = []
        for _ in range(n):
            a = _ALPHABETS[rng.choices(range(len(_ALPHABETS)),
                                       [40, 4, 8, 5, 5, 5, 3, 2])[0]]
            out.append(rng.choice(a))
        if rng.random() < surrogate:
            out.insert(rng.randint(0, len(out)),
                       chr(rng.choice([0xD800, 0xDBFF, 0xDC00, 0xDFFF,
                                       0xD83D])))
        name = "".join(out).lstrip(" ")
        while name and name[-1] in ". ":
            name = name[:-1]
        if name and name not in (".", "..") and utf16_len(name) <= 255:
            return name


def key(name, upcase):
    """A name as exFAT compares it: up-cased unit by unit."""
    return tuple(upcase[u] for u in utf16_units(name))


def content(rng, sizes):
    """Bytes that show misplacement: random, from the tree's generator."""
    n = rng.choice(sizes)
    return rng.randbytes(n)


class Layout:
    def __init__(self, img, rng):
        self.w = Writer(img)
        self.g = self.w.geo
        self.rng = rng
        self.per_sect = self.g.sector // DENTRY

    # --- entries ----------------------------------------------------------

    def file_set(self, name, attr, first, size, vdl, nofat, extras=()):
        units = utf16_units(name)
        nn = (len(units) + 14) // 15
        ents = []
        fe = bytearray(DENTRY)
        struct.pack_into("<BBHHHIII", fe, 0, T_FILE, 1 + nn + len(extras),
                         0, attr, 0, TS, TS + 1, TS + 2)
        fe[20:25] = bytes([55, 123, 0x80 | 4, 0x80 | 4, 0x80 | 4])
        ents.append(fe)
        st = bytearray(DENTRY)
        flags = (SF_ALLOC if first else 0) | (SF_NOFAT if nofat and first
                                              else 0)
        struct.pack_into("<BBBBHHQIIQ", st, 0, T_STREAM, flags, 0,
                         len(units), name_hash(units, self.w.upcase), 0, vdl,
                         0, first, size)
        ents.append(st)
        for k in range(nn):
            part = units[15 * k:15 * k + 15]
            part += [0] * (15 - len(part))
            ne = bytearray(DENTRY)
            struct.pack_into("<BB15H", ne, 0, T_NAME, 0, *part)
            ents.append(ne)
        ents += [bytearray(e) for e in extras]
        raw = b"".join(ents)
        struct.pack_into("<H", ents[0], 2, set_checksum(raw))
        return [bytes(e) for e in ents]

    def extras(self):
        """Benign secondaries for one set: none mostly."""
        r = self.rng
        out = []
        if r.random() < 0.15:
            out.append(struct.pack("<BB16s14s", T_VENDOR_EXT, 0,
                                   r.randbytes(16), r.randbytes(14)))
        if r.random() < 0.05:
            c = self.w.alloc(1)[0]
            data = r.randbytes(self.g.clu)
            self.w.write_data([c], data)
            out.append(struct.pack("<BB16sHIQ", T_VENDOR_ALLOC, 0x03,
                                   r.randbytes(16), 0x1234, c, self.g.clu))
        return out

    def junk(self, n):
        """n unused entries that are not end-of-directory entries."""
        out = []
        for _ in range(n):
            t = self.rng.choice([0x05, 0x40, 0x41, 0x01, 0x20, 0x7F])
            out.append(bytes([t]) + self.rng.randbytes(DENTRY - 1))
        return out

    def deleted_set(self):
        ents = self.file_set(random_name(self.rng, 40), ATTR_ARCHIVE, 0, 0,
                             0, False)
        return [bytes([e[0] & 0x7F]) + e[1:] for e in ents]

    def place(self, slots, ents):
        """Append the set ents to slots, padded before as another
        implementation might have left it."""
        r = self.rng
        roll = r.random()
        pos, nr = len(slots), len(ents)
        if roll < 0.15:
            slots += self.deleted_set()
        elif roll < 0.25:
            slots += self.junk(r.randint(1, 3))
        elif roll < 0.70 and nr > 1:
            # cross a sector boundary, or a cluster boundary
            unit = self.g.epc if r.random() < 0.3 else self.per_sect
            k = r.randint(1, nr - 1)
            b = (pos // unit + 1) * unit
            if b - k < pos:
                b += unit
            pad = b - k - pos
            while pad >= 3 and r.random() < 0.5:
                d = self.deleted_set()[:min(pad, 5)]
                slots += d
                pad -= len(d)
            slots += self.junk(pad)
        slots += ents

    # --- directories ------------------------------------------------------

    def write_dir(self, slots, clusters):
        g = self.g
        raw = b"".join(slots)
        raw += bytes(len(clusters) * g.clu - len(raw))
        self.w.write_data(clusters, raw)

    def dir_room(self, slots, end):
        """Clusters for slots; with end == 'full', slots is padded to the
        exact end of its last cluster (no end-of-directory entry)."""
        epc = self.g.epc
        if end == "full":
            n = max(1, -(-len(slots) // epc))
            slots += self.junk(n * epc - len(slots))
            return n
        return len(slots) // epc + 1 + (self.rng.random() < 0.2)

    def make_dir(self, tree, depth, names_upcase):
        """Write a directory holding tree (filled in here); return
        (first cluster, size, nofat)."""
        r, g = self.rng, self.g
        slots = []
        nitems = r.randint(3, 30 if depth else 45)
        seen = set()
        for _ in range(nitems):
            name = random_name(r, rng_len(r), surrogate=0.08)
            k = key(name, names_upcase)
            if k in seen:
                continue
            seen.add(k)
            if depth < 2 and r.random() < 0.2:
                sub = {}
                first, size, nofat = self.make_dir(sub, depth + 1,
                                                   names_upcase)
                tree[name] = sub
                ents = self.file_set(name, ATTR_DIR, first, size, size,
                                     nofat, self.extras())
            else:
                data = content(r, [0, 1, 100, 511, 512, 700, g.clu - 1,
                                   g.clu, g.clu + 1, 2 * g.clu + 333,
                                   3000, 9000])
                size, vdl = len(data), len(data)
                if size > 1 and r.random() < 0.15:
                    vdl = r.randint(0, size - 1)
                    data = data[:vdl] + bytes(size - vdl)
                nofat = r.random() < 0.5
                n = -(-size // g.clu)
                clusters = self.w.alloc(n, "contig" if nofat else "frag") \
                    if n else []
                if not nofat:
                    self.w.link(clusters)
                self.w.write_data(clusters, data[:vdl])
                tree[name] = data
                ents = self.file_set(name, ATTR_ARCHIVE,
                                     clusters[0] if clusters else 0, size,
                                     vdl, nofat, self.extras())
            self.place(slots, ents)
        end = "full" if r.random() < 0.35 else "eod"
        n = self.dir_room(slots, end)
        nofat = r.random() < 0.5
        clusters = self.w.alloc(n, "contig" if nofat else "frag")
        if not nofat:
            self.w.link(clusters)
        self.write_dir(slots, clusters)
        return clusters[0], n * g.clu, nofat

    def make_root(self, tree):
        g, w, r = self.g, self.w, self.rng
        root = chain(w.img, g, g.root, False, 0)
        raw = b"".join(w.img[g.coff(c):g.coff(c) + g.clu] for c in root)
        slots = [raw[i:i + DENTRY] for i in range(0, w.root_used * DENTRY,
                                                  DENTRY)]
        # §7.5 volume GUID (a primary with no secondaries) and two TexFAT
        # padding entries, as Windows leaves them on some media
        guid = bytearray(DENTRY)
        struct.pack_into("<BBHH16s", guid, 0, T_GUID, 0, 0, 0,
                         r.randbytes(16))
        struct.pack_into("<H", guid, 2, set_checksum(bytes(guid)))
        slots.append(bytes(guid))
        slots += [bytes([T_TEXFAT_PAD]) + bytes(DENTRY - 1)] * 2
        nitems = r.randint(10, 40)
        seen = set()
        for _ in range(nitems):
            name = random_name(r, rng_len(r), surrogate=0.05)
            k = key(name, w.upcase)
            if k in seen:
                continue
            seen.add(k)
            if r.random() < 0.35:
                sub = {}
                first, size, nofat = self.make_dir(sub, 1, w.upcase)
                tree[name] = sub
                ents = self.file_set(name, ATTR_DIR, first, size, size,
                                     nofat, self.extras())
            else:
                data = content(r, [0, 5, 600, g.clu + 7, 4000])
                n = -(-len(data) // g.clu)
                clusters = w.alloc(n, "frag") if n else []
                w.link(clusters)
                w.write_data(clusters, data)
                tree[name] = data
                ents = self.file_set(name, ATTR_ARCHIVE,
                                     clusters[0] if clusters else 0,
                                     len(data), len(data), False,
                                     self.extras())
            self.place(slots, ents)
        n = self.dir_room(slots, "full" if r.random() < 0.3 else "eod")
        if n > len(root):
            root += w.alloc(n - len(root), "frag")
        w.link(root)
        self.write_dir(slots, root)


def rng_len(r):
    """Name length: mostly short, some long, a few of the maximum."""
    roll = r.random()
    if roll < 0.05:
        return 255
    if roll < 0.2:
        return 120
    return 30


def build(layout, seed):
    size_mb, sector, cluster, boundary = LAYOUTS[layout]
    img = mkfs_image(size_mb, cluster, boundary, label="FOREIGN")
    if sector == 4096:
        img = to_4k_sectors(img)
    rng = random.Random(f"{layout}/{seed}")
    lay = Layout(img, rng)
    tree = {}
    lay.make_root(tree)
    return img, tree


def count(tree):
    """(files, directories) in a tree model."""
    f = d = 0
    for v in tree.values():
        if isinstance(v, dict):
            sf, sd = count(v)
            f, d = f + sf, d + sd + 1
        else:
            f += 1
    return f, d


def count_twin(twin):
    """(files, directories) in an nsx.Twin."""
    n = twin.nodes()
    d = sum(1 for x in n if x.is_dir)
    return len(n) - d, d


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--layout", choices=sorted(LAYOUTS), required=True)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("-o", "--output", required=True)
    a = ap.parse_args()
    img, tree = build(a.layout, a.seed)
    with open(a.output, "wb") as f:
        f.write(img)
    print("%d files, %d directories" % count(tree))
    return 0


if __name__ == "__main__":
    sys.exit(main())

# SPDX-License-Identifier: GPL-2.0
"""A minimal exFAT reader and editor on an image or device, for tests that
craft what no driver writes (e.g. Vendor Allocation entries) and check
what the driver left on disk.  Only what the tests need: geometry, FAT,
bitmap, directory entries and entry sets with their SetChecksum.

    v = Volume(path)
    for s in v.sets(v.root): s.name, s.entries, s.eidx
    v.write_set(dir_clusters, eidx, entries)    # recomputes SetChecksum
"""

import re
import struct

EOC = 0xFFFFFFFF


def set_checksum(entries):
    """§6.3.3 SetChecksum over the entries (bytes 2-3 of the first skipped)."""
    csum = 0
    raw = b"".join(entries)
    for i, b in enumerate(raw):
        if i in (2, 3):
            continue
        csum = (((csum << 15) | (csum >> 1)) + b) & 0xFFFF
    return csum


class EntrySet:
    def __init__(self, eidx, entries):
        self.eidx = eidx
        self.entries = entries          # list of 32-byte bytes

    @property
    def name(self):
        st = self.entries[1]
        n = st[3]
        units = b"".join(e[2:32] for e in self.entries[2:]
                         if e[0] == 0xC1)[:2 * n]
        return units.decode("utf-16-le", "surrogatepass")

    @property
    def stream(self):
        """(flags, first_cluster, valid_size, size)"""
        st = self.entries[1]
        return (st[1], struct.unpack_from("<I", st, 20)[0],
                struct.unpack_from("<Q", st, 8)[0],
                struct.unpack_from("<Q", st, 24)[0])

    @property
    def is_dir(self):
        return bool(struct.unpack_from("<H", self.entries[0], 4)[0] & 0x10)


class Volume:
    def __init__(self, path, write=True):
        # write=False for a mounted device: a kernel without
        # CONFIG_BLK_DEV_WRITE_MOUNTED refuses to open it for writing
        self.f = open(path, "r+b" if write else "rb")
        bs = self.read(0, 512)
        assert bs[3:11] == b"EXFAT   ", "not exFAT"
        self.sect = 1 << bs[108]
        self.clu = self.sect << bs[109]
        self.fat_off = struct.unpack_from("<I", bs, 80)[0] * self.sect
        self.heap = struct.unpack_from("<I", bs, 88)[0] * self.sect
        self.clu_count = struct.unpack_from("<I", bs, 92)[0]
        self.root = struct.unpack_from("<I", bs, 96)[0]
        self.bitmap_clu = self.bitmap_len = None
        for _, e in self.entries(self.chain(self.root)):
            if e[0] == 0x81:
                self.bitmap_clu = struct.unpack_from("<I", e, 20)[0]
                self.bitmap_len = struct.unpack_from("<Q", e, 24)[0]
        assert self.bitmap_clu, "no bitmap entry"

    def upcase(self):
        """The volume's up-case table, expanded: 65536 mappings."""
        from corrupt import expand_upcase
        for _, e in self.entries(self.chain(self.root)):
            if e[0] == 0x82:
                first = struct.unpack_from("<I", e, 20)[0]
                n = struct.unpack_from("<Q", e, 24)[0]
                data = b"".join(self.read(self.clu_off(c), self.clu)
                                for c in self.chain(first))[:n]
                return expand_upcase(data)
            if e[0] == 0:
                break
        raise RuntimeError("no up-case table entry")

    def close(self):
        self.f.close()

    def read(self, off, n):
        self.f.seek(off)
        return self.f.read(n)

    def write(self, off, data):
        self.f.seek(off)
        self.f.write(data)

    def clu_off(self, c):
        return self.heap + (c - 2) * self.clu

    def fat(self, c):
        return struct.unpack("<I", self.read(self.fat_off + 4 * c, 4))[0]

    def set_fat(self, c, val):
        self.write(self.fat_off + 4 * c, struct.pack("<I", val))

    def chain(self, first, nofat=False, n=None):
        """Clusters of a chain (n of them when NoFatChain)."""
        if nofat:
            return list(range(first, first + n))
        out = []
        c = first
        while c != EOC and len(out) <= self.clu_count:
            out.append(c)
            c = self.fat(c)
        return out

    def in_use(self, c):
        b = self.read(self.clu_off(self.bitmap_clu) + (c - 2) // 8, 1)[0]
        return bool(b >> ((c - 2) % 8) & 1)

    def set_in_use(self, c, used=True):
        off = self.clu_off(self.bitmap_clu) + (c - 2) // 8
        b = self.read(off, 1)[0]
        bit = 1 << ((c - 2) % 8)
        self.write(off, bytes([(b | bit) if used else (b & ~bit)]))

    def free_clusters(self, n):
        """The first n free clusters, contiguous."""
        run = []
        for c in range(2, 2 + self.clu_count):
            if self.in_use(c):
                run = []
                continue
            run.append(c)
            if len(run) == n:
                return run
        raise RuntimeError("no free run")

    def entries(self, clusters):
        """(eidx, raw 32 bytes) over a directory's clusters."""
        eidx = 0
        for c in clusters:
            data = self.read(self.clu_off(c), self.clu)
            for i in range(0, self.clu, 32):
                yield eidx, data[i:i + 32]
                eidx += 1

    def entry_off(self, clusters, eidx):
        per = self.clu // 32
        return self.clu_off(clusters[eidx // per]) + (eidx % per) * 32

    def sets(self, clusters):
        ents = list(self.entries(clusters))
        i = 0
        while i < len(ents):
            eidx, e = ents[i]
            if e[0] == 0:
                break
            if e[0] == 0x85:
                n = e[1] + 1
                yield EntrySet(eidx, [x[1] for x in ents[i:i + n]])
                i += n
                continue
            i += 1

    def dir_clusters(self, s):
        flags, first, _, size = s.stream
        return self.chain(first, bool(flags & 2), -(-size // self.clu))

    def lookup(self, path):
        """The entry set at path ('a/b'), and its directory's clusters."""
        clusters = self.chain(self.root)
        found = None
        for part in path.strip("/").split("/"):
            found = next(s for s in self.sets(clusters) if s.name == part)
            parent = clusters
            if found.is_dir:
                clusters = self.dir_clusters(found)
        return found, parent

    def write_set(self, clusters, eidx, entries):
        """Write entries at eidx with SecondaryCount and SetChecksum fixed."""
        first = bytearray(entries[0])
        first[1] = len(entries) - 1
        entries = [bytes(first)] + list(entries[1:])
        first[2:4] = struct.pack("<H", set_checksum(entries))
        entries[0] = bytes(first)
        for i, e in enumerate(entries):
            self.write(self.entry_off(clusters, eidx + i), e)


# What fsck.exfat (exfatprogs 1.2.0) reports on what the specification
# allows but it does not know or read: the volume GUID and TexFAT padding
# entries (benign primaries), sets with benign secondaries after the name,
# and a set whose File entry ends a cluster of a fragmented directory (it
# reads the next entries from the adjacent cluster, not the next in the
# chain).
_UNKNOWN_TYPE = re.compile(
    r"unknown entry type 0x([0-9a-f]{2}) at .* at 0x([0-9a-f]+)")
_NO_NAME = re.compile(r"failed to get name dentry at 0x([0-9a-f]+)")
_BAD_CSUM = re.compile(r"checksum of a file is wrong at 0x([0-9a-f]+)")


class RawIndex:
    """Every set of the tree as rawfs reads it, by the byte offsets of its
    entries: which File entries have benign secondaries, which sets cross
    into a cluster that is not the adjacent one (and their secondaries);
    only sets whose SetChecksum holds count."""

    def __init__(self, dev):
        self.benign, self.split, self.secondary = set(), set(), set()
        v = Volume(dev)
        try:
            todo = [v.chain(v.root)]
            while todo:
                clusters = todo.pop()
                for st in v.sets(clusters):
                    offs = [v.entry_off(clusters, st.eidx + i)
                            for i in range(len(st.entries))]
                    stored = struct.unpack_from("<H", st.entries[0], 2)[0]
                    if stored != set_checksum(st.entries):
                        continue
                    if any(e[0] in (0xE0, 0xE1) for e in st.entries[2:]):
                        self.benign.add(offs[0])
                    if any(b - a != 32 for a, b in zip(offs, offs[1:])):
                        self.split.add(offs[0])
                        self.secondary.update(offs[1:])
                    if st.is_dir and st.stream[3]:
                        todo.append(v.dir_clusters(st))
        finally:
            v.close()




def fsck_misreads(dev, lines):
    """The lines of fsck.exfat's output that are such misreads: each
    finding checked on the raw image to be a benign primary or secondary,
    or an entry of a set, with benign secondaries or split across
    clusters, whose SetChecksum holds.  With -n fsck.exfat does not look
    behind such a finding (a directory's contents, the rest of a file):
    whoever tolerates one must check the volume some other way (xcheck)."""
    out = []
    idx = None
    with open(dev, "rb") as f:
        def at(off, n=32):
            f.seek(off)
            return f.read(n)
        for line in lines:
            if "ERROR" not in line:
                continue
            if idx is None:
                idx = RawIndex(dev)
            m = _UNKNOWN_TYPE.search(line)
            if m:
                t, off = int(m.group(1), 16), int(m.group(2), 16)
                if at(off)[0] == t and (t in (0xA0, 0xA1, 0xE0, 0xE1) or
                                        off in idx.secondary):
                    out.append(line)
                    continue
            m = _NO_NAME.search(line)
            if m and int(m.group(1), 16) in idx.benign | idx.split:
                out.append(line)
                continue
            m = _BAD_CSUM.search(line)
            if m and int(m.group(1), 16) in idx.split:
                out.append(line)
    return out


def vendor_alloc_entry(guid, first, length, nofat=True):
    """A Vendor Allocation entry (§7.9)."""
    return struct.pack("<BB16sHIQ", 0xE1, 0x01 | (0x02 if nofat else 0),
                       guid, 0x1234, first, length)


def vendor_ext_entry(guid, data):
    """A Vendor Extension entry (§7.8)."""
    return struct.pack("<BB16s14s", 0xE0, 0, guid, data)

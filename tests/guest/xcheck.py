#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""A strict exFAT volume checker, independent of every driver: it reads the
raw image with its own parser (the checksums and up-case expansion of
corrupt.py) and reports what fsck.exfat -n (exfatprogs 1.2.0) does not
look at: it compares the allocation bitmap with the chains only when it
repairs, and it has no duplicate-name check.

It fails on:
- a boot region whose checksum sector does not match, or a backup boot
  region that differs from the main one (VolumeFlags and PercentInUse
  aside);
- a bitmap bit set for a cluster that no chain owns (a leak), and a chain
  cluster whose bit is clear;
- two chains sharing a cluster; a chain that leaves the cluster heap,
  loops, is shorter than its DataLength needs or longer (no end of chain
  where the data ends);
- an entry set whose SetChecksum (TexFAT padding and ACL entries aside: the
  specification leaves their fields undefined), NameHash, SecondaryCount, name length
  or entry order is wrong; an in-use secondary with no primary; an
  unknown critical entry; a name with a character the specification
  forbids;
- two names in one directory equal through the volume's up-case table;
- a directory whose ValidDataLength differs from its DataLength, or whose
  DataLength is not a whole number of clusters; a file whose
  ValidDataLength exceeds its DataLength; FirstCluster and DataLength
  that disagree about having data;
- an up-case table whose TableChecksum does not match, a missing or
  doubled bitmap or up-case entry.

It accepts everything the specification allows: sets that cross sectors
and clusters, directories with no end-of-directory entry, deleted sets
and unused entries between live ones, benign primaries (volume GUID,
TexFAT padding) and benign secondaries (Vendor Extension, Vendor
Allocation with the clusters it owns), lone surrogates in names.

    xcheck.py IMAGE        exit 0 when clean, 1 with one line per problem
    check(path) -> list of problem strings (empty when clean)
"""

import array
import os
import struct
import sys

from corrupt import (boot_checksum, expand_upcase, name_hash, set_checksum,
                     upcase_checksum)

EOC = 0xFFFFFFFF
BAD = 0xFFFFFFF7
MAX_DIR_SIZE = 256 << 20
# §7.7.3: characters a file name must not hold
FORBIDDEN = set(range(0x20)) | {ord(c) for c in '"*/:<>?\\|'}
MAX_REPORT = 40


class Checker:
    def __init__(self, path):
        self.f = open(path, "rb")
        self.size = self.f.seek(0, os.SEEK_END)    # files and devices
        self.problems = []
        self.owner = {}          # cluster -> owner description

    def bad(self, msg):
        self.problems.append(msg)

    def read(self, off, n):
        if off < 0 or n < 0 or off + n > self.size:
            raise EOFError(f"{n} bytes at {off}: past the image's end "
                           f"({self.size})")
        self.f.seek(off)
        data = self.f.read(n)
        if len(data) != n:
            raise EOFError(f"image too short for {n} bytes at {off}")
        return data

    # -- boot region -------------------------------------------------------

    def boot(self):
        bs = self.read(0, 512)
        if bs[3:11] != b"EXFAT   ":
            raise ValueError("not an exFAT boot sector")
        shift = bs[108]
        if not 9 <= shift <= 12 or bs[109] > 25 - shift:
            raise ValueError(f"bad geometry shifts {shift}/{bs[109]}")
        self.sect = 1 << shift
        self.clu = self.sect << bs[109]
        (self.fat_off, self.fat_len, self.heap_off, self.nclu,
         self.root) = struct.unpack_from("<IIIII", bs, 80)
        self.fat_off *= self.sect
        self.fat_len *= self.sect
        self.heap_off *= self.sect
        flags = struct.unpack_from("<H", bs, 106)[0]
        nfats = bs[110]
        if nfats not in (1, 2):
            self.bad(f"boot: NumberOfFats {nfats}")
        if self.fat_len < (self.nclu + 2) * 4:
            raise ValueError(f"FAT of {self.fat_len} bytes for "
                             f"{self.nclu} clusters")
        if self.heap_off + self.nclu * self.clu > self.size or \
                self.fat_off + nfats * self.fat_len > self.size:
            raise ValueError("FAT or cluster heap past the image's end")
        # ActiveFat (§3.1.13.1) picks the FAT and the bitmap in use
        self.active = flags & 1 if nfats == 2 else 0
        self.fat_off += self.active * self.fat_len
        regions = []
        for r in (0, 1):
            reg = self.read(r * 12 * self.sect, 12 * self.sect)
            want = struct.pack("<I", boot_checksum(reg, self.sect))
            got = reg[11 * self.sect:12 * self.sect]
            if got != want * (self.sect // 4):
                self.bad(f"boot region {r}: checksum sector does not match")
            regions.append(bytearray(reg))
        for reg in regions:
            reg[106:108] = b"\0\0"
            reg[112] = 0
            reg[11 * self.sect:] = b""
        if regions[0] != regions[1]:
            self.bad("backup boot region differs from the main one")

    # -- FAT and chains ----------------------------------------------------

    def load_fat(self):
        fat = array.array("I")
        fat.frombytes(self.read(self.fat_off, (self.nclu + 2) * 4))
        if sys.byteorder != "little":
            fat.byteswap()
        self.fat = fat
        if fat[0] != 0xFFFFFFF8 or fat[1] != 0xFFFFFFFF:
            self.bad(f"FAT[0..1] {fat[0]:#x} {fat[1]:#x}")

    def valid(self, c):
        return 2 <= c < self.nclu + 2

    def peek(self, first, size):
        """The first size bytes of a FAT chain, claiming nothing (the
        chain's own check is chain()'s)."""
        cl = []
        c = first
        while self.valid(c) and len(cl) < -(-size // self.clu):
            cl.append(c)
            c = self.fat[c]
        return b"".join(self.read(self.heap_off + (x - 2) * self.clu,
                                  self.clu) for x in cl)[:size]

    def chain(self, what, first, size, nofat):
        """Claim the clusters of a stream of size bytes; return them."""
        need = -(-size // self.clu)
        if not need:
            if first:
                self.bad(f"{what}: FirstCluster {first} with no data")
            return []
        if not self.valid(first):
            self.bad(f"{what}: FirstCluster {first} outside the heap")
            return []
        out = []
        if nofat:
            if first + need > self.nclu + 2:
                self.bad(f"{what}: contiguous run of {need} from {first} "
                         "leaves the heap")
                need = self.nclu + 2 - first
            out = list(range(first, first + need))
        else:
            c = first
            while True:
                out.append(c)
                if len(out) == need:
                    if self.fat[c] != EOC:
                        self.bad(f"{what}: chain goes on past its "
                                 f"{need} clusters (FAT[{c}] = "
                                 f"{self.fat[c]:#x})")
                    break
                nxt = self.fat[c]
                if nxt == EOC:
                    self.bad(f"{what}: chain of {len(out)} clusters, "
                             f"{size} bytes need {need}")
                    break
                if not self.valid(nxt):
                    self.bad(f"{what}: FAT[{c}] = {nxt:#x}")
                    break
                if len(out) > self.nclu:
                    self.bad(f"{what}: chain loops")
                    break
                c = nxt
        shared = False
        for c in out:
            prev = self.owner.get(c)
            if prev is not None:
                self.bad(f"cluster {c} in two chains: {prev} and {what}")
                shared = True
            else:
                self.owner[c] = what
        # a directory sharing clusters is not walked (it may be a cycle)
        return [] if shared else out

    # -- directories -------------------------------------------------------

    def dir_entries(self, clusters, size):
        data = b"".join(self.read(self.heap_off + (c - 2) * self.clu,
                                  self.clu) for c in clusters)[:size]
        return [data[i:i + 32] for i in range(0, len(data), 32)]

    def walk_dir(self, path, clusters, size, root=False):
        """Check one directory's entries; return its subdirectories as
        (path, clusters, size)."""
        ents = self.dir_entries(clusters, size)
        names = {}
        subdirs = []
        seen = {}
        i = 0
        ended = False
        while i < len(ents):
            e = ents[i]
            t = e[0]
            where = f"{path or '/'} entry {i}"
            if ended:
                if t != 0:
                    self.bad(f"{where}: type {t:#x} after the end of the "
                             "directory")
                    ended = False   # report once per run
                i += 1
                continue
            if t == 0:
                ended = True
                i += 1
                continue
            if not t & 0x80:
                i += 1          # unused / deleted
                continue
            if t & 0x40:
                self.bad(f"{where}: in-use secondary {t:#x} with no primary")
                i += 1
                continue
            critical = not t & 0x20
            if t == 0x85:
                i = self.file_set(path, ents, i, names, subdirs)
                continue
            if not root and t in (0x81, 0x82, 0x83, 0xA0, 0xA1, 0xA2):
                self.bad(f"{where}: root-only entry {t:#x} in a "
                         "subdirectory")
            if root and t in (0x81, 0x82, 0x83, 0xA0):
                seen[t] = seen.get(t, 0) + 1
            if t == 0x81:
                first, n = struct.unpack_from("<IQ", e, 20)
                idx = e[1] & 1
                self.bitmaps.append((idx, first, n))
                self.chain(f"bitmap {idx}", first, n, False)
            elif t == 0x82:
                first, n = struct.unpack_from("<IQ", e, 20)
                csum = struct.unpack_from("<I", e, 4)[0]
                cl = self.chain("up-case table", first, n, False)
                self.upcase_raw = b"".join(
                    self.read(self.heap_off + (c - 2) * self.clu, self.clu)
                    for c in cl)[:n]
                if upcase_checksum(self.upcase_raw) != csum:
                    self.bad("up-case table: TableChecksum does not match")
            elif t == 0x83:
                if e[1] > 11:
                    self.bad(f"{where}: label of {e[1]} characters")
            elif critical:
                self.bad(f"{where}: unknown critical primary {t:#x}")
            else:
                # benign primary: a set of its own
                n = e[1]
                raw = b"".join(ents[i:i + 1 + n])
                if i + 1 + n > len(ents):
                    self.bad(f"{where}: benign set runs past the directory")
                elif t not in (0xA1, 0xA2) and \
                        struct.unpack_from("<H", e, 2)[0] != set_checksum(raw):
                    self.bad(f"{where}: benign primary {t:#x}: bad "
                             "SetChecksum")
                if t not in (0xA1, 0xA2) and e[4] & 1:
                    first, size = struct.unpack_from("<IQ", e, 20)
                    self.chain(f"{where}: benign primary {t:#x}", first,
                               size, bool(e[4] & 2))
                i += 1 + n
                continue
            i += 1
        if root:
            if seen.get(0x81, 0) != self.nfats_bitmaps():
                self.bad(f"root: {seen.get(0x81, 0)} bitmap entries")
            if seen.get(0x82, 0) != 1:
                self.bad(f"root: {seen.get(0x82, 0)} up-case entries")
            for t in (0x83, 0xA0):
                if seen.get(t, 0) > 1:
                    self.bad(f"root: {seen[t]} entries of type {t:#x}")
        return subdirs

    def nfats_bitmaps(self):
        return 2 if self.read(110, 1)[0] == 2 else 1

    def file_set(self, path, ents, i, names, subdirs):
        e = ents[i]
        n = e[1]
        where = f"{path or '/'} entry {i}"
        # 2 + 17 names; vendor secondaries may follow a name of 17
        # entries (§6.3.2 allows 255; exfat2 and foreign.py use that)
        if n < 2:
            self.bad(f"{where}: SecondaryCount {n}")
            return i + 1
        if i + 1 + n > len(ents):
            self.bad(f"{where}: set of {n + 1} entries runs past the "
                     "directory")
            return len(ents)
        s = ents[i:i + 1 + n]
        for k, x in enumerate(s[1:], 1):
            if x[0] & 0xC0 != 0xC0:
                self.bad(f"{where}: secondary {k} has type {x[0]:#x}")
                return i + 1
        if struct.unpack_from("<H", e, 2)[0] != set_checksum(b"".join(s)):
            self.bad(f"{where}: bad SetChecksum")
        attr = struct.unpack_from("<H", e, 4)[0]
        st = s[1]
        if st[0] != 0xC0:
            self.bad(f"{where}: second entry {st[0]:#x}, not a Stream")
            return i + 1 + n
        flags, nlen = st[1], st[3]
        nhash = struct.unpack_from("<H", st, 4)[0]
        vdl = struct.unpack_from("<Q", st, 8)[0]
        first = struct.unpack_from("<I", st, 20)[0]
        size = struct.unpack_from("<Q", st, 24)[0]
        nname = -(-nlen // 15)
        if not 1 <= nlen <= 255:
            self.bad(f"{where}: NameLength {nlen}")
        if 1 + nname > n:
            self.bad(f"{where}: {n - 1} entries after the Stream for a "
                     f"name of {nlen}")
            return i + 1 + n
        units = []
        for k in range(2, 2 + nname):
            if s[k][0] != 0xC1:
                self.bad(f"{where}: entry {k} is {s[k][0]:#x}, not a "
                         "File Name")
                return i + 1 + n
            units += struct.unpack_from("<15H", s[k], 2)
        units = units[:nlen]
        name = struct.pack(f"<{nlen}H", *units).decode("utf-16-le",
                                                         "surrogatepass")
        full = f"{path}/{name}"
        if any(u in FORBIDDEN for u in units):
            self.bad(f"{full!a}: forbidden character in the name")
        if name in (".", ".."):
            self.bad(f"{full!a}: reserved name")
        if name_hash(units, self.upcase) != nhash:
            self.bad(f"{full!a}: NameHash does not match the name")
        key = tuple(self.upcase[u] for u in units)
        if key in names:
            self.bad(f"{full!a}: same name as {names[key]!a} through the "
                     "up-case table")
        names[key] = full
        for k in range(2 + nname, 1 + n):
            x = s[k]
            if not x[0] & 0x20:
                self.bad(f"{full!a}: critical secondary {x[0]:#x} after "
                         "the name")
            elif x[1] & 1:          # AllocationPossible
                f2, l2 = struct.unpack_from("<IQ", x, 20)
                self.chain(f"{full} secondary {k}", f2, l2,
                           bool(x[1] & 2))
        if not flags & 1:
            if first or size:
                self.bad(f"{full!a}: AllocationPossible clear with "
                         f"FirstCluster {first}, DataLength {size}")
            return i + 1 + n
        if vdl > size:
            self.bad(f"{full!a}: ValidDataLength {vdl} > DataLength {size}")
        isdir = bool(attr & 0x10)
        cl = self.chain(full, first, size, bool(flags & 2))
        if isdir:
            if vdl != size:
                self.bad(f"{full!a}: directory ValidDataLength {vdl} != "
                         f"DataLength {size}")
            if size % self.clu or size > MAX_DIR_SIZE:
                self.bad(f"{full!a}: directory DataLength {size}")
            if cl and size % self.clu == 0:
                subdirs.append((full, cl, size))
        return i + 1 + n

    # -- the whole volume --------------------------------------------------

    def run(self):
        self.boot()
        self.load_fat()
        self.bitmaps = []
        self.upcase_raw = None
        # The root's size is its chain: it has no DataLength.
        root = []
        c = self.root
        while self.valid(c) and len(root) <= self.nclu:
            root.append(c)
            c = self.fat[c]
        if c != EOC:
            self.bad(f"root directory chain ends in {c:#x}")
        for c in root:
            if c in self.owner:
                self.bad(f"root directory loops at cluster {c}")
                break
            self.owner[c] = "root directory"
        # The up-case table is needed before names: find it first.
        self.upcase = list(range(0x10000))
        for e in self.dir_entries(root, len(root) * self.clu):
            if e[0] == 0x82:
                self.upcase = expand_upcase(self.peek(
                    *struct.unpack_from("<IQ", e, 20)))
                break
        todo = [("", root, len(root) * self.clu, True)]
        while todo:
            path, cl, size, root_dir = todo.pop()
            for sub in self.walk_dir(path, cl, size, root_dir):
                todo.append(sub + (False,))
        self.check_bitmap()
        return self.problems

    def check_bitmap(self):
        bm = [b for b in self.bitmaps if b[0] == self.active]
        if not bm:
            return
        _, first, n = bm[0]
        if n < -(-self.nclu // 8):
            self.bad(f"bitmap of {n} bytes for {self.nclu} clusters")
            return
        bits = self.peek(first, n)
        leaks, lost = [], []
        for c in range(2, self.nclu + 2):
            used = bits[(c - 2) >> 3] >> ((c - 2) & 7) & 1
            if used and c not in self.owner:
                leaks.append(c)
            elif not used and c in self.owner:
                lost.append(c)
        if leaks:
            self.bad(f"{len(leaks)} clusters marked in use that no chain "
                     f"owns (leak): {leaks[:8]}")
        for c in lost[:MAX_REPORT]:
            self.bad(f"cluster {c} of {self.owner[c]!a} is free in the "
                     "bitmap")


def check(path):
    ck = Checker(path)
    try:
        return ck.run()
    except (ValueError, EOFError) as e:
        return ck.problems + [str(e)]
    except (IndexError, MemoryError, RecursionError) as e:
        return ck.problems + [f"cannot parse the volume: {e!r}"]
    finally:
        ck.f.close()


def main():
    if len(sys.argv) != 2:
        print("usage: xcheck.py IMAGE", file=sys.stderr)
        return 2
    problems = check(sys.argv[1])
    for p in problems[:MAX_REPORT]:
        print(p)
    if len(problems) > MAX_REPORT:
        print(f"... {len(problems) - MAX_REPORT} more")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())

# SPDX-License-Identifier: GPL-2.0
"""One corruption per rule of the strict checker (tests/guest/xcheck.py),
made with the raw editor of rawfs.py on a valid image: the checker's own
proof that it can fail.  Each mutation returns the text the checker must
print for it, or None when the image has nothing it applies to.

    for name, fn in MUTATIONS: want = fn(rawfs.Volume(path))
"""

import struct

import rawfs

EOC = rawfs.EOC


def _all_sets(v):
    """(dir clusters, set) of every file set, breadth first."""
    out = []
    todo = [v.chain(v.root)]
    while todo:
        cl = todo.pop(0)
        for s in v.sets(cl):
            out.append((cl, s))
            if s.is_dir and s.stream[3]:
                todo.append(v.dir_clusters(s))
    return out


def _files(v, pred):
    for cl, s in _all_sets(v):
        flags, first, vdl, size = s.stream
        if not s.is_dir and pred(flags, first, vdl, size, v):
            return cl, s
    return None, None


def _set_stream(v, cl, s, off, fmt, val):
    ents = [bytearray(e) for e in s.entries]
    struct.pack_into(fmt, ents[1], off, val)
    v.write_set(cl, s.eidx, [bytes(e) for e in ents])


def leak(v):
    c = v.free_clusters(1)[0]
    v.set_in_use(c)
    return r"no chain owns \(leak\)"


def lost(v):
    cl, s = _files(v, lambda fl, fi, vdl, sz, v: sz > 0)
    v.set_in_use(s.stream[1], False)
    return "is free in the bitmap"


def shared(v):
    sets = [(cl, s) for cl, s in _all_sets(v)
            if not s.is_dir and s.stream[3] and s.stream[3] <= v.clu]
    (cl, a), (_, b) = sets[0], sets[1]
    _set_stream(v, cl, a, 20, "<I", b.stream[1])
    return "in two chains"


def _fat_chained(v):
    """A file of three clusters or more in a FAT chain."""
    return _files(v, lambda fl, fi, vdl, sz, v: not fl & 2 and
                  sz > 2 * v.clu)


def short_chain(v):
    cl, s = _fat_chained(v)
    if not s:
        return None
    v.set_fat(s.stream[1], EOC)
    return "clusters, .* bytes need"


def long_chain(v):
    cl, s = _fat_chained(v)
    if not s:
        return None
    _, _, vdl, size = s.stream
    new = (size - 1) // v.clu * v.clu
    ents = [bytearray(e) for e in s.entries]
    struct.pack_into("<Q", ents[1], 8, min(vdl, new))
    struct.pack_into("<Q", ents[1], 24, new)
    v.write_set(cl, s.eidx, [bytes(e) for e in ents])
    return "chain goes on past"


def bad_checksum(v):
    cl, s = _files(v, lambda *a: True)
    off = v.entry_off(cl, s.eidx) + 2
    b = v.read(off, 1)[0]
    v.write(off, bytes([b ^ 0x40]))
    return "bad SetChecksum"


def bad_name_hash(v):
    cl, s = _files(v, lambda *a: True)
    _set_stream(v, cl, s, 4, "<H", s.entries[1][4] ^ 0x5A | 0x100)
    return "NameHash does not match"


def duplicate_name(v):
    """A file renamed to its sibling's name, ASCII letters in the other
    case."""
    from corrupt import name_hash
    up = v.upcase()
    for cl, s in _all_sets(v):
        nname = len(s.entries) - 2
        sibs = [x for x in v.sets(cl) if x.eidx != s.eidx and
                sum(e[0] == 0xC1 for e in x.entries) ==
                sum(e[0] == 0xC1 for e in s.entries)]
        if not sibs or nname < 1:
            continue
        other = sibs[0]
        new = "".join(c.swapcase() if c.isascii() else c for c in s.name)
        raw = new.encode("utf-16-le", "surrogatepass")
        ents = [bytearray(e) for e in other.entries]
        ents[1][3] = len(raw) // 2
        for k in range(2, len(ents)):
            if ents[k][0] != 0xC1:
                break
            chunk = raw[(k - 2) * 30:(k - 1) * 30]
            ents[k][2:32] = chunk + bytes(30 - len(chunk))
        units = struct.unpack(f"<{len(raw) // 2}H", raw)
        struct.pack_into("<H", ents[1], 4, name_hash(units, up))
        v.write_set(cl, other.eidx, [bytes(e) for e in ents])
        return "through the up-case table"
    return None


def dir_vdl(v):
    for cl, s in _all_sets(v):
        if s.is_dir and s.stream[3]:
            _set_stream(v, cl, s, 8, "<Q", s.stream[3] - 32)
            return "directory ValidDataLength"
    return None


def file_vdl(v):
    cl, s = _files(v, lambda fl, fi, vdl, sz, v: sz > 0)
    _set_stream(v, cl, s, 8, "<Q", s.stream[3] + 1)
    return "ValidDataLength .* > DataLength"


def stray_secondary(v):
    """An in-use Stream entry where an unused entry was."""
    for cl, s in _all_sets(v):
        if not s.is_dir or not s.stream[3]:
            continue
        dcl = v.dir_clusters(s)
        for eidx, e in v.entries(dcl):
            if e[0] and not e[0] & 0x80:
                v.write(v.entry_off(dcl, eidx), b"\xc0" + bytes(31))
                return "in-use secondary 0xc0 with no primary"
    return None


def after_end(v):
    """A deleted entry after the end-of-directory entry."""
    for cl in [v.chain(v.root)] + [v.dir_clusters(s) for _, s in
                                   _all_sets(v) if s.is_dir and
                                   s.stream[3]]:
        ents = list(v.entries(cl))
        for eidx, e in ents[:-1]:
            if e[0] == 0:
                v.write(v.entry_off(cl, eidx + 1), b"\x05" + bytes(31))
                return "after the end of the directory"
    return None


def boot_checksum(v):
    off = 11 * v.sect
    b = v.read(off, 1)[0]
    v.write(off, bytes([b ^ 1]))
    return "boot region 0: checksum sector"


def backup_differs(v):
    """The backup boot sector's serial number changed, checksum fixed."""
    from corrupt import boot_checksum as csum
    base = 12 * v.sect
    reg = bytearray(v.read(base, 12 * v.sect))
    reg[100] ^= 0xFF
    reg[11 * v.sect:] = struct.pack("<I", csum(reg, v.sect)) * \
        (v.sect // 4)
    v.write(base, bytes(reg))
    return "backup boot region differs"


def forbidden_char(v):
    cl, s = _files(v, lambda *a: True)
    ents = [bytearray(e) for e in s.entries]
    ents[2][2:4] = struct.pack("<H", ord(":"))
    units = struct.unpack(f"<{ents[1][3]}H",
                          b"".join(e[2:32] for e in ents[2:]
                                   if e[0] == 0xC1)[:2 * ents[1][3]])
    from corrupt import name_hash
    struct.pack_into("<H", ents[1], 4, name_hash(units, v.upcase()))
    v.write_set(cl, s.eidx, [bytes(e) for e in ents])
    return "forbidden character"


def upcase_checksum(v):
    for _, e in v.entries(v.chain(v.root)):
        if e[0] == 0x82:
            first = struct.unpack_from("<I", e, 20)[0]
            off = v.clu_off(first) + 7
            b = v.read(off, 1)[0]
            v.write(off, bytes([b ^ 1]))
            return "TableChecksum does not match"
    return None


MUTATIONS = [(f.__name__, f) for f in (
    leak, lost, shared, short_chain, long_chain, bad_checksum,
    bad_name_hash, duplicate_name, dir_vdl, file_vdl, stray_secondary,
    after_end, boot_checksum, backup_differs, forbidden_char,
    upcase_checksum)]

# SPDX-License-Identifier: GPL-2.0
"""Foreign volumes: every operation of exfat2 on directories that other
implementations wrote, with the layouts the specification allows and
exfat2 itself never writes: entry sets across sector and cluster
boundaries (FAT-chained and NoFatChain directories), directories with no
end-of-directory entry, deleted sets and unused entries between live ones,
benign and vendor secondaries, names of up to 17 name entries and with
lone surrogates, the volume GUID, TexFAT padding and label in the root.

The layouts come from the in-tree driver, from exfat-fuse, and from
tests/guest/foreign.py, which writes them byte by byte.  Their judges:
the namespace exerciser's model (tests/guest/nsx.py), fsck.exfat, the
in-tree driver and the raw reader of tests/guest/rawfs.py.
"""

import os
import random
import sys

import foreign
import nsx
import rawfs
from lib import (Image, TestFailure, assert_eq, log, mount, sh, test, umount,
                 xcheck_clean)


def _names_on_disk(dev, path):
    v = rawfs.Volume(dev)
    try:
        s, _ = v.lookup(path)
        return sorted(st.name for st in v.sets(v.dir_clusters(s)))
    finally:
        v.close()


@test(timeout=300)
def rename_of_set_across_sector_keeps_file():
    """The in-tree driver writes eight three-entry sets into a directory of
    a 32 KiB-cluster volume, so the sixth crosses the first 512-byte sector
    boundary.  exfat2 renames it, in case only and to another name of the
    same length: the file must keep its data under its new name, for
    exfat2 after a remount, for the in-tree driver and on disk."""
    data = {i: random.Random(i).randbytes(3000 + i) for i in range(1, 9)}
    with Image(size_mb=64, cluster="32K") as img:
        with mount(img.dev, driver="intree") as mnt:
            for d in ("a", "b"):
                os.mkdir(f"{mnt}/{d}")
                for i in range(1, 9):
                    with open(f"{mnt}/{d}/file_{i}.txt", "wb") as f:
                        f.write(data[i])
        with mount(img.dev) as mnt:
            os.rename(f"{mnt}/a/file_6.txt", f"{mnt}/a/FILE_6.txt")
            os.rename(f"{mnt}/b/file_6.txt", f"{mnt}/b/othr_6.txt")
        want = {"a": "FILE_6.txt", "b": "othr_6.txt"}
        for drv in ("ours", "intree"):
            with mount(img.dev, driver=drv, opts="ro") as mnt:
                for d, new in want.items():
                    names = sorted(os.listdir(f"{mnt}/{d}"))
                    exp = sorted([f"file_{i}.txt" for i in range(1, 9)
                                  if i != 6] + [new])
                    assert_eq(names, exp, f"{drv}: listing of {d}")
                    with open(f"{mnt}/{d}/{new}", "rb") as f:
                        assert_eq(f.read() == data[6], True,
                                  f"{drv}: {d}/{new} holds file_6's data")
        for d, new in want.items():
            assert_eq(new in _names_on_disk(img.dev, d), True,
                      f"raw reader finds {d}/{new}")


def fsck_foreign(dev):
    """fsck.exfat -n must find nothing but what it reports on every volume
    with GUID, TexFAT padding, benign secondaries or sets split across
    fragmented clusters, each finding checked on the raw image to be such
    an entry of a set whose checksum rawfs verifies; VolumeDirty must be
    clear; then the strict checker (xcheck.py), which reads these layouts
    right, must find nothing.  Returns the number of findings tolerated."""
    p = sh(f"fsck.exfat -n {dev}", check=False)
    out = (p.stdout + p.stderr).strip()
    with open(dev, "rb") as f:
        f.seek(106)
        if int.from_bytes(f.read(2), "little") & 2:
            raise TestFailure(f"{dev}: VolumeDirty set\n{out}")
    errors = [ln for ln in out.splitlines() if "ERROR" in ln]
    misread = rawfs.fsck_misreads(dev, errors)
    for line in errors:
        if line not in misread:
            raise TestFailure(f"fsck.exfat -n {dev}: {line}\n{out[-3000:]}")
    tolerated = len(misread)
    if p.returncode and not tolerated:
        raise TestFailure(f"fsck.exfat -n {dev}: exit {p.returncode}\n"
                          f"{out[-3000:]}")
    xcheck_clean(dev)
    return tolerated


def _load(img, data):
    with open(img.dev, "r+b") as f:
        f.write(data)
        os.fsync(f.fileno())


def exercise(what, img, twin, ops, seed, check_every=250, remounts=2):
    """Check the tree with exfat2, run nsx for ops operations (with
    remounts between checks), then judge with fsck.exfat, exfat2 after a
    remount and the in-tree driver."""
    log(f"{what}: exfat2 mounts it")
    with mount(img.dev) as mnt:
        nsx.compare_tree(mnt, twin, f"{what}: exfat2 before")
        x = nsx.Exerciser(mnt, twin, seed)
        every = max(1, ops // (remounts + 1))

        def on_check(i):
            if i % every < check_every and i >= every:
                umount(mnt)
                log(f"{what}: remount after {i} operations")
                sh(f"mount -t exfat {img.dev} {mnt}")
                nsx.compare_tree(mnt, twin, f"{what}: after remount at {i}")
        try:
            x.run(ops, check_every=check_every, on_check=on_check)
            nsx.compare_tree(mnt, twin, f"{what}: exfat2 at the end")
        except nsx.Mismatch as e:
            raise TestFailure(str(e)) from None
    log(f"{what}: {ops} operations: " +
        ", ".join(f"{k} {v}" for k, v in sorted(x.counts.items())))
    tolerated = fsck_foreign(img.dev)
    for drv in ("ours", "intree"):
        with mount(img.dev, driver=drv, opts="ro") as mnt:
            intree = drv == "intree"
            try:
                st = nsx.compare_tree(
                    mnt, twin, f"{what}: {drv} after",
                    spell=intree_spelling if intree else nsx.enc,
                    retry=intree)
            except nsx.Mismatch as e:
                raise TestFailure(str(e)) from None
    f, d = foreign.count_twin(twin)
    log(f"{what}: end: {f} files, {d} directories, {st.files} read by the "
        f"in-tree driver ({len(st.retried)} lookups it missed until the "
        f"caches were dropped); fsck.exfat findings tolerated: {tolerated}")


def intree_spelling(name):
    """The in-tree driver leaves a lone surrogate out of the name it
    lists (utf16s_to_utf8s() skips it)."""
    return nsx.enc("".join(c for c in name
                           if not 0xD800 <= ord(c) <= 0xDFFF))


def _twin(img, tree):
    """The model of tree on img, whose fsck.exfat findings must be only
    those fsck_foreign() tolerates, names compared through its up-case
    table."""
    fsck_foreign(img.dev)
    v = rawfs.Volume(img.dev)
    try:
        return nsx.Twin(tree, v.upcase())
    finally:
        v.close()


def foreign_layout(layout, seed, ops):
    size_mb, sector, _, _ = foreign.LAYOUTS[layout]
    data, tree = foreign.build(layout, seed)
    with Image(size_mb=size_mb, sector=sector, mkfs=False, fsck=False) as img:
        _load(img, data)
        twin = _twin(img, tree)
        with mount(img.dev, driver="intree", opts="ro") as mnt:
            try:
                st = nsx.compare_tree(mnt, twin, f"{layout}: in-tree before",
                                      spell=intree_spelling, retry=True)
            except nsx.Mismatch as e:
                raise TestFailure(f"the layout itself: {e}") from None
        log(f"{layout}/{seed}: the in-tree driver reads the layout: "
            f"{st.files} files, {len(st.retried)} lookups it missed until "
            f"the caches were dropped")
        exercise(f"{layout}/{seed}", img, twin, ops, seed)


def _crafted(layout):
    def run():
        foreign_layout(layout, 1, 2000)
    run.__name__ = "nsx_crafted_" + layout.replace("-", "_")
    run.__doc__ = f"nsx on the crafted layout {layout}, 2,000 operations."
    return run


# foreign:nsx_crafted_s4k_c4k, _s512_c32k, _s512_c4k, _s512_c512
for _layout in sorted(foreign.LAYOUTS):
    test(timeout=900)(_crafted(_layout))


@test(timeout=300)
def root_kept_after_removing_foreign_subdirs():
    """The root's link count counts the directories another driver made in
    it: removing them (or moving them away) must not take it to zero and
    free the root's clusters at unmount."""
    with Image(size_mb=32, cluster=4096) as img:
        with mount(img.dev, driver="intree") as mnt:
            for i in range(3):
                os.mkdir(f"{mnt}/d{i}")
            os.mkdir(f"{mnt}/keep")
        with mount(img.dev) as mnt:
            assert_eq(os.stat(mnt).st_nlink, 6, "root link count at mount")
            os.rename(f"{mnt}/d0", f"{mnt}/keep/d0")
            os.rmdir(f"{mnt}/d1")
            os.rmdir(f"{mnt}/d2")
            assert_eq(os.stat(mnt).st_nlink, 3, "root link count after")
        v = rawfs.Volume(img.dev)
        try:
            for c in v.chain(v.root):
                assert_eq(v.in_use(c), True, f"root cluster {c} in use")
        finally:
            v.close()


@test(timeout=300)
def lone_surrogate_names_usable():
    """Windows allows any UTF-16 unit in a name, a surrogate that is not
    half of a pair too.  exfat2 lists such a name with the surrogate as
    its three-byte form; that name must also open, rename and unlink."""
    import struct
    from corrupt import name_hash, utf16_units
    with Image(size_mb=16, cluster=4096) as img:
        with mount(img.dev) as mnt:
            for n in ("abc", "xyz"):
                with open(f"{mnt}/{n}", "wb") as f:
                    f.write(n.encode() * 100)
        v = rawfs.Volume(img.dev)
        try:
            up = v.upcase()
            root = v.chain(v.root)
            for old, new in (("abc", "a\udc00c"), ("xyz", "x\ud800z")):
                s = next(st for st in v.sets(root) if st.name == old)
                units = utf16_units(new)
                ents = list(s.entries)
                st = bytearray(ents[1])
                struct.pack_into("<H", st, 4, name_hash(units, up))
                ents[1] = bytes(st)
                ents[2] = ents[2][:2] + struct.pack("<3H", *units) + \
                    ents[2][8:]
                v.write_set(root, s.eidx, ents)
        finally:
            v.close()
        with mount(img.dev) as mnt:
            m = os.fsencode(mnt)
            names = sorted(os.listdir(m))
            want = sorted(nsx.enc(n) for n in ("a\udc00c", "x\ud800z"))
            assert_eq(names, want, "listing")
            with open(m + b"/" + want[0], "rb") as f:
                assert_eq(f.read(), b"abc" * 100, "content through the name")
            os.rename(m + b"/" + want[0], m + b"/" + nsx.enc("q\udc00"))
            os.unlink(m + b"/" + want[1])
            assert_eq(os.listdir(m), [nsx.enc("q\udc00")], "after")


def written_by(driver, seed, ops, cluster, sector=512, size_mb=64, **kw):
    """A tree written by another driver (intree, or fuse for exfat-fuse)
    on a fresh volume, then exercised by exfat2."""
    with Image(size_mb=size_mb, cluster=cluster, sector=sector,
               fsck=False) as img:
        if driver == "fuse":
            os.makedirs("/mnt/fuse", exist_ok=True)
            sh(f"mount.exfat-fuse {img.dev} /mnt/fuse")
            try:
                tree = nsx.populate("/mnt/fuse", seed, **kw)
            finally:
                umount("/mnt/fuse")
        else:
            with mount(img.dev, driver=driver) as mnt:
                tree = nsx.populate(mnt, seed, **kw)
        twin = _twin(img, tree)
        exercise(f"{driver}/{cluster}/{sector}/{seed}", img, twin, ops,
                 seed)


@test(timeout=900)
def nsx_intree_written_c4k():
    written_by("intree", 1, 2000, 4096)


@test(timeout=900)
def nsx_intree_written_s4k():
    written_by("intree", 2, 2000, 4096, sector=4096, files=200)


@test(timeout=900)
def nsx_intree_written_c32k():
    written_by("intree", 3, 2000, "32K")


@test(timeout=900)
def nsx_fuse_written_c4k():
    written_by("fuse", 4, 2000, 4096, files=200)


@test(timeout=1200)
def nsx_intree_written_big_directory():
    """A directory of 3,000 sets, a third of them deleted again, written
    by the in-tree driver."""
    written_by("intree", 5, 2000, 4096, files=3000, one_dir="big")


@test(timeout=300)
def nsx_judge_fails_on_purpose():
    """The model comparison must catch what a buggy driver would do: a
    file gone, a name in the wrong case, a byte changed, a size changed,
    a file the model does not know.  Each is done behind the model's back
    on a fresh volume and must be reported."""
    def flip(p):
        with open(p, "r+b") as f:
            b = f.read(1)
            f.seek(0)
            f.write(bytes([b[0] ^ 0x5A]))

    def recase(p):
        head, _, name = p.rpartition(b"/")
        os.rename(p, head + b"/" + name.swapcase())

    damages = [
        ("a byte changed", flip),
        ("a size changed", lambda p: os.truncate(p, 1)),
        ("the case of a name", recase),
        ("a file gone", os.unlink),
        ("an unknown file", lambda p: open(p + b"-x", "w").close()),
    ]
    for what, damage in damages:
        with Image(size_mb=16, cluster=4096) as img, mount(img.dev) as mnt:
            tree = {"Some-File.txt": b"0123456789" * 100, "d": {"x": b"y"}}
            for name, data in (("Some-File.txt", tree["Some-File.txt"]),
                               ("d/x", b"y")):
                os.makedirs(os.path.dirname(f"{mnt}/{name}"), exist_ok=True)
                with open(f"{mnt}/{name}", "wb") as f:
                    f.write(data)
            v = rawfs.Volume(img.dev, write=False)
            try:
                twin = nsx.Twin(tree, v.upcase())
            finally:
                v.close()
            nsx.compare_tree(mnt, twin, "untouched")
            damage(os.fsencode(f"{mnt}/Some-File.txt"))
            try:
                nsx.compare_tree(mnt, twin, what)
            except nsx.Mismatch as e:
                log(f"caught {what}: {e}")
                continue
            raise TestFailure(f"the model comparison missed {what}")


def _kmsg_mark(text):
    with open("/dev/kmsg", "w") as k:
        k.write(f"<5>exfat2-test: {text}\n")


def _kmsg_since(text):
    out = sh("dmesg").stdout
    return out[out.rfind(text):]


def _still_writable(mnt):
    with open(f"{mnt}/probe", "wb") as f:
        f.write(b"x")
    os.unlink(f"{mnt}/probe")


@test(timeout=300)
def nfs_parent_of_directory_without_end_marker():
    """A directory filled to the end of its only cluster, FAT-chained, has
    no end-of-directory entry.  Reconnecting a file handle searches the
    tree for a parent: the search must stop at each directory's
    DataLength, not run into the end of its chain and call the volume
    corrupt."""
    from lib import name_to_handle, open_by_handle
    with Image(size_mb=32, cluster=4096) as img:
        with mount(img.dev, driver="intree") as mnt:
            os.mkdir(f"{mnt}/p")
            # 2 sets of 4 entries and 40 of 3: the 128 entries of a cluster
            for i in range(42):
                name = f"{i:02d}" + ("x" * 14 if i < 2 else "")
                open(f"{mnt}/p/{name}", "w").close()
            os.makedirs(f"{mnt}/t/u/v")
        v = rawfs.Volume(img.dev)
        try:
            s, parent = v.lookup("p")
            flags, first, _, size = s.stream
            assert_eq(size, 4096, "p is one cluster")
            ents = [e for _, e in v.entries([first])]
            assert_eq(all(e[0] != 0 for e in ents), True, "p has no end")
            # make p FAT-chained: FAT entry EOC, NoFatChain cleared
            v.set_fat(first, rawfs.EOC)
            st = bytearray(s.entries[1])
            st[1] &= ~2
            v.write_set(parent, s.eidx, [s.entries[0], bytes(st)] +
                        s.entries[2:])
        finally:
            v.close()
        with mount(img.dev) as mnt:
            h = name_to_handle(f"{mnt}/t/u/v")
            sh("sync; echo 3 > /proc/sys/vm/drop_caches")
            _kmsg_mark("open by handle")
            fd = open_by_handle(mnt, h)
            try:
                assert_eq(os.listdir(fd), [], "directory by handle")
            finally:
                os.close(fd)
            msgs = _kmsg_since("open by handle")
            assert_eq("exfat2 (" in msgs, False, f"no complaint: {msgs}")
            _still_writable(mnt)


@test(timeout=300)
def nfs_handles_of_intree_written_files():
    """Handles of files the in-tree driver created (its own encoding of
    the creation time: a UTC offset, 10 ms units) stay valid through an
    eviction, a remount, exfat2 writing into an empty one (its entry set
    rewritten with exfat2's encoding) and an O_TRUNC rewrite; a file the
    in-tree driver then creates in a deleted one's slot gets another
    handle, and the old one is stale."""
    import errno
    from lib import (assert_true, expect_errno, name_to_handle,
                     open_by_handle, read_by_handle as read)
    rng = random.Random(11)
    full, more = rng.randbytes(7000), rng.randbytes(5000)
    with Image(size_mb=32, cluster=4096) as img:
        with mount(img.dev, driver="intree") as mnt:
            os.mkdir(f"{mnt}/d")
            open(f"{mnt}/d/empty", "wb").close()
            with open(f"{mnt}/d/full", "wb") as f:
                f.write(full)
        with mount(img.dev) as mnt:
            he = name_to_handle(f"{mnt}/d/empty")
            hf = name_to_handle(f"{mnt}/d/full")
            umount(mnt)
        with mount(img.dev) as mnt:
            assert_eq(read(mnt, hf), full, "full by handle after remount")
            assert_eq(read(mnt, he), b"", "empty by handle after remount")
            with open(f"{mnt}/d/empty", "wb") as f:
                f.write(more)
            sh("sync; echo 3 > /proc/sys/vm/drop_caches")
            assert_eq(read(mnt, he), more, "written through exfat2")
            with open(f"{mnt}/d/full", "wb") as f:
                f.write(more[::-1])
            umount(mnt)
        with mount(img.dev) as mnt:
            assert_eq(read(mnt, hf), more[::-1], "rewritten after O_TRUNC")
            old = name_to_handle(f"{mnt}/d/empty")
            umount(mnt)
        for _ in range(20):
            with mount(img.dev, driver="intree") as mnt:
                os.unlink(f"{mnt}/d/empty")
                open(f"{mnt}/d/empty", "wb").close()
            with mount(img.dev) as mnt:
                new = name_to_handle(f"{mnt}/d/empty")
                umount(mnt)
            if new.raw != old.raw:
                break
        assert_eq(new.raw[8:16], old.raw[8:16], "the slot reused")
        assert_true(new.raw != old.raw, "a different creation time")
        with mount(img.dev) as mnt:
            expect_errno(errno.ESTALE, open_by_handle, mnt, old)
            assert_eq(read(mnt, new), b"", "the new file by its handle")


@test(timeout=300)
def nfs_forged_handle_is_stale():
    """A handle naming a position that holds no entry set (a name entry,
    a cluster of file data, a cluster past the heap) is -ESTALE, with no
    corruption reported and the volume still writable."""
    import errno
    import struct
    from lib import expect_errno
    from lib import name_to_handle, open_by_handle
    with Image(size_mb=32, cluster=4096) as img:
        with mount(img.dev) as mnt:
            os.makedirs(f"{mnt}/d")
            with open(f"{mnt}/d/file", "wb") as f:
                f.write(random.Random(1).randbytes(20000))
            h = name_to_handle(f"{mnt}/d/file")
            dir_clu, eidx, btime, flags = struct.unpack_from("<4I", h, 8)
            sh("sync; echo 3 > /proc/sys/vm/drop_caches")
            import rawfs
            vol = rawfs.Volume(img.dev, write=False)
            start = vol.lookup("d/file")[0].stream[1]
            vol.close()
            _kmsg_mark("forged handles")
            for what, fields in (
                    ("a name entry", (dir_clu, eidx + 2, btime, flags)),
                    ("the stream entry", (dir_clu, eidx + 1, btime, flags)),
                    ("another creation time", (dir_clu, eidx, btime ^ 2,
                                               flags)),
                    ("file data as a directory", (start, 0, btime, 0)),
                    ("file data, FAT-chained", (start, 3, 0, 0)),
                    ("past the heap", (0x7fffffff, 0, 0, 0)),
                    ("past the directory", (dir_clu, 4000, btime, flags))):
                struct.pack_into("<4I", h, 8, *fields)
                expect_errno(errno.ESTALE, open_by_handle, mnt, h)
            msgs = _kmsg_since("forged handles")
            assert_eq("exfat2 (" in msgs, False, f"no complaint: {msgs}")
            _still_writable(mnt)


# The long form, run only when named (tests/run-tests.sh foreign:nsx_long):
# every crafted geometry and every foreign writer, 6,500 operations each,
# 52,000 in all.
if any("nsx_long" in a for a in sys.argv[1:] if not a.startswith("-")):
    @test(timeout=20000)
    def nsx_long():
        for i, layout in enumerate(sorted(foreign.LAYOUTS)):
            foreign_layout(layout, 100 + i, 6500)
        written_by("intree", 110, 6500, 4096, files=400)
        written_by("intree", 111, 6500, 4096, sector=4096, files=300)
        written_by("intree", 112, 6500, "32K", files=400)
        written_by("fuse", 113, 6500, 4096, files=300)


@test(timeout=300)
def rename_over_target_fails_whole():
    """A rename over an existing file whose new set finds no room (the
    target's directory is full and so is the volume) fails with ENOSPC
    and leaves both files as they were: the target is removed only once
    the new set has its place."""
    import errno
    from lib import expect_errno
    with Image(size_mb=16, cluster=4096, fsck=False) as img:
        with mount(img.dev, driver="intree") as mnt:
            os.mkdir(f"{mnt}/d1")
            os.mkdir(f"{mnt}/d2")
            with open(f"{mnt}/d1/src", "wb") as f:
                f.write(b"source" * 100)
            # 40 sets of 3 entries and two of 4, packed by the in-tree
            # driver: d2's one cluster of 128 entries is full
            for i in range(40):
                open(f"{mnt}/d2/{i:02d}", "w").close()
            open(f"{mnt}/d2/another-long-name", "w").close()
            with open(f"{mnt}/d2/target-name-long", "wb") as f:
                f.write(b"target" * 100)
        v = rawfs.Volume(img.dev)
        try:
            s, parent = v.lookup("d1/src")
            v.write_set(parent, s.eidx, s.entries + [rawfs.vendor_ext_entry(
                bytes(range(16)), b"v" * 14)] * 2)
        finally:
            v.close()
        with mount(img.dev) as mnt:
            # fill the volume
            with open(f"{mnt}/fill", "wb") as f:
                try:
                    while True:
                        f.write(b"\xa5" * (1 << 20))
                        f.flush()
                except OSError as e:
                    assert_eq(e.errno, errno.ENOSPC, "filling")
            expect_errno(errno.ENOSPC, os.rename, f"{mnt}/d1/src",
                         f"{mnt}/d2/target-name-long")
            with open(f"{mnt}/d2/target-name-long", "rb") as f:
                assert_eq(f.read(), b"target" * 100, "the target")
            with open(f"{mnt}/d1/src", "rb") as f:
                assert_eq(f.read(), b"source" * 100, "the source")
            os.unlink(f"{mnt}/fill")
        with mount(img.dev, driver="intree", opts="ro") as mnt:
            assert_eq(os.path.getsize(f"{mnt}/d2/target-name-long"), 600,
                      "the target for the in-tree driver")
        fsck_foreign(img.dev)


@test(timeout=300, writes=False)
def fsck_judge_fails_on_purpose():
    """fsck_foreign() tolerates only what fsck.exfat 1.2.0 misreads on
    valid layouts: a broken SetChecksum in an ordinary set, or in a set
    that crosses into a non-adjacent cluster, must still fail it."""
    data, _ = foreign.build("s512-c512", 3)
    with Image(size_mb=16, mkfs=False, fsck=False) as img:
        _load(img, data)
        fsck_foreign(img.dev)
        idx = rawfs.RawIndex(img.dev)
        v = rawfs.Volume(img.dev)
        try:
            plain = split = None
            todo = [v.chain(v.root)]
            while todo and not (plain and split):
                clusters = todo.pop()
                for st in v.sets(clusters):
                    off = v.entry_off(clusters, st.eidx)
                    if off in idx.split:
                        split = split or v.entry_off(clusters, st.eidx + 2)
                    elif off not in idx.benign:
                        plain = plain or v.entry_off(clusters, st.eidx + 2)
                    if st.is_dir and st.stream[3]:
                        todo.append(v.dir_clusters(st))
        finally:
            v.close()
        assert_eq(bool(plain and split), True, "both kinds of set found")
        for what, off in (("an ordinary set", plain),
                          ("a set across clusters", split)):
            with open(img.dev, "r+b") as f:
                f.seek(off + 2)
                b = f.read(1)
                f.seek(off + 2)
                f.write(bytes([b[0] ^ 0x01]))
            try:
                fsck_foreign(img.dev)
            except TestFailure as e:
                log(f"caught a bad checksum in {what}: {str(e)[:160]}")
            else:
                raise TestFailure(f"fsck_foreign missed a bad checksum in "
                                  f"{what}")
            with open(img.dev, "r+b") as f:
                f.seek(off + 2)
                f.write(b)


@test(timeout=600)
def rename_racing_fsync_keeps_fsynced_size():
    """A rename builds the new entry set from the moving file's set.  If
    it takes that copy before the file's set lock, an fsync between the
    copy and the rename's write (its write_inode sets the new DataLength)
    is undone: the new set holds the old size, and a crash before the
    next writeback loses what fsync returned for.  A file in a directory
    of 2,000 sets (so that the rename's lookup and slot search take a
    while) is renamed between a short and a long name while another
    thread appends and fsyncs; after each pair, the set on disk (read
    through the block device's cache, where the driver's writes are) must
    hold the size fsync returned for."""
    import threading
    with Image(size_mb=64, cluster="4K") as img, mount(img.dev) as mnt:
        d = f"{mnt}/big"
        os.mkdir(d)
        for i in range(2000):
            os.close(os.open(f"{d}/entry-{i:05d}", os.O_CREAT | os.O_WRONLY))
        names = ["f", "a-longer-name-of-the-file-%d"]
        cur = names[0]
        fd = os.open(f"{d}/{cur}", os.O_CREAT | os.O_RDWR)
        rng = random.Random(7)
        chunk = rng.randbytes(4096)
        bar = threading.Barrier(2)
        errs = []

        def appender(n):
            try:
                bar.wait()
                os.write(fd, chunk[n % 4096:] + chunk[:n % 4096])
                os.fsync(fd)
            except BaseException as e:
                errs.append(e)

        try:
            for it in range(200):
                new = names[1] % it if it % 2 == 0 else names[0]
                t = threading.Thread(target=appender, args=(it,))
                t.start()
                bar.wait()
                for _ in range(rng.randrange(0, 4000)):
                    pass
                os.rename(f"{d}/{cur}", f"{d}/{new}")
                cur = new
                t.join()
                if errs:
                    raise errs[0]
                size = os.fstat(fd).st_size
                v = rawfs.Volume(img.dev, write=False)
                try:
                    s, _ = v.lookup(f"big/{cur}")
                    on_disk = s.stream[3]
                finally:
                    v.close()
                if on_disk != size:
                    raise TestFailure(f"iteration {it}: fsync returned for "
                                      f"{size} bytes, the set of {cur} on "
                                      f"disk says {on_disk}")
        finally:
            os.close(fd)
        log(f"200 renames racing appends and fsyncs: the set always "
            f"held the size ({size} bytes at the end)")

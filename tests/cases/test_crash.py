# SPDX-License-Identifier: GPL-2.0
"""Crash consistency: what fsync, fdatasync and sync() made durable must
survive a power cut at any flush point (dm-log-writes replay) and at a
random moment (dm-flakey drop_writes), and every such state must pass
fsck.exfat -n and mount.  The harness is tests/guest/crashlib.py (its doc
says exactly what is required) and tests/guest/replaylog.py.

Short forms (in make check, driver under test = exfat2):
  crash:replay_short   3 replays (512 B and 4 KiB clusters on 512 B
                       sectors, 4 KiB on 4 KiB sectors), a few hundred
                       flush points and about a thousand states inside
                       flush windows; names up to 255 characters
                       (under the debug kernel: one smaller replay,
                       REPLAY_DEBUG)
  crash:unplug_short   10 unplugs at random moments; a torn entry set is
                       a failure (exfat2 places sets inside a sector:
                       write-ordering rule 7); for the in-tree driver,
                       which does not, it is soft (crashlib._FSCK_TORN)

Long forms and in-tree runs exist only when a filter asks for them (a
filter containing "long" or "intree"), so make check never runs them:
  tests/run-tests.sh crash:replay_long crash:unplug_long
  tests/run-tests.sh crash:replay_short_intree crash:unplug_short_intree
  tests/run-tests.sh crash:replay_long_intree crash:unplug_long_intree
Long forms use a new base seed each run (printed, and saved with every
result in $OUT/crash/NAME.json, with the operations, starting image and
log of failing replays); set TEST_TIMEOUT (whole VM, seconds) high enough,
e.g. TEST_TIMEOUT=20000.  One run can be repeated with
  tools/vm/vm.sh --out DIR -- python3 -B tests/guest/crashlib.py \\
      replay|unplug --driver ours|intree --seed S --cluster C --ops N \\
      [--ko SNAPSHOT.ko]
(--ko, or EXFAT2_KO for the runner, tests a copy of exfat2.ko while the
repo's is being rebuilt.)
"""

import os
import struct
import sys
import time

import crashlib
import rawfs
from lib import (KMEMLEAK, Image, assert_eq, assert_true, fail, log, mount,
                 note, sh, test)
from tree import write_file

# Only filters naming crash tests count ("crash:...", also "+crash:..." and
# "!crash:..."): another suite's filter that happens to hold the word (the
# debug pass runs foreign:nsx_intree_written_c4k) must not bring in the
# in-tree or long forms.
_FILTERS = [a.lstrip("+!") for a in sys.argv[1:] if not a.startswith("-")]


def _asked(word):
    return any(word in a for a in _FILTERS if a.startswith("crash:"))


# (cluster, sector, operations, window rate) of each replay run; run i has
# seed base + i.  The window rate is the share of the states inside flush
# windows (crashlib.Window: some writes between two flushes left out)
# checked too; exfat2 only: the in-tree driver issues no flush between
# the writes it needs in order, so every window would fail.
REPLAY_SHORT = [(512, 512, 250, 1.0), (4096, 512, 250, 1.0),
                (4096, 4096, 150, 1.0)]
# replay_short under the debug kernel (the debug pass: KASAN, lockdep and
# kmemleak over the workload and every crash state's mount), smaller so
# that the pass stays in CI's time: one replay of 100 operations on 512 B
# clusters (where long sets cross clusters), 30 % of the in-window states
REPLAY_DEBUG = [(512, 512, 100, 0.3)]
REPLAY_LONG = [(512, 512, 700, 1.0), (4096, 512, 700, 1.0),
               (4096, 4096, 700, 1.0), (32768, 512, 700, 1.0)]
UNPLUG_OPS = 60


def _kinds(results):
    """' (N kind, ...)' of the soft findings."""
    n = {}
    for r in results:
        for f in r.get("failures", []):
            if f.get("soft"):
                n[f["kind"]] = n.get(f["kind"], 0) + 1
    return f" ({', '.join(f'{v} {k}' for k, v in sorted(n.items()))})" \
        if n else ""


def _finish(name, results):
    crashlib.save(name, results)
    text, hard = crashlib.summary(results)
    log(text)
    pts = sum(r.get("flush_points") or 0 for r in results)
    win = sum(r.get("window_states") or 0 for r in results)
    note((f"{pts} flush points" if pts else f"{len(results)} cuts") +
         (f", {win} states inside flush windows" if win else "") +
         f", {sum(r.get('soft', 0) for r in results)} soft"
         f"{_kinds(results)}, "
         f"{sum(r.get('states_intree', 0) for r in results)} read by "
         "the in-tree driver too, "
         f"{sum(r.get('misread', 0) for r in results)} with fsck.exfat "
         "misreads left out")
    if hard:
        fail(f"{hard} crash-consistency failures:\n{text}")


def _replay(name, driver, runs, base_seed):
    results = []
    for i, (cluster, sector, nops, rate) in enumerate(runs):
        results.append(crashlib.replay_run(
            driver, base_seed + i, cluster, nops, sector=sector,
            window_rate=rate if driver == "ours" else 0.0))
        crashlib.save(name, results)
    _finish(name, results)


def _unplug(name, driver, nruns, base_seed, soft_torn=False):
    results = []
    for i in range(nruns):
        cluster = (512, 4096, 512, 4096, 32768)[i % 5]
        sector = 4096 if i % 7 == 6 and cluster >= 4096 else 512
        results.append(crashlib.unplug_run(driver, base_seed + i, cluster,
                                           UNPLUG_OPS, sector=sector,
                                           soft_torn=soft_torn))
        crashlib.save(name, results)
    _finish(name, results)


_LONG_SEED = int(time.time()) % 100000 * 1000


def _long_seed():
    """A new base seed per VM run, the same for both drivers in one run."""
    log(f"base seed {_LONG_SEED}")
    return _LONG_SEED


@test(timeout=1500, writes=False)
def replay_short():
    """Replay a seeded workload's dm-log-writes log to every flush point."""
    debug = os.path.exists(KMEMLEAK)
    _replay("replay_short", "ours", REPLAY_DEBUG if debug else REPLAY_SHORT,
            1)


@test(timeout=900, writes=False)
def unplug_short():
    """Drop every write from a random moment of a workload; check."""
    _unplug("unplug_short", "ours", 10, 1)


if _asked("long"):
    @test(timeout=30000, writes=False)
    def replay_long():
        _replay("replay_long", "ours", REPLAY_LONG, _long_seed())

    @test(timeout=30000, writes=False)
    def unplug_long():
        _unplug("unplug_long", "ours", 100, _long_seed())

if _asked("intree"):
    @test(timeout=1500, writes=False)
    def replay_short_intree():
        _replay("replay_short_intree", "intree", REPLAY_SHORT, 1)

    @test(timeout=900, writes=False)
    def unplug_short_intree():
        _unplug("unplug_short_intree", "intree", 10, 1, soft_torn=True)

    if _asked("long"):
        @test(timeout=30000, writes=False)
        def replay_long_intree():
            _replay("replay_long_intree", "intree", REPLAY_LONG,
                    _long_seed())

        @test(timeout=30000, writes=False)
        def unplug_long_intree():
            _unplug("unplug_long_intree", "intree", 100, _long_seed())


# ------------------------------------------------ the fsck classifier

def _geometry(dev):
    with open(dev, "rb") as f:
        b = f.read(512)
    heap = struct.unpack_from("<I", b, 88)[0]
    root = struct.unpack_from("<I", b, 96)[0]
    bps = 1 << b[108]
    spc = 1 << b[109]
    count = struct.unpack_from("<I", b, 92)[0]
    return heap * bps, bps * spc, root, count


def _bitmap_offset(dev):
    heap, csize, root, count = _geometry(dev)
    _, d = _root_dir(dev)
    for i in range(0, len(d), 32):
        if d[i] == 0x81:
            first = struct.unpack_from("<I", d, i + 20)[0]
            return heap + (first - 2) * csize, count
    fail("no allocation bitmap entry in the root directory")


def _flip(dev, offset, mask, set_):
    with open(dev, "r+b") as f:
        f.seek(offset)
        b = f.read(1)[0]
        f.seek(offset)
        f.write(bytes([(b | mask) if set_ else (b & ~mask)]))


def _root_dir(dev):
    heap, csize, root, count = _geometry(dev)
    off = heap + (root - 2) * csize
    with open(dev, "rb") as f:
        f.seek(off)
        return off, f.read(csize)


def _entry_set(dev, name):
    """(device offset, bytes) of the entry set of root file `name`."""
    off, d = _root_dir(dev)
    for i in range(0, len(d), 32):
        if d[i] != 0x85:
            continue
        sc, nlen = d[i + 1], d[i + 35]
        units = b"".join(d[i + 64 + 32 * k + 2:i + 96 + 32 * k]
                         for k in range(sc - 1))
        if units[:2 * nlen].decode("utf-16-le") == name:
            return off + i, bytearray(d[i:i + 32 * (sc + 1)])
    fail(f"no entry set for {name}")


def _set_checksum(b):
    c = 0
    for i, x in enumerate(b):
        if i not in (2, 3):
            c = ((c >> 1) | ((c & 1) << 15)) + x & 0xffff
    return c


def _set_size(dev, name, size):
    off, es = _entry_set(dev, name)
    struct.pack_into("<Q", es, 32 + 8, size)        # ValidDataLength
    struct.pack_into("<Q", es, 32 + 24, size)       # DataLength
    struct.pack_into("<H", es, 2, _set_checksum(es))
    with open(dev, "r+b") as f:
        f.seek(off)
        f.write(es)
    return es[33] & 2, struct.unpack_from("<I", es, 52)[0]


def _bit(dev, cluster, set_):
    bm, _ = _bitmap_offset(dev)
    i = cluster - 2
    _flip(dev, bm + i // 8, 1 << (i % 8), set_)


def _verdict(dev, want_ok, what, wording=None):
    ok, out = crashlib.fsck_verdict(dev)
    log(f"{what}: {'pass' if ok else 'fail'}: {out}")
    if ok != want_ok:
        fail(f"{what}: judged {'benign' if ok else 'a failure'}:\n{out}")
    if wording and wording not in out:
        fail(f"{what}: expected '{wording}' in:\n{out}")


@test(timeout=300, writes=False)
def fsck_benign():
    """The crash checker's fsck verdict on real images: VolumeDirty, a
    leaked cluster (bitmap bit without owner) and a FAT chain longer than
    its file pass; a file cluster marked free fails, also next to them."""
    c = 4096
    with Image(size_mb=16, cluster=c) as img:
        with mount(img.dev, driver="intree") as mnt:
            write_file(f"{mnt}/a", c, seed=1)
            write_file(f"{mnt}/b", c, seed=2)
            write_file(f"{mnt}/frag", c, seed=3)
            os.unlink(f"{mnt}/b")
            with open(f"{mnt}/a", "ab") as f:      # a: FAT chain, 4 clusters
                f.write(bytes(3 * c))
        sh(f"blockdev --flushbufs {img.dev}")
        _verdict(img.dev, True, "fresh image")
        # VolumeDirty (not covered by the boot checksum) and the last
        # cluster marked used without an owner.
        _flip(img.dev, 106, 2, True)
        _, _, _, count = _geometry(img.dev)
        _bit(img.dev, count + 1, True)
        _verdict(img.dev, True, "dirty + leaked cluster")
        # a's DataLength shortened by two clusters: its chain is longer.
        nofat, _ = _set_size(img.dev, "a", 2 * c)
        if nofat:
            fail("a is contiguous; the test needs a FAT chain")
        _verdict(img.dev, True, "FAT chain longer than the size",
                 "benign")
        # frag's cluster marked free: a real error, alone and next to the
        # benign findings.
        _, frag = _set_size(img.dev, "frag", c)     # (unchanged size)
        _bit(img.dev, frag, False)
        _verdict(img.dev, False, "+ a used cluster marked free",
                 "marked as free")
        _set_size(img.dev, "a", 4 * c)
        _flip(img.dev, 106, 2, False)
        _verdict(img.dev, False, "a used cluster marked free",
                 "marked as free")
        _bit(img.dev, frag, True)
        _bit(img.dev, count + 1, False)
        _verdict(img.dev, True, "restored")


@test(timeout=300, writes=False)
def rename_window_repaired_without_loss():
    """The state a cross-directory rename leaves between its two writes
    (the file, and a directory with a file inside, under their old and
    their new names: fsck.exfat finds clusters shared) is judged "dup",
    and fsck.exfat -y repairs a copy so that each keeps everything under
    one name (crashlib.repair_loses).  The check has teeth: asked to
    find content that neither name held, it reports a loss."""
    import rawfs
    c = 4096
    with Image(size_mb=16, cluster=c) as img:
        with mount(img.dev) as mnt:
            for d in ("d1", "d2", "d1/sub"):
                os.mkdir(f"{mnt}/{d}")
            write_file(f"{mnt}/d1/f", 3 * c, seed=1)
            write_file(f"{mnt}/d1/sub/g", c + 5, seed=2)
        v = rawfs.Volume(img.dev)
        try:
            for name in ("f", "sub"):
                st, _ = v.lookup(f"d1/{name}")
                d2, _ = v.lookup("d2")
                clusters = v.dir_clusters(d2)
                eidx = next(i for i, e in v.entries(clusters) if e[0] == 0)
                v.write_set(clusters, eidx, st.entries)
        finally:
            v.close()
        sh(f"blockdev --flushbufs {img.dev}")
        kind, out = crashlib.fsck_classify(img.dev)
        log(f"fsck: {kind}: {out}")
        assert_eq(kind, "dup", "fsck verdict of a rename window")
        with mount(img.dev, opts="ro") as mnt:
            tree, errors = crashlib.walk(mnt)
        assert_eq(errors, [], "walking the two-name state")
        pairs = [["/d1/f", "/d2/f"], ["/d1/sub", "/d2/sub"]]
        for p in ("/d2/f", "/d2/sub/g"):
            assert_true(p in tree, f"{p} visible")
        lost = crashlib.repair_loses(img.dev, tree, pairs, "/mnt/repaired")
        assert_eq(lost, "", "loss after fsck.exfat -y")
        tree["/d1/f"] = tree["/d2/f"] = b"never written"
        lost = crashlib.repair_loses(img.dev, tree, pairs, "/mnt/repaired")
        assert_true("/d1/f and /d2/f" in lost, f"a loss reported: {lost!r}")


@test(timeout=300, writes=False)
def torn_long_only_for_sets_over_a_sector():
    """crashlib.torn_long() excuses a torn entry set only when the set is
    longer than a sector (a name over 210 characters on 512-byte
    sectors): a damaged name entry of such a set, or its second sector
    without its first, is excused; the same damage to a set that fits in
    a sector is not (exfat2 writes those in one sector write)."""
    import rawfs
    long_name = "L" + "".join(chr(97 + i % 26) for i in range(229))
    with Image(size_mb=16, cluster="4K") as img:
        with mount(img.dev) as mnt:
            for i in range(3):
                write_file(f"{mnt}/s{i}", 100, seed=i)
            write_file(f"{mnt}/{long_name}", 100, seed=9)
        v = rawfs.Volume(img.dev)
        try:
            clusters = v.chain(v.root)
            offs = {st.name: [v.entry_off(clusters, st.eidx + i)
                              for i in range(len(st.entries))]
                    for st in v.sets(clusters)}
        finally:
            v.close()
        assert_eq(len(offs[long_name]), 18, "entries of the long set")
        first = offs[long_name][0]
        second = [o for o in offs[long_name] if o // 512 != first // 512]
        assert_true(second, "the long set crosses a sector")
        with open(img.dev, "rb") as f:
            f.seek(0)
            saved = f.read(offs[long_name][-1] + 32)

        def damage(what, edits, want):
            with open(img.dev, "r+b") as f:
                for off, fn in edits:
                    f.seek(off)
                    b = f.read(1)[0]
                    f.seek(off)
                    f.write(bytes([fn(b)]))
            sh(f"blockdev --flushbufs {img.dev}")
            kind, out = crashlib.fsck_classify(img.dev)
            got = crashlib.torn_long(img.dev, out.splitlines())
            log(f"{what}: {kind}, torn_long {got}: {out[:300]}")
            assert_eq((kind, got), ("torn", want), what)
            with open(img.dev, "r+b") as f:
                f.write(saved)
            sh(f"blockdev --flushbufs {img.dev}")

        def flip(b):
            return b ^ 0x01
        damage("a set within a sector, a name character changed",
               [(offs["s1"][2] + 2, flip)], False)
        damage("the long set, a name character changed in its second "
               "sector", [(second[-1] + 2, flip)], True)
        damage("the long set's second sector without its first",
               [(o, lambda b: b & 0x7F) for o in offs[long_name]
                if o not in second], True)
        kind, _ = crashlib.fsck_classify(img.dev)
        assert_eq(kind, "clean", "restored")


def _flush_between(lg, first, last):
    """Whether a FLUSH entry (or a write with a flush before it) lies in
    lg.entries (first, last]."""
    return any(e.is_flush for e in lg.entries[first + 1:last + 1])


@test(timeout=300, writes=False)
def root_growth_zeroed_before_linked():
    """The root directory has no DataLength: its size is its FAT chain.
    When it grows, the zeroes of the new cluster must be on the medium
    (a cache flush after they were written) before the FAT entry that
    links it can be, else a power cut with a write-back cache shows the
    cluster's old bytes as entries of the root.  Files are created in the
    root of a volume whose free clusters hold stale data, through
    dm-log-writes, until the root grows twice; in the log, a FLUSH must
    separate each new cluster's zeroes from its link."""
    from replaylog import read_log
    crashlib.modules()
    tmp = crashlib.Tmp()
    mnt = "/mnt/crash"
    os.makedirs(mnt, exist_ok=True)
    try:
        data_f = tmp.file("data", 16 << 20)
        with open(data_f, "r+b") as f:       # stale data everywhere
            for i in range(16):
                f.write(bytes([0xA5 ^ i]) * (1 << 20))
        data = tmp.loop(data_f)
        crashlib.mkfs(data, 4096)
        log_f = tmp.file("log", 256 << 20)
        logdev = tmp.loop(log_f)
        name = f"rootgrow{os.getpid()}"
        lw = tmp.dm(name, f"0 {crashlib.devsize(data)} log-writes "
                    f"{data} {logdev}")
        crashlib.use_driver("ours")
        crashlib.sys_mount(lw, mnt, ro=False)
        tmp.mounts.append(mnt)
        # 128 entries a 4 KiB cluster, 3 a file, and the root's own
        # bitmap, up-case and label entries: 100 files grow it twice
        for i in range(100):
            os.close(os.open(f"{mnt}/file-{i:03d}", os.O_CREAT | os.O_WRONLY))
        crashlib.sys_umount(mnt)
        tmp.mounts.remove(mnt)
        tmp.undm(name)
        tmp.unloop(logdev)
        heap, csize, root, count = _geometry(data)
        with open(data, "rb") as f:
            f.seek(80)
            fat_off = struct.unpack("<I", f.read(4))[0] * 512
            chain = [root]
            while len(chain) < 10:
                f.seek(fat_off + 4 * chain[-1])
                nxt = struct.unpack("<I", f.read(4))[0]
                if nxt == 0xFFFFFFFF:
                    break
                chain.append(nxt)
        assert_true(len(chain) >= 3, f"the root grew twice: {chain}")
        lg = read_log(log_f)
        checked = []
        for prev, clu in zip(chain, chain[1:]):
            cstart = heap + (clu - 2) * csize
            link = fat_off + 4 * prev
            zeroes, links = [], None
            with open(log_f, "rb") as f:
                for e in lg.entries:
                    if not e.changes_data:
                        continue
                    lo = e.sector * lg.sectorsize
                    hi = lo + e.nr_sectors * lg.sectorsize
                    if lo < cstart + csize and hi > cstart:
                        zeroes.append(e.index)  # (a part of) the zeroing
                    if lo <= link < hi:
                        f.seek(e.offset + link - lo)
                        if struct.unpack("<I", f.read(4))[0] == clu:
                            links = e.index
                            break
            # the last write to the cluster before it was linked
            zero = max(zeroes) if zeroes else None
            assert_true(zero is not None and links is not None,
                        f"cluster {clu}: zeroes at entry {zero}, link at "
                        f"{links}")
            assert_true(zero < links and _flush_between(lg, zero, links),
                        f"cluster {clu} of the root: its zeroes (log entry "
                        f"{zero}) and the FAT entry linking it (entry "
                        f"{links}) with no cache flush between")
            checked.append(f"{clu}: zeroes #{zero}, link #{links}")
        log("root clusters zeroed, flushed, then linked: " +
            "; ".join(checked))
    finally:
        for m in list(tmp.mounts):
            sh(f"umount {m}", check=False)
        tmp.close()


def _ours_tree(dev, mnt):
    """The tree exfat2 reads from dev, mounted read-only at mnt."""
    crashlib.use_driver("ours")
    crashlib.sys_mount(dev, mnt, ro=True)
    try:
        tree, errors = crashlib.walk(mnt)
    finally:
        crashlib.sys_umount(mnt)
    assert_eq(errors, [], "exfat2 reads the volume")
    return tree


@test(timeout=300, writes=False)
def intree_view_judge_fails_on_purpose():
    """The crash checker's in-tree comparison (Checker._cross) passes on
    a volume both drivers read alike and fails on one they do not: a
    name holding a lone surrogate, which the in-tree driver lists
    without it.  Names past a directory's DataLength (its chain goes on)
    are soft; one inside it that only the in-tree driver lists fails."""
    mnt = "/mnt/crash"
    os.makedirs(mnt, exist_ok=True)
    with Image(size_mb=16) as img:
        for odd in (False, True):
            with mount(img.dev) as m:
                with open(f"{m}/plain", "wb") as f:
                    f.write(b"same for both")
                if odd:
                    fd = os.open(os.fsencode(m) + b"/odd\xed\xb0\x80",
                                 os.O_CREAT | os.O_WRONLY)
                    os.close(fd)
            tree = _ours_tree(img.dev, mnt)
            chk = crashlib.Checker(None, img.dev, mnt, "self-test",
                                   driver="ours", cross_every=1)
            chk._cross("self-test", tree)
            found = [f["detail"] for f in chk.failures]
            log(f"lone surrogate {odd}: {found!a}")
            assert_eq(bool(found), odd, f"in-tree comparison ({found!a})")
    # A directory whose FAT chain goes on past its DataLength (a crash
    # between a new entry set in a grown directory's new cluster and the
    # parent's larger DataLength): the names there are only the in-tree
    # driver's, and soft; a name only it lists inside the size stays a
    # failure.
    with Image(size_mb=16, cluster=512) as img:
        with mount(img.dev) as m:
            os.mkdir(f"{m}/d")
            for i in range(12):         # 4 entries each, 4 per cluster
                open(f"{m}/d/{i:02d}" + "n" * 28, "wb").close()
        vol = rawfs.Volume(img.dev)
        dset, root = vol.lookup("/d")
        flags, first, _, size = dset.stream
        assert_eq(size, 3 * 512, "d's size")
        clusters = vol.dir_clusters(dset)
        for c, nxt in zip(clusters, clusters[1:] + [rawfs.EOC]):
            vol.set_fat(c, nxt)
        ents = [bytearray(e) for e in dset.entries]
        ents[1][1] &= ~2                # NoFatChain off: the FAT chain
        struct.pack_into("<Q", ents[1], 8, 2 * 512)
        struct.pack_into("<Q", ents[1], 24, 2 * 512)
        vol.write_set(root, dset.eidx, ents)
        vol.close()
        tree = _ours_tree(img.dev, mnt)
        assert_eq(len(tree), 9, f"exfat2's names ({sorted(tree)!a})")
        for drop in (None, "/d/00" + "n" * 28):
            if drop:
                del tree[drop]
            chk = crashlib.Checker(None, img.dev, mnt, "self-test",
                                   driver="ours", cross_every=1)
            chk._cross("self-test", tree)
            hard = [f["detail"] for f in chk.hard()]
            log(f"past DataLength, {drop!a} left out: soft {chk.soft}, "
                f"hard {hard!a}")
            assert_eq(chk.soft, 1, "names past DataLength are soft")
            assert_eq(bool(hard), bool(drop), f"names inside it ({hard!a})")
    # An entry set with a wrong checksum (torn by a crash): exfat2 hides
    # it, the in-tree driver lists it; soft.  The same name with its
    # checksum right but hidden from exfat2's tree fails.
    with Image(size_mb=16, cluster=512) as img:
        with mount(img.dev) as m:
            os.mkdir(f"{m}/d")
            for name in ("keep", "torn" + "t" * 40):
                write_file(f"{m}/d/{name}", 300, seed=len(name))
        full = _ours_tree(img.dev, mnt)
        vol = rawfs.Volume(img.dev)
        dset, _ = vol.lookup("/d")
        es = next(e for e in vol.sets(vol.dir_clusters(dset))
                  if e.name.startswith("torn"))
        first = bytearray(es.entries[0])
        first[2] ^= 0x5a
        vol.write(vol.entry_off(vol.dir_clusters(dset), es.eidx),
                  bytes(first))
        vol.close()
        tree = _ours_tree(img.dev, mnt)
        assert_eq(sorted(tree), ["/d", "/d/keep"], "exfat2 hides the set")
        for torn, t in ((True, tree), (False, None)):
            if not torn:        # checksum restored, name hidden
                first[2] ^= 0x5a
                with open(img.dev, "r+b") as f:
                    vol = rawfs.Volume(img.dev, write=False)
                    f.seek(vol.entry_off(vol.dir_clusters(dset), es.eidx))
                    vol.close()
                    f.write(bytes(first))
                t = dict(full)
                del t["/d/torn" + "t" * 40]
            chk = crashlib.Checker(None, img.dev, mnt, "self-test",
                                   driver="ours", cross_every=1)
            chk._cross("self-test", t)
            hard = [f["detail"] for f in chk.hard()]
            log(f"wrong checksum {torn}: soft {chk.soft}, hard {hard!a}")
            assert_eq((chk.soft, bool(hard)), (int(torn), not torn),
                      "a torn set's name (soft), a good one's (hard)")

# SPDX-License-Identifier: GPL-2.0
#
# Any number of images (what `make fuzz N=...` runs), from the repo root:
#
#   tools/vm/vm.sh --out /tmp/exfat2-fuzz --timeout $((N * 5 + 600)) -- \
#       python3 -B tests/guest/fuzz.py --count N -q
#
# (--start S: seeds S..S+N-1; --max-time SECONDS: start no image after
# that long.)  The report is /tmp/exfat2-fuzz/fuzz/summary.txt (and the
# end of console.log), one JSON line per image in results.jsonl, and the
# image and log of every problem seed as seed-N.img / seed-N.log; the exit
# status is 1 if an image had a problem, 125 on a kernel splat.
"""Hostile media: a fixed batch of corrupted images (tests/guest/corrupt.py,
one per seed) mounted, walked, read and written by exfat2
(tests/guest/fuzz.py).  Refusing a mount or an operation is fine; a hang,
a kernel splat, a refused mount without its one-line reason, anything
left mounted or attached, a volume exfat2 cannot mount again after its
own changes, or an unmodified control image failing an operation or the
strict checker fails the test (see fuzz.py for the whole list).

Reproduce a seed on the host: tests/guest/corrupt.py --seed N -o N.img
(the description printed is the one in the log); the image of every
problem seed is also kept in the run's output directory, under hostile/.
"""

import errno
import os

import fuzz
import lib
import rawfs
from lib import (OUT, Image, assert_eq, assert_true, expect_errno, fail,
                 mount, sh, test)
from tree import pattern, write_file

SEEDS = range(1, 261)       # about 0.9 s each under TCG, debug kernel too
TIMEOUT = 1200
PER_IMAGE_TIMEOUT = 60      # scaled like the test's (runner --timeout-scale)


def _run(seeds, timeout, strict=False):
    scale = lib.current.timeout / timeout if lib.current else 1
    s = fuzz.run_batch(seeds, timeout=PER_IMAGE_TIMEOUT * scale, log=print,
                       keep=os.path.join(OUT, "hostile"), strict=strict)
    print(s.text(), flush=True)
    if s.problems:
        fail(f"{len(s.problems)} problem(s) in {s.images} images; first: "
             f"seed {s.problems[0][0]}: {s.problems[0][1]}")


@test(timeout=TIMEOUT, writes=False)
def batch():
    """260 corrupted images: mount ro and walk, mount rw and change things
    while another process walks, mount ro again and walk (fuzz.py).  Runs
    on both kernels in make check; strict (as small_batch) on the packaged
    one: the strict checker is user space, so the debug kernel would only
    repeat its verdicts at twice the cost."""
    _run(SEEDS, TIMEOUT, strict=not os.path.exists(lib.KMEMLEAK))


@test(timeout=300, writes=False)
def small_batch():
    """40 more images (seeds 261-300): with the batch, 300 images under
    KASAN and kmemleak in the debug pass.  Strict: an image the strict
    checker finds clean before exfat2 changes it must be clean after
    (fuzz.run_batch(strict=True))."""
    _run(range(261, 301), 300, strict=True)


# Targeted chain-versus-bitmap cases: what the batch found making corrupt
# volumes worse (seeds 2006, 2010, 2195, 5684 of tests/guest/corrupt.py).
CLU = 4096


def _files(mnt, n=3, nclu=4):
    """n files of nclu clusters each, written whole: each is contiguous
    (NoFatChain) on a fresh volume."""
    for i in range(n):
        write_file(f"{mnt}/f{i}", nclu * CLU, seed=i)


def _crafted(img):
    """Three 4-cluster files written by exfat2; the volume opened raw."""
    with mount(img.dev) as mnt:
        _files(mnt)
    return rawfs.Volume(img.dev)


def _to_fat_chain(v, name):
    """Turn a NoFatChain file into the same clusters linked in the FAT;
    returns its clusters."""
    s, parent = v.lookup(name)
    flags, first, _, size = s.stream
    clus = v.chain(first, True, -(-size // v.clu))
    for a, b in zip(clus, clus[1:] + [rawfs.EOC]):
        v.set_fat(a, b)
    st = bytearray(s.entries[1])
    st[1] &= ~2
    v.write_set(parent, s.eidx, [s.entries[0], bytes(st)] + s.entries[2:])
    return clus


def _read(path):
    with open(path, "rb") as f:
        return f.read()


def _fill(mnt):
    """Write 256 KiB files until ENOSPC; returns how many were written."""
    n = 0
    try:
        while True:
            write_file(f"{mnt}/fill{n}", 256 << 10, seed=100 + n)
            n += 1
    except OSError as e:
        assert_eq(e.errno, errno.ENOSPC, "filling ends with ENOSPC")
    return n


def _fill_and_empty(mnt):
    """_fill(), then remove every file it made (the last one partial)."""
    n = _fill(mnt)
    for i in range(n + 1):
        if os.path.lexists(f"{mnt}/fill{i}"):
            os.unlink(f"{mnt}/fill{i}")


def _dmesg_has(text):
    return text in lib.dmesg_this_test()


@test(timeout=300, writes=False)
def used_clusters_marked_free_are_claimed():
    """A file whose clusters the bitmap says are free (contiguous, and FAT
    chained) reads whole; the clusters are marked in use again instead of
    being handed to the next file written, even when the volume is
    filled; afterwards fsck.exfat finds the volume clean."""
    with Image(size_mb=16, cluster=CLU, fsck=False) as img:
        v = _crafted(img)
        try:
            chained = _to_fat_chain(v, "f1")
            contig = v.chain(v.lookup("f0")[0].stream[1], True, 4)
            for c in (contig[1], contig[2], chained[0], chained[3]):
                v.set_in_use(c, False)
        finally:
            v.close()
        p = sh(f"fsck.exfat -n {img.dev}", check=False)
        assert_true(p.returncode != 0, "fsck sees the damage first")
        with mount(img.dev) as mnt:
            for i in range(3):
                assert_eq(_read(f"{mnt}/f{i}"), pattern(4 * CLU, i),
                          f"f{i} reads whole")
            n = _fill(mnt)
            for i in range(n):
                os.unlink(f"{mnt}/fill{i}")
        assert_true(_dmesg_has("marked free in the allocation bitmap; "
                               "now marked in use"), "the claim is reported")
        with mount(img.dev, opts="ro") as mnt:
            for i in range(3):
                assert_eq(_read(f"{mnt}/f{i}"), pattern(4 * CLU, i),
                          f"f{i} intact after the volume was filled")
        lib.fsck_clean(img.dev)


@test(timeout=300, writes=False)
def chains_into_system_clusters_refused():
    """A FAT chain that runs into the allocation bitmap, and a contiguous
    file starting on the up-case table: reading them is EUCLEAN; deleting
    them frees nothing (the clusters are leaked, with a message), so
    filling the volume afterwards cannot overwrite the bitmap or the
    up-case table; the in-tree driver still mounts and reads it."""
    with Image(size_mb=16, cluster=CLU, fsck=False) as img:
        v = _crafted(img)
        try:
            upcase = next(struct_first(e) for _, e in
                          v.entries(v.chain(v.root)) if e[0] == 0x82)
            bitmap = v.bitmap_clu
            chained = _to_fat_chain(v, "f1")
            v.set_fat(chained[1], bitmap)
            s, parent = v.lookup("f2")
            st = bytearray(s.entries[1])
            st[20:24] = upcase.to_bytes(4, "little")
            v.write_set(parent, s.eidx, [s.entries[0], bytes(st)] +
                        s.entries[2:])
            sys_before = v.read(v.clu_off(bitmap), CLU), \
                v.read(v.clu_off(upcase), CLU)
        finally:
            v.close()
        with mount(img.dev, opts="errors=continue") as mnt:
            expect_errno(errno.EUCLEAN, _read, f"{mnt}/f1")
            expect_errno(errno.EUCLEAN, os.stat, f"{mnt}/f2")
            os.unlink(f"{mnt}/f1")
            assert_eq(_read(f"{mnt}/f0"), pattern(4 * CLU, 0), "f0")
            _fill(mnt)
        assert_true(_dmesg_has("its chain holds a cluster of the "
                               "allocation bitmap"), "the chain is reported")
        v = rawfs.Volume(img.dev)
        try:
            assert_true(v.in_use(bitmap) and v.in_use(upcase),
                        "bitmap and up-case clusters still in use")
            # the bitmap changed (the fill), the up-case table must not
            assert_eq(v.read(v.clu_off(upcase), CLU), sys_before[1],
                      "up-case table untouched")
        finally:
            v.close()
        with mount(img.dev, driver="intree", opts="ro") as mnt:
            assert_eq(_read(f"{mnt}/f0"), pattern(4 * CLU, 0),
                      "in-tree reads f0")


def struct_first(e):
    return int.from_bytes(e[20:24], "little")


@test(timeout=300, writes=False)
def chain_looping_within_its_length_not_freed_twice():
    """A FAT chain that loops back within the file's length (c0 -> c1 ->
    c0): deleting the file frees nothing twice; the free count in statfs
    does not grow past what the volume has."""
    with Image(size_mb=16, cluster=CLU, fsck=False) as img:
        v = _crafted(img)
        try:
            chained = _to_fat_chain(v, "f1")
            v.set_fat(chained[1], chained[0])
        finally:
            v.close()
        with mount(img.dev, opts="errors=continue") as mnt:
            before = os.statvfs(mnt).f_bfree
            os.unlink(f"{mnt}/f1")
            os.sync()
            after = os.statvfs(mnt).f_bfree
            assert_eq(after, before, "free clusters after the unlink")
        assert_true(_dmesg_has("cluster chain uses a cluster twice"),
                    "the refused free is reported")


@test(timeout=300, writes=False)
def directory_clusters_past_the_end_marked_free_are_claimed():
    """The root's and a subdirectory's last cluster, past their
    end-of-directory entry (a listing never reads it), marked free in the
    bitmap: they are claimed when the directory is first read (at mount,
    at lookup), so filling the volume cannot turn them into file data that
    the directory would then list (corrupt.py seed 42).  Only directories
    read in the session are covered (see the README)."""
    with Image(size_mb=16, cluster=CLU, fsck=False) as img:
        with mount(img.dev) as mnt:
            os.mkdir(f"{mnt}/d")
            write_file(f"{mnt}/d/a", CLU, seed=1)
            write_file(f"{mnt}/r", CLU, seed=2)
        v = rawfs.Volume(img.dev)
        try:
            extra = v.free_clusters(2)      # zeroed, left marked free
            for c in extra:
                v.write(v.clu_off(c), bytes(v.clu))
                v.set_fat(c, rawfs.EOC)
            v.set_fat(v.chain(v.root)[-1], extra[0])
            s, parent = v.lookup("d")
            size = s.stream[3]
            dclus = v.dir_clusters(s)
            for a, b in zip(dclus, dclus[1:] + [extra[1]]):
                v.set_fat(a, b)
            st = bytearray(s.entries[1])
            st[1] &= ~2                     # FAT chained now
            st[8:16] = st[24:32] = (size + v.clu).to_bytes(8, "little")
            v.write_set(parent, s.eidx,
                        [s.entries[0], bytes(st)] + s.entries[2:])
        finally:
            v.close()
        p = sh(f"fsck.exfat -n {img.dev}", check=False)
        assert_true(p.returncode != 0, "fsck sees the damage first")
        with mount(img.dev) as mnt:
            assert_eq(sorted(os.listdir(f"{mnt}/d")), ["a"], "d lists")
            _fill_and_empty(mnt)
            assert_eq(sorted(os.listdir(mnt)), ["d", "r"], "root lists")
        v = rawfs.Volume(img.dev)
        try:
            for c in extra:
                assert_true(v.in_use(c), f"directory cluster {c} in use")
            # the root's may hold the fill files' entries; d's is unused
            assert_true(v.read(v.clu_off(extra[1]), v.clu) == bytes(v.clu),
                        f"d's cluster {extra[1]} still empty")
        finally:
            v.close()
        assert_true(_dmesg_has("marked free in the allocation bitmap; "
                               "now marked in use"), "the claim is reported")
        with mount(img.dev, opts="ro") as mnt:
            assert_eq(sorted(os.listdir(mnt)), ["d", "r"], "root after")
            assert_eq(sorted(os.listdir(f"{mnt}/d")), ["a"], "d after")
            assert_eq(_read(f"{mnt}/d/a"), pattern(CLU, 1), "d/a intact")
        lib.fsck_clean(img.dev)


@test(timeout=300, writes=False)
def vendor_allocation_on_the_bitmap_not_freed():
    """A Vendor Allocation entry whose cluster is the allocation bitmap's
    own (corrupt.py seed 134): deleting its file reports the corruption
    and leaves the bitmap's cluster in use, so the volume still mounts
    and nothing is ever allocated over the bitmap."""
    with Image(size_mb=16, cluster=CLU, fsck=False) as img:
        v = _crafted(img)
        try:
            s, parent = v.lookup("f2")      # the last set: room after it
            v.write_set(parent, s.eidx, s.entries + [
                rawfs.vendor_alloc_entry(bytes(range(16)), v.bitmap_clu,
                                         v.clu)])
        finally:
            v.close()
        with mount(img.dev, opts="errors=continue") as mnt:
            os.unlink(f"{mnt}/f2")
            _fill_and_empty(mnt)
        assert_true(_dmesg_has("not freed (cluster of the allocation "
                               "bitmap)"), "the refused free is reported")
        v = rawfs.Volume(img.dev)
        try:
            assert_true(v.in_use(v.bitmap_clu), "bitmap cluster in use")
        finally:
            v.close()
        with mount(img.dev, opts="ro") as mnt:
            for i in (0, 1):
                assert_eq(_read(f"{mnt}/f{i}"), pattern(4 * CLU, i),
                          f"f{i} intact")
        lib.fsck_clean(img.dev)

# SPDX-License-Identifier: GPL-2.0
"""Read path: volumes written by the in-tree driver (and made by mkfs.exfat)
read back identically with exfat2, checked against the in-tree driver's own
view of the same volume in the same boot."""

import errno
import mmap
import os
import time

from lib import (Image, TestFailure, assert_eq, assert_true,
                 dmesg_this_test, expect_errno, log, mount, sh, test)
from tree import (ATTR_HIDDEN, ATTR_SYSTEM, NAMES,
                  diff_manifests, interleave, manifest, pattern, set_attr,
                  write_file)

def compare_drivers(dev, opts="ro"):
    """Manifest of dev under the in-tree driver, then under ours."""
    with mount(dev, opts=opts, driver="intree") as mnt:
        want = manifest(mnt)
    with mount(dev, opts=opts, driver="ours") as mnt:
        got = manifest(mnt)
    diff_manifests(want, got, "in-tree", "exfat2")
    return got


def build_rich_tree(mnt, cluster):
    sizes = [0, 1, 511, 512, cluster - 1, cluster, cluster + 1,
             3 * cluster + 5, 200000]
    for i, n in enumerate(sizes):
        write_file(f"{mnt}/size-{n}", n, seed=i)
    os.mkdir(f"{mnt}/names")
    for i, name in enumerate(NAMES):
        write_file(f"{mnt}/names/{name}", 100 * i + 7, seed=100 + i)
    d = mnt
    for depth in range(6):
        d = f"{d}/level{depth}"
        os.mkdir(d)
        write_file(f"{d}/f", depth * 1000, seed=200 + depth)
    os.mkdir(f"{mnt}/frag")
    interleave([f"{mnt}/frag/a", f"{mnt}/frag/b", f"{mnt}/frag/c"],
               cluster, 24, seed=300)
    # ValidDataLength < DataLength: the in-tree driver does not zero what
    # an extending truncate adds.
    write_file(f"{mnt}/vdl", 1000, seed=400)
    os.truncate(f"{mnt}/vdl", 5 * cluster + 123)
    write_file(f"{mnt}/vdl-aligned", 2 * cluster, seed=401)
    os.truncate(f"{mnt}/vdl-aligned", 7 * cluster)
    # deleted sets in the middle of a directory
    os.mkdir(f"{mnt}/holes")
    for i in range(40):
        write_file(f"{mnt}/holes/file-{i:02d}-" + "n" * (i % 20), i * 10,
                   seed=500 + i)
    for i in range(0, 40, 3):
        os.unlink(f"{mnt}/holes/file-{i:02d}-" + "n" * (i % 20))
    os.mkdir(f"{mnt}/attrs")
    for name, attr in (("hidden", ATTR_HIDDEN), ("system", ATTR_SYSTEM),
                       ("both", ATTR_HIDDEN | ATTR_SYSTEM), ("none", 0)):
        write_file(f"{mnt}/attrs/{name}", 10)
        set_attr(f"{mnt}/attrs/{name}", attr)
    write_file(f"{mnt}/attrs/readonly", 10)
    os.chmod(f"{mnt}/attrs/readonly", 0o555)   # r and x bits must stay
    os.utime(f"{mnt}/attrs/none", ns=(1234567890_120000000,
                                      1300000000_990000000))


@test(timeout=600, writes=False)
def intree_tree_identical():
    """A rich tree written by the in-tree driver reads back identically."""
    for cluster in (4096, 512):
        with Image(size_mb=96, cluster=cluster) as img:
            with mount(img.dev, driver="intree") as mnt:
                build_rich_tree(mnt, cluster)
            got = compare_drivers(img.dev)
            assert_true(len(got) > 60, f"only {len(got)} entries")
            assert_eq(got["attrs/hidden"]["attr"] & 0x3f, ATTR_HIDDEN,
                      "hidden attribute")
            assert_eq(oct(int(got["attrs/readonly"]["mode"], 8) & 0o222),
                      "0o0", "read-only attribute clears write bits")
            with mount(img.dev, opts="ro") as mnt:
                check_vdl(mnt, cluster)
                check_case_lookup(mnt)
                check_io_paths(mnt, cluster)


def check_vdl(mnt, cluster):
    with open(f"{mnt}/vdl", "rb") as f:
        data = f.read()
    assert_eq(len(data), 5 * cluster + 123, "vdl file size")
    assert_eq(data[:1000], pattern(1000, 400), "data below ValidDataLength")
    assert_true(data[1000:] == bytes(len(data) - 1000),
                "bytes past ValidDataLength read as zeros")
    # SEEK_HOLE: the whole file is data, past ValidDataLength too (as
    # with the in-tree driver: exFAT files have no holes)
    sh("echo 3 > /proc/sys/vm/drop_caches")
    fd = os.open(f"{mnt}/vdl-aligned", os.O_RDONLY)
    try:
        assert_eq(os.lseek(fd, 0, os.SEEK_DATA), 0, "SEEK_DATA")
        assert_eq(os.lseek(fd, 0, os.SEEK_HOLE), os.fstat(fd).st_size,
                  "SEEK_HOLE at the end of the file")
    finally:
        os.close(fd)


def check_case_lookup(mnt):
    for name in NAMES:
        for variant in (name.upper(), name.lower(), name.swapcase()):
            if len(variant.encode("utf-16-le")) != len(name.encode("utf-16-le")):
                continue
            st = os.stat(f"{mnt}/names/{variant}")
            assert_true(st.st_size >= 7, f"case variant {variant!r}")
    expect_errno(errno.ENOENT, os.stat, f"{mnt}/names/no-such-file")
    expect_errno(errno.ENOENT, os.stat, f"{mnt}/holes/file-00-")


def check_io_paths(mnt, cluster):
    path = f"{mnt}/size-200000"
    want = pattern(200000, 8)
    # mmap
    with open(path, "rb") as f:
        with mmap.mmap(f.fileno(), 0, prot=mmap.PROT_READ) as m:
            assert_eq(m[:], want, "mmap read")
    # O_DIRECT, block aligned
    fd = os.open(path, os.O_RDONLY | os.O_DIRECT)
    try:
        buf = mmap.mmap(-1, 65536)
        n = os.preadv(fd, [buf], 4096)
        assert_eq(n, 65536, "direct read length")
        assert_eq(buf[:], want[4096:4096 + 65536], "direct read data")
    finally:
        os.close(fd)
    # splice, through sendfile into a pipe-backed copy
    sh(f"cat {path} | cmp - {path}")
    r, w = os.pipe()
    fd = os.open(path, os.O_RDONLY)
    try:
        n = os.splice(fd, w, 65536)
        assert_eq(os.read(r, n), want[:n], "splice read")
    finally:
        os.close(fd)
        os.close(r)
        os.close(w)
    # FIEMAP through filefrag: fragmented files have several extents
    out = sh(f"filefrag {mnt}/frag/a").stdout
    log(out.strip())
    assert_true(" extents found" in out or " extent found" in out, out)


@test(timeout=900, writes=False)
def cluster_and_sector_sizes():
    """mkfs.exfat volumes of every cluster size and both sector sizes."""
    cases = [(512, "512"), (512, "4K"), (512, "64K"), (512, "1M"),
             (512, "32M"), (4096, "4K"), (4096, "64K"), (4096, "1M")]
    for sector, cluster in cases:
        size = 1024 if cluster == "32M" else 64
        with Image(size_mb=size, sector=sector, cluster=cluster) as img:
            with mount(img.dev, driver="intree") as mnt:
                write_file(f"{mnt}/small", 3000, seed=1)
                write_file(f"{mnt}/big", 3 << 20, seed=2)
                os.mkdir(f"{mnt}/d")
                write_file(f"{mnt}/d/x", 70000, seed=3)
            got = compare_drivers(img.dev)
            assert_eq(len(got), 4, f"{sector}/{cluster}: entries")
            with mount(img.dev, opts="ro") as mnt:
                st = os.statvfs(mnt)
                blk = sh(f"stat -f -c %S {mnt}").stdout.strip()
            log(f"sector {sector} cluster {cluster}: bsize {blk} "
                f"blocks {st.f_blocks} free {st.f_bfree}")


@test(timeout=600, writes=False)
def sparse_4tib():
    """A 4 TiB volume mounts and reads."""
    with Image(size_mb=4 << 20) as img:
        with mount(img.dev, driver="intree") as mnt:
            write_file(f"{mnt}/f", 5000, seed=9)
        with mount(img.dev, opts="ro") as mnt:
            st = os.statvfs(mnt)
            assert_true(st.f_blocks * st.f_frsize > (4 << 40) - (1 << 36),
                        f"size {st.f_blocks * st.f_frsize}")
            with open(f"{mnt}/f", "rb") as f:
                assert_eq(f.read(), pattern(5000, 9), "file content")


def dmesg_since(marker):
    out = sh("dmesg").stdout
    i = out.rfind(marker)
    return out[i:] if i >= 0 else out


@test(timeout=300, writes=False)
def backup_boot_region():
    """A damaged main boot region falls back to the backup, read-only."""
    with Image(size_mb=64) as img:
        with mount(img.dev, driver="intree") as mnt:
            write_file(f"{mnt}/f", 12345, seed=5)
        with open(img.dev, "r+b") as f:
            f.seek(100)                 # VolumeSerialNumber: checksum breaks
            f.write(b"\xde\xad\xbe\xef")
        log("backup-boot-marker")
        with mount(img.dev, driver="ours") as mnt:
            with open(f"{mnt}/f", "rb") as f:
                assert_eq(f.read(), pattern(12345, 5), "file via backup")
            assert_true(" ro," in sh(f"grep ' {mnt} ' /proc/mounts").stdout,
                        "mounted read-only")
        msg = dmesg_since("backup-boot-marker")
        assert_true("backup boot region" in msg, msg)
        # both regions bad: refused, with the reason named
        with open(img.dev, "r+b") as f:
            f.seek(12 * 512 + 100)
            f.write(b"\xde\xad\xbe\xef")
        log("both-bad-marker")
        r = sh(f"mount -t exfat -o ro {img.dev} /mnt", check=False)
        assert_true(r.returncode != 0, "mount with two bad boot regions")
        msg = dmesg_since("both-bad-marker")
        assert_true("boot checksum" in msg, msg)


@test(timeout=120, writes=False)
def not_exfat_refused():
    """A volume that is not exFAT is refused with a one-line reason."""
    with Image(size_mb=16, mkfs=False) as img:
        sh(f"mkfs.ext2 -q {img.dev}")
        log("not-exfat-marker")
        from lib import use_driver
        use_driver("ours")
        r = sh(f"mount -t exfat {img.dev} /mnt", check=False)
        assert_true(r.returncode != 0, "mounting ext2 as exfat")
        msg = dmesg_since("not-exfat-marker")
        assert_true("not an exFAT volume" in msg, msg)


def find_name_entry(dev, name):
    """Byte offset of the File entry whose (<= 15 unit) name is name."""
    needle = b"\xc1\x00" + name.encode("utf-16-le")
    with open(dev, "rb") as f:
        data = f.read()
    off = data.find(needle)
    if off < 0 or off % 32:
        raise TestFailure(f"name entry for {name!r} not found")
    assert_eq(data[off - 64], 0x85, "File entry two slots before the name")
    return off - 64


@test(timeout=300, writes=False)
def bad_set_checksum():
    """A set with a bad SetChecksum gives EUCLEAN; its siblings stay fine."""
    with Image(size_mb=32) as img:
        with mount(img.dev, driver="intree") as mnt:
            os.mkdir(f"{mnt}/d")
            for n in ("alpha", "bravo-broken", "charlie"):
                write_file(f"{mnt}/d/{n}", 100, seed=len(n))
        off = find_name_entry(img.dev, "bravo-broken")
        with open(img.dev, "r+b") as f:
            f.seek(off + 2)
            csum = f.read(2)
            f.seek(off + 2)
            f.write(bytes([csum[0] ^ 0xff, csum[1]]))
        with mount(img.dev, opts="ro") as mnt:
            assert_eq(sorted(os.listdir(f"{mnt}/d")), ["alpha", "charlie"],
                      "listing skips the bad set")
            expect_errno(errno.EUCLEAN, os.stat, f"{mnt}/d/bravo-broken")
            with open(f"{mnt}/d/charlie", "rb") as f:
                assert_eq(f.read(), pattern(100, 7), "sibling content")
        assert_true("SetChecksum" in dmesg_this_test(),
                    "the kernel log names the failed check")


def _ascii_name_hash(name):
    """§7.6.4 NameHash of an ASCII name (its up-case is str.upper())."""
    h = 0
    for b in name.upper().encode("utf-16-le"):
        h = (((h << 15) | (h >> 1)) + b) & 0xFFFF
    return h


def _ascii_name_xhash(name):
    """exfat2's second hash of a name in its directory index
    (exfat_name_xhash() in format.c), for an ASCII name."""
    h = 0
    for c in name.upper():
        h = ((h ^ ord(c)) * 0x61C88647) & 0xFFFFFFFF
    return h >> 16


# Two names with one NameHash and one second hash: exfat2's index gives
# both as candidates for either (found by trying c%x-%04d names).
_SAME_KEY = ("c18616-8116", "c1dca1-8545")


def _same_name_hash(name, n):
    """n more names of at most 15 units with the NameHash of name."""
    want, out = _ascii_name_hash(name), []
    for i in range(1 << 22):
        cand = f"h{i:x}-{i % 97:02d}"
        if _ascii_name_hash(cand) == want:
            out.append(cand)
            if len(out) == n:
                return out
    raise TestFailure("no NameHash collision found")


@test(timeout=300, writes=False)
def bad_set_checksum_hash_collision():
    """Sets with a bad SetChecksum whose NameHash (and whose second hash,
    for the first) equal those of the name looked up, written before it:
    the directory index names the first as a candidate, and a lookup must
    pass over it (another name) without reporting it, as must a negative
    lookup of a name with the same NameHash; only looking a damaged set
    up gives EUCLEAN and the report."""
    bad0, good = _SAME_KEY
    for a, b in ((_ascii_name_hash, "NameHash"),
                 (_ascii_name_xhash, "second hash")):
        assert_eq(a(bad0), a(good), f"{b} of {_SAME_KEY}")
    bad1, absent = _same_name_hash(good, 2)
    bad = [bad0, bad1]
    # the index gives candidates in some order: in one of the two
    # directories the damaged set comes first
    orders = {"d1": [bad0, good, bad1], "d2": [good, bad1, bad0]}
    with Image(size_mb=32) as img:
        with mount(img.dev, driver="intree") as mnt:
            for d, names in orders.items():
                os.mkdir(f"{mnt}/{d}")
                for n in names:
                    write_file(f"{mnt}/{d}/{n}", 100 + len(n),
                               seed=names.index(n))
        with open(img.dev, "r+b") as f:
            data = f.read()
            for n in bad:
                needle = b"\xc1\x00" + n.encode("utf-16-le")
                offs, i = [], data.find(needle)
                while i >= 0:
                    if i % 32 == 0:
                        offs.append(i)
                    i = data.find(needle, i + 1)
                assert_eq(len(offs), 2, f"name entries of {n}")
                for off in offs:
                    f.seek(off - 64 + 2)
                    csum = f.read(2)
                    f.seek(off - 64 + 2)
                    f.write(bytes([csum[0] ^ 0x5a, csum[1]]))
        with mount(img.dev, opts="ro") as mnt:
            for d, names in orders.items():
                with open(f"{mnt}/{d}/{good}", "rb") as f:
                    assert_eq(f.read(), pattern(100 + len(good),
                                                names.index(good)),
                              f"{d}: the good set's file")
                os.stat(f"{mnt}/{d}/{good.upper()}")
                expect_errno(errno.ENOENT, os.stat, f"{mnt}/{d}/{absent}")
            assert_true("SetChecksum" not in dmesg_this_test(),
                        "a set of another name with the same hashes "
                        "was reported while looking a name up")
            expect_errno(errno.EUCLEAN, os.stat, f"{mnt}/d1/{bad0}")
            assert_true("SetChecksum" in dmesg_this_test(),
                        "the set looked up is reported")
            for d in orders:
                assert_eq(os.listdir(f"{mnt}/{d}"), [good], f"{d} lists")


@test(timeout=900, writes=False)
def big_directory():
    """A directory with 20,000 entries, listed and looked up."""
    n = int(os.environ.get("BIGDIR_N", "20000"))
    with Image(size_mb=64) as img:
        t0 = time.monotonic()
        with mount(img.dev, driver="intree") as mnt:
            os.mkdir(f"{mnt}/big")
            for i in range(n):
                os.close(os.open(f"{mnt}/big/entry-{i:05d}",
                                 os.O_CREAT | os.O_WRONLY, 0o644))
        t1 = time.monotonic()
        with mount(img.dev, opts="ro") as mnt:
            names = os.listdir(f"{mnt}/big")
            log(f"created {n} in {t1 - t0:.1f}s, listed in "
                f"{time.monotonic() - t1:.1f}s")
            assert_eq(len(names), n, "entries listed")
            assert_eq(len(set(names)), n, "distinct names")
            for i in (0, 1, n // 2, n - 1):
                os.stat(f"{mnt}/big/ENTRY-{i:05d}")


@test(timeout=300, writes=False)
def mount_options_as_intree():
    """Every mount option is accepted and shown as the in-tree driver does."""
    sh("modprobe nls_iso8859_1 || true")
    option_sets = [
        "ro",
        "ro,uid=1000,gid=1000,umask=077",
        "ro,dmask=022,fmask=133,allow_utime=002",
        "ro,iocharset=iso8859-1",
        "ro,errors=continue,keep_last_dots,time_offset=-120",
        "ro,sys_tz,discard,zero_size_dir",
        "ro,utf8,debug,namecase=1,codepage=437",
    ]
    with Image(size_mb=32) as img:
        with mount(img.dev, driver="intree") as mnt:
            os.mkdir(f"{mnt}/d")
            write_file(f"{mnt}/d/f", 10)
        for opts in option_sets:
            seen = {}
            for drv in ("intree", "ours"):
                with mount(img.dev, opts=opts, driver=drv) as mnt:
                    line = sh(f"grep ' {mnt} ' /proc/mounts").stdout.split()
                    m = manifest(mnt, content=False, attrs=False)
                    seen[drv] = (line[3], m)
            assert_eq(seen["ours"][0], seen["intree"][0], f"options {opts}")
            diff_manifests(seen["intree"][1], seen["ours"][1],
                           f"in-tree ({opts})", "exfat2")


def _reads(dev):
    with open(f"/sys/block/{os.path.basename(dev)}/stat") as f:
        return int(f.read().split()[0])


@test(timeout=600, writes=False)
def directory_read_ahead():
    """A directory read cold from disk comes in windows of up to 128 KiB
    (its contiguous run, or its cluster when FAT-chained), not a sector
    at a time: listing 1,500 files made by the in-tree driver (a 144 KiB
    directory) takes a handful of read requests, counted at the device
    (it took hundreds when only a sector that starts a cluster brought
    its cluster along)."""
    with Image(size_mb=64, cluster=4096) as img:
        with mount(img.dev, driver="intree") as mnt:
            os.mkdir(f"{mnt}/d")
            for i in range(1500):
                open(f"{mnt}/d/file-{i:05d}.txt", "wb").close()
        with mount(img.dev, opts="ro") as mnt:
            sh("echo 3 > /proc/sys/vm/drop_caches")
            before = _reads(img.dev)
            names = os.listdir(f"{mnt}/d")
            n = _reads(img.dev) - before
            log(f"1,500 names listed cold: {n} read requests")
            assert_eq(len(names), 1500, "names listed")
            assert_true(n <= 30, f"{n} read requests for a 144 KiB "
                        "directory")

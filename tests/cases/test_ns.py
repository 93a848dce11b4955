# SPDX-License-Identifier: GPL-2.0
"""Namespace operations with exfat2, checked by fsck.exfat and by the
in-tree driver reading the result."""

import errno
import os
import random
import struct

from lib import (Image, assert_eq, assert_true, dmesg_this_test,
                 expect_errno, mount, note, sh, test)
from tree import NAMES, diff_manifests, manifest, pattern, write_file


def strip_atime(m):
    for e in m.values():
        e.pop("atime", None)
    return m


@test(timeout=600, writes=True)
def build_tree_read_by_intree():
    """A tree made by exfat2 (growing directories) reads the same in-tree."""
    for cluster in (512, 4096):
        with Image(size_mb=64, cluster=cluster) as img:
            with mount(img.dev) as mnt:
                os.mkdir(f"{mnt}/d")
                for i in range(150):          # several directory clusters
                    write_file(f"{mnt}/d/file-{i:03d}-" + "x" * (i % 40),
                               i * 37, seed=i)
                os.makedirs(f"{mnt}/a/b/c/d")
                write_file(f"{mnt}/a/b/c/d/deep", 3 * cluster + 1, seed=7)
                os.mkdir(f"{mnt}/names")
                for i, name in enumerate(NAMES):
                    write_file(f"{mnt}/names/{name}", i * 11, seed=i)
                # deletes and renames leave holes and move sets
                for i in range(0, 150, 4):
                    os.unlink(f"{mnt}/d/file-{i:03d}-" + "x" * (i % 40))
                os.rename(f"{mnt}/d/file-001-x", f"{mnt}/a/moved")
                os.rename(f"{mnt}/d/file-002-xx",
                          f"{mnt}/d/a-much-longer-name-than-before-" + "y" * 30)
                os.rename(f"{mnt}/a/b/c", f"{mnt}/names/c-moved")
                os.mkdir(f"{mnt}/empty")
                os.rmdir(f"{mnt}/empty")
                ours = strip_atime(manifest(mnt, attrs=False))
                assert_eq(os.stat(f"{mnt}/a").st_nlink, 3, "nlink of a")
            with mount(img.dev, driver="intree", opts="ro") as mnt:
                theirs = strip_atime(manifest(mnt, attrs=False))
            diff_manifests(ours, theirs, "exfat2", "in-tree")


@test(timeout=300, writes=True)
def errors_and_replace():
    """ENOTEMPTY, EEXIST, EINVAL for bad names, rename over files/dirs."""
    with Image(size_mb=32) as img:
        with mount(img.dev) as mnt:
            os.mkdir(f"{mnt}/full")
            write_file(f"{mnt}/full/f", 10)
            expect_errno(errno.ENOTEMPTY, os.rmdir, f"{mnt}/full")
            expect_errno(errno.EEXIST, os.mkdir, f"{mnt}/FULL")
            for bad in ("a:b", "q?", "st*r", 'qu"ote', "l<t", "g>t", "p|pe",
                        "b\\s"):
                expect_errno(errno.EINVAL, os.open, f"{mnt}/{bad}",
                             os.O_CREAT | os.O_WRONLY)
            expect_errno(errno.ENAMETOOLONG, os.open, f"{mnt}/" + "n" * 256,
                         os.O_CREAT | os.O_WRONLY)
            write_file(f"{mnt}/src", 1000, seed=1)
            write_file(f"{mnt}/dst", 5000, seed=2)
            free = os.statvfs(mnt).f_bfree
            os.rename(f"{mnt}/src", f"{mnt}/dst")
            with open(f"{mnt}/dst", "rb") as f:
                assert_eq(f.read(), pattern(1000, 1), "replaced content")
            assert_true(os.statvfs(mnt).f_bfree > free,
                        "the replaced file's clusters were freed")
            os.mkdir(f"{mnt}/edir")
            os.mkdir(f"{mnt}/sdir")
            write_file(f"{mnt}/sdir/x", 10)
            os.rename(f"{mnt}/sdir", f"{mnt}/edir")
            assert_eq(os.listdir(f"{mnt}/edir"), ["x"], "moved over empty dir")
            expect_errno(errno.ENOTEMPTY, os.rename, f"{mnt}/edir",
                         f"{mnt}/full")
            # an open unlinked file keeps its data until closed
            fd = os.open(f"{mnt}/dst", os.O_RDONLY)
            os.unlink(f"{mnt}/dst")
            assert_eq(os.pread(fd, 10, 0), pattern(10, 1), "unlinked read")
            os.close(fd)
            assert_true("dst" not in os.listdir(mnt), "unlinked name gone")


def renameat2(old, new, flags):
    import ctypes
    libc = ctypes.CDLL(None, use_errno=True)
    AT_FDCWD = -100
    r = libc.syscall(316, AT_FDCWD, old.encode(), AT_FDCWD, new.encode(),
                     flags)
    if r != 0:
        e = ctypes.get_errno()
        raise OSError(e, os.strerror(e))


@test(timeout=300, writes=True)
def rename_flags_and_attrs():
    """RENAME_NOREPLACE, RENAME_EXCHANGE, attribute ioctls, fallocate."""
    import fcntl
    import struct
    with Image(size_mb=32) as img:
        with mount(img.dev) as mnt:
            write_file(f"{mnt}/a", 100, seed=1)
            os.mkdir(f"{mnt}/d")
            write_file(f"{mnt}/d/b-with-a-much-longer-name-" + "z" * 40, 200,
                       seed=2)
            b = f"{mnt}/d/b-with-a-much-longer-name-" + "z" * 40
            expect_errno(errno.EEXIST, renameat2, f"{mnt}/a", b, 1)
            renameat2(f"{mnt}/a", b, 2)            # RENAME_EXCHANGE
            with open(b, "rb") as f:
                assert_eq(f.read(), pattern(100, 1), "exchanged b")
            with open(f"{mnt}/a", "rb") as f:
                assert_eq(f.read(), pattern(200, 2), "exchanged a")
            renameat2(f"{mnt}/d", f"{mnt}/a", 2)   # a dir with a file
            assert_true(os.path.isdir(f"{mnt}/a"), "a is now the dir")
            fd = os.open(f"{mnt}/d", os.O_RDWR)
            try:
                fcntl.ioctl(fd, 0x40047211, struct.pack("<I", 0x02 | 0x20))
                got = struct.unpack("<I", fcntl.ioctl(fd, 0x80047210,
                                                      b"\0" * 4))[0]
                assert_eq(got & 0x37, 0x22, "hidden|archive set")
                os.posix_fallocate(fd, 0, 1 << 20)
            finally:
                os.close(fd)
            assert_eq(os.stat(f"{mnt}/d").st_size, 1 << 20, "fallocated")
            with open(f"{mnt}/d", "rb") as f:
                assert_eq(f.read(300), pattern(200, 2) + bytes(100),
                          "fallocate keeps data and reads zeros")
            ours = strip_atime(manifest(mnt))
        with mount(img.dev, driver="intree", opts="ro") as mnt:
            theirs = strip_atime(manifest(mnt))
        diff_manifests(ours, theirs, "exfat2", "in-tree")


def _drop_dentries():
    """Forget unused dentries and inodes (and, through the shrinkers,
    directory indexes whose directory nobody holds locked)."""
    with open("/proc/sys/vm/drop_caches", "w") as f:
        f.write("2\n")


@test(timeout=300, writes=True)
def dir_index_hit_checked_against_disk():
    """The in-memory directory index is never trusted over the disk: a
    set renamed behind the driver's back (in the loop device's backing
    file, its cached sectors dropped) is not found by its old name and is
    found by its new one; the index is dropped with a message, and the
    next create rebuilds it."""
    import rawfs
    from corrupt import name_hash, utf16_units
    with Image(size_mb=32) as img:
        with mount(img.dev) as mnt:
            d = f"{mnt}/d"
            os.mkdir(d)
            for i in range(60):
                write_file(f"{d}/file-{i:03d}", 100 + i, seed=i)
            os.sync()
            fd = os.open(d, os.O_RDONLY)   # the directory and its index stay
            try:
                _drop_dentries()
                os.stat(f"{d}/file-000")   # through the index
                v = rawfs.Volume(img.path)
                s, parent = v.lookup("d/file-017")
                units = utf16_units("file-q17")
                ents = [bytearray(e) for e in s.entries]
                ents[1][4:6] = struct.pack("<H", name_hash(units,
                                                           v.upcase()))
                ents[2][2:18] = struct.pack("<8H", *units)
                v.write_set(parent, s.eidx, [bytes(e) for e in ents])
                v.close()
                sh(f"blockdev --flushbufs {img.dev}")
                expect_errno(errno.ENOENT, os.stat, f"{d}/file-017")
                assert_eq(os.stat(f"{d}/file-q17").st_size, 117,
                          "size of the renamed file")
                assert_true("index out of date" in dmesg_this_test(),
                            "no message about the index")
                write_file(f"{d}/new", 10, seed=99)   # rebuilds it
                _drop_dentries()
                assert_eq(os.stat(f"{d}/file-q17").st_size, 117,
                          "size of the renamed file, rebuilt index")
                expect_errno(errno.ENOENT, os.stat, f"{d}/file-017")
                assert_eq(len(os.listdir(d)), 61, "entries")
            finally:
                os.close(fd)


@test(timeout=600, writes=True)
def dir_index_shrinker_races_namespace():
    """The directory-index shrinker running all the time (drop_caches in a
    loop) while four processes create, unlink and rename in their own
    directories and a fifth lists them (so the shrinker meets directories
    locked both ways and skips them): every directory matches its model,
    as exfat2 lists it now, after a remount and as the in-tree driver
    lists it."""
    import threading
    nwork, nops = 4, 1200
    with Image(size_mb=64, cluster=4096) as img:
        models = [{} for _ in range(nwork)]
        errors = []
        with mount(img.dev) as mnt:
            dirs = [f"{mnt}/d{j}" for j in range(nwork)]
            for d in dirs:
                os.mkdir(d)
            done = threading.Event()

            def work(j):
                rnd, d, model = random.Random(70 + j), dirs[j], models[j]
                try:
                    for k in range(nops):
                        i = rnd.randrange(400)
                        nm = f"f{i:03d}-" + "x" * (i % 60)
                        op = rnd.random()
                        if op < 0.5 and nm not in model:
                            write_file(f"{d}/{nm}", i, seed=i)
                            model[nm] = i
                        elif op < 0.75 and model:
                            victim = rnd.choice(sorted(model))
                            os.unlink(f"{d}/{victim}")
                            del model[victim]
                        elif model and nm not in model:
                            old = rnd.choice(sorted(model))
                            os.rename(f"{d}/{old}", f"{d}/{nm}")
                            model[nm] = model.pop(old)
                        elif nm in model:
                            assert_eq(os.stat(f"{d}/{nm.upper()}").st_size,
                                      model[nm], f"size of {d}/{nm}")
                except Exception as e:          # reported by the main thread
                    errors.append(f"worker {j}: {e!r}")

            def pressure():
                n = 0
                while not done.is_set():
                    _drop_dentries()
                    n += 1
                    if n % 4 == 0:
                        for d in dirs:
                            os.listdir(d)
                counts.append(n)

            counts = []
            ths = [threading.Thread(target=work, args=(j,))
                   for j in range(nwork)]
            bg = threading.Thread(target=pressure)
            bg.start()
            for t in ths:
                t.start()
            for t in ths:
                t.join()
            done.set()
            bg.join()
            assert_eq(errors, [], "errors in the workers")
            assert_true(counts and counts[0] >= 10,
                        f"the shrinker ran only {counts} times")
            note(f"{counts[0]} drop_caches rounds during "
                 f"{nwork * nops} operations")
            for d, model in zip(dirs, models):
                assert_eq(sorted(os.listdir(d)), sorted(model),
                          f"exfat2's listing of {d} vs the model")
        with mount(img.dev) as mnt:
            for j, model in enumerate(models):
                d = f"{mnt}/d{j}"
                assert_eq(sorted(os.listdir(d)), sorted(model),
                          f"{d} after a remount vs the model")
                for nm, size in model.items():
                    assert_eq(os.stat(f"{d}/{nm}").st_size, size,
                              f"size of {d}/{nm}")
        with mount(img.dev, driver="intree", opts="ro") as mnt:
            for j, model in enumerate(models):
                assert_eq(sorted(os.listdir(f"{mnt}/d{j}")), sorted(model),
                          f"in-tree listing of d{j} vs the model")


@test(timeout=900, writes=True)
def big_directory_through_index():
    """A directory of thousands of names, changed with holes, case-only
    lookups, long and short names replacing each other and the indexes
    dropped by the shrinker in between, matches a model of it, as exfat2
    and the in-tree driver list it."""
    rnd = random.Random(21)
    with Image(size_mb=64, cluster=4096) as img:
        model = {}
        with mount(img.dev) as mnt:
            d = f"{mnt}/big"
            os.mkdir(d)

            def name(i, long):
                return f"n{i:05d}-" + ("L" * (100 + i % 90) if long else "s")

            for i in range(3000):
                nm = name(i, i % 7 == 0)
                write_file(f"{d}/{nm}", i % 50, seed=i)
                model[nm] = i % 50
            for step in range(2500):
                op = rnd.random()
                i = rnd.randrange(3300)
                nm = name(i, rnd.random() < 0.2)
                if op < 0.3 and model:
                    victim = rnd.choice(sorted(model))
                    os.unlink(f"{d}/{victim}")
                    del model[victim]
                elif op < 0.6:
                    if nm in model:
                        expect_errno(errno.EEXIST, os.open, f"{d}/{nm}",
                                     os.O_CREAT | os.O_EXCL | os.O_WRONLY)
                    else:
                        write_file(f"{d}/{nm}", i % 50, seed=i)
                        model[nm] = i % 50
                elif op < 0.8 and model:
                    old = rnd.choice(sorted(model))
                    if nm not in model:
                        os.rename(f"{d}/{old}", f"{d}/{nm}")
                        model[nm] = model.pop(old)
                else:
                    # a lookup in another case: found iff in the model
                    up = nm.upper()
                    if nm in model:
                        assert_eq(os.stat(f"{d}/{up}").st_size, model[nm],
                                  f"size of {up}")
                    else:
                        expect_errno(errno.ENOENT, os.stat, f"{d}/{up}")
                if step % 500 == 499:
                    _drop_dentries()
            ours = sorted(os.listdir(d))
            assert_eq(ours, sorted(model), "exfat2's listing vs the model")
            for nm in rnd.sample(sorted(model), 200):
                assert_eq(os.stat(f"{d}/{nm}").st_size, model[nm],
                          f"size of {nm}")
        with mount(img.dev, driver="intree", opts="ro") as mnt:
            theirs = sorted(os.listdir(f"{mnt}/big"))
        assert_eq(theirs, sorted(model), "in-tree listing vs the model")

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



import rawfs
from lib import (Image, TestFailure, assert_eq, fsck_clean, log, mount, sh,
                 test)


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

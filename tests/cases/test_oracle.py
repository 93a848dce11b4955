# SPDX-License-Identifier: GPL-2.0
"""The judges of the suite, proving that they can fail.

xcheck.py, the strict volume checker that lib.fsck_clean() runs after
every writing test (beside fsck.exfat -n), must accept every layout the
specification allows (the crafted foreign layouts of foreign.py: sets
across sectors and clusters, no end-of-directory entry, benign entries)
and reject each of them with one rule broken (xcheck_mut.py), with the
message of that rule.
"""

import os
import re
import shutil
import tempfile

import foreign
import rawfs
import xcheck
import xcheck_mut
from lib import Image, TestFailure, log, mount, test


@test(timeout=300, writes=False)
def xcheck_fails_on_purpose():
    """Two layouts of foreign.py are clean for xcheck.py; each mutation of
    xcheck_mut.py on them is reported with its rule's message."""
    tmp = tempfile.mkdtemp(prefix="xcheck.")
    caught = 0
    try:
        # two geometries (the mutations do not depend on it): 512 B
        # clusters, where most sets cross sectors and clusters, and 4 KiB
        # sectors; about 25 s each under TCG
        for layout in ("s512-c512", "s4k-c4k"):
            data, _ = foreign.build(layout, 5)
            base = os.path.join(tmp, "base.img")
            with open(base, "wb") as f:
                f.write(data)
            problems = xcheck.check(base)
            if problems:
                raise TestFailure(f"{layout}: a valid layout rejected:\n" +
                                  "\n".join(problems[:10]))
            for name, fn in xcheck_mut.MUTATIONS:
                img = os.path.join(tmp, "t.img")
                shutil.copy(base, img)
                v = rawfs.Volume(img)
                try:
                    want = fn(v)
                finally:
                    v.close()
                if want is None:
                    raise TestFailure(f"{layout}: {name} found nothing to "
                                      "break")
                problems = xcheck.check(img)
                if not any(re.search(want, p) for p in problems):
                    raise TestFailure(f"{layout}: {name} not caught (want "
                                      f"/{want}/), got: {problems[:5]}")
                caught += 1
    finally:
        shutil.rmtree(tmp)
    log(f"{caught} broken images rejected, 2 valid layouts accepted")


@test(timeout=120)
def stale_clusters_read_as_zero_only_through_the_driver():
    """Free clusters of a fresh Image hold stale data (lib.STALE_MAX_MB),
    so a "reads as zero" check can fail: a file grown by ftruncate over
    them reads as zeros through exfat2 and the in-tree driver, while its
    clusters on the disk still hold the stale bytes (what a driver that
    ignored ValidDataLength would show)."""
    with Image(size_mb=64, cluster="4K") as img:
        with mount(img.dev) as mnt:
            with open(f"{mnt}/f", "wb") as f:
                f.write(b"head")
                f.truncate(3 * 4096)
        for drv in ("ours", "intree"):
            with mount(img.dev, driver=drv, opts="ro") as mnt:
                with open(f"{mnt}/f", "rb") as f:
                    data = f.read()
                if data != b"head" + bytes(3 * 4096 - 4):
                    raise TestFailure(f"{drv}: f does not read as zeros "
                                      "past its 4 bytes")
        v = rawfs.Volume(img.dev)
        try:
            s, _ = v.lookup("f")
            clusters = v.dir_clusters(s)
            raw = b"".join(v.read(v.clu_off(c), v.clu) for c in clusters[1:])
        finally:
            v.close()
        if not any(raw):
            raise TestFailure("f's clusters past the first are zero on the "
                              "disk: the image holds no stale data")
        log(f"f's clusters {clusters[1:]} hold {sum(map(bool, raw))} "
            "non-zero stale bytes on the disk; both drivers read zeros")


def _poke(path):
    fd = os.open(path, os.O_WRONLY)
    try:
        os.pwrite(fd, b"!", 0)
    finally:
        os.close(fd)


@test(timeout=300)
def tree_model_fails_on_purpose():
    """The cross-driver write tests compare the in-tree driver's view of a
    volume with wtree.model_tree(), the same operations done on tmpfs.
    That model matches a volume exfat2 wrote, and catches a file one byte
    longer, a byte changed and a file renamed behind its back."""
    from wtree import compare, manifest, model_tree, model_view, write_tree
    model = model_tree(4096, modify=False)
    with Image(size_mb=64, cluster="4K") as img:
        with mount(img.dev) as mnt:
            write_tree(mnt, 4096)
        damages = [
            ("appended", lambda m: open(f"{m}/size-512", "ab").write(b"x")),
            ("changed", lambda m: _poke(f"{m}/level0/f")),
            ("renamed", lambda m: os.rename(f"{m}/many/entry-03-mmm",
                                            f"{m}/many/entry-03-mmn")),
            (None, None)]
        for what, damage in reversed(damages):
            with mount(img.dev, driver="intree") as mnt:
                if damage:
                    damage(mnt)
                got = model_view(manifest(mnt, attrs=False))
            try:
                compare(model, got, "model", "in-tree",
                        ("type", "size", "sha256"))
            except TestFailure:
                if what is None:
                    raise
                model = model_view(got)     # the next damage alone
                log(f"{what}: caught")
                continue
            if what is not None:
                raise TestFailure(f"a file {what} behind the model's back "
                                  "went unnoticed")

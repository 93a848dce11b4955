#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Cut the source trees the benchmark unpacks out of Debian's linux-source.

Usage: bench/mksrc.py SOURCE.tar.xz OUTDIR

Writes OUTDIR/linux-fs1k.tar (fs/ of nine file systems: about 1,040 files,
20 MiB) and OUTDIR/linux-small.tar (fs/exfat, fs/fat, fs/ext4, fs/jbd2: 88
files, 2 MiB), uncompressed so the guest only reads them, each with a .md5
manifest (md5sum -c format, paths relative to the tree's root).  Entries
exFAT cannot hold are left out: symbolic links, names that differ from an
earlier one only in case and names with characters exFAT forbids.
"""

import hashlib
import io
import os
import sys
import tarfile

SETS = {
    "fs1k": ("fs/xfs/", "fs/bcachefs/", "fs/smb/", "fs/btrfs/", "fs/nfs/",
             "fs/ext4/", "fs/exfat/", "fs/fat/", "fs/jbd2/"),
    "small": ("fs/exfat/", "fs/fat/", "fs/ext4/", "fs/jbd2/"),
}
BAD = set('"*/:<>?\\|') | {chr(c) for c in range(32)}


def exfat_ok(path):
    return all(not (set(p) & BAD) and not p.endswith((".", " "))
               for p in path.rstrip("/").split("/"))


def main():
    src, outdir = sys.argv[1], sys.argv[2]
    os.makedirs(outdir, exist_ok=True)
    outs, seen, sums, counts = {}, {}, {}, {}
    for name in SETS:
        outs[name] = tarfile.open(os.path.join(outdir, f"linux-{name}.tar.tmp"),
                                  "w", format=tarfile.GNU_FORMAT)
        seen[name], sums[name], counts[name] = set(), [], [0, 0]
    with tarfile.open(src, "r:xz") as tin:
        for m in tin:
            parts = m.name.split("/", 1)
            if len(parts) < 2 or not parts[1]:
                continue
            path = parts[1].rstrip("/")
            if not (m.isfile() or m.isdir()) or not exfat_ok(path):
                continue
            data = tin.extractfile(m).read() if m.isfile() else None
            for name, prefixes in SETS.items():
                key = path.lower()
                if not (path + "/").startswith(prefixes) and not any(
                        p.startswith(path + "/") for p in prefixes):
                    continue
                if key in seen[name]:
                    continue
                seen[name].add(key)
                m2 = tarfile.TarInfo(path)
                m2.type, m2.mode, m2.mtime = m.type, m.mode, m.mtime
                m2.uid = m2.gid = 0
                m2.uname = m2.gname = "root"
                if data is not None:
                    m2.size = len(data)
                    outs[name].addfile(m2, io.BytesIO(data))
                    sums[name].append(f"{hashlib.md5(data).hexdigest()}  {path}\n")
                    counts[name][0] += 1
                    counts[name][1] += len(data)
                else:
                    outs[name].addfile(m2)
    for name, t in outs.items():
        t.close()
        base = os.path.join(outdir, f"linux-{name}")
        with open(base + ".md5", "w") as f:
            f.writelines(sums[name])
        os.replace(base + ".tar.tmp", base + ".tar")
        print(f"mksrc: {base}.tar: {counts[name][0]} files, "
              f"{counts[name][1] >> 20} MiB")


if __name__ == "__main__":
    main()

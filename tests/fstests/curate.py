#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Write the curated list of fstests generic/ tests that can apply to exFAT.

    tests/fstests/curate.py FSTESTS_DIR

A test is left out when it is not in the "auto" group, or when one of its
_require lines asks for something exFAT does not have (the table below);
tests/fstests/exclude.txt adds tests left out by hand, each with a reason.
Writes tests/fstests/generic.list (one test a line) and
tests/fstests/left-out.txt (test, then the reason), both kept in the
repository; rerun after updating the fstests tree.
"""

import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))

# _require function -> why exFAT cannot run such a test
LACKS = {
    "_require_scratch_reflink": "reflink (exFAT shares no clusters)",
    "_require_cp_reflink": "reflink (exFAT shares no clusters)",
    "_require_test_reflink": "reflink (exFAT shares no clusters)",
    "_require_scratch_dedupe": "dedupe (exFAT shares no clusters)",
    "_require_test_dedupe": "dedupe (exFAT shares no clusters)",
    "_require_scratch_duperemove": "dedupe (exFAT shares no clusters)",
    "_require_metadata_journaling": "metadata journal (exFAT has none)",
    "_require_log_writes": "dm-log-writes replay of a journal",
    "_require_logstate": "journal log state",
    "_require_logdev": "external log device",
    "_require_norecovery": "journal recovery",
    "_require_quota": "quotas",
    "_require_prjquota": "project quotas",
    "_require_xfs_quota": "quotas",
    "_require_xfs_quota_foreign": "quotas",
    "_require_setquota_project": "project quotas",
    "_require_getnextquota": "quotas",
    "_require_attrs": "extended attributes",
    "_require_acls": "POSIX ACLs",
    "_require_symlinks": "symbolic links",
    "_require_hardlinks": "hard links",
    "_require_mknod": "device nodes, FIFOs and sockets",
    "_require_scratch_encryption": "fscrypt",
    "_require_scratch_inlinecrypt": "fscrypt",
    "_require_scratch_verity": "fs-verity",
    "_require_fsverity_corruption": "fs-verity",
    "_require_fsverity_dump_metadata": "fs-verity",
    "_require_fsverity_builtin_signatures": "fs-verity",
    "_require_scratch_casefold": "casefold directories (exFAT compares names through its up-case table, no per-directory flag)",
    "_require_scratch_swapfile": "swap files",
    "_require_dax_iflag": "DAX",
    "_require_scratch_dax_mountopt": "DAX",
    "_require_chattr": "chattr flags (no FS_*_FL maps to an exFAT attribute)",
    "_require_file_attr": "chattr flags (no FS_*_FL maps to an exFAT attribute)",
    "_require_scratch_write_atomic": "atomic writes",
    "_require_scratch_write_atomic_multi_fsblock": "atomic writes",
    "_require_atomic_write_test_commands": "atomic writes",
    "_require_fio_atomic_writes": "atomic writes",
    "_require_sparse_files": "sparse files (exFAT files have no holes)",
    "_require_scratch_xfs_crc": "XFS only",
    "_require_btrfs_command": "Btrfs only",
    "_require_btrfs_mkfs_feature": "Btrfs only",
    "_require_fssum": "fssum (Btrfs tool)",
    "_require_scratch_delalloc": "delayed allocation (exFAT allocates at write time)",
    "_require_user": "a second user (fsgqa), and exFAT ownership is a mount option",
    "_require_group": "a second group (fsgqa), and exFAT ownership is a mount option",
    "_require_runas": "a second user (fsgqa), and exFAT ownership is a mount option",
    "_require_chown": "chown (exFAT ownership is a mount option)",
}


def main():
    root = sys.argv[1]
    gdir = os.path.join(root, "tests", "generic")
    manual = {}
    with open(os.path.join(HERE, "exclude.txt")) as f:
        for line in f:
            line = line.strip()
            if line and not line.startswith("#"):
                test, reason = line.split(None, 1)
                manual[test] = reason
    groups = {}
    with open(os.path.join(gdir, "group.list")) as f:
        for line in f:
            parts = line.split()
            if parts and parts[0].isdigit():
                groups[parts[0]] = parts[1:]
    keep, out = [], []
    for name in sorted(os.listdir(gdir)):
        if not re.fullmatch(r"\d{3,4}", name):
            continue
        test = f"generic/{name}"
        with open(os.path.join(gdir, name), errors="replace") as f:
            text = f.read()
        m = re.search(r"_begin_fstest\s+(.*)", text)
        grp = m.group(1).split() if m else groups.get(name, [])
        why = None
        if test in manual:
            why = manual[test]
        elif "auto" not in grp:
            why = "not in the auto group"
        elif re.search(r"_exclude_fs\s+exfat|_supported_fs\s+(?!.*generic)", text):
            why = "fstests excludes exfat"
        else:
            for req in re.findall(r"^\s*(_require_[a-z0-9_]+)", text, re.M):
                if req in LACKS:
                    why = LACKS[req]
                    break
        if why:
            out.append(f"{test}\t{why}")
        else:
            keep.append(test)
    with open(os.path.join(HERE, "generic.list"), "w") as f:
        f.write("".join(t + "\n" for t in keep))
    with open(os.path.join(HERE, "left-out.txt"), "w") as f:
        f.write("".join(t + "\n" for t in out))
    print(f"{len(keep)} kept, {len(out)} left out")


if __name__ == "__main__":
    main()

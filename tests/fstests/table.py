#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Print the side-by-side table of a tests/fstests/run.sh run.

    table.py OUT EXPECTED

OUT/<driver>/summary holds "test<TAB>status<TAB>seconds" lines; EXPECTED
(tests/fstests/expected.txt) holds "test<TAB>status<TAB>reason" lines for
every test whose exfat2 result is not "pass" or "notrun".  The table ends
with the tests where exfat2 does worse than expected or than in-tree.
"""

import os
import sys


def read_summary(path):
    res = {}
    if os.path.exists(path):
        with open(path) as f:
            for line in f:
                parts = line.rstrip("\n").split("\t")
                if len(parts) == 3:
                    res[parts[0]] = (parts[1], parts[2])
    return res


def main():
    out, expected_path = sys.argv[1], sys.argv[2]
    ours = read_summary(os.path.join(out, "ours", "summary"))
    intree = read_summary(os.path.join(out, "intree", "summary"))
    expected = {}
    with open(expected_path) as f:
        for line in f:
            if line.strip() and not line.startswith("#"):
                test, status, reason = line.rstrip("\n").split("\t", 2)
                expected[test] = (status, reason)
    with open(os.path.join(out, "tests")) as f:
        tests = [t.strip() for t in f if t.strip()]

    print(f"{'test':14} {'exfat2':>8} {'s':>5} {'in-tree':>8} {'s':>5}  reason")
    counts = {"ours": {}, "intree": {}}
    worse = []
    for t in tests:
        o, os_ = ours.get(t, ("-", ""))
        i, is_ = intree.get(t, ("-", ""))
        counts["ours"][o] = counts["ours"].get(o, 0) + 1
        counts["intree"][i] = counts["intree"].get(i, 0) + 1
        exp = expected.get(t)
        reason = exp[1] if exp else ""
        print(f"{t:14} {o:>8} {os_:>5} {i:>8} {is_:>5}  {reason}")
        if o in ("fail", "timeout"):
            if i == "pass":
                worse.append(f"{t}: exfat2 {o}, in-tree pass")
            elif not exp or exp[0] != o:
                worse.append(f"{t}: exfat2 {o}, not in expected.txt")
    for drv, name in (("ours", "exfat2"), ("intree", "in-tree")):
        c = counts[drv]
        print(f"{name}: " + ", ".join(f"{c[k]} {k}" for k in sorted(c)))
    if worse:
        print("exfat2 worse than expected or than in-tree:")
        for w in worse:
            print(f"  {w}")
    else:
        print("exfat2: no result worse than expected or than in-tree")
    return 1 if worse else 0


if __name__ == "__main__":
    sys.exit(main())

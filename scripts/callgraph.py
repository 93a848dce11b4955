#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""The calls between the files of exfat2/, checked against the layering
written at the top of exfat2/exfat.h: a file may call only files on its
own floor or below.  Reads the C text (function definitions at the start
of a line, calls as identifiers followed by "("), which is enough for
this code base's style; a call through a function pointer is not seen.

    scripts/callgraph.py [--all] [--self-test] [DIR]

Prints every call that goes up a floor (with the functions), then the
summary; exit status 1 if there is one that ALLOWED does not list.
--all also lists the calls between files that go down; --self-test
checks that a call up from meta.c to inode.c, added to a copy of DIR,
fails the check.  `make lint` runs both.
"""

import os
import re
import sys

# Floors, lowest first (see "Layers" in exfat.h).
FLOORS = [
    ("format", ["format.c", "upcase_table.c", "dindex.c", "extent.c",
                "window.c"]),
    ("messages", ["msg.c"]),
    ("sectors", ["meta.c"]),
    ("FAT, bitmap, names", ["fatent.c", "balloc.c", "upcase.c"]),
    ("chains", ["chain.c", "map.c"]),
    ("entry sets", ["entry.c"]),
    ("inodes and namespace", ["inode.c", "file.c", "dir.c", "namei.c",
                              "ioctl.c", "export.c"]),
    ("super", ["super.c"]),
]
FLOOR = {f: i for i, (_, files) in enumerate(FLOORS) for f in files}
# The calls up that are known, each with its reason (exfat.h, "Layers").
ALLOWED = set()

DEF = re.compile(r"^(?:static\s+)?(?:inline\s+)?[a-z_][\w\s\*]*?\b(\w+)\(")
CALL = re.compile(r"\b([a-z_]\w*)\s*\(")
SKIP = {"if", "for", "while", "switch", "return", "sizeof", "defined"}


def strip(text):
    text = re.sub(r"/\*.*?\*/", " ", text, flags=re.S)
    text = re.sub(r"//[^\n]*", " ", text)
    return re.sub(r'"(?:\\.|[^"\\])*"', '""', text)


def parse(path):
    """{function: [called names]} of the functions defined in path."""
    funcs, cur, depth = {}, None, 0
    for line in strip(open(path).read()).splitlines():
        if depth == 0:
            m = DEF.match(line)
            if m and not line.rstrip().endswith(";"):
                cur = m.group(1)
                funcs.setdefault(cur, [])
        if depth > 0 and cur:
            funcs[cur].extend(c for c in CALL.findall(line)
                              if c not in SKIP)
        depth += line.count("{") - line.count("}")
        if depth == 0 and "}" in line:
            cur = None
    return funcs


def main(argv):
    show_all = "--all" in argv
    args = [a for a in argv if not a.startswith("--")]
    d = args[0] if args else os.path.join(os.path.dirname(__file__), "..",
                                          "exfat2")
    files = sorted(f for f in os.listdir(d) if f.endswith(".c")
                   and not f.endswith("_test.c") and not f.endswith(".mod.c"))
    unknown = [f for f in files if f not in FLOOR]
    if unknown:
        print(f"files on no floor: {', '.join(unknown)}")
        return 1
    defs, where = {}, {}
    for f in files:
        defs[f] = parse(os.path.join(d, f))
        for fn in defs[f]:
            where.setdefault(fn, f)
    edges = {}
    for f in files:
        for fn, calls in defs[f].items():
            for c in calls:
                g = where.get(c)
                if g and g != f:
                    edges.setdefault((f, g), set()).add(f"{fn} -> {c}")
    up = sorted((k, v) for k, v in edges.items() if FLOOR[k[1]] > FLOOR[k[0]])
    new = [k for k, _ in up if k not in ALLOWED]
    for (f, g), calls in up:
        print(f"UP{'' if (f, g) in ALLOWED else ' (not allowed)'} {f} "
              f"({FLOORS[FLOOR[f]][0]}) -> {g} ({FLOORS[FLOOR[g]][0]}): "
              f"{', '.join(sorted(calls))}")
    if show_all:
        for (f, g), calls in sorted(edges.items()):
            if FLOOR[g] <= FLOOR[f]:
                print(f"   {f} -> {g}: {len(calls)}")
    print(f"callgraph: {len(edges)} file-to-file call pairs, {len(up)} going "
          f"up, {len(new)} of them not allowed")
    return 1 if new else 0


def self_test(d):
    """The check must fail on a copy of d with a call up added."""
    import shutil
    import subprocess
    import tempfile
    with tempfile.TemporaryDirectory() as tmp:
        for f in os.listdir(d):
            if f.endswith((".c", ".h")):
                shutil.copy(os.path.join(d, f), tmp)
        with open(os.path.join(tmp, "meta.c"), "a") as f:
            f.write("\nstatic void exfat_selftest_up(struct inode *i)\n{\n"
                    "\texfat_write_inode(i, NULL);\n}\n")
        p = subprocess.run([sys.executable, __file__, tmp],
                           capture_output=True, text=True)
    if p.returncode != 1 or "UP (not allowed) meta.c" not in p.stdout:
        print("callgraph self-test: a call up from meta.c to inode.c was "
              f"not caught:\n{p.stdout}")
        return 1
    print("callgraph self-test: a call up from meta.c was caught")
    return 0


if __name__ == "__main__":
    if "--self-test" in sys.argv[1:]:
        a = [x for x in sys.argv[1:] if not x.startswith("--")]
        sys.exit(self_test(a[0] if a else os.path.join(
            os.path.dirname(os.path.abspath(__file__)), "..", "exfat2")))
    sys.exit(main(sys.argv[1:]))

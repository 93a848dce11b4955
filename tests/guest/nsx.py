# SPDX-License-Identifier: GPL-2.0
"""nsx: a namespace exerciser with a model, the namespace twin of fsx-lite.

Random creates, mkdirs, unlinks, rmdirs, renames within and across
directories, case-only renames, renames over files and over empty
directories, RENAME_NOREPLACE and RENAME_EXCHANGE, long and non-ASCII
names (lone surrogates included), appends, overwrites and truncates, on
a mounted volume, each checked against an in-memory model of the tree:
names compared case-insensitively through the volume's up-case table,
each file's content.  Every error the model does not predict, and every
success it predicts to fail, is a mismatch.

    twin = Twin(tree, upcase)          # tree: {name: bytes | dict}
    x = Exerciser(mnt, twin, seed)
    x.run(ops, check_every=200)        # raises Mismatch
    compare_tree(mnt, twin, what)      # raises Mismatch

Paths are bytes: names are encoded as exfat2 hands them out (UTF-8, a
lone surrogate as its three-byte form).
"""

import ctypes
import errno
import os
import random

import foreign

_libc = ctypes.CDLL(None, use_errno=True)
_AT_FDCWD = -100
RENAME_NOREPLACE = 1
RENAME_EXCHANGE = 2


class Mismatch(Exception):
    """The volume and the model disagree; str() says where."""


def enc(name):
    return name.encode("utf-8", "surrogatepass")


def norm(name):
    """The name as UTF-16 holds it: a surrogate pair is one character."""
    return name.encode("utf-16-le", "surrogatepass").decode(
        "utf-16-le", "surrogatepass")


def renameat2(old, new, flags):
    if _libc.renameat2(_AT_FDCWD, old, _AT_FDCWD, new, flags) != 0:
        e = ctypes.get_errno()
        raise OSError(e, os.strerror(e))


class Node:
    def __init__(self, name, parent, data=None):
        self.name = name
        self.parent = parent
        self.children = None if data is not None else {}
        self.data = bytearray(data) if data is not None else None

    @property
    def is_dir(self):
        return self.children is not None

    def path(self, mnt):
        parts = []
        n = self
        while n.parent is not None:
            parts.append(enc(n.name))
            n = n.parent
        return b"/".join([mnt] + parts[::-1])

    def ancestors(self):
        n = self
        while n is not None:
            yield n
            n = n.parent


class Twin:
    """The model: a tree of Nodes keyed by up-cased UTF-16 units."""

    def __init__(self, tree, upcase):
        self.upcase = upcase
        self.root = Node("", None)
        self._load(self.root, tree)

    def _load(self, d, tree):
        for name, v in tree.items():
            name = norm(name)
            if isinstance(v, dict):
                n = Node(name, d)
                self._load(n, v)
            else:
                n = Node(name, d, v)
            d.children[self.key(name)] = n

    def key(self, name):
        return foreign.key(name, self.upcase)

    def nodes(self, kind=None):
        out, todo = [], [self.root]
        while todo:
            d = todo.pop()
            for n in d.children.values():
                if n.is_dir:
                    todo.append(n)
                if kind is None or (kind == "d") == n.is_dir:
                    out.append(n)
        return out

    def dirs(self):
        return [self.root] + self.nodes("d")

    def attach(self, d, n, name):
        n.name, n.parent = name, d
        d.children[self.key(name)] = n

    def detach(self, n):
        del n.parent.children[self.key(n.name)]


def drop_caches():
    with open("/proc/sys/vm/drop_caches", "w") as f:
        f.write("3")


class Stats:
    """What a comparison saw: files compared, lookups retried."""

    def __init__(self):
        self.files = 0
        self.retried = []


def _again(fn, p, stats, retry):
    """fn(p); with retry, an ENOENT is tried once more after the caches
    were dropped, and counted."""
    try:
        return fn(p)
    except FileNotFoundError:
        if not retry:
            raise
    drop_caches()
    stats.retried.append(p)
    return fn(p)


def _read(p):
    with open(p, "rb") as f:
        return f.read()


def compare_tree(mnt, twin, what, contents=True, spell=enc, retry=False):
    """Require the tree under mnt to be the model's: the same names (to
    the letter), kinds, sizes and contents.  spell(name) gives the bytes
    the reader lists for a model name (another driver's spelling); a name
    it spells otherwise than exfat2 is only looked for in the listing.
    retry: a lookup that fails is tried again once after dropping the
    caches (for the in-tree driver; see Stats.retried).  Returns Stats."""
    mnt = os.fsencode(mnt)
    todo = [(twin.root, mnt)]
    st = Stats()
    while todo:
        d, path = todo.pop()
        want = {spell(n.name): n for n in d.children.values()}
        try:
            got = {e.name: e.is_dir(follow_symlinks=False)
                   for e in _again(os.scandir, path, st, retry)}
        except OSError as e:
            raise Mismatch(f"{what}: listing {path!r}: {e}") from None
        if set(got) != set(want):
            extra = sorted(set(got) - set(want))[:5]
            missing = sorted(set(want) - set(got))[:5]
            raise Mismatch(f"{what}: {path!r}: names not in the model "
                           f"{extra}, model names missing {missing}")
        for name, is_dir in got.items():
            n = want[name]
            p = path + b"/" + name
            if name != enc(n.name):
                continue    # a lossy spelling: the reader cannot open it
            if n.is_dir != is_dir:
                raise Mismatch(f"{what}: {p!r}: kind differs")
            if n.is_dir:
                todo.append((n, p))
                continue
            try:
                size = _again(os.stat, p, st, retry).st_size
                data = _again(_read, p, st, retry) if contents else None
            except OSError as e:
                raise Mismatch(f"{what}: {p!r}: {e}") from None
            if size != len(n.data):
                raise Mismatch(f"{what}: {p!r}: size {size}, model "
                               f"{len(n.data)}")
            if contents and data != n.data:
                at = next((i for i in range(min(len(data), len(n.data)))
                           if data[i] != n.data[i]), len(data))
                raise Mismatch(f"{what}: {p!r}: content differs at byte "
                               f"{at}")
            st.files += 1
    return st


class Exerciser:
    OPS = [("create", 10), ("mkdir", 4), ("write", 12), ("truncate", 5),
           ("unlink", 8), ("rmdir", 4), ("rename_same_dir", 12),
           ("rename_case", 6), ("rename_across", 10), ("rename_over", 7),
           ("rename_noreplace", 3), ("rename_exchange", 4), ("fsync", 2)]

    def __init__(self, mnt, twin, seed, max_name=60, surrogate=0.02):
        self.mnt = os.fsencode(mnt)
        self.twin = twin
        self.rng = random.Random(seed)
        self.max_name = max_name
        self.surrogate = surrogate
        self.log = []
        self.counts = {}
        self.fid = 0

    # --- helpers ----------------------------------------------------------

    def note(self, text):
        self.log.append(text)
        if len(self.log) > 40:
            del self.log[:10]

    def fail(self, text):
        raise Mismatch(text + "\nlast operations:\n  " +
                       "\n  ".join(self.log[-15:]))

    def expect(self, what, fn, err=None):
        """Run fn; it must raise OSError(err), or succeed if err is None."""
        try:
            fn()
        except OSError as e:
            if e.errno == err:
                self.note(f"{what} -> {errno.errorcode[err]} (as expected)")
                return False
            self.fail(f"{what}: {errno.errorcode.get(e.errno, e.errno)}, "
                      f"model expects "
                      f"{errno.errorcode[err] if err else 'success'}")
        if err:
            self.fail(f"{what}: succeeded, model expects "
                      f"{errno.errorcode[err]}")
        self.note(what)
        return True

    def name(self):
        r = self.rng
        roll = r.random()
        n = 255 if roll < 0.04 else self.max_name if roll < 0.15 else \
            r.choice([8, 20, 40])
        return norm(foreign.random_name(r, n, self.surrogate))

    def data(self, n):
        self.fid += 1
        return random.Random(f"nsx{self.fid}").randbytes(n)

    def pick(self, kind=None, nonroot=False):
        nodes = self.twin.nodes(kind)
        if kind == "d" and not nonroot:
            nodes.append(self.twin.root)
        return self.rng.choice(nodes) if nodes else None

    def case_variant(self, name):
        """name with the case of some letters changed (same key)."""
        out = []
        for ch in name:
            if self.rng.random() < 0.5:
                alt = ch.swapcase()
                if len(alt) == 1 and \
                        self.twin.key(alt) == self.twin.key(ch):
                    ch = alt
            out.append(ch)
        return "".join(out)

    # --- operations -------------------------------------------------------

    def op_create(self):
        d = self.pick("d")
        name = self.name()
        other = d.children.get(self.twin.key(name))
        p = d.path(self.mnt) + b"/" + enc(name)
        data = self.data(self.rng.choice([0, 10, 700, 5000, 40000]))

        def do():
            fd = os.open(p, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
            try:
                os.write(fd, data)
            finally:
                os.close(fd)
        if self.expect(f"create {p!r} ({len(data)} bytes)", do,
                       errno.EEXIST if other else None):
            self.twin.attach(d, Node(name, None, data), name)

    def op_mkdir(self):
        d = self.pick("d")
        name = self.name()
        other = d.children.get(self.twin.key(name))
        p = d.path(self.mnt) + b"/" + enc(name)
        if self.expect(f"mkdir {p!r}", lambda: os.mkdir(p),
                       errno.EEXIST if other else None):
            self.twin.attach(d, Node(name, None), name)

    def op_write(self):
        f = self.pick("f")
        if not f:
            return
        p = f.path(self.mnt)
        r = self.rng
        size = len(f.data)
        off = size if r.random() < 0.5 else r.randint(0, size)
        data = self.data(r.choice([1, 100, 3000, 20000]))

        def do():
            fd = os.open(p, os.O_WRONLY)
            try:
                os.pwrite(fd, data, off)
            finally:
                os.close(fd)
        self.expect(f"write {p!r} {len(data)}@{off}", do)
        if off > size:
            f.data += bytes(off - size)
        f.data[off:off + len(data)] = data

    def op_truncate(self):
        f = self.pick("f")
        if not f:
            return
        p = f.path(self.mnt)
        size = self.rng.randint(0, len(f.data) + 5000)
        self.expect(f"truncate {p!r} {size}", lambda: os.truncate(p, size))
        if size < len(f.data):
            del f.data[size:]
        else:
            f.data += bytes(size - len(f.data))

    def op_unlink(self):
        f = self.pick("f")
        if not f:
            return
        p = f.path(self.mnt)
        self.expect(f"unlink {p!r}", lambda: os.unlink(p))
        self.twin.detach(f)

    def op_rmdir(self):
        d = self.pick("d", nonroot=True)
        if not d:
            return
        p = d.path(self.mnt)
        if self.expect(f"rmdir {p!r}", lambda: os.rmdir(p),
                       errno.ENOTEMPTY if d.children else None):
            self.twin.detach(d)

    def _rename(self, n, d, name, flags=0):
        """Rename node n to name in directory d with the model's verdict."""
        old = n.path(self.mnt)
        new = d.path(self.mnt) + b"/" + enc(name)
        other = d.children.get(self.twin.key(name))
        if other is n:
            other = None            # a case-only rename
        if other and any(a is other for a in n.ancestors()):
            return                  # the VFS' order of checks: not modelled
        err = None
        if other and flags & RENAME_NOREPLACE and other.name == name:
            err = errno.EEXIST      # the VFS checks its positive dentry first
        elif n.is_dir and any(a is n for a in d.ancestors()):
            err = errno.EINVAL
        elif other and flags & RENAME_NOREPLACE:
            err = errno.EEXIST
        elif other and n.is_dir and not other.is_dir:
            err = errno.ENOTDIR
        elif other and not n.is_dir and other.is_dir:
            err = errno.EISDIR
        elif other and other.is_dir and other.children:
            err = errno.ENOTEMPTY
        if old == new:
            return
        if not self.expect(f"rename {old!r} -> {new!r} flags {flags}",
                           lambda: renameat2(old, new, flags), err):
            return
        if other:
            self.twin.detach(other)
        self.twin.detach(n)
        self.twin.attach(d, n, name)

    def op_rename_same_dir(self):
        n = self.pick(nonroot=True)
        if n:
            self._rename(n, n.parent, self.name())

    def op_rename_case(self):
        n = self.pick(nonroot=True)
        if n:
            self._rename(n, n.parent, self.case_variant(n.name))

    def op_rename_across(self):
        n = self.pick(nonroot=True)
        if n:
            self._rename(n, self.pick("d"), self.name())

    def op_rename_over(self):
        n = self.pick(nonroot=True)
        t = self.pick(nonroot=True)
        if n and t and t is not n:
            name = t.name if self.rng.random() < 0.6 else \
                self.case_variant(t.name)
            self._rename(n, t.parent, name)

    def op_rename_noreplace(self):
        n = self.pick(nonroot=True)
        if not n:
            return
        if self.rng.random() < 0.5:
            t = self.pick(nonroot=True)
            if t and t is not n:
                self._rename(n, t.parent, t.name, RENAME_NOREPLACE)
        else:
            self._rename(n, self.pick("d"), self.name(), RENAME_NOREPLACE)

    def op_rename_exchange(self):
        a = self.pick(nonroot=True)
        b = self.pick(nonroot=True)
        if not a or not b or a is b:
            return
        pa, pb = a.path(self.mnt), b.path(self.mnt)
        err = None
        if any(x is a for x in b.parent.ancestors()) or \
                any(x is b for x in a.parent.ancestors()):
            err = errno.EINVAL
        if not self.expect(f"exchange {pa!r} <-> {pb!r}",
                           lambda: renameat2(pa, pb, RENAME_EXCHANGE), err):
            return
        da, na, db, nb = a.parent, a.name, b.parent, b.name
        self.twin.detach(a)
        self.twin.detach(b)
        self.twin.attach(da, b, na)
        self.twin.attach(db, a, nb)

    def op_fsync(self):
        n = self.pick()
        if not n:
            return
        p = n.path(self.mnt)

        def do():
            fd = os.open(p, os.O_RDONLY)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)
        self.expect(f"fsync {p!r}", do)

    # --- driver -----------------------------------------------------------

    def step(self):
        names, weights = zip(*self.OPS)
        op = self.rng.choices(names, weights)[0]
        self.counts[op] = self.counts.get(op, 0) + 1
        getattr(self, "op_" + op)()

    def run(self, ops, check_every=200, on_check=None):
        for i in range(1, ops + 1):
            self.step()
            if check_every and i % check_every == 0:
                try:
                    compare_tree(self.mnt, self.twin, f"after {i} ops")
                except Mismatch as e:
                    self.fail(str(e))
                if on_check:
                    on_check(i)


def populate(mnt, seed, files=300, dirs=20, delete=0.3, surrogate=0.0,
             one_dir=None):
    """Write a random tree under mnt with whatever driver mounted it, then
    delete a share of it (which leaves deleted sets between live ones);
    returns the tree as {name: bytes | dict} for Twin.  one_dir: put
    every file in one directory of that name instead."""
    r = random.Random(f"populate{seed}")
    mnt = os.fsencode(mnt)
    tree = {}
    folded = {}              # path -> set of lower-cased names (a guard)
    all_dirs = [(mnt, tree)]

    def fresh(path, maxlen):
        taken = folded.setdefault(path, set())
        while True:
            name = norm(foreign.random_name(r, maxlen, surrogate))
            # a conservative guard: no two names that Python folds alike
            if name.casefold() not in taken and name.upper() not in taken:
                taken.update((name.casefold(), name.upper()))
                return name
    if one_dir:
        path = mnt + b"/" + enc(one_dir)
        os.mkdir(path)
        tree[one_dir] = {}
        all_dirs = [(path, tree[one_dir])]
    else:
        for _ in range(dirs):
            path, d = r.choice(all_dirs)
            name = fresh(path, 40)
            os.mkdir(path + b"/" + enc(name))
            d[name] = {}
            all_dirs.append((path + b"/" + enc(name), d[name]))
    made = []
    for i in range(files):
        path, d = r.choice(all_dirs)
        name = fresh(path, r.choice([12, 30, 60, 255]))
        data = random.Random(f"populate{seed}/{i}").randbytes(
            r.choice([0, 1, 300, 4096, 5000, 70000]))
        with open(path + b"/" + enc(name), "wb") as f:
            f.write(data)
        d[name] = data
        made.append((path, d, name))
    for path, d, name in r.sample(made, int(len(made) * delete)):
        os.unlink(path + b"/" + enc(name))
        del d[name]
    return tree

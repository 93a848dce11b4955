#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Mount corrupted exFAT images (corrupt.py) and use them; in the test VM
only (root, loop devices, our module).

First every base is run unmodified (a control: the op:errno pairs that
fail there are driver bugs, listed apart).  Then for each seed,
corrupt.mutate() makes the image in /tmp (guest tmpfs, one file per base
rewritten in place), a loop device is attached with the base's sector size
and a child process, killed after `timeout` seconds, does

  1. mount -o ro; on refusal record errno and the driver's kernel line(s)
     "exfat2 (loopN): ..." and stop there;
  2. walk: readdir, lstat, case-swapped and missing-name lookups, read
     every file fully (capped at twice the image size, then reads near
     the end), SEEK_DATA/SEEK_HOLE, FIEMAP, FAT attribute and label
     ioctls, statfs; umount;
  3. mount read-write (errors=continue for two seeds in three, the
     default errors=remount-ro for the others); while another process
     walks the volume as in 2: create, fallocate, mmap
     write, append, overwrite, truncate down/up/to zero, set attributes,
     chmod, utime, rename a file into a directory and over another file,
     rename a directory, unlink, rm -rf a directory, mkdir/rmdir with
     files, a large write, set the label, fsync, sync (targets picked from
     the walk by a seeded rng); walk again; umount;
  4. mount ro again and walk what the driver wrote; umount.

Every failing system call is counted by errno: EUCLEAN, EIO, ENOSPC, EROFS
... are the driver refusing corrupt data, which is fine.  Between images
the mount point and the loop device are checked to be free.

run_batch() returns a Summary; Summary.problems lists what must fail a
test: an image whose child did not finish in time (a hang: its kernel
stack is in the log), a refused mount without a reason line or with more
than one error line, a kernel splat seen in the kernel log, something left
mounted or attached, an unmodified base refused or failing an operation
or not clean for the strict checker (tests/guest/xcheck.py) before or
after the driver wrote to it, a volume the driver cannot mount again
after its own read-write session, and (run_batch(strict=True)) an image
clean for xcheck.py before the read-write session and not after it,
leaked clusters aside where the driver reported corruption.  Standalone, in the VM:

    python3 -B tests/guest/fuzz.py [--count 100] [--start 1] [--seeds 1-20,33]
        [--timeout 60] [--max-time SECONDS] [--driver ours|intree]
        [--no-controls] [--keep DIR] [-q] [--files IMAGE...]

(--files: image files made elsewhere instead of the seeds, e.g. the
corrupted images of exfatprogs' tests, see tests/fuzz.sh --exfatprogs).

writes DIR (default $EXFAT2_OUT/fuzz) /{summary.txt,results.jsonl} and the
image and log of every problem seed (seed-N.img, seed-N.log); exit status
1 if there were problems.  From the host, OUT/fuzz on the host:

    tools/vm/vm.sh --out OUT -- python3 -B tests/guest/fuzz.py --count N -q

(the whole command is at the top of tests/cases/test_hostile.py).
Reproduce a seed on the host: tests/guest/corrupt.py --seed N -o N.img.
"""

import argparse
import collections
import ctypes
import errno
import fcntl
import json
import mmap
import os
import random
import re
import select
import signal
import struct
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import corrupt  # noqa: E402
import lib  # noqa: E402
import xcheck  # noqa: E402

# How each driver's kernel lines start (then "loopN): ").
PREFIX = {"ours": "exfat2 (", "intree": "exFAT-fs ("}
WORKDIR = "/tmp/exfat2-fuzz"
MNT = "/mnt/fuzz"

SPLAT_RE = lib.SPLAT_RE

# ioctls
LOOP_CTL_GET_FREE = 0x4C82
LOOP_CONFIGURE = 0x4C0A
LOOP_CLR_FD = 0x4C01
FS_IOC_FIEMAP = 0xC020660B
FS_IOC_GETFSLABEL = 0x81009431
FS_IOC_SETFSLABEL = 0x41009432
FAT_IOCTL_GET_ATTRIBUTES = 0x80047210
FAT_IOCTL_SET_ATTRIBUTES = 0x40047211
MS_RDONLY = 1
MNT_DETACH = 2

_libc = ctypes.CDLL(None, use_errno=True)
_libc.mount.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p,
                        ctypes.c_ulong, ctypes.c_char_p]
_libc.umount2.argtypes = [ctypes.c_char_p, ctypes.c_int]


def sys_mount(dev, mnt, flags, opts):
    r = _libc.mount(dev.encode(), mnt.encode(), b"exfat", flags,
                    opts.encode() if opts else None)
    return 0 if r == 0 else ctypes.get_errno()


def sys_umount(mnt, flags=0):
    r = _libc.umount2(mnt.encode(), flags)
    return 0 if r == 0 else ctypes.get_errno()


def ename(e):
    return errno.errorcode.get(e, str(e))


# ---------------------------------------------------------------------------
# Kernel log


class Kmsg(lib.Kmsg):
    """Kernel log records as fuzz.py uses them: (level, facility, text)."""

    def read(self):
        return [(r.level, r.facility, r.text) for r in super().read()]


def kmsg_write(msg):
    try:
        with open("/dev/kmsg", "w") as k:
            k.write(f"<5>exfat2-fuzz: {msg}\n")
    except OSError:
        pass


# ---------------------------------------------------------------------------
# Loop devices


def loop_attach(path, sector):
    """Attach path read-write with the given logical sector size; return
    /dev/loopN.  Nothing keeps the device open afterwards: kernels without
    CONFIG_BLK_DEV_WRITE_MOUNTED refuse to mount a device open for
    writing."""
    with open("/dev/loop-control", "rb") as ctl:
        n = fcntl.ioctl(ctl, LOOP_CTL_GET_FREE)
    dev = f"/dev/loop{n}"
    lfd = os.open(dev, os.O_RDWR)
    ffd = os.open(path, os.O_RDWR)
    try:
        info = bytearray(232)
        name = path.encode()[:63]
        info[56:56 + len(name)] = name              # lo_file_name
        cfg = struct.pack("<II", ffd, sector) + bytes(info) + bytes(64)
        fcntl.ioctl(lfd, LOOP_CONFIGURE, cfg)
    finally:
        os.close(ffd)
        os.close(lfd)
    return dev


def loop_backing(dev):
    try:
        name = os.path.basename(dev)
        with open(f"/sys/block/{name}/loop/backing_file") as f:
            return f.read().strip()
    except OSError:
        return None


def mounted(what):
    with open("/proc/mounts") as f:
        return [ln.split()[1] for ln in f if what in ln.split()[:2]]


# ---------------------------------------------------------------------------
# What the child does with a mounted volume


class Acct:
    """Counts operations and their errors (errno names)."""

    def __init__(self):
        self.ops = 0
        self.last_errno = 0
        self.errs = collections.Counter()
        self.by_op = collections.Counter()
        self.notes = collections.Counter()

    def __call__(self, what, fn, *args, ignore=(), **kw):
        self.ops += 1
        self.last_errno = 0
        try:
            return fn(*args, **kw)
        except OSError as e:
            self.last_errno = e.errno
            if e.errno in ignore:
                return None
            self.errs[ename(e.errno)] += 1
            self.by_op[f"{what}:{ename(e.errno)}"] += 1
            return None


MAX_DEPTH = 12
MAX_ENTRIES = 2000


def read_file(acct, path, cap):
    fd = acct("open", os.open, path, os.O_RDONLY | os.O_NOFOLLOW)
    if fd is None:
        return
    try:
        st = acct("fstat", os.fstat, fd)
        total = 0
        while total < cap:
            b = acct("read", os.read, fd, 1 << 18)
            if not b:
                break
            total += len(b)
        read_err = acct.last_errno
        if st and st.st_size > cap:
            acct.notes["file larger than the volume"] += 1
            for off in (st.st_size - 4096, st.st_size // 2, cap * 4):
                if 0 <= off < st.st_size:
                    acct("pread-far", os.pread, fd, 4096, off)
        if st:
            if total < min(st.st_size, cap) and not read_err:
                acct.notes["read hit EOF before the file size"] += 1
            for whence in (os.SEEK_DATA, os.SEEK_HOLE):
                for off in (0, st.st_size // 2):
                    acct("lseek", os.lseek, fd, off, whence,
                         ignore=(errno.ENXIO,))
        buf = bytearray(struct.pack("<QQIIII", 0, 2**64 - 1, 1, 0, 32, 0)
                        + bytes(32 * 56))
        acct("fiemap", fcntl.ioctl, fd, FS_IOC_FIEMAP, buf, True,
             ignore=(errno.ENOTTY, errno.EOPNOTSUPP))
        acct("getattr", fcntl.ioctl, fd, FAT_IOCTL_GET_ATTRIBUTES,
             b"\0" * 4, ignore=(errno.ENOTTY,))
    finally:
        os.close(fd)


def walk(acct, root, cap):
    """Everything readable under root; returns (files, dirs) (relative,
    sorted, those whose lstat worked)."""
    acct("statfs", os.statvfs, root)
    fd = acct("open-root", os.open, root, os.O_RDONLY)
    if fd is not None:
        acct("getlabel", fcntl.ioctl, fd, FS_IOC_GETFSLABEL, b"\0" * 256,
             ignore=(errno.ENOTTY,))
        os.close(fd)
    files, dirs = [], []
    todo = [("", 0)]
    seen = 0
    while todo:
        rel, depth = todo.pop(0)
        full = os.path.join(root, rel)
        names = acct("readdir", os.listdir, full)
        if names is None:
            continue
        if len(set(names)) != len(names):
            acct.notes["duplicate names in readdir"] += 1
        acct("lookup-missing", os.lstat, os.path.join(full, "zz-no-such"),
             ignore=(errno.ENOENT,))
        for name in sorted(names):
            seen += 1
            if seen > MAX_ENTRIES:
                acct.notes["walk stopped at MAX_ENTRIES"] += 1
                return files, dirs
            r = os.path.join(rel, name)
            p = os.path.join(root, r)
            st = acct("lstat", os.lstat, p, ignore=(errno.ENOENT,))
            if st is None:
                if acct.last_errno == errno.ENOENT:
                    acct.notes["readdir name not found by lookup"] += 1
                continue
            alt = name.swapcase()
            if alt != name:
                acct("lookup-case", os.lstat, os.path.join(full, alt),
                     ignore=(errno.ENOENT,))
            if (st.st_mode & 0o170000) == 0o040000:
                dirs.append(r)
                if depth + 1 < MAX_DEPTH:
                    todo.append((r, depth + 1))
                else:
                    acct.notes["directory deeper than MAX_DEPTH"] += 1
            elif (st.st_mode & 0o170000) == 0o100000:
                files.append(r)
                read_file(acct, p, cap)
            else:
                acct.notes["neither file nor directory"] += 1
    return files, dirs


def pattern(n, seed):
    b = bytes((i * 131 + seed) & 0xFF for i in range(256))
    return (b * (n // 256 + 1))[:n]


def write_new(acct, path, data, sync=True):
    fd = acct("create", os.open, path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC,
              0o644)
    if fd is None:
        return False
    try:
        acct("write", os.write, fd, data)
        if sync:
            acct("fsync", os.fsync, fd)
    finally:
        acct("close", os.close, fd)
    return True


def rm_tree(acct, path, budget=200):
    """rm -rf path through the driver (frees every chain under it)."""
    names = acct("readdir", os.listdir, path)
    for name in sorted(names or [])[:budget]:
        p = os.path.join(path, name)
        st = acct("lstat", os.lstat, p)
        if st is None:
            continue
        if (st.st_mode & 0o170000) == 0o040000:
            rm_tree(acct, p, budget // 2)
        else:
            acct("unlink", os.unlink, p)
    acct("rmdir", os.rmdir, path)


def rw_ops(acct, root, files, dirs, clu, rng):
    """A few of every kind of change, on files and directories picked by
    rng; an operation whose prerequisite failed is skipped, so that every
    error counted is the driver's."""
    j = os.path.join
    new = j(root, "fz-new.bin")
    if write_new(acct, new, pattern(3 * clu + 100, 1)):
        fd = acct("open", os.open, new, os.O_RDWR)
        if fd is not None:
            acct("fallocate", os.posix_fallocate, fd, 0, 8 * clu,
                 ignore=(errno.EOPNOTSUPP,))
            try:
                with mmap.mmap(fd, 2 * clu) as m:
                    m[10:20] = b"0123456789"
                    m.flush()
            except OSError as e:
                acct.errs[ename(e.errno)] += 1
                acct.by_op[f"mmap:{ename(e.errno)}"] += 1
            except (ValueError, IndexError):
                pass            # shorter than written: its write failed
            acct("fsync", os.fsync, fd)
            os.close(fd)
    files = rng.sample(files, len(files))
    dirs = rng.sample(dirs, len(dirs))
    for k, what in enumerate(("append", "overwrite", "truncate", "empty")):
        if k >= len(files):
            break
        fd = acct("open-" + what, os.open, j(root, files[k]),
                  os.O_WRONLY | os.O_APPEND if what == "append" else
                  os.O_RDWR)
        if fd is None:
            continue
        st = acct("fstat", os.fstat, fd)
        size = st.st_size if st else 0
        if what == "append":
            acct("append", os.write, fd, pattern(2 * clu + 7, 2))
        elif what == "overwrite":
            acct("pwrite", os.pwrite, fd, pattern(clu + 3, 3),
                 min(size // 2, 1 << 30))
        elif what == "truncate":
            acct("truncate", os.ftruncate, fd, size // 2)
            acct("truncate", os.ftruncate, fd, size // 2 + clu + 1)
        else:
            acct("truncate", os.ftruncate, fd, 0)
            acct("pwrite", os.pwrite, fd, b"again", clu * 2)
        acct("fsync", os.fsync, fd)
        os.close(fd)
    if files:
        p = j(root, files[0])
        fd = acct("open", os.open, p, os.O_RDONLY)
        if fd is not None:
            acct("setattr", fcntl.ioctl, fd, FAT_IOCTL_SET_ATTRIBUTES,
                 struct.pack("<I", 0x02), ignore=(errno.ENOTTY,))
            os.close(fd)
        acct("chmod", os.chmod, p, 0o444)
        acct("utime", os.utime, p, (1_000_000_000, 1_200_000_000))
    if len(files) > 4:
        acct("rename", os.rename, j(root, files[4]),
             j(root, dirs[0] if dirs else "", "fz-moved"))
    if len(files) > 5:
        acct("unlink", os.unlink, j(root, files[5]))
    if len(files) > 6 and dirs:
        # replace an existing file by another one
        acct("rename-over", os.rename, j(root, files[6]),
             j(root, files[7 % len(files)]))
    if dirs:
        d = dirs[0]
        acct("rename-dir", os.rename, j(root, d),
             j(root, os.path.dirname(d), "fz-renamed-dir"))
        if len(dirs) > 1 and not dirs[1].startswith(d + "/") and \
                os.path.lexists(j(root, dirs[1])):
            rm_tree(acct, j(root, dirs[1]))
    top = j(root, "fz-dir")
    if acct("mkdir", os.mkdir, top) is None and not acct.last_errno:
        sub = j(top, "sub")
        if acct("mkdir", os.mkdir, sub) is None and not acct.last_errno:
            made = [f for f in (j(sub, f"file-{i}-" + "n" * 20 * i)
                                for i in range(5))
                    if write_new(acct, f, pattern(len(f) * 37, 6),
                                 sync=False)]
            for f in made:
                acct("unlink", os.unlink, f)
            acct("rmdir", os.rmdir, sub)
        if acct("rename", os.rename, top, j(root, "FZ-DIR-2")) is None and \
                not acct.last_errno:
            top = j(root, "FZ-DIR-2")
        acct("rmdir", os.rmdir, top)
    st = acct("statfs", os.statvfs, root)
    big = 256 << 10
    if st:
        big = max(clu, min(big, st.f_bavail * st.f_frsize // 2))
    if write_new(acct, j(root, "fz-big.bin"), pattern(big, 5)):
        acct("truncate", os.truncate, j(root, "fz-big.bin"), big // 3)
    fd = acct("open-root", os.open, root, os.O_RDONLY)
    if fd is not None:
        label = "FZ\u00e9LABEL".encode() + b"\0"
        acct("setlabel", fcntl.ioctl, fd, FS_IOC_SETFSLABEL,
             label + bytes(256 - len(label)), ignore=(errno.ENOTTY,))
        acct("fsync-dir", os.fsync, fd)
        os.close(fd)
    if os.path.lexists(new):
        acct("unlink", os.unlink, new)
    acct("sync", os.sync)


class Progress:
    """Child -> parent: phase lines, then one JSON line."""

    def __init__(self, wfd):
        self.wfd = wfd

    def phase(self, name):
        os.write(self.wfd, f"phase {name} {time.monotonic():.3f}\n".encode())

    def done(self, res):
        os.write(self.wfd, ("result " + json.dumps(res) + "\n").encode())


def driver_lines(recs, prefix):
    return [(lvl, t[len(prefix):]) for lvl, fac, t in recs
            if t.startswith(prefix)]


class Klines:
    """The driver's kernel lines for our loop device, as they come."""

    def __init__(self, prefix):
        self.kmsg = Kmsg()
        self.prefix = prefix
        self.all = []

    def read(self):
        new = driver_lines(self.kmsg.read(), self.prefix)
        self.all += new
        return new


def try_mount(res, key, dev, flags, opts, kl):
    kl.read()
    err = sys_mount(dev, MNT, flags, opts)
    lines = kl.read()
    res[key] = {"errno": ename(err) if err else None,
                "lines": [f"<{lvl}> {t}" for lvl, t in lines]}
    if err:
        res[key]["reason"] = [t for lvl, t in lines if lvl <= 3]
    return err == 0


def child_main(job, wfd):
    """In the child: mount ro, walk, umount; mount rw, change things while
    a reader walks, walk, umount; mount ro, walk, umount.  Reports the
    phases and the result through wfd."""
    prog = Progress(wfd)
    acct = Acct()
    kl = Klines(f"{job.prefix}{os.path.basename(job.dev)}): ")
    res = {}
    prog.phase("mount-ro")
    if try_mount(res, "ro", job.dev, MS_RDONLY, "", kl):
        prog.phase("walk-ro")
        files, dirs = walk(acct, MNT, job.cap)
        prog.phase("umount-ro")
        e = sys_umount(MNT)
        if e:
            res["umount_ro"] = ename(e)
        else:
            prog.phase("mount-rw")
            if try_mount(res, "rw", job.dev, 0, job.opts_rw, kl):
                prog.phase("rw-ops")
                # a reader walks the volume while it changes
                reader = os.fork()
                if reader == 0:
                    try:
                        walk(Acct(), MNT, job.cap)
                    finally:
                        os._exit(0)
                rw_ops(acct, MNT, files, dirs, job.clu,
                       random.Random(job.rng_seed))
                prog.phase("rw-ops-wait-reader")
                os.waitpid(reader, 0)
                prog.phase("walk-rw")
                walk(acct, MNT, job.cap)
                prog.phase("umount-rw")
                e = sys_umount(MNT)
                if e:
                    res["umount_rw"] = ename(e)
                else:
                    # read back what the driver wrote
                    prog.phase("mount-again")
                    if try_mount(res, "again", job.dev, MS_RDONLY, "", kl):
                        prog.phase("walk-again")
                        walk(acct, MNT, job.cap)
                        prog.phase("umount-again")
                        e = sys_umount(MNT)
                        if e:
                            res["umount_again"] = ename(e)
    kl.read()
    res["ops"] = acct.ops
    res["errs"] = dict(acct.errs)
    res["by_op"] = dict(acct.by_op)
    res["notes"] = dict(acct.notes)
    res["msgs"] = [f"<{lvl}> {t}" for lvl, t in kl.all]
    prog.done(res)


def group_stacks(pgid):
    """State and kernel stack of every process in process group pgid."""
    out = []
    for p in sorted(os.listdir("/proc")):
        if not p.isdigit():
            continue
        try:
            with open(f"/proc/{p}/stat") as f:
                st = f.read().rsplit(")", 1)[1].split()
            if int(st[2]) != pgid:
                continue
            with open(f"/proc/{p}/stack") as f:
                out.append(f"pid {p} state {st[0]}:\n{f.read()}")
        except (OSError, ValueError, IndexError):
            continue
    return "".join(out)


def run_forked(fn, timeout):
    """Run fn(wfd) in a child process, wfd a pipe to us; return (status,
    what the child wrote, its kernel stack if it had to be killed).
    status: 'ok', 'died' (non-zero exit), 'timeout' (killed after timeout
    seconds) or 'stuck' (could not be killed)."""
    rfd, wfd = os.pipe()
    pid = os.fork()
    if pid == 0:
        code = 0
        try:
            os.setpgid(0, 0)    # killed as a group, with what it forks
            os.close(rfd)
            signal.signal(signal.SIGINT, signal.SIG_DFL)
            fn(wfd)
        except BaseException:
            import traceback
            try:
                os.write(wfd, ("crash " + json.dumps(traceback.format_exc())
                               + "\n").encode())
            except OSError:
                pass
            code = 1
        os._exit(code)
    os.close(wfd)
    pidfd = os.pidfd_open(pid)
    chunks = []
    deadline = time.monotonic() + timeout
    status, stack = None, ""
    watch = [rfd, pidfd]
    while status is None:
        left = deadline - time.monotonic()
        if left <= 0:
            break
        r, _, _ = select.select(watch, [], [], left)
        if rfd in r:
            chunk = os.read(rfd, 65536)
            chunks.append(chunk)
            if not chunk:
                watch.remove(rfd)
        if pidfd in r:
            _, st = os.waitpid(pid, 0)
            status = "ok" if st == 0 else "died"
            try:                # whatever it left running
                os.killpg(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
    if status is None:
        stack = group_stacks(pid)
        try:
            os.killpg(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        if select.select([pidfd], [], [], 20)[0]:
            os.waitpid(pid, 0)
            status = "timeout"
        else:
            status = "stuck"
    # the rest of what was written, unless a process that has the pipe
    # open cannot be killed
    while rfd in watch and select.select([rfd], [], [], 20)[0]:
        chunk = os.read(rfd, 65536)
        if not chunk:
            break
        chunks.append(chunk)
    os.close(pidfd)
    os.close(rfd)
    return status, b"".join(chunks).decode("utf-8", "replace"), stack


def parse_child(data):
    """(phases, seconds spent in each, result dict, crash text)."""
    phases, times, res, crash = [], [], None, None
    for ln in data.splitlines():
        if ln.startswith("phase "):
            phases.append(ln[6:].split()[0])
            times.append(float(ln.split()[2]))
        elif ln.startswith("result "):
            res = json.loads(ln[7:])
        elif ln.startswith("crash "):
            crash = json.loads(ln[6:])
    ends = times[1:] + [time.monotonic()]
    secs = [round(b - a, 2) for a, b in zip(times, ends)]
    return phases, secs, res, crash


def norm_reason(text):
    return re.sub(r"\b(0x[0-9a-fA-F]+|\d+)\b", "N", text)


class Summary:
    """What a batch saw; text() is the report, problems what fails it."""

    def __init__(self, seeds):
        self.seeds = seeds
        self.images = 0
        self.refused = collections.Counter()     # "ERRNO: reason" -> n
        self.rw_refused = collections.Counter()
        self.again_refused = collections.Counter()
        self.ok = 0
        self.with_errors = 0
        self.errs = collections.Counter()
        self.by_op = collections.Counter()
        self.notes = collections.Counter()
        self.note_seeds = collections.defaultdict(list)
        self.msgs = collections.Counter()       # driver messages, normalized
        self.baseline = collections.Counter()   # op:errno on pristine images
        self.controls = []                      # (name, verdict)
        self.problems = []                      # (seed, text): fail a test
        self.secs = 0.0
        self.image_secs = []
        self.kmemleak = None                    # the scan's verdict, if run
        self.strict_checked = 0     # images xcheck.py judged before/after

    def problem(self, seed, text):
        self.problems.append((seed, text))

    def text(self):
        s = self.seeds
        ints = s and all(isinstance(x, int) for x in s)
        rng = f"{s[0]}-{s[-1]}" if ints and \
            s == list(range(s[0], s[-1] + 1)) else \
            ",".join(map(str, s[:20])) + ("..." if len(s) > 20 else "")
        n = max(1, len(self.image_secs))
        out = [f"hostile: {self.images} images (seeds {rng}) in "
               f"{self.secs:.1f}s, {sum(self.image_secs) / n:.2f} s/image "
               f"(max {max(self.image_secs, default=0):.1f}s)"]
        for name, verdict in self.controls:
            out.append(f"  control {name} (unmodified): {verdict}")
        if self.strict_checked:
            out.append(f"  clean for xcheck.py before the read-write "
                       f"session, and checked after it: "
                       f"{self.strict_checked} images")
        if self.baseline:
            out.append("  errors on unmodified images (driver bugs; not "
                       "counted below): " + ", ".join(
                           f"{k}" for k in sorted(self.baseline)))
        nref = sum(self.refused.values())
        out.append(f"  refused mounts: {nref}")
        for r, k in self.refused.most_common():
            out.append(f"    {k:5d}  {r}")
        out.append(f"  mounted: {self.images - nref} (ok {self.ok}, with "
                   f"errors {self.with_errors})")
        if self.rw_refused:
            out.append(f"  read-write mount refused after a read-only one "
                       f"worked: {sum(self.rw_refused.values())}")
            for r, k in self.rw_refused.most_common():
                out.append(f"    {k:5d}  {r}")
        if self.again_refused:
            out.append(f"  mount refused after the read-write session "
                       f"(the driver's own writes): "
                       f"{sum(self.again_refused.values())}")
            for r, k in self.again_refused.most_common():
                out.append(f"    {k:5d}  {r}")
        out.append("  errors by errno: " + (", ".join(
            f"{k} {v}" for k, v in self.errs.most_common()) or "none"))
        if self.by_op:
            out.append("  errors by operation: " + ", ".join(
                f"{k} {v}" for k, v in self.by_op.most_common(30)))
        if self.msgs:
            out.append("  driver messages on mounted images (number of "
                       "images):")
            for k, v in self.msgs.most_common(40):
                out.append(f"    {v:5d}  {k}")
        for k, v in self.notes.most_common():
            seeds = self.note_seeds[k]
            out.append(f"  note: {k}: {v} (seeds {seeds[:12]}"
                       f"{'...' if len(seeds) > 12 else ''})")
        if self.kmemleak:
            out.append(f"  kmemleak after the batch: {self.kmemleak}")
        out.append(f"  problems: {len(self.problems) or 'none'}")
        for seed, t in self.problems:
            out.append(f"    seed {seed}: {t}")
        return "\n".join(out)


def _cleanup(dev):
    """Unmount what is left on MNT or from dev and detach the loop device.
    Runs in a helper process in case the kernel hangs."""
    left = []
    for m in mounted(dev) + [m for m in mounted(MNT) if m not in mounted(dev)]:
        left.append(m)
        if sys_umount(m):
            sys_umount(m, MNT_DETACH)
    lfd = os.open(dev, os.O_RDONLY)
    try:
        fcntl.ioctl(lfd, LOOP_CLR_FD)
    except OSError as e:
        left.append(f"LOOP_CLR_FD: {ename(e.errno)}")
    finally:
        os.close(lfd)
    return left


def _loop_gone(dev):
    for _ in range(100):
        if not loop_backing(dev):
            return True
        time.sleep(0.05)
    return False


def use_driver(driver):
    if not os.path.exists("/dev/loop-control"):
        lib.sh("modprobe loop")
    lib.use_driver(driver)


class Job:
    """One image to try: label (seed or "control:BASE"), its bytes, its
    description, the mount options and the rng seed of the rw phase."""

    def __init__(self, label, img, desc, base, prefix, rng_seed, src=None):
        self.label, self.img, self.desc, self.base = label, img, desc, base
        self.prefix, self.rng_seed = prefix, rng_seed
        # errors=continue lets the writes go on after corruption is found
        self.opts_rw = "" if rng_seed % 3 == 0 else "errors=continue"
        # src: an image file (img None), copied (sparse) for each run
        self.src = src
        size = len(img) if img is not None else os.path.getsize(src)
        self.cap = min(2 * size, 256 << 20)
        self.clu = base.model.geo.clu
        self.dev = None


class FileBase:
    """What a Job needs of a base, for an image given as a file: its name,
    logical sector size and cluster size (read from its boot sector; the
    smallest legal values if that is unreadable)."""

    def __init__(self, path):
        with open(path, "rb") as f:
            boot = f.read(512)
        sect = boot[108] if len(boot) == 512 else 9
        clu = sect + (boot[109] if len(boot) == 512 else 0)
        self.name = os.path.basename(path).replace(".img", "")
        self.sector = 4096 if sect == 12 else 512
        self.model = argparse.Namespace(geo=argparse.Namespace(
            clu=1 << min(max(clu, 9), 25)))


def _batch_ctx(log, keep, timeout, img_path, strict):
    """What _run_job needs of a batch; opens keep/results.jsonl."""
    ctx = {"kmsg": Kmsg(), "log": log, "keep": keep, "timeout": timeout,
           "img_path": img_path, "jl": None, "strict": strict}
    if keep:
        os.makedirs(keep, exist_ok=True)
        ctx["jl"] = open(os.path.join(keep, "results.jsonl"), "w")
    return ctx


def run_files(paths, driver="ours", timeout=60, log=print, keep=None,
              workdir=WORKDIR, strict=True):
    """run_batch() for image files made elsewhere (the corrupted images
    of exfatprogs' tests, say), each used as a seed is, on a sparse copy;
    no controls."""
    t0 = time.monotonic()
    use_driver(driver)
    os.makedirs(MNT, exist_ok=True)
    os.makedirs(workdir, exist_ok=True)
    summ = Summary([os.path.basename(p) for p in paths])
    ctx = _batch_ctx(log, keep, timeout, os.path.join(workdir, "file-%s.img"),
                     strict)
    try:
        for i, p in enumerate(paths):
            base = FileBase(p)
            stop = _run_job(Job(base.name, None, f"file {p}", base,
                                PREFIX[driver], i + 1, src=p), ctx, summ)
            try:
                os.unlink(ctx["img_path"] % base.name)
            except OSError:
                pass
            if stop:
                log(f"fuzz: stopping: {stop}")
                summ.problem("-", f"batch stopped: {stop}")
                break
    finally:
        ctx["kmsg"].close()
        if ctx["jl"]:
            ctx["jl"].close()
    summ.secs = time.monotonic() - t0
    if keep:
        with open(os.path.join(keep, "summary.txt"), "w") as f:
            f.write(summ.text() + "\n")
    return summ


def run_batch(seeds, driver="ours", timeout=60, log=print, keep=None,
              workdir=WORKDIR, controls=True, max_time=None, strict=False):
    """Mount and use the image of each seed; return a Summary.

    controls: first run every base unmodified; an operation failing there
    is a problem (and the op:errno pair is not counted as an error of the
    corrupted images).
    strict: an image the strict checker (xcheck.py) finds clean before
    the driver mounts it must be clean after the driver changed it, but
    for leaked clusters where the driver reported corruption (costs two
    checks an image; controls are always checked).
    keep: a directory where the image and log of every problem seed go,
    with results.jsonl (one record per image) and summary.txt."""
    seeds = list(seeds)
    t0 = time.monotonic()
    use_driver(driver)
    os.makedirs(MNT, exist_ok=True)
    os.makedirs(workdir, exist_ok=True)
    bases = corrupt.build_bases(workdir)
    log(f"fuzz: {len(bases)} bases ready in {time.monotonic() - t0:.1f}s "
        f"({', '.join(bases)}), driver {driver}")
    summ = Summary(seeds)
    ctx = _batch_ctx(log, keep, timeout, os.path.join(workdir, "cur-%s.img"),
                     strict)
    stop = None
    try:
        jobs = []
        if controls:
            jobs += [Job(f"control:{name}", bytearray(b.img),
                         f"control {name}: unmodified base", b,
                         PREFIX[driver], 1) for name, b in bases.items()]
        for job in jobs:
            stop = _run_job(job, ctx, summ, control=True)
            if stop:
                break
        else:
            bufs = {}
            for seed in seeds:
                if max_time and time.monotonic() - t0 > max_time:
                    log(f"fuzz: --max-time {max_time:g}s reached: stopping "
                        f"before seed {seed}")
                    summ.seeds = seeds[:seeds.index(seed)]
                    break
                img, desc, base = corrupt.mutate(bases, seed, bufs)
                stop = _run_job(Job(seed, img, desc, base, PREFIX[driver],
                                    seed), ctx, summ)
                if stop:
                    break
        if stop:
            log(f"fuzz: stopping: {stop}")
            summ.problem("-", f"batch stopped: {stop}")
    finally:
        ctx["kmsg"].close()
        if ctx["jl"]:
            ctx["jl"].close()
        for name in bases:
            try:
                os.unlink(ctx["img_path"] % name)
            except OSError:
                pass
    summ.secs = time.monotonic() - t0
    if keep:
        with open(os.path.join(keep, "summary.txt"), "w") as f:
            f.write(summ.text() + "\n")
    return summ


def _run_job(job, ctx, summ, control=False):
    """Try one image; account for it in summ; return why the batch must
    stop, or None."""
    log, kmsg, label = ctx["log"], ctx["kmsg"], job.label
    t = time.monotonic()
    # one file per base, rewritten in place: no page allocation per image
    path = ctx["img_path"] % job.base.name
    if job.img is None:
        lib.sh(f"cp --sparse=always '{job.src}' '{path}'")
    else:
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            os.pwrite(fd, job.img, 0)
            os.ftruncate(fd, len(job.img))
        finally:
            os.close(fd)
    strict = control or ctx["strict"]
    pre = xcheck.check(path) if strict else None
    if control and pre:
        summ.problem(label, f"the unmodified base is not clean for "
                     f"xcheck.py: {pre[:3]}")
    kmsg.read()
    kmsg_write(job.desc)
    job.dev = loop_attach(path, job.base.sector)
    status, data, stack = run_forked(lambda wfd: child_main(job, wfd),
                                     ctx["timeout"])
    phases, psecs, res, crash = parse_child(data)
    stop, left = None, []
    if status == "stuck":
        stop = f"seed {label}: the child process cannot be killed"
    else:
        st2, d2, _ = run_forked(lambda wfd: os.write(wfd, json.dumps(
            _cleanup(job.dev)).encode()), 60)
        if st2 != "ok":
            stop = f"seed {label}: cleanup of {job.dev} hangs"
            left = [f"cleanup of {job.dev} {st2}"]
        else:
            left = json.loads(d2 or "[]")
            if not _loop_gone(job.dev):
                left.append(f"{job.dev} still attached")
    secs = time.monotonic() - t
    recs = kmsg.read()
    splats = [txt for lvl, fac, txt in recs if fac == 0 and
              SPLAT_RE.search(txt)]
    problems = []
    if status in ("timeout", "stuck"):
        problems.append(f"hung in {phases[-1] if phases else '?'} "
                        f"(> {ctx['timeout']:g}s, child {status})")
        log(f"seed {label}: HUNG in phase {phases[-1] if phases else '?'}; "
            f"kernel stack of the child:\n{stack}")
    elif crash or res is None:
        problems.append(f"child failed ({status}): "
                        f"{(crash or data or '?').strip().splitlines()[-1]}")
        log(f"seed {label}: child failed:\n{crash or data}")
    if left:
        problems.append(f"left behind: {left}")
    if splats:
        problems.append(f"kernel splat: {splats[0]}")
    verdict = "?"
    if res is not None:
        verdict = _account(job, res, summ, problems, control)
        if pre == [] and not left and "rw" in res and \
                not res["rw"].get("errno"):
            problems += _strict_after(path, res)
            summ.strict_checked += not control
    if not control:
        summ.images += 1
        summ.image_secs.append(secs)
    for p in problems:
        summ.problem(label, f"{p}: {job.desc}")
    log(f"seed {label} {secs:5.1f}s {verdict}"
        f"{' PROBLEM' if problems else ''} | {job.desc}")
    if splats:
        log("  kernel: " + "\n  kernel: ".join(splats[:5]))
    rec = {"seed": label, "desc": job.desc, "secs": round(secs, 2),
           "status": status, "phases": dict(zip(phases, psecs)), "res": res,
           "problems": problems}
    if ctx["jl"]:
        ctx["jl"].write(json.dumps(rec) + "\n")
        ctx["jl"].flush()
    if problems and ctx["keep"]:
        base = os.path.join(ctx["keep"], f"seed-{label}".replace(":", "-"))
        if job.img is None:
            lib.sh(f"cp --sparse=always '{job.src}' '{base}.img'")
        else:
            with open(base + ".img", "wb") as f:
                f.write(job.img)
        with open(base + ".log", "w") as f:
            f.write(json.dumps(rec, indent=1) + "\n" + stack + "\n" +
                    "\n".join(t for _, _, t in recs) + "\n")
    return stop


def _strict_after(path, res):
    """Problems of an image that was clean for xcheck.py before the driver
    mounted it read-write: it must be clean now, leaked clusters aside
    when the driver reported corruption (<= KERN_ERR lines)."""
    reported = any(m[:3] in ("<0>", "<1>", "<2>", "<3>")
                   for m in res.get("msgs", []))
    post = [p for p in xcheck.check(path)
            if not (reported and "(leak)" in p)]
    if not post:
        return []
    return [f"clean for xcheck.py before, not after the driver changed it"
            f"{' (corruption reported)' if reported else ''}: "
            + "; ".join(post[:3])]


def _account(job, res, summ, problems, control):
    """Add one child's result to summ; return a one-word verdict."""
    ro, rw = res.get("ro", {}), res.get("rw", {})
    if ro.get("errno"):
        reasons = ro.get("reason", [])
        if not control:
            summ.refused[f"{ro['errno']}: " + (
                norm_reason(reasons[0]) if reasons else
                "(no reason line)")] += 1
        if not reasons:
            problems.append(f"mount refused ({ro['errno']}) without a "
                            f"reason line")
        elif len(reasons) > 1:
            problems.append(f"mount refused ({ro['errno']}) with "
                            f"{len(reasons)} error lines: {reasons}")
        if control:
            problems.append("unmodified image refused")
        return f"refused {ro['errno']}: " + (reasons[0] if reasons else
                                             "NO REASON LINE")
    if rw.get("errno"):
        reasons = rw.get("reason", [])
        if not control:
            summ.rw_refused[f"{rw['errno']}: " + (
                norm_reason(reasons[0]) if reasons else
                "(no reason line)")] += 1
        if len(reasons) != 1:
            problems.append(f"read-write mount refused ({rw['errno']}) "
                            f"with {len(reasons)} error lines: {reasons}")
    again = res.get("again", {})
    if again.get("errno"):
        reasons = again.get("reason", [])
        if not control:
            summ.again_refused[f"{again['errno']}: " + (
                norm_reason(reasons[0]) if reasons else
                "(no reason line)")] += 1
        problems.append(f"the driver cannot mount the volume after its "
                        f"own read-write session ({again['errno']}): "
                        f"{reasons}")
    for k in ("umount_ro", "umount_rw", "umount_again"):
        if res.get(k):
            problems.append(f"{k} failed: {res[k]}")
    by_op = collections.Counter(res.get("by_op", {}))
    if control:
        for k in by_op:
            summ.baseline[k] += 1
        verdict = "ok" if not by_op else \
            "errors " + ", ".join(f"{k} {v}" for k, v in by_op.items())
        if by_op:
            problems.append(f"operations failed on the unmodified image: "
                            f"{verdict}")
        summ.controls.append((job.label.split(":", 1)[1], verdict))
        return verdict
    errs = collections.Counter()
    for k, v in list(by_op.items()):
        if k in summ.baseline:
            del by_op[k]
        else:
            errs[k.rsplit(":", 1)[1]] += v
    for k, v in res.get("errs", {}).items():   # counted without an op name
        errs[k] += v - sum(n for o, n in res.get("by_op", {}).items()
                           if o.rsplit(":", 1)[1] == k)
    errs = +errs
    summ.errs.update(errs)
    summ.by_op.update(by_op)
    for m in set(norm_reason(m) for m in res.get("msgs", [])):
        summ.msgs[m] += 1
    for k, v in res.get("notes", {}).items():
        summ.notes[k] += v
        summ.note_seeds[k].append(job.label)
    if errs:
        summ.with_errors += 1
        verdict = "errors " + ",".join(f"{k}:{v}" for k, v in
                                       sorted(errs.items()))
    else:
        summ.ok += 1
        verdict = "ok"
    if rw.get("errno"):
        verdict += f" (rw refused {rw['errno']})"
    return verdict


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--count", type=int, default=100)
    ap.add_argument("--start", type=int, default=1)
    ap.add_argument("--seeds", help="explicit seeds: 1-20,33 (overrides "
                    "--count/--start)")
    ap.add_argument("--timeout", type=float, default=60,
                    help="seconds per image (default 60)")
    ap.add_argument("--driver", choices=sorted(PREFIX), default="ours")
    ap.add_argument("--max-time", type=float, metavar="SECONDS",
                    help="start no new image after that long (the batch "
                    "then ends with fewer images, reported as usual)")
    ap.add_argument("--no-controls", action="store_true",
                    help="do not run the unmodified bases first")
    ap.add_argument("--keep", help="results directory (default "
                    "$EXFAT2_OUT/fuzz)")
    ap.add_argument("-q", "--quiet", action="store_true",
                    help="do not list the images that mounted fine")
    ap.add_argument("--files", nargs="+", metavar="IMAGE",
                    help="use these image files instead of corrupt.py's "
                    "seeds (strict: clean for xcheck.py before the "
                    "read-write session means clean after it)")
    a = ap.parse_args(argv)
    seeds = corrupt.parse_seeds(a.seeds) if a.seeds else \
        range(a.start, a.start + a.count)
    keep = a.keep or os.path.join(os.environ.get("EXFAT2_OUT", "/tmp"),
                                  "fuzz")

    def log(msg):
        if not (a.quiet and msg.startswith("seed ") and " ok |" in msg):
            print(msg, flush=True)

    if a.files:
        s = run_files(a.files, driver=a.driver, timeout=a.timeout, log=log,
                      keep=keep)
    else:
        s = run_batch(seeds, driver=a.driver, timeout=a.timeout, log=log,
                      keep=keep, controls=not a.no_controls,
                      max_time=a.max_time)
    if os.path.exists(lib.KMEMLEAK):
        leaks = lib.kmemleak_report()
        if leaks:
            with open(os.path.join(keep, "kmemleak.txt"), "w") as f:
                f.write(leaks + "\n")
            s.problem("-", "kmemleak: unreferenced objects (kmemleak.txt): "
                      + leaks.splitlines()[0])
        s.kmemleak = ("disabled" if leaks is None else
                      "leaks found" if leaks else "no leaks")
        with open(os.path.join(keep, "summary.txt"), "w") as f:
            f.write(s.text() + "\n")
    print(s.text(), flush=True)
    print(f"fuzz: results in {keep}", flush=True)
    return 1 if s.problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

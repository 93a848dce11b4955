# SPDX-License-Identifier: GPL-2.0
"""In-guest test library for exfat2.  Runs as root inside the test VM only.

A test is a function in tests/cases/test_<module>.py, named
"<module>:<function>" (e.g. test_smoke.py: def mkfs_mount -> smoke:mkfs_mount):

    from lib import test, sh, Image, mount, assert_eq

    @test(timeout=120, writes=True)
    def create_file():
        with Image(size_mb=64) as img, mount(img.dev) as mnt:
            sh(f"echo hi > {mnt}/a")
            assert_eq(open(f"{mnt}/a").read(), "hi\\n", "content")

Each test runs in its own forked process (own process group) with its own
timeout.  A test fails if it raises (TestFailure or anything else), times
out, leaves mounts, loop or dm devices behind (the runner removes them), or
if the kernel logs a splat (WARNING, BUG, Oops, lockdep, hung task, ...)
while it runs.  Its output and kernel messages go to logs/<name>.log in the
run's output directory.

API
  test(timeout=120, writes=True, expect=None)
        decorator registering a test.  writes=True: every Image the test
        creates is checked with fsck_clean() (fsck.exfat -n and the
        strict checker xcheck.py) when its `with` block ends
        normally.  expect='timeout'|'splat'|'leak'|'fail:TEXT' is for
        harness self-tests only: the test passes iff the harness fails it
        for that reason alone ('leak': something left behind, such as a
        mount; 'fail:TEXT': the test raised, with TEXT in its reason;
        'fail+splat:TEXT': both, and nothing else).
  TestFailure
        exception meaning "the test failed"; its text is the reason.
  sh(cmd, check=True, input=None, timeout=None) -> CompletedProcess
        run a shell command (input: str for its stdin), capture stdout and
        stderr as str; raise TestFailure (with the output) on a non-zero
        exit when check, or when it runs longer than timeout seconds.
  Image(size_mb=64, cluster=None, sector=512, label=None, mkfs=True,
        fsck=None, stale=None)
        context manager: file under /tmp on a loop device
        (sector=4096 -> 4 KiB logical sectors), mkfs.exfat'ed unless
        mkfs=False (cluster: bytes or "32K", passed to mkfs.exfat -c;
        label: -L); with stale (default: mkfs and size_mb <= 128) the
        file is first filled with a non-zero pattern, so that every free
        cluster holds stale data, else it is sparse; attributes .dev,
        .path.  On exit: unmounts what is
        mounted from .dev, fsck_clean() if fsck (default: the test's
        writes flag) and the block exited normally, detaches and deletes.
  use_driver(which)
        make 'ours' (exfat2/exfat2.ko) or 'intree' (exfat.ko) the only
        loaded exFAT driver; both register file system type "exfat".
  mount(dev, mnt='/mnt/t', opts='', driver='ours')
        context manager: use_driver(driver) (driver=None: keep whatever is
        loaded), mount -t exfat -o opts, yield mnt; unmount on exit (an
        unmount failure fails the test).
  umount(mnt)
        unmount, raising TestFailure on failure.
  fsck_clean(dev)
        fsck.exfat -n must report a clean volume, the boot sector's
        VolumeDirty flag must be clear, and xcheck_clean(dev); raise
        TestFailure with the output.
  xcheck_clean(dev)
        the strict checker tests/guest/xcheck.py must find nothing: bitmap
        against chains (leaks, lost and shared clusters), chain lengths,
        SetChecksum, NameHash, names equal through the up-case table,
        directory ValidDataLength, boot region checksums and backup.
  assert_eq(a, b, msg=''), assert_true(cond, msg=''), fail(msg)
        raise TestFailure with a readable message.
  expect_errno(err, fn, *args, **kwargs)
        call fn and require it to raise OSError with errno == err;
        returns the exception.
  log(msg)
        print msg to the test's log and into the kernel log (dmesg).
  dmesg_this_test()
        the kernel log since the test began, to look for a message in.
  note(text)
        show text on the test's PASS line in the results.
  name_to_handle(path), open_by_handle(mnt, handle, flags=O_RDONLY)
        the file handle syscalls (NFS export).
  fork_on_go(func, cpu=None)
        run func in a child process (pinned to cpu if given) once the
        returned go() is called; returns (pid, go).  The child exits 0
        when func returns, 1 when it raises.
  REPO, OUT, OURS_KO
        repo path, output directory, path of our module ($EXFAT2_KO if
        set, for other kernels than the packaged one).
"""

import collections
import errno as _errno
import os
import random
import re
import subprocess

REPO = os.environ.get("EXFAT2_REPO",
                      os.path.dirname(os.path.dirname(os.path.dirname(
                          os.path.abspath(__file__)))))
OUT = os.environ.get("EXFAT2_OUT", "/tmp")
OURS_KO = os.environ.get("EXFAT2_KO") or os.path.join(REPO, "exfat2",
                                                     "exfat2.ko")

# Name of each driver in /proc/modules.
_MODNAME = {"ours": "exfat2", "intree": "exfat"}


class TestFailure(Exception):
    """Raised to fail a test; str(e) is the reason shown."""


class Test:
    def __init__(self, func, name, timeout, writes, expect):
        self.func = func
        self.name = name
        self.timeout = timeout
        self.writes = writes
        self.expect = expect


REGISTRY = []       # filled by @test, read by runner.py
current = None      # the Test running in this process (set by runner.py)


def test(timeout=120, writes=True, expect=None):
    """Register the decorated function as a test (see module doc)."""
    if expect not in (None, "timeout", "splat", "leak") and \
            not (expect or "").startswith(("fail:", "fail+splat:")):
        raise ValueError("expect must be None, 'timeout', 'splat', 'leak', "
                         "'fail:TEXT' or 'fail+splat:TEXT'")

    def deco(func):
        mod = func.__module__.rsplit(".", 1)[-1]
        if mod.startswith("test_"):
            mod = mod[len("test_"):]
        name = f"{mod}:{func.__name__}"
        if any(t.name == name for t in REGISTRY):
            raise ValueError(f"duplicate test name {name}")
        REGISTRY.append(Test(func, name, timeout, writes, expect))
        return func
    return deco


def note(text):
    """Show text on the test's PASS line (e.g. a count of soft findings)."""
    path = getattr(current, "notepath", None)
    if path:
        with open(path, "a") as f:
            f.write(text.replace("\n", " ") + "\n")


def log(msg):
    """Print msg and write it to the kernel log, to correlate with dmesg."""
    print(msg, flush=True)
    try:
        with open("/dev/kmsg", "w") as k:
            k.write(f"<5>exfat2-test: {msg}\n")
    except OSError:
        pass


def dmesg_this_test():
    """The kernel log since this test began (the runner's "begin NAME"
    line): what a test greps for a driver message, so that a message of
    an earlier test cannot satisfy it.  "" if the line is gone."""
    out = sh("dmesg").stdout
    i = out.rfind(f"exfat2-test: begin {current.name}\n") if current \
        else -1
    return out[i:] if i >= 0 else ""


def fail(msg):
    raise TestFailure(msg)


def assert_eq(a, b, msg=""):
    if a != b:
        raise TestFailure(f"{msg + ': ' if msg else ''}{a!r} != {b!r}")


def assert_true(cond, msg=""):
    if not cond:
        raise TestFailure(msg or "assertion failed")


def expect_errno(err, fn, *args, **kwargs):
    """Call fn(*args, **kwargs); it must raise OSError with errno err."""
    try:
        ret = fn(*args, **kwargs)
    except OSError as e:
        if e.errno != err:
            raise TestFailure(
                f"{getattr(fn, '__name__', fn)}: expected "
                f"{_errno.errorcode.get(err, err)}, got "
                f"{_errno.errorcode.get(e.errno, e.errno)} ({e})") from None
        return e
    raise TestFailure(f"{getattr(fn, '__name__', fn)}: expected "
                      f"{_errno.errorcode.get(err, err)}, but it returned "
                      f"{ret!r}")


def sh(cmd, check=True, input=None, timeout=None):
    """Run cmd with /bin/sh; return CompletedProcess (text stdout/stderr)."""
    try:
        p = subprocess.run(cmd, shell=True, input=input, capture_output=True,
                           encoding="utf-8", errors="replace",
                           timeout=timeout)
    except subprocess.TimeoutExpired:
        raise TestFailure(f"command timed out after {timeout}s: {cmd}") \
            from None
    if check and p.returncode != 0:
        out = (p.stdout + p.stderr).strip()
        raise TestFailure(f"command failed (exit {p.returncode}): {cmd}"
                          + (f"\n{out}" if out else ""))
    return p


def _loaded(modname):
    with open("/proc/modules") as f:
        return any(line.split(" ", 1)[0] == modname for line in f)


def _dmesg_tail(n=5):
    p = sh("dmesg | tail -n %d" % n, check=False)
    return p.stdout.strip()


def use_driver(which):
    """Make sure only the `which` ('ours' or 'intree') exFAT driver is loaded."""
    if which not in _MODNAME:
        raise ValueError("driver must be 'ours' or 'intree'")
    other = _MODNAME["intree" if which == "ours" else "ours"]
    if _loaded(other):
        p = sh(f"rmmod {other}", check=False)
        if p.returncode != 0:
            raise TestFailure(f"cannot unload {other}: {p.stderr.strip()}")
    if _loaded(_MODNAME[which]):
        return
    if which == "ours":
        if not os.path.exists(OURS_KO):
            raise TestFailure(f"{OURS_KO} does not exist (build it: make)")
        p = sh(f"insmod {OURS_KO}", check=False)
    else:
        p = sh("modprobe exfat", check=False)
    if p.returncode != 0:
        raise TestFailure(f"cannot load the {which} exFAT driver: "
                          f"{p.stderr.strip()}\n{_dmesg_tail()}")


def _mounted(target):
    """Mount points whose source or mount point is `target`."""
    with open("/proc/mounts") as f:
        rows = [line.split()[:2] for line in f]
    return [mnt for src, mnt in rows if target in (src, mnt)]


def umount(mnt):
    p = sh(f"umount {mnt}", check=False)
    if p.returncode != 0:
        raise TestFailure(f"umount {mnt} failed: {p.stderr.strip()}\n"
                          f"{sh(f'fuser -vm {mnt} 2>&1', check=False).stdout}")


class mount:
    """with mount(dev, mnt, opts, driver) as mnt: ... (see module doc)."""

    def __init__(self, dev, mnt="/mnt/t", opts="", driver="ours"):
        self.dev, self.mnt, self.opts, self.driver = dev, mnt, opts, driver

    def __enter__(self):
        if self.driver:
            use_driver(self.driver)
        os.makedirs(self.mnt, exist_ok=True)
        o = f"-o {self.opts} " if self.opts else ""
        p = sh(f"mount -t exfat {o}{self.dev} {self.mnt}", check=False)
        if p.returncode != 0:
            raise TestFailure(f"mount {self.dev} ({self.driver}) failed: "
                              f"{p.stderr.strip()}\n{_dmesg_tail()}")
        return self.mnt

    def __exit__(self, etype, e, tb):
        if self.mnt in _mounted(self.mnt):
            if etype is None:
                umount(self.mnt)
            else:
                sh(f"umount {self.mnt} || umount -l {self.mnt}", check=False)
        return False


def fsck_clean(dev):
    """Require fsck.exfat -n to find dev clean and VolumeDirty to be clear."""
    p = sh(f"fsck.exfat -n {dev}", check=False)
    out = (p.stdout + p.stderr).strip()
    if p.returncode != 0:
        raise TestFailure(f"fsck.exfat -n {dev}: exit {p.returncode}\n{out}")
    with open(dev, "rb") as f:
        boot = f.read(512)
    flags = int.from_bytes(boot[106:108], "little")
    if boot[3:11] == b"EXFAT   " and flags & 2:
        raise TestFailure(f"{dev}: VolumeDirty still set after unmount\n{out}")
    xcheck_clean(dev)


def xcheck_clean(dev):
    """Require the strict checker (tests/guest/xcheck.py) to find dev
    clean."""
    import xcheck
    problems = xcheck.check(dev)
    if problems:
        more = f"\n... {len(problems) - 20} more" if len(problems) > 20 else ""
        raise TestFailure(f"xcheck.py {dev}:\n" + "\n".join(problems[:20]) +
                          more)


# Images up to this size hold stale data in every free cluster: the image
# is filled with a non-zero pattern before mkfs.exfat (which writes only
# its metadata), as if every cluster had held a deleted file.  A "reads
# as zero" check then fails if the driver shows what is on the disk.
STALE_MAX_MB = 128


def _fill_stale(fd, size_mb):
    block = bytearray(random.Random(size_mb).randbytes(1 << 20))
    for i in range(size_mb):
        block[:8] = (i | 0x5A5A << 48).to_bytes(8, "little")
        os.pwrite(fd, block, i << 20)


class Image:
    """with Image(size_mb, cluster, sector, label, mkfs, fsck, stale) as
    img: ..."""

    def __init__(self, size_mb=64, cluster=None, sector=512, label=None,
                 mkfs=True, fsck=None, stale=None):
        self.size_mb, self.cluster, self.sector = size_mb, cluster, sector
        self.label, self.do_mkfs = label, mkfs
        self.fsck = fsck
        self.stale = stale if stale is not None else (
            mkfs and size_mb <= STALE_MAX_MB)
        self.path = self.dev = None

    def __enter__(self):
        fd, self.path = _mkstemp()
        os.ftruncate(fd, self.size_mb << 20)
        if self.stale:
            _fill_stale(fd, self.size_mb)
        os.close(fd)
        ss = f"--sector-size {self.sector} " if self.sector != 512 else ""
        self.dev = sh(f"losetup -f --show {ss}{self.path}").stdout.strip()
        if self.do_mkfs:
            opts = ""
            if self.cluster:
                opts += f" -c {self.cluster}"
            if self.label is not None:
                opts += f" -L '{self.label}'"
            try:
                sh(f"mkfs.exfat{opts} {self.dev}")
            except BaseException:
                self._release()
                raise
        return self

    def __exit__(self, etype, e, tb):
        try:
            for mnt in _mounted(self.dev):
                if etype is None:
                    umount(mnt)
                else:
                    sh(f"umount {mnt} || umount -l {mnt}", check=False)
            want = self.fsck if self.fsck is not None else (
                current.writes if current else False)
            if etype is None and want:
                fsck_clean(self.dev)
        finally:
            self._release()
        return False

    def _release(self):
        if self.dev:
            sh(f"losetup -d {self.dev}", check=False)
        if self.path and os.path.exists(self.path):
            os.unlink(self.path)


# Kernel messages that mean a splat and fail a test.  Keep in sync with
# SPLAT_RE in tools/vm/vm.sh.
SPLAT_RE = re.compile(
    r"BUG:|WARNING:|Oops|general protection fault|KASAN:|UBSAN:|KFENCE:"
    r"|kernel BUG|possible circular locking|possible recursive locking"
    r"|inconsistent lock state|lockdep|DEBUG_LOCKS_WARN_ON"
    r"|INFO: task .* blocked for more than|soft lockup|hard LOCKUP"
    r"|rcu_sched self-detected stall|rcu: INFO:"
    r"|kmemleak:.*(unreferenced object|suspected memory leak)"
    r"|unreferenced object 0x|Kernel panic|Call Trace:")

KmsgRecord = collections.namedtuple("KmsgRecord", "level facility ts text")


class Kmsg:
    """Reads the kernel log records that arrive after it is made."""

    def __init__(self):
        self.fd = os.open("/dev/kmsg", os.O_RDONLY | os.O_NONBLOCK)
        os.lseek(self.fd, 0, os.SEEK_END)

    def read(self):
        """[KmsgRecord] of the records since the last call."""
        recs = []
        while True:
            try:
                data = os.read(self.fd, 16384)
            except BlockingIOError:
                return recs
            except BrokenPipeError:
                recs.append(KmsgRecord(0, 0, 0.0,
                                       "[kernel log records were lost]"))
                continue
            head, _, rest = data.decode("utf-8", "replace").partition(";")
            fields = head.split(",")
            pri = int(fields[0])
            recs.append(KmsgRecord(pri & 7, pri >> 3, int(fields[2]) / 1e6,
                                   rest.split("\n", 1)[0]))

    def close(self):
        os.close(self.fd)


KMEMLEAK = "/sys/kernel/debug/kmemleak"


def kmemleak_built_in():
    """Whether the running kernel has kmemleak compiled in (enabled or
    not): its functions are in /proc/kallsyms."""
    try:
        with open("/proc/kallsyms") as f:
            return any(line.rstrip().endswith(" kmemleak_alloc")
                       for line in f)
    except OSError:
        return False


def kmemleak_report():
    """On a kernel with kmemleak: scan (twice, since objects younger than
    ~5 s are not reported yet) and return what it reports ("" if
    nothing); None when kmemleak is absent or disabled."""
    import time
    for _ in range(2):
        time.sleep(5)
        try:
            with open(KMEMLEAK, "w") as f:
                f.write("scan")
        except OSError:
            return None
    with open(KMEMLEAK) as f:
        return f.read().strip()


def kmemleak_check(keep="kmemleak.txt"):
    """Fail if kmemleak reports an unreferenced object (kept in OUT/keep)
    or is built in but switched off."""
    leaks = kmemleak_report()
    if leaks is None:
        fail("kmemleak is built into this kernel but disabled (or its "
             "file unusable): leaks cannot be checked")
    if leaks:
        with open(os.path.join(OUT, keep), "w") as f:
            f.write(leaks + "\n")
        fail(f"kmemleak: unreferenced objects ({keep}):\n{leaks[:3000]}")


def name_to_handle(path):
    """name_to_handle_at(2): the file handle of path, as a buffer
    (struct file_handle: handle_bytes, handle_type, then f_handle at 8)."""
    import ctypes
    import struct
    libc = ctypes.CDLL(None, use_errno=True)
    buf = ctypes.create_string_buffer(8 + 128)
    struct.pack_into("Ii", buf, 0, 128, 0)
    mount_id = ctypes.c_int()
    if libc.syscall(303, -100, path.encode(), buf, ctypes.byref(mount_id),
                    0) != 0:
        e = ctypes.get_errno()
        raise OSError(e, os.strerror(e))
    return buf


def open_by_handle(mnt, handle, flags=os.O_RDONLY):
    """open_by_handle_at(2) on the mount at mnt; returns the fd."""
    import ctypes
    libc = ctypes.CDLL(None, use_errno=True)
    mfd = os.open(mnt, os.O_RDONLY | os.O_DIRECTORY)
    try:
        fd = libc.syscall(304, mfd, handle, flags)
        if fd < 0:
            e = ctypes.get_errno()
            raise OSError(e, os.strerror(e))
        return fd
    finally:
        os.close(mfd)


def read_by_handle(mnt, h):
    """The contents (up to 1 MiB) of the file of handle h on mnt."""
    fd = open_by_handle(mnt, h)
    try:
        return os.read(fd, 1 << 20)
    finally:
        os.close(fd)


def fork_on_go(func, cpu=None):
    """Run func in a child once go() is called; return (pid, go)."""
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            os.close(w)
            if cpu is not None:
                os.sched_setaffinity(0, {cpu})
            os.read(r, 1)
            func()
            code = 0
        finally:
            os._exit(code)
    os.close(r)

    def go():
        os.write(w, b"x")
        os.close(w)
    return pid, go


def _mkstemp():
    d = "/tmp/exfat2-images"
    os.makedirs(d, exist_ok=True)
    i = 0
    while True:
        path = f"{d}/img{os.getpid()}-{i}.img"
        try:
            return os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o600), \
                path
        except FileExistsError:
            i += 1

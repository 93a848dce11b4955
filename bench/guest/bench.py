#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""exfat2 benchmarks, run inside the VM by bench/run-bench.sh (never on a host).

Usage: bench.py --disk SERIAL --big SERIAL --ko PATH --src TAR --out DIR
                [--quick] [--only GROUP,...] [--profile GROUP,...] [--reps N]

Contenders on one virtio disk (a file in the host's /dev/shm): "ours"
(exfat2.ko), "intree" (the kernel's exfat.ko, swapped with lib.use_driver in
this same boot), "ext4" as a reference and "raw" (the block device itself)
for device-level workloads.  Each group of workloads runs for every
contender in turn, on a freshly made file system, and the whole round is
repeated; the order of the contenders rotates from one round to the next so
that drift in the (TCG, shared-host) VM's speed spreads over all of them.

Every measurement is one JSON line in DIR/results.jsonl:
  {"group", "metric", "unit", "better": "higher"|"lower", "contender",
   "rep", "value"}
and every failure (an exception, a non-clean fsck.exfat, a kernel splat, a
hang) one line with "failure": {...}.  Each group runs in a forked child
with a timeout, so a hung file system ends the run with a record instead of
blocking it silently.  bench/report.py turns the file into tables and plots.
"""

import argparse
import ctypes
import json
import os
import re
import signal
import statistics
import struct
import subprocess
import sys
import time

REPO = os.environ.get("EXFAT2_REPO") or os.path.dirname(os.path.dirname(
    os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(REPO, "tests", "guest"))
import lib  # noqa: E402  (use_driver, the harness' driver swap)

MNT = "/mnt/bench"
BIGMNT = "/mnt/big"
EXFAT = ("ours", "intree")

# Sizes.  The full run is scaled to finish in about 25 minutes under TCG.
CONFIGS = {
    # reps: rounds of every group (meta_reps overrides per N).  Metadata
    # for N <= meta_full_max creates, stats and unlinks all N files through
    # the driver; beyond that (an exFAT directory has no index, so N
    # creates cost O(N^2): 50k would take hours under TCG) the directory
    # is written straight onto the volume and meta_sample of its files are
    # stat'ed and unlinked, meta_more created (see g_meta_big).
    "full": dict(reps=3, seq_mb=192, rand_mb=128, rand_rt=2, fsync_n=500,
                 conc_mb=96, meta_n=(1000, 10000, 50000), meta_full_max=10000,
                 meta_reps={10000: 1, 50000: 1}, meta_sample=500,
                 meta_more=200, tree="fs1k", mount_reps=5,
                 mount_files=20000, mount_root_files=5000, frag_mb=8),
    "quick": dict(reps=1, seq_mb=64, rand_mb=32, rand_rt=1, fsync_n=100,
                  conc_mb=32, meta_n=(1000, 10000), meta_full_max=1000,
                  meta_reps={}, meta_sample=100, meta_more=50, tree="small",
                  mount_reps=2, mount_files=1000, mount_root_files=250,
                  frag_mb=4),
}

SPLAT_RE = re.compile(
    r"BUG:|WARNING:|Oops|general protection fault|KASAN:|UBSAN:|KFENCE:|"
    r"kernel BUG|possible circular locking|possible recursive locking|"
    r"inconsistent lock state|blocked for more than|soft lockup|"
    r"hard LOCKUP|rcu_sched self-detected stall|rcu: INFO:|Call Trace:|"
    r"Kernel panic")

ARGS = None
CFG = None
RESULTS = None
DEV = None        # main benchmark disk, /dev/vdX
BIGDEV = None     # 512 GiB sparse disk for mount times
CURRENT = {}      # group/contender/rep of the running child, for records


class Hang(Exception):
    pass


# ---------------------------------------------------------------- helpers

T0 = time.monotonic()


def log(msg):
    lib.log(f"bench: [{time.monotonic() - T0:6.0f}s] {msg}")


def sh(cmd, timeout=None, check=True):
    p = subprocess.run(cmd, shell=True, capture_output=True, text=True,
                       errors="replace", timeout=timeout)
    if check and p.returncode:
        raise RuntimeError(f"command failed (exit {p.returncode}): {cmd}\n"
                           f"{(p.stdout + p.stderr).strip()[-3000:]}")
    return p


def record(**kw):
    line = json.dumps(kw, sort_keys=True) + "\n"
    fd = os.open(RESULTS, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, line.encode())
    finally:
        os.close(fd)


def emit(metric, unit, better, value, **extra):
    """One measurement of the running group/contender/rep."""
    record(group=CURRENT["group"], contender=CURRENT["contender"],
           rep=CURRENT["rep"], metric=metric, unit=unit, better=better,
           value=value, **extra)
    log(f"{CURRENT['group']} {CURRENT['contender']} rep{CURRENT['rep']}: "
        f"{metric} = {value:.4g} {unit}")


def fail(kind, text, **extra):
    record(failure=dict(kind=kind, text=text, **CURRENT, **extra))
    log(f"FAILURE ({kind}) {CURRENT}: {text.splitlines()[0] if text else ''}")


def drop_caches():
    os.sync()
    with open("/proc/sys/vm/drop_caches", "w") as f:
        f.write("3\n")


def mounted(mnt):
    with open("/proc/mounts") as f:
        return any(line.split()[1] == mnt for line in f)


def umount(mnt):
    if mounted(mnt):
        sh(f"umount {mnt}", timeout=600)


def fstype(contender):
    return "ext4" if contender == "ext4" else "exfat"


def mkfs(contender, dev):
    if contender in EXFAT:
        sh(f"mkfs.exfat {dev}", timeout=600)
    elif contender == "ext4":
        # Lazy inode table and journal init (fast mkfs), and every mount
        # with noinit_itable: no background zeroing during measurements.
        sh(f"mkfs.ext4 -F -q -E lazy_itable_init=1,lazy_journal_init=1,"
           f"nodiscard {dev}", timeout=600)


def mount(contender, dev, mnt, opts=""):
    if contender in EXFAT:
        lib.use_driver(contender)
    if contender == "ext4":
        opts = ",".join(x for x in (opts, "noinit_itable") if x)
    os.makedirs(mnt, exist_ok=True)
    o = f"-o {opts} " if opts else ""
    sh(f"mount -t {fstype(contender)} {o}{dev} {mnt}", timeout=600)


def remount_cold(contender, dev=None, mnt=MNT):
    """Unmount, drop every cache, mount again: the next access is cold."""
    dev = dev or DEV
    umount(mnt)
    drop_caches()
    mount(contender, dev, mnt)


def fresh(contender):
    """A new file system on the main disk, mounted at MNT; returns MNT."""
    umount(MNT)
    mkfs(contender, DEV)
    drop_caches()
    mount(contender, DEV, MNT)
    return MNT


def finish(contender, dev=None, mnt=MNT):
    """Unmount; an exFAT volume must then pass fsck.exfat -n."""
    dev = dev or DEV
    umount(mnt)
    if contender in EXFAT:
        p = sh(f"fsck.exfat -n {dev}", timeout=1200, check=False)
        if p.returncode:
            fail("fsck", f"fsck.exfat -n {dev}: exit {p.returncode}\n"
                 + (p.stdout + p.stderr)[-4000:])


def timed(fn, *a, **kw):
    t0 = time.perf_counter()
    r = fn(*a, **kw)
    return time.perf_counter() - t0, r


def percentile(vals, q):
    s = sorted(vals)
    k = (len(s) - 1) * q
    lo = int(k)
    hi = min(lo + 1, len(s) - 1)
    return s[lo] + (s[hi] - s[lo]) * (k - lo)


class profiled:
    """perf record -a around a step when --profile names its group."""

    def __init__(self, tag):
        self.tag = tag
        self.proc = None

    def __enter__(self):
        g = CURRENT.get("group")
        if g not in ARGS.profile:
            return self
        base = f"{ARGS.out}/perf/{g}-{self.tag}-{CURRENT['contender']}-r{CURRENT['rep']}"
        os.makedirs(os.path.dirname(base), exist_ok=True)
        self.base = base
        self.proc = subprocess.Popen(
            ["perf", "record", "-q", "-a", "-g", "-e", "cpu-clock", "-F",
             "499", "-o", base + ".data"],
            stdout=subprocess.DEVNULL, stderr=open(base + ".err", "w"))
        time.sleep(3.0)         # perf's start-up is slow under TCG
        return self

    def __exit__(self, *exc):
        if not self.proc:
            return False
        self.proc.send_signal(signal.SIGINT)
        self.proc.wait(timeout=120)
        ksyms = f"{ARGS.out}/perf/kallsyms"
        if not os.path.exists(ksyms):
            # perf report runs on the host (bench/run-bench.sh): much
            # faster than under TCG; it needs the guest's symbols
            sh(f"cat /proc/kallsyms > {ksyms}")
        return False


# ---------------------------------------------------------------- fio

def fio(name, args, timeout=900):
    """Run one fio job; return its (group-reported) JSON job entry."""
    return fio_jobs(name, [(name, args)], timeout)[name]


def fio_jobs(tag, jobs, timeout=900):
    """Run several fio jobs one after the other in ONE fio process (each
    job a stonewall; fio's start-up costs seconds under TCG); returns
    {job name: JSON job entry}."""
    out = f"/tmp/fio-{os.getpid()}.json"
    cmd = ["fio", "--output-format=json", f"--output={out}"]
    for name, args in jobs:
        cmd += [f"--name={name}", "--stonewall", "--group_reporting",
                "--randrepeat=1", "--fallocate=none"] + args
    with profiled(tag):
        p = subprocess.run(cmd, capture_output=True, text=True,
                           errors="replace", timeout=timeout)
    if p.returncode:
        raise RuntimeError(f"fio {tag} failed (exit {p.returncode}): "
                           f"{' '.join(cmd)}\n{(p.stdout + p.stderr)[-3000:]}"
                           + (open(out).read()[-2000:] if os.path.exists(out)
                              else ""))
    with open(out) as f:
        txt = f.read()
    os.unlink(out)
    # fio may print warnings before the JSON object
    data = json.loads(txt[txt.index("{"):])
    res = {}
    for job in data["jobs"]:
        if job.get("error"):
            raise RuntimeError(f"fio {job['jobname']}: error {job['error']}")
        res[job["jobname"]] = job
    missing = [n for n, _ in jobs if n not in res]
    if missing:
        raise RuntimeError(f"fio {tag}: no result for {missing}")
    return res


def mibps(job, ddir):
    return job[ddir]["bw_bytes"] / 1048576.0


# ---------------------------------------------------------------- exFAT on-disk

class ExfatImage:
    """Just enough exFAT to count the extents of files (after unmount)."""

    def __init__(self, dev):
        self.f = open(dev, "rb")
        b = self.f.read(512)
        if b[3:11] != b"EXFAT   ":
            raise RuntimeError(f"{dev}: not exFAT")
        self.sect = 1 << b[108]
        self.clu = self.sect << b[109]
        self.fat_off = struct.unpack_from("<I", b, 80)[0] * self.sect
        self.heap_off = struct.unpack_from("<I", b, 88)[0] * self.sect
        self.nclu = struct.unpack_from("<I", b, 92)[0]
        self.root = struct.unpack_from("<I", b, 96)[0]
        self.fat = None

    def _fat(self):
        if self.fat is None:
            self.f.seek(self.fat_off)
            self.fat = self.f.read((self.nclu + 2) * 4)
        return self.fat

    def chain(self, first, nofat, length):
        """Clusters of a stream as a list of (start, count) runs."""
        n = (length + self.clu - 1) // self.clu
        if first < 2 or n == 0:
            return []
        if nofat:
            return [(first, n)]
        fat = self._fat()
        runs, c = [], first
        for _ in range(n):
            if c < 2 or c >= self.nclu + 2:
                raise RuntimeError(f"bad FAT chain at cluster {c}")
            if runs and runs[-1][0] + runs[-1][1] == c:
                runs[-1] = (runs[-1][0], runs[-1][1] + 1)
            else:
                runs.append((c, 1))
            c = struct.unpack_from("<I", fat, c * 4)[0]
        return runs

    def read_runs(self, runs, limit):
        out = bytearray()
        for start, count in runs:
            self.f.seek(self.heap_off + (start - 2) * self.clu)
            out += self.f.read(count * self.clu)
        return bytes(out[:limit])

    def listdir(self, runs, size):
        """{lower-case name: (first cluster, nofat, length)}."""
        data = self.read_runs(runs, size)
        ents, i = {}, 0
        while i + 32 <= len(data):
            t = data[i]
            if t == 0:
                break
            if t == 0x85:
                sec = data[i + 1]
                s = data[i + 32:i + 64]
                flags, nlen = s[1], s[3]
                first = struct.unpack_from("<I", s, 20)[0]
                length = struct.unpack_from("<Q", s, 24)[0]
                name = b""
                for k in range(2, sec + 1):
                    e = data[i + 32 * k:i + 32 * (k + 1)]
                    if e[0] == 0xC1:
                        name += e[2:32]
                name = name[:nlen * 2].decode("utf-16-le")
                ents[name.lower()] = (first, bool(flags & 2), length)
                i += 32 * (sec + 1)
            else:
                i += 32
        return ents

    def extents(self, path):
        """Number of physically contiguous runs of the file at path."""
        runs = self._root_runs()     # the root has no length: whole chain
        size = sum(c for _, c in runs) * self.clu
        parts = [p for p in path.strip("/").split("/") if p]
        for p in parts:
            ents = self.listdir(runs, size)
            first, nofat, length = ents[p.lower()]
            runs = self.chain(first, nofat, length)
            size = length
        return len(runs)

    def _root_runs(self):
        fat = self._fat()
        runs, c, seen = [], self.root, 0
        while 2 <= c < self.nclu + 2 and seen <= self.nclu:
            if runs and runs[-1][0] + runs[-1][1] == c:
                runs[-1] = (runs[-1][0], runs[-1][1] + 1)
            else:
                runs.append((c, 1))
            c = struct.unpack_from("<I", fat, c * 4)[0]
            seen += 1
        return runs

    def close(self):
        self.f.close()


def extent_counts(contender, names):
    """Extents of MNT/name for each name; leaves MNT unmounted."""
    if contender in EXFAT:
        umount(MNT)
        img = ExfatImage(DEV)
        try:
            return [img.extents(n) for n in names]
        finally:
            img.close()
    out = []
    for n in names:
        p = sh(f"filefrag {MNT}/{n}")
        out.append(int(re.search(r"(\d+) extents? found", p.stdout).group(1)))
    umount(MNT)
    return out


# ---------------------------------------------------------------- groups

def g_seq(c):
    """Sequential 1 MiB I/O on one large file: buffered (+fsync at the
    end; the read after fio's cache invalidation of the file), O_DIRECT."""
    mb = CFG["seq_mb"]
    base = ["--bs=1m", f"--size={mb}m", "--ioengine=psync"]
    if c == "raw":
        f_buf, f_dio = [f"--filename={DEV}"], [f"--filename={DEV}",
                                               f"--offset={mb}m"]
    else:
        fresh(c)
        f_buf, f_dio = [f"--filename={MNT}/seq.buf"], \
            [f"--filename={MNT}/seq.dio"]
    jobs = [("wbuf", base + f_buf + ["--rw=write", "--end_fsync=1"]),
            ("rbuf", base + f_buf + ["--rw=read", "--invalidate=1"]),
            ("wdio", base + f_dio + ["--rw=write", "--direct=1"]),
            ("rdio", base + f_dio + ["--rw=read", "--direct=1"])]
    r = fio_jobs("seq", jobs)
    emit("seq write buffered 1M +fsync", "MiB/s", "higher",
         mibps(r["wbuf"], "write"))
    emit("seq read buffered 1M (cold)", "MiB/s", "higher",
         mibps(r["rbuf"], "read"))
    emit("seq write O_DIRECT 1M", "MiB/s", "higher", mibps(r["wdio"], "write"))
    emit("seq read O_DIRECT 1M", "MiB/s", "higher", mibps(r["rdio"], "read"))
    if c != "raw":
        finish(c)


def g_rand(c):
    """Random 4 KiB O_DIRECT I/O (libaio) in a preallocated, written file."""
    size = f"{CFG['rand_mb']}m"
    if c == "raw":
        fn = DEV
    else:
        fresh(c)
        fn = f"{MNT}/rand"
        # Preallocate by writing it: exFAT has no unwritten extents, so a
        # fallocated file would be zero-filled on the first random write.
        fio("layout", [f"--filename={fn}", f"--size={size}", "--bs=1m",
                       "--rw=write", "--end_fsync=1"])
        remount_cold(c)
    common = [f"--filename={fn}", f"--size={size}", "--bs=4k", "--direct=1",
              "--ioengine=libaio", "--norandommap", "--time_based",
              f"--runtime={CFG['rand_rt']}", "--ramp_time=1"]
    jobs = [(f"{rw}{qd}", common + [f"--rw={rw}", f"--iodepth={qd}"])
            for rw in ("randread", "randwrite") for qd in (1, 16)]
    # libaio write completions go through a workqueue in iomap (ours and
    # ext4) but complete in the interrupt in the in-tree driver's
    # direct-io.c; io_uring lets iomap complete in the submitter instead.
    jobs.append(("randwrite16u",
                 [a.replace("libaio", "io_uring") for a in common]
                 + ["--rw=randwrite", "--iodepth=16"]))
    r = fio_jobs("rand", jobs)
    for rw in ("randread", "randwrite"):
        for qd in (1, 16):
            ddir = "read" if rw == "randread" else "write"
            emit(f"rand {ddir} 4K QD{qd}", "IOPS", "higher",
                 r[f"{rw}{qd}"][ddir]["iops"])
    emit("rand write 4K QD16 io_uring", "IOPS", "higher",
         r["randwrite16u"]["write"]["iops"])
    if c != "raw":
        finish(c)


def g_fsync(c):
    """Appending 4 KiB writes, each followed by fsync: latency."""
    n = CFG["fsync_n"]
    if c == "raw":
        fd = os.open(DEV, os.O_WRONLY)
    else:
        fresh(c)
        fd = os.open(f"{MNT}/log", os.O_WRONLY | os.O_CREAT | os.O_TRUNC,
                     0o644)
    buf = os.urandom(4096)
    lat = []
    with profiled("fsync"):
        t0 = time.perf_counter()
        for i in range(n):
            a = time.perf_counter_ns()
            os.pwrite(fd, buf, i * 4096)
            os.fsync(fd)
            lat.append((time.perf_counter_ns() - a) / 1000.0)
        total = time.perf_counter() - t0
    os.close(fd)
    emit("4K write+fsync rate", "ops/s", "higher", n / total)
    emit("4K write+fsync p50 latency", "us", "lower", statistics.median(lat))
    emit("4K write+fsync p99 latency", "us", "lower", percentile(lat, 0.99))
    if c != "raw":
        finish(c)


def g_conc(c):
    """1, 2 and 4 concurrent buffered writers, each its own file (one fio
    process, three rounds one after the other on the same fresh volume);
    then the extents of each file written by the 4 writers."""
    total = CFG["conc_mb"]
    fresh(c)
    jobs = [(f"w{n}", [f"--directory={MNT}", f"--numjobs={n}",
                       f"--size={total // n}m", "--bs=64k", "--ioengine=psync",
                       "--rw=write", "--end_fsync=1"]) for n in (1, 2, 4)]
    r = fio_jobs("conc", jobs)
    for n in (1, 2, 4):
        emit(f"{n} writer(s) 64K buffered, aggregate", "MiB/s", "higher",
             mibps(r[f"w{n}"], "write"))
    names = sorted(x for x in os.listdir(MNT) if x.startswith("w4."))
    ext = extent_counts(c, names)
    emit("extents per file after 4 concurrent writers (mean)", "extents",
         "lower", statistics.mean(ext), per_file=ext, file_mb=total // 4)
    finish(c)


def g_meta(c, n):
    """create / cold readdir / cold stat / unlink of n files in one dir."""
    fresh(c)
    d = f"{MNT}/d"
    os.mkdir(d)
    names = [f"{d}/file{i:06d}" for i in range(n)]
    flags = os.O_CREAT | os.O_EXCL | os.O_WRONLY
    with profiled(f"create{n}"):
        t0 = time.perf_counter()
        for p in names:
            os.close(os.open(p, flags, 0o644))
        os.sync()
        t = time.perf_counter() - t0
    emit(f"create (+sync), N={n}", "us/file", "lower", t / n * 1e6)
    remount_cold(c)
    with profiled(f"readdir{n}"):
        t, got = timed(os.listdir, d)
    if len(got) != n:
        fail("readdir", f"readdir returned {len(got)} names, expected {n}")
    emit(f"readdir cold, N={n}", "us/file", "lower", t / n * 1e6)
    remount_cold(c)
    with profiled(f"stat{n}"):
        t0 = time.perf_counter()
        for p in names:
            os.stat(p)
        t = time.perf_counter() - t0
    emit(f"stat cold, N={n}", "us/file", "lower", t / n * 1e6)
    with profiled(f"unlink{n}"):
        t0 = time.perf_counter()
        for p in names:
            os.unlink(p)
        os.sync()
        t = time.perf_counter() - t0
    emit(f"unlink (+sync), N={n}", "us/file", "lower", t / n * 1e6)
    finish(c)


def diagnose(md5out):
    """How the unpacked files differ from the tar (for the failure record)."""
    bad = [ln.rsplit(":", 1)[0] for ln in md5out.splitlines()
           if ln.endswith(": FAILED") or "FAILED open" in ln]
    lines = [f"{len(bad)} files differ; first ones: {bad[:5]}"]
    import tarfile
    with tarfile.open("/tmp/src.tar") as t:
        for path in bad[:3]:
            want = t.extractfile(path).read()
            try:
                with open(f"{MNT}/{path}", "rb") as f:
                    got = f.read()
            except OSError as e:
                lines.append(f"{path}: {e}")
                continue
            off = next((i for i in range(min(len(want), len(got)))
                        if want[i] != got[i]), min(len(want), len(got)))
            ndiff = sum(1 for a, b in zip(want, got) if a != b)
            lines.append(f"{path}: size {len(got)} (tar: {len(want)}), "
                         f"{ndiff} bytes differ, first at offset {off}; "
                         f"zero bytes in the differing range: "
                         f"{got[off:].count(0)}/{len(got) - off}")
            lines.append(f"  tar : {want[off:off + 48]!r}")
            lines.append(f"  disk: {got[off:off + 48]!r}")
            st = os.stat(f"{MNT}/{path}")
            lines.append(f"  blocks {st.st_blocks}, {sh(f'filefrag -v {MNT}/{path} 2>&1 | tail -4', check=False).stdout.strip()}")
    return "\n".join(lines)


def dos_time():
    return (44 << 25) | (1 << 21) | (1 << 16)     # 2024-01-01 00:00:00


def name_hash(name):
    h = 0
    for ch in name.upper():
        c = ord(ch)
        for byte in (c & 0xFF, c >> 8):
            h = ((((h & 1) << 15) | (h >> 1)) + byte) & 0xFFFF
    return h


def entry_set(name, attr, first=0, size=0, nofat=False):
    """File + stream extension + name entries of one exFAT entry set."""
    units = name.encode("utf-16-le")
    nname = (len(name) + 14) // 15
    e = bytearray(32 * (2 + nname))
    e[0], e[1] = 0x85, 1 + nname
    struct.pack_into("<HHIII", e, 4, attr, 0, dos_time(), dos_time(),
                     dos_time())
    e[32], e[33], e[35] = 0xC0, 0x01 | (0x02 if nofat else 0), len(name)
    struct.pack_into("<H", e, 36, name_hash(name))
    struct.pack_into("<Q", e, 40, size)
    struct.pack_into("<IQ", e, 52, first, size)
    for k in range(nname):
        o = 64 + 32 * k
        e[o] = 0xC1
        part = units[30 * k:30 * (k + 1)]
        e[o + 2:o + 2 + len(part)] = part
    chk = 0
    for i, byte in enumerate(e):
        if i not in (2, 3):
            chk = ((((chk & 1) << 15) | (chk >> 1)) + byte) & 0xFFFF
    struct.pack_into("<H", e, 2, chk)
    return bytes(e)


def exfat_build_dir(dev, dname, names, slack):
    """Write the root subdirectory dname holding the empty files `names`
    (plus room for `slack` more) straight onto a fresh exFAT volume, as
    one contiguous (NoFatChain) run of clusters.  fsck.exfat checks it."""
    with open(dev, "r+b") as f:
        b = f.read(512)
        sect = 1 << b[108]
        clu = sect << b[109]
        heap = struct.unpack_from("<I", b, 88)[0] * sect
        nclu, root = struct.unpack_from("<II", b, 92)

        def at(c):
            return heap + (c - 2) * clu
        f.seek(at(root))
        rd = bytearray(f.read(clu))
        bm_clu = bm_len = slot = None
        for i in range(0, clu, 32):
            if rd[i] == 0x81:
                bm_clu, bm_len = struct.unpack_from("<IQ", rd, i + 20)
            if rd[i] == 0:
                slot = i
                break
        f.seek(at(bm_clu))
        bm = bytearray(f.read(bm_len))
        need = -(-32 * 3 * (len(names) + slack) // clu)
        run = start = 0
        for k in range(nclu):
            if bm[k >> 3] & (1 << (k & 7)):
                run = 0
                continue
            if run == 0:
                start = k
            run += 1
            if run == need:
                break
        else:
            raise RuntimeError("no room for the directory")
        first = start + 2
        data = bytearray(need * clu)
        off = 0
        for n in names:
            es = entry_set(n, 0x20)
            data[off:off + len(es)] = es
            off += len(es)
        f.seek(at(first))
        f.write(data)
        for k in range(start, start + need):
            bm[k >> 3] |= 1 << (k & 7)
        f.seek(at(bm_clu))
        f.write(bm)
        es = entry_set(dname, 0x10, first, need * clu, nofat=True)
        rd[slot:slot + len(es)] = es
        f.seek(at(root))
        f.write(rd)
        os.fsync(f.fileno())


def g_meta_big(c, n):
    """A directory of n files, made directly on the disk for exFAT (by the
    file system, untimed, for ext4); then cold readdir of all, cold stat of
    1 in k (in order), create of meta_more more, unlink of the sampled."""
    names = [f"file{i:06d}" for i in range(n)]
    more = CFG["meta_more"]
    if c in EXFAT:
        umount(MNT)
        mkfs(c, DEV)
        exfat_build_dir(DEV, "d", names, more + 16)
        p = sh(f"fsck.exfat -n {DEV}", 1200, check=False)
        if p.returncode:
            raise RuntimeError("the directory written by bench.py does not "
                               "pass fsck.exfat:\n" + p.stdout + p.stderr)
        remount_cold(c)
    else:
        fresh(c)
        os.mkdir(f"{MNT}/d")
        for x in names:
            os.close(os.open(f"{MNT}/d/{x}", os.O_CREAT | os.O_WRONLY, 0o644))
        remount_cold(c)
    d = f"{MNT}/d"
    k = max(1, n // CFG["meta_sample"])
    sample = [f"{d}/{x}" for x in names[::k]]
    with profiled(f"readdir{n}"):
        t, got = timed(os.listdir, d)
    if len(got) != n:
        fail("readdir", f"readdir returned {len(got)} names, expected {n}")
    emit(f"readdir cold, N={n}", "us/file", "lower", t / n * 1e6)
    remount_cold(c)
    with profiled(f"stat{n}"):
        t0 = time.perf_counter()
        for p in sample:
            os.stat(p)
        t = time.perf_counter() - t0
    emit(f"stat cold (1 in {k}, in order), N={n}", "us/file", "lower",
         t / len(sample) * 1e6)
    flags = os.O_CREAT | os.O_EXCL | os.O_WRONLY
    with profiled(f"create{n}"):
        t0 = time.perf_counter()
        for i in range(more):
            os.close(os.open(f"{d}/new{i:05d}", flags, 0o644))
        os.sync()
        t = time.perf_counter() - t0
    emit(f"create {more} more (+sync), N={n}", "us/file", "lower",
         t / more * 1e6)
    with profiled(f"unlink{n}"):
        t0 = time.perf_counter()
        for p in sample:
            os.unlink(p)
        os.sync()
        t = time.perf_counter() - t0
    emit(f"unlink 1 in {k} (+sync), N={n}", "us/file", "lower",
         t / len(sample) * 1e6)
    left = len(os.listdir(d))
    if left != n + more - len(sample):
        fail("data", f"{left} names left, expected {n + more - len(sample)}")
    finish(c)


def g_tree(c):
    """Unpack a Linux source subtree, find, cold read, rm -rf."""
    tar = "/tmp/src.tar"
    fresh(c)
    with profiled("untar"):
        t, _ = timed(sh, f"tar -xf {tar} -C {MNT} --no-same-owner "
                     f"--no-same-permissions && sync", 1800)
    emit("untar (+sync)", "s", "lower", t)
    remount_cold(c)
    with profiled("find"):
        t, p = timed(sh, f"find {MNT} | wc -l", 1800)
    emit("find (cold)", "s", "lower", t)
    remount_cold(c)
    with profiled("readall"):
        t, _ = timed(sh, f"cd {MNT} && find . -type f -print0 | "
                     "xargs -0 -n 256 cat >/dev/null", 1800)
    emit("read every file (cold)", "s", "lower", t)
    if CURRENT["rep"] == 0 or c == "ours":
        # not timed: every byte must be what the tar holds
        p = sh(f"cd {MNT} && md5sum -c --quiet {ARGS.src[:-4]}.md5",
               1800, check=False)
        if p.returncode:
            fail("data", "md5sum -c of the unpacked tree failed "
                 f"(after untar, remount, find, remount, cat of every "
                 f"file):\n{diagnose(p.stdout + p.stderr)}")
    with profiled("rm"):
        t, _ = timed(sh, f"rm -rf {MNT}/fs {MNT}/include && sync", 1800)
    emit("rm -rf (+sync)", "s", "lower", t)
    left = os.listdir(MNT)
    if [x for x in left if x != "lost+found"]:
        fail("data", f"entries left after rm -rf: {left[:10]}")
    finish(c)


def g_frag(c):
    """Two files written interleaved in 64 KiB chunks with fsync after
    each chunk; then a cold sequential read of one of them."""
    fresh(c)
    chunk = 64 << 10
    n = (CFG["frag_mb"] << 20) // chunk
    buf = os.urandom(chunk)
    fds = [os.open(f"{MNT}/{x}", os.O_WRONLY | os.O_CREAT, 0o644)
           for x in ("a", "b")]
    t0 = time.perf_counter()
    for _ in range(n):
        for fd in fds:
            os.write(fd, buf)
            os.fsync(fd)
    t = time.perf_counter() - t0
    for fd in fds:
        os.close(fd)
    emit("interleaved 64K write+fsync, 2 files", "MiB/s", "higher",
         2 * CFG["frag_mb"] / t)
    ext = extent_counts(c, ["a"])[0]
    emit("extents of the interleaved file", "extents", "lower", ext)
    drop_caches()
    mount(c, DEV, MNT)
    j = fio("fragread", [f"--filename={MNT}/a", f"--size={CFG['frag_mb']}m",
                         "--bs=1m", "--ioengine=psync", "--rw=read"])
    emit("read of the interleaved file (cold, 1M)", "MiB/s", "higher",
         mibps(j, "read"))
    finish(c)


# ---------------------------------------------------------------- mount times

LIBC = ctypes.CDLL(None, use_errno=True)


def sys_mount(contender, dev, mnt):
    """mount(2) itself, timed without a mount(8) process around it."""
    if contender in EXFAT:
        lib.use_driver(contender)
    os.makedirs(mnt, exist_ok=True)
    drop_caches()
    t0 = time.perf_counter()
    data = b"noinit_itable" if contender == "ext4" else None
    r = LIBC.mount(dev.encode(), mnt.encode(), fstype(contender).encode(),
                   0, data)
    t = time.perf_counter() - t0
    if r:
        e = ctypes.get_errno()
        raise RuntimeError(f"mount {dev} ({contender}): {os.strerror(e)}\n"
                           + sh("dmesg | tail -5").stdout)
    return t


def populate(contender, files, root_files):
    """files small files: root_files in the root, the rest in dirs of 1000."""
    mount(contender, BIGDEV, BIGMNT)
    buf = b"x" * 4096
    for i in range(root_files):
        with open(f"{BIGMNT}/r{i:06d}", "wb") as f:
            f.write(buf)
    rest = files - root_files
    for d in range(0, rest, 1000):
        os.mkdir(f"{BIGMNT}/d{d // 1000:03d}")
        for i in range(min(1000, rest - d)):
            with open(f"{BIGMNT}/d{d // 1000:03d}/f{i:04d}", "wb") as f:
                f.write(buf)
    umount(BIGMNT)


def g_mount(kind):
    """Mount time of a 512 GiB sparse volume, empty and with many files,
    for both exFAT drivers on the same volume (kind 'exfat') or ext4."""
    who = EXFAT if kind == "exfat" else ("ext4",)
    mkfs(who[0], BIGDEV)
    nf = CFG["mount_files"]
    for state in ("empty", f"{nf} files"):
        if state != "empty":
            # written once, with the in-tree driver for exFAT, so both
            # drivers mount the very same volume
            populate("intree" if kind == "exfat" else "ext4", nf,
                     CFG["mount_root_files"])
        for rep in range(CFG["mount_reps"]):
            order = who if rep % 2 == 0 else tuple(reversed(who))
            for c in order:
                CURRENT.update(contender=c, rep=rep)
                try:
                    t = sys_mount(c, BIGDEV, BIGMNT)
                    emit(f"mount 512 GiB, {state}", "ms", "lower", t * 1000)
                    with profiled(f"statfs-{state}"):
                        t, _ = timed(os.statvfs, BIGMNT)
                    emit(f"first statfs 512 GiB, {state}", "ms", "lower",
                         t * 1000)
                finally:
                    umount(BIGMNT)
    if kind == "exfat":
        for c in EXFAT:
            CURRENT.update(contender=c, rep=0)
            finish(c, BIGDEV, BIGMNT)


# ---------------------------------------------------------------- driver

def dmesg_lines():
    p = subprocess.run(["dmesg"], capture_output=True, text=True,
                       errors="replace")
    return p.stdout.splitlines()


def run_child(fn, args, timeout):
    """Run fn(*args) in a forked child with a timeout.  Returns True when
    it finished (whatever its outcome), False on a hang."""
    before = len(dmesg_lines())
    pid = os.fork()
    if pid == 0:
        os.setpgrp()            # fio & co. die with it on a timeout
        code = 0
        try:
            fn(*args)
        except BaseException as e:  # noqa: BLE001
            fail("error", f"{type(e).__name__}: {e}",
                 dmesg="\n".join(dmesg_lines()[before:][-40:]))
            for m in (MNT, BIGMNT):
                subprocess.run(f"umount {m} 2>/dev/null || umount -l {m}",
                               shell=True, capture_output=True)
            code = 1
        finally:
            os._exit(code)
    deadline = time.monotonic() + timeout
    while True:
        wpid, status = os.waitpid(pid, os.WNOHANG)
        if wpid:
            break
        if time.monotonic() > deadline:
            os.killpg(pid, signal.SIGKILL)
            for _ in range(20):
                time.sleep(0.5)
                if os.waitpid(pid, os.WNOHANG)[0]:
                    break
            else:
                with open("/proc/sysrq-trigger", "w") as f:
                    f.write("w\n")  # blocked tasks into the kernel log
                time.sleep(2)
                fail("hang", f"no progress after {timeout}s; the child "
                     "does not die (blocked in the kernel): run aborted",
                     dmesg="\n".join(dmesg_lines()[before:][-150:]))
                return False
            fail("timeout", f"killed after {timeout}s")
            break
        time.sleep(0.2)
    new = dmesg_lines()[before:]
    bad = [ln for ln in new if SPLAT_RE.search(ln)]
    if bad:
        fail("splat", "\n".join(bad[:20]), dmesg="\n".join(new[-200:]))
    return True


def rounds(contenders, reps):
    """Contender order per repetition: rotated each round (A B, B A ...)."""
    for r in range(reps):
        k = r % len(contenders)
        yield r, contenders[k:] + contenders[:k]


def main():
    global ARGS, CFG, RESULTS, DEV, BIGDEV
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--disk", required=True, help="serial of the main disk")
    ap.add_argument("--big", required=True, help="serial of the 512G disk")
    ap.add_argument("--ko", required=True)
    ap.add_argument("--src", required=True, help="source tree tar")
    ap.add_argument("--out", required=True)
    ap.add_argument("--only", default="")
    ap.add_argument("--profile", default="")
    ap.add_argument("--reps", type=int, default=0)
    ARGS = ap.parse_args()
    ARGS.profile = [x for x in ARGS.profile.split(",") if x]
    CFG = dict(CONFIGS["quick" if ARGS.quick else "full"])
    if ARGS.reps:
        CFG["reps"] = ARGS.reps
    RESULTS = os.path.join(ARGS.out, "results.jsonl")
    lib.OURS_KO = ARGS.ko           # the copy made for this run

    serials = {}
    for b in os.listdir("/sys/block"):
        try:
            with open(f"/sys/block/{b}/serial") as f:
                serials[f.read().strip()] = f"/dev/{b}"
        except OSError:
            pass
    DEV, BIGDEV = serials[ARGS.disk], serials[ARGS.big]
    sh(f"cp {ARGS.src} /tmp/src.tar")
    sh("modprobe ext4")     # the kernel's own modprobe runs outside the chroot
    if ARGS.profile:
        with open("/proc/sys/kernel/kptr_restrict", "w") as f:
            f.write("0\n")
        with open("/proc/sys/kernel/perf_event_paranoid", "w") as f:
            f.write("-1\n")

    reps = CFG["reps"]
    fs3 = ["ours", "intree", "ext4"]
    groups = [
        ("seq", g_seq, fs3 + ["raw"], reps, (), 900),
        ("rand", g_rand, fs3, reps, (), 900),
        ("fsync", g_fsync, fs3 + ["raw"], reps, (), 900),
        ("conc", g_conc, fs3, reps, (), 900),
        ("frag", g_frag, fs3, reps, (), 900),
    ]
    for n in CFG["meta_n"]:
        fn = g_meta if n <= CFG["meta_full_max"] else g_meta_big
        groups.append((f"meta{n // 1000}k", fn, fs3,
                       CFG["meta_reps"].get(n, reps), (n,), 2400))
    groups.append(("tree", g_tree, fs3, reps, (), 2400))
    only = [x for x in ARGS.only.split(",") if x]

    meta = dict(quick=ARGS.quick, config=CFG, kernel=os.uname().release,
                cpus=os.cpu_count(), dev=DEV, bigdev=BIGDEV,
                mem_kb=int(open("/proc/meminfo").read().split()[1]),
                started=time.strftime("%Y-%m-%d %H:%M:%S %Z"))
    with open(os.path.join(ARGS.out, "guest-meta.json"), "w") as f:
        json.dump(meta, f, indent=1)

    t_start = time.monotonic()
    for name, fn, contenders, nrep, extra, tmo in groups:
        if only and name not in only:
            continue
        failed = set()
        tg = time.monotonic()
        for rep, order in rounds(contenders, nrep):
            for c in order:
                if c in failed:
                    continue
                CURRENT.clear()
                CURRENT.update(group=name, contender=c, rep=rep)
                before = os.path.getsize(RESULTS) if os.path.exists(RESULTS) else 0
                if not run_child(fn, (c,) + extra, tmo):
                    return 3
                with open(RESULTS) as f:
                    f.seek(before)
                    if any('"failure"' in ln and '"kind": "error"' in ln
                           for ln in f):
                        failed.add(c)   # the same error would repeat
        log(f"group {name} took {time.monotonic() - tg:.0f}s")
    for kind in ("exfat", "ext4"):
        if only and "mount" not in only:
            break
        CURRENT.clear()
        CURRENT.update(group="mount", contender=kind, rep=0)
        tg = time.monotonic()
        if not run_child(g_mount, (kind,), 2400):
            return 3
        log(f"group mount/{kind} took {time.monotonic() - tg:.0f}s")
    log(f"all done in {time.monotonic() - t_start:.0f}s")
    return 0


if __name__ == "__main__":
    sys.exit(main())

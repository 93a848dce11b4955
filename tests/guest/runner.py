#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Run the exfat2 test cases inside the test VM (as root).

Usage: runner.py [--list] [--no-selftest] [--timeout-scale=X] [FILTER...]
(FILTER: a name substring or glob; !FILTER excludes; +FILTER narrows)

FILTER selects tests by name: a glob if it has * ? or [, else a substring;
a test runs if any filter matches (none given: all).  The harness
self-tests (tests/selftest/test_selftest.py) always run, last, unless
--no-selftest.  --timeout-scale multiplies every test's timeout (for slow
debug kernels).  On a kernel with kmemleak, "runner:kmemleak" runs after the
cases and fails if they leaked kernel memory.  --list prints the names and exits (works on the host too).

Writes into $EXFAT2_OUT (default /tmp/exfat2-out):
  planned.txt   names of the tests about to run, one a line
  results.txt   one line per finished test: "PASS name (1.2s)" or
                "FAIL name: reason (1.2s)"
  running.txt   name of the test that is running (or ran last)
  logs/NAME.log the test's output and the kernel messages it caused
  dmesg.txt     the whole kernel log at the end
Exit status 0 iff every test passed.
"""

import fnmatch
import importlib.util
import os
import re
import select
import signal
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
TESTS = os.path.dirname(HERE)
sys.path.insert(0, HERE)
import lib  # noqa: E402

CASE_DIRS = [os.path.join(TESTS, "cases")]
SELFTEST_DIR = os.path.join(TESTS, "selftest")

SPLAT_RE = lib.SPLAT_RE

KILL_GRACE = 20     # seconds a killed test gets to disappear


def load_tests(dirs):
    for d in dirs:
        if not os.path.isdir(d):
            continue
        for f in sorted(os.listdir(d)):
            if f.startswith("test_") and f.endswith(".py"):
                spec = importlib.util.spec_from_file_location(
                    f[:-3], os.path.join(d, f))
                mod = importlib.util.module_from_spec(spec)
                spec.loader.exec_module(mod)
    tests = list(lib.REGISTRY)
    lib.REGISTRY.clear()
    return tests


def _match_one(name, f):
    if any(c in f for c in "*?["):
        return fnmatch.fnmatchcase(name, f)
    return f in name


def matches(name, filters):
    """A filter is a substring or a glob; "!F" excludes what F matches;
    "+F": when there are such filters, a name must match one of them too
    (check-all.sh narrows the debug pass's list with the user's filters)."""
    inc = [f for f in filters if f[:1] not in ("!", "+")]
    exc = [f[1:] for f in filters if f.startswith("!")]
    req = [f[1:] for f in filters if f.startswith("+")]
    if any(_match_one(name, f) for f in exc):
        return False
    if req and not any(_match_one(name, f) for f in req):
        return False
    return not inc or any(_match_one(name, f) for f in inc)


class Kmsg(lib.Kmsg):
    """Kernel log records as the runner keeps them: (facility, text with
    its time stamp)."""

    def read(self):
        return [(r.facility, f"[{r.ts:12.6f}] {r.text}")
                for r in super().read()]


# Lines of a register/stack dump, skipped to find what a dump is about.
DUMP_RE = re.compile(r"(CPU:|Hardware name:|Tainted:|Modules linked in:|RIP:"
                     r"|Code:|RSP:|R[A-Z0-9]{2}:|FS:|CS:|CR2:|PKRU:|DR[0-9]:"
                     r"|Call Trace:|\s|<TASK>)")


def splats_in(recs):
    """Kernel (not user-written) lines that look like a splat.  A bare
    "Call Trace:" is shown with the line that introduced the dump."""
    kern = [t.split("] ", 1)[-1] for fac, t in recs if fac == 0]
    bad = []
    for i, t in enumerate(kern):
        if not SPLAT_RE.search(t):
            continue
        if t.startswith("Call Trace:"):
            j = i - 1
            while j > 0 and DUMP_RE.match(kern[j]):
                j -= 1
            if j >= 0 and j != i - 1:
                t = f"Call Trace: after \"{kern[j]}\""
        bad.append(t)
    return bad


def procs_in_group(pgid):
    """PIDs of live (non-zombie) processes in process group pgid."""
    pids = []
    for p in os.listdir("/proc"):
        if not p.isdigit():
            continue
        try:
            with open(f"/proc/{p}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[2]) == pgid and fields[0] != "Z":
            pids.append(int(p))
    return pids


def describe_stuck(pids):
    lines = []
    for p in pids:
        try:
            with open(f"/proc/{p}/stat") as f:
                st = f.read()
            with open(f"/proc/{p}/stack") as f:
                stack = f.read()
        except OSError:
            continue
        lines.append(f"pid {p}: {st.strip()}\n{stack}")
    try:
        with open("/proc/sysrq-trigger", "w") as f:
            f.write("w")    # blocked tasks to the kernel log
    except OSError:
        pass
    return "\n".join(lines)


def _mounts():
    with open("/proc/mounts") as f:
        return [tuple(line.split()[:2]) for line in f]


def _loops():
    out = lib.sh("losetup -a", check=False).stdout
    return {line.split(":", 1)[0] for line in out.splitlines()}


def _dms():
    if not os.path.isdir("/dev/mapper"):
        return set()
    return set(os.listdir("/dev/mapper")) - {"control"}


BASELINE = {}


def take_baseline():
    BASELINE.update(mounts=set(_mounts()), loops=_loops(), dms=_dms())


def sweep():
    """Undo what a test left behind (mounts, dm and loop devices that were
    not there when the runner started); return a description of it."""
    left = []
    for src, mnt in reversed(_mounts()):
        if (src, mnt) not in BASELINE["mounts"]:
            left.append(f"mount {mnt}")
            lib.sh(f"umount {mnt} 2>/dev/null || umount -l {mnt}", check=False)
    dms = _dms() - BASELINE["dms"]
    if dms:
        left.append("dm " + " ".join(sorted(dms)))
        for d in dms:
            lib.sh(f"dmsetup remove --force {d}", check=False)
    loops = _loops() - BASELINE["loops"]
    if loops:
        left.append("loop " + " ".join(sorted(loops)))
        for d in loops:
            lib.sh(f"losetup -d {d}", check=False)
    lib.sh("rm -rf /tmp/exfat2-images", check=False)
    return left


def wait_pidfd(pidfd, timeout):
    return bool(select.select([pidfd], [], [], timeout)[0])


def run_child(t, logpath, reasonpath):
    """Body of the forked test process; never returns."""
    status = 1
    try:
        os.setpgid(0, 0)
        fd = os.open(logpath, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        os.dup2(fd, 1)
        os.dup2(fd, 2)
        null = os.open("/dev/null", os.O_RDONLY)
        os.dup2(null, 0)
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        lib.current = t
        os.chdir("/tmp")
        t.func()
        status = 0
    except lib.TestFailure as e:
        reason = str(e) or "TestFailure"
    except BaseException:
        import traceback
        reason = traceback.format_exc().strip()
        tail = reason.splitlines()[-1]
        reason = f"{tail}\n{reason}"
    if status:
        with open(reasonpath, "w") as f:
            f.write(reason)
        print(f"FAILED: {reason}")
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(status)


def run_test(t, kmsg, logdir):
    """Run one test; return (kinds, reasons, seconds, stuck).

    kinds is a set of what went wrong: 'fail', 'timeout', 'splat', 'stuck',
    'leak'; empty means the test passed.
    """
    safe = re.sub(r"[^A-Za-z0-9_.-]", ".", t.name)
    logpath = os.path.join(logdir, safe + ".log")
    reasonpath = f"/tmp/exfat2-runner-{safe}.reason"
    t.notepath = f"/tmp/exfat2-runner-{safe}.note"
    for p in (logpath, reasonpath, t.notepath):
        if os.path.exists(p):
            os.unlink(p)
    kmsg.read()
    lib.log(f"begin {t.name}")
    kinds, reasons = set(), []
    stuck = False
    start = time.monotonic()
    sys.stdout.flush()
    pid = os.fork()
    if pid == 0:
        run_child(t, logpath, reasonpath)
    try:
        os.setpgid(pid, pid)
    except OSError:
        pass
    pidfd = os.pidfd_open(pid)
    if wait_pidfd(pidfd, t.timeout):
        _, status = os.waitpid(pid, 0)
        if status != 0:
            kinds.add("fail")
            try:
                with open(reasonpath) as f:
                    reasons.append(f.read().strip())
            except OSError:
                reasons.append(f"test process ended with wait status {status}")
    else:
        kinds.add("timeout")
        reasons.append(f"TIMEOUT after {t.timeout:g}s")
        os.killpg(pid, signal.SIGKILL)
        if wait_pidfd(pidfd, KILL_GRACE):
            os.waitpid(pid, 0)
        else:
            stuck = True
    os.close(pidfd)
    secs = time.monotonic() - start

    # Whatever the test started must be gone too.
    if not stuck and procs_in_group(pid):
        for p in procs_in_group(pid):
            try:
                os.kill(p, signal.SIGKILL)
            except OSError:
                pass
        deadline = time.monotonic() + KILL_GRACE
        while procs_in_group(pid) and time.monotonic() < deadline:
            time.sleep(0.2)
        if procs_in_group(pid):
            stuck = True
    if stuck:
        kinds.add("stuck")
        pids = procs_in_group(pid) or [pid]
        reasons.append(f"processes of the test cannot be killed (D state?): "
                       f"{pids}")
        with open(logpath, "a") as f:
            f.write("\n== stuck processes ==\n" + describe_stuck(pids) + "\n")
    else:
        left = sweep()
        if left and not kinds:
            kinds.add("leak")
            reasons.append("left behind: " + ", ".join(left))

    lib.log(f"end {t.name}")
    recs = kmsg.read()
    bad = splats_in(recs)
    if bad:
        kinds.add("splat")
        first = next((b for b in bad if not b.startswith("Call Trace:")),
                     bad[0])
        reasons.append(f"kernel splat: {first}")
    with open(logpath, "a") as f:
        f.write("\n== kernel messages ==\n")
        f.write("".join(text + "\n" for _, text in recs))
    return kinds, reasons, secs, stuck


def verdict(t, kinds, reasons):
    """(passed, note) taking expected-failure self-tests into account."""
    first = reasons[0].splitlines()[0] if reasons else ""
    if t.expect is None:
        return (not kinds, "; ".join(r.splitlines()[0] for r in reasons))
    kind, _, text = t.expect.partition(":")
    # "fail+splat:TEXT": both kinds, the first reason containing TEXT
    if kinds == set(kind.split("+")) and \
            text in (reasons[0] if reasons else ""):
        return True, f"expected failure detected: {first}"
    got = ", ".join(sorted(kinds)) or "a pass"
    return False, (f"self-test expected the harness to report '{t.expect}' "
                   f"but got {got}" + (f": {first}" if first else ""))


def kmemleak_scan():
    """Kernels with kmemleak: objects leaked during the run fail it, and
    so does kmemleak switched off (kmemleak=off, or disabled after an
    error of its own) where it is built in (lib.kmemleak_check; the
    self-test selftest:kmemleak_report_detected runs it on a leak)."""
    lib.kmemleak_check()


def main(argv):
    listing = "--list" in argv
    selftest = "--no-selftest" not in argv
    scale = 1.0
    for a in argv:
        if a.startswith("--timeout-scale="):
            scale = float(a.split("=", 1)[1])
    filters = [a for a in argv if not a.startswith("--")]

    tests = [t for t in load_tests(CASE_DIRS) if matches(t.name, filters)]
    if (os.path.exists(lib.KMEMLEAK) or lib.kmemleak_built_in()) and \
            not listing:
        tests.append(lib.Test(kmemleak_scan, "runner:kmemleak", 900, False,
                              None))
    if selftest:
        tests += load_tests([SELFTEST_DIR])
    for t in tests:
        t.timeout *= scale
    if listing:
        for t in tests:
            print(t.name)
        return 0

    sys.stdout.reconfigure(line_buffering=True)
    out = lib.OUT if os.environ.get("EXFAT2_OUT") else "/tmp/exfat2-out"
    logdir = os.path.join(out, "logs")
    os.makedirs(logdir, exist_ok=True)
    results = os.path.join(out, "results.txt")
    with open(os.path.join(out, "planned.txt"), "w") as f:
        f.write("".join(t.name + "\n" for t in tests))
    open(results, "w").close()
    with open("/proc/uptime") as f:
        uptime = f.read().split()[0]
    with open(os.path.join(out, "runner-start-uptime"), "w") as f:
        f.write(uptime + "\n")
    print(f"runner: {len(tests)} tests, kernel {os.uname().release}, "
          f"started at {uptime}s uptime")

    lib.sh("modprobe loop", check=False)
    if os.path.exists(lib.KMEMLEAK):
        lib.sh(f"echo clear > {lib.KMEMLEAK}", check=False)     # boot-time noise
    try:
        lib.use_driver("ours")
        print(f"runner: loaded {lib.OURS_KO}")
    except lib.TestFailure as e:
        print(f"runner: NOTE: our driver does not load, its tests will "
              f"fail: {str(e).splitlines()[0]}")

    take_baseline()
    kmsg = Kmsg()
    failed = 0
    stopped = None
    for t in tests:
        if stopped:
            ok, note, secs = False, f"not run: {stopped}", 0.0
        else:
            with open(os.path.join(out, "running.txt"), "w") as f:
                f.write(t.name + "\n")
            kinds, reasons, secs, stuck = run_test(t, kmsg, logdir)
            ok, note = verdict(t, kinds, reasons)
            if stuck:
                stopped = f"the run stopped after {t.name} got stuck"
        if ok and not note and getattr(t, "notepath", None) and \
                os.path.exists(t.notepath):
            with open(t.notepath) as f:         # lib.note()
                note = "; ".join(f.read().split("\n")).strip("; ")
        if ok:
            line = f"PASS {t.name} ({secs:.1f}s)" + (
                f" [{note}]" if note else "")
        else:
            failed += 1
            line = f"FAIL {t.name}: {note} ({secs:.1f}s)"
        print(line)
        with open(results, "a") as f:
            f.write(line + "\n")

    lib.sh(f"dmesg > {out}/dmesg.txt", check=False)
    print(f"runner: {len(tests) - failed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# Run exfat2's KUnit suites under the debug kernel: one VM boot loads
# exfat2.ko (its suites run at load and print KTAP to the kernel log),
# unloads it, then has kmemleak scan.  Prints one line per KUnit case,
#   PASS kunit:<suite>.<case>   or   FAIL kunit:<suite>.<case>: reason
# then kmemleak and VM lines, and last "N passed, N failed".  Exit status 0
# iff nothing failed and at least one case ran.
#
# Usage: tests/kunit.sh [--kernel BZIMAGE --modules-dir DIR --ko EXFAT2_KO]
#                       [--src DIR] [--timeout SECONDS] [--verbose]
#
#   (default)      scripts/debug-kernel.sh --module builds or reuses the
#                  debug kernel and exfat2.ko built against it
#   --src DIR      build the module from these sources (default exfat2/)
#   --kernel, --modules-dir, --ko   use these instead (all three)
#   --timeout      bound on the VM run (default 900 s; the debug kernel
#                  needs 1-2 min to boot under TCG)
#   --verbose      also list the parameters of parameterised cases
#
# Kernel leaks found before exfat2 is loaded are not ours: they are shown
# (kmemleak-boot.txt) but do not fail the run; any leak reported after the
# module was loaded and unloaded does.
# Logs: ${XDG_CACHE_HOME:-~/.cache}/exfat2-vm/kunit-runs/, newest also
# as .../exfat2-vm/last-kunit (dmesg.txt, kmemleak.txt, console.log).
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(dirname "$here")
cache=${XDG_CACHE_HOME:-${HOME:-/tmp}/.cache}/exfat2-vm

kernel='' moddir='' ko='' timeout=900 verbose=0 src=()
while [ $# -gt 0 ]; do
	case "$1" in
	--kernel) kernel=$2; shift 2 ;;
	--modules-dir) moddir=$2; shift 2 ;;
	--ko) ko=$2; shift 2 ;;
	--src) src=(--src "$2"); shift 2 ;;
	--timeout) timeout=$2; shift 2 ;;
	--verbose) verbose=1; shift ;;
	-h|--help) sed -n '4,/^set -e/p' "$0" | sed -e '$d' -e 's/^# \{0,1\}//'; exit 0 ;;
	*) echo "kunit.sh: unknown option $1 (try --help)" >&2; exit 2 ;;
	esac
done

t0=$(date +%s)
if [ -z "$kernel$moddir$ko" ]; then
	paths=$("$repo/scripts/debug-kernel.sh" --module "${src[@]}")
	kernel=$(sed -n 's/^KERNEL=//p' <<<"$paths")
	moddir=$(sed -n 's/^MODULES_DIR=//p' <<<"$paths")
	ko=$(sed -n 's/^EXFAT2_KO=//p' <<<"$paths")
elif [ -z "$kernel" ] || [ -z "$moddir" ] || [ -z "$ko" ]; then
	echo "kunit.sh: --kernel, --modules-dir and --ko go together" >&2
	exit 2
fi
[ -f "$ko" ] || { echo "kunit.sh: no module $ko" >&2; exit 2; }
t1=$(date +%s)

mkdir -p "$cache/kunit-runs"
out=$(mktemp -d "$cache/kunit-runs/$(date +%Y%m%d-%H%M%S).XXXX")
ln -sfn "$out" "$cache/last-kunit"
# shellcheck disable=SC2012 # our own names
ls -1dt "$cache"/kunit-runs/*/ | tail -n +6 | xargs -r rm -rf
cp "$ko" "$out/exfat2.ko"

# The guest side.  Leaks are only reported for objects older than 5 s,
# hence the waits before the scans.
cat >"$out/kunit-guest.sh" <<'EOF'
out=/run/out
kl=/sys/kernel/debug/kmemleak
up() { cut -d' ' -f1 /proc/uptime; }
kl_scan() { sleep 5; echo scan >"$kl" && sleep 5 && echo scan >"$kl"; }
echo "userspace $(up)" >"$out/times"
! grep -q ' kmemleak_alloc$' /proc/kallsyms || touch "$out/kmemleak-built-in"
if [ -e "$kl" ]; then
	kl_scan
	cat "$kl" >"$out/kmemleak-boot.txt"
	echo clear >"$kl"
	echo "kmemleak-boot-scan $(up)" >>"$out/times"
fi
echo "insmod-start $(up)" >>"$out/times"
insmod "$out/exfat2.ko"
echo $? >"$out/insmod.rc"
echo "insmod-end $(up)" >>"$out/times"
dmesg >"$out/dmesg.txt"
if [ "$(cat "$out/insmod.rc")" = 0 ]; then
	rmmod exfat2
	echo $? >"$out/rmmod.rc"
fi
if [ -e "$kl" ] && kl_scan; then
	cat "$kl" >"$out/kmemleak.txt"
	echo "kmemleak-scan $(up)" >>"$out/times"
fi
dmesg >"$out/dmesg-end.txt"
exit 0
EOF

echo "kunit: booting $kernel (log: $out/console.log)" >&2
run_vm() {
	vmrc=0
	"$repo/tools/vm/vm.sh" --kernel "$kernel" --modules-dir "$moddir" --out "$out" \
		--timeout "$timeout" -- bash /run/out/kunit-guest.sh || vmrc=$?
}
run_vm
# A guest that dies while booting, before the command starts, is not a
# result (as in run-tests.sh): boot once more.
if [ "$vmrc" != 0 ] && ! grep -qs 'guest-init: running command' "$out/console.log"; then
	mv "$out/console.log" "$out/console-boot-failure.log" 2>/dev/null || true
	echo "kunit: the VM died while booting (exit $vmrc, see $out/console-boot-failure.log); booting again" >&2
	run_vm
fi
t2=$(date +%s)

# Parse the KTAP of the exfat2 suites and add the other checks.
python3 - "$out" "$vmrc" "$verbose" >"$out/results.txt" <<'EOF' || true
import os
import re
import sys

out, vmrc, verbose = sys.argv[1], int(sys.argv[2]), sys.argv[3] == "1"
results = []   # (ok, name, detail lines)


def read(name):
    try:
        with open(os.path.join(out, name), errors="replace") as f:
            return f.read()
    except OSError:
        return None


STAMP = re.compile(r"^\[\s*\d+\.\d+\] ?")
RESULT = re.compile(r"^( *)(not ok|ok) (\d+) (.*?)(?: # (SKIP|TODO)\b ?(.*))?$")
SUBTEST = re.compile(r"^( *)# Subtest: (.*)$")
MODULE = re.compile(r"^( *)# module: (.*)$")

# Results arrive after their children: keep, per indentation level, the
# results seen since the last result one level up, and the other lines
# (failure messages, kernel messages) since the last result at each level.
STRUCT = re.compile(r"^ *(KTAP version \d+|1\.\.\d+|# \S+: pass:\d+ fail:\d+.*"
                    r"|# Totals: .*)$")
pending = {}           # level -> [(status, name, reason, children, lines)]
since = {1: [], 2: []}  # level -> other lines since the last result there
suite_module = {}      # suite name -> module name
open_suites = []       # suites started but without a result yet
cur_suite = None
suites = []            # (status, suite, cases, lines)

dmesg = read("dmesg.txt") or ""
for raw in dmesg.splitlines():
    line = STAMP.sub("", raw)
    m = SUBTEST.match(line)
    if m:
        if len(m.group(1)) // 4 == 1:
            cur_suite = m.group(2).strip()
            open_suites.append(cur_suite)
            pending = {}
            since = {1: [], 2: []}
        continue
    m = MODULE.match(line)
    if m and cur_suite and len(m.group(1)) // 4 == 1:
        suite_module[cur_suite] = m.group(2).strip()
        continue
    m = RESULT.match(line)
    if m and cur_suite:
        level = len(m.group(1)) // 4
        status = "pass" if m.group(2) == "ok" else "fail"
        if m.group(5) == "SKIP":
            status = "skip"
        lines = since.get(level, [])
        entry = (status, m.group(4).strip(), m.group(6) or "",
                 pending.pop(level + 1, []), lines)
        for lv in since:
            if lv >= level:
                since[lv] = []
        if level == 0:
            suites.append((status, entry[1], entry[3], lines))
            if entry[1] in open_suites:
                open_suites.remove(entry[1])
            cur_suite = None
            pending = {}
        else:
            pending.setdefault(level, []).append(entry)
        continue
    if cur_suite and line.strip() and not STRUCT.match(line):
        for lv in since:
            since[lv].append(line.strip())


def ours(suite):
    return suite_module.get(suite) == "exfat2" or suite.startswith("exfat2")


ncases = 0
for status, suite, cases, sdiag in suites:
    if not ours(suite):
        continue
    if not cases:
        results.append(("fail", f"kunit:{suite}",
                        [f"suite result '{status}' without cases"] + sdiag))
        continue
    for cstatus, case, reason, params, cdiag in cases:
        ncases += 1
        detail = []
        if cstatus == "fail":
            bad = [p[1] for p in params if p[0] == "fail"]
            if bad:
                detail.append("failed parameters: " + "; ".join(bad))
            detail += cdiag[:60]
        if cstatus == "skip":
            # exfat2's cases need nothing the debug kernel lacks: a skip
            # is a case that did not run, counted as a failure
            cstatus = "fail"
            detail.append(f"skipped: {reason}")
        results.append((cstatus, f"kunit:{suite}.{case}", detail))
        if verbose:
            for p in params:
                results.append((p[0], f"  kunit:{suite}.{case}/{p[1]}", []))
for suite in open_suites:
    if ours(suite):
        for cstatus, case, reason, params, cdiag in pending.get(1, []):
            ncases += 1
            results.append((cstatus, f"kunit:{suite}.{case}",
                            [reason] if cstatus == "skip" else []))
        results.append(("fail", f"kunit:{suite}",
                        ["the suite started but never finished "
                         "(crash or hang? see dmesg.txt, console.log)"]))
if ncases == 0:
    results.append(("fail", "kunit:cases", ["no exfat2 KUnit case ran "
                    "(is CONFIG_KUNIT set? see dmesg.txt)"]))

rc = read("insmod.rc")
if rc is None:
    results.append(("fail", "module:insmod", ["never ran (the VM stopped first)"]))
elif rc.strip() != "0":
    results.append(("fail", "module:insmod", [f"exit status {rc.strip()}"]))
else:
    rc = read("rmmod.rc")
    if rc is None or rc.strip() != "0":
        results.append(("fail", "module:rmmod",
                        [f"exit status {rc.strip() if rc else '(not run)'}"]))
    else:
        results.append(("pass", "module:rmmod", []))

boot = read("kmemleak-boot.txt")
leaks = read("kmemleak.txt")
if leaks is None:
    if os.path.exists(os.path.join(out, "kmemleak-built-in")):
        results.append(("fail", "kmemleak:scan",
                        ["kmemleak is built in but switched off: leaks "
                         "cannot be checked"]))
    elif boot is None and os.path.exists(os.path.join(out, "times")):
        results.append(("skip", "kmemleak:scan", ["kmemleak not available"]))
    else:
        results.append(("fail", "kmemleak:scan", ["the scan did not run"]))
elif leaks.strip():
    n = leaks.count("unreferenced object")
    results.append(("fail", "kmemleak:scan",
                    [f"{n} unreferenced object(s) after exfat2 was loaded "
                     f"and unloaded ({out}/kmemleak.txt):"]
                    + leaks.strip().splitlines()[:40]))
else:
    results.append(("pass", "kmemleak:scan", []))
if boot and boot.strip():
    print(f"note: kmemleak reported {boot.count('unreferenced object')} object(s) "
          f"before exfat2 was loaded (the kernel's, not counted): "
          f"{out}/kmemleak-boot.txt")

if vmrc == 124:
    results.append(("fail", "vm:timeout", ["the VM ran out of time"]))
elif vmrc == 126:
    results.append(("fail", "vm:died", ["the VM stopped without reporting"]))
elif vmrc == 125:
    splats = (read("host-splats") or "?").splitlines()
    results.append(("fail", "vm:kernel-splat",
                    [s for s in splats if "Call Trace:" not in s][:1]
                    + [f"full text: {out}/console.log"]))
elif vmrc != 0:
    results.append(("fail", "vm:exit", [f"vm.sh exit status {vmrc}"]))

for status, name, detail in results:
    word = {"pass": "PASS", "fail": "FAIL", "skip": "SKIP"}[status]
    first = f": {detail[0]}" if detail and status != "pass" else ""
    if name.startswith(" "):
        print(f"  {word} {name.strip()}{first}")
        continue
    print(f"{word} {name}{first}")
    for d in detail[1:]:
        print(f"    {d}")
totals = re.findall(r"^(?:\[[^]]*\] ?)?# Totals: (.*)$", dmesg, re.M)
if totals:
    print(f"kunit: {ncases} cases; KUnit totals with parameters: "
          + "; ".join(t.strip() for t in totals))
top = [r for r in results if not r[1].startswith(" ")]
skipped = sum(r[0] == "skip" for r in top)
if skipped:
    print(f"{skipped} skipped")
print(f"{sum(r[0] == 'pass' for r in top)} passed, "
      f"{sum(r[0] == 'fail' for r in top)} failed")
EOF

t3=$(date +%s)
grep -v -e '^[0-9]* passed, [0-9]* failed$' "$out/results.txt" || true
if [ -f "$out/times" ]; then
	awk -v vm="$(cat "$out/vm-seconds" 2>/dev/null || echo '?')" '
		{ t[$1] = $2 }
		END {
			printf "time: guest userspace at %.1fs, KUnit (insmod) %.1fs, kmemleak scans %.1fs, VM %ss\n",
				t["userspace"], t["insmod-end"] - t["insmod-start"],
				t["kmemleak-scan"] - t["insmod-end"] + t["kmemleak-boot-scan"] - t["userspace"], vm
		}' "$out/times"
fi
echo "time: kernel+module ready $((t1 - t0))s, VM $((t2 - t1))s, total $((t3 - t0))s; logs: $out"
last=$(tail -n1 "$out/results.txt")
echo "$last"
case "$last" in
"0 passed, "*) exit 1 ;;
*" 0 failed") exit 0 ;;
*) exit 1 ;;
esac

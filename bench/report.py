#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Tables and plots from a benchmark run (host side).

Usage: bench/report.py RESULTS_DIR [--doc BENCHMARKS.md]

Reads RESULTS_DIR/results.jsonl (written by bench/guest/bench.py) and
meta.txt, prints the Markdown table of medians, writes RESULTS_DIR/report.md
(also every repetition's value and every failure), RESULTS_DIR/*.png
(gnuplot) and, with --doc, the committed BENCHMARKS.md, which also takes in
the hand-written analysis in bench/analysis.md.
"""

import argparse
import collections
import json
import os
import re
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
CONTENDERS = ("ours", "intree", "ext4", "raw")
TITLES = {"ours": "exfat2", "intree": "in-tree exfat", "ext4": "ext4",
          "raw": "raw device"}
GROUP_TITLES = {
    "seq": "Sequential I/O, one large file",
    "rand": "Random 4 KiB O_DIRECT I/O (libaio unless the row says io_uring) in a written file",
    "fsync": "Appending 4 KiB writes, fsync after each",
    "conc": "Concurrent buffered writers",
    "frag": "A file fragmented by interleaved writes",
    "tree": "Linux source tree (unpack, find, read, rm)",
    "mount": "Mount of a 512 GiB sparse volume",
}
BEHIND = 0.90    # ours at less than 90 % of the in-tree driver's speed
AHEAD = 1.10


def group_title(g):
    m = re.match(r"meta(\d+)k$", g)
    if m:
        return f"Metadata, {m.group(1)}k files in one directory"
    return GROUP_TITLES.get(g, g)


def load(res):
    rows, failures = [], []
    path = os.path.join(res, "results.jsonl")
    if os.path.exists(path):
        with open(path) as f:
            for line in f:
                line = line.strip()
                if not line:
                    continue
                try:
                    r = json.loads(line)
                except ValueError:
                    continue
                (failures if "failure" in r else rows).append(r)
    meta = {}
    mp = os.path.join(res, "meta.txt")
    if os.path.exists(mp):
        with open(mp) as f:
            for line in f:
                k, _, v = line.partition(":")
                meta[k.strip()] = v.strip()
    lp = os.path.join(res, "host-load.txt")
    if os.path.exists(lp):
        with open(lp) as f:
            loads = sorted(float(ln.split()[1]) for ln in f if ln.strip())
        if loads:
            meta["load_during"] = (f"{loads[0]:.1f} / "
                                   f"{statistics.median(loads):.1f} / "
                                   f"{loads[-1]:.1f}")
    vs = os.path.join(res, "vm-seconds")
    if os.path.exists(vs):
        with open(vs) as f:
            meta["vm_seconds"] = f.read().strip()
    gm = os.path.join(res, "guest-meta.json")
    if os.path.exists(gm):
        with open(gm) as f:
            meta["guest"] = json.load(f)
    return rows, [r["failure"] for r in failures], meta


def summarize(rows):
    """[(group, metric, unit, better, {contender: [values]})] in run order."""
    order, data = [], {}
    for r in rows:
        key = (r["group"], r["metric"])
        if key not in data:
            order.append(key)
            data[key] = dict(unit=r["unit"], better=r["better"],
                             vals=collections.defaultdict(list))
        data[key]["vals"][r["contender"]].append(r["value"])
    # keep groups together, in order of first appearance
    gorder = []
    for g, _ in order:
        if g not in gorder:
            gorder.append(g)
    order.sort(key=lambda k: gorder.index(k[0]))
    return [(g, m, data[(g, m)]["unit"], data[(g, m)]["better"],
             data[(g, m)]["vals"]) for g, m in order]


def fmt(v):
    if v is None:
        return ""
    a = abs(v)
    if a >= 1000:
        return f"{v:,.0f}"
    if a >= 100:
        return f"{v:.0f}"
    if a >= 10:
        return f"{v:.1f}"
    return f"{v:.2f}"


def med(vals, c):
    v = vals.get(c)
    return statistics.median(v) if v else None


def speedup(ours, other, better):
    """> 1: ours is better."""
    if ours is None or other is None or ours == 0 or other == 0:
        return None
    return ours / other if better == "higher" else other / ours


def separated(vals, better):
    """+1: every exfat2 value beats every in-tree one, -1: the reverse,
    0: the ranges overlap (or there are fewer than 2 values of each)."""
    o, i = vals.get("ours") or [], vals.get("intree") or []
    if len(o) < 2 or len(i) < 2:
        return 0
    sign = 1 if better == "higher" else -1
    if min(x * sign for x in o) > max(x * sign for x in i):
        return 1
    if max(x * sign for x in o) < min(x * sign for x in i):
        return -1
    return 0


def verdict(s, sep=0):
    """Behind/ahead by the medians; '?' when the ranges of the
    repetitions overlap (or a single repetition): within the noise."""
    if s is None:
        return ""
    if s < BEHIND:
        return "**behind**" if sep < 0 else "behind?"
    if s > AHEAD:
        return "ahead" if sep > 0 else "ahead?"
    return "same"


def table(summary, failures=()):
    bad = {(f.get("group"), f.get("contender")) for f in failures
           if f.get("kind") in ("data", "fsck", "error", "readdir")}
    out = ["| workload | unit | exfat2 | in-tree | ext4 | raw | "
           "exfat2/in-tree | exfat2/raw | in-tree/raw | exfat2 vs in-tree |",
           "|---|---|--:|--:|--:|--:|--:|--:|--:|---|"]
    last = None
    for g, m, unit, better, vals in summary:
        if g != last:
            out.append(f"| *{group_title(g)}* |||||||||| ")
            last = g
        o, i, e, r = (med(vals, c) for c in CONTENDERS)
        ratio = o / i if o is not None and i else None
        s = speedup(o, i, better)
        arrow = "↑" if better == "higher" else "↓"
        cell = [fmt(v) + (" †" if v is not None and (g, c) in bad else "")
                for v, c in zip((o, i, e, r), CONTENDERS)]
        out.append("| " + " | ".join([
            m, f"{unit} {arrow}", *cell,
            f"{ratio:.2f}" if ratio is not None else "",
            f"{o / r:.2f}" if o is not None and r else "",
            f"{i / r:.2f}" if i is not None and r else "",
            verdict(s, separated(vals, better))]) + " |")
    if any(g for g, _ in bad):
        out.append("")
        out.append("† a data check, fsck.exfat or an operation failed for "
                   "this contender in this group (see the failures); its "
                   "numbers there may not measure a correct result.")
    return "\n".join(out)


def spread_table(summary):
    out = ["| workload | contender | n | values (in run order) |",
           "|---|---|--:|---|"]
    for g, m, unit, better, vals in summary:
        for c in CONTENDERS:
            if c in vals:
                out.append(f"| {g}: {m} | {TITLES[c]} | {len(vals[c])} | "
                           + ", ".join(fmt(v) for v in vals[c]) + f" {unit} |")
    return "\n".join(out)


def failures_md(failures):
    if not failures:
        return "None."
    out = []
    for f in failures:
        who = TITLES.get(f.get("contender"), f.get("contender"))
        out.append(f"- **{f.get('group')} / {who} / rep {f.get('rep')}: "
                   f"{f.get('kind')}**")
        text = (f.get("text") or "").strip()
        if text:
            out.append("  ```\n" + "\n".join("  " + ln for ln in
                                             text.splitlines()[:40])
                       + "\n  ```")
        dm = (f.get("dmesg") or "").strip()
        if dm:
            out.append("  kernel log:\n  ```\n" + "\n".join(
                "  " + ln for ln in dm.splitlines()[-40:]) + "\n  ```")
    return "\n".join(out)


def behind_list(summary):
    out = []
    for g, m, unit, better, vals in summary:
        o, i = med(vals, "ours"), med(vals, "intree")
        s = speedup(o, i, better)
        if s is not None and s < BEHIND:
            sep = separated(vals, better)
            if min(len(vals.get("ours", [])), len(vals.get("intree", []))) < 2:
                sep = None
            out.append((sep is None or sep >= 0, s, g, m, unit, o, i, sep))
    out.sort()
    return [x[1:] for x in out]


# ---------------------------------------------------------------- plots

def gnuplot(script, res):
    try:
        p = subprocess.run(["gnuplot"], input=script, text=True,
                           capture_output=True, cwd=res, timeout=120)
    except (OSError, subprocess.TimeoutExpired) as e:
        print(f"report: gnuplot: {e}", file=sys.stderr)
        return
    if p.returncode:
        print(f"report: gnuplot failed: {p.stderr[-800:]}", file=sys.stderr)


def q(s):
    return '"' + s.replace('"', "'") + '"'


def plots(summary, res):
    made = []
    pdir = os.path.join(res, "plots")
    os.makedirs(pdir, exist_ok=True)
    # one clustered bar chart per (group, unit)
    byg = collections.OrderedDict()
    for g, m, unit, better, vals in summary:
        byg.setdefault((g, unit, better), []).append((m, vals))
    for (g, unit, better), items in byg.items():
        cs = [c for c in CONTENDERS if any(c in v for _, v in items)]
        name = re.sub(r"[^a-z0-9]+", "_", f"{g}_{unit}".lower()).strip("_")
        dat = os.path.join(pdir, name + ".dat")
        with open(dat, "w") as f:
            f.write("metric " + " ".join(q(TITLES[c]) for c in cs) + "\n")
            for m, vals in items:
                f.write(q(m) + " " + " ".join(
                    fmt(med(vals, c)).replace(",", "") or "NaN"
                    for c in cs) + "\n")
        arrow = "higher is better" if better == "higher" else \
            "lower is better"
        gnuplot(f"""
set terminal pngcairo size {max(640, 260 * len(items))},480 noenhanced font ",10"
set output "plots/{name}.png"
set title {q(group_title(g) + " - " + unit + ", " + arrow + " (medians)")}
set style data histogram
set style histogram clustered gap 1
set style fill solid 0.85 border -1
set boxwidth 0.9
set key top left
set yrange [0:*]
set grid ytics
set xtics rotate by -20 scale 0
plot for [i=2:{len(cs) + 1}] "plots/{name}.dat" using i:xtic(1) title columnheader(i)
""", res)
        made.append(f"plots/{name}.png")
    # exfat2 against the in-tree driver, every metric
    rel = [(g, m, speedup(med(v, "ours"), med(v, "intree"), b))
           for g, m, u, b, v in summary]
    rel = [(g, m, s) for g, m, s in rel if s is not None]
    if rel:
        dat = os.path.join(pdir, "relative.dat")
        with open(dat, "w") as f:
            for k, (g, m, s) in enumerate(rel):
                f.write(f"{k} {s:.4f} {q(g + ': ' + m)}\n")
        gnuplot(f"""
set terminal pngcairo size 1100,{300 + 22 * len(rel)} noenhanced font ",9"
set output "plots/relative.png"
set title "exfat2 speed relative to the in-tree exfat driver (>1: exfat2 better; log scale)"
set style fill solid 0.8 border -1
set logscale x 2
set xrange [*:*]
set grid xtics
set ytics scale 0
set yrange [{len(rel)}:-1]
set arrow from 1, graph 0 to 1, graph 1 nohead lw 2 lc rgb "black"
unset key
plot "plots/relative.dat" using (1):1:(($2<1)?$2:1):(($2<1)?1:$2):($1-0.4):($1+0.4):ytic(3) \\
     with boxxyerror lc rgb "#4477aa"
""", res)
        made.append("plots/relative.png")
    # metadata: cost per file against N
    meta = collections.defaultdict(dict)
    for g, m, unit, better, vals in summary:
        mm = re.match(r"(\w+).*, N=(\d+)$", m)
        if g.startswith("meta") and mm:
            # create/readdir/stat/unlink; large N are sampled variants
            meta[mm.group(1)][int(mm.group(2))] = vals
    if meta:
        ops = list(meta)
        lines = []
        for k, op in enumerate(ops):
            dat = os.path.join(pdir, f"meta_{k}.dat")
            cs = [c for c in CONTENDERS if any(c in v for v in meta[op].values())]
            with open(dat, "w") as f:
                f.write("N " + " ".join(q(TITLES[c]) for c in cs) + "\n")
                for n in sorted(meta[op]):
                    f.write(f"{n} " + " ".join(
                        fmt(med(meta[op][n], c)).replace(",", "") or "NaN"
                        for c in cs) + "\n")
            lines.append(f"""
set title {q(op + " - us per file, lower is better (large N: sampled)")}
plot for [i=2:{len(cs) + 1}] "plots/meta_{k}.dat" using 1:i with linespoints lw 2 title columnheader(i)
""")
        gnuplot("""
set terminal pngcairo size 1100,800 noenhanced font ",10"
set output "plots/meta_scaling.png"
set multiplot layout 2,2
set logscale xy
set grid
set key top left
set xlabel "files in the directory"
""" + "".join(lines) + "unset multiplot\n", res)
        made.append("plots/meta_scaling.png")
    return made


# ---------------------------------------------------------------- output

def header(meta):
    g = meta.get("guest", {})
    lines = [
        f"- date: {meta.get('date', '?')} ({meta.get('mode', '?')} run)",
        f"- host: {meta.get('host_cpu', '?')}, {meta.get('host_cpus', '?')} "
        f"CPUs, {meta.get('host_mem_mib', '?')} MiB, Linux "
        f"{meta.get('host_kernel', '?')}; load average at start "
        f"{meta.get('host_load', '?')}; 1-minute load during the run "
        f"min / median / max {meta.get('load_during', '?')} (2 CPUs shared "
        f"with other VMs and builds, so absolute numbers drift); the VM ran "
        f"{meta.get('vm_seconds', '?')} s",
        f"- VM: {meta.get('qemu', '?')}, {meta.get('accel', '?')}, "
        f"{g.get('cpus', '?')} vCPUs, {meta.get('guest_mem_mib', '?')} MiB; "
        f"guest kernel {g.get('kernel', '?')} (Debian)",
        f"- disk: virtio-blk backed by a {meta.get('disk_mib', '?')} MiB "
        "file in the host's /dev/shm, preallocated; the 512 GiB volume is a "
        "sparse file there too",
        f"- exfat2: git {meta.get('git', '?')}, module md5 "
        f"{meta.get('exfat2_ko_md5', '?')}; {meta.get('fio', '?')}, "
        f"exfatprogs {meta.get('exfatprogs', '?')}",
    ]
    cfg = g.get("config")
    if cfg:
        lines.append(
            f"- sizes: {cfg['reps']} repetitions (metadata: "
            + ", ".join(f"{int(n) // 1000}k: {r}" for n, r in
                        cfg['meta_reps'].items())
            + f"; beyond {cfg.get('meta_full_max', '?')} files a directory "
            f"written directly on the volume, {cfg.get('meta_sample', '?')} "
            f"files sampled); "
            f"sequential "
            f"{cfg['seq_mb']} MiB; random file {cfg['rand_mb']} MiB, "
            f"{cfg['rand_rt']} s per point; {cfg['fsync_n']} fsync'd writes; "
            f"concurrent writers {cfg['conc_mb']} MiB in all; interleaved "
            f"files {cfg['frag_mb']} MiB each; source tree: {cfg['tree']}; "
            f"mount: {cfg['mount_reps']} mounts per state, "
            f"{cfg['mount_files']} files")
    return "\n".join(lines)


def behind_md(summary):
    b = behind_list(summary)
    if not b:
        return "exfat2 is within 10 % of the in-tree driver or ahead everywhere."
    return "\n".join(
        f"- {group_title(g)}: {m}: exfat2 {fmt(o)} vs in-tree {fmt(i)} {u} "
        f"(exfat2 at {s:.2f}x"
        + ("; one repetition)" if sep is None else
           "; every repetition behind)" if sep < 0 else
           "; the repetitions overlap: may be noise)")
        for s, g, m, u, o, i, sep in b)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("res")
    ap.add_argument("--doc")
    a = ap.parse_args()
    rows, failures, meta = load(a.res)
    summary = summarize(rows)
    tab = table(summary, failures)
    made = plots(summary, a.res) if summary else []
    print(tab)
    print()
    print(f"failures: {len(failures)}")
    for f in failures:
        print(f"  {f.get('group')} {f.get('contender')} rep{f.get('rep')}: "
              f"{f.get('kind')}: {(f.get('text') or '').splitlines()[0][:200] if f.get('text') else ''}")
    with open(os.path.join(a.res, "report.md"), "w") as f:
        f.write(f"# exfat2 benchmark run {os.path.basename(os.path.abspath(a.res))}\n\n")
        f.write(header(meta) + "\n\n## Medians\n\n" + tab + "\n\n")
        f.write(VERDICT_NOTE.format(behind_x=BEHIND, ahead_x=AHEAD) + "\n\n")
        f.write("## Where exfat2 is behind the in-tree driver\n\n"
                + behind_md(summary) + "\n\n")
        f.write("## Failures\n\n" + failures_md(failures) + "\n\n")
        f.write("## Plots\n\n" + "\n".join(f"![{p}]({p})" for p in made)
                + "\n\n")
        f.write("## Every repetition\n\n" + spread_table(summary) + "\n")
    if a.doc:
        analysis = ""
        ap_ = os.path.join(HERE, "analysis.md")
        if os.path.exists(ap_):
            with open(ap_) as f:
                analysis = f.read().strip()
        with open(a.doc, "w") as f:
            f.write(DOC.format(
                header=header(meta), table=tab, behind=behind_md(summary),
                failures=failures_md(failures), analysis=analysis,
                verdict_note=VERDICT_NOTE.format(behind_x=BEHIND,
                                                 ahead_x=AHEAD),
                behind_x=BEHIND, ahead_x=AHEAD))
        print(f"report: wrote {a.doc}")
    print(f"report: {os.path.join(a.res, 'report.md')}, plots: "
          f"{', '.join(made) if made else 'none'}")


VERDICT_NOTE = """\
↑: higher is better, ↓: lower is better. Ratios are of the medians. The
last column compares exfat2 with the in-tree driver: behind / ahead when
the medians differ by more than 10 % ({behind_x:.2f}x / {ahead_x:.2f}x) and
every repetition of one driver beats every repetition of the other; with a
question mark when the medians differ but the repetitions overlap (or
there was only one): that difference is within this machine's noise.\
"""

DOC = """# Benchmarks

Generated by `bench/report.py` from the latest full run of `make bench`;
the analysis section comes from `bench/analysis.md`.

{header}

## How to rerun

```sh
make bench            # full run; rewrites this file (20 min alone on the
                      # 2-CPU host at load ~1, 43 min at load ~10)
make bench QUICK=1    # smoke run: small sizes, one repetition (~10 min here)
bench/run-bench.sh --only seq,tree --reps 5   # a subset (see --help)
```

One VM boot runs everything. The contenders share one virtio-blk disk,
backed by a preallocated file in the host's `/dev/shm`: exfat2 (`ours`),
the in-tree exfat driver (swapped with `lib.use_driver()` in the same boot),
ext4 as a reference and the raw block device. Each workload group runs for
every contender on a freshly made file system (`mkfs.exfat` defaults: 32 KiB
clusters on the 4 GiB disk; ext4 defaults, mounted with `noinit_itable`
so no lazy-init thread writes behind the measurements); the rounds are
repeated and the order of the contenders rotates from round to round, so
the drift of a TCG VM on a shared host spreads over all of them. The table
shows medians. After each exFAT workload `fsck.exfat -n` must pass, and the
unpacked source tree is checked against md5 sums. Results, plots and every
repetition's value land in `bench/results/<date>/`. Metadata at 50k files
(and at 10k in the smoke run) uses a directory written straight onto the
volume by `bench/guest/bench.py` (checked by `fsck.exfat`) and samples of
its files: creating 50k files through the in-tree driver is O(N^2) (no
directory index) and would take hours under TCG.

Why a RAM-backed virtio disk and not `brd` in the guest: measured in the
guest, `brd` did 47,000 random 4 KiB reads/s at queue depth 1 and the same
at 16 (it has no queue), 211 MiB/s on first writes (page allocation in
the guest) and 1.5 GiB/s reads; the virtio disk did 5,200 IOPS at depth 1,
12,000 at 16, 690 MiB/s writes and 1.6 GiB/s reads. The virtio disk keeps
the data out of the guest's memory (the page cache is not squeezed by the
disk), goes through blk-mq, merging, plugging, flushes and FUA like a
real disk, has a queue depth worth measuring, and charges a per-request
cost (~190 us under TCG), which makes the I/O pattern a driver chooses
(few large requests vs many small ones) visible, as on flash media.
`tools/vm/vm.sh` attaches disks with `cache=unsafe,aio=threads`; on a
`/dev/shm` file that is equivalent to `cache=none` (no host disk under
it; flushes cost nothing either way).

## Results (medians)

{verdict_note}

{table}

## Where exfat2 is behind the in-tree driver

{behind}

{analysis}

## Failures seen in this run

{failures}
"""

if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""summary.py DIR [headline]: the cold, warm and best-fixed tables from bench/cold/device.sh's logs.

Each cell is the median over launches of a same-run ratio: the variant's
time over the MPI library's (native) in the same launch, for the same size,
from the mean over the N timed calls of each size (dpmlbench-c -pattern
cold/cold-barrier). With "headline", also the README's rows.
"""
import glob, os, re, statistics, sys

PATTERNS = ("cold100", "bar100", "cold10")


def runs(d):
    """Every cold run's rows: (layout, pattern, build, {bytes: {variant:
    [first, mean10, mean, median] in us}}), from DIR's logs."""
    for f in sorted(glob.glob(os.path.join(d, "*-*-*-*.log"))):
        m = re.match(r"(\d+x\d+)-(%s)-(\w+)-(\d+)\.log" % "|".join(PATTERNS), os.path.basename(f))
        if not m:
            continue
        lay, pat, build, _ = m.groups()
        rows = {}
        for line in open(f):
            w = line.split()
            if len(w) >= 11 and w[0].isdigit() and w[2] in ("native", "auto"):
                rows.setdefault(int(w[0]), {})[w[2]] = [float(x) for x in w[3:7]]
        yield lay, pat, build, {b: v for b, v in rows.items() if "native" in v and "auto" in v}


def layouts(d):
    """The layouts among d's keys (tuples that start with one), by node
    count, then ranks per node."""
    return sorted({k[0] for k in d}, key=lambda l: tuple(int(x) for x in l.split("x")))


def size(b):
    for u, s in ((1 << 20, "M"), (1 << 10, "K")):
        if b >= u and b % u == 0:
            return f"{b // u}{s}"
    return str(b)


def tables(d):
    mean, first10 = {}, {}  # (layout, pattern, build) -> {bytes: [ratio per launch]}
    for lay, pat, build, rows in runs(d):
        for b, v in rows.items():
            mean.setdefault((lay, pat, build), {}).setdefault(b, []).append(v["auto"][2] / v["native"][2])
            first10.setdefault((lay, pat, build), {}).setdefault(b, []).append(v["auto"][1] / v["native"][1])
    titles = {"cold100": "cold, back to back, N = 100", "bar100": "cold, barrier before each call, N = 100", "cold10": "cold, back to back, N = 10"}
    for lay in layouts(mean):
        for pat in PATTERNS:
            builds = [b for b in ("auto", "model", "profile", "old") if (lay, pat, b) in mean]
            if not builds:
                continue
            print(f"\n{lay}, {titles[pat]}: DPML / MPI library, mean of the N calls (median over launches; mean of the first 10 in brackets)")
            print("| bytes | " + " | ".join(builds) + " |")
            print("| ---: | " + " | ".join("---:" for _ in builds) + " |")
            for b in sorted(mean[(lay, pat, builds[0])]):
                cells = []
                for bu in builds:
                    r, f10 = mean[(lay, pat, bu)].get(b), first10[(lay, pat, bu)].get(b)
                    cells.append(f"{statistics.median(r):.2f} [{statistics.median(f10):.2f}]" if r else "-")
                print(f"| {size(b)} | " + " | ".join(cells) + " |")


def headline(d, sizes=(4, 65536, 1 << 20, 16 << 20)):
    """The README's rows: per layout and pattern, at a few sizes, the MPI
    library's mean time per call (us) and DPML auto's and model's ratios
    (medians over launches)."""
    rows = {}
    for lay, pat, build, got in runs(d):
        if build not in ("auto", "model"):
            continue
        for b, v in got.items():
            r = rows.setdefault((lay, pat, b), {"mpi": [], "auto": [], "model": []})
            r[build].append(v["auto"][2] / v["native"][2])
            r["mpi"].append(v["native"][2])
    names = {"cold10": "cold b2b, N=10", "cold100": "cold b2b, N=100", "bar100": "cold barrier, N=100"}
    med = lambda v: f"{statistics.median(v):.2f}" if v else "-"
    for lay in layouts(rows):
        print(f"\n**{lay}**\n")
        print("| pattern | bytes | MPI library (us per call) | DPML auto ÷ MPI | DPML model ÷ MPI |")
        print("| --- | ---: | ---: | ---: | ---: |")
        for pat in ("cold10", "cold100", "bar100"):
            for b in sizes:
                r = rows.get((lay, pat, b))
                if r and r["auto"]:
                    print(f"| {names[pat]} | {b} | {statistics.median(r['mpi']):.1f} | {med(r['auto'])} | {med(r['model'])} |")


def warm(d):
    """The warm table: per layout and size, auto's median time per call
    and its ratio to the MPI library's in the same run, for NEW (auto) and
    OLD (old), per launch, and NEW's time over OLD's (medians over
    launches): the ratio to the MPI library moves with the MPI library's
    own time between runs, the time per call does not."""
    got = {}  # (layout, build) -> {size label: [(median us, ratio)]}
    for f in sorted(glob.glob(os.path.join(d, "*-warm-*-*.log"))):
        m = re.match(r"(\d+x\d+)-warm-(\w+)-(\d+)\.log", os.path.basename(f))
        if not m:
            continue
        lay, build, _ = m.groups()
        for line in open(f):
            w = line.split()
            if len(w) > 11 and w[1] == "auto" and re.match(r"^\d+[KM]?$", w[0]):
                got.setdefault((lay, build), {}).setdefault(w[0], []).append((float(w[6]), float(w[10])))
    for lay in layouts(got):
        new, old = got.get((lay, "auto")), got.get((lay, "old"))
        if not new:
            continue
        print(f"\n{lay}, warm, back to back (2,000 untimed calls first): auto's median us per call and ÷ MPI library, per launch")
        print("| bytes | new us | new ÷ MPI | old us | old ÷ MPI | new us ÷ old us |")
        print("| ---: | ---: | ---: | ---: | ---: | ---: |")
        for s in new:
            n, o = new[s], (old or {}).get(s, [])
            cell = lambda v, i, fmt: "/".join(fmt % x[i] for x in v) if v else "-"
            rel = f"{statistics.median(x[0] for x in n) / statistics.median(x[0] for x in o):.2f}" if o else "-"
            print(f"| {s} | {cell(n, 0, '%.2f')} | {cell(n, 1, '%.2f')} | {cell(o, 0, '%.2f')} | {cell(o, 1, '%.2f')} | {rel} |")


def fixed(d):
    """The machine profile's cold runs against the best fixed plan: per
    size, each fixed plan's mean time over the MPI library's in the same
    run (device.sh's FIXED runs, cold back to back, N = 100), its median
    over launches, the best of them, and the profile run's auto ratio
    (median over its launches) over that best."""
    import csv
    best = {}  # (layout, bytes) -> {variant: [ratio per launch]}
    for f in sorted(glob.glob(os.path.join(d, "*-cold100-fixed-*", "cold.csv"))):
        lay = os.path.basename(os.path.dirname(f)).split("-")[0]
        # The variant's field may hold commas unquoted (older clients): it
        # is what lies between the op and the nine fields after it.
        rows = [(r[0], ",".join(r[4:-9]), float(r[-4])) for r in list(csv.reader(open(f)))[1:]]
        native = {b: m for b, v, m in rows if v == "native"}
        for b, v, m in rows:
            if v != "native" and b in native:
                best.setdefault((lay, int(b)), {}).setdefault(v, []).append(m / native[b])
    prof = {}
    for lay, pat, build, rows in runs(d):
        if pat == "cold100" and build in ("profile", "auto"):
            for b, v in rows.items():
                prof.setdefault((lay, build, b), []).append(v["auto"][2] / v["native"][2])
    for lay in layouts(best):
        print(f"\n{lay}, cold, back to back, N = 100: the best fixed plan and auto with the machine profile (medians over launches of same-run ratios to the MPI library)")
        print("| bytes | best fixed plan | best ÷ MPI | profile ÷ MPI | profile ÷ best | auto (no profile) ÷ best |")
        print("| ---: | --- | ---: | ---: | ---: | ---: |")
        for b in sorted(x[1] for x in best if x[0] == lay):
            v = {k: statistics.median(r) for k, r in best[(lay, b)].items()}
            name = min(v, key=v.get)
            p, a = prof.get((lay, "profile", b)), prof.get((lay, "auto", b))
            cell = lambda r: f"{statistics.median(r) / v[name]:.2f}" if r else "-"
            pm = f"{statistics.median(p):.2f}" if p else "-"
            print(f"| {size(b)} | {name} | {v[name]:.2f} | {pm} | {cell(p)} | {cell(a)} |")


tables(sys.argv[1])
warm(sys.argv[1])
fixed(sys.argv[1])
if len(sys.argv) > 2 and sys.argv[2] == "headline":
    headline(sys.argv[1])

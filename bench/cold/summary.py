#!/usr/bin/env python3
"""summary.py DIR: the cold and warm tables from bench/cold/device.sh's logs.

Each cell is the median over launches of a same-run ratio: the variant's
time over the MPI library's (native) in the same launch, for the same size.
Cold rows use the mean over the N timed calls of each size (dpmlbench-c
-pattern cold/cold-barrier); warm rows use the client's b2b median per call.
"""
import glob, os, re, statistics, sys

d = sys.argv[1]
cold = {}  # (layout, pattern, build) -> {bytes: [ratio per launch]}
first = {}
for f in sorted(glob.glob(os.path.join(d, "*-*-*-*.log"))):
    m = re.match(r"(\d+x\d+)-(cold100|bar100|cold10|warm)-(\w+)-(\d+)\.log", os.path.basename(f))
    if not m:
        continue
    lay, pat, build, launch = m.groups()
    rows = {}
    for line in open(f):
        w = line.split()
        if pat != "warm" and len(w) >= 11 and w[0].isdigit() and w[2] in ("native", "auto"):
            rows.setdefault(int(w[0]), {})[w[2]] = [float(x) for x in w[3:7]]
        if pat == "warm" and len(w) > 4 and re.match(r"^\d+[KMG]?$", w[0]) and w[1] in ("native", "auto"):
            pass
    if pat == "warm":
        # closing table of the classic client: size variant ... median
        for line in open(f):
            w = line.split()
            if len(w) >= 6 and w[1] in ("native", "auto") and re.match(r"^\d+(\.\d+)?[KMG]?$", w[0]):
                rows.setdefault(w[0], {})[w[1]] = line
        continue
    for b, v in rows.items():
        if "native" in v and "auto" in v:
            cold.setdefault((lay, pat, build), {}).setdefault(b, []).append(v["auto"][2] / v["native"][2])
            first.setdefault((lay, pat, build), {}).setdefault(b, []).append(v["auto"][1] / v["native"][1])

def size(b):
    for u, s in ((1 << 20, "M"), (1 << 10, "K")):
        if b >= u and b % u == 0:
            return f"{b // u}{s}"
    return str(b)

for lay in ("1x32", "4x8"):
    for pat, title in (("cold100", "cold, back to back, N = 100"), ("bar100", "cold, barrier before each call, N = 100"), ("cold10", "cold, back to back, N = 10")):
        builds = [b for b in ("auto", "model", "profile", "old") if (lay, pat, b) in cold]
        if not builds:
            continue
        print(f"\n{lay}, {title}: DPML / MPI library, mean of the N calls (median over launches; mean of the first 10 in brackets)")
        print("| bytes | " + " | ".join(builds) + " |")
        print("| ---: | " + " | ".join("---:" for _ in builds) + " |")
        sizes = sorted(cold[(lay, pat, builds[0])])
        for b in sizes:
            cells = []
            for bu in builds:
                r = cold[(lay, pat, bu)].get(b)
                f10 = first[(lay, pat, bu)].get(b)
                cells.append(f"{statistics.median(r):.2f} [{statistics.median(f10):.2f}]" if r else "-")
            print(f"| {size(b)} | " + " | ".join(cells) + " |")


def headline(d, sizes=(4, 65536, 1 << 20, 16 << 20)):
    """The README's rows: per layout and pattern, at a few sizes, the MPI
    library's mean time per call (us) and DPML auto's and model's ratios
    (medians over launches)."""
    rows = {}
    for f in sorted(glob.glob(os.path.join(d, "*-*-*-*.log"))):
        m = re.match(r"(\d+x\d+)-(cold100|bar100|cold10)-(auto|model)-(\d+)\.log", os.path.basename(f))
        if not m:
            continue
        lay, pat, build, _ = m.groups()
        got = {}
        for line in open(f):
            w = line.split()
            if len(w) >= 11 and w[0].isdigit() and w[2] in ("native", "auto"):
                got.setdefault(int(w[0]), {})[w[2]] = float(w[5])
        for b, v in got.items():
            if "native" in v and "auto" in v:
                r = rows.setdefault((lay, pat, b), {"mpi": [], "auto": [], "model": []})
                r[build].append(v["auto"] / v["native"])
                r["mpi"].append(v["native"])
    names = {"cold10": "cold b2b, N=10", "cold100": "cold b2b, N=100", "bar100": "cold barrier, N=100"}
    for lay in ("1x32", "4x8"):
        print(f"\n**{lay}**\n")
        print("| pattern | bytes | MPI library (us per call) | DPML auto ÷ MPI | DPML model ÷ MPI |")
        print("| --- | ---: | ---: | ---: | ---: |")
        for pat in ("cold10", "cold100", "bar100"):
            for b in sizes:
                r = rows.get((lay, pat, b))
                if not r or not r["auto"]:
                    continue
                med = lambda v: f"{statistics.median(v):.2f}" if v else "-"
                print(f"| {names[pat]} | {b} | {statistics.median(r['mpi']):.1f} | {med(r['auto'])} | {med(r['model'])} |")


if len(sys.argv) > 2 and sys.argv[2] == "headline":
    headline(d)

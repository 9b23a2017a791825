#!/usr/bin/env python3
"""Old-vs-new table from bench/diag/ab.sh output: per size and plan, the
median over rounds of each build's median time (us), new/old, and the noise:
the largest relative spread (max/min - 1) among one build's rounds.
Usage: ab.py DIR. Prints markdown."""
import json, sys, glob, statistics, re

def human(b):
    for s, u in ((1 << 20, "M"), (1 << 10, "K")):
        if b >= s and b % s == 0:
            return f"{b // s}{u}"
    return str(b)

d = sys.argv[1]
for kind, title in (("go", "dpmlbench (Go caller), fixed plans, 1x16"), ("c", "C client, b2b, native and the build's default plan (DPML_TUNER=static), 1x16")):
    t = {}
    for f in sorted(glob.glob(f"{d}/{kind}-*-*/results.json")):
        tag, rnd = re.search(rf"{kind}-(old|new)-(\d+)", f).groups()
        for r in json.load(open(f))["results"]:
            if r.get("check") not in (None, "ok") or "us" not in r:
                continue
            plan = r.get("spec") or (r["variant"] if r["variant"] == "native" else f"l={r['leaders']}")
            if plan == "auto":
                plan = "default"
            t.setdefault((r["bytes"], plan), {}).setdefault(tag, []).append(r["us"]["median"])
    print(f"\n**{title}**: median of {kind} rounds' medians (us); noise = largest max/min-1 over one build's rounds\n")
    print("| bytes | plan | old us | new us | new/old | noise |")
    print("| ---: | :--- | ---: | ---: | ---: | ---: |")
    worse = []
    for (b, p) in sorted(t):
        v = t[(b, p)]
        if "old" not in v or "new" not in v:
            continue
        o, n = statistics.median(v["old"]), statistics.median(v["new"])
        noise = max(max(x) / min(x) - 1 for x in v.values())
        print(f"| {human(b)} | {p} | {o:.2f} | {n:.2f} | {n / o:.2f} | {noise:.2f} |")
        if n / o - 1 > noise and p != "native":
            worse.append(f"{human(b)} {p}")
    print(f"\nnew slower than old by more than the noise at: {', '.join(worse) or 'no size'}")

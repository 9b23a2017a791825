#!/usr/bin/env python3
"""Ratio tables (markdown) from dpmlbench-c results.json files: per size the
MPI library's median, DPML auto's median and ratio, the best fixed plan of the
same run and its ratio. Usage: summarize.py DIR [DIR...]"""
import json, sys

def human(b):
    for s, u in ((1 << 20, "M"), (1 << 10, "K")):
        if b >= s and b % s == 0:
            return f"{b // s}{u}"
    return str(b)

for d in sys.argv[1:]:
    rep = json.load(open(f"{d}/results.json"))
    m = rep["meta"]
    rows = {}
    for r in rep["results"]:
        if r.get("check") not in (None, "ok") or "us" not in r:
            continue
        rows.setdefault(r["bytes"], []).append(r)
    print(f"\n**{d.rstrip('/').split('/')[-1]}** (client {m.get('client')}, pattern {m.get('pattern')}, "
          f"medians over {m.get('batches', '')} samples; ratio = DPML / MPI library, same run)\n")
    print("| bytes | MPI us | auto us | auto ratio | best fixed | us | ratio |")
    print("| ---: | ---: | ---: | ---: | :--- | ---: | ---: |")
    slower = []
    for b in sorted(rows):
        rs = rows[b]
        nat = next((r for r in rs if r["spec"] == "native"), None)
        auto = next((r for r in rs if r["spec"] == "auto"), None)
        fixed = [r for r in rs if r["spec"] not in ("native", "auto") and r["us"]["median"] > 0]
        if not nat or not auto:
            continue
        n, a = nat["us"]["median"], auto["us"]["median"]
        best = min(fixed, key=lambda r: r["us"]["median"]) if fixed else None
        bs = f"{best['spec']} | {best['us']['median']:.2f} | {best['us']['median'] / n:.2f}" if best else "- | - | -"
        print(f"| {human(b)} | {n:.2f} | {a:.2f} | {a / n:.2f} | {bs} |")
        if a > n:
            slower.append(human(b))
    print(f"\nauto slower than the MPI library at: {', '.join(slower) or 'no size'}")

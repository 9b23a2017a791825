#!/usr/bin/env python3
"""spans.py DIR OUT.csv: per call of a dpmltrace run (DPML_TRACE=DIR/trace-%r.csv,
one node, any plan), what the tuner's cost rules would read and what the
program paid, on the TSC as one clock for the host's cores (see trace.py).

Columns, in ns, per call i recorded on every rank:
  second   second-to-last exit after the last entry (CostSecondExit, the default)
  last     last exit after the last entry (CostLastExit)
  penult   second-to-last exit after the second-to-last entry (CostPenult)
  skew     last entry minus first entry
  period   last exit of call i minus last exit of call i-1 (back to back: what
           the program pays per call; with compute between calls, that too)

The summary line on stdout gives the medians and means of each column."""
import csv, glob, os, statistics, sys


def load(path):
    with open(path) as f:
        head = f.readline().split()
        kv = dict(zip(head[1::2], head[2::2]))
        ns0, tsc0, ns1, tsc1 = (int(kv[k]) for k in ("ns0", "tsc0", "ns1", "tsc1"))
        ghz = (tsc1 - tsc0) / (ns1 - ns0)
        rows = {}
        for r in csv.DictReader(f):
            e, x = int(r["enter"]), int(r["exit"])
            if e and x:
                rows[int(r["call"])] = (e, x)
        return rows, ghz


def main(d, out):
    ranks, rates = [], []
    for p in sorted(glob.glob(os.path.join(d, "trace-*.csv"))):
        rows, g = load(p)
        ranks.append(rows)
        rates.append(g)
    if len(ranks) < 2:
        print(d, ": fewer than two trace files")
        return
    f = statistics.median(rates)
    calls = sorted(set.intersection(*(set(r) for r in ranks)))
    cols = {k: [] for k in ("second", "last", "penult", "skew", "period")}
    prev = None
    with open(out, "w") as w:
        w.write("call,second,last,penult,skew,period\n")
        for c in calls:
            ent = sorted(r[c][0] for r in ranks)
            ext = sorted(r[c][1] for r in ranks)
            v = {
                "second": (ext[-2] - ent[-1]) / f,
                "last": (ext[-1] - ent[-1]) / f,
                "penult": (ext[-2] - ent[-2]) / f,
                "skew": (ent[-1] - ent[0]) / f,
                "period": (ext[-1] - prev) / f if prev is not None and c - 1 in ranks[0] else float("nan"),
            }
            prev = ext[-1]
            for k, x in v.items():
                if x == x:
                    cols[k].append(x)
            w.write("%d,%s\n" % (c, ",".join("%.0f" % v[k] if v[k] == v[k] else "" for k in cols)))
    print(d, " ".join("%s med %.0f mean %.0f" % (k, statistics.median(xs), statistics.fmean(xs)) for k, xs in cols.items() if xs), "calls", len(calls))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])

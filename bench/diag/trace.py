#!/usr/bin/env python3
"""trace.py DIR [DIR...]: where a back-to-back small allreduce spends its
period, from a dpmltrace build's files (DPML_TRACE=DIR/trace-%r.csv; see
dpml/trace.go). One node, one leader (the tree or one-leader copies).

For every call i whose predecessor is recorded, the period is the root's
"out" (result published) of i-1 to that of i. The critical chain is walked
back from the root: the child whose partial was published last, then its
last child, down to a leaf; the chain's steps are

  release   root out(i-1) -> the leaf sees it
  exit      the leaf's copy-out and return into the engine's caller
  outside   the leaf's exit of i-1 to its entry of i: the caller's loop,
            the drop-in's C code and the cgo call; with the drop-in's C
            stamps, split into go->C (the return through cgo), C unlock
            (the wrapper's exit), caller (the caller's own code between
            two calls), C entry (the wrapper up to the call into Go) and
            C->go (the call into Go up to the engine's entry)
  entry     entry to plan chosen
  publish   plan to the leaf's input published
  hop k     a child's publication to its parent's seeing all its children
  fold k    the parent's seeing its children to its own publication
            (at the root: to its result's publication)

Medians over calls (ns), per chain step, and per role (every rank's own
steps). The TSC is taken as one clock for the host's cores (constant and
synchronized, as on current x86 hosts and their KVM guests), converted at
the ranks' median calibrated rate (nanotime and TSC at each rank's first
call and at close)."""
import csv, glob, os, statistics, sys


def load(path):
    with open(path) as f:
        head = f.readline().split()
        kv = dict(zip(head[1::2], head[2::2]))
        ns0, tsc0, ns1, tsc1 = (int(kv[k]) for k in ("ns0", "tsc0", "ns1", "tsc1"))
        scale = (ns1 - ns0) / (tsc1 - tsc0)
        rows = {}
        for r in csv.DictReader(f):
            call = int(r.pop("call"))
            rows[call] = {k: int(v) if int(v) else None for k, v in r.items()}
        return int(kv["local"]), rows, 1 / scale, int(kv.get("parent", -2))


def med(xs):
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else float("nan")


def analyse(d):
    ranks = {}
    ghz = []
    parent = {}
    for p in sorted(glob.glob(os.path.join(d, "trace-*.csv"))):
        local, rows, g, par = load(p)
        ranks[local] = rows
        parent[local] = par
        ghz.append(g)
    if any(v == -2 for v in parent.values()):
        print(d, ": not a one-tree plan")
        return
    kids = {r: [c for c in parent if parent[c] == r] for r in parent}
    # The TSCs of one host's cores are one clock (constant, synchronized
    # TSC): differences across ranks are taken raw, in ns at the median
    # of the ranks' calibrated rates.
    f = statistics.median(ghz)
    for rows in ranks.values():
        for row in rows.values():
            for k, v in row.items():
                if v is not None:
                    row[k] = v / f
    if not ranks:
        print(d, ": no trace files")
        return
    calls = sorted(set.intersection(*(set(r) for r in ranks.values())))
    steps = {}
    roles = {}
    periods = []
    n = 0
    for i in calls[1:]:
        if i - 1 not in ranks[0]:
            continue
        pr = {r: ranks[r][i - 1] for r in ranks}
        cu = {r: ranks[r][i] for r in ranks}
        root = [r for r in ranks if cu[r]["out"] is not None]
        if len(root) != 1 or pr[root[0]]["out"] is None:
            continue
        root = root[0]
        t0 = pr[root]["out"]
        if any(pr[r]["seen"] is None or cu[r]["up"] is None for r in ranks):
            continue
        n += 1
        periods.append(cu[root]["out"] - t0)
        # walk the chain back: a node's last child is its child whose
        # partial was published last.
        chain = [root]
        x = root
        while kids[x]:
            x = max(kids[x], key=lambda r: cu[r]["up"])
            chain.append(x)
        leaf = chain[-1]
        s = steps
        def add(k, v):
            s.setdefault(k, []).append(v)
        add("release", pr[leaf]["seen"] - t0)
        add("exit", pr[leaf]["exit"] - pr[leaf]["seen"])
        add("outside", cu[leaf]["enter"] - pr[leaf]["exit"])
        if all(x is not None for x in (pr[leaf]["cback"], pr[leaf]["cleave"], cu[leaf]["centre"], cu[leaf]["cgo"])):
            add(" go->C", pr[leaf]["cback"] - pr[leaf]["exit"])
            add(" C unlock", pr[leaf]["cleave"] - pr[leaf]["cback"])
            add(" caller", cu[leaf]["centre"] - pr[leaf]["cleave"])
            add(" C entry", cu[leaf]["cgo"] - cu[leaf]["centre"])
            add(" C->go", cu[leaf]["enter"] - cu[leaf]["cgo"])
        add("entry", cu[leaf]["plan"] - cu[leaf]["enter"])
        add("publish", cu[leaf]["up"] - cu[leaf]["plan"])
        for k in range(len(chain) - 1, 0, -1):
            child, parent = chain[k], chain[k - 1]
            add(f"hop {len(chain) - k}", cu[parent]["kids"] - cu[child]["up"])
            end = cu[parent]["out"] if parent == root else cu[parent]["up"]
            add(f"fold {len(chain) - k}", end - cu[parent]["kids"])
        for r in ranks:
            role = "root" if r == root else ("inner" if kids[r] else "leaf")
            rr = roles.setdefault(role, {})
            for k, v in (("release", pr[r]["seen"] - t0), ("exit", pr[r]["exit"] - pr[r]["seen"]),
                         ("outside", cu[r]["enter"] - pr[r]["exit"]), ("entry", cu[r]["plan"] - cu[r]["enter"])):
                rr.setdefault(k, []).append(v)
    print(f"# {d}: {len(ranks)} ranks, {n} calls analysed, TSC {statistics.median(ghz):.3f} GHz")
    print(f"period (root out to root out): median {med(periods):.0f} ns")
    print("critical chain, median ns per step:")
    tot = 0
    for k, v in steps.items():
        m = med(v)
        if not k.startswith(" "):
            tot += m
        print(f"  {k:12s} {m:8.0f}")
    print(f"  {'sum':12s} {tot:8.0f}")
    print("every rank's own steps by role, median ns:")
    for role, rr in sorted(roles.items()):
        print("  " + role.ljust(6) + "  ".join(f"{k} {med(v):.0f}" for k, v in rr.items()))


for d in sys.argv[1:]:
    analyse(d)

#!/usr/bin/env python3
"""Auto against the fixed plans after a long settle (5000 tuning calls),
from settle-<build>-<pattern>-<round>/results.json (dpmlbench-c): per size,
the MPI library's and the best fixed plan's median over every run, and
each build's auto median over its rounds, with the plans it settled on.
Usage: settle.py DIR BUILD [BUILD...]"""
import json, glob, statistics, sys
d, builds = sys.argv[1], sys.argv[2:]
for pat in ('b2b', 'skew'):
    rows = {}
    for lib in builds:
        for f in sorted(glob.glob(f'{d}/settle-{lib}-{pat}-*/results.json')):
            for r in json.load(open(f))['results']:
                if 'us' not in r or r.get('check') not in (None, 'ok'):
                    continue
                spec = 'auto-' + lib if r['spec'] == 'auto' else r['spec']
                rows.setdefault((r['bytes'], spec), []).append((r['us']['median'], r.get('plan', {})))
    print(f'\n**{pat}**, 1x16, C client, medians (us) over rounds; auto/best and auto/MPI in brackets\n')
    print('| bytes | MPI | best fixed | us | ' + ' | '.join(f'auto {b} | settled on' for b in builds) + ' |')
    print('| ---: | ---: | :--- | ---: | ' + ' | '.join('---: | :---' for _ in builds) + ' |')
    for b in sorted({k[0] for k in rows}):
        fixed = {s: statistics.median(x[0] for x in v) for (bb, s), v in rows.items() if bb == b and not s.startswith('auto')}
        best = min((v, s) for s, v in fixed.items() if s != 'native')
        nat = fixed['native']
        cells = []
        for lib in builds:
            v = rows.get((b, 'auto-' + lib), [])
            if not v:
                cells.append('- | -')
                continue
            m = statistics.median(x[0] for x in v)
            plans = ', '.join('native' if p.get('variant') == 'native' else f"{p.get('intra')}{(' r=' + str(p['radix'])) if p.get('radix') else ''} l={p.get('leaders')}" for _, p in v)
            cells.append(f'{m:.2f} ({m / best[0]:.2f}, {m / nat:.2f}) | {plans}')
        print(f'| {b} | {nat:.2f} | {best[1]} | {best[0]:.2f} | ' + ' | '.join(cells) + ' |')

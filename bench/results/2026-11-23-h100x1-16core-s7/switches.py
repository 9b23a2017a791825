#!/usr/bin/env python3
"""Switch counts and auto/MPI of the long runs (100,000 settling calls per
size): switches.py DIR... reads DIR/long-*/results.json (dpmlbench-c)."""
import json, glob, sys, collections
for d in sys.argv[1:]:
    tot = collections.defaultdict(list)
    print(f'\n{d}: run | bytes | auto/MPI | plan | switches | changes\n')
    for f in sorted(glob.glob(f'{d}/long-*/results.json')):
        name = f.split('/')[-2]
        res = json.load(open(f))['results']
        for r in res:
            if r['spec'] != 'auto' or 'us' not in r:
                continue
            nat = [x for x in res if x['bytes'] == r['bytes'] and x['spec'] == 'native'][0]
            p = r.get('plan', {})
            shape = f"{p.get('intra')}{'/r' + str(p['radix']) if p.get('radix') else ''} l={p.get('leaders')}"
            print(f"{name} | {r['bytes']} | {r['us']['median'] / nat['us']['median']:.2f} | {shape} | {p.get('switches')} | {p.get('changes')}")
            tot[name.rsplit('-', 1)[0]].append(p.get('switches') or 0)
    for k, v in sorted(tot.items()):
        print(f'{k}: switches per key {v}, max {max(v)}, total {sum(v)}')

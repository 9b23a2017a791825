# table.py DIR PATTERN TAG: per size, medians over runs: native, auto (plan), best fixed (spec), auto/best, auto/MPI
import json,glob,statistics as S,collections,sys
d,pat,t=sys.argv[1:4]
rows=collections.defaultdict(list); plans=collections.defaultdict(list)
for f in sorted(glob.glob(f'{d}/c-{t}-{pat}-*/results.json')):
    for r in json.load(open(f))['results']:
        if 'us' in r:
            rows[(r['bytes'],r['spec'])].append(r['us']['median'])
            if r['spec']=='auto':
                p=r.get('plan',{}); plans[r['bytes']].append('%s%s%s sw%s'%('l=%s,'%p.get('leaders'), p.get('intra',p.get('variant')), ',r=%s'%p['radix'] if p.get('radix') else '', p.get('switches')))
print(f'{t} {pat}: medians (us) over runs')
print('| size | MPI | auto | auto plans (switches) | best fixed | auto/best | auto/MPI |')
print('|---:|---:|---:|---|---|---:|---:|')
for b in sorted({b for b,s in rows}):
    nat=S.median(rows[(b,'native')]); a=S.median(rows[(b,'auto')])
    bs,bv=min(((s,S.median(v)) for (bb,s),v in rows.items() if bb==b and s not in ('native','auto')),key=lambda x:x[1])
    print(f'| {b} | {nat:.2f} | {a:.2f} | {"; ".join(plans[b])} | {bs.replace("dpml:","")} {bv:.2f} | {a/bv:.2f} | {a/nat:.2f} |')

# table.py DIRS PATTERN TAG: per size, medians over the runs in DIRS (comma-separated;
# the 100,000-call "long" runs left out): MPI, auto, best fixed (spec), auto/best, auto/MPI.
# (Session 11's table.py, for several directories.)
import json,glob,statistics as S,collections,sys
ds,pat,t=sys.argv[1:4]
rows=collections.defaultdict(list)
for d in ds.split(','):
    for f in sorted(glob.glob(f'{d}/c-{t}-{pat}-*/results.json')):
        if '-long' in f: continue
        for r in json.load(open(f))['results']:
            if 'us' in r: rows[(r['bytes'],r['spec'])].append(r['us']['median'])
print(f'{t} {pat}: medians (us) over runs')
print('| size | MPI | auto | best fixed | auto/best | auto/MPI |')
print('|---:|---:|---:|---|---:|---:|')
for b in sorted({b for b,s in rows}):
    nat=S.median(rows[(b,'native')]); a=S.median(rows[(b,'auto')])
    bs,bv=min(((s,S.median(v)) for (bb,s),v in rows.items() if bb==b and s not in ('native','auto')),key=lambda x:x[1])
    print(f'| {b} | {nat:.2f} | {a:.2f} | {bs.replace("dpml:","")} {bv:.2f} | {a/bv:.2f} | {a/nat:.2f} |')

# t.py DIR LAYOUT PATTERN BUILD RUNS: per size, medians over the runs
# (RUNS: a glob part, e.g. "[123]" or "full") of the MPI library, auto and
# the best fixed plan (us, batch medians), auto/best, auto/MPI, best/MPI.
import json,glob,statistics as S,collections,sys,math
d,lay,pat,t,runs=sys.argv[1:6]
rows=collections.defaultdict(list)
for f in sorted(x for dd in d.split(',') for x in glob.glob(f'{dd}/c-{t}-{lay}-{pat}-{runs}/results.json')):
    for r in json.load(open(f))['results']:
        if 'us' in r: rows[(r['bytes'],r['spec'])].append(r['us']['median'])
print(f'| size | MPI (us) | auto (us) | best fixed (us) | auto/best | auto/MPI | best/MPI |')
print('|---:|---:|---:|---|---:|---:|---:|')
g=[]
for b in sorted({b for b,s in rows}):
    nat=S.median(rows[(b,'native')]); a=S.median(rows[(b,'auto')])
    bs,bv=min(((s,S.median(v)) for (bb,s),v in rows.items() if bb==b and s not in ('native','auto')),key=lambda x:x[1])
    g.append(a/bv)
    print(f'| {b} | {nat:.2f} | {a:.2f} | {bs.replace("dpml:","")} {bv:.2f} | {a/bv:.2f} | {a/nat:.2f} | {bv/nat:.2f} |')
print(f'geomean auto/best {math.exp(S.mean(math.log(x) for x in g)):.3f}')

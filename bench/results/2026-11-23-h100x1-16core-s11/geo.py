# geo.py DIR PATTERN TAG...: geometric mean and worst of auto/best fixed and auto/MPI per tag
import json,glob,statistics as S,collections,sys,math
d,pat=sys.argv[1],sys.argv[2]; tags=sys.argv[3:]
for t in tags:
    rows=collections.defaultdict(list)
    for f in sorted(glob.glob(f'{d}/c-{t}-{pat}-*/results.json')):
        for r in json.load(open(f))['results']:
            if 'us' in r: rows[(r['bytes'],r['spec'])].append(r['us']['median'])
    sizes=sorted({b for b,s in rows if s=='native'})
    ab,am=[],[]
    for b in sizes:
        nat=S.median(rows[(b,'native')]); a=S.median(rows[(b,'auto')])
        best=min(S.median(v) for (bb,s),v in rows.items() if bb==b and s not in ('native','auto'))
        ab.append(a/best); am.append(a/nat)
    g=lambda x: math.exp(sum(map(math.log,x))/len(x))
    print(f'{t} {pat}: auto/best geomean {g(ab):.3f} worst {max(ab):.2f}; auto/MPI geomean {g(am):.3f} worst {max(am):.2f} ({len(sizes)} sizes)')

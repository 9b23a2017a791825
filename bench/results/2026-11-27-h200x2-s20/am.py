# am.py DIR... : the largest auto/MPI per (layout, pattern): per size the
# median over runs of auto's batch median over the MPI library's (native)
# in the same run, then the largest over sizes. Runs: DIR/c-r-LAYOUT-PATTERN-*.
import json,glob,collections,statistics as S,sys
agg=collections.defaultdict(list)
for d in sys.argv[1:]:
    for f in sorted(glob.glob(f'{d}/c-r-*/results.json')):
        _,_,lay,pat,_=f.split('/')[-2].split('-',4)
        rows={(r['bytes'],r['spec']):r['us']['median'] for r in json.load(open(f))['results'] if 'us' in r}
        for b in {b for b,s in rows}:
            agg[(lay,pat,b)].append(rows[(b,'auto')]/rows[(b,'native')])
w=collections.defaultdict(lambda:(0,0))
for (lay,pat,b),v in agg.items():
    m=S.median(v)
    if m>w[(lay,pat)][0]: w[(lay,pat)]=(m,b)
print('| layout | pattern | largest auto/MPI | at |')
print('|---|---|---:|---:|')
for (lay,pat),(m,b) in sorted(w.items()): print(f'| {lay} | {pat} | {m:.2f} | {b} |')

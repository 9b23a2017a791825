# tp.py DIR LAYOUT PATTERN BUILD RUNS: auto against the best fixed plan,
# paired per run. The best fixed plan of a size is the one with the lowest
# median over the runs (as t.py); each run's auto/best is taken within the
# run (its calls interleaved with the plan's), and the table gives the
# median of those ratios over the runs, the smallest and the largest.
# t.py's ratio of medians mixes runs of different machine speeds (device
# calls); this one does not.
import json,glob,statistics as S,collections,sys,math
d,lay,pat,t,runs=sys.argv[1:6]
per=[]
for f in sorted(x for dd in d.split(',') for x in glob.glob(f'{dd}/c-{t}-{lay}-{pat}-{runs}/results.json')):
    row={}
    for r in json.load(open(f))['results']:
        if 'us' in r: row[(r['bytes'],r['spec'])]=r['us']['median']
    per.append(row)
print(f'{len(per)} runs')
print('| size | best fixed plan | auto/best (median of runs) | min | max |')
print('|---:|---|---:|---:|---:|')
g=[]
for b in sorted({b for row in per for b,s in row}):
    specs={s for row in per for bb,s in row if bb==b and s not in ('native','auto')}
    best=min(specs,key=lambda s:S.median(row[(b,s)] for row in per if (b,s) in row))
    rs=[row[(b,'auto')]/row[(b,best)] for row in per if (b,best) in row and (b,'auto') in row]
    m=S.median(rs); g.append(m)
    print(f'| {b} | {best.replace("dpml:","")} | {m:.3f} | {min(rs):.3f} | {max(rs):.3f} |')
print(f'geomean of the medians {math.exp(S.mean(math.log(x) for x in g)):.3f}')

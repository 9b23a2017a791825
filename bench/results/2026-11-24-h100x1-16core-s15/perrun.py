# perrun.py DIR PATTERN BUILDS [LAYOUT]: auto / best fixed per run and size (same run),
# then per build the median over runs and the geometric mean over sizes.
import json,glob,statistics as S,sys,math,collections
d,pat,builds=sys.argv[1],sys.argv[2],sys.argv[3].split(',')
lay=sys.argv[4] if len(sys.argv)>4 else "1x16"
for t in builds:
    per=collections.defaultdict(list)
    for f in sorted(x for dd in d.split(',') for x in glob.glob(f'{dd}/c-{t}-{lay}-{pat}-*/results.json')):
        if '-long' in f or '-full' in f: continue
        rows=collections.defaultdict(dict)
        for r in json.load(open(f))['results']:
            if 'us' in r: rows[r['bytes']][r['spec']]=r['us']['median']
        for b,m in rows.items():
            best=min(v for s,v in m.items() if s not in('auto','native'))
            per[b].append((m['auto']/best, m['auto']/m['native']))
    meds={b:S.median(x[0] for x in v) for b,v in per.items()}
    print(t, ' '.join(f"{b}:{meds[b]:.3f}[{' '.join(f'{x[0]:.2f}' for x in per[b])}]" for b in sorted(per)), 'geo %.3f'%math.exp(S.mean(math.log(x) for x in meds.values())))

# pc.py DIR PATTERN BUILDS SIZES: per size and build, medians over runs of
# the batch-median us, the per-call mean and p99 (max over ranks), for auto
# and the fixed plans; and auto's arm per run.
import json,glob,statistics as S,collections,sys
d,pat,builds,sizes=sys.argv[1],sys.argv[2],sys.argv[3].split(','),[int(x) for x in sys.argv[4].split(',')]
lay=sys.argv[5] if len(sys.argv)>5 else "1x16"
for b in sizes:
    print(f'## {b} B')
    print('| build | spec | us | pc mean | pc p99 | auto arms |')
    print('|---|---|---:|---:|---:|---|')
    for t in builds:
        rows=collections.defaultdict(list); arms=[]
        for f in sorted(glob.glob(f'{d}/c-{t}-{lay}-{pat}-*/results.json')):
            for r in json.load(open(f))['results']:
                if r['bytes']!=b or 'us' not in r: continue
                p=r.get('per_call_us',{})
                rows[r['spec']].append((r['us']['median'],p.get('mean',0),p.get('p99',0)))
                if r['spec']=='auto':
                    pl=r['plan']; arms.append(f"l={pl.get('leaders')}"+(f" r={pl['radix']}" if pl.get('intra')=='tree' else '')+f" sw={pl.get('switches')}")
        for s,v in rows.items():
            m=lambda i: S.median(x[i] for x in v)
            print(f"| {t} | {s.replace('dpml:','')} | {m(0):.2f} | {m(1):.2f} | {m(2):.1f} | {', '.join(arms) if s=='auto' else ''} |")

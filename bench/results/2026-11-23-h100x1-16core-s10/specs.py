# specs.py DIR PATTERN TAG...: median (over runs) of each run's median per call
# (us), every spec, per size; then spec/native.
import json,glob,statistics as S,collections,sys
d,pat=sys.argv[1],sys.argv[2]; tags=sys.argv[3:]
rows=collections.defaultdict(list)
for t in tags:
    for f in sorted(glob.glob(f'{d}/c-{t}-{pat}-*/results.json')):
        for r in json.load(open(f))['results']:
            if 'us' not in r: continue
            if r.get('check') not in (None,'ok'): print('CHECK',f,r['bytes'],r['spec'],r.get('check'))
            spec=r['spec'].replace('dpml:','').replace('intra=','')
            rows[(t,r['bytes'],spec)].append(r['us']['median'])
sizes=sorted({k[1] for k in rows}); specs=[]
for k in rows:
    if k[2] not in specs: specs.append(k[2])
def fmt(b): return f'{b//1024} KiB' if b>=1024 else f'{b} B'
for t in tags:
    print(f'\n{t} {pat}: median us (n runs), and /native')
    print('| size | '+' | '.join(specs)+' |'); print('|'+'---:|'*(1+len(specs)))
    for b in sizes:
        nat=S.median(rows[(t,b,'native')]) if rows.get((t,b,'native')) else None
        c=[]
        for s in specs:
            v=rows.get((t,b,s))
            if not v: c.append('-'); continue
            m=S.median(v); c.append(f'{m:.2f}'+(f' ({m/nat:.2f})' if nat else ''))
        print(f'| {fmt(b)} | '+' | '.join(c)+' |')

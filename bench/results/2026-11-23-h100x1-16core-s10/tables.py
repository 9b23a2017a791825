# tables.py (from session 7's, sizes without native skipped)
import json,glob,statistics as S,collections,sys
d,pat=sys.argv[1],sys.argv[2]; tags=sys.argv[3:]
rows=collections.defaultdict(list); plans=collections.defaultdict(list)
for t in tags:
    for f in sorted(glob.glob(f'{d}/c-{t}-{pat}-*/results.json')):
        for r in json.load(open(f))['results']:
            if 'us' not in r: continue
            if r.get('check') not in (None,'ok'): print('CHECK',f,r['bytes'],r['spec'],r.get('check'))
            spec=r['spec'].replace('dpml:','').replace('intra=','')
            rows[(t,r['bytes'],spec)].append(r['us']['median'])
            if r['spec']=='auto':
                p=r.get('plan',{}); plans[(t,r['bytes'])].append('%s%s l=%s sw=%s ch=%s'%(p.get('intra') or p.get('variant'),('/r'+str(p['radix'])) if p.get('radix') else '',p.get('leaders'),p.get('switches'),p.get('changes')))
sizes=sorted({k[1] for k in rows}); specs=sorted({k[2] for k in rows if k[2] not in ('native','auto')})
def fmt(b): return f'{b//1048576} MiB' if b>=1048576 else f'{b//1024} KiB' if b>=1024 else f'{b} B'
print('| size | '+' | '.join(f'MPI us ({t}) | best fixed us ({t}) | best/MPI ({t}) | auto/MPI ({t}) | auto/best ({t})' for t in tags)+' |')
print('|'+'---:|'*(1+5*len(tags)))
for b in sizes:
    if not all(rows.get((t,b,'native')) for t in tags): continue
    c=[]
    for t in tags:
        nat=S.median(rows[(t,b,'native')])
        bv,bs=min((S.median(rows[(t,b,s)]),s) for s in specs if rows.get((t,b,s)))
        a=S.median(rows[(t,b,'auto')]) if rows.get((t,b,'auto')) else float('nan')
        c.append(f'{nat:.2f} | {bv:.2f} {bs} | {bv/nat:.2f} | {a/nat:.2f} | {a/bv:.2f}')
    print(f'| {fmt(b)} | '+' | '.join(c)+' |')
print()
for k in sorted(plans): print('  auto plan',k[0],fmt(k[1]),'; '.join(plans[k]))

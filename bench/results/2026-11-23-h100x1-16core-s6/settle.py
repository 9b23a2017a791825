import json,glob,statistics as S,collections,sys
d=sys.argv[1]
for pat in ['b2b','skew']:
    rows=collections.defaultdict(list); plans=collections.defaultdict(list)
    for f in sorted(glob.glob(f'{d}/settle-*-{pat}-*/results.json')):
        run=f.split('/')[-2].split('-')[1]
        for r in json.load(open(f))['results']:
            if 'us' not in r: continue
            if r.get('check') not in (None,'ok'): print('CHECK',f,r['bytes'],r['spec'],r.get('check'))
            spec=r['spec']
            if spec=='auto': spec='auto-'+run
            rows[(r['bytes'],spec)].append(r['us']['median'])
            if r['spec']=='auto':
                p=r.get('plan',{}); plans[(r['bytes'],spec)].append('%s%s l=%s sw=%s ch=%s'%(p.get('intra') or p.get('variant'),('/r'+str(p['radix'])) if p.get('radix') else '',p.get('leaders'),p.get('switches'),p.get('changes')))
    if not rows: continue
    sizes=sorted({k[0] for k in rows}); specs=sorted({k[1] for k in rows})
    autos=[s for s in specs if s.startswith('auto')]
    print(f'\n**{pat}**, 1x16, C client, medians over runs (us); auto/best-fixed and auto/MPI\n')
    print('| bytes | MPI | best fixed | us | '+' | '.join(autos)+' |')
    print('|'+'---|'*(4+len(autos)))
    for b in sizes:
        fixed={s:S.median(rows[(b,s)]) for s in specs if not s.startswith('auto') and rows[(b,s)]}
        nat=fixed.pop('native'); bv,bs=min((v,s) for s,v in fixed.items())
        cells=[]
        for a in autos:
            if rows[(b,a)]:
                m=S.median(rows[(b,a)]); cells.append('%.2f (%.2f, %.2f)'%(m,m/bv,m/nat))
            else: cells.append('-')
        print(f'| {b} | {nat:.2f} | {bs} | {bv:.2f} | '+' | '.join(cells)+' |')
    for k in sorted(plans): print('  ',k, '; '.join(plans[k]))

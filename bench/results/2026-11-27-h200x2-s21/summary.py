# summary.py: issue 16 for build s (cfbaa11) over every run of this folder,
# C client dpmlbench-c with libdpml.so. Per layout and pattern: auto/best
# as tp.py (../2026-11-24-h100x1-16core-s17/tp.py: per size the best fixed
# plan by median over runs, auto/best paired within a run, the median over
# runs), its geomean over the 13 sizes 4 B-64 MiB, the largest per size,
# the largest auto/MPI (median over runs of auto/native in the same run),
# and the plan switches per key of every run (histogram).
import json,glob,math,statistics as S,collections
small={'1x32':'s[35]/c-s-1x32-{p}-[1234]','4x8':'s3/c-s-4x8-{p}-[12]'}
big='s[456]/c-s-{l}-{p}-big*'
sw=collections.Counter()
print('| layout | pattern | runs (small, big) | geomean auto/best | largest per size | largest auto/MPI |')
print('|---|---|---|---:|---:|---:|')
for l in ('1x32','4x8'):
    for p in ('b2b','barrier','skew'):
        rs,ams,n=[],[],[]
        for g in (small[l].format(p=p),big.format(l=l,p=p)):
            per=[]
            for f in sorted(glob.glob(g+'/results.json')):
                row={}
                for r in json.load(open(f))['results']:
                    if 'us' in r: row[(r['bytes'],r['spec'])]=r['us']['median']
                    if r['spec']=='auto' and 'plan' in r: sw[r['plan'].get('switches',0)]+=1
                per.append(row)
            n.append(len(per))
            for b in sorted({b for row in per for b,s in row}):
                specs={s for row in per for bb,s in row if bb==b and s not in ('native','auto')}
                best=min(specs,key=lambda s:S.median(row[(b,s)] for row in per if (b,s) in row))
                rs.append((S.median(row[(b,'auto')]/row[(b,best)] for row in per),b))
                ams.append((S.median(row[(b,'auto')]/row[(b,'native')] for row in per),b))
        gm=math.exp(S.mean(math.log(x) for x,_ in rs))
        mx=max(rs); am=max(ams)
        print(f'| {l} | {p} | {n[0]}, {n[1]} | {gm:.3f} | {mx[0]:.3f} at {mx[1]} B | {am[0]:.2f} at {am[1]} B |')
print()
print('plan switches per key (auto rows of every run):', dict(sorted(sw.items())))
print()
# Issue 16's switch bound: the long runs of run6.sh (s6), 1000 tuning calls
# then 100,000 timed, 101,003 calls per key (Info.Calls); switches are
# freezes on another arm than the key's previous freeze (costmodel Info).
# The runs' logs are read from logs.tar.xz.
print('| layout | pattern | launch | 8 B | 64 B | 1 KiB | 16 KiB | calls per key |')
print('|---|---|---|---:|---:|---:|---:|---:|')
import re,tarfile
logs=tarfile.open('logs.tar.xz') # the tuner's table (DPML_VERBOSE=1) gives the calls per key
for l in ('1x32','4x8'):
    for p in ('b2b','skew'):
        for f in sorted(glob.glob(f's6/c-s-{l}-{p}-long*/results.json')):
            sws={r['bytes']:r['plan']['switches'] for r in json.load(open(f))['results'] if r['spec']=='auto' and 'plan' in r}
            log=logs.extractfile(f.rsplit('/',1)[0]+'.log').read().decode()
            calls=set(re.findall(r'^dpml:   \S+ \| [^|]+\| \w+ \| (\d+) \|',log,re.M))
            print(f"| {l} | {p} | {f.split('/')[1][-1]} | "+' | '.join(str(sws[b]) for b in (8,64,1024,16384))+f" | {','.join(sorted(calls))} |")
